"""What every part of the report shares: the spec's baseline names and order, the confidence, the splits, how a
number, an interval and a run's recorded timings are read."""

from __future__ import annotations

import json
import math

from trb.tracks.base import Metric, all_metrics

__all__ = ["BASELINE_ORDER", "SMOKE_BANNER", "FULL", "ABLATION", "CONFIDENCE", "HELD_OUT_SPLITS", "SPLIT_ORDER",
           "format_score"]


#: The spec §4 baselines, in report order; other names follow, alphabetically.
BASELINE_ORDER = ("instruct-base", "cot-prompted", "cot-sft", "trace-ablation", "trace-full")


SMOKE_BANNER = "SMOKE TEST — not a TRB score"


FULL, ABLATION = "trace-full", "trace-ablation"


CONFIDENCE = 0.95


#: Splits never used to fit anything (spec §5): Δgov is computed on these only, in this order of preference.
HELD_OUT_SPLITS = ("eval", "transfer")


#: The order split tables appear in: held-out first.
SPLIT_ORDER = ("eval", "transfer", "dev", "train")


def _metrics() -> list[Metric]:
    return all_metrics()


def _title(key: str) -> str:
    return {m.key: m.title for m in _metrics()}[key]


def _metric(key: str) -> Metric:
    return next(m for m in _metrics() if m.key == key)


_PROFILE_NOTE = ("The profile is a vector: each track is reported on its own and tracks are never combined "
                 "into one number (TRB spec §5).")


def _num(x) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _timings(run: dict) -> dict:
    timings = run.get("timings")
    if isinstance(timings, str):  # ResultsStore.runs parses it; a raw row holds the JSON text
        try:
            # not strict_json: JSON the results store holds was written by ResultsStore itself (json.dumps of a run's figures)
            timings = json.loads(timings)
        except ValueError:
            return {}
    return timings if isinstance(timings, dict) else {}


def _baseline_key(name: str) -> tuple:
    return (BASELINE_ORDER.index(name), "") if name in BASELINE_ORDER else (len(BASELINE_ORDER), name)


def _split_key(split) -> tuple:
    return (SPLIT_ORDER.index(split), "") if split in SPLIT_ORDER else (len(SPLIT_ORDER), str(split))


def format_score(entry: dict | None) -> str:
    """A metric's value as every view shows it (3 decimals; "—" when there is none)."""
    if not entry or entry.get("score") is None:
        return "—"
    return f"{entry['score']:.3f}"


def _f(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _ci(entry: dict, signed: bool = False) -> str:
    if entry.get("ci_low") is None or entry.get("ci_high") is None:
        return "[CI n/a]"
    return f"[{_f(entry['ci_low'], signed)}, {_f(entry['ci_high'], signed)}]"


def _emit_r(run: dict) -> dict | None:
    """The run's emit_r calls and missing slots (recorded by ``run_tracks`` for a proxy adapter), else None."""
    timings = run.get("timings")
    if isinstance(timings, str):  # ResultsStore.runs parses it; a raw row holds the JSON text
        try:
            # not strict_json: JSON the results store holds was written by ResultsStore itself (json.dumps of a run's figures)
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
