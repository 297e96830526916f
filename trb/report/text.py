"""The report's words, shared by its Markdown and HTML: a figure's cell, the Δgov line, the pass-bar lines, which
figures go in the main table."""

from __future__ import annotations

from trb.report.common import ABLATION, FULL, _ci, _f, _metric, _metrics, _title
from trb.tracks.base import registered_tracks
from trb.verdicts import FLAGGED, verdict_short


def _cell(entry: dict | None) -> str:
    if entry is None:
        return "—"
    if entry.get("score") is None:
        text = f"n/a ({entry.get('note', 'no score')})"
        if entry.get("label"):  # an undefined proxy-tier grounding is still named as such
            text = f"{entry['label']}: {text}"
        return text + (f" · {entry['cg1_reading']}" if entry.get("cg1_reading") else "")
    text = f"{_f(entry['score'])} {_ci(entry)} · {entry['n_items']:,} items / {entry['n_sessions']:,} sessions"
    if entry.get("label"):  # proxy-tier grounding: named as such wherever it is shown
        text = f"{entry['label']}: {text}"
    slices = entry.get("slices") or {}
    for name, label in (("adversarial", "adversarial r′"), ("ood", "OOD r′")):
        if name in slices:
            text += f" · {label}: {_f(slices[name]['score'])} ({slices[name]['n_items']:,} items)"
    for flag in entry.get("flags") or ():
        text += f" · ⚠ FLAG: {flag}"
    for v in entry.get("verdicts") or ():  # a flagged one is among the flags
        if v["verdict"] != FLAGGED:
            text += f" · {verdict_short(v)}"
    if entry.get("cg1_reading"):
        text += f" · {entry['cg1_reading']}"
    if entry.get("waiting"):  # items of the run the figure waits for (Track 1: Φ pending): never silently left out
        text += f" · {entry['waiting']}"
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


def _split_title(table: dict) -> str:
    if table["held_out"]:
        return f"Split {table['split']} (held out)"
    return f"Split {table['split']} (not held out: these rows measure fit, not generalisation; no Δgov)"


def _definitions(keys: list[str]) -> str:
    return "Track definitions: " + "; ".join(f"{_title(k)}: {_metric(k).definition}" for k in keys) + "."


def verdict_rules(keys: list[str], confidence: float) -> list[str]:
    """Each verdict the shown figures carry, with its rule (trb.verdicts): one line per figure."""
    return [f"{_title(k)}: {_metric(k).verdict.name}: {_metric(k).verdict.rule(confidence)}" for k in keys
            if _metric(k).verdict is not None]


_SLICES = (("adversarial", "adversarial r′"), ("ood", "OOD r′"))
