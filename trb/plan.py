"""``trb plan``: how many sessions to collect, from a pilot run in a results store.

For each quantity the report gives with a confidence interval, the pilot's observed
variance says how many *sessions* (the bootstrap unit, :mod:`trb.stats`) a collection
needs for the interval's half-width to come out at a target ``h``:

* **Δgov** = G(trace-full) − G(trace-ablation): Track 1 ``tv`` items of the latest run of
  each baseline on the release and split, paired by ``item_id``; d = full − ablation per
  item, m̄ items per session. The per-item variance σ² and the intra-session correlation
  ICC of d come from a one-way random-effects ANOVA over sessions (``anova_icc``); the
  design effect is DEFF = 1 + (m* − 1)·ICC, m* = Σm_i²/Σm_i (= m̄ when every session has
  m̄ items; Kish's m̄(1 + CV²) otherwise), the exact factor for the item mean
  Σd/N under that model. One session then carries σ_s² = σ²·DEFF/m̄.
* **viab** (Track 4) = mean(completion | full) / mean(completion | ablated), paired by
  ``session_id`` (one full and one ablated episode per session). By the delta method the
  ratio of paired means R = x̄/ȳ has variance Var(u)/n with u_i = (x_i − R·y_i)/ȳ per
  session: σ_s = SD(u).
* **nav** (Track 5) = mean(reach | steered) − mean(reach | ablated), paired by
  ``session_id``: σ_s = SD(x_i − y_i). ``nav-plan`` is the same lift for the
  ``steered-plan`` condition, planned with the same half-width when the pilot has it.

For Tracks 4 and 5 a session holds one item per condition (m = 1, DEFF = 1); rows given
more than once for a (session, condition) are averaged, so σ_s stays the variance of the
session, whatever correlation is inside it.

Sessions needed: n = (z·σ_s/h)², z the normal quantile of the two-sided ``confidence``,
computed by ``statsmodels.stats.power.normal_sample_size_one_tail(h, power=0.5,
alpha=(1 − confidence)/2, std_null=σ_s)``: the n at which a one-sided level-α/2 test
placed at distance h has power ½, i.e. at which z·σ_s/√n = h exactly. Normal, not t: the
report's interval is the session bootstrap's percentile interval, whose width is the
normal one's. n is rounded up, and is at least 2 (a between-session variance needs two).
The half-width that comes out is h in expectation; about half of the collections of that
size come out slightly wider, half slightly narrower.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow.compute as pc
from scipy import stats as _sps
from statsmodels.stats.power import normal_sample_size_one_tail

from trb.errors import UsageError
from trb.results import ResultsError, ResultsStore

__all__ = [
    "DEFAULT_HALF_WIDTHS",
    "METHOD",
    "QUANTITIES",
    "anova_icc",
    "sessions_for_half_width",
    "plan_clustered_mean",
    "plan_paired_ratio",
    "plan_paired_lift",
    "plan_collection",
    "render_plan",
]

FULL, ABLATION = "trace-full", "trace-ablation"
#: The default 95% CI half-widths: Δgov (Track 1 difference), Track 4 ratio, Track 5 lift.
DEFAULT_HALF_WIDTHS = {"delta_gov": 0.02, "viab": 0.05, "nav": 0.05}
#: Every quantity planned, in output order, with its title; nav-plan uses nav's half-width.
QUANTITIES = {
    "delta_gov": "Δgov = G(trace-full) − G(trace-ablation), Track 1, paired by item",
    "viab": "Track 4 viability: completion(full) / completion(ablated), paired by session",
    "nav": "Track 5 navigability: reach(steered) − reach(ablated), paired by session",
    "nav-plan": "Track 5 navigability: reach(steered-plan) − reach(ablated), paired by session",
}
#: What every plan states it did (the module docstring has the details).
METHOD = ("n sessions = ceil((z·σ_s/h)²), at least 2, z the normal quantile "
          "(statsmodels.stats.power.normal_sample_size_one_tail at power 0.5, alpha (1 − confidence)/2); "
          "Δgov: σ_s² = σ²·DEFF/m̄, DEFF = 1 + (m* − 1)·ICC, σ² and ICC from a one-way ANOVA of the per-item "
          "paired differences over sessions, m* = Σm_i²/Σm_i; Track 4: σ_s = SD((x − R·y)/ȳ) (delta method for "
          "R = x̄/ȳ); Track 5: σ_s = SD(x − y)")
_HALF_WIDTH_KEY = {"delta_gov": "delta_gov", "viab": "viab", "nav": "nav", "nav-plan": "nav"}
_MIN_SESSIONS = 2


# -- the statistics, on plain arrays ---------------------------------------------------------------

def _z(confidence: float) -> float:
    return float(_sps.norm.isf((1 - confidence) / 2))


def sessions_for_half_width(sd_session: float, half_width: float, confidence: float = 0.95) -> int:
    """Sessions n for a two-sided ``confidence`` interval of half-width ``half_width``: ⌈(z·σ_s/h)²⌉, at least 2.

    ``sd_session`` is the SD one session contributes (the SE with n sessions is σ_s/√n).
    Computed with statsmodels' ``normal_sample_size_one_tail`` at power ½ (see the module docstring).
    """
    _check_confidence(confidence)
    if not (half_width > 0 and math.isfinite(half_width)):
        raise UsageError(f"a half-width must be a positive number, got {half_width}")
    n = float(normal_sample_size_one_tail(half_width, 0.5, (1 - confidence) / 2, std_null=sd_session))
    return max(_MIN_SESSIONS, math.ceil(n - 1e-9))


def anova_icc(values: Sequence[float], sessions: Sequence) -> dict:
    """One-way random-effects ANOVA of ``values`` grouped by ``sessions``: variance components and the ICC.

    MSB = Σ m_i (ȳ_i − ȳ)² / (k − 1), MSW = ΣΣ (y_ij − ȳ_i)² / (N − k),
    m0 = (N − Σ m_i²/N) / (k − 1), σ_b² = max(0, (MSB − MSW)/m0), σ_w² = MSW,
    ICC = σ_b² / (σ_b² + σ_w²) (``None`` when every session has one item: no within-session
    variance can be seen, and none is needed, as m = 1). Needs k ≥ 2 sessions.
    Returns k, N, m_mean (N/k), m_weighted (Σm_i²/N), ms_between, ms_within, var_between,
    var_within, var_total, icc, icc_truncated (the raw estimate was below 0 and set to 0).
    """
    y = np.asarray(values, dtype=float).reshape(-1)
    _, codes = np.unique(np.asarray(sessions, dtype=str), return_inverse=True)
    codes = codes.reshape(-1)
    k = int(codes.max()) + 1 if codes.size else 0
    n = int(y.size)
    if k < 2:
        raise ValueError("the ICC needs at least two sessions")
    m = np.bincount(codes, minlength=k).astype(float)
    means = np.bincount(codes, weights=y, minlength=k) / m
    grand = float(y.mean())
    ms_between = float(np.sum(m * (means - grand) ** 2) / (k - 1))
    m_weighted = float(np.sum(m ** 2) / n)
    if n == k:  # one item per session
        var = float(np.var(y, ddof=1))
        return {"k": k, "N": n, "m_mean": 1.0, "m_weighted": 1.0, "ms_between": ms_between, "ms_within": None,
                "var_between": None, "var_within": None, "var_total": var, "icc": None, "icc_truncated": False}
    ms_within = float(np.sum((y - means[codes]) ** 2) / (n - k))
    m0 = (n - np.sum(m ** 2) / n) / (k - 1)
    raw = (ms_between - ms_within) / m0
    var_between = max(0.0, float(raw))
    var_total = var_between + ms_within
    icc = var_between / var_total if var_total > 0 else 0.0
    return {"k": k, "N": n, "m_mean": n / k, "m_weighted": m_weighted, "ms_between": ms_between,
            "ms_within": ms_within, "var_between": var_between, "var_within": ms_within, "var_total": var_total,
            "icc": icc, "icc_truncated": bool(raw < 0)}


def _finish(out: dict, sd_session: float, k: int, half_width: float, confidence: float) -> dict:
    """Add the SE now, the half-width now, the sessions needed and how many more (or why there is no plan)."""
    z = _z(confidence)
    out.update({"sd_session": sd_session, "se": sd_session / math.sqrt(k), "half_width_now": z * sd_session / math.sqrt(k),
                "half_width": half_width, "confidence": confidence})
    if not sd_session > 0:
        out.update(status="cannot plan", n_needed=None, n_more=None,
                   reason="no variation between sessions in the pilot (SD 0): it cannot size a collection; "
                          "collect a larger pilot")
        return out
    n = sessions_for_half_width(sd_session, half_width, confidence)
    out.update(status="planned", n_needed=n, n_more=max(0, n - k))
    return out


def plan_clustered_mean(values: Sequence[float], sessions: Sequence, *, half_width: float,
                        confidence: float = 0.95) -> dict:
    """The plan for the mean of item values clustered in sessions (Δgov: the per-item paired differences).

    σ² and the ICC from :func:`anova_icc`; DEFF = 1 + (m* − 1)·ICC; σ_s = σ·√(DEFF/m̄).
    """
    y = np.asarray(values, dtype=float).reshape(-1)
    a = anova_icc(y, sessions)
    deff = 1.0 if a["icc"] is None else 1.0 + (a["m_weighted"] - 1.0) * a["icc"]
    sd = math.sqrt(a["var_total"])
    out = {"estimate": float(y.mean()), "n_sessions": a["k"], "n_items": a["N"], "m": a["m_mean"],
           "m_weighted": a["m_weighted"], "sd": sd, "sd_kind": "per item",
           "sd_between": None if a["var_between"] is None else math.sqrt(a["var_between"]),
           "sd_within": None if a["var_within"] is None else math.sqrt(a["var_within"]),
           "icc": a["icc"], "icc_truncated": a["icc_truncated"], "deff": deff}
    return _finish(out, sd * math.sqrt(deff / a["m_mean"]), a["k"], half_width, confidence)


def _pairs(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=float).reshape(-1)
    y = np.asarray(y, dtype=float).reshape(-1)
    if x.size != y.size:
        raise ValueError(f"x ({x.size}) and y ({y.size}) must be paired session by session")
    if x.size < 2:
        raise ValueError("a plan needs at least two paired sessions")
    return x, y


def plan_paired_ratio(x: Sequence[float], y: Sequence[float], *, half_width: float,
                      confidence: float = 0.95) -> dict:
    """The plan for R = x̄/ȳ over sessions (Track 4: x full, y ablated); delta method, σ_s = SD((x − R·y)/ȳ).

    Raises:
        ValueError: fewer than two sessions; ȳ = 0 (the ratio is undefined).
    """
    x, y = _pairs(x, y)
    mx, my = float(x.mean()), float(y.mean())
    if my == 0:
        raise ValueError("the ablated condition never reached the target in the pilot: the ratio is undefined")
    ratio = mx / my
    u = (x - ratio * y) / my
    out = {"estimate": ratio, "n_sessions": int(x.size), "n_items": int(2 * x.size), "m": 1.0, "m_weighted": 1.0,
           "sd": float(np.std(u, ddof=1)), "sd_kind": "per session (delta-method linearisation)",
           "icc": None, "deff": 1.0, "mean_x": mx, "mean_y": my}
    return _finish(out, out["sd"], int(x.size), half_width, confidence)


def plan_paired_lift(x: Sequence[float], y: Sequence[float], *, half_width: float,
                     confidence: float = 0.95) -> dict:
    """The plan for the lift x̄ − ȳ over sessions (Track 5: x steered, y ablated); σ_s = SD(x − y).

    Raises:
        ValueError: fewer than two sessions.
    """
    x, y = _pairs(x, y)
    d = x - y
    out = {"estimate": float(d.mean()), "n_sessions": int(x.size), "n_items": int(2 * x.size), "m": 1.0,
           "m_weighted": 1.0, "sd": float(np.std(d, ddof=1)), "sd_kind": "per session (paired difference)",
           "icc": None, "deff": 1.0, "mean_x": float(x.mean()), "mean_y": float(y.mean())}
    return _finish(out, out["sd"], int(x.size), half_width, confidence)


# -- reading the pilot from a results store --------------------------------------------------------

def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise UsageError(f"confidence must be in (0, 1), got {confidence}")


def _half_widths(half_width: Mapping[str, float] | None) -> dict[str, float]:
    out = dict(DEFAULT_HALF_WIDTHS)
    unknown = sorted(set(half_width or {}) - set(out))
    if unknown:
        raise UsageError(f"unknown half-width key(s) {', '.join(unknown)}; known: {', '.join(out)}")
    out.update(half_width or {})
    for key, h in out.items():
        if not (isinstance(h, (int, float)) and h > 0 and math.isfinite(h)):
            raise UsageError(f"the half-width for {key} must be a positive number, got {h}")
    return out


def _sql_text(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _no_pilot(quantity: str, baseline: str | None, reason: str, status: str = "no pilot data", **more) -> dict:
    return {"quantity": quantity, "title": QUANTITIES[quantity], "baseline": baseline, "status": status,
            "reason": reason, **more}


def _delta_gov(store: ResultsStore, latest: dict[str, dict], split: str, h: float, confidence: float) -> dict:
    label = f"{FULL} − {ABLATION}"
    missing = [b for b in (FULL, ABLATION) if b not in latest]
    if missing:
        return _no_pilot("delta_gov", label, f"no {' and no '.join(missing)} run on split {split}: "
                                             f"Δgov needs both {FULL} and {ABLATION}")
    full, abl = latest[FULL], latest[ABLATION]
    tables = []
    for run in (full, abl):
        t = store.items(run["run_id"], track="1")
        t = t.filter(pc.equal(t.column("metric"), "tv")).select(["item_id", "session_id", "score"])
        tables.append(t)
    ta, tb = tables
    tb = tb.select(["item_id", "score"]).rename_columns(["item_id", "score_b"])
    joined = ta.join(tb, "item_id", join_type="inner").sort_by("item_id")
    run_ids = {"full_run_id": full["run_id"], "ablation_run_id": abl["run_id"]}
    if joined.num_rows == 0:
        return _no_pilot("delta_gov", label, f"runs {full['run_id']} ({FULL}) and {abl['run_id']} ({ABLATION}) "
                                             f"share no Track 1 (tv) item", **run_ids)
    sf = joined.column("score").to_numpy(zero_copy_only=False).astype(float)
    sa = joined.column("score_b").to_numpy(zero_copy_only=False).astype(float)
    sessions = np.asarray(joined.column("session_id").to_pylist(), dtype=object)
    ok = ~(np.isnan(sf) | np.isnan(sa)) & np.array([s is not None for s in sessions])
    notes = []
    unpaired = (ta.num_rows - joined.num_rows) + (tb.num_rows - joined.num_rows)
    if unpaired:
        notes.append(f"{unpaired} Track 1 item(s) scored by one run only are left out")
    if not ok.all():
        notes.append(f"{int((~ok).sum())} paired item(s) without a score or session are left out")
    sf, sa, sessions = sf[ok], sa[ok], sessions[ok]
    k = len(set(sessions.tolist()))
    if k < 2:
        return _no_pilot("delta_gov", label, f"the paired Track 1 items come from {k} session(s): the "
                                             "between-session variance needs at least two", status="cannot plan",
                         **run_ids)
    out = plan_clustered_mean(sf - sa, sessions, half_width=h, confidence=confidence)
    if out.get("icc_truncated"):
        notes.append("the ANOVA estimate of the ICC was below 0 and is taken as 0 (DEFF 1)")
    if out["m_weighted"] > out["m"] * 1.01:
        notes.append(f"sessions hold unequal numbers of items: DEFF uses m* = Σm²/Σm = {out['m_weighted']:.2f} "
                     f"(m̄ = {out['m']:.2f}), and the plan assumes new sessions are like the pilot's")
    return {"quantity": "delta_gov", "title": QUANTITIES["delta_gov"], "baseline": label, **run_ids, **out,
            "notes": notes}


def _condition_rows(store: ResultsStore, run_ids: list[str]) -> dict[str, list[tuple]]:
    """{run_id: [(track, session_id, condition, score)]} of the runs' Track 4 completion and Track 5 reach items
    (one query; ``{}`` when the store's item_scores has no ``condition`` column)."""
    _, has = store.query("SELECT 1 FROM information_schema.columns WHERE table_schema = 'main' "
                         "AND table_name = 'item_scores' AND column_name = 'condition'")
    if not has or not run_ids:
        return {} if not has else {r: [] for r in run_ids}
    _, rows = store.query(
        "SELECT run_id, track, session_id, condition, score FROM item_scores WHERE run_id IN ("
        + ", ".join(map(_sql_text, run_ids))
        + ") AND ((track = '4' AND metric = 'completion') OR (track = '5' AND metric = 'reach')) ORDER BY rowid")
    out: dict[str, list[tuple]] = {r: [] for r in run_ids}
    for run_id, *row in rows:
        out[run_id].append(tuple(row))
    return out


def _per_session(rows: list[tuple], track: str) -> dict[str, dict[str, float]]:
    """{session_id: {condition: mean score}} of one track's rows (rows without a score or a session left out)."""
    sums: dict[str, dict[str, list[float]]] = {}
    for t, session, condition, score in rows:
        if t != track or session is None or condition is None or score is None or math.isnan(score):
            continue
        sums.setdefault(session, {}).setdefault(condition, []).append(float(score))
    return {s: {c: sum(v) / len(v) for c, v in by.items()} for s, by in sums.items()}


def _paired(by_session: dict[str, dict[str, float]], a: str, b: str) -> tuple[np.ndarray, np.ndarray, int]:
    keys = sorted(s for s, by in by_session.items() if a in by and b in by)
    x = np.array([by_session[s][a] for s in keys], dtype=float)
    y = np.array([by_session[s][b] for s in keys], dtype=float)
    unpaired = sum(1 for by in by_session.values() if (a in by) != (b in by))
    return x, y, unpaired


#: quantity: (track, the condition of x, the condition of y, the kind of plan).
_CONDITION_QUANTITIES = {
    "viab": ("4", "full", "ablated", plan_paired_ratio),
    "nav": ("5", "steered", "ablated", plan_paired_lift),
    "nav-plan": ("5", "steered-plan", "ablated", plan_paired_lift),
}


def _condition_plans(run: dict, rows: list[tuple], halves: dict[str, float], confidence: float, *,
                     skip_missing: bool) -> list[dict]:
    """The Track 4 and 5 plans of one run (a track it has no items of: "no pilot data", or left out with
    ``skip_missing``)."""
    out = []
    name = run["baseline"] or "(unnamed)"
    for quantity, (track, cx, cy, plan) in _CONDITION_QUANTITIES.items():
        by_session = _per_session(rows, track)
        if quantity == "nav-plan" and not any(cx in by for by in by_session.values()):
            continue  # steered-plan is optional: listed only where the pilot has it
        if not by_session:
            if skip_missing:
                continue
            out.append(_no_pilot(quantity, name, f"the latest {name} run ({run['run_id']}) has no Track {track} "
                                                 f"{'completion' if track == '4' else 'reach'} items",
                                 run_id=run["run_id"]))
            continue
        x, y, unpaired = _paired(by_session, cx, cy)
        notes = [f"{unpaired} session(s) without both a {cx} and a {cy} item are left out"] if unpaired else []
        try:
            entry = plan(x, y, half_width=halves[_HALF_WIDTH_KEY[quantity]], confidence=confidence)
        except ValueError as e:
            reason = (f"{len(x)} paired session(s): a plan needs at least two" if len(x) < 2 else str(e))
            out.append(_no_pilot(quantity, name, reason, status="cannot plan" if len(x) else "no pilot data",
                                 run_id=run["run_id"]))
            continue
        out.append({"quantity": quantity, "title": QUANTITIES[quantity], "baseline": name, "run_id": run["run_id"],
                    "conditions": [cx, cy], **entry, "notes": notes})
    return out


def plan_collection(store: ResultsStore, *, baseline: str | None = None, split: str = "eval",
                    release_sha: str | None = None, half_width: Mapping[str, float] | None = None,
                    confidence: float = 0.95) -> dict:
    """The sessions to collect for each quantity's ``confidence`` CI to have the target half-width.

    The pilot is the latest run of each baseline on ``release_sha`` (default: the release of
    the most recent run, as ``trb report``) and ``split``. Δgov pairs the latest trace-full and
    trace-ablation runs (planned unless ``baseline`` names another baseline); Tracks 4 and 5
    are planned for every baseline whose latest run has their items, or for ``baseline`` only.
    ``half_width`` overrides :data:`DEFAULT_HALF_WIDTHS` by key (``delta_gov``, ``viab``, ``nav``).

    Returns ``{"release_sha", "split", "confidence", "half_widths", "release_choice",
    "quantities": [...]}``; each quantity has ``status`` "planned" (with ``estimate``,
    ``n_sessions``, ``m``, ``sd``, ``icc``, ``deff``, ``se``, ``half_width_now``, ``n_needed``,
    ``n_more``, ...), or "no pilot data" / "cannot plan" with a ``reason``.

    Raises:
        UsageError: a half-width or the confidence out of range.
        ResultsError: no store, no runs (on the release, split or baseline), or no quantity
            with a usable pilot.
    """
    halves = _half_widths(half_width)
    _check_confidence(confidence)
    from trb.report import runs_on_release

    release_sha, on_release, release_choice = runs_on_release(store, release_sha, "plan")
    runs = [r for r in on_release if r["split"] == split]
    if not runs:
        splits = sorted({str(r["split"]) for r in on_release})
        raise ResultsError(f"no runs on split {split} of release {release_sha}; splits with runs: {', '.join(splits)}")
    latest: dict[str, dict] = {}
    for r in runs:  # oldest first: the last one of each baseline wins (as in trb report)
        latest[r["baseline"] or "(unnamed)"] = r
    if baseline is not None and baseline not in latest:
        raise ResultsError(f"no run of baseline {baseline} on split {split} of release {release_sha}; baselines "
                           f"with runs: {', '.join(sorted(latest))}")

    quantities: list[dict] = []
    if baseline is None or baseline in (FULL, ABLATION):
        quantities.append(_delta_gov(store, latest, split, halves["delta_gov"], confidence))
    chosen = [latest[baseline]] if baseline is not None else [latest[b] for b in sorted(latest)]
    by_run = _condition_rows(store, [r["run_id"] for r in chosen])
    if not by_run:
        reason = ("the store's item_scores has no condition column (it was made before Tracks 4 and 5 existed): "
                  "there is no Track 4 or 5 pilot")
        quantities += [_no_pilot(q, baseline, reason) for q in ("viab", "nav")]
    else:
        for run in chosen:
            rows = by_run[run["run_id"]]
            if rows or baseline is not None:
                quantities += _condition_plans(run, rows, halves, confidence, skip_missing=baseline is None)
        for q, track, what in (("viab", "4", "completion"), ("nav", "5", "reach")):
            if not any(p["quantity"] == q for p in quantities):
                quantities.append(_no_pilot(q, None, f"no baseline's latest run on split {split} has Track {track} "
                                                     f"{what} items"))
    order = list(QUANTITIES)
    quantities.sort(key=lambda q: order.index(q["quantity"]))
    if not any(q["status"] == "planned" for q in quantities):
        raise ResultsError(f"no usable pilot in {store.path} (release {release_sha}, split {split}): "
                           + "; ".join(f"{q['quantity']}: {q['reason']}" for q in quantities))
    return {"release_sha": release_sha, "split": split, "confidence": confidence, "half_widths": halves,
            "release_choice": release_choice, "baseline": baseline, "method": METHOD, "quantities": quantities}


# -- rendering -------------------------------------------------------------------------------------

def _fmt(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:.{digits}f}"


def render_plan(plan: dict) -> str:
    """The plan as a readable table, one row per quantity and baseline, then the notes."""
    conf = round(plan["confidence"] * 100, 3)
    head = ["quantity", "baseline", "estimate", "sessions", "m", "SD", "ICC", "DEFF", "±now", "±target",
            "n needed", "more"]
    rows = [head]
    notes = []
    for q in plan["quantities"]:
        if q["status"] != "planned":
            rows.append([q["quantity"], q["baseline"] or "–", q["status"], *["–"] * (len(head) - 3)])
            notes.append(f"{q['quantity']} ({q['baseline'] or 'any baseline'}): {q['reason']}")
            continue
        rows.append([q["quantity"], q["baseline"], _fmt(q["estimate"]), _fmt(q["n_sessions"]), _fmt(q["m"], 1),
                     _fmt(q["sd"]), _fmt(q["icc"]), _fmt(q["deff"], 2), _fmt(q["half_width_now"]),
                     _fmt(q["half_width"]), _fmt(q["n_needed"]), _fmt(q["n_more"])])
        notes += [f"{q['quantity']} ({q['baseline']}): {n}" for n in q.get("notes", [])]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [f"Sessions to collect for a {conf:g}% CI of the target half-width (±target), from the pilot on "
             f"release {str(plan['release_sha'])[:12]}, split {plan['split']}:", ""]
    for i, r in enumerate(rows):
        lines.append("  ".join(v.ljust(w) if j < 2 else v.rjust(w) for j, (v, w) in enumerate(zip(r, widths))).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines += ["", "sessions: the pilot's sessions (Track 4/5: paired sessions); m: items per session; SD: per item "
                  "(Δgov) or per session",
              "(Track 4: delta method, Track 5: paired difference); ±now: the pilot's half-width; "
              "n needed = (z·SD/h)²·DEFF/m; more = n needed − sessions."]
    if plan.get("release_choice"):
        lines.append(plan["release_choice"])
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines)
