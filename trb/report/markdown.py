"""The report as Markdown: banner (if smoke), facts, one baseline × track table per split, Δgov, then the
sections in their positions (each track's own, the profile vector), the notes, the plot link."""

from __future__ import annotations

from pathlib import Path

from trb.report.common import SMOKE_BANNER, _metric, _missing_text, _title
from trb.report.not_scored import not_scored_lines
from trb.report.sections import positioned_sections
from trb.report.text import (
    _cell,
    _definitions,
    _delta_line,
    _delta_text,
    _has_share,
    _header_facts,
    _is_main,
    _more_lines,
    _pass_bar_lines,
    _share,
    _split_title,
    _track_keys,
    verdict_rules,
)
from trb.report.vector import CORE_SECTIONS

__all__ = ["render_markdown"]


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
        unscored = not_scored_lines(table)
        if unscored:
            lines += ["", "Items not scored or waiting, by reason (every item of the split is counted):", ""]
            lines += [f"- {line}" for line in unscored]
        lines += ["", _delta_line(table["delta_gov"], table["delta_gov_note"], b["confidence"], table["split"]), ""]
        if table.get("pass_bars"):
            lines += [f"Pass-bar comparisons on {table['split']} (directions with their numbers, not verdicts; "
                      "spec §3: pass bars are provisional):", ""]
            lines += [f"- {line}" for line in _pass_bar_lines(table)] + [""]
    lines += [f"**{_delta_text(report)}**", ""]
    for section in positioned_sections(CORE_SECTIONS):  # each track's sections and the profile vector's
        lines += section.markdown(report, profiles_path=profiles_path)
    for note in report.get("notes") or []:
        lines.append(f"- Note: {note}")
    if report.get("notes"):
        lines.append("")
    lines += [_definitions(all_keys), ""]
    rules = verdict_rules(all_keys, b["confidence"])
    if rules:  # every verdict by its interval, never its point value (trb.verdicts)
        lines += ["Verdict rules (by the figure's interval, never its point value):", ""]
        lines += [f"- {r}" for r in rules] + [""]
    if plot_path is not None:
        lines += [f"![TRB per-track profile with 95% CIs]({Path(plot_path).as_posix()})", ""]
    return "\n".join(lines)
