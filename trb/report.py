"""The TRB report: the profile vector per baseline and Δgov, from a results store.

Spec §5, enforced here:

* **The profile is a vector.** Each track is reported on its own, with its own
  interval; nothing in this module combines scores of different tracks.
* **Δgov = G(trace-full) − G(trace-ablation)**, paired item by item and given with a
  session-bootstrap confidence interval whenever both runs exist on the release;
  otherwise ``delta_gov`` is ``null`` and ``delta_gov_note`` says why.
* **Honest labelling.** A run on a smoke release is "SMOKE TEST — not a TRB score"
  in every format (JSON banner, Markdown first line, HTML banner, plot title).
  Every format names the TRB version, the release SHA and each baseline's adapter tier.

Intervals come from :mod:`trb.stats` (percentile bootstrap, sessions resampled).
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from trb.results import ResultsError, ResultsStore
from trb.stats import CI_METHOD, Estimate, balanced_accuracy_by_session, mean_by_session, paired_delta_by_session

__all__ = [
    "BASELINE_ORDER",
    "SMOKE_BANNER",
    "build_report",
    "plot_tracks",
    "render_html",
    "render_json",
    "render_markdown",
]

#: The spec §4 baselines, in report order; other names follow, alphabetically.
BASELINE_ORDER = ("instruct-base", "cot-prompted", "cot-sft", "trace-ablation", "trace-full")
SMOKE_BANNER = "SMOKE TEST — not a TRB score"
FULL, ABLATION = "trace-full", "trace-ablation"
CONFIDENCE = 0.95

#: Report track key -> (stored track, stored metric, what the number is).
TRACKS = {
    "1": ("1", "tv", "G = 1 − mean TV(act(c_t, r′), Φ(r′))"),
    "1-llr": ("1", "llr", "mean paired log-likelihood ratio (open-ended actions)"),
    "3": ("3", "attribution", "balanced accuracy of caused_by_self attribution"),
}
_TITLES = {"1": "Track 1 — governance G", "1-llr": "Track 1 — LLR variant", "3": "Track 3 — attribution BA"}
_ALWAYS = ("1", "3")  # tracks shown for every baseline (a missing one is "not run"); 1-llr only when present
_PROFILE_NOTE = ("The profile is a vector: each track is reported on its own and tracks are never combined "
                 "into one number (TRB spec §5).")


def _num(x) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _track_entry(est: Estimate | None, metric: str, *, synthetic_share: float | None = None,
                 note: str | None = None, extra: dict | None = None) -> dict:
    entry = {"score": None, "ci_low": None, "ci_high": None, "n_items": 0, "n_sessions": 0,
             "synthetic_share": synthetic_share, "metric": metric}
    if est is not None:
        entry.update(score=_num(est.value), ci_low=_num(est.ci_low), ci_high=_num(est.ci_high),
                     n_items=est.n_items, n_sessions=est.n_sessions)
        if est.n_skipped:
            entry["n_resamples_undefined"] = est.n_skipped
        if est.n_sessions < 2:
            note = note or "one session: no between-session interval can be estimated"
    if note:
        entry["note"] = note
    if extra:
        entry.update(extra)
    return entry


def _synthetic_share(origin: np.ndarray) -> float | None:
    known = origin[origin != None]  # noqa: E711  (elementwise on an object array)
    if known.size == 0:
        return None
    return float(np.mean(known == "synthetic"))


def _baseline_key(name: str) -> tuple:
    return (BASELINE_ORDER.index(name), "") if name in BASELINE_ORDER else (len(BASELINE_ORDER), name)


def _columns(table: pa.Table, names: list[str]) -> dict[str, np.ndarray]:
    """Columns as numpy: strings (and nullable booleans) as object arrays with None, doubles with nan for null."""
    return {n: table.column(n).to_numpy(zero_copy_only=False) for n in names}


def _score_tracks(store: ResultsStore, run: dict, *, n_resamples: int, seed: int) -> dict:
    table = store.items(run["run_id"])
    cols = _columns(table, ["track", "metric", "session_id", "score", "label", "predicted", "origin", "adversarial",
                            "ood"])
    run_tracks = {str(t) for t in (run.get("tracks") or [])}
    out: dict[str, dict] = {}
    for key, (track, metric, what) in TRACKS.items():
        mask = (cols["track"] == track) & (cols["metric"] == metric)
        n = int(mask.sum())
        if n == 0:
            if key in _ALWAYS:
                note = "run on this track but no items scored" if track in run_tracks else "not run"
                out[key] = _track_entry(None, what, note=note)
            continue
        sessions = cols["session_id"][mask]
        if metric == "attribution":
            try:
                est = balanced_accuracy_by_session(cols["label"][mask], cols["predicted"][mask], sessions,
                                                   n_resamples=n_resamples, confidence=CONFIDENCE, seed=seed)
            except ValueError as e:
                out[key] = _track_entry(None, what, note=f"balanced accuracy undefined: {e}",
                                        extra={"n_items": n})
                continue
            out[key] = _track_entry(est, what)
            continue
        scores = cols["score"][mask].astype(float)
        if np.isnan(scores).any():
            out[key] = _track_entry(None, what, note=f"{int(np.isnan(scores).sum())} items lack a score",
                                    extra={"n_items": n})
            continue
        est = mean_by_session(scores, sessions, n_resamples=n_resamples, confidence=CONFIDENCE, seed=seed)
        share = _synthetic_share(cols["origin"][mask])
        source = "items"
        if share is None:
            share, source = _num(run.get("synthetic_share")), "release"
        slices = {}
        for flag in ("adversarial", "ood"):
            sel = cols[flag][mask] == True  # noqa: E712  (elementwise on an object array)
            if sel.any():
                slices[flag] = {"score": float(np.mean(scores[sel])), "n_items": int(sel.sum())}
        out[key] = _track_entry(est, what, synthetic_share=share,
                                extra={"synthetic_share_source": source if share is not None else None,
                                       **({"slices": slices} if slices else {})})
    return out


def _emit_r(run: dict) -> dict | None:
    """The run's emit_r calls and missing slots (recorded by ``run_tracks`` for a proxy adapter), else None."""
    timings = run.get("timings")
    if isinstance(timings, str):  # ResultsStore.runs parses it; a raw row holds the JSON text
        try:
            timings = json.loads(timings)
        except ValueError:
            return None
    emit = timings.get("emit_r") if isinstance(timings, dict) else None
    return emit if isinstance(emit, dict) and "calls" in emit else None


def _missing_text(emit: dict | None) -> str:
    if not emit:
        return "—"
    missing = emit.get("missing") or {}
    parts = [f"{slot} {n}" for slot, n in missing.items() if n]
    return f"{', '.join(parts) if parts else 'none'} / {emit['calls']:,} emit_r"


def _delta_gov(store: ResultsStore, full: dict, ablation: dict, *, n_resamples: int, seed: int) -> tuple[dict | None, str | None]:
    track, metric, _ = TRACKS["1"]
    f = store.items(full["run_id"], track=track)
    a = store.items(ablation["run_id"], track=track)
    f = f.filter(pc.equal(f.column("metric"), metric)).select(["item_id", "session_id", "score", "split"])
    a = a.filter(pc.equal(a.column("metric"), metric)).select(["item_id", "score"])
    a = a.rename_columns(["item_id", "score_ablation"])
    joined = f.join(a, "item_id", join_type="inner").sort_by("item_id")
    n_pairs = joined.num_rows
    if n_pairs == 0:
        return None, (f"runs {full['run_id']} ({FULL}) and {ablation['run_id']} ({ABLATION}) share no Track 1 "
                      f"(tv) item: {f.num_rows} and {a.num_rows} items, none in common")
    sf = joined.column("score").to_numpy(zero_copy_only=False).astype(float)
    sa = joined.column("score_ablation").to_numpy(zero_copy_only=False).astype(float)
    if np.isnan(sf).any() or np.isnan(sa).any():
        return None, "some paired Track 1 items lack a score"
    sessions = np.asarray(joined.column("session_id").to_pylist(), dtype=object)
    est = paired_delta_by_session(sf, sa, sessions, n_resamples=n_resamples, confidence=CONFIDENCE, seed=seed)
    excludes_zero = None
    if est.has_ci:
        excludes_zero = bool(est.ci_low > 0 or est.ci_high < 0)
    splits = sorted({s for s in joined.column("split").to_pylist() if s is not None})
    return {
        "value": _num(est.value), "ci_low": _num(est.ci_low), "ci_high": _num(est.ci_high),
        "n_sessions": est.n_sessions, "n_items": est.n_items,
        "definition": f"G({FULL}) − G({ABLATION}), paired by item_id",
        "ci_excludes_zero": excludes_zero,
        "full_run_id": full["run_id"], "ablation_run_id": ablation["run_id"],
        "n_unpaired_full": f.num_rows - n_pairs, "n_unpaired_ablation": a.num_rows - n_pairs,
        "splits": splits,
        **({"note": "one session: no between-session interval can be estimated"} if est.n_sessions < 2 else {}),
    }, None


def build_report(store: ResultsStore, *, release_sha: str | None = None, n_resamples: int = 2000,
                 seed: int = 0) -> dict:
    """The report for one release: the latest run of each baseline, scored per track, and Δgov.

    With ``release_sha`` None, the release of the most recent run is reported; when
    several releases have runs, ``release_choice`` says which one was picked and why.

    Raises:
        ResultsError: the store has no runs, or none on ``release_sha``.
    """
    all_runs = store.runs()
    if not all_runs:
        raise ResultsError(f"{store.path} holds no runs: nothing to report")
    releases: list = []
    for r in all_runs:
        if r["release_sha"] not in releases:
            releases.append(r["release_sha"])
    release_choice = None
    if release_sha is None:
        release_sha = all_runs[-1]["release_sha"]
        if len(releases) > 1:
            others = ", ".join(str(s)[:12] for s in releases if s != release_sha)
            release_choice = (f"{len(releases)} releases have runs in this store; this report covers {release_sha} "
                              f"(the release of the most recent run). Others: {others}. "
                              "Pass a release SHA to report another.")
    runs = [r for r in all_runs if r["release_sha"] == release_sha]
    if not runs:
        known = ", ".join(str(s) for s in releases)
        raise ResultsError(f"no runs on release {release_sha} in {store.path}; releases with runs: {known}")

    latest: dict[str, dict] = {}
    for r in runs:  # oldest first: the last one seen per baseline wins
        latest[r["baseline"] or "(unnamed)"] = r
    chosen = [latest[k] for k in sorted(latest, key=_baseline_key)]
    smoke = any(bool(r["smoke_test"]) or r["release_kind"] == "smoke" for r in runs)
    notes: list[str] = []
    versions = sorted({str(r["trb_version"]) for r in chosen})
    if len(versions) > 1:
        notes.append(f"the reported runs name different TRB versions ({', '.join(versions)}): "
                     "scores across a major version are not comparable (spec §7)")
    superseded = len(runs) - len(chosen)
    if superseded:
        notes.append(f"{superseded} older run(s) on this release are superseded by a later run of the same baseline")

    baselines = []
    for r in chosen:
        baselines.append({
            "name": r["baseline"] or "(unnamed)", "adapter_tier": r["adapter_tier"], "run_id": r["run_id"],
            "created_at": r["created_at"], "trb_version": r["trb_version"], "split": r["split"], "seed": r["seed"],
            "tracks": _score_tracks(store, r, n_resamples=n_resamples, seed=seed),
            "emit_r": _emit_r(r),
        })

    delta, delta_note = None, None
    if FULL in latest and ABLATION in latest:
        delta, delta_note = _delta_gov(store, latest[FULL], latest[ABLATION], n_resamples=n_resamples, seed=seed)
    else:
        missing = " and ".join(b for b in (FULL, ABLATION) if b not in latest)
        delta_note = f"no {missing} run on this release: Δgov needs both {FULL} and {ABLATION}"

    return {
        "trb_version": versions[0] if len(versions) == 1 else ", ".join(versions),
        "release_sha": release_sha,
        "release_version": chosen[-1]["release_version"],
        "release_kind": chosen[-1]["release_kind"],
        "smoke_test": smoke,
        "banner": SMOKE_BANNER if smoke else None,
        "release_choice": release_choice,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "profile_note": _PROFILE_NOTE,
        "bootstrap": {"unit": "session", "method": CI_METHOD, "confidence": CONFIDENCE,
                      "n_resamples": n_resamples, "seed": seed},
        "baselines": baselines,
        "delta_gov": delta,
        "delta_gov_note": delta_note,
        "notes": notes,
    }


# -- rendering -----------------------------------------------------------------------------------


def _clean(obj):
    """NaN -> None, recursively (JSON has no NaN)."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def render_json(report: dict) -> str:
    """The report as indented JSON (``null`` where no number exists)."""
    return json.dumps(_clean(report), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _f(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _ci(entry: dict, signed: bool = False) -> str:
    if entry.get("ci_low") is None or entry.get("ci_high") is None:
        return "[CI n/a]"
    return f"[{_f(entry['ci_low'], signed)}, {_f(entry['ci_high'], signed)}]"


def _cell(entry: dict | None) -> str:
    if entry is None:
        return "—"
    if entry.get("score") is None:
        return f"n/a ({entry.get('note', 'no score')})"
    return (f"{_f(entry['score'])} {_ci(entry)} · {entry['n_items']:,} items / {entry['n_sessions']:,} sessions")


def _share(entry: dict | None) -> str:
    if not entry or entry.get("synthetic_share") is None:
        return "n/a"
    return f"{100 * entry['synthetic_share']:.1f}%"


def _track_keys(report: dict) -> list[str]:
    present = {k for b in report["baselines"] for k in b["tracks"]}
    return [k for k in TRACKS if k in present or k in _ALWAYS]


def _header_facts(report: dict) -> str:
    return (f"TRB version {report['trb_version']} · release SHA `{report['release_sha']}` · release version "
            f"{report['release_version']} ({report['release_kind']})")


def _delta_text(report: dict) -> str:
    d = report["delta_gov"]
    if d is None:
        return f"Δgov = G({FULL}) − G({ABLATION}): not available — {report['delta_gov_note']}"
    verdict = {True: "the CI excludes 0", False: "the CI includes 0", None: "no CI (one session)"}[d["ci_excludes_zero"]]
    return (f"Δgov = G({FULL}) − G({ABLATION}) = {_f(d['value'], True)} {_ci(d, True)} "
            f"({int(100 * report['bootstrap']['confidence'])}% CI, session bootstrap; {d['n_items']:,} paired items, "
            f"{d['n_sessions']:,} sessions); {verdict}")


def _table_head(report: dict, keys: list[str]) -> tuple[list[str], bool]:
    """The profile table's column titles, and whether it has the missing-slots column."""
    head = ["baseline", "adapter tier"]
    for k in keys:
        head.append(_TITLES[k] + " [95% CI]")
        if k.startswith("1"):
            head.append("synthetic share" + (" (LLR)" if k == "1-llr" else ""))
    slots = any(base.get("emit_r") for base in report["baselines"])
    if slots:
        head.append("r slots missing / emit_r calls")
    head.append("run")
    return head, slots


def render_markdown(report: dict, plot_path: Path | None = None) -> str:
    """The report as Markdown: banner (if smoke), facts, the baseline × track table, Δgov, the plot link.

    ``plot_path`` is written into the image link as given: pass it relative to where
    the Markdown file will live.
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
              f"sessions ({b['n_resamples']:,} resamples, seed {b['seed']}).", ""]
    keys = _track_keys(report)
    head, slots = _table_head(report, keys)
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for base in report["baselines"]:
        row = [base["name"], str(base["adapter_tier"])]
        for k in keys:
            e = base["tracks"].get(k)
            row.append(_cell(e))
            if k.startswith("1"):
                row.append(_share(e))
        if slots:
            row.append(_missing_text(base.get("emit_r")))
        row.append(f"`{base['run_id']}`")
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    lines += ["", f"**{_delta_text(report)}**", ""]
    for note in report.get("notes") or []:
        lines.append(f"- Note: {note}")
    if report.get("notes"):
        lines.append("")
    lines += ["Track definitions: " + "; ".join(f"{_TITLES[k]}: {TRACKS[k][2]}" for k in keys) + ".", ""]
    if plot_path is not None:
        lines += [f"![TRB per-track profile with 95% CIs]({Path(plot_path).as_posix()})", ""]
    return "\n".join(lines)


def render_html(report: dict) -> str:
    """The report as one self-contained HTML page (the plot embedded as a base64 PNG)."""
    e = html.escape
    keys = _track_keys(report)
    png = base64.b64encode(_plot_png(report)).decode("ascii")
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>TRB report — release {e(str(report['release_sha'])[:12])}</title>",
             "<style>body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem}"
             "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:.3rem .6rem;text-align:left}"
             ".banner{background:#b00020;color:#fff;font-size:1.4rem;font-weight:bold;padding:1rem;margin:1rem 0}"
             ".delta{font-size:1.1rem;font-weight:bold}code{font-size:.9em}</style></head><body>",
             f"<h1>TRB report — release {e(str(report['release_sha'])[:12])} ({e(str(report['release_version']))})</h1>"]
    if report["smoke_test"]:
        parts.append(f'<div class="banner" role="alert">{e(SMOKE_BANNER)}: a smoke release (simulated or '
                     "illustrative data); these numbers measure nothing about a model (spec §6).</div>")
    parts.append(f"<p>TRB version {e(str(report['trb_version']))} · release SHA <code>{e(str(report['release_sha']))}"
                 f"</code> · release version {e(str(report['release_version']))} ({e(str(report['release_kind']))})"
                 f"<br>Generated {e(report['generated_at'])}.</p>")
    if report.get("release_choice"):
        parts.append(f"<p><strong>Release chosen:</strong> {e(report['release_choice'])}</p>")
    b = report["bootstrap"]
    parts.append(f"<p>{e(report['profile_note'])} Intervals: {int(100 * b['confidence'])}% {e(b['method'])} "
                 f"bootstrap over sessions ({b['n_resamples']:,} resamples, seed {b['seed']}).</p>")
    head, slots = _table_head(report, keys)
    parts.append("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>")
    for base in report["baselines"]:
        row = [base["name"], str(base["adapter_tier"])]
        for k in keys:
            row.append(_cell(base["tracks"].get(k)))
            if k.startswith("1"):
                row.append(_share(base["tracks"].get(k)))
        if slots:
            row.append(_missing_text(base.get("emit_r")))
        row.append(base["run_id"])
        parts.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>")
    parts.append("</tbody></table>")
    parts.append(f'<p class="delta">{e(_delta_text(report))}</p>')
    if report.get("notes"):
        parts.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in report["notes"]) + "</ul>")
    parts.append("<p>Track definitions: " + "; ".join(e(f"{_TITLES[k]}: {TRACKS[k][2]}") for k in keys) + ".</p>")
    parts.append(f'<img alt="TRB per-track profile with 95% CIs" src="data:image/png;base64,{png}">')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _plot_title(report: dict) -> str:
    title = f"TRB v{report['trb_version']} · release {str(report['release_sha'])[:12]} ({report['release_version']})"
    return f"{SMOKE_BANNER}\n{title}" if report["smoke_test"] else title


def _figure(report: dict):
    """One panel per track (and one for Δgov): score and CI per baseline. Tracks share no axis.

    Uses matplotlib's object API with the Agg canvas: no pyplot, no global backend state.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    keys = _track_keys(report)
    panels = keys + (["delta"] if report["delta_gov"] is not None else [])
    fig = Figure(figsize=(4.2 * len(panels), 4.4), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, key in zip(axes, panels):
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
                    names.append(f"{base['name']}\n({base['adapter_tier']})")
                    vals.append(entry["score"])
                    lo.append(entry["ci_low"])
                    hi.append(entry["ci_high"])
            ax.set_title(_TITLES[key], fontsize=10)
            if key == "3":
                ax.axhline(0.5, color="grey", lw=0.8, ls="--", label="chance")
            if key in ("1", "3"):
                ax.set_ylim(-0.02, 1.02)
        x = np.arange(len(names))
        v = np.asarray(vals, dtype=float)
        err = np.array([[val - (l if l is not None else val) for val, l in zip(vals, lo)],
                        [(h if h is not None else val) - val for val, h in zip(vals, hi)]], dtype=float)
        err = np.clip(err, 0, None)  # a percentile interval may sit just beside the point estimate
        if len(names):
            ax.errorbar(x, v, yerr=err, fmt="o", capsize=5, color="#1f4e79")
        else:
            ax.text(0.5, 0.5, "no scores", ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks(x, names, fontsize=8, rotation=30, ha="right")
        ax.grid(axis="y", alpha=0.3)
    if report["smoke_test"]:
        fig.suptitle(_plot_title(report), color="#b00020", fontweight="bold")
    else:
        fig.suptitle(_plot_title(report))
    return fig


def _plot_png(report: dict) -> bytes:
    buf = io.BytesIO()
    _figure(report).savefig(buf, format="png", dpi=110, metadata={"Title": _plot_title(report)})
    return buf.getvalue()


def plot_tracks(report: dict, path: Path) -> Path:
    """Write the per-track plot (score and CI per baseline, one panel per track) as PNG to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_plot_png(report))
    return path
