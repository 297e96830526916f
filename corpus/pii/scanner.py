"""The PII scanner: every detector on a text, on a field that names a person, and across the fields of a record.

:func:`scan_text` normalises a text once (:func:`corpus.pii.exact.normalise`) and runs the detectors
whose cheap test passes: the exact patterns (:mod:`~corpus.pii.exact`), national phone formats
(:mod:`~corpus.pii.phones`), national identity numbers (:mod:`~corpus.pii.ids`), names after a title or
a cue (:mod:`~corpus.pii.names`) and with neither (spaCy's model, :mod:`~corpus.pii.people`), postal
addresses (:mod:`~corpus.pii.addresses`) and tokens that decode to any of these (:mod:`~corpus.pii.encoded`). Of overlapping hits the leftmost, longest wins (ties by
:data:`~corpus.pii.exact.PRIORITY`); two overlapping hits of one kind are joined into one, so a
redaction never leaves a piece of an address behind ("…, London NW1" and "NW1 6XE").

A record (:func:`scan_record`) is scanned field by field, and also:

* a field that names a person (:data:`~corpus.pii.names.NAME_FIELDS`: ``collector``, ``curator``, ...)
  is a ``name`` hit as a whole when its value reads as a person's name (not "lab-a", not "Partner Lab B"),
  unless its path is in ``public`` (a field the curator declared public);
* each pair of neighbouring text values (not keys) whose seam could join a value (an ``@`` at it, an
  encoded token, or two fields of digits and separators holding 8 digits together: :func:`_may_join`) is
  scanned across its seam (the last 64 characters of one, then the first 64 of the next, joined directly and
  with a space), so an e-mail or a number split in
  two fields ("jane.roe@" | "example.org") is found: each field gets a hit for its own part. A hit
  that lies in one field alone stays that field's: "mail a@b.co" | "x" is not the address "a@b.cox".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

from corpus.pii.addresses import scan_addresses
from corpus.pii.encoded import scan_encoded
from corpus.pii.exact import PII_KINDS, PRIORITY, PiiHit, normalise, scan_exact
from corpus.pii.ids import scan_ids
from corpus.pii.names import NAME_FIELDS, is_person_name, scan_names
from corpus.pii.people import prime, scan_people
from corpus.pii.phones import scan_phones

__all__ = ["ORG_FIELDS", "field_name", "prime_names", "record_hits", "redact", "redact_value", "scan_field", "scan_record", "scan_records", "scan_text", "text_fields"]

#: Fields whose value names an organisation: a transfer context's ``collector_org``, a release's ``trainer_orgs``.
ORG_FIELDS = frozenset({"collector_org", "trainer_org", "trainer_orgs", "org", "organisation", "organization"})
_DIGIT = re.compile(r"[0-9]")
_UPPER = re.compile(r"[A-ZÀ-ÖØ-ÞĀ-Ž]")  # every name and address has a capital of these
_SEAM = 64  # characters of each side of a field boundary scanned together


def _plain(text: str) -> list[PiiHit]:
    """Every detector but the decoders, on normalised ``text``: hits that may overlap."""
    found = scan_exact(text)
    upper = _UPPER.search(text) is not None
    if _DIGIT.search(text) is not None:
        for a, b in scan_phones(text):
            found.append(PiiHit("phone", a, b, text[a:b]))
        for a, b in scan_ids(text):
            found.append(PiiHit("national_id", a, b, text[a:b]))
        if upper:
            for a, b in scan_addresses(text):
                found.append(PiiHit("address", a, b, text[a:b]))
    if upper:
        for a, b in scan_names(text):
            found.append(PiiHit("name", a, b, text[a:b]))
        for a, b in scan_people(text):
            found.append(PiiHit("name", a, b, text[a:b]))
    return found


def _kinds(decoded: str) -> list[str]:
    norm = normalise(decoded)[0]
    return [h.kind for h in _resolve(_plain(norm))]


def _resolve(found: list[PiiHit]) -> list[PiiHit]:
    """Non-overlapping hits in text order: overlapping ones joined into the leftmost, longest one's span."""
    if len(found) <= 1:
        return found
    found.sort(key=lambda h: (h.start, h.start - h.end, PRIORITY[h.kind]))
    hits: list[PiiHit] = []
    for h in found:
        if hits and h.start < hits[-1].end:
            last = hits[-1]
            if h.end > last.end and h.kind == last.kind:  # one hit over both, so no piece is left
                hits[-1] = PiiHit(last.kind, last.start, h.end, last.text + h.text[last.end - h.start:])
            continue
        hits.append(h)
    return hits


def _scan(text: str) -> list[PiiHit]:
    found = _plain(text)
    if "%" in text or "&" in text or len(text) >= 12:
        found += [PiiHit(k, a, b, text[a:b]) for a, b, k in scan_encoded(text, _kinds)]
    return _resolve(found)


def scan_text(text: str) -> list[PiiHit]:
    """The PII hits in ``text``: non-overlapping, in order of position.

    Each hit's span is in ``text`` itself; text that is not ASCII is matched after
    :func:`~corpus.pii.exact.normalise`, and its hits carry the normalised form as :attr:`PiiHit.value`.
    Results are cached (the last :data:`_CACHE` distinct texts up to 512 characters): a release repeats its
    action names, ids and labels in every row.
    """
    if len(text) <= 512:
        return list(_scan_cached(text))
    return _scan_text(text)


_CACHE = 1 << 16


@lru_cache(maxsize=_CACHE)
def _scan_cached(text: str) -> tuple[PiiHit, ...]:
    return tuple(_scan_text(text))


def _scan_text(text: str) -> list[PiiHit]:
    if text.isascii():  # most of a corpus: nothing to normalise
        # the shortest hit that is not an IPv6 address is 6 characters long ("a@b.co"); "::1" has a colon
        return _scan(text) if len(text) >= 6 or ":" in text else []
    norm, starts, ends = normalise(text)
    hits = _scan(norm)
    if norm is text:
        return hits
    out = []
    for h in hits:
        a, b = (h.start, h.end) if starts is None or ends is None else (starts[h.start], ends[h.end - 1])
        value = h.value or h.text
        out.append(PiiHit(h.kind, a, b, text[a:b], None if value == text[a:b] else value))
    return out


def prime_names(texts: Iterable[str]) -> None:
    """Run the named-entity model over many ``texts`` at once (:func:`corpus.pii.people.prime`), so that scanning
    each of them after finds its names already; a text of no two neighbouring Capitalised words costs nothing."""
    prime(t if t.isascii() else normalise(t)[0] for t in texts)


def redact(text: str, hits: list[PiiHit] | None = None) -> str:
    """``text`` with each hit replaced by ``[REDACTED:<kind>]``.

    ``hits`` defaults to :func:`scan_text` of ``text``; given hits must lie in
    ``text`` (``text[start:end] == hit.text``) and must not overlap, or
    :class:`ValueError` is raised.
    """
    if hits is None:
        hits = scan_text(text)
    parts: list[str] = []
    pos = 0
    for h in sorted(hits, key=lambda h: h.start):
        if text[h.start:h.end] != h.text or h.kind not in PII_KINDS:
            raise ValueError(f"hit {h!r} does not lie in the text")
        if h.start < pos:
            raise ValueError(f"hit {h!r} overlaps another")
        parts.append(text[pos:h.start])
        parts.append(f"[REDACTED:{h.kind}]")
        pos = h.end
    parts.append(text[pos:])
    return "".join(parts)


def _walk(obj: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(obj, str):
        yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            sub = f"{path}.{k}" if path else str(k)
            if isinstance(k, str):
                yield sub + "<key>", k
            yield from _walk(v, sub)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{path}[{i}]")


def text_fields(obj: Any) -> Iterator[tuple[str, str]]:
    """Every string in a JSON-like value (dict keys included), as (path, string).

    Paths read like ``steps[2].observation``; a key is reported as
    ``r_extensions.endorses_last_output<key>``.
    """
    yield from _walk(obj, "")


def field_name(path: str) -> str:
    """The last field name of a path: ``source.collector`` -> ``collector``, ``collectors[0][0]`` -> ``collectors``."""
    last = path.rsplit(".", 1)[-1]
    return last.split("[", 1)[0]


_SEAM_CHARS = re.compile(r"[@%&0-9]")
_NUMBERISH = re.compile(r"[0-9+()/. -]*")


def _may_join(tail: str, head: str) -> bool:
    """Whether a value can run across this seam: an e-mail's ``@`` at it, an encoded token, or a number whose
    two parts are only digits and separators and hold 8 digits together (every seam is cheaply tested; few scanned)."""
    left = tail.rsplit(None, 1)[-1] if not tail[-1].isspace() else ""
    right = head.split(None, 1)[0] if not head[0].isspace() else ""
    if not left and not right:
        return False
    if "@" in left or "@" in right or "%" in left + right or "&" in left + right:
        return True
    nl, nr = _NUMBERISH.fullmatch(tail[-24:]), _NUMBERISH.fullmatch(head[:24])
    if (nl or left == "") and (nr or right == "") and (left[-1:].isdigit() or right[:1].isdigit()):
        return sum(c.isdigit() for c in tail[-24:] + head[:24]) >= 8 and bool(nl and nr)
    return False


@lru_cache(maxsize=_CACHE)
def _may_join_cached(tail: str, head: str) -> bool:
    return _may_join(tail, head)


def _seam_hits(a: str, b: str) -> tuple[list[PiiHit], list[PiiHit]]:
    """Hits across the end of ``a`` and the start of ``b`` (joined as they are, then with a space)."""
    tail, head = a[-_SEAM:], b[:_SEAM]
    if not tail or not head or tail[-1].isspace() and head[0].isspace():
        return [], []
    if not _may_join_cached(tail[-24:], head[:24]):
        return [], []
    for sep in ("", " "):
        joined = tail + sep + head
        cut = len(tail)
        left, right = [], []
        for h in scan_text(joined):
            if h.start < cut and h.end > cut + len(sep):
                off = len(a) - len(tail)
                left.append(PiiHit(h.kind, off + h.start, len(a), a[off + h.start:]))
                right.append(PiiHit(h.kind, 0, h.end - cut - len(sep), b[:h.end - cut - len(sep)]))
        if left:
            return left, right
    return [], []


def scan_field(value: str, path: str, public: Iterable[str] = ()) -> list[PiiHit]:
    """:func:`scan_text` of a field's ``value``; a name field's whole value is a ``name`` hit when it reads as a
    person's name. A field whose ``path`` or field name is in ``public`` has no ``name`` hits (the people it names
    are named in public); its other kinds are still found. A field that names an organisation (:data:`ORG_FIELDS`)
    has only the names a title or cue announces ("Aleph Alpha" reads as a person's name to the model)."""
    hits = scan_text(value)
    name = field_name(path)
    if path in public or name in public:
        return [h for h in hits if h.kind != "name"]
    if name in ORG_FIELDS and any(h.kind == "name" for h in hits):
        cued = scan_names(value)  # an organisation's name is no person's; "Dr. Jane Roe" in it still is
        hits = [h for h in hits if h.kind != "name" or any(a < h.end and h.start < b for a, b in cued)]
    if not hits and name in NAME_FIELDS and is_person_name(value):
        hits = [PiiHit("name", 0, len(value), value)]
    return hits


def record_hits(obj: Any, public: Iterable[str] = (), *, keys: bool = True) -> dict[str, list[PiiHit]]:
    """Every string's hits in a record, by path (see the module docstring): fields, name fields and seams.

    ``keys``: scan dict keys too (paths ending ``<key>``); a table's column names are not data.
    """
    public = frozenset(public)
    fields = [(p, s) for p, s in text_fields(obj) if keys or not p.endswith("<key>")]
    out: dict[str, list[PiiHit]] = {}
    for path, s in fields:
        hits = scan_field(s, path, public)
        if hits:
            out[path] = hits
    values = [(p, s) for p, s in fields if not p.endswith("<key>")]
    for (p1, s1), (p2, s2) in zip(values, values[1:]):
        if _SEAM_CHARS.search(s1[-24:]) is None and _SEAM_CHARS.search(s2[:24]) is None:
            continue  # nothing at this seam could join a value (see _may_join): most seams of a release
        left, right = _seam_hits(s1, s2)
        # a hit of one field alone that reaches the seam is that field's ("a@b.co" | "r" is not "a@b.cor")
        if any(h.end > len(s1) - _SEAM for h in out.get(p1, [])) or any(h.start < _SEAM for h in out.get(p2, [])):
            left = [h for h in left if not any(o.end > h.start for o in out.get(p1, []))]
            right = [h for h in right if not any(o.start < h.end for o in out.get(p2, []))]
            if len(left) != len(right):
                left, right = [], []
        for path, extra in ((p1, left), (p2, right)):
            if extra:
                mine = out.get(path, [])
                out[path] = _resolve([h for h in mine + extra if h.end > h.start])
    return out


def redact_value(obj: Any, hits: dict[str, list[PiiHit]], path: str = "") -> Any:
    """``obj`` with the strings at the paths of ``hits`` redacted (dict keys included); the same shape back."""
    if isinstance(obj, str):
        return redact(obj, hits[path]) if path in hits else obj
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            sub = f"{path}.{k}" if path else str(k)
            key = redact(k, hits[sub + "<key>"]) if isinstance(k, str) and sub + "<key>" in hits else k
            out[key] = redact_value(v, hits, sub)
        return out
    if isinstance(obj, (list, tuple)):
        items = [redact_value(v, hits, f"{path}[{i}]") for i, v in enumerate(obj)]
        return tuple(items) if isinstance(obj, tuple) else items
    return obj


def scan_record(obj: Any, public: Iterable[str] = ()) -> list[tuple[str, PiiHit]]:
    """The hits in every text field of a record (any JSON-like value), as (path, hit), in field order."""
    hits = record_hits(obj, public)
    return [(path, h) for path, _ in text_fields(obj) for h in hits.get(path, [])]


def scan_records(records: Iterable[Any]) -> Iterator[tuple[int, str, PiiHit]]:
    """(record index, path, hit) for every hit in ``records``."""
    for n, rec in enumerate(records):
        for path, h in scan_record(rec):
            yield n, path, h
