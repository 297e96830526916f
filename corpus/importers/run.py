"""Running an importer: convert, check the 3:1 cap, then the ordinary validation and ingest (or a JSONL file).

Nothing an importer makes reaches a corpus another way: its records are written as
JSONL batches and go through :func:`corpus.ingest.ingest` (every structural, rule and
reference check, all or nothing), or, with ``output``, into a file that was first
validated the same way (against the corpus when there is one). Before that, the
synthetic counterfactuals the import would add are counted with the corpus's: an
import into the corpus that would break the 3:1 synthetic:human cap is refused with
the figures, or, with ``fit_cap``, keeps only as many of its new synthetic
counterfactuals as the cap has room for (chosen by a hash of their ids, so the same
import keeps the same ones); a fit that keeps none of them is refused too. A file
(``output``) is not held to the cap unless ``fit_cap`` asks: it is records for
annotators, and the cap is checked where the file is ingested.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from corpus.cap import CapFigures, store_cap_figures
from corpus.errors import CorpusError, ExitCode
from corpus.importers.base import Converted
from corpus.importers.registry import get_importer
from corpus.ingest import IngestReport, ingest, ingest_records
from corpus.store import Corpus, empty_store, scratch_connection
from schemas.release_format import HUMAN_ORIGINS, SYNTHETIC_CAP, SYNTHETIC_ORIGIN

__all__ = ["CapLeavesNothing", "CapRefused", "ImportReport", "import_files"]


class CapRefused(CorpusError):
    """The import would break the 3:1 synthetic:human cap; nothing was written."""

    exit_code = ExitCode.USAGE

    def __init__(self, kind: str, added: int, after: CapFigures):
        self.after = after
        super().__init__(
            f"import {kind} refused: its {added:,} new synthetic counterfactual(s) would leave the corpus with "
            f"{after.describe()}. Nothing was written. Ask for fewer (e.g. --suggested-answers), add human-origin "
            "counterfactuals first, pass --fit-cap to keep only as many as the cap has room for, or write them "
            "for annotators with -o FILE (the cap is checked where the file is ingested).")


class CapLeavesNothing(CapRefused):
    """``fit_cap`` would keep none of the import's new synthetic counterfactuals; nothing was written."""

    def __init__(self, kind: str, added: int, after: CapFigures, to_file: bool = False):
        self.after = after
        before = after.plus(synthetic=-added)
        first = CapFigures(before.synthetic + 1, before.human).human_needed
        instead = ("drop --fit-cap to write them all for annotators (the cap is checked where the file is ingested)"
                   if to_file else "write them for annotators with -o FILE (the cap is checked where the file is "
                   "ingested)")
        CorpusError.__init__(
            self,
            f"import {kind} --fit-cap refused: it would keep 0 of its {added:,} new synthetic counterfactual(s), "
            f"as the 3:1 cap has no room for one more: without them there are {before.describe()}. Nothing was "
            f"written. {first:,} more human-origin counterfactual(s) would let the first in, {after.human_needed:,} "
            f"all {added:,}; or {instead}.")


@dataclass
class ImportReport:
    """What an import read, made, could not map, and wrote."""

    kind: str
    mapping: str
    files: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    unmapped: dict[str, int] = field(default_factory=dict)
    dropped_for_cap: int = 0
    cap: CapFigures | None = None
    ingest: IngestReport | None = None
    output: Path | None = None
    corpus: str | None = None

    def lines(self) -> list[str]:
        made = ", ".join(f"{k} {v:,}" for k, v in sorted(self.counts.items())) or "nothing"
        out = [f"import {self.kind} (mapping {self.mapping}): {made}"]
        if self.unmapped:
            out.append(f"not mapped ({sum(self.unmapped.values()):,}, left out): "
                       + "; ".join(f"{k} {v:,}" for k, v in sorted(self.unmapped.items())))
        if self.dropped_for_cap:
            out.append(f"--fit-cap: {self.dropped_for_cap:,} synthetic counterfactual(s) left out to stay within the "
                       "3:1 cap")
        if self.cap is not None and self.output is not None:
            where = f"once the file is ingested into {self.corpus}" if self.corpus else "of the file alone"
            out.append(f"cap {where}: {self.cap.describe()} (not applied to the file: it is checked where the file is "
                       "ingested)")
        elif self.cap is not None:
            out.append(f"cap: {self.cap.describe()}")
        if self.output is not None:
            out.append(f"wrote {self.output} (validated; ingest it with `trb-corpus ingest {self.output}`)")
        elif self.ingest is not None:
            out.append(self.ingest.summary())
        return out


def _synthetic_order(cf_id: str) -> bytes:
    return hashlib.sha256(cf_id.encode()).digest()


def _cap_after(corpus: Corpus | None, records: list[dict], wait_seconds: float | None) -> tuple[CapFigures, set[str]]:
    """The cap figures of the corpus with ``records``' counterfactuals added, and the ids it already holds."""
    cfs = [r for r in records if r.get("kind") == "counterfactual"]
    table = pa.table({"cf_id": pa.array([r["cf_id"] for r in cfs], pa.string()),
                      "origin": pa.array([r.get("origin") for r in cfs], pa.string())})

    def figures(con) -> tuple[CapFigures, set[str]]:
        con.register("imported_cfs", table)
        try:
            known = {r[0] for r in con.execute("SELECT cf_id FROM store.counterfactuals "
                                               "WHERE cf_id IN (SELECT cf_id FROM imported_cfs)").fetchall()}
            return store_cap_figures(con, "store", "imported_cfs"), known
        finally:
            con.unregister("imported_cfs")

    if corpus is not None and corpus.exists():
        with corpus.open(write=False, wait_seconds=wait_seconds, purpose="trb-corpus import (cap check)") as con:
            return figures(con)
    with scratch_connection(None) as con:
        empty_store(con)
        return figures(con)


def _drop(converted: Converted, ids: set[str]) -> None:
    for name, recs in converted.batches.items():
        converted.batches[name] = [r for r in recs if not (r.get("kind") == "counterfactual" and r["cf_id"] in ids)]


def import_files(corpus: Corpus | None, kind: str, files: list[str | os.PathLike], *,
                 options: dict[str, Any] | None = None, output: str | os.PathLike | None = None,
                 fit_cap: bool = False, progress: bool = True, wait_seconds: float | None = None) -> ImportReport:
    """Import ``files`` with the importer ``kind`` into ``corpus`` (or, with ``output``, into a validated JSONL file).

    Raises:
        InvalidInput: the input is bad (every problem: file, line, field), or a record fails validation.
        CapRefused: the import's new synthetic counterfactuals would break the 3:1 cap (into a corpus,
            without ``fit_cap``).
        CapLeavesNothing: ``fit_cap`` would keep none of the import's new synthetic counterfactuals.
        RecordConflict: an imported id exists in the corpus with different content.
        UsageError, CorpusNotFound, CorpusBusy: as for every corpus command.
        Nothing is written in any of these cases.
    """
    importer = get_importer(kind)
    paths = [Path(f) for f in files]
    if corpus is not None and output is None:
        corpus.require()
    converted = importer.run(paths, dict(options or {}))
    records = converted.records()
    report = ImportReport(kind=kind, mapping=converted.mapping or importer.mapping, files=[str(p) for p in paths],
                          unmapped=dict(converted.unmapped))
    after, known = _cap_after(corpus, records, wait_seconds)
    new_syn = sorted((r["cf_id"] for r in records if r.get("kind") == "counterfactual"
                      and r.get("origin") == SYNTHETIC_ORIGIN and r["cf_id"] not in known), key=_synthetic_order)
    if new_syn and not after.within and (fit_cap or output is None):
        if not fit_cap:
            raise CapRefused(kind, len(new_syn), after)
        excess = min(len(new_syn), after.synthetic - math.floor(SYNTHETIC_CAP * after.human))
        if excess == len(new_syn) and not any(r.get("kind") == "counterfactual" and r.get("origin") == SYNTHETIC_ORIGIN
                                              and r["cf_id"] in known for r in records):
            raise CapLeavesNothing(kind, len(new_syn), after, to_file=output is not None)
        dropped = set(new_syn[len(new_syn) - excess:])
        _drop(converted, dropped)
        report.dropped_for_cap = len(dropped)
        after = after.plus(synthetic=-len(dropped))
        records = converted.records()
    report.cap = after
    counts = dict(converted.counts)
    counts["counterfactuals"] = sum(1 for r in records if r.get("kind") == "counterfactual")
    counts["human_origin_counterfactuals"] = sum(1 for r in records if r.get("kind") == "counterfactual"
                                                 and r.get("origin") in HUMAN_ORIGINS)
    report.counts = {k: v for k, v in counts.items() if v or k in ("sessions", "counterfactuals")}
    if output is None:
        report.ingest = ingest_records(corpus, converted.batches, progress=progress, wait_seconds=wait_seconds)
        return report
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".jsonl", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            for rec in records:
                f.write(orjson.dumps(rec) + b"\n")
        target = corpus if corpus is not None and corpus.exists() else None
        report.corpus = None if target is None else str(target.dir)
        report.ingest = ingest(target, [tmp], dry_run=True, names={tmp: str(out)}, progress=progress,
                               wait_seconds=wait_seconds)
        os.replace(tmp, out)
    finally:
        Path(tmp).unlink(missing_ok=True)
    report.output = out
    return report
