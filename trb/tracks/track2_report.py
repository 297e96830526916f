"""Track 2 in the report: its pass bar (the full − ablation gap of the detection AUC), its block of the JSON, its
sections (native tier, and proxy-tier grounding apart from it), and how its figures are labelled by tier.

Loaded by the report through the track's ``report`` attribute (:mod:`trb.report.sections`); the track module
itself never imports the report."""

from __future__ import annotations

import html
import math

import numpy as np
import pyarrow.compute as pc

from trb.report.columns import _columns
from trb.report.common import ABLATION, CONFIDENCE, FULL, _ci, _f, _metric
from trb.report.comparisons import _comparison
from trb.report.html_page import _HtmlNotes, _lines
from trb.results import ResultsStore
from trb.stats import Estimate
from trb.tracks.base import registered_tracks
from trb.tracks.track2 import PROXY_GROUNDING, PROXY_GROUNDING_NOTE

__all__ = ["PROXY_GROUNDING", "PROXY_GROUNDING_NOTE", "GROUND_DIRECTION", "ground_gap_by_session", "SECTION"]


GROUND_TRACK = "2"


GROUND_DIRECTION = (f"spec §3 Track 2: AUC materially above 0.5 and, for a native Trace-AI model, above a same-size "
                    f"model without L_gov ({FULL} above {ABLATION}; higher is better)")


def _ground_columns(store: ResultsStore, run: dict) -> dict[str, np.ndarray] | None:
    """A run's Track 2 ``grounding`` trials (every split, site, condition and strength) as columns; None when the
    run has none."""
    m = _metric("ground")
    names = ["item_id", "session_id", "split", "condition", "concept", "site_rank", "strength", "score", "cos_max"]
    table = store.items(run["run_id"], track=m.track, columns=["metric", *names])
    table = table.filter(pc.equal(table.column("metric"), m.metric))
    if table.num_rows == 0:
        return None
    return _columns(table, names)


def _ground_trials(cols: dict[str, np.ndarray], strength: float, concepts) -> dict[str, np.ndarray]:
    """The trials of a ``ground`` figure at ``strength`` over ``concepts`` (reported split, default site, injected
    and the zero null: :func:`trb.tracks.track2.headline_masks`, the selection ``aggregate`` makes) as columns:
    score, injected, concept, session_id, step (the step's item id)."""
    from trb.tracks.track2 import _report_mask, headline_masks

    inj, nm = headline_masks(cols, "zero", strength, _report_mask(cols)[0], concepts)
    sel = inj | nm
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


def _ground_statement(gap: Estimate, full: dict, abl: dict, at: dict | None = None) -> tuple[bool | None, str]:
    """Whether the Track 2 direction holds (True, False, or None: not established), said plainly; each part decided
    by its interval against its threshold, never by the point value (:mod:`trb.verdicts`). ``full`` and ``abl``:
    the two headline figures; ``at``: their AUCs at the shared strength (the gap's levels; default the headlines)."""
    chance = _metric("ground").chance
    parts, verdicts = [], []
    lo, hi = full.get("ci_low"), full.get("ci_high")
    if lo is not None and lo > chance:
        parts.append(f"{FULL} AUC above {chance} (its CI lies above {chance})")
        verdicts.append(True)
    elif hi is not None and hi <= chance:
        parts.append(f"{FULL} AUC NOT above {chance} (its CI lies at or below {chance}: {_f(full['score'])})")
        verdicts.append(False)
    else:
        parts.append(f"{FULL} AUC above {chance} not established ({_f(full['score'])}; its CI "
                     + (f"reaches {chance})" if lo is not None else "is not available)"))
        verdicts.append(None)
    levels = (f"{_f(full['score'])} vs {_f(abl['score'])}" if at is None else
              f"{_f(at[FULL])} vs {_f(at[ABLATION])} at the shared strength")
    top = (full.get("score"), abl.get("score")) if at is None else (at.get(FULL), at.get(ABLATION))
    if all(v is not None and v >= 1 - 1e-12 for v in top):  # both at AUC 1: no gap can show at this strength
        parts.append(f"full model above the ablation not established ({levels}: both at the ceiling, AUC 1, so the "
                     "gap cannot show a difference at this strength)")
        verdicts.append(None)
    elif gap.has_ci and gap.ci_low > 0:
        parts.append(f"full model above the ablation ({levels}; the gap's CI lies above 0)")
        verdicts.append(True)
    elif gap.has_ci and gap.ci_high <= 0:
        parts.append(f"full model NOT above the ablation ({levels}; the gap's CI lies at or below 0)")
        verdicts.append(False)
    else:
        parts.append(f"full model above the ablation not established ({levels}; the gap's CI "
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
    from trb.tracks.track2 import choose_shared_strength, headline_concepts

    cols = {b: _ground_columns(store, latest[(b, split)]) for b in (FULL, ABLATION)}
    if any(c is None for c in cols.values()):
        return _comparison(name, GROUND_DIRECTION, None, "a run has no Track 2 trials: the gap is not computed")
    shared = choose_shared_strength(cols[FULL], cols[ABLATION])
    kept = {b: headline_concepts(cols[b]) for b in (FULL, ABLATION)}
    concepts = [c for c in kept[FULL]["included"] if c in kept[ABLATION]["included"]]
    left = sorted({c for k in kept.values() for c in [*k["not_separable"], *k["too_few_trials"],
                                                          *k["included"]]} - set(concepts))
    more = {"strength": shared, "concepts": concepts, "left_out": left}
    if not concepts:
        return _comparison(name, GROUND_DIRECTION, None, "undefined: no concept is kept by both models' headlines",
                           **more)
    trials = {b: _ground_trials(cols[b], shared["strength"], concepts) for b in (FULL, ABLATION)}
    try:
        est, how = ground_gap_by_session(trials[FULL], trials[ABLATION], n_resamples=n_resamples,
                                         confidence=CONFIDENCE, seed=seed)
    except ValueError as e:
        return _comparison(name, GROUND_DIRECTION, None, f"undefined: {e}", **more)
    at = {b: detection_auc_by_session(t["score"], t["injected"], t["concept"], t["session_id"], n_resamples=0).value
          for b, t in trials.items()}
    met, statement = _ground_statement(est, figures[FULL], figures[ABLATION], at)
    return _comparison(name, GROUND_DIRECTION, est, bootstrap=how, direction_met=met, statement=statement,
                       tier="proxy" if tiers == {"proxy"} else "native", **more,
                       levels={b: {"score": figures[b].get("score"), "ci_low": figures[b].get("ci_low"),
                                   "ci_high": figures[b].get("ci_high"), "at_shared_strength": at[b]}
                               for b in (FULL, ABLATION)})


def _track2_summary(tables: list[dict], baselines: list[dict]) -> dict:
    """The report's Track 2 block: the pass bar's gap on each held-out split (the first one's as ``gap``), the
    rules, and which rows are native-tier and which proxy-tier grounding."""
    from trb.grounding import COSINE_FLAG
    from trb.tracks.track2 import (
        BUDGET_RULE,
        CHOICE_RULE,
        CHOICE_SPLIT,
        CONCEPT_RULE,
        MIN_TRIALS,
        SHARED_RULE,
        TARGET_WIDTH,
    )

    gaps = {t["split"]: next(c for c in t["pass_bars"] if c["direction"] == GROUND_DIRECTION)
            for t in tables if t.get("pass_bars")}
    scored = [b for b in baselines if (b["tracks"].get("ground") or {}).get("score") is not None]
    first = next((g for g in gaps.values() if g["value"] is not None), None)
    return {"direction": GROUND_DIRECTION, "gap": first, "gaps": gaps,
            "strength_rule": f"chosen on the {CHOICE_SPLIT} split only, never on eval: {CHOICE_RULE}",
            "gap_strength_rule": SHARED_RULE, "concept_rule": CONCEPT_RULE, "min_trials": MIN_TRIALS,
            "budget_rule": BUDGET_RULE, "target_width": TARGET_WIDTH,
            "cosine_threshold": COSINE_FLAG,
            "native_tier": [f"{b['name']} ({b['split']})" for b in scored if b["adapter_tier"] != "proxy"],
            "proxy_tier": {"label": PROXY_GROUNDING, "note": PROXY_GROUNDING_NOTE,
                           "baselines": [f"{b['name']} ({b['split']})" for b in scored if b["adapter_tier"] == "proxy"]}}


def _grounding_tier(tier: str | None) -> dict:
    """What a Track 2 figure of an adapter of ``tier`` carries: its tier, and on the proxy tier its label."""
    if tier == "proxy":
        return {"tier": "proxy", "label": PROXY_GROUNDING, "tier_note": PROXY_GROUNDING_NOTE}
    return {"tier": tier}


def _ground_capabilities() -> list[str]:
    """The capabilities Track 2 needs, by their recorded names (spec §3: activation-level access)."""
    from trb.adapters.capabilities import capability_name

    return [capability_name(c) for c in registered_tracks()[GROUND_TRACK].needs]


_GROUND_INTRO = ("Detection AUC of injected-vs-null trials (per concept, then averaged; session-bootstrap CI): ground "
                 "against the zero null (nothing injected), ground-rand against a random direction of the same norm "
                 "at the same strength. Both are read on the evaluated split's trials at the adapter's default site "
                 "and at the headline strength, chosen on the dev split alone, never on eval: {rule}. Concepts: "
                 "{concepts} (not separable: a direction cosine of at least {cos} with another concept's; their AUC "
                 "is not evidence of grounding). The pass bar's gap: {shared}. Trial budget: {budget}.")


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
    if entry.get("ci_low") is not None and entry["ci_low"] > chance:
        return f"CI above {chance}"
    if entry.get("ci_high") is not None and entry["ci_high"] <= chance:
        return f"NOT above {chance} (CI at or below {chance})"
    return f"above {chance} not established (" + ("CI reaches " if entry.get("ci_low") is not None else
                                                  "no CI: ") + f"{chance})"


def _strength_texts(entry: dict) -> tuple[str, str, list[tuple[str, float, bool]]]:
    """The headline strength, how it was chosen, and the dev AUCs by strength (strength, AUC, chosen)."""
    choice = entry["strength"]
    s = f"{choice['strength']:g}"
    how = "chosen on dev, never eval" if choice.get("split") == "dev" else choice["rule"]
    dev = [(k, v, k == s) for k, v in (choice.get("dev_auc_zero") or {}).items()]
    return s, how, dev


def _kept_short(entry: dict) -> str:
    """How many concepts the headline keeps and leaves out, in a few words (the names: :func:`_kept_text`)."""
    kept = entry.get("concepts")
    if not kept:
        return "—"
    out = len(kept["not_separable"]) + len(kept["too_few_trials"])
    return f"{len(kept['included'])} in headline" + (f", {out} left out" if out else "")


def _kept_text(entry: dict) -> str:
    """The concepts left out of the headline and the AUC over every concept, beside the headline."""
    kept = entry.get("concepts")
    if not kept:
        return "—"
    out = [f"{len(kept['included'])} in headline"]
    if kept["not_separable"]:
        out.append(f"not separable: {', '.join(kept['not_separable'])}")
    if kept["too_few_trials"]:
        out.append(f"under {kept['min_trials']} trials: " + ", ".join(f"{c} ({n})" for c, n in
                                                                     kept["too_few_trials"].items()))
    if kept["not_separable"] or kept["too_few_trials"]:
        out.append(f"all concepts: {_pair(kept.get('all_concepts'))}")
    return " · ".join(out)


def _width_text(entry: dict) -> str:
    """The CI width reached, beside the target of the default budget (or the explicit budget)."""
    width = (entry["ci_high"] - entry["ci_low"]) if entry.get("ci_low") is not None else None
    got = f"CI width {width:.3f}" if width is not None else "no CI"
    budget = entry.get("budget") or {}
    if budget.get("source") == "target_width":
        return f"{got} (target {budget['target_width']:g}; {budget['max_contexts']:,} contexts a split)"
    if budget.get("max_contexts"):
        return f"{got} (budget: {budget['max_contexts']:,} contexts a split)"
    return f"{got} (no budget)"


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
        thin = "" if fig.get("in_headline", True) else f" · left out: {fig.get('n_injected')} injected trials"
        return f"{_pair(fig)} · {cos}{thin}"
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
        strength = c.get("strength") or {}
        at = f"at one strength for both, {strength['strength']:g}" if strength else ""
        if strength.get("split") is None and strength:
            at += " (no dev trials: a priori)"
        left = f"; left out: {', '.join(c['left_out'])}" if c.get("left_out") else ""
        out.append(f"{c['comparison']} on {split} = {_f(c['value'], True)} {_ci(c, True)} ({at}{left}; "
                   f"{c['bootstrap']} session bootstrap; {c['n_sessions']:,} sessions, {c['n_items']:,} trials): "
                   f"{c['statement']}.")
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
    from trb.tracks.track2 import BUDGET_RULE, CHOICE_RULE, CONCEPT_RULE, SHARED_RULE

    return _GROUND_INTRO.format(rule=CHOICE_RULE, cos=COSINE_FLAG, concepts=CONCEPT_RULE, shared=SHARED_RULE,
                                budget=BUDGET_RULE)


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
                  "dev AUC vs zero null, by strength | concepts | flags |", "|" + "---|" * 9]
        for b in rows:
            g, gr = b["tracks"]["ground"], b["tracks"].get("ground-rand") or {}
            s, how, dev = _strength_texts(g)
            dev_text = " · ".join(f"**{k}: {_f(v)}**" if chosen else f"{k}: {_f(v)}" for k, v, chosen in dev) or "—"
            flags = "; ".join(f"⚠ {f}" for f in g.get("flags") or ()) or "none"
            cells = [b["name"], b["split"], f"{_f(g['score'])} {_ci(g)} · {g['n_items']:,} trials / "
                     f"{g['n_sessions']:,} sessions · {_width_text(g)}", f"{_f(gr.get('score'))} {_ci(gr)}",
                     _chance_text(g), f"{s} ({how})", dev_text, _kept_text(g), flags]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        heads = _ground_heads(rows)
        lines += ["", "AUC by activation site and strength on the evaluated split over the headline's concepts, vs the "
                  "zero null / vs the random null (◀ the headline: default site, strength chosen on dev):", "",
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
                _lines("headline", "strength"), _lines("dev AUC vs zero null", "by strength"),
                _lines("concepts", "left out")]
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
                     _lines(e(f"{_f(g['score'])} {_ci(g)}") + marks + notes.mark(_width_text(g)),
                            e(f"{g['n_items']:,} trials / {g['n_sessions']:,} sessions")),
                     _lines(e(f"{_f(gr.get('score'))} {_ci(gr)}")), _lines(chance), _lines(e(s), e(how)),
                     _lines(dev_text), _lines(e(_kept_short(g)) + notes.mark(_kept_text(g)))]
            body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        parts.append('<div class="wide"><table><thead><tr>' + "".join(f"<th>{h}</th>" for h in head)
                     + "</tr></thead><tbody>" + "".join(body) + "</tbody></table></div>")
        parts.append(notes.html())
        heads = _ground_heads(rows)
        parts.append("<p>AUC by activation site and strength on the evaluated split over the headline's concepts, vs "
                     "the zero null / vs the random null (◀ the headline: default site, strength chosen on dev):</p>")
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
                    thin = "" if fig.get("in_headline", True) else f" · left out: {fig.get('n_injected')} trials"
                    cells.append(_lines(e(_pair(fig)), e(f"max cos {fig['cos_max']:.3f}{thin}")))
                else:  # not separable: the AUC is shown greyed, under the flag, never as a signal
                    cells.append(_lines('<span class="red">⚠ not separable: not evidence</span>',
                                        e(f"({_pair(fig)}) · max cos {fig['cos_max']:.3f} ≥ {threshold}")))
            body.append(f'<tr><th scope="row">{e(concept)}</th>' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        parts.append('<div class="wide"><table><thead><tr><th>concept</th>'
                     + "".join(f"<th>{e(h)}</th>" for h in heads) + "</tr></thead><tbody>" + "".join(body)
                     + "</tbody></table></div>")
    return "\n".join(parts)


class Track2Report:
    """Track 2's part of the report (:mod:`trb.report.sections`)."""

    key = "track2"
    position = 20

    def entry_extra(self, metric, columns) -> dict:
        """The default site, where the headline figure is read."""
        default = columns["site"][columns["site_rank"] == 0] if "site_rank" in columns else ()
        return {"default_site": str(default[0])} if len(default) else {}

    def entry_label(self, metric, run: dict) -> dict:
        """Every Track 2 figure names its tier (proxy-tier grounding is not the spec's Track 2) and the run's trial
        budget (recorded in its summary; none on runs scored before the default budget)."""
        from trb.report.common import _timings

        budget = ((_timings(run).get("summary") or {}).get(GROUND_TRACK) or {}).get("budget")
        return {**_grounding_tier(run.get("adapter_tier")), **({"budget": budget} if budget else {})}

    def tier_title(self, metric, tier: str | None) -> str | None:
        """A proxy adapter's Track 2 figure under its own name, here as everywhere."""
        return f"{PROXY_GROUNDING} ({metric.title.partition(' (')[2]}" if tier == "proxy" else None

    def vector_needs(self, recorded: list[str] | None) -> str | None:
        """Whether or not Track 2 was asked for, an adapter without activation access could not have run it."""
        needs = _ground_capabilities()
        if needs and recorded is not None and not set(needs) <= set(recorded):
            return f"not applicable: needs activation access (Track 2, capability {', '.join(needs)})"
        return None

    def pass_bars(self, ctx, split: str, rows: list[dict]) -> list[dict]:
        return [_ground_gap(ctx.store, ctx.latest, split, rows, n_resamples=ctx.n_resamples, seed=ctx.seed)]

    def build(self, ctx) -> dict:
        return _track2_summary(ctx.report["tables"], ctx.report["baselines"])

    def markdown(self, report: dict, **_) -> list[str]:
        return _ground_markdown(report)

    def html(self, report: dict, **_) -> str:
        return _ground_html(report)


SECTION = Track2Report()
