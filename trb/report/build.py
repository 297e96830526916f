"""The report's data: the latest run of each (baseline, split) of one release, its figures, Δgov, the pass bars,
the profile vectors and each track's own block, as one dict (``render_json`` writes it as JSON)."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone

from trb.report.common import (
    _PROFILE_NOTE,
    ABLATION,
    CONFIDENCE,
    FULL,
    HELD_OUT_SPLITS,
    SMOKE_BANNER,
    _baseline_key,
    _emit_r,
    _split_key,
    _timings,
)
from trb.report.comparisons import _delta_gov, _pass_bars
from trb.report.not_scored import not_scored
from trb.report.profile import run_profile
from trb.report.sections import ReportContext, report_sections
from trb.report.vector import _profile_vectors
from trb.results import ResultsError, ResultsStore
from trb.stats import CI_METHOD

__all__ = ["build_report", "render_json", "runs_on_release", "unfinished_text"]


def unfinished_text(run: dict) -> str:
    """How an unfinished run is named wherever results are shown (it never is one)."""
    return (f"run {run['run_id']} ({run.get('baseline')}, split {run.get('split')}) is unfinished, "
            f"{run.get('n_stored', 0):,} item scores stored so far; not a result: finish it with "
            f"`trb run --resume {run['run_id']}`")


def runs_on_release(store: ResultsStore, release_sha: str | None, what: str) -> tuple[str, list[dict], str | None]:
    """The runs of one release (oldest first): ``release_sha``'s, or with None the most recent run's release.

    Returns (release SHA, its runs, a note saying which release was picked and why when several have runs, else
    None). ``what`` names the product in messages ("report", "plan").

    Raises:
        ResultsError: the store has no runs, or none on ``release_sha``.
    """
    all_runs = store.runs()
    if not all_runs:
        unfinished = store.unfinished_runs()
        if unfinished:
            raise ResultsError(f"{store.path} holds no finished run, nothing to {what}: "
                               + "; ".join(unfinished_text(r) for r in unfinished))
        raise ResultsError(f"{store.path} holds no runs: nothing to {what}")
    releases: list = []
    for r in all_runs:
        if r["release_sha"] not in releases:
            releases.append(r["release_sha"])
    choice = None
    if release_sha is None:
        release_sha = all_runs[-1]["release_sha"]
        if len(releases) > 1:
            others = ", ".join(str(s)[:12] for s in releases if s != release_sha)
            choice = (f"{len(releases)} releases have runs in this store; this {what} covers {release_sha} "
                      f"(the release of the most recent run). Others: {others}. Pass a release SHA for another.")
    runs = [r for r in all_runs if r["release_sha"] == release_sha]
    if not runs:
        known = ", ".join(str(s) for s in releases)
        raise ResultsError(f"no runs on release {release_sha} in {store.path}; releases with runs: {known}")
    return release_sha, runs, choice


def build_report(store: ResultsStore, *, release_sha: str | None = None, n_resamples: int = 2000,
                 seed: int = 0) -> dict:
    """The report for one release: the latest run of each (baseline, split), scored per track, and Δgov.

    Runs are kept per (baseline, split) and reported in one table per split, never
    mixed; every baseline row names its split. Δgov is computed only on held-out
    splits (eval, then transfer); ``delta_gov`` is the first held-out split's, and
    ``tables[i]["delta_gov"]`` holds each held-out split's own.

    With ``release_sha`` None, the release of the most recent run is reported; when
    several releases have runs, ``release_choice`` says which one was picked and why.

    Raises:
        ResultsError: the store has no runs, or none on ``release_sha``.
    """
    release_sha, runs, release_choice = runs_on_release(store, release_sha, "report")

    latest: dict[tuple[str, str], dict] = {}
    for r in runs:  # oldest first: the last one seen per (baseline, split) wins
        latest[(r["baseline"] or "(unnamed)", r["split"] or "(unknown)")] = r
    smoke = any(bool(r["smoke_test"]) or r["release_kind"] == "smoke" for r in runs)
    notes: list[str] = []
    chosen = list(latest.values())
    versions = sorted({str(r["trb_version"]) for r in chosen})
    if len(versions) > 1:
        notes.append(f"the reported runs name different TRB versions ({', '.join(versions)}): "
                     "scores across a major version are not comparable (spec §7)")
    notes += [unfinished_text(r) for r in store.unfinished_runs() if r["release_sha"] == release_sha]
    superseded = len(runs) - len(chosen)
    if superseded:
        notes.append(f"{superseded} older run(s) on this release are superseded by a later run of the same "
                     "baseline on the same split")

    ctx = ReportContext(store, latest, n_resamples, seed)
    tables = []
    baselines = []
    for split in sorted({k[1] for k in latest}, key=_split_key):
        names = sorted((b for b, s in latest if s == split), key=_baseline_key)
        rows = []
        for name in names:
            r = latest[(name, split)]
            spec = r.get("adapter_spec") if isinstance(r.get("adapter_spec"), dict) else {}
            rows.append({
                "name": name, "split": split, "adapter_tier": r["adapter_tier"], "run_id": r["run_id"],
                "n_parameters": spec.get("n_parameters"),
                "split_check": _timings(r).get("split_check"),
                "created_at": r["created_at"], "trb_version": r["trb_version"], "seed": r["seed"],
                "tracks": run_profile(store, r, n_resamples=n_resamples, seed=seed),
                "emit_r": _emit_r(r),
                "capabilities": _timings(r).get("capabilities"),
                "trained_by": r.get("trained_by"),
            })
            skipped = not_scored(r)
            if skipped:  # only when the run left an item unscored or waiting: other reports are unchanged
                rows[-1]["not_scored"] = skipped
        held_out = split in HELD_OUT_SPLITS
        table = {"split": split, "held_out": held_out, "baselines": rows, "delta_gov": None, "delta_gov_note": None,
                 "pass_bars": None}
        if split == "train":
            table["banner"] = ("TRAIN SPLIT — the split the models were fitted on: these rows measure fit, not "
                               "generalisation, and are never compared with held-out rows")
        if not held_out:
            table["delta_gov_note"] = (f"Δgov is computed on held-out splits only ({', '.join(HELD_OUT_SPLITS)}); "
                                       f"{split} is not one")
        elif (FULL, split) in latest and (ABLATION, split) in latest:
            table["delta_gov"], table["delta_gov_note"] = _delta_gov(
                store, latest[(FULL, split)], latest[(ABLATION, split)], n_resamples=n_resamples, seed=seed)
        else:
            missing = " and ".join(b for b in (FULL, ABLATION) if (b, split) not in latest)
            table["delta_gov_note"] = f"no {missing} run on split {split}: Δgov needs both {FULL} and {ABLATION}"
        if held_out:
            table["pass_bars"] = _pass_bars(ctx, split, rows, table["delta_gov"])
        tables.append(table)
        baselines += rows

    delta, delta_note = None, None
    held = [t for t in tables if t["held_out"]]
    with_delta = [t for t in held if t["delta_gov"] is not None]
    if with_delta:
        delta = with_delta[0]["delta_gov"]
    elif held:
        delta_note = held[0]["delta_gov_note"]
    else:
        delta_note = (f"no run on a held-out split ({', '.join(HELD_OUT_SPLITS)}): Δgov is computed on held-out "
                      f"data only (spec §5); runs here are on {', '.join(t['split'] for t in tables)}")
    latest_run = max(chosen, key=lambda r: (r["created_at"] or ""))
    ctx.baselines = baselines
    profile_vectors = _profile_vectors(ctx)
    report = {
        "trb_version": versions[0] if len(versions) == 1 else ", ".join(versions),
        "release_sha": release_sha,
        "release_version": latest_run["release_version"],
        "release_kind": latest_run["release_kind"],
        "smoke_test": smoke,
        "banner": SMOKE_BANNER if smoke else None,
        "release_choice": release_choice,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "profile_note": _PROFILE_NOTE,
        "bootstrap": {"unit": "session", "method": CI_METHOD, "confidence": CONFIDENCE,
                      "n_resamples": n_resamples, "seed": seed},
        "splits": [t["split"] for t in tables],
        "tables": tables,
        "baselines": baselines,
        "delta_gov": delta,
        "delta_gov_note": delta_note,
        "notes": notes,
        "profile_vectors": profile_vectors,
    }
    ctx.report = report
    for _, section in report_sections():  # each track's block (Track 2's, Track 6's), in the registry's order
        if hasattr(section, "build"):
            report[section.key] = section.build(ctx)
    return report


def _clean(obj):
    """NaN and ±inf -> None, recursively (JSON has neither)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def render_json(report: dict) -> str:
    """The report as indented JSON (``null`` where no number exists)."""
    return json.dumps(_clean(report), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
