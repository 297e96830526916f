"""What the review app shows of a results store: runs with their figures, each track's worst items.

Headless (no ``textual``): reads ``results.duckdb`` through :class:`trb.results.ResultsStore`.
A run's figures come from :func:`trb.report.run_profile`, the same computation ``trb report``
uses, one per metric of the track registry under the registry's title (Track 1: G;
Track 3: balanced accuracy, …), so the app and the report cannot disagree. A headline's
column is titled by its profile-vector entry (G, ground, attr, viab, nav: the report's
names), short enough for every headline to fit 80 columns; a Track 2 figure of a proxy
adapter carries the report's label, "proxy-tier grounding".

Worst items come one list at a time: the items of one track's stored metric (Track 1's
``tv`` items, its ``llr`` items, Track 3's ``attribution`` items), lowest score first,
a page at a time, never mixed across tracks or metrics (their scores mean different
things). A list is titled by the registry's metric over those items (its headline when
there is one). An item row names its session and step (``session_id``, ``t``), which is
where the app jumps, and carries its ``detail``: what the adapter returned and what it
was scored against (Track 1: the model's distribution, Φ(r′) and TV).
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson

__all__ = ["Column", "Figure", "ItemList", "RunSummary", "WorstItem", "WorstPage", "metric_columns", "read_runs",
           "cached_runs", "forget_memo", "is_kept", "list_runs", "run_summary", "store_fingerprint", "item_lists", "worst_items"]


@dataclass(frozen=True)
class Column:
    """One figure column of the runs table: a headline metric of the track registry."""

    key: str
    track: str
    title: str
    short: str  # the column's title: the metric's profile-vector entry (G, ground, attr, …), else its report key


def metric_columns() -> list[Column]:
    """The runs table's figure columns: every headline metric of the registered tracks, in registry order."""
    from trb.report import PROFILE_VECTOR
    from trb.tracks.base import all_metrics

    entries = {key: name for name, key in PROFILE_VECTOR if key is not None}
    return [Column(m.key, m.track, m.title, entries.get(m.key, m.key)) for m in all_metrics() if m.headline]


@dataclass(frozen=True)
class Figure:
    """One metric of a run as ``trb report`` computes it (point value; the report adds the interval)."""

    key: str
    title: str
    headline: bool
    score: float | None
    n_items: int
    note: str | None  # why there is no figure (not run, not applicable, undefined)
    label: str | None = None  # the report's label ("proxy-tier grounding" for a proxy adapter's Track 2 figure)
    flags: tuple[str, ...] = ()  # the report's flags (not identifiable concepts, a one-class predictor, …)
    details: tuple[str, ...] = ()  # what the report says beside the figure (Track 2: its strength, chosen on dev)


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    created_at: str
    baseline: str | None
    adapter_tier: str | None
    release_version: str | None
    smoke_test: bool
    split: str | None
    tracks: dict[str, tuple[float | None, int]]  # headline metric key -> (the report's figure, items)
    notes: dict[str, str]  # metric key -> why there is no figure (not run, not applicable, undefined)
    figures: tuple[Figure, ...] = ()  # every metric the report shows for the run, in registry order
    labels: dict[str, str] = field(default_factory=dict)  # headline key -> the report's label, where it has one


def _store(path: str | os.PathLike):
    from trb.results import ResultsStore

    return ResultsStore(path, create=False)  # a reader: a missing store is an error, never made here


def read_runs(path: str | os.PathLike, *, on_progress=None) -> list[RunSummary]:
    """Every run in the store, oldest first, with each metric's figure as ``trb report`` computes it.

    ``on_progress(done, runs)``: called once the runs are listed (``done`` = 0, no figures yet) and after each
    run's figures (``runs`` holds every run, the first ``done`` with their figures)."""
    store = _store(path)
    with store.reading("trb-review results"):  # one connection for every read (hundreds of column reads)
        rows = store.runs()
        out = [_listed(r) for r in rows]
        if on_progress is not None:
            on_progress(0, list(out))
        for i, r in enumerate(rows):
            out[i] = run_summary(store, r)
            if on_progress is not None:
                on_progress(i + 1, list(out))
    return out


def _listed(r: dict) -> RunSummary:
    """A run with what its row says of it (id, baseline, tier, release, split), before its figures."""
    return RunSummary(r["run_id"], r["created_at"], r["baseline"], r["adapter_tier"], r["release_version"],
                      bool(r["smoke_test"]), r["split"], {}, {})


def run_summary(store, r: dict) -> RunSummary:
    """One run of ``store.runs()`` with its figures (:func:`trb.report.run_profile`, no intervals)."""
    from trb.report import run_profile
    from trb.tracks.base import all_metrics

    metrics = all_metrics()
    keys = [c.key for c in metric_columns()]
    profile = run_profile(store, r, n_resamples=0)
    tracks = {k: (profile[k]["score"], profile[k]["n_items"]) for k in keys
              if k in profile and profile[k]["n_items"]}
    notes = {k: profile[k]["note"] for k in keys if k in profile and profile[k].get("note")}
    labels = {k: profile[k]["label"] for k in keys if k in profile and profile[k].get("label")}
    figures = tuple(Figure(m.key, m.title, m.headline, profile[m.key].get("score"),
                           profile[m.key].get("n_items") or 0, profile[m.key].get("note"),
                           profile[m.key].get("label"), tuple(profile[m.key].get("flags") or ()),
                           _details(profile[m.key]))
                    for m in metrics if m.key in profile)
    return RunSummary(r["run_id"], r["created_at"], r["baseline"], r["adapter_tier"], r["release_version"],
                      bool(r["smoke_test"]), r["split"], tracks, notes, figures, labels)


#: The cached form's version: a change of RunSummary or Figure changes it (older files are ignored).
CACHE_FORMAT = 1
_memo: dict[str, list[RunSummary]] = {}
_computing: dict[str, threading.Lock] = {}  # one computation per fingerprint at a time: a second caller waits for it
_guard = threading.Lock()


def store_fingerprint(path: str | os.PathLike) -> str:
    """What the runs' figures depend on: the store (path, size and modification time of the DuckDB file and its
    WAL), the toolkit's version and the registry's metrics. Any write to the store changes it."""
    from schemas.versions import TOOLKIT_VERSION
    from trb.tracks.base import all_metrics

    p = Path(path).resolve()
    h = hashlib.sha256(f"trb-review-runs/{CACHE_FORMAT}/{TOOLKIT_VERSION}\n{p}\n".encode())
    h.update(",".join(f"{m.track}:{m.key}:{m.metric}" for m in all_metrics()).encode())
    for f in (p, p.with_name(p.name + ".wal")):
        try:
            st = f.stat()
        except OSError:
            h.update(b"\0absent")
            continue
        h.update(f"\0{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def _cache_file(fingerprint: str) -> Path:
    from trb.verified import cache_dir

    return cache_dir() / "review" / f"runs-{fingerprint[:32]}.json"


def _to_json(runs: list[RunSummary]) -> bytes:
    return orjson.dumps({"format": CACHE_FORMAT, "runs": [asdict(r) for r in runs]})


def _from_json(data: bytes) -> list[RunSummary]:
    # not strict_json: this app's own cache under $TRB_CACHE (owner-only); a bad one is rebuilt
    doc = orjson.loads(data)
    if doc.get("format") != CACHE_FORMAT:
        raise ValueError(f"cache format {doc.get('format')!r}, expected {CACHE_FORMAT}")
    out = []
    for r in doc["runs"]:
        figures = tuple(Figure(**{**f, "flags": tuple(f["flags"]), "details": tuple(f["details"])})
                        for f in r.pop("figures"))
        tracks = {k: (v[0], v[1]) for k, v in r.pop("tracks").items()}
        out.append(RunSummary(**r, tracks=tracks, figures=figures))
    return out


def cached_runs(path: str | os.PathLike, *, on_progress=None) -> tuple[list[RunSummary], str]:
    """:func:`read_runs`, computed once per store fingerprint: ``(runs, source)`` where source is ``"memory"``,
    ``"cache"`` (``$TRB_CACHE/review/``) or ``"computed"`` (``on_progress`` as :func:`read_runs` says). A cache file that cannot be read is computed again
    and rewritten; one that cannot be written leaves the figures computed (only slower next time)."""
    fp = store_fingerprint(path)
    if fp in _memo:
        return _memo[fp], "memory"
    with _guard:
        lock = _computing.setdefault(fp, threading.Lock())
    with lock:  # the app's prefetch may be computing them now: wait for it rather than compute them twice
        if fp in _memo:
            return _memo[fp], "memory"
        return _cached_runs(path, fp, on_progress)


def is_kept(path: str | os.PathLike) -> bool:
    """Whether the store's runs are in memory now (:func:`cached_runs` returns at once)."""
    return store_fingerprint(path) in _memo


def list_runs(path: str | os.PathLike) -> list[RunSummary]:
    """The store's runs as their rows say (id, baseline, tier, release, split), without figures: a quick read."""
    return [_listed(r) for r in _store(path).runs()]


def _cached_runs(path, fp: str, on_progress) -> tuple[list[RunSummary], str]:
    file = _cache_file(fp)
    try:
        runs = _from_json(file.read_bytes())
        source = "cache"
    except (OSError, ValueError, TypeError, KeyError):
        runs = read_runs(path, on_progress=on_progress)
        source = "computed"
        if store_fingerprint(path) == fp:  # the store did not change while it was read
            try:
                file.parent.mkdir(parents=True, exist_ok=True)
                tmp = file.with_name(f".{file.name}.{os.getpid()}")
                tmp.write_bytes(_to_json(runs))
                os.replace(tmp, file)
            except OSError:
                pass
    _memo[fp] = runs
    return runs, source


def forget_memo() -> None:
    """Drop the runs kept in memory (the files in ``$TRB_CACHE/review/`` stay): what a restarted app starts from."""
    _memo.clear()


#: R*'s slices as the report names them (spec §5: they stand beside Track 1 everywhere).
_SLICE_LABELS = (("adversarial", "adversarial r′"), ("ood", "OOD r′"))


def _details(entry: dict) -> tuple[str, ...]:
    """What the report says beside a figure, in short lines: Track 1's adversarial and OOD slices of R*; Track 2's
    headline strength and how it was chosen."""
    lines = []
    for key, label in _SLICE_LABELS:
        sl = (entry.get("slices") or {}).get(key)
        if sl:
            lines.append(f"{label} slice: {sl['score']:.3f} (n={sl['n_items']})")
    choice = entry.get("strength")
    if isinstance(choice, dict) and entry.get("score") is not None:
        how = "chosen on dev, never eval" if choice.get("split") == "dev" else choice.get("rule", "")
        site = f" at site {entry['default_site']}" if entry.get("default_site") else ""
        lines.append(f"strength {choice['strength']:g}{site} ({how})")
    return tuple(lines)


@dataclass(frozen=True)
class ItemList:
    """The items of one track's stored metric in a run, titled by the registry."""

    track: str
    metric: str  # item_scores.metric
    key: str  # the report key of the metric that titles the list
    title: str
    n_items: int  # items with a score


def _sql(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def item_lists(path: str | os.PathLike, run_id: str) -> list[ItemList]:
    """The run's lists of worst items, in registry order: one per (track, stored metric) with scored items."""
    from trb.tracks.base import registered_tracks

    _, rows = _store(path).query(
        "SELECT track, metric, count(*) FROM item_scores "
        f"WHERE run_id = {_sql(run_id)} AND score IS NOT NULL GROUP BY ALL")
    counts = {(t, m): n for t, m, n in rows}
    out = []
    for track in registered_tracks().values():
        seen = set()
        for m in sorted(track.metrics, key=lambda m: not m.headline):  # a list is titled by its headline metric
            if m.metric in seen or (track.id, m.metric) not in counts:
                continue
            seen.add(m.metric)
            out.append(ItemList(track.id, m.metric, m.key, m.title, counts[(track.id, m.metric)]))
    return out


@dataclass(frozen=True)
class WorstItem:
    run_id: str
    track: str
    metric: str
    item_id: str
    session_id: str
    t: int | None
    score: float | None
    label: str | None = None
    predicted: str | None = None
    belief: float | None = None
    origin: str | None = None
    detail: dict | None = None  # what the adapter returned and what it was scored against


@dataclass(frozen=True)
class WorstPage:
    items: list[WorstItem]
    offset: int
    limit: int
    total: int


_OPTIONAL = ("label", "predicted", "belief", "origin", "detail")


def worst_items(path: str | os.PathLike, run_id: str, *, track: str, metric: str, offset: int = 0,
                limit: int = 50) -> WorstPage:
    """One page of the run's ``track``/``metric`` items, lowest score first (then by item id), and their total."""
    store = _store(path)
    cols, _ = store.query("SELECT * FROM item_scores LIMIT 0")
    optional = [c for c in _OPTIONAL if c in cols]  # an older store may lack a track's columns
    where = f"WHERE run_id = {_sql(run_id)} AND track = {_sql(track)} AND metric = {_sql(metric)} AND score IS NOT NULL"
    _, rows = store.query(
        f"SELECT run_id, track, metric, item_id, session_id, t, score{''.join(', ' + c for c in optional)}, "
        f"count(*) OVER () FROM item_scores {where} ORDER BY score, item_id LIMIT {int(limit)} OFFSET {int(offset)}")
    if rows:
        total = rows[0][-1]
    else:
        _, [(total,)] = store.query(f"SELECT count(*) FROM item_scores {where}")
    items = []
    for r in rows:
        extra = dict(zip(optional, r[7:-1]))
        if extra.get("detail") is not None:
            try:
                # not strict_json: JSON the results store holds was written by ResultsStore itself (json.dumps of a run's figures)
                extra["detail"] = orjson.loads(extra["detail"])
            except orjson.JSONDecodeError:
                extra["detail"] = None
        items.append(WorstItem(*r[:7], **extra))
    return WorstPage(items, offset, limit, total)
