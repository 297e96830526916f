"""The profile vector of spec §1 (G, ground, attr, viab, nav, trans), per baseline: each entry on its own.

Each entry is a figure of a baseline's eval run, except ``trans``, which Track 6 computes from the baseline's
eval and transfer runs through its report section (``vector_entry``, :mod:`trb.tracks.track6`)."""

from __future__ import annotations

import html
from pathlib import Path

from trb.report.common import _baseline_key, _ci, _f
from trb.report.sections import PROFILE_VECTOR_POSITION, ReportContext, report_sections, section_of
from trb.report.text import _SLICES
from trb.tracks.base import metric_by_key
from trb.verdicts import FLAGGED, NOT_ESTABLISHED

__all__ = ["PROFILE_VECTOR", "PROFILE_VECTOR_POSITION"]


#: The profile vector of spec §1, in order: entry name -> the report key of its figure (trans: Track 6's own).
PROFILE_VECTOR = (("G", "1"), ("ground", "ground"), ("attr", "3"), ("viab", "viab"), ("nav", "nav"),
                  ("trans", None))


def _vector_section(entry: str):
    """The report section that computes profile-vector entry ``entry`` itself (Track 6's ``trans``), or None."""
    return next((s for _, s in report_sections() if getattr(s, "vector_entry", None) == entry), None)


def _vector_entry(row: dict | None, key: str) -> dict:
    """A profile-vector entry from a baseline's eval row: its figure, or what it is not, and why."""
    if row is None:
        return {"status": "not run", "note": "not run: no eval-split run"}
    section = section_of(metric_by_key(key).track)
    if section is not None and hasattr(section, "vector_needs"):  # Track 2: activation access, recorded or not
        note = section.vector_needs(row.get("capabilities"))
        if note:
            return {"status": "not applicable", "note": note}
    e = row["tracks"].get(key)
    if e is None:
        return {"status": "not run", "note": "not run: not in the eval run"}
    if e.get("not_applicable"):
        return {"status": "not applicable", "note": e.get("note")}
    if e.get("score") is None:  # undefined is its own status, never "not run"
        status = e.get("status") if e.get("status") in ("undefined", "no items") else "not run"
        return {"status": status, "note": e.get("note") or "no score"}
    return {"status": "ok", **{k: e.get(k) for k in ("score", "ci_low", "ci_high", "n_items", "n_sessions",
                                                    "slices", "flags", "red", "tier", "label", "tier_note",
                                                    "verdicts")
                               if e.get(k) is not None}}


def _profile_vectors(ctx: ReportContext) -> list[dict]:
    names = sorted({b for b, _ in ctx.latest}, key=_baseline_key)
    computed = {entry: _vector_section(entry).vectors(ctx, names) for entry, key in PROFILE_VECTOR if key is None}
    out = []
    for name in names:
        row = next((b for b in ctx.baselines if b["name"] == name and b["split"] == "eval"), None)
        vector = {}
        for entry, key in PROFILE_VECTOR:
            vector[entry] = computed[entry][name] if key is None else _vector_entry(row, key)
        any_row = row or next(b for b in ctx.baselines if b["name"] == name)
        out.append({"name": name, "adapter_tier": any_row["adapter_tier"], "vector": vector})
    return out


def _vector_text(entry: dict, name: str) -> str:
    """A profile-vector entry in one line (Markdown, and the HTML cell's text)."""
    if entry.get("status") != "ok":
        return entry.get("note") or entry.get("status", "—")
    section = _vector_section(name)
    if section is not None:
        return section.vector_text(entry)
    text = f"{_f(entry['score'])} {_ci(entry)}"
    if entry.get("label"):
        text = f"{entry['label']}: {text}"
    verdicts = entry.get("verdicts") or ()
    named = {v["name"] for v in verdicts}
    for flag in entry.get("flags") or ():  # the flag's name; the split tables and Track 2's section say more
        name = flag.split(":")[0] if not flag.startswith("RED: ") else flag[5:].split(":")[0]
        if name not in named:
            text += f" · ⚠ {name}"
    for v in verdicts:
        if v["verdict"] == FLAGGED:
            text += f" · ⚠ {'RED: ' if v['red'] else ''}{v['name']}"
        elif v["verdict"] == NOT_ESTABLISHED:
            text += f" · {v['name']}: not established"
    for slice_name, label in _SLICES:  # R*'s adversarial and OOD slices stand beside Track 1 (spec §5)
        sl = (entry.get("slices") or {}).get(slice_name)
        if sl:
            text += f" · {label}: {_f(sl['score'])} ({sl['n_items']:,} items)"
    return text


class ProfileVectorSection:
    """The profile vector's table, and its plot under it, among the tracks' sections."""

    def markdown(self, report: dict, *, profiles_path: Path | None = None, **_) -> list[str]:
        from trb.report.figures import _PROFILES_ALT

        lines = ["## Profile vector (G, ground, attr, viab, nav, trans)", "",
                 "Each entry on its own (never combined); G, attr, viab and nav from the eval split; trans is Track 6 "
                 "(transfer split against eval).", "",
                 "One row per entry, one column per baseline (its adapter tier in brackets).", ""]
        profiles = report.get("profile_vectors") or ()
        lines += ["| entry | " + " | ".join(f"{p['name']} ({p['adapter_tier']})" for p in profiles) + " |",
                  "|" + "---|" * (1 + len(profiles))]
        for n, _ in PROFILE_VECTOR:
            cells = [n] + [_vector_text(p["vector"][n], n) for p in profiles]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        if profiles_path is not None:
            lines += ["", f"![{_PROFILES_ALT}]({Path(profiles_path).as_posix()})"]
        return lines

    def html(self, report: dict, *, profiles_svg: str | None = None, **_) -> str:
        e = html.escape
        parts = ["<h2>Profile vector (G, ground, attr, viab, nav, trans)</h2>",
                 "<p>Each entry on its own (never combined); G, attr, viab and nav from the eval split; trans is "
                 "Track 6 (transfer split against eval).</p>"]
        head = "".join(f"<th>{e(h)}</th>" for h in ["baseline", "tier", *(n for n, _ in PROFILE_VECTOR)])
        body = []
        for p in report.get("profile_vectors") or ():
            cells = [e(p["name"]), e(str(p["adapter_tier"]))]
            for n, _ in PROFILE_VECTOR:
                entry = p["vector"][n]
                text = e(_vector_text(entry, n))
                section = _vector_section(n)
                if section is not None and section.vector_alarm(entry):
                    text = f'<span class="red">{text}</span>'
                cells.append(text)
            body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        parts.append(f'<table class="prose"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
                     "</table>")
        if profiles_svg is not None:
            parts.append(f'<div class="plot">{profiles_svg}</div>')
        return "\n".join(parts)


#: The report's own sections among the tracks' (position, section).
CORE_SECTIONS = [(PROFILE_VECTOR_POSITION, ProfileVectorSection())]
