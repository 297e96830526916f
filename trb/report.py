"""The TRB report: the profile vector per baseline and Δgov, from a results store.

Spec §5, enforced here:

* **The profile is a vector.** Each track is reported on its own, with its own
  interval; nothing in this module combines scores of different tracks.
* **Δgov = G(trace-full) − G(trace-ablation)**, paired item by item and given with a
  session-bootstrap confidence interval whenever both runs exist on the release;
  otherwise ``delta_gov`` is ``null`` and ``delta_gov_note`` says why.
* **Honest labelling.** A run on a smoke release is "SMOKE TEST — not a TRB score"
  in every format (JSON banner, Markdown first line, HTML banner, plot title).
  Every format names the TRB version, the release SHA and each baseline's adapter tier.

Intervals come from :mod:`trb.stats` (percentile bootstrap, sessions resampled).
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from trb.results import ResultsError, ResultsStore
from trb.stats import CI_METHOD, Estimate, paired_balanced_accuracy_delta_by_session, paired_delta_by_session
from trb.tracks.base import Metric, all_metrics, registered_tracks
from trb.transfer import REFERENCE_BASELINE, anti_goodhart, collapse_check, transfer_estimate
from trb.transfer import RULES as TRANSFER_RULES

__all__ = [
    "BASELINE_ORDER",
    "HELD_OUT_SPLITS",
    "format_score",
    "run_profile",
    "SMOKE_BANNER",
    "build_report",
    "plot_profiles",
    "plot_tracks",
    "PROFILE_VECTOR",
    "PROXY_GROUNDING",
    "render_html",
    "render_json",
    "render_markdown",
]

#: The spec §4 baselines, in report order; other names follow, alphabetically.
BASELINE_ORDER = ("instruct-base", "cot-prompted", "cot-sft", "trace-ablation", "trace-full")
SMOKE_BANNER = "SMOKE TEST — not a TRB score"
FULL, ABLATION = "trace-full", "trace-ablation"
CONFIDENCE = 0.95

#: Splits never used to fit anything (spec §5): Δgov is computed on these only, in this order of preference.
HELD_OUT_SPLITS = ("eval", "transfer")
#: The order split tables appear in: held-out first.
SPLIT_ORDER = ("eval", "transfer", "dev", "train")


def _metrics() -> list[Metric]:
    return all_metrics()


def _title(key: str) -> str:
    return {m.key: m.title for m in _metrics()}[key]


_PROFILE_NOTE = ("The profile is a vector: each track is reported on its own and tracks are never combined "
                 "into one number (TRB spec §5).")


def _num(x) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _track_entry(est: Estimate | None, metric: str, *, synthetic_share: float | None = None,
                 note: str | None = None, extra: dict | None = None) -> dict:
    entry = {"score": None, "ci_low": None, "ci_high": None, "n_items": 0, "n_sessions": 0,
             "synthetic_share": synthetic_share, "metric": metric}
    if est is not None:
        entry.update(score=_num(est.value), ci_low=_num(est.ci_low), ci_high=_num(est.ci_high),
                     n_items=est.n_items, n_sessions=est.n_sessions)
        if est.n_skipped:
            entry["n_resamples_undefined"] = est.n_skipped
        if est.n_sessions < 2:
            note = note or "one session: no between-session interval can be estimated"
    if note:
        entry["note"] = note
    if extra:
        entry.update(extra)
    if est is not None and est.n_sessions >= 2 and est.has_ci and math.isclose(est.ci_low, est.ci_high, abs_tol=1e-12):
        entry["flags"] = [*entry.get("flags", []), "zero-width interval: every resample gave the same value (a "
                          "degenerate predictor or a constant score), not a certain one"]
    elif est is not None and est.has_ci and not est.ci_low - 1e-12 <= est.value <= est.ci_high + 1e-12:
        entry["flags"] = [*entry.get("flags", []), "point outside its interval: the resampled values are shifted "
                          "from the point value (the statistic is biased under session resampling), so the "
                          "percentile interval's coverage is in doubt"]
    return entry


def _synthetic_share(origin: np.ndarray) -> float | None:
    known = origin[origin != None]  # noqa: E711  (elementwise on an object array)
    if known.size == 0:
        return None
    return float(np.mean(known == "synthetic"))


def _baseline_key(name: str) -> tuple:
    return (BASELINE_ORDER.index(name), "") if name in BASELINE_ORDER else (len(BASELINE_ORDER), name)


def _columns(table: pa.Table, names: list[str]) -> dict[str, np.ndarray]:
    """Columns as numpy: strings (and nullable booleans) as object arrays with None, doubles with nan for null.

    A string column's equal values are one Python object (a million item scores name a few tracks and metrics
    and a few sessions each: one ``str`` per item would hold them many times over)."""
    return {n: _numpy(table.column(n)) for n in names}


def _numpy(column: pa.ChunkedArray) -> np.ndarray:
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return column.to_numpy(zero_copy_only=False)
    coded = pc.dictionary_encode(column).combine_chunks()
    values = np.empty(len(coded.dictionary) + 1, dtype=object)  # the last one: None, for a null
    values[:-1] = coded.dictionary.to_pylist()
    indices = pc.fill_null(coded.indices, len(coded.dictionary)).to_numpy(zero_copy_only=False)
    return values[indices]


class _ItemColumns(Mapping):
    """One track's item columns of one run, as numpy arrays (:func:`_numpy`; ``session_id`` as
    :func:`_session_codes`), each read from the store the first time a figure asks for it, and kept for the track's
    other figures.

    A figure reads two or three of a track's dozen columns: reading them all at once, as one Arrow table and then
    as numpy, held a million sessions' items twice over (Track 1's 1.46M items); now only the columns asked for are
    held, once. (Dropping the least recently read past a budget and reading them again was tried: Track 2's figures
    ask for the same columns again and again, and on 4.28M trials that read them 2.7 times as long, for no less
    memory at the peak.)"""

    def __init__(self, store: ResultsStore, run_id: str, track_id: str, names: list[str]):
        self._store, self._run_id, self._track_id, self._names = store, run_id, track_id, names
        self._read: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._read:
            column = self._store.items(self._run_id, track=self._track_id, columns=[name]).column(0)
            self._read[name] = _session_codes(column) if name == "session_id" else _numpy(column)
        return self._read[name]

    def __contains__(self, name: object) -> bool:  # a column the track has, not read for asking
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class _Selected(Mapping):
    """``columns`` at the rows ``mask`` selects, each column cut the first time it is asked for."""

    def __init__(self, columns: Mapping[str, np.ndarray], mask: np.ndarray):
        self._columns, self._mask = columns, mask
        self._cut: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._cut:
            self._cut[name] = self._columns[name][self._mask]
        return self._cut[name]

    def __contains__(self, name: object) -> bool:  # not cut for asking
        return name in self._columns

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)


def _session_codes(column: pa.ChunkedArray) -> np.ndarray:
    """Each item's session as an int64 code, the codes numbered in the order of the ids: what a track's figures
    need of a session (to group its items, and the order the bootstrap draws them in: ``np.unique`` of the codes
    orders them as of the ids), without a Python ``str`` per session (a million sessions' ids took about 100 MB).
    Arrow orders strings by their UTF-8 bytes, which is the order of their code points, Python's order of ``str``.
    A null id stays a string column, for the statistics' own error."""
    coded = pc.dictionary_encode(column).combine_chunks()
    if coded.null_count:
        return _numpy(column)
    rank = np.empty(len(coded.dictionary), dtype=np.int64)
    rank[pc.sort_indices(coded.dictionary).to_numpy()] = np.arange(len(coded.dictionary), dtype=np.int64)
    return rank[coded.indices.to_numpy()]


def _has_values(column: np.ndarray | None) -> bool:
    if column is None or column.size == 0:
        return False
    if column.dtype == object:
        return any(v is not None for v in column)
    return bool(np.any(~np.isnan(column))) if np.issubdtype(column.dtype, np.floating) else True


def _timings(run: dict) -> dict:
    timings = run.get("timings")
    if isinstance(timings, str):  # ResultsStore.runs parses it; a raw row holds the JSON text
        try:
            timings = json.loads(timings)
        except ValueError:
            return {}
    return timings if isinstance(timings, dict) else {}


def run_profile(store: ResultsStore, run: dict, *, n_resamples: int = 2000, seed: int = 0,
                confidence: float = CONFIDENCE) -> dict[str, dict]:
    """Every registered metric of one run: report key -> entry (score, CI, items, sessions, note).

    This is the one computation of a run's figures: ``trb report`` and the review app's
    results screen both call it (``n_resamples=0`` gives the point values without intervals).
    A headline metric of a track the run did not score is "not run"; one the adapter could
    not run is "not applicable (needs X)".
    """
    tracks = registered_tracks()
    run_tracks = {str(t) for t in (run.get("tracks") or [])}
    summary = _timings(run).get("summary") or {}
    out: dict[str, dict] = {}
    loaded: dict[str, _ItemColumns] = {}  # one track's items at a time, and only its own columns

    def track_columns(track_id: str) -> _ItemColumns:
        if track_id not in loaded:
            loaded.clear()
            names = list(dict.fromkeys(["metric", "session_id", "score", *(c.name for c in tracks[track_id].columns)]))
            loaded[track_id] = _ItemColumns(store, run["run_id"], track_id, names)
        return loaded[track_id]

    by_track = sorted(_metrics(), key=lambda m: m.track)  # each track's items read once (sorted() is stable)
    for m in by_track:
        track = tracks[m.track]
        s = summary.get(m.track) or {}
        if s.get("status") == "not_applicable":
            if m.headline:
                reason = s.get("reason") or f"needs {', '.join(s['needs'])}"
                out[m.key] = _track_entry(None, m.definition, note=f"not applicable ({reason})",
                                          extra={"not_applicable": True, "needs": s.get("needs") or []})
            continue
        cols = track_columns(m.track)
        mask = cols["metric"] == m.metric
        n = int(mask.sum())
        na = (s.get("not_applicable") or {}).get(m.key)
        if n == 0:
            if na:
                out[m.key] = _track_entry(None, m.definition, note=f"not applicable (needs {', '.join(na['needs'])}; "
                                          f"{na['n_items']} items not scored)",
                                          extra={"not_applicable": True, "needs": na["needs"]})
            elif m.headline:
                note = "run on this track but no items scored" if m.track in run_tracks else "not run"
                out[m.key] = _track_entry(None, m.definition, note=note)
            continue
        sub = cols if n == mask.size else _Selected(cols, mask)  # no copy when every item is of m
        if m.requires is not None and not _has_values(sub.get(m.requires)):
            continue  # items scored before this figure's column existed (or with nothing in it)
        if "score" in sub and m.metric != "attribution":
            scores = sub["score"].astype(float, copy=False)  # read only: no copy of a float column
            if np.isnan(scores).any():
                out[m.key] = _track_entry(None, m.definition, note=f"{int(np.isnan(scores).sum())} items lack a score",
                                          extra={"n_items": n})
                continue
        try:
            est = track.aggregate(m, sub, n_resamples=n_resamples, confidence=confidence, seed=seed)
        except ValueError as e:
            out[m.key] = _track_entry(None, m.definition, note=f"{m.title} undefined: {e}", extra={"n_items": n})
            continue
        extra: dict = {}
        describe = getattr(track, "describe", None)
        if describe is not None:
            try:
                extra.update(describe(m, sub))
            except ValueError:  # nothing to describe (e.g. no belief reported): the figure says why
                pass
        if "origin" in sub:  # a track whose items carry a counterfactual origin: its synthetic share and slices
            share = _synthetic_share(sub["origin"])
            source = "items"
            if share is None:
                share, source = _num(run.get("synthetic_share")), "release"
            extra["synthetic_share_source"] = source if share is not None else None
            slices = {}
            scores = sub["score"].astype(float, copy=False)  # read only: no copy of a float column
            for flag in ("adversarial", "ood") if m.headline else ():
                if flag in sub:
                    sel = sub[flag] == True  # noqa: E712  (elementwise on an object array)
                    if sel.any():
                        slices[flag] = {"score": float(np.mean(scores[sel])), "n_items": int(sel.sum())}
            if slices:
                extra["slices"] = slices
        else:
            share = None
        if m.track == GROUND_TRACK:  # the default site, where the headline figure is read
            default = sub["site"][sub["site_rank"] == 0] if "site_rank" in sub else ()
            if len(default):
                extra["default_site"] = str(default[0])
        out[m.key] = _track_entry(est, m.definition, synthetic_share=share, extra=extra)
        if na:
            out[m.key]["n_not_applicable"] = na["n_items"]
    loaded.clear()
    out = {m.key: out[m.key] for m in _metrics() if m.key in out}  # in the registry's order, as before
    for m in _metrics():  # Track 2 figures name their tier: proxy-tier grounding is not the spec's Track 2
        if m.track == GROUND_TRACK and m.key in out:
            out[m.key].update(_grounding_tier(run.get("adapter_tier")))
    return out


def _grounding_tier(tier: str | None) -> dict:
    """What a Track 2 figure of an adapter of ``tier`` carries: its tier, and on the proxy tier its label."""
    if tier == "proxy":
        return {"tier": "proxy", "label": PROXY_GROUNDING, "tier_note": PROXY_GROUNDING_NOTE}
    return {"tier": tier}


def format_score(entry: dict | None) -> str:
    """A metric's value as every view shows it (3 decimals; "—" when there is none)."""
    if not entry or entry.get("score") is None:
        return "—"
    return f"{entry['score']:.3f}"


def _emit_r(run: dict) -> dict | None:
    """The run's emit_r calls and missing slots (recorded by ``run_tracks`` for a proxy adapter), else None."""
    timings = run.get("timings")
    if isinstance(timings, str):  # ResultsStore.runs parses it; a raw row holds the JSON text
        try:
            timings = json.loads(timings)
        except ValueError:
            return None
    emit = timings.get("emit_r") if isinstance(timings, dict) else None
    return emit if isinstance(emit, dict) and "calls" in emit else None


def _missing_text(emit: dict | None) -> str:
    if not emit:
        return "—"
    missing = emit.get("missing") or {}
    parts = [f"{slot} {n}" for slot, n in missing.items() if n]
    return f"{', '.join(parts) if parts else 'none'} / {emit['calls']:,} emit_r"


def _paired_items(store: ResultsStore, a: dict, b: dict, track: str, metric: str, columns: list[str]) -> pa.Table:
    """Items of ``metric`` both runs scored, joined on item_id (``a``'s columns, then ``b``'s suffixed ``_b``)."""
    ta = store.items(a["run_id"], track=track, columns=["metric", "item_id", "session_id", "split", *columns])
    tb = store.items(b["run_id"], track=track, columns=["metric", "item_id", *columns])
    ta = ta.filter(pc.equal(ta.column("metric"), metric)).select(["item_id", "session_id", "split", *columns])
    tb = tb.filter(pc.equal(tb.column("metric"), metric)).select(["item_id", *columns])
    tb = tb.rename_columns(["item_id", *(f"{c}_b" for c in columns)])
    return ta.join(tb, "item_id", join_type="inner").sort_by("item_id")


def _ci_reading(est: Estimate) -> str | None:
    if not est.has_ci:
        return None
    if est.ci_low > 0:
        return "the CI lies above 0"
    if est.ci_high < 0:
        return "the CI lies below 0"
    return "the CI includes 0"


def _delta_gov(store: ResultsStore, full: dict, ablation: dict, *, n_resamples: int, seed: int) -> tuple[dict | None, str | None]:
    metric = next(m.metric for m in _metrics() if m.key == "1")
    joined = _paired_items(store, full, ablation, "1", metric, ["score"])
    n_pairs = joined.num_rows
    if n_pairs == 0:
        return None, (f"runs {full['run_id']} ({FULL}) and {ablation['run_id']} ({ABLATION}) share no Track 1 "
                      f"(tv) item: {full.get('n_items')} and {ablation.get('n_items')} items, none in common")
    sf = joined.column("score").to_numpy(zero_copy_only=False).astype(float)
    sa = joined.column("score_b").to_numpy(zero_copy_only=False).astype(float)
    if np.isnan(sf).any() or np.isnan(sa).any():
        return None, "some paired Track 1 items lack a score"
    sessions = np.asarray(joined.column("session_id").to_pylist(), dtype=object)
    est = paired_delta_by_session(sf, sa, sessions, n_resamples=n_resamples, confidence=CONFIDENCE, seed=seed)
    excludes_zero = None
    if est.has_ci:
        excludes_zero = bool(est.ci_low > 0 or est.ci_high < 0)
    splits = sorted({s for s in joined.column("split").to_pylist() if s is not None})
    n_full, n_abl = (int(pc.sum(pc.equal(store.items(r["run_id"], track="1", columns=["metric"]).column("metric"),
                                         metric)).as_py() or 0) for r in (full, ablation))
    return {
        "value": _num(est.value), "ci_low": _num(est.ci_low), "ci_high": _num(est.ci_high),
        "n_sessions": est.n_sessions, "n_items": est.n_items,
        "definition": f"G({FULL}) − G({ABLATION}), paired by item_id",
        "ci_excludes_zero": excludes_zero,
        "full_run_id": full["run_id"], "ablation_run_id": ablation["run_id"],
        "n_unpaired_full": n_full - n_pairs, "n_unpaired_ablation": n_abl - n_pairs,
        "splits": splits,
        **({"note": "one session: no between-session interval can be estimated"} if est.n_sessions < 2 else {}),
    }, None


#: Δgov's falsifier band (spec §5: "a near-zero gap falsifies it"): a CI inside ±this is "near zero".
FALSIFIER_DELTA = 0.02
#: The CoT-supervised finetune: the baseline to beat on Track 1 (spec §3, §4).
COT_SFT = "cot-sft"


def _comparison(name: str, direction: str, est: Estimate | None, note: str | None = None, **more) -> dict:
    out = {"comparison": name, "direction": direction, "value": None, "ci_low": None, "ci_high": None,
           "n_items": 0, "n_sessions": 0, "reading": None, **more}
    if est is not None:
        out.update(value=_num(est.value), ci_low=_num(est.ci_low), ci_high=_num(est.ci_high), n_items=est.n_items,
                   n_sessions=est.n_sessions, reading=_ci_reading(est))
    if note:
        out["note"] = note
    return out


def _pass_bars(store: ResultsStore, latest: dict, split: str, rows: list[dict], delta: dict | None, *,
               n_resamples: int, seed: int) -> list[dict]:
    """The spec's pass bars for one held-out split, each a paired difference with its CI: directions, not verdicts."""
    opts = {"n_resamples": n_resamples, "confidence": CONFIDENCE, "seed": seed}
    out = []
    name = f"G({FULL}) − G({COT_SFT})"
    direction = "spec §3 Track 1: G materially above the CoT-supervised finetune (higher is better)"
    if (FULL, split) in latest and (COT_SFT, split) in latest:
        j = _paired_items(store, latest[(FULL, split)], latest[(COT_SFT, split)], "1", "tv", ["score"])
        if j.num_rows:
            a = j.column("score").to_numpy(zero_copy_only=False).astype(float)
            b = j.column("score_b").to_numpy(zero_copy_only=False).astype(float)
            out.append(_comparison(name, direction, paired_delta_by_session(
                a, b, j.column("session_id").to_pylist(), **opts)))
        else:
            out.append(_comparison(name, direction, None, "the two runs share no Track 1 item"))
    else:
        out.append(_comparison(name, direction, None, f"needs both {FULL} and {COT_SFT} runs on {split}"))

    name = "Track 3 BA(best native) − BA(best proxy)"
    direction = "spec §3 Track 3: balanced accuracy above the proxy baseline (higher is better)"
    best = {}
    for tier in ("native", "proxy"):
        scored = [r for r in rows if r["adapter_tier"] == tier and (r["tracks"].get("3") or {}).get("score") is not None]
        if scored:
            best[tier] = max(scored, key=lambda r: (r["tracks"]["3"]["score"], r["name"]))
    if len(best) == 2:
        j = _paired_items(store, latest[(best["native"]["name"], split)], latest[(best["proxy"]["name"], split)], "3",
                          "attribution", ["label", "predicted"])
        try:
            est = paired_balanced_accuracy_delta_by_session(
                j.column("label").to_pylist(), j.column("predicted").to_pylist(),
                j.column("predicted_b").to_pylist(), j.column("session_id").to_pylist(), **opts)
            out.append(_comparison(f"Track 3 BA({best['native']['name']}) − BA({best['proxy']['name']})", direction,
                                   est, native=best["native"]["name"], proxy=best["proxy"]["name"]))
        except ValueError as e:
            out.append(_comparison(name, direction, None, f"undefined: {e}"))
    else:
        out.append(_comparison(name, direction, None, "needs a Track 3 score from a native and from a proxy baseline"))

    name = f"Δgov falsifier: is G({FULL}) − G({ABLATION}) near zero (±{FALSIFIER_DELTA})?"
    direction = ("spec §5: a large positive gap is the central claim; a near-zero gap falsifies it. Near zero: "
                 f"the CI lies within ±{FALSIFIER_DELTA}")
    if delta is None or delta.get("ci_low") is None:
        out.append(_comparison(name, direction, None, "no Δgov with an interval on this split"))
    else:
        lo, hi = delta["ci_low"], delta["ci_high"]
        if -FALSIFIER_DELTA <= lo and hi <= FALSIFIER_DELTA:
            reading = f"the CI lies within ±{FALSIFIER_DELTA}: a near-zero gap, which falsifies the central claim"
        elif lo > FALSIFIER_DELTA:
            reading = f"the CI lies above +{FALSIFIER_DELTA}: not near zero; the central claim survives this test"
        elif lo > 0:
            reading = f"the CI lies above 0 but reaches into ±{FALSIFIER_DELTA}: positive, possibly near zero"
        else:
            reading = f"the CI includes 0 and reaches beyond ±{FALSIFIER_DELTA}: inconclusive at this size"
        out.append({"comparison": name, "direction": direction, "value": delta["value"], "ci_low": lo, "ci_high": hi,
                    "n_items": delta["n_items"], "n_sessions": delta["n_sessions"], "reading": reading,
                    "delta": FALSIFIER_DELTA})
    out.append(_ground_gap(store, latest, split, rows, n_resamples=n_resamples, seed=seed))
    return out


# -- Track 2: the full − ablation gap ------------------------------------------------------------------

GROUND_TRACK = "2"
#: How proxy-tier Track 2 figures are labelled in every output.
PROXY_GROUNDING = "proxy-tier grounding"
PROXY_GROUNDING_NOTE = ("spec §3 defines Track 2 on native models only (activation-level access to an r_t "
                        "pathway); proxy-tier grounding adds the concept's vector to a causal LM's residual stream and "
                        "reads the slot it elicits: this toolkit's extension, reported apart from native-tier grounding "
                        "and never compared with it")
GROUND_DIRECTION = (f"spec §3 Track 2: AUC materially above 0.5 and, for a native Trace-AI model, above a same-size "
                    f"model without L_gov ({FULL} above {ABLATION}; higher is better)")


def _ground_trials(store: ResultsStore, run: dict) -> dict[str, np.ndarray] | None:
    """The trials of a run's headline ``ground`` figure (reported split, default site, injected at the strength
    chosen on dev, and the zero null) as columns: score, injected, concept, session_id, step (the step's item id).

    The selection is :meth:`trb.tracks.track2.Track2.aggregate`'s; the caller checks the AUC it gives is the
    run's ``ground`` figure. None when the run has no Track 2 trials.
    """
    from trb.tracks.track2 import CHOICE_SPLIT, choose_strength

    m = _metric("ground")
    names = ["item_id", "session_id", "split", "condition", "concept", "site_rank", "strength", "score"]
    table = store.items(run["run_id"], track=m.track, columns=["metric", *names])
    table = table.filter(pc.equal(table.column("metric"), m.metric))
    if table.num_rows == 0:
        return None
    cols = _columns(table, names)
    strength = choose_strength(cols)["strength"]
    is_dev = cols["split"] == CHOICE_SPLIT
    reported = ~is_dev if (~is_dev).any() else is_dev
    at = reported & (cols["site_rank"] == 0)
    inj = at & (cols["condition"] == "injected") & (cols["strength"] == strength)
    sel = inj | (at & (cols["condition"] == "zero"))
    return {"score": cols["score"][sel].astype(float), "injected": inj[sel], "concept": cols["concept"][sel],
            "session_id": cols["session_id"][sel],
            "step": np.array([str(i).split("|", 1)[0] for i in cols["item_id"][sel]], dtype=object)}


def _weighted_aucs(trials: dict[str, np.ndarray], codes: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """The detection AUC (per concept, then averaged) under each row of session weights ``draws`` (R, k); nan
    where no concept has both kinds of trial."""
    import warnings

    from trb.grounding import resampled_aucs  # the AUC detection_auc_by_session resamples, reused as is

    s, pos, st = trials["score"], trials["injected"], trials["concept"]
    groups = [np.flatnonzero(st == v) for v in dict.fromkeys(st.tolist())]
    groups = [g for g in groups if pos[g].any() and (~pos[g]).any()]
    per = np.stack([resampled_aucs(s[g], pos[g], codes[g], draws) for g in groups], axis=1)
    with warnings.catch_warnings():  # a resample with no concept left: nanmean of nothing
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(per, axis=1)


def ground_gap_by_session(a: dict[str, np.ndarray], b: dict[str, np.ndarray], *, n_resamples: int,
                          confidence: float = CONFIDENCE, seed: int = 0) -> tuple[Estimate, str]:
    """AUC(a) − AUC(b) for two runs' ``ground`` trials (see :func:`_ground_trials`), with a session-bootstrap CI.

    **Paired** when both runs' trials are on the same steps (the same step item ids): each replicate draws the
    shared sessions once and recomputes both AUCs from the drawn sessions' trials, so what the two runs share
    cancels. Otherwise **independent**: each run's sessions are drawn on their own (a's first, from one
    ``numpy.random.default_rng(seed)``). Each AUC is :func:`trb.grounding.detection_auc_by_session`'s (per concept,
    averaged); a replicate in which either is undefined is skipped and counted in ``n_skipped``.

    Returns the estimate (``n_items``: both runs' trials; ``n_sessions``: the sessions drawn, shared or summed) and
    ``"paired"`` or ``"independent"``.

    Raises:
        ValueError: a run without a concept that has both injected and null trials.
    """
    from trb.grounding import detection_auc_by_session
    from trb.stats import _session_index

    value = (detection_auc_by_session(a["score"], a["injected"], a["concept"], a["session_id"], n_resamples=0).value
             - detection_auc_by_session(b["score"], b["injected"], b["concept"], b["session_id"], n_resamples=0).value)
    paired = set(a["step"].tolist()) == set(b["step"].tolist())
    n_items = int(a["score"].size + b["score"].size)
    if paired:
        codes, k = _session_index(np.concatenate([a["session_id"], b["session_id"]]), n_items)
        ca, cb = codes[:a["score"].size], codes[a["score"].size:]
        ka = kb = k
    else:
        ca, ka = _session_index(a["session_id"], a["score"].size)
        cb, kb = _session_index(b["session_id"], b["score"].size)
        k = ka + kb
    how = "paired" if paired else "independent"
    if min(ka, kb) < 2 or n_resamples == 0:
        return Estimate(value, math.nan, math.nan, n_items, k), how
    rng = np.random.default_rng(seed)
    da = rng.multinomial(ka, np.full(ka, 1.0 / ka), size=n_resamples).astype(float)
    db = da if paired else rng.multinomial(kb, np.full(kb, 1.0 / kb), size=n_resamples).astype(float)
    dist = _weighted_aucs(a, ca, da) - _weighted_aucs(b, cb, db)
    kept = dist[~np.isnan(dist)]
    if kept.size == 0:
        return Estimate(value, math.nan, math.nan, n_items, k, int(dist.size)), how
    alpha = (1 - confidence) / 2
    low, high = np.quantile(kept, [alpha, 1 - alpha])
    return Estimate(value, float(low), float(high), n_items, k, int(dist.size - kept.size)), how


def _ground_statement(gap: Estimate, full: dict, abl: dict) -> tuple[bool | None, str]:
    """Whether the Track 2 direction holds (True, False, or None: not established), said plainly."""
    chance = _metric("ground").chance
    parts, verdicts = [], []
    if full["score"] <= chance:
        parts.append(f"{FULL} AUC NOT above {chance} ({_f(full['score'])})")
        verdicts.append(False)
    elif full.get("ci_low") is not None and full["ci_low"] > chance:
        parts.append(f"{FULL} AUC above {chance} (its CI lies above {chance})")
        verdicts.append(True)
    else:
        parts.append(f"{FULL} AUC above {chance} in the point value only (its CI reaches {chance})")
        verdicts.append(None)
    levels = f"{_f(full['score'])} vs {_f(abl['score'])}"
    if gap.value <= 0:
        parts.append(f"full model NOT above the ablation ({levels})")
        verdicts.append(False)
    elif gap.has_ci and gap.ci_low > 0:
        parts.append(f"full model above the ablation ({levels}; the gap's CI lies above 0)")
        verdicts.append(True)
    else:
        parts.append(f"full model above the ablation in the point value only ({levels}; the gap's CI "
                     + ("includes 0)" if gap.has_ci else "is not available)"))
        verdicts.append(None)
    met = False if False in verdicts else (None if None in verdicts else True)
    head = {True: "direction met", False: "direction NOT met", None: "direction not established"}[met]
    return met, f"{head}: " + "; ".join(parts)


def _ground_gap(store: ResultsStore, latest: dict, split: str, rows: list[dict], *, n_resamples: int,
                seed: int) -> dict:
    """Track 2's pass bar on one split: ground(trace-full) − ground(trace-ablation) with its CI, and whether the
    direction (AUC above 0.5, full above the ablation) holds."""
    name = f"Track 2 ground({FULL}) − ground({ABLATION})"
    by = {r["name"]: r for r in rows}
    figures = {b: (by[b]["tracks"].get("ground") or {}) if b in by else {} for b in (FULL, ABLATION)}
    missing = [b for b, e in figures.items() if e.get("score") is None]
    if missing:
        return _comparison(name, GROUND_DIRECTION, None, f"needs a Track 2 ground figure from both {FULL} and "
                           f"{ABLATION} on {split} ({' and '.join(missing)}: none)")
    tiers = {by[b]["adapter_tier"] for b in (FULL, ABLATION)}
    if tiers != {"native"}:
        if tiers == {"proxy"}:
            name = f"{PROXY_GROUNDING}({FULL}) − {PROXY_GROUNDING}({ABLATION})"
        else:
            return _comparison(name, GROUND_DIRECTION, None, f"{FULL} and {ABLATION} are on different adapter "
                               f"tiers ({', '.join(sorted(tiers))}): native-tier and {PROXY_GROUNDING} are never "
                               "compared")
    from trb.grounding import detection_auc_by_session

    trials = {b: _ground_trials(store, latest[(b, split)]) for b in (FULL, ABLATION)}
    for b, t in trials.items():  # the trials must be those of the figure the report shows
        if t is None or not math.isclose(detection_auc_by_session(t["score"], t["injected"], t["concept"],
                                                                  t["session_id"], n_resamples=0).value,
                                         figures[b]["score"], abs_tol=1e-12):
            return _comparison(name, GROUND_DIRECTION, None, f"the Track 2 trials of {b} do not reproduce its "
                               "ground figure: the gap is not computed")
    try:
        est, how = ground_gap_by_session(trials[FULL], trials[ABLATION], n_resamples=n_resamples,
                                         confidence=CONFIDENCE, seed=seed)
    except ValueError as e:
        return _comparison(name, GROUND_DIRECTION, None, f"undefined: {e}")
    met, statement = _ground_statement(est, figures[FULL], figures[ABLATION])
    return _comparison(name, GROUND_DIRECTION, est, bootstrap=how, direction_met=met, statement=statement,
                       tier="proxy" if tiers == {"proxy"} else "native",
                       levels={b: {k: figures[b].get(k) for k in ("score", "ci_low", "ci_high")}
                               for b in (FULL, ABLATION)})


def _track2_summary(tables: list[dict], baselines: list[dict]) -> dict:
    """The report's Track 2 block: the pass bar's gap on each held-out split (the first one's as ``gap``), the
    rules, and which rows are native-tier and which proxy-tier grounding."""
    from trb.grounding import COSINE_FLAG
    from trb.tracks.track2 import CHOICE_RULE, CHOICE_SPLIT

    gaps = {t["split"]: next(c for c in t["pass_bars"] if c["direction"] == GROUND_DIRECTION)
            for t in tables if t.get("pass_bars")}
    scored = [b for b in baselines if (b["tracks"].get("ground") or {}).get("score") is not None]
    first = next((g for g in gaps.values() if g["value"] is not None), None)
    return {"direction": GROUND_DIRECTION, "gap": first, "gaps": gaps,
            "strength_rule": f"chosen on the {CHOICE_SPLIT} split only, never on eval: {CHOICE_RULE}",
            "cosine_threshold": COSINE_FLAG,
            "native_tier": [f"{b['name']} ({b['split']})" for b in scored if b["adapter_tier"] != "proxy"],
            "proxy_tier": {"label": PROXY_GROUNDING, "note": PROXY_GROUNDING_NOTE,
                           "baselines": [f"{b['name']} ({b['split']})" for b in scored if b["adapter_tier"] == "proxy"]}}


def _split_key(split) -> tuple:
    return (SPLIT_ORDER.index(split), "") if split in SPLIT_ORDER else (len(SPLIT_ORDER), str(split))


def unfinished_text(run: dict) -> str:
    """How an unfinished run is named wherever results are shown (it never is one)."""
    return (f"run {run['run_id']} ({run.get('baseline')}, split {run.get('split')}) is unfinished, "
            f"{run.get('n_stored', 0):,} item scores stored so far; not a result: finish it with "
            f"`trb run --resume {run['run_id']}`")


def runs_on_release(store: ResultsStore, release_sha: str | None, what: str) -> tuple[str, list[dict], str | None]:
    """The runs of one release (oldest first): ``release_sha``'s, or with None the most recent run's release.

    Returns (release SHA, its runs, a note saying which release was picked and why when several have runs, else
    None). ``what`` names the product in messages ("report", "plan").

    Raises:
        ResultsError: the store has no runs, or none on ``release_sha``.
    """
    all_runs = store.runs()
    if not all_runs:
        unfinished = store.unfinished_runs()
        if unfinished:
            raise ResultsError(f"{store.path} holds no finished run, nothing to {what}: "
                               + "; ".join(unfinished_text(r) for r in unfinished))
        raise ResultsError(f"{store.path} holds no runs: nothing to {what}")
    releases: list = []
    for r in all_runs:
        if r["release_sha"] not in releases:
            releases.append(r["release_sha"])
    choice = None
    if release_sha is None:
        release_sha = all_runs[-1]["release_sha"]
        if len(releases) > 1:
            others = ", ".join(str(s)[:12] for s in releases if s != release_sha)
            choice = (f"{len(releases)} releases have runs in this store; this {what} covers {release_sha} "
                      f"(the release of the most recent run). Others: {others}. Pass a release SHA for another.")
    runs = [r for r in all_runs if r["release_sha"] == release_sha]
    if not runs:
        known = ", ".join(str(s) for s in releases)
        raise ResultsError(f"no runs on release {release_sha} in {store.path}; releases with runs: {known}")
    return release_sha, runs, choice


def build_report(store: ResultsStore, *, release_sha: str | None = None, n_resamples: int = 2000,
                 seed: int = 0) -> dict:
    """The report for one release: the latest run of each (baseline, split), scored per track, and Δgov.

    Runs are kept per (baseline, split) and reported in one table per split, never
    mixed; every baseline row names its split. Δgov is computed only on held-out
    splits (eval, then transfer); ``delta_gov`` is the first held-out split's, and
    ``tables[i]["delta_gov"]`` holds each held-out split's own.

    With ``release_sha`` None, the release of the most recent run is reported; when
    several releases have runs, ``release_choice`` says which one was picked and why.

    Raises:
        ResultsError: the store has no runs, or none on ``release_sha``.
    """
    release_sha, runs, release_choice = runs_on_release(store, release_sha, "report")

    latest: dict[tuple[str, str], dict] = {}
    for r in runs:  # oldest first: the last one seen per (baseline, split) wins
        latest[(r["baseline"] or "(unnamed)", r["split"] or "(unknown)")] = r
    smoke = any(bool(r["smoke_test"]) or r["release_kind"] == "smoke" for r in runs)
    notes: list[str] = []
    chosen = list(latest.values())
    versions = sorted({str(r["trb_version"]) for r in chosen})
    if len(versions) > 1:
        notes.append(f"the reported runs name different TRB versions ({', '.join(versions)}): "
                     "scores across a major version are not comparable (spec §7)")
    notes += [unfinished_text(r) for r in store.unfinished_runs() if r["release_sha"] == release_sha]
    superseded = len(runs) - len(chosen)
    if superseded:
        notes.append(f"{superseded} older run(s) on this release are superseded by a later run of the same "
                     "baseline on the same split")

    tables = []
    baselines = []
    for split in sorted({k[1] for k in latest}, key=_split_key):
        names = sorted((b for b, s in latest if s == split), key=_baseline_key)
        rows = []
        for name in names:
            r = latest[(name, split)]
            spec = r.get("adapter_spec") if isinstance(r.get("adapter_spec"), dict) else {}
            rows.append({
                "name": name, "split": split, "adapter_tier": r["adapter_tier"], "run_id": r["run_id"],
                "n_parameters": spec.get("n_parameters"),
                "split_check": _timings(r).get("split_check"),
                "created_at": r["created_at"], "trb_version": r["trb_version"], "seed": r["seed"],
                "tracks": run_profile(store, r, n_resamples=n_resamples, seed=seed),
                "emit_r": _emit_r(r),
                "capabilities": _timings(r).get("capabilities"),
                "trained_by": r.get("trained_by"),
            })
        held_out = split in HELD_OUT_SPLITS
        table = {"split": split, "held_out": held_out, "baselines": rows, "delta_gov": None, "delta_gov_note": None,
                 "pass_bars": None}
        if split == "train":
            table["banner"] = ("TRAIN SPLIT — the split the models were fitted on: these rows measure fit, not "
                               "generalisation, and are never compared with held-out rows")
        if not held_out:
            table["delta_gov_note"] = (f"Δgov is computed on held-out splits only ({', '.join(HELD_OUT_SPLITS)}); "
                                       f"{split} is not one")
        elif (FULL, split) in latest and (ABLATION, split) in latest:
            table["delta_gov"], table["delta_gov_note"] = _delta_gov(
                store, latest[(FULL, split)], latest[(ABLATION, split)], n_resamples=n_resamples, seed=seed)
        else:
            missing = " and ".join(b for b in (FULL, ABLATION) if (b, split) not in latest)
            table["delta_gov_note"] = f"no {missing} run on split {split}: Δgov needs both {FULL} and {ABLATION}"
        if held_out:
            table["pass_bars"] = _pass_bars(store, latest, split, rows, table["delta_gov"], n_resamples=n_resamples,
                                            seed=seed)
        tables.append(table)
        baselines += rows

    delta, delta_note = None, None
    held = [t for t in tables if t["held_out"]]
    with_delta = [t for t in held if t["delta_gov"] is not None]
    if with_delta:
        delta = with_delta[0]["delta_gov"]
    elif held:
        delta_note = held[0]["delta_gov_note"]
    else:
        delta_note = (f"no run on a held-out split ({', '.join(HELD_OUT_SPLITS)}): Δgov is computed on held-out "
                      f"data only (spec §5); runs here are on {', '.join(t['split'] for t in tables)}")
    latest_run = max(chosen, key=lambda r: (r["created_at"] or ""))
    profile_vectors = _profile_vectors(store, latest, baselines, n_resamples=n_resamples, seed=seed)
    return {
        "trb_version": versions[0] if len(versions) == 1 else ", ".join(versions),
        "release_sha": release_sha,
        "release_version": latest_run["release_version"],
        "release_kind": latest_run["release_kind"],
        "smoke_test": smoke,
        "banner": SMOKE_BANNER if smoke else None,
        "release_choice": release_choice,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "profile_note": _PROFILE_NOTE,
        "bootstrap": {"unit": "session", "method": CI_METHOD, "confidence": CONFIDENCE,
                      "n_resamples": n_resamples, "seed": seed},
        "splits": [t["split"] for t in tables],
        "tables": tables,
        "baselines": baselines,
        "delta_gov": delta,
        "delta_gov_note": delta_note,
        "notes": notes,
        "profile_vectors": profile_vectors,
        "track2": _track2_summary(tables, baselines),
        "track6": {"rules": dict(TRANSFER_RULES),
                   "anti_goodhart_flagged": [f"{p['name']}: {f['anti_goodhart']['reason']}" for p in profile_vectors
                                             for f in p["vector"]["trans"]["figures"].values()
                                             if f.get("status") == "ok" and f["anti_goodhart"]["flagged"]],
                   "collapsed": [f"{p['name']}: {f['title']} on {', '.join(f['collapse']['contexts'])}"
                                 for p in profile_vectors for f in p["vector"]["trans"]["figures"].values()
                                 if f.get("status") == "ok" and f["collapse"].get("collapsed")]},
    }


# -- rendering -----------------------------------------------------------------------------------


def _clean(obj):
    """NaN -> None, recursively (JSON has no NaN)."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def render_json(report: dict) -> str:
    """The report as indented JSON (``null`` where no number exists)."""
    return json.dumps(_clean(report), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _f(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _ci(entry: dict, signed: bool = False) -> str:
    if entry.get("ci_low") is None or entry.get("ci_high") is None:
        return "[CI n/a]"
    return f"[{_f(entry['ci_low'], signed)}, {_f(entry['ci_high'], signed)}]"


def _cell(entry: dict | None) -> str:
    if entry is None:
        return "—"
    if entry.get("score") is None:
        return f"n/a ({entry.get('note', 'no score')})"
    text = f"{_f(entry['score'])} {_ci(entry)} · {entry['n_items']:,} items / {entry['n_sessions']:,} sessions"
    if entry.get("label"):  # proxy-tier grounding: named as such wherever it is shown
        text = f"{entry['label']}: {text}"
    slices = entry.get("slices") or {}
    for name, label in (("adversarial", "adversarial r′"), ("ood", "OOD r′")):
        if name in slices:
            text += f" · {label}: {_f(slices[name]['score'])} ({slices[name]['n_items']:,} items)"
    for flag in entry.get("flags") or ():
        text += f" · ⚠ FLAG: {flag}"
    if entry.get("cg1_reading"):
        text += f" · {entry['cg1_reading']}"
    return text


def _share(entry: dict | None) -> str:
    if not entry or entry.get("synthetic_share") is None:
        return "n/a"
    return f"{100 * entry['synthetic_share']:.1f}%"


def _track_keys(report: dict, baselines: list[dict] | None = None) -> list[str]:
    """Report keys to show, in registry order: headline metrics always, others where any row has them."""
    rows = report["baselines"] if baselines is None else baselines
    present = {k for b in rows for k in b["tracks"]}
    # a headline no row ran at all is left out of the tables (json keeps it: "not run"); one that some row could
    # not run ("not applicable (needs X)") or scored is shown for every row
    ran = {k for b in rows for k, e in b["tracks"].items() if (e or {}).get("note") != "not run"}
    return [m.key for m in _metrics() if m.key in present and (not m.headline or m.key in ran)]


def _has_share(key: str) -> bool:
    """Whether a metric's column is followed by the synthetic share: metrics over counterfactuals that are not
    figures of the same items as the track's headline (whose share is already shown)."""
    m = _metric(key)
    track = registered_tracks().get(m.track)
    if track is None or not any(c.name == "origin" for c in track.columns):
        return False
    headline = next((h for h in track.metrics if h.headline), None)
    return m.headline or headline is None or m.metric != headline.metric


def _is_main(key: str) -> bool:
    """A metric of the main table and the plot: a headline, or a figure of other items than its track's headline
    (Track 1's LLR variant). Reference points and threshold-free figures of the headline's items go to the
    second table."""
    m = _metric(key)
    if m.headline:
        return True
    if m.main is not None:
        return m.main
    headline = next((h for h in registered_tracks()[m.track].metrics if h.headline), None)
    return headline is None or m.metric != headline.metric


def _more_lines(table: dict, keys: list[str]) -> list[list[str]]:
    return [[base["name"], base["split"], *(_cell(base["tracks"].get(k)) for k in keys)] for base in table["baselines"]
            if any(k in base["tracks"] for k in keys)]


def _metric(key: str) -> Metric:
    return next(m for m in _metrics() if m.key == key)


def _header_facts(report: dict) -> str:
    return (f"TRB version {report['trb_version']} · release SHA `{report['release_sha']}` · release version "
            f"{report['release_version']} ({report['release_kind']}) · splits: {', '.join(report['splits'])}")


def _delta_line(d: dict | None, note: str | None, confidence: float, split: str | None = None) -> str:
    where = f" on {split}" if split else ""
    if d is None:
        return f"Δgov{where} = G({FULL}) − G({ABLATION}): not available — {note}"
    verdict = {True: "the CI excludes 0", False: "the CI includes 0", None: "no CI (one session)"}[d["ci_excludes_zero"]]
    return (f"Δgov{where} = G({FULL}) − G({ABLATION}) = {_f(d['value'], True)} {_ci(d, True)} "
            f"({int(100 * confidence)}% CI, session bootstrap; {d['n_items']:,} paired items, "
            f"{d['n_sessions']:,} sessions); {verdict}")


def _pass_bar_lines(table: dict) -> list[str]:
    """Each pass-bar comparison as one line: the comparison, its number and CI, what the CI says, the direction."""
    out = []
    for c in table.get("pass_bars") or ():
        if c["value"] is None:
            out.append(f"{c['comparison']}: not available — {c.get('note', '')}. Direction: {c['direction']}.")
            continue
        ci = _ci(c, True)
        reading = f"; {c['reading']}" if c.get("reading") else ""
        if c.get("bootstrap"):  # Track 2: trials of two runs, their sessions drawn together (paired) or apart
            counts = f"{c['n_items']:,} trials, {c['n_sessions']:,} sessions, {c['bootstrap']} session bootstrap"
        else:
            counts = f"{c['n_items']:,} paired items, {c['n_sessions']:,} sessions"
        statement = f" {c['statement'][0].upper()}{c['statement'][1:]}." if c.get("statement") else ""
        out.append(f"{c['comparison']} = {_f(c['value'], True)} {ci} ({counts}){reading}.{statement} "
                   f"Direction: {c['direction']}.")
    return out


def _delta_text(report: dict) -> str:
    d = report["delta_gov"]
    split = None
    if d is not None and d.get("splits"):
        split = ", ".join(d["splits"])
    return _delta_line(d, report["delta_gov_note"], report["bootstrap"]["confidence"], split)


def _table_head(report: dict, keys: list[str]) -> tuple[list[str], bool]:
    """The profile table's column titles, and whether it has the missing-slots column."""
    head = ["baseline", "split", "adapter tier", "parameters"]
    for k in keys:
        head.append(_title(k) + " [95% CI]")
        if _has_share(k):
            head.append("synthetic share" + ("" if _metric(k).headline else f" ({_title(k).split('— ')[-1]})"))
    slots = any(base.get("emit_r") for base in report["baselines"])
    if slots:
        head.append("r slots missing / emit_r calls")
    head.append("run")
    return head, slots


def _table_rows(report: dict, table: dict, keys: list[str], slots: bool) -> list[list[str]]:
    out = []
    for base in table["baselines"]:
        n_params = base.get("n_parameters")
        row = [base["name"], base["split"], str(base["adapter_tier"]),
               "n/a" if n_params is None else f"{n_params / 1e6:.2f}M"]
        for k in keys:
            e = base["tracks"].get(k)
            row.append(_cell(e))
            if _has_share(k):
                row.append(_share(e))
        if slots:
            row.append(_missing_text(base.get("emit_r")))
        row.append(base["run_id"])
        out.append(row)
    return out


def _split_title(table: dict) -> str:
    if table["held_out"]:
        return f"Split {table['split']} (held out)"
    return f"Split {table['split']} (not held out: these rows measure fit, not generalisation; no Δgov)"


def _definitions(keys: list[str]) -> str:
    return "Track definitions: " + "; ".join(f"{_title(k)}: {_metric(k).definition}" for k in keys) + "."


def render_markdown(report: dict, plot_path: Path | None = None, profiles_path: Path | None = None) -> str:
    """The report as Markdown: banner (if smoke), facts, one baseline × track table per split, Δgov, Track 2's
    details, the profile vector, Track 6, the plot links.

    ``plot_path`` (the per-track plot, :func:`plot_tracks`) and ``profiles_path`` (the profile plot,
    :func:`plot_profiles`, linked under the profile-vector table) are written into the image links as given: pass
    them relative to where the Markdown file will live.
    """
    title = f"# TRB report — release {str(report['release_sha'])[:12]} ({report['release_version']})"
    lines = [title, ""]
    if report["smoke_test"]:
        lines += [f"> **{SMOKE_BANNER}.** This release is a smoke release (simulated or illustrative data); "
                  "the numbers exercise the pipeline and measure nothing about a model (spec §6).", ""]
    lines += [_header_facts(report) + "  ", f"Generated {report['generated_at']}.", ""]
    if report.get("release_choice"):
        lines += [f"**Release chosen:** {report['release_choice']}", ""]
    b = report["bootstrap"]
    lines += [f"{report['profile_note']} Intervals: {int(100 * b['confidence'])}% {b['method']} bootstrap over "
              f"sessions ({b['n_resamples']:,} resamples, seed {b['seed']}). Each split is its own table; "
              "rows of two splits are never compared.", ""]
    all_keys = _track_keys(report)
    keys = [k for k in all_keys if _is_main(k)]
    more = [k for k in all_keys if not _is_main(k)]
    head, slots = _table_head(report, keys)
    for table in report["tables"]:
        lines += [f"## {_split_title(table)}", ""]
        if table.get("banner"):
            lines += [f"> **{table['banner']}.**", ""]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row in _table_rows(report, table, keys, slots):
            row[-1] = f"`{row[-1]}`"
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
        more_rows = _more_lines(table, more)
        if more_rows:
            more_head = ["baseline", "split", *(_title(k) + " [95% CI]" for k in more)]
            lines += ["", "Reference points and threshold-free figures (the same items as the headline figures):", "",
                      "| " + " | ".join(more_head) + " |", "|" + "---|" * len(more_head)]
            lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in more_rows]
        lines += ["", _delta_line(table["delta_gov"], table["delta_gov_note"], b["confidence"], table["split"]), ""]
        if table.get("pass_bars"):
            lines += [f"Pass-bar comparisons on {table['split']} (directions with their numbers, not verdicts; "
                      "spec §3: pass bars are provisional):", ""]
            lines += [f"- {line}" for line in _pass_bar_lines(table)] + [""]
    lines += [f"**{_delta_text(report)}**", ""]
    lines += _ground_markdown(report)
    lines += _track6_markdown(report, profiles_path)
    for note in report.get("notes") or []:
        lines.append(f"- Note: {note}")
    if report.get("notes"):
        lines.append("")
    lines += [_definitions(all_keys), ""]
    if plot_path is not None:
        lines += [f"![TRB per-track profile with 95% CIs]({Path(plot_path).as_posix()})", ""]
    return "\n".join(lines)


#: The HTML page's style. The plot scales down to its column, never past it; a table cell holds a score and its
#: CI on one line and its counts on a second, neither wrapping; a table wider than the page (more tracks than
#: today's) scrolls in its own box, so the page itself never scrolls sideways.
_CSS = (
    "body{font-family:system-ui,sans-serif;line-height:1.4;max-width:80rem;margin:1rem auto;padding:0 1rem}"
    "p,ul,ol{max-width:62rem}"
    ".wide{overflow-x:auto;margin:.5rem 0}"
    "table{border-collapse:collapse;font-size:.8125rem}"
    "th,td{border:1px solid #bbb;padding:.25rem .45rem;text-align:left;vertical-align:top}"
    "thead th{background:#f2f2f2}tbody th{font-weight:normal;white-space:nowrap}"
    "tbody th.group{font-weight:bold;background:#fafafa}sup{line-height:0}"
    "th>span,td>span{display:block;white-space:nowrap}"
    ".sub{color:#555;font-size:.75rem}"
    "code.run{display:inline-block;width:16ch;word-break:break-all;font-size:.75rem}"
    "a.flag{color:#b00020;text-decoration:none;font-weight:bold}span.red{color:#b00020;font-weight:bold}"
    "span.tier{color:#7a4f00;font-style:italic}.grey{color:#777}"
    "ol.flags{font-size:.8125rem}"
    "img{max-width:100%;height:auto}"
    ".banner{background:#b00020;color:#fff;font-size:1.4rem;font-weight:bold;padding:1rem;margin:1rem 0}"
    ".delta{font-size:1.1rem;font-weight:bold}code{font-size:.9em}"
)

#: What the HTML tables abbreviate or move out of a cell, said once above them.
_HTML_LEGEND = ("How to read the tables: each split's tables have one row per figure and one column per baseline. A "
                "score cell gives the score and its 95% CI (session bootstrap), then the items and sessions it was "
                "computed on; ⚠ with a number points to a flag or note under the split's tables; n/a: no score (the "
                "reason beside it or under the tables); —: not measured for this baseline. Under each baseline: its "
                "adapter tier (native: an explicit r_t pathway; proxy: r elicited from a causal LM's text) and its "
                "parameters in millions (M). Synthetic share: the share of synthetic counterfactuals among the items "
                "of the figure above. r slots missing: the schema slots a proxy's emit_r left empty, per slot, of its "
                f"emit_r calls. A Track 2 figure of a proxy adapter reads {PROXY_GROUNDING}: spec §3 defines Track 2 "
                "on native models only.")


class _HtmlNotes:
    """The flags and long notes of one split's tables: numbered once each, listed under the tables, and marked
    in a cell by a link (a cell keeps its two lines)."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.texts: list[str] = []

    def mark(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        n = self.texts.index(text) + 1
        return f' <a class="flag" href="#{self.prefix}-{n}">⚠<sup>{n}</sup></a>'

    def html(self) -> str:
        if not self.texts:
            return ""
        return ('<ol class="flags">' + "".join(f'<li id="{self.prefix}-{n}">{html.escape(t)}</li>'
                                               for n, t in enumerate(self.texts, 1)) + "</ol>")


def _lines(*lines: str) -> str:
    """A cell's lines (already HTML), the later ones in the smaller grey type."""
    return "".join(("<span>" if i == 0 else '<span class="sub">') + line + "</span>"
                   for i, line in enumerate(lines) if line)


def _html_cell(entry: dict | None, notes: _HtmlNotes) -> str:
    """A metric's cell: the score and its CI, then its items and sessions; flags and long notes as marks."""
    e = html.escape
    if entry is None:
        return "—"
    if entry.get("score") is None:
        note = entry.get("note", "no score")
        if len(note) <= 24:
            return _lines("n/a", e(note))
        return _lines("n/a" + notes.mark(f"n/a: {note}"))
    marks = "".join(notes.mark(f"⚠ FLAG: {flag}") for flag in entry.get("flags") or ())
    if entry.get("cg1_reading"):
        marks += notes.mark(entry["cg1_reading"])
    value = e(f"{_f(entry['score'])} {_ci(entry)}")
    if entry.get("red"):  # a red flag (Track 4 ratio below 1, Track 5 holonomy): the figure itself is red
        value = f'<span class="red">{value}</span>'
    if entry.get("label"):  # proxy-tier grounding, named as such (its trials and sessions: in its own section)
        return _lines(value + marks, f'<span class="tier">{e(entry["label"])}</span>')
    return _lines(value + marks, e(f"{entry['n_items']:,} items / {entry['n_sessions']:,} sessions"))


def _title_lines(key: str) -> str:
    """A metric's title on two lines: its track, then its name; a name with a bracketed gloss ("grounding
    (detection AUC vs no injection)") goes beside its track, the gloss below."""
    track, _, name = _title(key).partition(" — ")
    head, paren, gloss = name.partition(" (")
    if paren and gloss.endswith(")"):
        return _lines(html.escape(f"{track} — {head}"), html.escape(gloss[:-1]))
    return _lines(html.escape(track), html.escape(name)) if name else html.escape(track)


def _html_profile_table(report: dict, table: dict, keys: list[str], notes: _HtmlNotes) -> str:
    """One split's figures, turned: one row per main figure (its synthetic share, the r slots a proxy left empty
    and the run id in rows of their own), one column per baseline (its adapter tier and parameters under its name).

    Turned because the tracks outgrow a page's width (with Track 2, a column per figure needs about 1,800 px)
    while the spec's baselines are five; the Markdown keeps one row per baseline.
    """
    e = html.escape
    bases = table["baselines"]
    slots = any(base.get("emit_r") for base in report["baselines"])
    head = [_lines("figure", e(f"split {table['split']}"))]
    for base in bases:
        n_params = base.get("n_parameters")
        params = "n/a" if n_params is None else f"{n_params / 1e6:.2f}M"
        head.append(_lines(e(base["name"]), e(f"{base['adapter_tier']} · {params}")))
    rows = []
    for k in keys:
        rows.append([_title_lines(k), *(_html_cell(b["tracks"].get(k), notes) for b in bases)])
        if _has_share(k):
            rows.append([_lines("synthetic share", "of the figure above"),
                         *(e(_share(b["tracks"].get(k))) for b in bases)])
    if slots:
        cells = []
        for base in bases:
            emit = base.get("emit_r")
            if emit:
                missing = [f"{slot} {n}" for slot, n in (emit.get("missing") or {}).items() if n]
                cells.append(_lines(e(", ".join(missing) or "none"), e(f"of {emit['calls']:,} emit_r")))
            else:
                cells.append("—")
        rows.append([_lines("r slots missing", "of emit_r calls"), *cells])
    rows.append(["run", *(f'<code class="run">{e(b["run_id"])}</code>' for b in bases)])
    body = "".join(f'<tr><th scope="row">{r[0]}</th>' + "".join(f"<td>{c}</td>" for c in r[1:]) + "</tr>"
                   for r in rows)
    return ('<div class="wide"><table><thead><tr>' + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
            + body + "</tbody></table></div>")


_SLICES = (("adversarial", "adversarial r′"), ("ood", "OOD r′"))


def _slice_cell(entry: dict | None) -> str:
    """A slice's cell: its score (no interval: a slice is a description), then its items."""
    return "—" if entry is None else _lines(_f(entry["score"]), f"{entry['n_items']:,} items")


def _html_more_table(table: dict, all_keys: list[str], more: list[str], notes: _HtmlNotes) -> str:
    """One split's second table, turned: one row per reference point, threshold-free figure or slice of a
    headline figure (grouped by track), one column per baseline: a column per figure would not fit a page."""
    e = html.escape
    bases = table["baselines"]
    groups: dict[str, list[str]] = {}
    for k in all_keys:  # registry order: each track's figures together
        track, _, title = _title(k).partition(" — ")
        rows = groups.setdefault(track, [])
        if k in more and any(k in b["tracks"] for b in bases):
            rows.append(f'<tr><th scope="row">{e(title or track)}</th>'
                        + "".join(f"<td>{_html_cell(b['tracks'].get(k), notes)}</td>" for b in bases) + "</tr>")
        if k in more:
            continue
        for name, label in _SLICES:
            slices = [((b["tracks"].get(k) or {}).get("slices") or {}).get(name) for b in bases]
            if any(slices):
                rows.append(f'<tr><th scope="row">{e(f"{title or track}, {label} only")}</th>'
                            + "".join(f"<td>{_slice_cell(sl)}</td>" for sl in slices) + "</tr>")
    body = "".join(f'<tr><th class="group" colspan="{len(bases) + 1}">{e(track)}</th></tr>' + "".join(rows)
                   for track, rows in groups.items() if rows)
    if not body:
        return ""
    head = "<th>figure</th>" + "".join(f"<th>{_lines(e(b['name']), e(str(b['adapter_tier'])))}</th>" for b in bases)
    return (f"<p>Reference points, threshold-free figures (the same items as the headline figures) and slices of "
            f"the headline figures on {e(table['split'])}: one row per figure, one column per baseline.</p>"
            f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>')


def _png_size(png: bytes) -> tuple[int, int]:
    """A PNG's width and height in pixels (from its IHDR chunk)."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def render_html(report: dict) -> str:
    """The report as one self-contained HTML page (each split's tables, a row per figure and a column per
    baseline; Track 2's sections; the profile vector with its plot; Track 6; the per-track plot; both plots
    embedded as base64 PNGs).

    The page fits a 1,280 px window: the plots scale down to their column, each table cell holds its score and
    CI on one line and its counts on a second, and flags and long notes are numbered under each split's tables.
    """
    e = html.escape
    all_keys = _track_keys(report)
    keys = [k for k in all_keys if _is_main(k)]
    more = [k for k in all_keys if not _is_main(k)]
    png_bytes = _plot_png(report)
    width, height = _png_size(png_bytes)
    png = base64.b64encode(png_bytes).decode("ascii")
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>TRB report — release {e(str(report['release_sha'])[:12])}</title>",
             f"<style>{_CSS}</style></head><body>",
             f"<h1>TRB report — release {e(str(report['release_sha'])[:12])} ({e(str(report['release_version']))})</h1>"]
    if report["smoke_test"]:
        parts.append(f'<div class="banner" role="alert">{e(SMOKE_BANNER)}: a smoke release (simulated or '
                     "illustrative data); these numbers measure nothing about a model (spec §6).</div>")
    parts.append(f"<p>TRB version {e(str(report['trb_version']))} · release SHA <code>{e(str(report['release_sha']))}"
                 f"</code> · release version {e(str(report['release_version']))} ({e(str(report['release_kind']))})"
                 f" · splits: {e(', '.join(report['splits']))}<br>Generated {e(report['generated_at'])}.</p>")
    if report.get("release_choice"):
        parts.append(f"<p><strong>Release chosen:</strong> {e(report['release_choice'])}</p>")
    b = report["bootstrap"]
    parts.append(f"<p>{e(report['profile_note'])} Intervals: {int(100 * b['confidence'])}% {e(b['method'])} "
                 f"bootstrap over sessions ({b['n_resamples']:,} resamples, seed {b['seed']}). Each split is its "
                 "own table; rows of two splits are never compared.</p>")
    parts.append(f"<p>{e(_HTML_LEGEND)}</p>")
    for i, table in enumerate(report["tables"]):
        notes = _HtmlNotes(f"split{i}-note")
        parts.append(f"<h2>{e(_split_title(table))}</h2>")
        if table.get("banner"):
            parts.append(f'<div class="banner" role="alert">{e(table["banner"])}</div>')
        parts.append(_html_profile_table(report, table, keys, notes))
        parts.append(_html_more_table(table, all_keys, more, notes))
        parts.append(notes.html())
        parts.append(f"<p>{e(_delta_line(table['delta_gov'], table['delta_gov_note'], b['confidence'], table['split']))}</p>")
        if table.get("pass_bars"):
            parts.append(f"<p>Pass-bar comparisons on {e(table['split'])} (directions with their numbers, not "
                         "verdicts; spec §3: pass bars are provisional):</p><ul>"
                         + "".join(f"<li>{e(line)}</li>" for line in _pass_bar_lines(table)) + "</ul>")
    parts.append(f'<p class="delta">{e(_delta_text(report))}</p>')
    parts.append(_ground_html(report))
    parts.append(_track6_html(report, _profiles_png(report)))
    if report.get("notes"):
        parts.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in report["notes"]) + "</ul>")
    parts.append("<p>Track definitions:</p><ul>"
                 + "".join(f"<li>{e(_title(k))}: {e(_metric(k).definition)}</li>" for k in all_keys) + "</ul>")
    parts.append(f'<div class="plot"><img id="tracks-plot" alt="TRB per-track profile with 95% CIs" width="{width}" '
                 f'height="{height}" src="data:image/png;base64,{png}"></div>')
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p) + "\n"


def _plot_title(report: dict) -> str:
    title = f"TRB v{report['trb_version']} · release {str(report['release_sha'])[:12]} ({report['release_version']})"
    return f"{SMOKE_BANNER}\n{title}" if report["smoke_test"] else title


#: The plot's grid: panels per row, and each panel's size in inches (at the 110 dpi of the PNG).
_PLOT_COLUMNS, _PANEL_WIDTH, _PANEL_HEIGHT = 3, 3.6, 3.2


def _figure(report: dict):
    """One panel per track (and one for Δgov): score and CI per baseline. Tracks share no axis.

    The panels sit in a grid at most three wide (four make two rows of two), so the figure keeps one width,
    about 1,200 px at its 110 dpi, however many tracks it shows: it fits a 1,280 px page unscaled.
    Uses matplotlib's object API with the Agg canvas: no pyplot, no global backend state.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # a panel per main figure that some baseline has a value for (a track no run scored has nothing to draw)
    keys = [k for k in _track_keys(report) if _is_main(k)
            and any((b["tracks"].get(k) or {}).get("score") is not None for b in report["baselines"])]
    panels = keys + (["delta"] if report["delta_gov"] is not None else [])
    nrows = math.ceil(len(panels) / _PLOT_COLUMNS)
    ncols = math.ceil(len(panels) / nrows)
    fig = Figure(figsize=(_PANEL_WIDTH * _PLOT_COLUMNS, 0.6 + _PANEL_HEIGHT * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in grid[len(panels):]:  # a last row not full: its empty cells go
        fig.delaxes(ax)
    axes = grid[:len(panels)]
    for ax, key in zip(axes, panels):
        hollow: list[bool] = []  # proxy-tier grounding: an open marker, apart from native-tier points
        if key == "delta":
            d = report["delta_gov"]
            names, vals, lo, hi = ["Δgov"], [d["value"]], [d["ci_low"]], [d["ci_high"]]
            ax.set_title("Δgov = G(full) − G(ablation)", fontsize=10)
            ax.axhline(0, color="grey", lw=0.8, ls="--")
        else:
            names, vals, lo, hi = [], [], [], []
            for base in report["baselines"]:
                entry = base["tracks"].get(key)
                if entry and entry.get("score") is not None:
                    names.append(f"{base['name']}\n({entry.get('label') or base['adapter_tier']}, {base['split']})")
                    hollow.append(bool(entry.get("label")))
                    vals.append(entry["score"])
                    lo.append(entry["ci_low"])
                    hi.append(entry["ci_high"])
            m = _metric(key)
            ax.set_title(textwrap.fill(m.title, 40), fontsize=10)  # a long title on two lines, inside its panel
            if m.chance is not None:
                ax.axhline(m.chance, color="grey", lw=0.8, ls="--", label="chance")
            if m.bounds is not None:
                ax.set_ylim(m.bounds[0] - 0.02, m.bounds[1] + 0.02)
        x = np.arange(len(names))
        v = np.asarray(vals, dtype=float)
        err = np.array([[val - (low if low is not None else val) for val, low in zip(vals, lo)],
                        [(h if h is not None else val) - val for val, h in zip(vals, hi)]], dtype=float)
        err = np.clip(err, 0, None)  # a percentile interval may sit just beside the point estimate
        if len(names):
            open_ = np.asarray(hollow + [False] * (len(names) - len(hollow)), dtype=bool)
            for sel, face in ((~open_, "#1f4e79"), (open_, "white")):
                if sel.any():
                    ax.errorbar(x[sel], v[sel], yerr=err[:, sel], fmt="o", capsize=5, color="#1f4e79",
                                markerfacecolor=face)
        else:
            ax.text(0.5, 0.5, "no scores", ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks(x, names, fontsize=8, rotation=30, ha="right")
        ax.grid(axis="y", alpha=0.3)
    if report["smoke_test"]:
        fig.suptitle(_plot_title(report), color="#b00020", fontweight="bold")
    else:
        fig.suptitle(_plot_title(report))
    return fig


def _plot_png(report: dict) -> bytes:
    buf = io.BytesIO()
    _figure(report).savefig(buf, format="png", dpi=110, metadata={"Title": _plot_title(report)})
    return buf.getvalue()


def plot_tracks(report: dict, path: Path) -> Path:
    """Write the per-track plot (score and CI per baseline, one panel per track) as PNG to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_plot_png(report))
    return path


# -- Track 6 and the profile vector --------------------------------------------------------------

#: The profile vector of spec §1, in order: entry name -> the report key of its figure (trans: Track 6's own).
PROFILE_VECTOR = (("G", "1"), ("ground", "ground"), ("attr", "3"), ("viab", "viab"), ("nav", "nav"),
                  ("trans", None))


def _ground_capabilities() -> list[str]:
    """The capabilities Track 2 needs, by their recorded names (spec §3: activation-level access)."""
    from trb.adapters.capabilities import capability_name

    return [capability_name(c) for c in registered_tracks()[GROUND_TRACK].needs]


def _metric_columns(store: ResultsStore, run: dict, m: Metric) -> dict[str, np.ndarray]:
    track = registered_tracks()[m.track]
    names = ["session_id", "context_id", "score"] + sorted({c.name for c in track.columns})
    table = store.items(run["run_id"], track=m.track, columns=["metric", *names])
    table = table.filter(pc.equal(table.column("metric"), m.metric))
    return _columns(table, names)


def _transfer_figures(store: ResultsStore, name: str, ev: dict, tr: dict, ref: dict[str, dict | None], *,
                      n_resamples: int, seed: int) -> dict:
    """Track 6 for one baseline: every headline figure of a release track, on eval and on each transfer context."""
    from trb.run import not_applicable_text

    figures: dict[str, dict] = {}
    summary = _timings(tr).get("summary") or {}
    proxy = tr.get("adapter_tier") == "proxy"
    for m in _metrics():
        if not m.headline:
            continue
        if proxy and m.track == GROUND_TRACK:  # proxy-tier grounding under its own name, here as everywhere
            m = replace(m, title=f"{PROXY_GROUNDING} ({m.title.partition(' (')[2]}")
        s = summary.get(m.track) or {}
        if s.get("status") == "not_applicable":
            figures[m.key] = {"title": m.title, "status": "not applicable", "note": not_applicable_text(s)}
            continue
        e_cols, t_cols = _metric_columns(store, ev, m), _metric_columns(store, tr, m)
        if not len(e_cols["session_id"]) or not len(t_cols["session_id"]):
            which = "the eval run" if not len(e_cols["session_id"]) else "the transfer run"
            if m.track in {str(t) for t in (tr.get("tracks") or [])} | {str(t) for t in (ev.get("tracks") or [])}:
                figures[m.key] = {"title": m.title, "status": "not run", "note": f"not run: no items in {which}"}
            continue
        try:
            est = transfer_estimate(registered_tracks()[m.track], m, e_cols, t_cols, n_resamples=n_resamples,
                                    confidence=CONFIDENCE, seed=seed)
        except ValueError as err:
            figures[m.key] = {"title": m.title, "status": "undefined", "note": f"undefined: {err}"}
            continue
        est["status"] = "ok"
        est["collapse"] = collapse_check(est, ref.get(m.key), baseline=name)
        est["anti_goodhart"] = anti_goodhart(est, m)
        flags = []
        if est["anti_goodhart"]["flagged"]:
            flags.append(f"{m.title}: {est['anti_goodhart']['reason']}")
        if est["collapse"].get("collapsed"):
            flags.append(f"{m.title}: COLLAPSE to {REFERENCE_BASELINE} off-distribution on "
                         f"{', '.join(est['collapse']['contexts'])} (spec §3 Track 6 pass bar)")
        est["flags"] = flags
        figures[m.key] = est
    return figures


def _trans_entry(store: ResultsStore, name: str, ev: dict | None, tr: dict | None, ref: dict[str, dict | None], *,
                 n_resamples: int, seed: int) -> dict:
    if tr is None:
        return {"status": "not run", "note": "not run: no transfer-split run", "figures": {}, "flags": []}
    if ev is None:
        return {"status": "not run", "note": "not run: no eval-split run to measure the drop from", "figures": {},
                "flags": []}
    figures = _transfer_figures(store, name, ev, tr, ref, n_resamples=n_resamples, seed=seed)
    ok = {k: f for k, f in figures.items() if f.get("status") == "ok"}
    out = {"status": "ok" if ok else "not run", "figures": figures,
           "flags": [fl for f in figures.values() for fl in f.get("flags") or ()],
           "anti_goodhart": any(f["anti_goodhart"]["flagged"] for f in ok.values()),
           "collapsed": any(bool(f["collapse"].get("collapsed")) for f in ok.values()),
           "n_contexts": max((f["n_contexts"] for f in ok.values()), default=0),
           "eval_run_id": ev["run_id"], "transfer_run_id": tr["run_id"],
           "trained_by": tr.get("trained_by")}
    if not ok:
        out["note"] = "not run: no figure was scored on both the eval and the transfer split"
    return out


def _vector_entry(row: dict | None, key: str) -> dict:
    """A profile-vector entry from a baseline's eval row: its figure, or what it is not, and why."""
    if row is None:
        return {"status": "not run", "note": "not run: no eval-split run"}
    needs = _ground_capabilities() if key == "ground" else []
    recorded = row.get("capabilities")
    if needs and recorded is not None and not set(needs) <= set(recorded):
        # whether or not Track 2 was asked for, this adapter could not have run it
        return {"status": "not applicable", "note": f"not applicable: needs activation access (Track 2, "
                                                    f"capability {', '.join(needs)})"}
    e = row["tracks"].get(key)
    if e is None:
        return {"status": "not run", "note": "not run: not in the eval run"}
    if e.get("not_applicable"):
        return {"status": "not applicable", "note": e.get("note")}
    if e.get("score") is None:
        return {"status": "not run", "note": e.get("note") or "no score"}
    return {"status": "ok", **{k: e.get(k) for k in ("score", "ci_low", "ci_high", "n_items", "n_sessions",
                                                    "slices", "flags", "red", "tier", "label", "tier_note")
                               if e.get(k) is not None}}


def _profile_vectors(store: ResultsStore, latest: dict[tuple[str, str], dict], baselines: list[dict], *,
                     n_resamples: int, seed: int) -> list[dict]:
    names = sorted({b for b, _ in latest}, key=_baseline_key)
    ref: dict[str, dict | None] = {}
    ref_ev, ref_tr = latest.get((REFERENCE_BASELINE, "eval")), latest.get((REFERENCE_BASELINE, "transfer"))
    if ref_ev is not None and ref_tr is not None:
        figs = _transfer_figures(store, REFERENCE_BASELINE, ref_ev, ref_tr, {}, n_resamples=0, seed=seed)
        ref = {k: f for k, f in figs.items() if f.get("status") == "ok"}
    out = []
    for name in names:
        row = next((b for b in baselines if b["name"] == name and b["split"] == "eval"), None)
        vector = {}
        for entry, key in PROFILE_VECTOR:
            if key is None:
                vector[entry] = _trans_entry(store, name, latest.get((name, "eval")), latest.get((name, "transfer")),
                                             ref, n_resamples=n_resamples, seed=seed)
            else:
                vector[entry] = _vector_entry(row, key)
        any_row = row or next(b for b in baselines if b["name"] == name)
        out.append({"name": name, "adapter_tier": any_row["adapter_tier"], "vector": vector})
    return out


def _vector_text(entry: dict) -> str:
    """A profile-vector entry in one line (Markdown, and the HTML cell's text)."""
    if entry.get("status") != "ok":
        return entry.get("note") or entry.get("status", "—")
    if "figures" not in entry:
        text = f"{_f(entry['score'])} {_ci(entry)}"
        if entry.get("label"):
            text = f"{entry['label']}: {text}"
        for flag in entry.get("flags") or ():  # the flag's name; the split tables and Track 2's section say more
            text += f" · ⚠ {flag.split(':')[0]}"
        for name, label in _SLICES:  # R*'s adversarial and OOD slices stand beside Track 1 (spec §5)
            sl = (entry.get("slices") or {}).get(name)
            if sl:
                text += f" · {label}: {_f(sl['score'])} ({sl['n_items']:,} items)"
        return text
    parts = []
    for f in entry["figures"].values():
        if f.get("status") != "ok":
            parts.append(f"{f['title']}: {f.get('note')}")
            continue
        parts.append(f"{f['title']}: min {_f(f['min']['score'])} {_ci(f['min'])} on {f['min']['context_id']}, "
                     f"drop {_f(f['drop']['value'], True)} {_ci(f['drop'], True)} ({f['n_contexts']} contexts)")
    text = "; ".join(parts)
    if entry.get("anti_goodhart"):
        text += " · ⚠ ANTI-GOODHART FLAG"
    if entry.get("collapsed"):
        text += " · ⚠ COLLAPSE"
    return text


def _track6_rules_lines() -> list[str]:
    return [f"What is resampled: {TRANSFER_RULES['resampled']}.",
            f"Collapse rule: {TRANSFER_RULES['collapse']}.",
            f"Anti-Goodhart rule: {TRANSFER_RULES['anti_goodhart']}.",
            "Transfer provenance: a transfer-split run records who trained the model (--trained-by, or the adapter "
            "spec's trained_by) and refuses a release whose transfer contexts that organisation collected; a "
            "transfer run with no trainer recorded is refused (spec §5)."]


def _track6_rows(report: dict) -> list[tuple[dict, dict, dict]]:
    """(profile, figure key, figure) for every Track 6 figure with numbers."""
    return [(p, k, f) for p in report.get("profile_vectors") or () for k, f in p["vector"]["trans"]["figures"].items()
            if f.get("status") == "ok"]


def _context_text(f: dict) -> str:
    return "; ".join(f"{c['context_id']}: {_f(c['score'])} {_ci(c)} ({c['n_sessions']} sessions)"
                     for c in f["contexts"])


def _collapse_text(f: dict) -> str:
    c = f["collapse"]
    if not c["checked"]:
        return f"not checked ({c['note']})"
    if c["collapsed"]:
        return f"COLLAPSED on {', '.join(c['contexts'])}"
    return "no" + (f" ({c['note']})" if c.get("note") else "")


def _track6_markdown(report: dict, profiles_path: Path | None = None) -> list[str]:
    lines = ["## Profile vector (G, ground, attr, viab, nav, trans)", "",
             "Each entry on its own (never combined); G, attr, viab and nav from the eval split; trans is Track 6 "
             "(transfer split against eval).", "",
             "One row per entry, one column per baseline (its adapter tier in brackets).", ""]
    profiles = report.get("profile_vectors") or ()
    lines += ["| entry | " + " | ".join(f"{p['name']} ({p['adapter_tier']})" for p in profiles) + " |",
              "|" + "---|" * (1 + len(profiles))]
    for n, _ in PROFILE_VECTOR:
        cells = [n] + [_vector_text(p["vector"][n]) for p in profiles]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    if profiles_path is not None:
        lines += ["", f"![{_PROFILES_ALT}]({Path(profiles_path).as_posix()})"]
    lines += ["", "## Track 6 — transfer and the anti-Goodhart line", ""]
    lines += [f"- {line}" for line in _track6_rules_lines()] + [""]
    rows = _track6_rows(report)
    if rows:
        lines += ["| figure | baseline | eval [95% CI] | per transfer context [95% CI] | min over contexts [95% CI] | "
                  "drop eval − min [95% CI] | collapse | anti-Goodhart |", "|" + "---|" * 8]
        for p, _, f in rows:
            ag = f["anti_goodhart"]
            flag = ("⚠ **FLAGGED, not celebrated**: " if ag["flagged"] else "") + ag["reason"]
            cells = [f["title"], p["name"], f"{_f(f['eval']['score'])} {_ci(f['eval'])} ({f['eval']['n_sessions']} "
                     "sessions)", _context_text(f), f"{_f(f['min']['score'])} {_ci(f['min'])} on "
                     f"{f['min']['context_id']}", f"{_f(f['drop']['value'], True)} {_ci(f['drop'], True)}",
                     _collapse_text(f), flag]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    else:
        lines.append("No baseline has both an eval-split and a transfer-split run on this release: no Track 6 "
                     "figure (run `trb run --split transfer --trained-by ORG`).")
    lines.append("")
    return lines


def _track6_html(report: dict, profiles_png: bytes | None = None) -> str:
    e = html.escape
    parts = ["<h2>Profile vector (G, ground, attr, viab, nav, trans)</h2>",
             "<p>Each entry on its own (never combined); G, attr, viab and nav from the eval split; trans is Track 6 "
             "(transfer split against eval).</p>"]
    head = "".join(f"<th>{e(h)}</th>" for h in ["baseline", "tier", *(n for n, _ in PROFILE_VECTOR)])
    body = []
    for p in report.get("profile_vectors") or ():
        cells = [e(p["name"]), e(str(p["adapter_tier"]))]
        for n, _ in PROFILE_VECTOR:
            entry = p["vector"][n]
            text = e(_vector_text(entry))
            if n == "trans" and (entry.get("anti_goodhart") or entry.get("collapsed")):
                text = f'<span class="red">{text}</span>'
            cells.append(text)
        body.append("<tr>" + "".join(f'<td style="white-space:normal">{c}</td>' for c in cells) + "</tr>")
    parts.append(f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>')
    if profiles_png is not None:
        width, height = _png_size(profiles_png)
        parts.append(f'<div class="plot"><img id="profiles-plot" alt="{_PROFILES_ALT}" width="{width}" '
                     f'height="{height}" src="data:image/png;base64,{base64.b64encode(profiles_png).decode("ascii")}">'
                     "</div>")
    parts.append("<h2>Track 6 — transfer and the anti-Goodhart line</h2><ul>"
                 + "".join(f"<li>{e(line)}</li>" for line in _track6_rules_lines()) + "</ul>")
    rows = _track6_rows(report)
    if not rows:
        parts.append("<p>No baseline has both an eval-split and a transfer-split run on this release: no Track 6 "
                     "figure.</p>")
        return "\n".join(parts)
    head = "".join(f"<th>{e(h)}</th>" for h in ["baseline", "figure", "eval [95% CI]", "per transfer context",
                                               "min over contexts", "drop eval − min", "collapse", "anti-Goodhart"])
    body = []
    for p, _, f in rows:
        ag = f["anti_goodhart"]
        flag = e(ag["reason"])
        if ag["flagged"]:
            flag = f'<span class="red">⚠ FLAGGED, not celebrated: {flag}</span>'
        collapse = e(_collapse_text(f))
        if f["collapse"].get("collapsed"):
            collapse = f'<span class="red">{collapse}</span>'
        drop = e(f"{_f(f['drop']['value'], True)} {_ci(f['drop'], True)}")
        if ag["flagged"]:
            drop = f'<span class="red">{drop}</span>'
        cells = [e(p["name"]), e(f["title"]), e(f"{_f(f['eval']['score'])} {_ci(f['eval'])}"),
                 "<br>".join(e(t) for t in _context_text(f).split("; ")),
                 e(f"{_f(f['min']['score'])} {_ci(f['min'])} on {f['min']['context_id']}"), drop, collapse, flag]
        body.append("<tr>" + "".join(f'<td style="white-space:normal">{c}</td>' for c in cells) + "</tr>")
    parts.append(f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>')
    return "\n".join(parts)


# -- Track 2 details: strength choice, sweep, per-concept AUCs, identifiability, the pass bar ------------------

_GROUND_INTRO = ("Detection AUC of injected-vs-null trials (per concept, then averaged; session-bootstrap CI): ground "
                 "against the zero null (nothing injected), ground-rand against a random direction of the same norm "
                 "at the same strength. Both are read on the evaluated split's trials at the adapter's default site "
                 "and at the headline strength, chosen on the dev split alone, never on eval: {rule}. Concepts whose "
                 "direction has a cosine of at least {cos} with another concept's are not separable: their AUC is "
                 "not evidence of grounding.")


def _ground_rows(report: dict, proxy: bool) -> list[dict]:
    """Report rows with a described Track 2 figure, of one tier (native, or proxy-tier grounding)."""
    return [b for b in report["baselines"] if "strength" in (b["tracks"].get("ground") or {})
            and (b["adapter_tier"] == "proxy") == proxy]


def _ground_heads(rows: list[dict]) -> list[str]:
    """A column title per row: its baseline, with its split where the rows are of several splits."""
    several = len({b["split"] for b in rows}) > 1
    return [f"{b['name']} ({b['split']})" if several else b["name"] for b in rows]


def _chance_text(entry: dict) -> str:
    chance = _metric("ground").chance
    if entry["score"] <= chance:
        return f"NOT above {chance}"
    if entry.get("ci_low") is not None and entry["ci_low"] > chance:
        return f"CI above {chance}"
    return f"above {chance} in the point value only (CI reaches {chance})"


def _strength_texts(entry: dict) -> tuple[str, str, list[tuple[str, float, bool]]]:
    """The headline strength, how it was chosen, and the dev AUCs by strength (strength, AUC, chosen)."""
    choice = entry["strength"]
    s = f"{choice['strength']:g}"
    how = "chosen on dev, never eval" if choice.get("split") == "dev" else choice["rule"]
    dev = [(k, v, k == s) for k, v in (choice.get("dev_auc_random") or {}).items()]
    return s, how, dev


def _sweep_grid(rows: list[dict]) -> list[tuple[str, str, list[tuple[dict | None, bool]]]]:
    """(site, strength, per row: its AUCs vs each null and whether it is the headline cell) for every site and
    strength any row swept, in the rows' order."""
    sites: dict[str, list[str]] = {}
    for b in rows:
        for site, by in b["tracks"]["ground"]["sweep"].items():
            strengths = sites.setdefault(site, [])
            strengths += [s for s in by if s not in strengths]
    out = []
    for site, strengths in sites.items():
        for s in strengths:
            cells = []
            for b in rows:
                g = b["tracks"]["ground"]
                head = site == g.get("default_site") and s == f"{g['strength']['strength']:g}"
                cells.append(((g["sweep"].get(site) or {}).get(s), head))
            default = any(b["tracks"]["ground"].get("default_site") == site for b in rows)
            out.append((f"{site} (default)" if default else site, s, cells))
    return out


def _concept_grid(rows: list[dict]) -> list[tuple[str, list[dict | None]]]:
    concepts: list[str] = []
    for b in rows:
        concepts += [c for c in b["tracks"]["ground"]["per_concept"] if c not in concepts]
    return [(c, [b["tracks"]["ground"]["per_concept"].get(c) for b in rows]) for c in concepts]


def _pair(fig: dict | None) -> str:
    """AUC vs the zero null / vs the random null."""
    return "—" if fig is None else f"{_f(fig.get('zero'))} / {_f(fig.get('random'))}"


def _concept_text(fig: dict | None, threshold: float) -> str:
    if fig is None:
        return "—"
    cos = f"max cos {fig['cos_max']:.3f}"
    if fig.get("separable", True):
        return f"{_pair(fig)} · {cos}"
    return f"⚠ not separable ({cos} ≥ {threshold}): {_pair(fig)} is not evidence of grounding"


def _ground_gap_lines(report: dict, proxy: bool) -> list[str]:
    gaps = (report.get("track2") or {}).get("gaps") or {}
    out = []
    for split, c in gaps.items():
        if (c.get("tier") == "proxy") != proxy:
            continue
        if c["value"] is None:
            if not proxy:
                out.append(f"{c['comparison']} on {split}: not available — {c.get('note', '')}.")
            continue
        out.append(f"{c['comparison']} on {split} = {_f(c['value'], True)} {_ci(c, True)} ({c['bootstrap']} "
                   f"session bootstrap; {c['n_sessions']:,} sessions, {c['n_items']:,} trials): {c['statement']}.")
    return out


def _ground_titles(proxy: bool) -> tuple[str, str, str]:
    """The section title and the two figures' names, for one tier."""
    if proxy:
        return (f"{PROXY_GROUNDING[0].upper()}{PROXY_GROUNDING[1:]} (proxy tier: this toolkit's extension, not spec "
                "Track 2)", f"{PROXY_GROUNDING}: AUC vs zero null", f"{PROXY_GROUNDING}: AUC vs random null")
    return "Track 2 — grounding by concept injection (native tier)", "ground: AUC vs zero null", \
        "ground-rand: AUC vs random null"


def _ground_intro() -> str:
    from trb.grounding import COSINE_FLAG
    from trb.tracks.track2 import CHOICE_RULE

    return _GROUND_INTRO.format(rule=CHOICE_RULE, cos=COSINE_FLAG)


def _ground_markdown(report: dict) -> list[str]:
    """Track 2's sections: native tier first, then proxy-tier grounding apart from it."""
    threshold = (report.get("track2") or {}).get("cosine_threshold")
    lines: list[str] = []
    for proxy in (False, True):
        rows = _ground_rows(report, proxy)
        title, zero, rand = _ground_titles(proxy)
        if not rows and proxy:
            continue
        lines += [f"## {title}", ""]
        if proxy:
            lines += [f"**{PROXY_GROUNDING_NOTE[0].upper()}{PROXY_GROUNDING_NOTE[1:]}.**", ""]
        if not rows:
            lines += ["No native-tier baseline has a Track 2 figure on this release (it needs an adapter with "
                      "activation access and concept directions).", ""]
            lines += [f"- {ln}" for ln in _ground_gap_lines(report, proxy)]
            lines += [""] if _ground_gap_lines(report, proxy) else []
            continue
        lines += [_ground_intro(), ""]
        if not proxy:
            lines += [f"Pass-bar direction ({GROUND_DIRECTION}):", ""]
            lines += [f"- **{ln}**" for ln in _ground_gap_lines(report, proxy)] + [""]
        lines += [f"| baseline | split | {zero} [95% CI] | {rand} [95% CI] | vs chance (0.5) | headline strength | "
                  "dev AUC vs random null, by strength | flags |", "|" + "---|" * 8]
        for b in rows:
            g, gr = b["tracks"]["ground"], b["tracks"].get("ground-rand") or {}
            s, how, dev = _strength_texts(g)
            dev_text = " · ".join(f"**{k}: {_f(v)}**" if chosen else f"{k}: {_f(v)}" for k, v, chosen in dev) or "—"
            flags = "; ".join(f"⚠ {f}" for f in g.get("flags") or ()) or "none"
            cells = [b["name"], b["split"], f"{_f(g['score'])} {_ci(g)} · {g['n_items']:,} trials / "
                     f"{g['n_sessions']:,} sessions", f"{_f(gr.get('score'))} {_ci(gr)}", _chance_text(g),
                     f"{s} ({how})", dev_text, flags]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        heads = _ground_heads(rows)
        lines += ["", "AUC by activation site and strength on the evaluated split, vs the zero null / vs the random "
                  "null (◀ the headline: default site, strength chosen on dev):", "",
                  "| site | strength | " + " | ".join(heads) + " |", "|" + "---|" * (2 + len(heads))]
        for site, s, cells in _sweep_grid(rows):
            texts = [f"**{_pair(fig)}** ◀" if head else _pair(fig) for fig, head in cells]
            lines.append("| " + " | ".join([site, s, *texts]) + " |")
        lines += ["", "AUC per concept at the headline strength and default site, vs the zero null / vs the random "
                  "null, with the concept direction's largest cosine with another concept's:", "",
                  "| concept | " + " | ".join(heads) + " |", "|" + "---|" * (1 + len(heads))]
        for concept, figs in _concept_grid(rows):
            cells = [concept, *(_concept_text(f, threshold) for f in figs)]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        lines.append("")
    return lines


def _ground_html(report: dict) -> str:
    e = html.escape
    threshold = (report.get("track2") or {}).get("cosine_threshold")
    parts: list[str] = []
    for proxy in (False, True):
        rows = _ground_rows(report, proxy)
        title, zero, rand = _ground_titles(proxy)
        if not rows and proxy:
            continue
        parts.append(f"<h2>{e(title)}</h2>")
        if proxy:
            parts.append(f'<p><span class="tier">{e(PROXY_GROUNDING_NOTE[0].upper() + PROXY_GROUNDING_NOTE[1:])}.'
                         "</span></p>")
        gap_lines = _ground_gap_lines(report, proxy)
        if not rows:
            parts.append("<p>No native-tier baseline has a Track 2 figure on this release (it needs an adapter with "
                         "activation access and concept directions).</p>")
            if gap_lines:
                parts.append("<ul>" + "".join(f"<li>{e(ln)}</li>" for ln in gap_lines) + "</ul>")
            continue
        parts.append(f"<p>{e(_ground_intro())}</p>")
        if not proxy:
            items = []
            for ln in gap_lines:
                text = e(ln)
                if "direction NOT met" in ln:
                    text = f'<span class="red">{text}</span>'
                items.append(f"<li><strong>{text}</strong></li>")
            parts.append(f"<p>Pass-bar direction ({e(GROUND_DIRECTION)}):</p><ul>{''.join(items)}</ul>")
        notes = _HtmlNotes(f"ground{int(proxy)}-note")
        head = [_lines("baseline", "tier · split"), _lines(*(e(x) for x in zero.split(": ", 1))),
                _lines(*(e(x) for x in rand.split(": ", 1))), _lines("vs chance", "(0.5)"),
                _lines("headline", "strength"), _lines("dev AUC vs random null", "by strength")]
        body = []
        for b in rows:
            g, gr = b["tracks"]["ground"], b["tracks"].get("ground-rand") or {}
            s, how, dev = _strength_texts(g)
            marks = "".join(notes.mark(f"⚠ FLAG: {f}") for f in g.get("flags") or ())
            dev_text = " · ".join(f"<strong>{e(k)}: {_f(v)}</strong>" if chosen else f"{e(k)}: {_f(v)}"
                                  for k, v, chosen in dev) or "—"
            chance = e(_chance_text(g))
            if g["score"] <= _metric("ground").chance:
                chance = f'<span class="red">{chance}</span>'
            cells = [_lines(e(b["name"]), e(f"{b['adapter_tier']} · {b['split']}")),
                     _lines(e(f"{_f(g['score'])} {_ci(g)}") + marks,
                            e(f"{g['n_items']:,} trials / {g['n_sessions']:,} sessions")),
                     _lines(e(f"{_f(gr.get('score'))} {_ci(gr)}")), _lines(chance), _lines(e(s), e(how)),
                     _lines(dev_text)]
            body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        parts.append('<div class="wide"><table><thead><tr>' + "".join(f"<th>{h}</th>" for h in head)
                     + "</tr></thead><tbody>" + "".join(body) + "</tbody></table></div>")
        parts.append(notes.html())
        heads = _ground_heads(rows)
        parts.append("<p>AUC by activation site and strength on the evaluated split, vs the zero null / vs the random "
                     "null (◀ the headline: default site, strength chosen on dev):</p>")
        body = []
        for site, s, cells in _sweep_grid(rows):
            texts = [f"<strong>{e(_pair(fig))}</strong> ◀" if hd else e(_pair(fig)) for fig, hd in cells]
            body.append(f"<tr><td>{e(site)}</td><td>{e(s)}</td>" + "".join(f"<td>{t}</td>" for t in texts) + "</tr>")
        parts.append('<div class="wide"><table><thead><tr><th>site</th><th>strength</th>'
                     + "".join(f"<th>{e(h)}</th>" for h in heads) + "</tr></thead><tbody>" + "".join(body)
                     + "</tbody></table></div>")
        parts.append("<p>AUC per concept at the headline strength and default site, vs the zero null / vs the random "
                     "null, with the concept direction's largest cosine with another concept's:</p>")
        body = []
        for concept, figs in _concept_grid(rows):
            cells = []
            for fig in figs:
                if fig is None:
                    cells.append("—")
                elif fig.get("separable", True):
                    cells.append(_lines(e(_pair(fig)), e(f"max cos {fig['cos_max']:.3f}")))
                else:  # not separable: the AUC is shown greyed, under the flag, never as a signal
                    cells.append(_lines('<span class="red">⚠ not separable: not evidence</span>',
                                        e(f"({_pair(fig)}) · max cos {fig['cos_max']:.3f} ≥ {threshold}")))
            body.append(f'<tr><th scope="row">{e(concept)}</th>' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        parts.append('<div class="wide"><table><thead><tr><th>concept</th>'
                     + "".join(f"<th>{e(h)}</th>" for h in heads) + "</tr></thead><tbody>" + "".join(body)
                     + "</tbody></table></div>")
    return "\n".join(parts)


# -- the profile plot: one panel per baseline, the six entries each on its own scale ---------------------------

#: Each entry's chance or null level, and how the plot names it (G's is the baseline's own uniform-policy G).
_PROFILE_NULLS = {"G": "the uniform policy's G", "ground": "0.5", "attr": "0.5", "viab": "1 (no change)",
                  "nav": "0 (no lift)", "trans": "0 (no drop)"}
_PROFILE_HEIGHT = 3.3
_PROFILES_ALT = "TRB profile vector per baseline with 95% CIs, each entry on its own scale"


def _profile_point(report: dict, p: dict, entry: str, key: str | None) -> dict:
    """One entry of one baseline's profile as the plot draws it: value, interval, null level and label, or the
    reason it has no value (``na``)."""
    e = p["vector"][entry]
    if e.get("status") != "ok":
        return {"na": e.get("status") or "no score"}
    if key is None:  # trans: the drop eval − min over contexts of the first figure Track 6 computed
        figs = {k: f for k, f in e["figures"].items() if f.get("status") == "ok"}
        fkey, f = next(iter(figs.items()))
        name = next((n for n, k in PROFILE_VECTOR if k == fkey), fkey)
        return {"value": f["drop"]["value"], "lo": f["drop"]["ci_low"], "hi": f["drop"]["ci_high"], "null": 0.0,
                "label": f"trans\n({name} drop)", "open": False}
    if key == "1":  # G's null: the uniform policy's G on the same items (a reference point of the same run)
        row = next((b for b in report["baselines"] if b["name"] == p["name"] and b["split"] == "eval"), None)
        null = ((row or {}).get("tracks", {}).get("1-uniform") or {}).get("score")
    else:
        null = _metric(key).chance
    label = f"{entry}\n(proxy tier)" if e.get("label") else entry
    return {"value": e["score"], "lo": e.get("ci_low"), "hi": e.get("ci_high"), "null": null, "label": label,
            "open": bool(e.get("label"))}


def _profile_limits(points: list[dict], key: str | None) -> tuple[float, float]:
    """An entry's x range, the same in every panel: its metric's bounds, else its values, intervals and null."""
    m = _metric(key) if key is not None else None
    if m is not None and m.bounds is not None:
        lo, hi = m.bounds
        return lo - 0.04 * (hi - lo), hi + 0.04 * (hi - lo)
    xs = [x for pt in points for x in (pt.get("value"), pt.get("lo"), pt.get("hi"), pt.get("null")) if x is not None]
    if not xs:
        return -1.0, 1.0
    lo, hi = min(xs), max(xs)
    span = max(hi - lo, 0.2)
    return lo - 0.12 * span, hi + 0.12 * span


def _profiles_figure(report: dict):
    """The profile vector of every baseline: one panel per baseline, the six entries stacked in it, each on its
    own horizontal scale (the same scale for that entry in every panel) with its chance or null level dashed;
    an entry not run or not applicable is a grey label. Proxy-tier grounding is an open marker, labelled.

    Returns ``(figure, panels)``: ``panels[baseline][entry]`` is the entry's axes. Uses matplotlib's object API
    with the Agg canvas (no pyplot). The grid is at most three panels wide, about 1,190 px at 110 dpi.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    profiles = list(report.get("profile_vectors") or ())
    n = max(len(profiles), 1)
    ncols = min(_PLOT_COLUMNS, n)
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(_PANEL_WIDTH * _PLOT_COLUMNS, 0.9 + _PROFILE_HEIGHT * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    points = {p["name"]: {entry: _profile_point(report, p, entry, key) for entry, key in PROFILE_VECTOR}
              for p in profiles}
    limits = {entry: _profile_limits([points[p["name"]][entry] for p in profiles], key) for entry, key in PROFILE_VECTOR}
    subfigs = fig.subfigures(nrows, _PLOT_COLUMNS, squeeze=False).ravel()
    panels: dict[str, dict] = {}
    for sf, p in zip(subfigs, profiles):
        sf.suptitle(f"{p['name']} ({p['adapter_tier']})", fontsize=10)
        axes = sf.subplots(len(PROFILE_VECTOR), 1)
        panels[p["name"]] = {}
        for ax, (entry, _) in zip(axes, PROFILE_VECTOR):
            panels[p["name"]][entry] = ax
            pt = points[p["name"]][entry]
            ax.set_yticks([])
            ax.set_ylim(-1, 1)
            ax.set_xlim(*limits[entry])
            ax.tick_params(axis="x", labelsize=6, length=2, pad=1)
            ax.xaxis.set_major_locator(MaxNLocator(5))
            ax.set_ylabel(pt.get("label", entry), rotation=0, ha="right", va="center", fontsize=8)
            if "na" in pt:
                ax.text(0.5, 0.5, f"n/a: {pt['na']}", transform=ax.transAxes, ha="center", va="center", fontsize=7,
                        color="grey")
                ax.set_xticks([])
                for spine in ax.spines.values():
                    spine.set_color("#cccccc")
                continue
            if pt["null"] is not None:
                ax.axvline(pt["null"], color="grey", lw=0.8, ls="--")
            v = pt["value"]
            err = [[max(v - pt["lo"], 0.0) if pt["lo"] is not None else 0.0],
                   [max(pt["hi"] - v, 0.0) if pt["hi"] is not None else 0.0]]
            ax.errorbar([v], [0.0], xerr=err, fmt="o", ms=4, capsize=3, color="#1f4e79",
                        markerfacecolor="white" if pt["open"] else "#1f4e79")
            ax.text(v, 0.35, f"{v:.3f}", ha="center", va="bottom", fontsize=6, color="#1f4e79")
    for sf in subfigs[len(profiles):]:
        sf.set_facecolor("none")
    nulls = "; ".join(f"{k}: {v}" for k, v in _PROFILE_NULLS.items())
    fig.supxlabel(f"Each entry on its own scale (the same in every panel), with its {int(100 * CONFIDENCE)}% CI; open "
                  f"marker: {PROXY_GROUNDING}; n/a: not run or not applicable.\nDashed: the entry's chance or null "
                  f"level ({nulls}).", fontsize=7)
    title = f"Profile vector per baseline · {_plot_title(report)}"
    fig.suptitle(title, color="#b00020" if report["smoke_test"] else "black",
                 fontweight="bold" if report["smoke_test"] else "normal")
    return fig, panels


def _profiles_png(report: dict) -> bytes:
    buf = io.BytesIO()
    fig, _ = _profiles_figure(report)
    fig.savefig(buf, format="png", dpi=110, metadata={"Title": _plot_title(report)})
    return buf.getvalue()


def plot_profiles(report: dict, path: Path) -> Path:
    """Write the profile plot (one panel per baseline: its six entries, each with its CI on its own scale and its
    chance or null level) as PNG to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_profiles_png(report))
    return path
