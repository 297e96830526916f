"""Personal data in the files of a release besides its rows: gate ``pii_scan`` over every file.

A release's parquet rows are scanned as they are written (:mod:`corpus.release`). Its other files
are made from other text: ``DATASHEET.md`` from the curator's ``--datasheet`` template and facts
about the rows (collectors, contexts, transfer contexts, licences); ``README.md`` (the card),
``croissant.json`` and ``manifest.json`` from the manifest, whose gate results and
``trainer_orgs`` carry ``--trainer-org``. :class:`DocumentScan` scans those inputs before the
files are made, counting each hit with where it was (``datasheet my-sheet.md line 40``,
``datasheet facts collectors[0][0]``, ``--trainer-org [1]``); with ``--redact-pii`` it hands back
redacted copies, so the files are made from clean text. :meth:`DocumentScan.written` then scans
the files as written (and the manifest before it is written), so personal data that reached a
file another way is counted (and redacted) too: what a release holds is what was scanned.

The split salt is recorded in the manifest and the datasheet and cannot be redacted without
making the recorded splits unreproducible, so a salt holding personal data is refused
(:func:`refuse_personal_data`), with or without ``--redact-pii``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corpus.errors import UsageError
from corpus.pii import field_name, redact, scan_field, scan_text
from corpus.pii.scanner import ORG_FIELDS
from schemas.models import GateResult

__all__ = ["DocumentScan", "refuse_personal_data"]

# manifest keys that hold only digests and paths the toolkit made (never redacted: they are the identity)
_MANIFEST_IDENTITY = ("release_sha", "files")


def refuse_personal_data(value: str, what: str) -> None:
    """Raise :class:`UsageError` when ``value`` holds personal data (``what`` names it: "the split salt")."""
    hits = scan_text(value)
    if hits:
        found = ", ".join(f"{h.kind} {h.masked()}" for h in hits)
        raise UsageError(f"{what} holds personal data ({found}); it is recorded in the release as it is, "
                         "so it cannot be redacted: choose another")


class DocumentScan:
    """Counts (and, when ``redact``, removes) personal data in what a release's files are made from.

    ``listed`` is the list of located hits the ``pii_scan`` gate shows (shared with the row scan);
    at most ``limit`` entries are added to it. ``n`` counts every hit. A value in a field that names a
    person (``collectors``, ``curator``, ...: :data:`corpus.pii.names.NAME_FIELDS`) is a name unless the
    field is in ``public``; a public field's value, once seen, is not a name where the written files repeat it
    (:meth:`written` and :meth:`gates`: the datasheet's filled-in facts, the Croissant file's collection text, a
    gate's detail); in any other input it still is. An organisation's name (a value of a field of
    :data:`corpus.pii.scanner.ORG_FIELDS`), once seen, is no person's name wherever it is repeated (a gate's text
    naming the trainer org).
    """

    def __init__(self, redact: bool, listed: list[str], limit: int, public: tuple[str, ...] = ()) -> None:
        self.redact = redact
        self.public = public
        self.listed = listed
        self.limit = limit
        self.n = 0
        self.public_values: set[str] = set()
        self.org_values: set[str] = set()  # organisations' names seen (ORG_FIELDS): no person's name where repeated
        self._generated = False  # scanning the files made from the scanned inputs (see written)

    def _found(self, where: str, hits: list) -> None:
        self.n += len(hits)
        for h in hits:
            if len(self.listed) < self.limit:
                self.listed.append(f"{where}: {h.kind} {h.masked()}")

    def text(self, value: str, where: str, *, lines: bool = False, path: str = "") -> str:
        """``value`` (redacted when asked); ``lines``: name each hit's line (``where line N``); ``path``: the value's
        place in a record, so that a name field (``collectors[0][0]``) is scanned as one (:func:`corpus.pii.scan_field`)."""
        hits = scan_field(value, path, self.public) if path else scan_text(value)
        if path and self.public and (path in self.public or field_name(path) in self.public) and value.strip():
            self.public_values.add(value.strip())
        if path and field_name(path) in ORG_FIELDS and value.strip():
            self.org_values.add(value.strip())
        if self._generated and self.public_values:
            hits = [h for h in hits if h.kind != "name" or not any(h.text in v for v in self.public_values)]
        if self.org_values:
            hits = [h for h in hits if h.kind != "name" or not any(h.text in v for v in self.org_values)]
        if not hits:
            return value
        if lines:
            for h in hits:
                self._found(f"{where} line {value.count(chr(10), 0, h.start) + 1}", [h])
        else:
            self._found(where, hits)
        return redact(value, hits) if self.redact else value

    def value(self, obj: Any, where: str, path: str = "") -> Any:
        """A JSON-like value with every string (dict keys included) scanned; the same shape back.

        A hit is named by ``where`` and its path in ``obj``: ``datasheet facts collectors[0][0]``; a list
        item that is a dict with a ``context_id`` is named by it (``transfer_contexts[ctx-t].description``).
        """
        if isinstance(obj, str):
            return self.text(obj, f"{where} {path}" if path else where, path=path)
        if isinstance(obj, dict):
            out = {}
            for k, v in obj.items():
                sub = f"{path}.{_segment(k)}" if path else _segment(k)
                key = self.text(k, f"{where} {sub}<key>") if isinstance(k, str) else k
                out[key] = self.value(v, where, sub)
            return out
        if isinstance(obj, (list, tuple)):
            items = [self.value(v, where, f"{path}[{_item_name(v, i)}]") for i, v in enumerate(obj)]
            return tuple(items) if isinstance(obj, tuple) else items
        return obj

    def gates(self, gates: list[GateResult]) -> list[GateResult]:
        """Each gate's figure, bar and detail scanned (a bar names the ``--trainer-org`` values); the gates are made
        from the scanned inputs, so a public field's value they repeat is not a name (as in :meth:`written`)."""
        out = []
        self._generated = True
        try:
            for g in gates:
                update = {f: self.text(getattr(g, f), f"gate {g.name} {f}")
                          for f in ("figure", "bar", "detail") if isinstance(getattr(g, f), str)}
                out.append(g.model_copy(update=update) if self.redact else g)
        finally:
            self._generated = False
        return out

    def written(self, directory: Path, names: tuple[str, ...], manifest: dict) -> int:
        """Scan the files ``names`` written in ``directory`` and the ``manifest`` about to be written.

        Markdown is scanned as text (hits named by line), JSON by its strings (named by path). With
        ``redact`` each file holding a hit is rewritten redacted and the manifest is redacted in place
        (its digests and file list excepted). Returns the number of hits (0 when the documents were
        made from scanned inputs, as :mod:`corpus.release` makes them).
        """
        before = self.n
        self._generated = True
        try:
            self._written(directory, names, manifest)
        finally:
            self._generated = False
        return self.n - before

    def _written(self, directory: Path, names: tuple[str, ...], manifest: dict) -> None:
        for name in names:
            path = directory / name
            text = path.read_text(encoding="utf-8")
            start = self.n
            if name.endswith(".json"):
                doc = json.loads(text)
                new = self.value(doc, name)
                if self.redact and self.n > start:
                    path.write_text(json.dumps(new, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            else:
                new_text = self.text(text, name, lines=True)
                if new_text is not text:
                    path.write_text(new_text, encoding="utf-8")
        for key in list(manifest):
            if key not in _MANIFEST_IDENTITY:
                new = self.value(manifest[key], "manifest.json", key)
                if self.redact:
                    manifest[key] = new


def _segment(key: Any) -> str:
    """A dict key as a path segment: never one that holds personal data (a location must not reprint it)."""
    return "?" if isinstance(key, str) and scan_text(key) else str(key)


def _item_name(item: Any, index: int) -> str:
    if isinstance(item, dict) and isinstance(item.get("context_id"), str) and not scan_text(item["context_id"]):
        return item["context_id"]
    return str(index)
