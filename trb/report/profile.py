"""One run's figures: every registered metric with its session-bootstrap interval, its notes and flags.

:func:`run_profile` is the one computation of a run's figures: ``trb report`` and the review app's results screen
both call it. What a track adds to a figure's entry beyond its estimate comes from the track itself
(``describe``, and its report section's ``entry_extra`` and ``entry_label``: :mod:`trb.report.sections`).
"""

from __future__ import annotations

import math

import numpy as np

from trb.report.columns import _has_values, _ItemColumns, _Selected
from trb.report.common import CONFIDENCE, _metrics, _num, _timings
from trb.report.sections import section_of
from trb.results import ResultsStore
from trb.stats import Estimate
from trb.tracks.base import registered_tracks
from trb.verdicts import FLAGGED, FlagRule, verdict_of, verdict_text

__all__ = ["run_profile"]


#: A figure's status: scored, undefined (its items were scored but the figure is not defined on them), not run
#: (the run did not include its track), not applicable (the adapter cannot run it), or no items (the track ran,
#: no item of this figure was scored).
STATUSES = ("ok", "undefined", "not run", "not applicable", "no items")


def _track_entry(est: Estimate | None, metric: str, *, synthetic_share: float | None = None,
                 note: str | None = None, extra: dict | None = None, status: str | None = None,
                 rule: FlagRule | None = None, confidence: float = CONFIDENCE) -> dict:
    entry = {"score": None, "ci_low": None, "ci_high": None, "n_items": 0, "n_sessions": 0,
             "synthetic_share": synthetic_share, "metric": metric,
             "status": status or ("ok" if est is not None else "undefined")}
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
    if rule is not None and entry["status"] in ("ok", "undefined"):  # a verdict only on a figure the run has
        test = entry.pop("verdict_test", None)  # an exact test's p-values, from the track's describe
        v = verdict_of(rule, entry["score"], entry["ci_low"], entry["ci_high"], test, confidence=confidence)
        entry["verdicts"] = [v]
        if v["verdict"] == FLAGGED:
            entry["flags"] = [*entry.get("flags", []), verdict_text(v)]
        if v["red"]:
            entry["red"] = True
    return entry


def _synthetic_share(origin: np.ndarray) -> float | None:
    known = origin[origin != None]  # noqa: E711  (elementwise on an object array)
    if known.size == 0:
        return None
    return float(np.mean(known == "synthetic"))


def _described(track, metric, columns) -> dict:
    """What the track shows beside a figure (its ``describe``), or nothing when it has nothing to say."""
    describe = getattr(track, "describe", None)
    if describe is None:
        return {}
    try:
        return describe(metric, columns)
    except ValueError:  # nothing to describe (e.g. no belief reported): the figure says why
        return {}


def _waiting(track, summary: dict) -> str | None:
    """What a track's headline waits for on items of the run it could not score yet (the track's ``waiting``:
    Track 1's items whose Φ is pending), in words; None when nothing waits."""
    waiting = getattr(track, "waiting", None)
    return waiting(summary) if waiting is not None else None


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
                                          extra={"not_applicable": True, "needs": s.get("needs") or []},
                                          status="not applicable")
            continue
        cols = track_columns(m.track)
        mask = cols["metric"] == m.metric
        n = int(mask.sum())
        na = (s.get("not_applicable") or {}).get(m.key)
        waiting = _waiting(track, s) if m.headline else None  # items the headline waits for (Track 1: their Φ)
        if n == 0:
            if waiting:
                out[m.key] = _track_entry(None, m.definition, note=f"no item scored yet: {waiting}",
                                          extra={"waiting": waiting}, status="no items")
            elif na:
                why = na.get("reason") or f"needs {', '.join(na['needs'])}"
                out[m.key] = _track_entry(None, m.definition, note=f"not applicable ({why}; "
                                          f"{na['n_items']} items not scored)",
                                          extra={"not_applicable": True, "needs": na["needs"]},
                                          status="not applicable")
            elif m.headline:
                note = "run on this track but no items scored" if m.track in run_tracks else "not run"
                out[m.key] = _track_entry(None, m.definition, note=note,
                                          status="no items" if m.track in run_tracks else "not run")
            continue
        sub = cols if n == mask.size else _Selected(cols, mask)  # no copy when every item is of m
        if m.requires is not None and not _has_values(sub.get(m.requires)):
            continue  # items scored before this figure's column existed (or with nothing in it)
        if "score" in sub and m.metric != "attribution":
            scores = sub["score"].astype(float, copy=False)  # read only: no copy of a float column
            if np.isnan(scores).any():
                out[m.key] = _track_entry(None, m.definition, note=f"{int(np.isnan(scores).sum())} items lack a score",
                                          extra={"n_items": n}, rule=m.verdict, confidence=confidence)
                continue
        try:
            est = track.aggregate(m, sub, n_resamples=n_resamples, confidence=confidence, seed=seed)
        except ValueError as e:  # undefined: its own status; what the track says beside it stays (CG-1)
            said = {k: v for k, v in _described(track, m, sub).items() if k in ("cg1", "cg1_reading")}
            out[m.key] = _track_entry(None, m.definition, note=f"{m.title} undefined: {e}",
                                      extra={"n_items": n, **said}, rule=m.verdict, confidence=confidence)
            continue
        extra: dict = dict(_described(track, m, sub))
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
        section = section_of(m.track)
        if section is not None and hasattr(section, "entry_extra"):  # Track 2: the default site
            extra.update(section.entry_extra(m, sub))
        if waiting:
            extra["waiting"] = waiting
        out[m.key] = _track_entry(est, m.definition, synthetic_share=share, extra=extra, rule=m.verdict,
                                  confidence=confidence)
        if na and na["n_items"]:
            out[m.key]["n_not_applicable"] = na["n_items"]
    loaded.clear()
    out = {m.key: out[m.key] for m in _metrics() if m.key in out}  # in the registry's order, as before
    for m in _metrics():  # what a track's figures name beside them (Track 2: its tier; proxy-tier grounding)
        section = section_of(m.track) if m.key in out else None
        if section is not None and hasattr(section, "entry_label"):
            out[m.key].update(section.entry_label(m, run))
    return out
