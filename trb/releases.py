"""Reading a release: the published format only (manifest.json and parquet files, through DuckDB).

The eval engine never reads a corpus store. Work lists are SQL over the release's
parquet files; sessions are turned into :class:`trb.context.StepContext` objects
one session at a time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb

from schemas.release_format import CONFIGS, MANIFEST, R_PREFIX, data_files, decode_r, file_differences
from trb.context import PastStep, StepContext
from trb.errors import ReleaseError

__all__ = ["Release", "SessionSteps"]

_STEP_R = R_PREFIX["steps"]


def _r(row: dict, prefix: str = _STEP_R) -> dict:
    return decode_r(row, prefix)


@dataclass
class SessionSteps:
    """Every step of one session, in order, with its split and context."""

    session_id: str
    split: str
    context_id: str | None
    language: str | None
    steps: list[dict]
    _past: tuple[PastStep, ...] | None = None
    _contexts: dict | None = None

    def past(self, upto: int) -> tuple[PastStep, ...]:
        if self._past is None:  # built once per session; every context slices it
            self._past = tuple(
                PastStep(s["t"], s["observation"], _r(s, "r_") if s["has_r"] else None, s["action"],
                         tuple(s["action_space"]) if s["action_space"] is not None else None, s["outcome"])
                for s in self.steps)
        return self._past[:upto]

    def context(self, t: int) -> StepContext:
        """The context for acting at step ``t`` (steps before it completed); the same object for the same t."""
        if self._contexts is None:
            self._contexts = {}
        if t not in self._contexts:
            self._contexts[t] = self._context(t)
        return self._contexts[t]

    def _context(self, t: int) -> StepContext:
        s = self.steps[t]
        return StepContext(
            session_id=self.session_id, t=t, history=self.past(t), observation=s["observation"],
            action_space=tuple(s["action_space"]) if s["action_space"] is not None else None,
            r=_r(s, "r_") if s["has_r"] else None, context_id=self.context_id, language=self.language,
            split=self.split)

    def context_after(self, t: int) -> StepContext:
        """The context right after step ``t``'s outcome (Track 3): steps 0..t completed."""
        nxt = self.steps[t + 1] if t + 1 < len(self.steps) else None
        return StepContext(
            session_id=self.session_id, t=t + 1, history=self.past(t + 1),
            observation=nxt["observation"] if nxt else None,
            action_space=tuple(nxt["action_space"]) if nxt and nxt["action_space"] is not None else None,
            r=_r(nxt, "r_") if nxt and nxt["has_r"] else None, context_id=self.context_id,
            language=self.language, split=self.split)


class Release:
    """A release directory, read through DuckDB views named after its configs."""

    def __init__(self, directory: str | os.PathLike, *, check_files: bool = True):
        """Open the release at ``directory``.

        With ``check_files`` (the default, and what ``trb run`` does), every file the
        manifest lists is checked against its sha256 and size first, and a data file
        the manifest does not list is refused: a tampered or incomplete release never
        reaches scoring. (The full content-SHA recompute is ``trb-corpus verify``.)

        Raises:
            ReleaseError: no manifest, a manifest that is not one, files that differ from it,
                or no sessions or steps data.
        """
        self.dir = Path(directory)
        mpath = self.dir / MANIFEST
        if not mpath.is_file():
            raise ReleaseError(f"{self.dir} is not a TRB release (no {MANIFEST}); cut one with `trb-corpus release`")
        try:
            self.manifest = json.loads(mpath.read_text(encoding="utf-8"))
            self.sha: str = self.manifest["release_sha"]
            self.version: str = self.manifest["version"]
            self.kind: str = self.manifest["kind"]
            self.smoke_test: bool = bool(self.manifest["smoke_test"])
            listed = self.manifest["files"]
        except (ValueError, KeyError, TypeError) as e:
            raise ReleaseError(f"{mpath}: not a release manifest ({e})") from None
        if check_files:
            diffs = file_differences(self.dir, self.manifest)
            if diffs:
                more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
                raise ReleaseError(f"{self.dir}: the release's files differ from its manifest: {diffs[0]}{more}; "
                                   "refusing to score a tampered or incomplete release (`trb-corpus verify` "
                                   "lists every difference)")
        self.files = listed
        self.synthetic_share = self.manifest.get("synthetic_share")
        counts = self.manifest.get("counts") or {}
        #: The release's splits: those the manifest counts sessions in.
        self.splits: tuple[str, ...] = tuple(s for s, n in (counts.get("sessions") or {}).items() if n)
        self.con = duckdb.connect(":memory:", config={"threads": min(4, os.cpu_count() or 1)})
        self.configs = []
        for config in CONFIGS:
            files = data_files(self.dir, config)
            if files:
                paths = ", ".join("'" + str(p).replace("'", "''") + "'" for p in files)
                self.con.execute(f"CREATE VIEW {config} AS SELECT * FROM read_parquet([{paths}])")
                self.configs.append(config)
        if "sessions" not in self.configs or "steps" not in self.configs:
            raise ReleaseError(f"{self.dir}: the release has no sessions or steps data")

    def count(self, config: str, split: str | None = None) -> int:
        """Rows of ``config`` (in ``split`` if given), from the manifest's counts."""
        per_split = (self.manifest.get("counts") or {}).get(config) or {}
        return int(per_split.get(split, 0) if split is not None else sum(per_split.values()))

    def rows(self, sql: str, params: list | None = None) -> list[dict]:
        cur = self.con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def sessions(self, split: str | None = None, session_ids: list[str] | None = None) -> Iterator[SessionSteps]:
        """Sessions (optionally of one split, or the given ids) with their steps, one at a time, by id."""
        where, params = [], []
        if split is not None:
            where.append("s.split = ?")
            params.append(split)
        if session_ids is not None:
            where.append("s.session_id IN (SELECT unnest(?::VARCHAR[]))")
            params.append(list(session_ids))
        cond = ("WHERE " + " AND ".join(where)) if where else ""
        cur = self.con.execute(f"""
            SELECT s.session_id, s.split, s.context_id, s.language, list(st ORDER BY st.t) AS steps
            FROM sessions s JOIN steps st USING (session_id) {cond}
            GROUP BY ALL ORDER BY s.session_id""", params)
        while True:
            batch = cur.fetchmany(256)
            if not batch:
                break
            for sid, split_, ctx, lang, steps in batch:
                yield SessionSteps(sid, split_, ctx, lang, steps)

    def with_sessions(self, rows: list[dict]) -> Iterator[tuple[SessionSteps, list[dict]]]:
        """Each session that ``rows`` (work-list rows with a ``session_id``) name, with its rows, by session id."""
        by_session: dict[str, list[dict]] = {}
        for row in rows:
            by_session.setdefault(row["session_id"], []).append(row)
        for sess in self.sessions(session_ids=list(by_session)):
            yield sess, by_session[sess.session_id]

    def close(self) -> None:
        self.con.close()
