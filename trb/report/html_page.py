"""The report as one self-contained HTML page (the Markdown's content, tables turned to fit a page, the plots
embedded)."""

from __future__ import annotations

import html

from trb.report.common import SMOKE_BANNER, _ci, _f, _metric, _title
from trb.report.figures import _plot_svg, _profiles_svg
from trb.report.not_scored import not_scored_lines
from trb.report.sections import positioned_sections
from trb.report.text import (
    _SLICES,
    _delta_line,
    _delta_text,
    _has_share,
    _is_main,
    _pass_bar_lines,
    _share,
    _split_title,
    _track_keys,
    verdict_rules,
)
from trb.report.vector import CORE_SECTIONS
from trb.tracks.track2 import PROXY_GROUNDING
from trb.verdicts import FLAGGED, verdict_short

__all__ = ["render_html"]


#: The HTML page's style. The plots scale down to their column, never past it; a table cell holds a score and its
#: CI on one line and its counts on a second, neither wrapping. A table wider than its column (more baselines than
#: the window has room for) scrolls in its own panel, never the page: the panel is at most a window high, so its
#: scrollbar is on screen whenever its top is, and its header row and first column stay in view as it scrolls.
#: A table of prose (``prose``: the profile vector, Track 6) wraps its text to the column instead.
_CSS = (
    "body{font-family:system-ui,sans-serif;line-height:1.4;max-width:80rem;margin:1rem auto;padding:0 1rem}"
    "p,ul,ol{max-width:62rem}h1,h2,h3{overflow-wrap:anywhere}"
    ".wide{overflow:auto;max-height:calc(100vh - 3rem);margin:.5rem 0;border:1px solid #bbb;width:fit-content;"
    "max-width:100%;box-sizing:border-box}"
    "table{border-collapse:separate;border-spacing:0;font-size:.8125rem}"
    "th,td{border:solid #bbb;border-width:0 1px 1px 0;padding:.25rem .3rem;text-align:left;vertical-align:top;"
    "background:#fff}"
    ".wide tr>:last-child{border-right:0}.wide tbody tr:last-child>*{border-bottom:0}"
    "thead th{background:#f2f2f2}tbody th{font-weight:normal;min-width:12rem}"
    ".wide thead th{position:sticky;top:0;z-index:2}.wide thead th:first-child{left:0;z-index:3}"
    ".wide tbody tr>:first-child{position:sticky;left:0;z-index:1}"
    "tbody th.group{font-weight:bold;background:#fafafa}.wide tbody th.group{position:static}"
    ".wide th.group>span{display:inline-block;position:sticky;left:.3rem}sup{line-height:0}"
    "th>span,td>span{display:block;white-space:nowrap}"
    "table.prose{width:100%;border:1px solid #bbb;border-width:1px 0 0 1px;margin:.5rem 0}"
    ".prose th,.prose td{white-space:normal;overflow-wrap:break-word}.prose td>span{display:inline;white-space:normal}"
    ".sub{color:#555;font-size:.75rem}"
    "code.run{display:inline-block;width:16ch;word-break:break-all;font-size:.75rem}"
    "a.flag{color:#b00020;text-decoration:none;font-weight:bold}span.red{color:#b00020;font-weight:bold}"
    "span.tier{color:#7a4f00;font-style:italic}.grey{color:#777}"
    "ol.flags{font-size:.8125rem}"
    "img,svg.plot{display:block;max-width:100%;height:auto}"
    ".banner{background:#b00020;color:#fff;font-size:1.4rem;font-weight:bold;padding:1rem;margin:1rem 0}"
    ".delta{font-size:1.1rem;font-weight:bold}code{font-size:.9em;overflow-wrap:anywhere}"
    "@media print{.wide{max-height:none;overflow:visible}}"  # on paper a panel shows its whole table
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
        cg1 = notes.mark(entry["cg1_reading"]) if entry.get("cg1_reading") else ""
        if len(note) <= 24:
            return _lines("n/a" + cg1, e(note))
        return _lines("n/a" + notes.mark(f"n/a: {note}") + cg1)
    marks = "".join(notes.mark(f"⚠ FLAG: {flag}") for flag in entry.get("flags") or ())
    marks += "".join(notes.mark(verdict_short(v)) for v in entry.get("verdicts") or () if v["verdict"] != FLAGGED)
    if entry.get("cg1_reading"):
        marks += notes.mark(entry["cg1_reading"])
    if entry.get("waiting"):  # items of the run the figure waits for (Track 1: Φ pending)
        marks += notes.mark(entry["waiting"])
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
    body = "".join(f'<tr><th class="group" colspan="{len(bases) + 1}"><span>{e(track)}</span></th></tr>' + "".join(rows)
                   for track, rows in groups.items() if rows)
    if not body:
        return ""
    head = "<th>figure</th>" + "".join(f"<th>{_lines(e(b['name']), e(str(b['adapter_tier'])))}</th>" for b in bases)
    return (f"<p>Reference points, threshold-free figures (the same items as the headline figures) and slices of "
            f"the headline figures on {e(table['split'])}: one row per figure, one column per baseline.</p>"
            f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>')


def render_html(report: dict) -> str:
    """The report as one self-contained HTML page (each split's tables, a row per figure and a column per
    baseline; Track 2's sections; the profile vector with its plot; Track 6; the per-track plot; both plots
    inline as SVG).

    The page fits a 1,280 px window: the plots scale down to their column, each table cell holds its score and
    CI on one line and its counts on a second, and flags and long notes are numbered under each split's tables.
    """
    e = html.escape
    all_keys = _track_keys(report)
    keys = [k for k in all_keys if _is_main(k)]
    more = [k for k in all_keys if not _is_main(k)]
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
        unscored = not_scored_lines(table)
        if unscored:
            parts.append("<p>Items not scored or waiting, by reason (every item of the split is counted):</p><ul>"
                         + "".join(f"<li>{e(line)}</li>" for line in unscored) + "</ul>")
        parts.append(f"<p>{e(_delta_line(table['delta_gov'], table['delta_gov_note'], b['confidence'], table['split']))}</p>")
        if table.get("pass_bars"):
            parts.append(f"<p>Pass-bar comparisons on {e(table['split'])} (directions with their numbers, not "
                         "verdicts; spec §3: pass bars are provisional):</p><ul>"
                         + "".join(f"<li>{e(line)}</li>" for line in _pass_bar_lines(table)) + "</ul>")
    parts.append(f'<p class="delta">{e(_delta_text(report))}</p>')
    profiles_svg = _profiles_svg(report)
    for section in positioned_sections(CORE_SECTIONS):  # each track's sections and the profile vector's
        parts.append(section.html(report, profiles_svg=profiles_svg))
    if report.get("notes"):
        parts.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in report["notes"]) + "</ul>")
    parts.append("<p>Track definitions:</p><ul>"
                 + "".join(f"<li>{e(_title(k))}: {e(_metric(k).definition)}</li>" for k in all_keys) + "</ul>")
    rules = verdict_rules(all_keys, b["confidence"])
    if rules:  # every verdict by its interval, never its point value (trb.verdicts)
        parts.append("<p>Verdict rules (by the figure's interval, never its point value):</p><ul>"
                     + "".join(f"<li>{e(r)}</li>" for r in rules) + "</ul>")
    parts.append(f'<div class="plot">{_plot_svg(report)}</div>')
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p) + "\n"
