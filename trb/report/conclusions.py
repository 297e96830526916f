"""The report's conclusions: every verdict it gives, with its figures, as one table a document can quote.

:func:`conclusions` reads a built report (:func:`trb.report.build_report`'s dict) and lists each conclusion the
report draws, each with the figure and interval it was decided from and the verdict's words:

* Δgov and the pass bars of the evaluated split (their readings: the CI against 0 or the falsifier's band);
* every figure a track gives a verdict on (``Metric.verdict``: the flags of Tracks 4 and 5), per baseline, with
  CG-1's reading beside Track 4's figures;
* Track 6's anti-Goodhart and collapse verdicts per baseline and figure.

Nothing is typed by hand: ``trb-demo`` writes its run's conclusions (``conclusions.json`` and
``conclusions.md``), the README and ``docs/demo-conclusions.md`` quote that block between markers, and the demo's
end-to-end test regenerates it from a fresh demo and fails on a difference (:func:`quoted_block`).
:func:`stability` compares the conclusions of several seeds: a verdict that differs between seeds is reported as
unstable, with what each seed said.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["conclusions", "stability", "render_conclusions", "quoted_block", "replace_block", "BLOCK"]

#: The marker names of the quoted block in the README and the docs.
BLOCK = "demo-conclusions"


def _fig(value, lo=None, hi=None, signed: bool = False) -> str:
    if value is None:
        return "undefined"
    f = "+.3f" if signed else ".3f"
    if lo is None or hi is None:
        return f"{value:{f}} (no interval)"
    return f"{value:{f}} [{lo:{f}}, {hi:{f}}]"


def _cg1(cg: Mapping) -> str:
    return (f"CG-1: {cg['reading']} (p = {cg['p_value']:.3g}, power {cg['power']:.2f} at {cg['effect']:g}, "
            f"{cg['n_used']} pairs)")


def conclusions(report: Mapping, *, split: str = "eval") -> dict:
    """The conclusions of ``report`` on ``split``: ``{"header": {...}, "rows": [{"id", "what", "figure",
    "verdict"}]}``, rows in the report's order (``id`` is stable across seeds: it names the conclusion, not its
    outcome)."""
    header = {"trb_version": report.get("trb_version"), "release_sha": report.get("release_sha"),
              "smoke_test": bool(report.get("smoke_test")), "split": split,
              "seed": (report.get("bootstrap") or {}).get("seed")}
    rows: list[dict] = []

    def add(id_: str, what: str, figure: str, verdict: str) -> None:
        rows.append({"id": id_, "what": what, "figure": figure, "verdict": verdict})

    table = next((t for t in report.get("tables", []) if t.get("split") == split), None)
    dg = (table or {}).get("delta_gov") or report.get("delta_gov")
    if dg:
        add("delta_gov", "Δgov = G(trace-full) − G(trace-ablation)",
            _fig(dg.get("value"), dg.get("ci_low"), dg.get("ci_high"), signed=True),
            "CI above 0" if dg.get("ci_low") is not None and dg["ci_low"] > 0 else
            "CI below 0" if dg.get("ci_high") is not None and dg["ci_high"] < 0 else "CI includes 0")
    for pb in (table or {}).get("pass_bars") or []:
        add(f"pass:{pb['comparison']}", pb["comparison"], _fig(pb.get("value"), pb.get("ci_low"), pb.get("ci_high"),
                                                               signed=True), pb.get("reading", ""))
    for b in (table or {}).get("baselines") or []:
        for key, e in (b.get("tracks") or {}).items():
            for v in e.get("verdicts") or []:
                verdict = v["verdict"]
                if e.get("cg1"):
                    verdict = f"{verdict}; {_cg1(e['cg1'])}"
                add(f"{b['name']}:{key}:{v['name']}", f"{b['name']} {key}: {v['name']}",
                    _fig(v.get("value"), v.get("ci_low"), v.get("ci_high")), verdict)
    for p in report.get("profile_vectors") or []:
        trans = (p.get("vector") or {}).get("trans") or {}
        for key, f in sorted((trans.get("figures") or {}).items()):
            drop = f.get("drop") or {}
            figure = f"drop {_fig(drop.get('value'), drop.get('ci_low'), drop.get('ci_high'), signed=True)}"
            for rule in ("anti_goodhart", "collapse"):
                v = f.get(rule) or {}
                if v.get("verdict") in (None, "not checked", "not applicable"):
                    continue
                name = "anti-Goodhart" if rule == "anti_goodhart" else "collapse"
                shown = figure
                gaps = ((v.get("paired") or {}).get("contexts") or {}) if rule == "collapse" else {}
                if gaps:  # the collapse is decided by the paired gaps to instruct-base: show the worst context's,
                    # with the corrected interval the verdict read (Bonferroni over the figure's k contexts)
                    ctx, g = min(gaps.items(), key=lambda kv: (kv[1]["value"], kv[0]))
                    fix, cg = v.get("correction") or {}, g.get("corrected")
                    if cg and fix.get("confidence"):
                        shown = (f"gap to instruct-base on {ctx}: "
                                 f"{_fig(g['value'], cg.get('ci_low'), cg.get('ci_high'), signed=True)} "
                                 f"({100 * fix['confidence']:.4g}% interval, Bonferroni over k = {fix['k']})")
                    else:
                        shown = (f"gap to instruct-base on {ctx}: "
                                 f"{_fig(g['value'], g.get('ci_low'), g.get('ci_high'), signed=True)}")
                add(f"{p['name']}:trans:{key}:{rule}", f"{p['name']} Track 6 of {key}: {name}", shown, v["verdict"])
    return {"header": header, "rows": rows}


def _outcome(verdict: str) -> str:
    """The verdict without its figures (what must agree between seeds): up to the first ';' or '('."""
    return re.split(r"[;(]", verdict, maxsplit=1)[0].strip()


def stability(by_seed: Mapping[int, Mapping]) -> dict:
    """Compare the conclusions of several seeds (seed -> :func:`conclusions`): per conclusion id, each seed's
    outcome and whether they agree. Returns ``{"seeds": [...], "rows": {id: {"outcomes": {seed: outcome},
    "stable": bool}}, "n_stable", "n_unstable"}``; a conclusion missing at a seed counts as unstable."""
    seeds = sorted(by_seed)
    ids: dict[str, None] = {}
    for s in seeds:
        for r in by_seed[s]["rows"]:
            ids.setdefault(r["id"], None)
    rows = {}
    for id_ in ids:
        outcomes = {}
        for s in seeds:
            hit = next((r for r in by_seed[s]["rows"] if r["id"] == id_), None)
            outcomes[str(s)] = _outcome(hit["verdict"]) if hit else "absent"
        rows[id_] = {"outcomes": outcomes, "stable": len(set(outcomes.values())) == 1}
    n_unstable = sum(not r["stable"] for r in rows.values())
    return {"seeds": seeds, "rows": rows, "n_stable": len(rows) - n_unstable, "n_unstable": n_unstable}


def render_conclusions(c: Mapping, stable: Mapping | None = None, *, only: tuple[str, ...] | None = None) -> str:
    """Markdown: the header line and a table (conclusion, figure [95% CI], verdict, and, given ``stable``
    (:func:`stability`), whether the seeds agree). ``only``: the id prefixes to keep (the README's short block)."""
    h = c["header"]
    label = "SMOKE TEST (simulated release): not a TRB score. " if h["smoke_test"] else ""
    lines = [f"{label}TRB {h['trb_version']}, release {(h['release_sha'] or '')[:12]}, split {h['split']}, "
             f"seed {h['seed']}."]
    if stable is not None:
        seeds = ", ".join(str(s) for s in stable["seeds"])
        lines.append(f"Across seeds {seeds}: {stable['n_stable']} conclusions agree, {stable['n_unstable']} differ "
                     "(marked unstable, with each seed's verdict).")
    lines += ["", "| conclusion | figure [95% CI] | verdict |" + (" seeds |" if stable is not None else ""),
              "|---|---|---|" + ("---|" if stable is not None else "")]
    for r in c["rows"]:
        if only is not None and not r["id"].startswith(only):
            continue
        cells = [r["what"], r["figure"], r["verdict"]]
        if stable is not None:
            s = stable["rows"].get(r["id"])
            cells.append("stable" if s and s["stable"] else
                         "UNSTABLE: " + "; ".join(f"{k}: {v}" for k, v in s["outcomes"].items()) if s else "not compared")
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return "\n".join(lines) + "\n"


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def quoted_block(path: str | Path, name: str = BLOCK) -> str | None:
    """The text between ``<!-- name:start -->`` and ``<!-- name:end -->`` in ``path`` (None: no such block)."""
    text = Path(path).read_text(encoding="utf-8")
    start, end = _markers(name)
    if start not in text or end not in text:
        return None
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n") + "\n"


def replace_block(path: str | Path, block: str, name: str = BLOCK) -> bool:
    """Put ``block`` between the markers in ``path``; returns whether the file changed. The markers must exist."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    start, end = _markers(name)
    if start not in text or end not in text:
        raise ValueError(f"{p}: no {start} … {end} block to replace")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    new = f"{head}{start}\n{block.rstrip(chr(10))}\n{end}{tail}"
    if new != text:
        p.write_text(new, encoding="utf-8")
    return new != text
