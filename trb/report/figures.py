"""The report's two plots: one panel per track (score and CI per baseline, and Δgov), and the profile vector of
every baseline, as PNG files (beside the Markdown) and as SVG elements inline in the HTML page. matplotlib's object
API with the Agg canvas: no pyplot, no global backend state."""

from __future__ import annotations

import html
import io
import math
import re
import textwrap
from pathlib import Path

import numpy as np

from trb.report.common import CONFIDENCE, SMOKE_BANNER, _metric
from trb.report.text import _is_main, _track_keys
from trb.report.vector import PROFILE_VECTOR, _vector_section
from trb.tracks.track2 import PROXY_GROUNDING

__all__ = ["plot_tracks", "plot_profiles"]


def _plot_title(report: dict) -> str:
    title = f"TRB v{report['trb_version']} · release {str(report['release_sha'])[:12]} ({report['release_version']})"
    return f"{SMOKE_BANNER}\n{title}" if report["smoke_test"] else title


#: The plot's grid: panels per row, and each panel's size in inches (at the 110 dpi of the PNG).
_PLOT_COLUMNS, _PANEL_WIDTH, _PANEL_HEIGHT = 3, 3.6, 2.9
#: The figures' resolution: pixels per inch of the PNG, and CSS pixels per inch of the inline SVG at its natural size.
_DPI = 110
#: The per-track plot's x labels, upright (a baseline's name, then its tier and split), in points; the space one
#: takes along the axis (its two lines), and the y axis's labels beside a panel, in inches.
_TICK_SIZE, _TICK_PITCH, _Y_LABELS = 7.5, 0.3, 0.6
#: A panel title's characters per inch of panel (10-point type): a title wraps to its panel, never past it.
_TITLE_CHARS_PER_INCH = 10


def _plot_columns(n_points: int) -> int:
    """Panels per row of the per-track plot: three, fewer where a panel's x labels need the room (each label
    upright takes :data:`_TICK_PITCH` inches, so no two touch)."""
    width = _PANEL_WIDTH * _PLOT_COLUMNS
    return max(1, min(_PLOT_COLUMNS, int(width // (_Y_LABELS + _TICK_PITCH * max(n_points, 1)))))


def _figure(report: dict):
    """One panel per track (and one for Δgov): score and CI per baseline. Tracks share no axis.

    The panels sit in a grid at most three wide (four make two rows of two; fewer per row where a panel has more
    baselines than its labels have room for), so the figure keeps one width, about 1,200 px at its 110 dpi, however
    many tracks it shows: it fits a 1,280 px page unscaled. Each baseline's label stands upright under its point,
    and a title wraps to its panel.
    Uses matplotlib's object API with the Agg canvas: no pyplot, no global backend state.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # a panel per main figure that some baseline has a value for (a track no run scored has nothing to draw)
    keys = [k for k in _track_keys(report) if _is_main(k)
            and any((b["tracks"].get(k) or {}).get("score") is not None for b in report["baselines"])]
    panels = keys + (["delta"] if report["delta_gov"] is not None else [])
    n_points = max([sum((b["tracks"].get(k) or {}).get("score") is not None for b in report["baselines"])
                    for k in keys], default=1)
    columns = _plot_columns(n_points)
    nrows = math.ceil(len(panels) / columns)
    ncols = math.ceil(len(panels) / nrows)
    title_chars = int(_TITLE_CHARS_PER_INCH * (_PANEL_WIDTH * _PLOT_COLUMNS / ncols - _Y_LABELS))
    label_height = 1.2 if n_points > 1 else 0.3  # the upright labels under each row of panels
    fig = Figure(figsize=(_PANEL_WIDTH * _PLOT_COLUMNS, 0.6 + (_PANEL_HEIGHT + label_height) * nrows),
                 layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in grid[len(panels):]:  # a last row not full: its empty cells go
        fig.delaxes(ax)
    axes = grid[:len(panels)]
    for ax, key in zip(axes, panels):
        hollow: list[bool] = []  # proxy-tier grounding: an open marker, apart from native-tier points
        if key == "delta":
            d = report["delta_gov"]
            names, vals, lo, hi = ["Δgov"], [d["value"]], [d["ci_low"]], [d["ci_high"]]
            ax.set_title("Δgov = G(full) − G(ablation)", fontsize=10)
            ax.axhline(0, color="grey", lw=0.8, ls="--")
        else:
            names, vals, lo, hi = [], [], [], []
            for base in report["baselines"]:
                entry = base["tracks"].get(key)
                if entry and entry.get("score") is not None:
                    names.append(f"{base['name']}\n({entry.get('label') or base['adapter_tier']}, {base['split']})")
                    hollow.append(bool(entry.get("label")))
                    vals.append(entry["score"])
                    lo.append(entry["ci_low"])
                    hi.append(entry["ci_high"])
            m = _metric(key)
            ax.set_title(textwrap.fill(m.title, title_chars, break_on_hyphens=False), fontsize=10)  # a long title on lines inside its panel
            if m.chance is not None:
                ax.axhline(m.chance, color="grey", lw=0.8, ls="--", label="chance")
            if m.bounds is not None:
                ax.set_ylim(m.bounds[0] - 0.02, m.bounds[1] + 0.02)
        x = np.arange(len(names))
        v = np.asarray(vals, dtype=float)
        err = np.array([[val - (low if low is not None else val) for val, low in zip(vals, lo)],
                        [(h if h is not None else val) - val for val, h in zip(vals, hi)]], dtype=float)
        err = np.clip(err, 0, None)  # a percentile interval may sit just beside the point estimate
        if len(names):
            open_ = np.asarray(hollow + [False] * (len(names) - len(hollow)), dtype=bool)
            for sel, face in ((~open_, "#1f4e79"), (open_, "white")):
                if sel.any():
                    ax.errorbar(x[sel], v[sel], yerr=err[:, sel], fmt="o", capsize=5, color="#1f4e79",
                                markerfacecolor=face)
        else:
            ax.text(0.5, 0.5, "no scores", ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks(x, names, fontsize=_TICK_SIZE, rotation=90 if len(names) > 1 else 0, ha="center",
                      rotation_mode="default", linespacing=1.1)
        ax.grid(axis="y", alpha=0.3)
    if report["smoke_test"]:
        fig.suptitle(_plot_title(report), color="#b00020", fontweight="bold")
    else:
        fig.suptitle(_plot_title(report))
    return fig


def _plot_png(report: dict) -> bytes:
    buf = io.BytesIO()
    _figure(report).savefig(buf, format="png", dpi=_DPI, metadata={"Title": _plot_title(report)})
    return buf.getvalue()


#: An id matplotlib makes from a hash (a marker's or a clip path's): numbered in order instead, so that the same
#: figure gives the same markup.
_HASHED_ID = re.compile(r"[mp][0-9a-f]{10}")
_ID_REF = re.compile(r'(\bid="|href="#|url\(#)([^")]+)')


def _inline_svg(fig, element_id: str, alt: str) -> str:
    """A figure as an ``<svg>`` element for the HTML page: its text drawn as glyph outlines (the page shows what
    matplotlib laid out, whatever fonts the browser has), scaled down to its column and never past its natural
    width (:data:`_DPI` CSS pixels per inch), every id inside it prefixed with ``element_id`` (two figures on one
    page share none: each group keeps matplotlib's name, ``axes_1``, ``xtick_3``, ``text_7``, which the browser
    test measures)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.S)
    hashed: dict[str, str] = {}

    def rename(m: re.Match) -> str:
        old = m.group(2)
        if _HASHED_ID.fullmatch(old):
            new = hashed.setdefault(old, f"ref{len(hashed) + 1}")
        else:
            new = old
        return f"{m.group(1)}{element_id}-{new}"

    text = _ID_REF.sub(rename, text)
    width_in, height_in = fig.get_size_inches()
    width, height = round(width_in * _DPI), round(height_in * _DPI)
    text = re.sub(r'<svg ([^>]*?)width="[^"]*" height="[^"]*"',
                  lambda m: (f'<svg id="{element_id}" class="plot" role="img" aria-label="{html.escape(alt)}" '
                             f'width="{width}" height="{height}" {m.group(1)}'), text, count=1)
    text = text.replace(">", f"><title>{html.escape(alt)}</title>", 1)
    return text.strip()


#: The per-track plot's text alternative.
_TRACKS_ALT = "TRB per-track profile with 95% CIs"


def _plot_svg(report: dict) -> str:
    """The per-track plot as an inline ``<svg id="tracks-plot">`` (:func:`_inline_svg`)."""
    return _inline_svg(_figure(report), "tracks-plot", _TRACKS_ALT)


def plot_tracks(report: dict, path: Path) -> Path:
    """Write the per-track plot (score and CI per baseline, one panel per track) as PNG to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_plot_png(report))
    return path


#: Each entry's chance or null level, and how the plot names it (G's is the baseline's own uniform-policy G).
_PROFILE_NULLS = {"G": "the uniform policy's G", "ground": "0.5", "attr": "0.5", "viab": "1 (no change)",
                  "nav": "0 (no lift)", "trans": "0 (no drop)"}


_PROFILE_HEIGHT = 3.3


_PROFILES_ALT = "TRB profile vector per baseline with 95% CIs, each entry on its own scale"


def _profile_point(report: dict, p: dict, entry: str, key: str | None) -> dict:
    """One entry of one baseline's profile as the plot draws it: value, interval, null level and label, or the
    reason it has no value (``na``)."""
    e = p["vector"][entry]
    if e.get("status") != "ok":
        return {"na": e.get("status") or "no score"}
    if key is None:  # an entry its track computes itself (trans: the drop eval − min over contexts)
        return _vector_section(entry).profile_point(e)
    if key == "1":  # G's null: the uniform policy's G on the same items (a reference point of the same run)
        row = next((b for b in report["baselines"] if b["name"] == p["name"] and b["split"] == "eval"), None)
        null = ((row or {}).get("tracks", {}).get("1-uniform") or {}).get("score")
    else:
        null = _metric(key).chance
    label = f"{entry}\n(proxy tier)" if e.get("label") else entry
    return {"value": e["score"], "lo": e.get("ci_low"), "hi": e.get("ci_high"), "null": null, "label": label,
            "open": bool(e.get("label"))}


def _profile_limits(points: list[dict], key: str | None) -> tuple[float, float]:
    """An entry's x range, the same in every panel: its metric's bounds, else its values, intervals and null."""
    m = _metric(key) if key is not None else None
    if m is not None and m.bounds is not None:
        lo, hi = m.bounds
        return lo - 0.04 * (hi - lo), hi + 0.04 * (hi - lo)
    xs = [x for pt in points for x in (pt.get("value"), pt.get("lo"), pt.get("hi"), pt.get("null")) if x is not None]
    if not xs:
        return -1.0, 1.0
    lo, hi = min(xs), max(xs)
    span = max(hi - lo, 0.2)
    return lo - 0.12 * span, hi + 0.12 * span


def _profiles_figure(report: dict):
    """The profile vector of every baseline: one panel per baseline, the six entries stacked in it, each on its
    own horizontal scale (the same scale for that entry in every panel) with its chance or null level dashed;
    an entry not run or not applicable is a grey label. Proxy-tier grounding is an open marker, labelled.

    Returns ``(figure, panels)``: ``panels[baseline][entry]`` is the entry's axes. Uses matplotlib's object API
    with the Agg canvas (no pyplot). The grid is at most three panels wide, about 1,190 px at 110 dpi.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    profiles = list(report.get("profile_vectors") or ())
    n = max(len(profiles), 1)
    ncols = min(_PLOT_COLUMNS, n)
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(_PANEL_WIDTH * _PLOT_COLUMNS, 0.9 + _PROFILE_HEIGHT * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    points = {p["name"]: {entry: _profile_point(report, p, entry, key) for entry, key in PROFILE_VECTOR}
              for p in profiles}
    limits = {entry: _profile_limits([points[p["name"]][entry] for p in profiles], key) for entry, key in PROFILE_VECTOR}
    subfigs = fig.subfigures(nrows, _PLOT_COLUMNS, squeeze=False).ravel()
    panels: dict[str, dict] = {}
    for sf, p in zip(subfigs, profiles):
        sf.suptitle(f"{p['name']} ({p['adapter_tier']})", fontsize=10)
        axes = sf.subplots(len(PROFILE_VECTOR), 1)
        panels[p["name"]] = {}
        for ax, (entry, _) in zip(axes, PROFILE_VECTOR):
            panels[p["name"]][entry] = ax
            pt = points[p["name"]][entry]
            ax.set_yticks([])
            ax.set_ylim(-1, 1)
            ax.set_xlim(*limits[entry])
            ax.tick_params(axis="x", labelsize=6, length=2, pad=1)
            ax.xaxis.set_major_locator(MaxNLocator(5))
            ax.set_ylabel(pt.get("label", entry), rotation=0, ha="right", va="center", fontsize=8)
            if "na" in pt:
                ax.text(0.5, 0.5, f"n/a: {pt['na']}", transform=ax.transAxes, ha="center", va="center", fontsize=7,
                        color="grey")
                ax.set_xticks([])
                for spine in ax.spines.values():
                    spine.set_color("#cccccc")
                continue
            if pt["null"] is not None:
                ax.axvline(pt["null"], color="grey", lw=0.8, ls="--")
            v = pt["value"]
            err = [[max(v - pt["lo"], 0.0) if pt["lo"] is not None else 0.0],
                   [max(pt["hi"] - v, 0.0) if pt["hi"] is not None else 0.0]]
            ax.errorbar([v], [0.0], xerr=err, fmt="o", ms=4, capsize=3, color="#1f4e79",
                        markerfacecolor="white" if pt["open"] else "#1f4e79")
            ax.text(v, 0.35, f"{v:.3f}", ha="center", va="bottom", fontsize=6, color="#1f4e79")
    for sf in subfigs[len(profiles):]:
        sf.set_facecolor("none")
    nulls = "; ".join(f"{k}: {v}" for k, v in _PROFILE_NULLS.items())
    fig.supxlabel(f"Each entry on its own scale (the same in every panel), with its {int(100 * CONFIDENCE)}% CI; open "
                  f"marker: {PROXY_GROUNDING}; n/a: not run or not applicable.\nDashed: the entry's chance or null "
                  f"level ({nulls}).", fontsize=7)
    title = f"Profile vector per baseline · {_plot_title(report)}"
    fig.suptitle(title, color="#b00020" if report["smoke_test"] else "black",
                 fontweight="bold" if report["smoke_test"] else "normal")
    return fig, panels


def _profiles_png(report: dict) -> bytes:
    buf = io.BytesIO()
    fig, _ = _profiles_figure(report)
    fig.savefig(buf, format="png", dpi=_DPI, metadata={"Title": _plot_title(report)})
    return buf.getvalue()


def _profiles_svg(report: dict) -> str:
    """The profile plot as an inline ``<svg id="profiles-plot">`` (:func:`_inline_svg`)."""
    fig, _ = _profiles_figure(report)
    return _inline_svg(fig, "profiles-plot", _PROFILES_ALT)


def plot_profiles(report: dict, path: Path) -> Path:
    """Write the profile plot (one panel per baseline: its six entries, each with its CI on its own scale and its
    chance or null level) as PNG to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_profiles_png(report))
    return path
