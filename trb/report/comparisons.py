"""Δgov and the spec's pass bars on a held-out split: paired differences of two runs with session-bootstrap CIs.

A track adds pass bars of its own through its report section (``pass_bars``: Track 2's ground gap)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from trb.report.common import ABLATION, CONFIDENCE, FULL, _metrics, _num
from trb.report.sections import ReportContext, report_sections
from trb.results import ResultsStore
from trb.stats import Estimate, paired_balanced_accuracy_delta_by_session, paired_delta_by_session

__all__ = ["FALSIFIER_DELTA", "COT_SFT"]


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


def _pass_bars(ctx: ReportContext, split: str, rows: list[dict], delta: dict | None) -> list[dict]:
    """The spec's pass bars for one held-out split, each a paired difference with its CI: directions, not verdicts;
    then each track's own (its report section's ``pass_bars``)."""
    store, latest, n_resamples, seed = ctx.store, ctx.latest, ctx.n_resamples, ctx.seed
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
    for _, section in report_sections():
        if hasattr(section, "pass_bars"):
            out += section.pass_bars(ctx, split, rows)
    return out
