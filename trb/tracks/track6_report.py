"""Track 6 in the report: each baseline's transfer figures (eval against each transfer context, the drop to the
worst one, the collapse and anti-Goodhart rules), the profile vector's ``trans`` entry, the ``track6`` block and the
Track 6 section. Loaded by the report through Track 6's ``report`` attribute (:mod:`trb.tracks.track6`)."""

from __future__ import annotations

import html
from dataclasses import replace

import numpy as np
import pyarrow.compute as pc

from trb.report.columns import _columns
from trb.report.common import CONFIDENCE, _ci, _f, _metrics, _timings
from trb.report.sections import section_of
from trb.results import ResultsStore
from trb.tracks.base import Metric, metric_by_key, registered_tracks
from trb.transfer import (
    AGAINST_OWN_ABLATION,
    REFERENCE_BASELINE,
    anti_goodhart,
    collapse_check,
    collapse_to_chance,
    transfer_estimate,
)
from trb.transfer import RULES as TRANSFER_RULES

__all__ = ["SECTION"]


def _metric_columns(store: ResultsStore, run: dict, m: Metric) -> dict[str, np.ndarray]:
    track = registered_tracks()[m.track]
    names = ["session_id", "context_id", "score"] + sorted({c.name for c in track.columns})
    table = store.items(run["run_id"], track=m.track, columns=["metric", *names])
    table = table.filter(pc.equal(table.column("metric"), m.metric))
    return _columns(table, names)


def _paired_gaps(store: ResultsStore, m: Metric, runs: tuple[dict, dict], ref_runs: tuple[dict, dict] | None, *,
                 n_resamples: int, seed: int, correction: dict | None = None) -> dict | None:
    """The figure minus the reference baseline's on the items both scored, with a paired session-bootstrap
    interval: on eval, and on each transfer context (``{"eval": {...}, "contexts": {id: {...}}}``). None for a figure
    without a paired difference (Track 1's G and Track 3's balanced accuracy have one).

    ``correction``: the figure's :func:`~trb.transfer.transfer_estimate` ``correction`` (k contexts, level
    1 − α/k): each of its contexts' gaps also gets ``corrected``, the interval at that level from the same seed's
    replicates (the same draws: only the percentiles differ), which the collapse rule reads."""
    from trb.report.comparisons import _paired_items
    from trb.stats import paired_balanced_accuracy_delta_by_session, paired_delta_by_session

    if ref_runs is None or m.key not in ("1", "3"):
        return None
    cols = ["score"] if m.key == "1" else ["label", "predicted"]
    opts = {"n_resamples": n_resamples, "confidence": CONFIDENCE, "seed": seed}
    out: dict = {"contexts": {}}
    for split, run, ref_run in (("eval", runs[0], ref_runs[0]), ("transfer", runs[1], ref_runs[1])):
        j = _paired_items(store, run, ref_run, m.track, m.metric, [*cols, "context_id"])
        ctx = np.asarray(j.column("context_id").to_pylist(), dtype=object)
        groups = [(None, np.ones(j.num_rows, dtype=bool))] if split == "eval" else \
            [(c, ctx == c) for c in sorted({str(c) for c in ctx if c is not None})]
        for c, sel in groups:
            sessions = np.asarray(j.column("session_id").to_pylist(), dtype=object)[sel]
            try:
                if m.key == "1":
                    a = j.column("score").to_numpy(zero_copy_only=False).astype(float)[sel]
                    b = j.column("score_b").to_numpy(zero_copy_only=False).astype(float)[sel]
                    e = paired_delta_by_session(a, b, sessions, **opts)
                else:
                    label, pa, pb = (np.asarray(j.column(n).to_pylist(), dtype=object)[sel]
                                     for n in ("label", "predicted", "predicted_b"))
                    e = paired_balanced_accuracy_delta_by_session(label, pa, pb, sessions, **opts)
            except ValueError:
                continue
            gap = {"value": e.value, "ci_low": _nan_none(e.ci_low), "ci_high": _nan_none(e.ci_high),
                   "n_items": e.n_items, "n_sessions": e.n_sessions}
            if c is not None and correction and c in correction.get("contexts", ()) and correction.get("confidence"):
                level = {**opts, "confidence": correction["confidence"]}
                e = (paired_delta_by_session(a, b, sessions, **level) if m.key == "1" else
                     paired_balanced_accuracy_delta_by_session(label, pa, pb, sessions, **level))
                gap["corrected"] = {"ci_low": _nan_none(e.ci_low), "ci_high": _nan_none(e.ci_high)}
            if c is None:
                out["eval"] = gap
            else:
                out["contexts"][c] = gap
    return out if "eval" in out else None


def _nan_none(x):
    return None if x is None or x != x else float(x)


def _transfer_figures(store: ResultsStore, name: str, ev: dict, tr: dict, ref: dict[str, dict | None], *,
                      n_resamples: int, seed: int, ref_runs: tuple[dict, dict] | None = None) -> dict:
    """Track 6 for one baseline: every headline figure of a release track, on eval and on each transfer context."""
    from trb.run import not_applicable_text

    figures: dict[str, dict] = {}
    summary = _timings(tr).get("summary") or {}
    for m in _metrics():
        if not m.headline:
            continue
        section = section_of(m.track)
        title = section.tier_title(m, tr.get("adapter_tier")) if hasattr(section, "tier_title") else None
        if title:  # proxy-tier grounding under its own name, here as everywhere
            m = replace(m, title=title)
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
        if m.key in AGAINST_OWN_ABLATION:  # Tracks 4 and 5: against the model's own ablation, never another baseline
            est["collapse"] = collapse_to_chance(est, m)
            without = _contexts_without_tasks(tr)
            if without:
                est["contexts_without_tasks"] = without
        gaps = None if m.key in AGAINST_OWN_ABLATION else _paired_gaps(store, m, (ev, tr), ref_runs, n_resamples=n_resamples, seed=seed,
                                                                  correction=est.get("correction")) \
            if ref_runs and name != REFERENCE_BASELINE and ref.get(m.key) is not None \
            and ref[m.key].get("title") == est["title"] else None
        if m.key not in AGAINST_OWN_ABLATION:
            est["collapse"] = collapse_check(est, ref.get(m.key), baseline=name, gaps=gaps)
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


#: The tracks Track 6 re-reads (spec §3 Track 6: "re-run Tracks 1–5 on each transfer context").
TRANSFER_OF = ("1", "2", "3", "4", "5")


def _contexts_without_tasks(run: dict) -> list[str]:
    """The release's transfer contexts the run's task set had no rollout task for (recorded with the run)."""
    info = run.get("taskset")
    if isinstance(info, str):
        import json

        # not strict_json: JSON the results store holds was written by ResultsStore itself (json.dumps of a run's figures)
        info = json.loads(info)
    return list(((info or {}).get("transfer") or {}).get("without_tasks") or ())


def _coverage(figures: dict, ok: dict, tracks: dict, ev: dict, tr: dict) -> dict:
    """Which of Tracks 1–5 the entry covers, and for each one it does not, why."""
    covers = sorted({tracks[k] for k in ok}, key=lambda t: (len(t), t))
    missing = {}
    for t in TRANSFER_OF:
        if t in covers:
            continue
        why = [f.get("note") or f.get("status") for k, f in figures.items() if tracks[k] == t]
        ran = {str(x) for x in (tr.get("tracks") or [])}
        missing[t] = why[0] if why else ("not run on the transfer split" if t not in ran else
                                         "no figure on both the eval and the transfer split")
    return {"covers": covers, "complete": not missing, "missing": missing}


def _trans_entry(store: ResultsStore, name: str, ev: dict | None, tr: dict | None, ref: dict[str, dict | None], *,
                 n_resamples: int, seed: int, ref_runs: tuple[dict, dict] | None = None) -> dict:
    if tr is None:
        return {"status": "not run", "note": "not run: no transfer-split run", "figures": {}, "flags": []}
    if ev is None:
        return {"status": "not run", "note": "not run: no eval-split run to measure the drop from", "figures": {},
                "flags": []}
    figures = _transfer_figures(store, name, ev, tr, ref, n_resamples=n_resamples, seed=seed, ref_runs=ref_runs)
    ok = {k: f for k, f in figures.items() if f.get("status") == "ok"}
    tracks = {k: metric_by_key(k).track for k in figures}
    cov = _coverage(figures, ok, tracks, ev, tr)
    out = {"status": "ok" if ok else "not run", "figures": figures,
           "covers": cov["covers"], "complete": cov["complete"], "missing": cov["missing"],
           "not_covered": {tracks[k]: f.get("note") or f.get("status") for k, f in figures.items() if k not in ok},
           "flags": [fl for f in figures.values() for fl in f.get("flags") or ()],
           "anti_goodhart": any(f["anti_goodhart"]["flagged"] for f in ok.values()),
           "collapsed": any(bool(f["collapse"].get("collapsed")) for f in ok.values()),
           "n_contexts": max((f["n_contexts"] for f in ok.values()), default=0),
           "eval_run_id": ev["run_id"], "transfer_run_id": tr["run_id"],
           "trained_by": tr.get("trained_by")}
    if not ok:
        out["note"] = "not run: no figure was scored on both the eval and the transfer split"
    return out


def _track6_rules_lines() -> list[str]:
    return [f"What is resampled: {TRANSFER_RULES['resampled']}.",
            f"Per-context verdicts: {TRANSFER_RULES['correction']}.",
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
    small = set(f.get("small_contexts") or ())
    text = "; ".join(f"{c['context_id']}: {_f(c['score'])} {_ci(c)} ({c['n_sessions']} sessions"
                     + (", no interval: not in the minimum)" if c["context_id"] in small else ")")
                     for c in f["contexts"])
    for u in f.get("undefined_contexts") or ():
        n = u["n_sessions"]
        text += (f"; {u['context_id']}: undefined ({u['reason']}; {n} session{'' if n == 1 else 's'}; not in the "
                 "minimum or the rules)")
    if f.get("contexts_without_tasks"):
        text += "; " + "; ".join(f"{c}: no rollout task in the task set (not scored)"
                                 for c in f["contexts_without_tasks"])
    return text


def _collapse_text(f: dict) -> str:
    c = f["collapse"]
    if not c["checked"]:
        return f"not checked ({c['note']})"
    fix = c.get("correction") or f.get("correction") or {}
    level = (f"; per-context intervals at {100 * fix['confidence']:.4g}%, Bonferroni over k = {fix['k']}"
             if fix.get("confidence") else "")
    if c["collapsed"]:
        return f"COLLAPSED on {', '.join(c['contexts'])}" + (f" ({level[2:]})" if level else "")
    if c["collapsed"] is None:
        return "not established" + (f" ({c['note']})" if c.get("note") else "")
    return "no" + (f" ({c['note']})" if c.get("note") else f" ({level[2:]})" if level else "")


def _track6_markdown(report: dict) -> list[str]:
    lines = ["", "## Track 6 — transfer and the anti-Goodhart line", ""]
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


def _track6_html(report: dict) -> str:
    e = html.escape
    parts = []
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
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    parts.append(f'<table class="prose"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')
    return "\n".join(parts)


def _vector_text(entry: dict) -> str:
    """The profile vector's ``trans`` entry in one line: each figure's worst context and drop, and the flags."""
    parts = []
    for f in entry["figures"].values():
        if f.get("status") != "ok":
            parts.append(f"{f['title']}: {f.get('note')}")
            continue
        parts.append(f"{f['title']}: min {_f(f['min']['score'])} {_ci(f['min'])} on {f['min']['context_id']}, "
                     f"drop {_f(f['drop']['value'], True)} {_ci(f['drop'], True)} ({f['n_contexts']} contexts)")
    text = "; ".join(parts)
    if entry.get("covers") is not None:
        head = f"covers Track(s) {', '.join(entry['covers']) or 'none'}"
        if entry.get("missing"):
            head += " (incomplete: " + "; ".join(f"Track {t}: {why}" for t, why in entry["missing"].items()) + ")"
        elif entry.get("complete"):
            head += " (complete: Tracks 1–5)"
        text = f"{head}: {text}"
    if entry.get("anti_goodhart"):
        text += " · ⚠ ANTI-GOODHART FLAG"
    if entry.get("collapsed"):
        text += " · ⚠ COLLAPSE"
    return text


class Track6Report:
    """Track 6's part of the report (:mod:`trb.report.sections`): the profile vector's ``trans`` entry, the
    ``track6`` block, and its section after the profile vector."""

    key = "track6"
    position = 60
    vector_entry = "trans"

    def vectors(self, ctx, names: list[str]) -> dict[str, dict]:
        """Each baseline's ``trans`` entry; a collapse is read against the reference baseline's figures."""
        ref: dict[str, dict | None] = {}
        ref_ev, ref_tr = ctx.latest.get((REFERENCE_BASELINE, "eval")), ctx.latest.get((REFERENCE_BASELINE, "transfer"))
        if ref_ev is not None and ref_tr is not None:
            figs = _transfer_figures(ctx.store, REFERENCE_BASELINE, ref_ev, ref_tr, {}, n_resamples=0, seed=ctx.seed)
            ref = {k: f for k, f in figs.items() if f.get("status") == "ok"}
        ref_runs = (ref_ev, ref_tr) if ref_ev is not None and ref_tr is not None else None
        return {name: _trans_entry(ctx.store, name, ctx.latest.get((name, "eval")), ctx.latest.get((name, "transfer")),
                                   ref, n_resamples=ctx.n_resamples, seed=ctx.seed, ref_runs=ref_runs)
                for name in names}

    def vector_text(self, entry: dict) -> str:
        return _vector_text(entry)

    def vector_alarm(self, entry: dict) -> bool:
        return bool(entry.get("anti_goodhart") or entry.get("collapsed"))

    def profile_point(self, entry: dict) -> dict:
        """What the profile plot draws for ``trans``: the drop eval − min over contexts of the first figure computed."""
        from trb.report.vector import PROFILE_VECTOR

        figs = {k: f for k, f in entry["figures"].items() if f.get("status") == "ok"}
        fkey, f = next(iter(figs.items()))
        name = next((n for n, k in PROFILE_VECTOR if k == fkey), fkey)
        return {"value": f["drop"]["value"], "lo": f["drop"]["ci_low"], "hi": f["drop"]["ci_high"], "null": 0.0,
                "label": f"trans\n({name} drop)", "open": False}

    def build(self, ctx) -> dict:
        profile_vectors = ctx.report["profile_vectors"]
        return {"rules": dict(TRANSFER_RULES),
                "anti_goodhart_flagged": [f"{p['name']}: {f['anti_goodhart']['reason']}" for p in profile_vectors
                                          for f in p["vector"]["trans"]["figures"].values()
                                          if f.get("status") == "ok" and f["anti_goodhart"]["flagged"]],
                "collapsed": [f"{p['name']}: {f['title']} on {', '.join(f['collapse']['contexts'])}"
                              for p in profile_vectors for f in p["vector"]["trans"]["figures"].values()
                              if f.get("status") == "ok" and f["collapse"].get("collapsed")]}

    def markdown(self, report: dict, **_) -> list[str]:
        return _track6_markdown(report)

    def html(self, report: dict, **_) -> str:
        return _track6_html(report)


SECTION = Track6Report()
