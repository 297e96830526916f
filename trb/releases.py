"""Reading a release: the published format only (manifest.json and parquet files, through DuckDB).

The eval engine never reads a corpus store. Work lists are SQL over the release's
parquet files; sessions are turned into :class:`trb.context.StepContext` objects
one session at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson

from schemas.release_format import ADDED_COLUMNS, CONFIGS, MANIFEST, R_PREFIX, R_SLOTS
from toolkit import strict_json
from trb import duck
from trb.context import PastStep, StepContext
from trb.errors import ReleaseError
from trb.verified import CheckRecord, ensure_checked

__all__ = ["Release", "SessionSteps"]

_STEP_R = R_PREFIX["steps"]
#: Step rows per Arrow batch read by :meth:`Release.sessions`.
_BATCH_ROWS = 65_536
#: A release of at most this many sessions keeps the sessions :meth:`Release.with_sessions` read, for the next
#: track of the run; a larger one reads them again each time, so a run's memory does not grow with the release.
SESSION_CACHE_MAX = 50_000
#: The steps columns, and those read per step (a session's id and split are read once, from its session row).
_STEP_COLUMNS = tuple(name for name, _, _ in CONFIGS["steps"])
_PER_STEP = tuple(c for c in _STEP_COLUMNS if c not in ("session_id", "split"))
#: Lists are read as JSON text (far cheaper than Arrow lists turned into Python lists) and parsed once per value.
_LIST_COLUMNS = ("action_space", "action_texts")
_SELECT_STEP = {c: f"to_json(st.{c})::VARCHAR AS {c}" if c in _LIST_COLUMNS else f"st.{c}" for c in _PER_STEP}


class SessionSteps:
    """Every step of one session, in order, with its split and context.

    Built from the release's step columns: a view of rows ``a .. b-1`` of one
    batch's column lists, read in (session, t) order. Each step's r is decoded and
    its :class:`PastStep` made once, when a context first needs it; every context
    of the session slices the same past. ``steps`` gives the step rows as dicts
    (every ``steps`` column), for callers that read a step's fields.
    """

    __slots__ = ("session_id", "split", "context_id", "language", "user_slots", "_cols", "_a", "_n", "_past",
                 "_contexts", "_steps")

    def __init__(self, session_id: str, split: str, context_id: str | None, language: str | None,
                 columns: dict[str, list], a: int = 0, b: int | None = None, user_slots: frozenset[str] = frozenset()):
        self.session_id = session_id
        self.split = split
        self.context_id = context_id
        self.language = language
        #: the session's extension slots declared ``"speaker": "user"`` (every context carries them)
        self.user_slots = user_slots
        self._cols = columns  # steps column -> values of a batch; this session's are rows a .. b-1
        self._a = a
        self._n = (len(columns["t"]) if b is None else b) - a
        self._past: tuple[PastStep, ...] | None = None
        self._contexts: dict[int, StepContext] = {}
        self._steps: list[dict] | None = None

    def __repr__(self) -> str:
        return f"SessionSteps({self.session_id!r}, split={self.split!r}, {self._n} steps)"

    def _column(self, name: str) -> list:
        return self._cols[name][self._a:self._a + self._n]

    @property
    def steps(self) -> list[dict]:
        """The step rows, each a dict of every ``steps`` column (``action_space`` a list), in step order."""
        if self._steps is None:
            sid, split = self.session_id, self.split
            cols = [self._column(c) for c in _PER_STEP]
            for name in _LIST_COLUMNS:
                cols[_PER_STEP.index(name)] = [None if a is None else list(a) for a in self._column(name)]
            self._steps = [{"session_id": sid, "split": split, **dict(zip(_PER_STEP, values))} for values in zip(*cols)]
        return self._steps

    def past(self, upto: int) -> tuple[PastStep, ...]:
        """Steps ``0 .. upto-1``, completed (built once per session; every context slices it)."""
        return (self._past or self._all_past())[:upto]

    def _all_past(self) -> tuple[PastStep, ...]:
        col = self._column
        rs = [_decode_step_r(slots, ext, self.session_id, t) if has else None
              for t, has, ext, *slots in zip(col("t"), col("has_r"), col(_STEP_R + "ext"),
                                             *(col(_STEP_R + k) for k in R_SLOTS))]
        self._past = tuple(map(PastStep, col("t"), col("observation"), rs, col("action"), col("action_space"),
                               col("outcome")))
        return self._past

    def context(self, t: int) -> StepContext:
        """c_t, the context for acting at step ``t``: steps before it completed, step t's observation and action
        space, and not step t's recorded self-report (:meth:`recorded_r`). The same object for the same t."""
        ctx = self._contexts.get(t)
        if ctx is None:
            if not 0 <= t < self._n:
                raise IndexError(f"session {self.session_id} has no step {t} (it has {self._n})")
            past = self._past or self._all_past()
            now = past[t]  # step t's observation and action space, as its past step holds them
            ctx = self._contexts[t] = StepContext(self.session_id, t, past[:t], now.observation, now.action_space,
                                                  self.context_id, self.language, self.split,
                                                  action_texts=self._column("action_texts")[t],
                                                  user_slots=self.user_slots)
        return ctx

    def recorded_r(self, t: int) -> dict | None:
        """The self-report recorded at step ``t`` (None when the step has none)."""
        if not 0 <= t < self._n:
            raise IndexError(f"session {self.session_id} has no step {t} (it has {self._n})")
        return (self._past or self._all_past())[t].r

    def context_after(self, t: int) -> StepContext:
        """The context right after step ``t``'s outcome (Track 3): steps 0..t completed, and no self-report made
        after that outcome.

        Before the last step this is ``context(t + 1)`` (which never holds r_{t+1}); after it, a context with no
        observation or action space.
        """
        if t + 1 < self._n:
            return self.context(t + 1)
        return StepContext(self.session_id, t + 1, self.past(t + 1), None, None, self.context_id,
                           self.language, self.split, user_slots=self.user_slots)


def _decode_step_r(slots: list, ext: str | None, session_id: str, t: int) -> dict:
    """A step's r from its slot values (in :data:`R_SLOTS` order) and ext JSON, as ``decode_r`` gives it.

    Raises:
        ReleaseError: the ext JSON (written by whoever cut the release) is not strict JSON, naming the step.
    """
    r = dict(zip(R_SLOTS, slots))
    try:
        r["ext"] = strict_json.loads(ext) if ext else None
    except strict_json.StrictJSONError as e:
        raise ReleaseError(f"data/steps: session {session_id} step {t}: {_STEP_R}ext is not strict JSON ({e})") from None
    return r


def _user_slots(text: str | None, session_id: str, seen: dict) -> frozenset[str]:
    """The extension slots a session's ``r_extensions`` JSON declares ``"speaker": "user"`` (parsed once per
    distinct text; ``seen`` keeps them).

    Raises:
        ReleaseError: the JSON (written by whoever cut the release) is not a strict JSON object, naming the session.
    """
    slots = seen.get(text)
    if slots is None:
        try:
            declared = strict_json.loads(text) if text else {}
        except strict_json.StrictJSONError as e:
            raise ReleaseError(f"data/sessions: session {session_id}: r_extensions is not strict JSON ({e})") from None
        if not isinstance(declared, dict):
            raise ReleaseError(f"data/sessions: session {session_id}: r_extensions is not a JSON object")
        slots = seen[text] = frozenset(k for k, v in declared.items() if isinstance(v, dict)
                                       and v.get("speaker") == "user")
    return slots


def _spaces(values: list[str | None], seen: dict) -> list[tuple[str, ...] | None]:
    """Action spaces (or action texts), read as JSON text (``to_json``: far cheaper than Arrow lists turned into
    Python lists), as tuples: one object per distinct value, parsed once (``seen`` keeps them across batches)."""
    out = []
    for text in values:
        space = seen.get(text)
        if space is None and text is not None:  # DuckDB's to_json of a string list: plain orjson reads it
            space = seen[text] = tuple(orjson.loads(text))
        out.append(space)
    return out


class Release:
    """A release directory, read through DuckDB views named after its configs."""

    def __init__(self, directory: str | os.PathLike, *, check_files: bool = True):
        """Open the release at ``directory``.

        With ``check_files`` (the default, and what ``trb run`` does), the release is checked
        against its manifest first (:func:`trb.verified.ensure_checked`): every file's sha256 and
        size, no unlisted file, the claims digest, the release SHA recomputed from every row and
        every claim the rows determine (kind, counts, shares, splits, ...). The full check runs once
        per release directory on this machine and is then skipped while the directory's files are
        unchanged; ``self.check`` says how it was checked. A tampered or incomplete release never
        reaches scoring.

        Raises:
            ReleaseError: no manifest, a manifest that is not one, a release that differs from its
                manifest, or no sessions or steps data.
        """
        self.dir = Path(directory)
        mpath = self.dir / MANIFEST
        if not mpath.is_file():
            raise ReleaseError(f"{self.dir} is not a TRB release (no {MANIFEST}); cut one with `trb-corpus release`")
        #: How the release was checked before it was read (None with ``check_files=False``).
        self.check: CheckRecord | None = ensure_checked(self.dir) if check_files else None
        try:
            self.manifest = self.check.manifest if self.check else strict_json.loads(mpath.read_bytes())
            self.sha: str = self.manifest["release_sha"]
            self.version: str = self.manifest["version"]
            self.kind: str = self.manifest["kind"]
            self.smoke_test: bool = bool(self.manifest["smoke_test"])
            listed = self.manifest["files"]
        except strict_json.StrictJSONError as e:
            raise ReleaseError(f"{mpath}: not a release manifest (not strict JSON: {e})") from None
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ReleaseError(f"{mpath}: not a release manifest ({e})") from None
        self.files = listed
        self.synthetic_share = self.manifest.get("synthetic_share")
        counts = self.manifest.get("counts") or {}
        #: The release's splits: those the manifest counts sessions in.
        self.splits: tuple[str, ...] = tuple(s for s, n in (counts.get("sessions") or {}).items() if n)
        self._read: dict[str, SessionSteps] = {}  # sessions read by with_sessions, by id
        self.con = duck.attach()  # an in-memory catalog of views, on the process's DuckDB instance
        self.configs = []
        for config in CONFIGS:  # the files the manifest lists (and the check checked), nothing else beside them
            files = sorted(self.dir / f["path"] for f in listed if isinstance(f, dict)
                           and str(f.get("path", "")).startswith(f"data/{config}/") and f["path"].endswith(".parquet"))
            if files:
                paths = ", ".join("'" + str(p).replace("'", "''") + "'" for p in files)
                self.con.execute(f"CREATE VIEW {config} AS SELECT * FROM read_parquet([{paths}])")
                self.configs.append(config)
        if "sessions" not in self.configs or "steps" not in self.configs:
            raise ReleaseError(f"{self.dir}: the release has no sessions or steps data")
        # columns a newer format added, absent from an older release's files: read as null
        present = {r[0] for r in self.con.execute("DESCRIBE steps").fetchall()}
        self._select_step = {c: (f"NULL::VARCHAR AS {c}" if c in ADDED_COLUMNS["steps"] and c not in present
                                 else sql) for c, sql in _SELECT_STEP.items()}

    def count(self, config: str, split: str | None = None) -> int:
        """Rows of ``config`` (in ``split`` if given), from the manifest's counts."""
        per_split = (self.manifest.get("counts") or {}).get(config) or {}
        return int(per_split.get(split, 0) if split is not None else sum(per_split.values()))

    def rows(self, sql: str, params: list | None = None) -> list[dict]:
        cur = self.con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def sessions(self, split: str | None = None, session_ids: list[str] | None = None) -> Iterator[SessionSteps]:
        """Sessions (optionally of one split, or the given ids) with their steps, one at a time, by id.

        One query reads the steps in (session, t) order as Arrow batches; each batch is
        turned into Python lists column by column and sliced per session (a session
        cut by a batch boundary is carried into the next batch).
        """
        where, params = [], []
        if split is not None:
            where.append("s.split = ?")
            params.append(split)
        if session_ids is not None:
            where.append("s.session_id IN (SELECT unnest(?::VARCHAR[]))")
            params.append(list(session_ids))
        cond = ("WHERE " + " AND ".join(where)) if where else ""
        reader = self.con.sql(f"""
            SELECT s.session_id AS _sid, s.split AS _split, s.context_id AS _ctx, s.language AS _lang,
                   s.r_extensions AS _ext,
                   {", ".join(self._select_step[c] for c in _PER_STEP)}
            FROM sessions s JOIN steps st USING (session_id) {cond}
            ORDER BY s.session_id, st.t""", params=params or None).to_arrow_reader(_BATCH_ROWS)
        carry: dict[str, list] | None = None
        seen_spaces: dict = {}
        seen_ext: dict = {}
        for batch in reader:
            cols = {name: batch.column(name).to_pylist() for name in batch.schema.names}
            cols["action_space"] = _spaces(cols["action_space"], seen_spaces)
            cols["action_texts"] = _spaces(cols["action_texts"], seen_spaces)
            if carry is not None:
                cols = {name: carry[name] + values for name, values in cols.items()}
            sids = cols["_sid"]
            n = len(sids)
            starts = [0, *(i for i in range(1, n) if sids[i] != sids[i - 1])]
            for a, b in zip(starts, starts[1:]):
                yield SessionSteps(sids[a], cols["_split"][a], cols["_ctx"][a], cols["_lang"][a], cols, a, b,
                                   _user_slots(cols["_ext"][a], sids[a], seen_ext))
            carry = {name: values[starts[-1]:] for name, values in cols.items()} if n else carry
        if carry is not None and carry["_sid"]:
            yield SessionSteps(carry["_sid"][0], carry["_split"][0], carry["_ctx"][0], carry["_lang"][0], carry,
                               user_slots=_user_slots(carry["_ext"][0], carry["_sid"][0], seen_ext))

    def with_sessions(self, rows: Iterable[dict]) -> Iterator[tuple[SessionSteps, list[dict]]]:
        """Each session that ``rows`` (work-list rows with a ``session_id``) name, with its rows, by session id.

        In a release of at most :data:`SESSION_CACHE_MAX` sessions they are read once per release (the tracks of
        one run share them and their contexts); in a larger one they are read for each call, as they are used,
        and let go after it.
        """
        by_session: dict[str, list[dict]] = {}
        for row in rows:
            by_session.setdefault(row["session_id"], []).append(row)
        if self.count("sessions") > SESSION_CACHE_MAX:
            for sess in self.sessions(session_ids=list(by_session)):  # read in session-id order, as below
                yield sess, by_session[sess.session_id]
            return
        unread = [sid for sid in by_session if sid not in self._read]
        if unread:
            for sess in self.sessions(session_ids=unread):
                self._read[sess.session_id] = sess
        for sid in sorted(by_session):
            sess = self._read.get(sid)
            if sess is not None:
                yield sess, by_session[sid]

    def cursor(self):
        """A second connection to this release's views (close it after use): for a query whose result is read
        while ``con`` runs others."""
        return duck.cursor(self.con)

    def close(self) -> None:
        duck.detach(self.con)
