"""Track 4 — viability, spec §3: does acting through r_t keep the system functioning?

On the task set's viability tasks, each held-out seed is rolled twice with the same randomness:
**full** (the model acts through its own emitted r_t: ``act(c_t, r_override = emit_r(c_t))``) and
**ablated** (the no-r_t ablation, capability ``r_ablation``: r_t is still stated, never acted on).

* ``viab`` — completion retention: completion rate (target reached within the budget) under full
  ÷ under the ablation, paired by task and seed, session-bootstrap CI over the pairs. Below 1.0 is
  flagged red ("legible but harmful"); pass bar ≥ 1, ideally > 1.
* ``viab-cal`` — calibration retention: (1 − Brier_full) ÷ (1 − Brier_ablated), where Brier scores
  each step's stated ``confidence`` (a forecast of completing the task) against the episode's
  completion. Above 1: the reports are better calibrated when the model acts through them.
* ``viab-full``, ``viab-abl`` — the two completion rates themselves.

Beside ``viab`` and ``viab-cal`` the report gives CG-1 (:mod:`trb.detectability`): the KL between
the two conditions' observed distributions, the n it implies, the n used, whether this run could
have detected the difference, and a classical power figure.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from environments.tasksets import TaskSet
from trb.adapters.capabilities import RAblation
from trb.detectability import cg1_calibration, cg1_completion
from trb.rollout import EpisodeSpec
from trb.stats import brier_quality_ratio_by_session, mean_by_session, ratio_by_session
from trb.tracks.base import Metric
from trb.tracks.rollouts import EPISODE_COLUMNS, episode_row, paired, roll

__all__ = ["TRACK", "Track4", "track4_items", "CONDITIONS"]

#: Row condition -> the driver's condition.
CONDITIONS = {"full": "own", "ablated": "ablated"}


def track4_items(tasks: TaskSet, split: str) -> Iterator[EpisodeSpec]:
    for task in tasks.of_kind("viability"):
        for seed in tasks.seeds_for(task, split):
            pair = f"{task.id}/{seed.k}"
            for name, cond in CONDITIONS.items():
                yield EpisodeSpec(f"{pair}/{name}", pair, task, seed, cond)


def _flags_ratio(value: float, what: str) -> list[str]:
    """The red flag of a ratio below 1 at the report's precision (three decimals: a ratio that prints as 1.000 is
    float noise of two equal conditions, not harm). The figure's CI stands beside it in the report."""
    if round(value, 3) < 1.0:
        return [f"RED: {what} ratio {value:.3f} < 1: acting through r_t degrades the system — legible but harmful"]
    return []


class Track4:
    """Track 4 on the registry: completion and calibration retention against the no-r_t ablation."""

    id = "4"
    name = "viability"
    section = "TRB spec §3, Track 4 (viability, with CG-1)"
    source = "tasks"
    needs: tuple[type, ...] = (RAblation,)
    metrics = (
        Metric("viab", "4", "completion", "Track 4 — viability (completion ratio)",
               "completion rate acting through r_t ÷ under the no-r_t ablation, paired by task and seed (≥ 1 "
               "passes; < 1 is legible but harmful)", headline=True, chance=1.0),
        Metric("viab-cal", "4", "completion", "Track 4 — calibration retention",
               "(1 − Brier) of the stated confidence against completion, acting through r_t ÷ under the ablation",
               headline=False, requires="n_conf", chance=1.0),
        Metric("viab-full", "4", "completion", "Track 4 — completion rate, acting through r_t",
               "share of episodes whose target was reached within the budget, acting through r_t",
               headline=False, bounds=(0.0, 1.0)),
        Metric("viab-abl", "4", "completion", "Track 4 — completion rate, no-r_t ablation",
               "share of episodes whose target was reached within the budget under the no-r_t ablation",
               headline=False, bounds=(0.0, 1.0)),
    )
    columns = EPISODE_COLUMNS

    def count(self, tasks: TaskSet, split: str) -> int:
        return sum(len(tasks.seeds_for(t, split)) for t in tasks.of_kind("viability")) * len(CONDITIONS)

    @staticmethod
    def part_key(spec: EpisodeSpec) -> str:
        """Parts (:mod:`trb.parts`) keep a task's episodes together: its paired conditions, its CG-2 loops."""
        return spec.task.id

    def items(self, tasks: TaskSet, split: str) -> Iterator[EpisodeSpec]:
        return track4_items(tasks, split)

    def score(self, adapter, items, timer=None, progress=None, *, tasks: TaskSet, split: str,
              greedy: bool = False):
        traces, cx = roll(adapter, items, tasks, split, greedy=greedy, timer=timer, progress=progress)
        names = {v: k for k, v in CONDITIONS.items()}
        rows = [episode_row("4", "completion", tr, names[tr.spec.condition], split, cx(tr.spec.task))
                for tr in traces]
        reached = {n: sum(r["score"] for r in rows if r["condition"] == n) for n in CONDITIONS}
        return rows, {"scored": len(rows), "episodes": len(rows), "reached": reached,
                      "steps": int(sum(r["steps"] for r in rows))}

    def aggregate(self, metric: Metric, columns, *, n_resamples: int, confidence: float, seed: int):
        opts = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
        if metric.key in ("viab-full", "viab-abl"):
            want = "full" if metric.key == "viab-full" else "ablated"
            sel = columns["condition"] == want
            if not sel.any():
                raise ValueError(f"no {want} episode")
            return mean_by_session(columns["score"][sel].astype(float), columns["session_id"][sel], **opts)
        if metric.key == "viab":
            sessions, v = paired(columns, "full", "ablated")
            return ratio_by_session(v["score"][0], v["score"][1], sessions, **opts)
        if metric.key == "viab-cal":
            sessions, v = paired(columns, "full", "ablated", ("brier_sum", "n_conf"))
            return brier_quality_ratio_by_session(v["brier_sum"][0], v["n_conf"][0], v["brier_sum"][1],
                                                  v["n_conf"][1], sessions, **opts)
        raise KeyError(metric.key)

    def describe(self, metric: Metric, columns) -> dict:
        """CG-1 beside the two ratios, and the red flag for a ratio below 1."""
        if metric.key not in ("viab", "viab-cal"):
            return {}
        out: dict = {}
        if metric.key == "viab":
            sessions, v = paired(columns, "full", "ablated")
            out["cg1"] = cg1_completion(v["score"][0], v["score"][1])
            num, den = v["score"][0].sum(), v["score"][1].sum()
            value = num / den if den > 0 else float("nan")
            what = "completion"
        else:
            sessions, v = paired(columns, "full", "ablated", ("brier_sum", "n_conf", "score"))
            confs = _confidences(columns)
            pairs = [(bf / nf if nf else np.nan, ba / na if na else np.nan)
                     for bf, nf, ba, na in zip(v["brier_sum"][0], v["n_conf"][0], v["brier_sum"][1], v["n_conf"][1])]
            pairs = [p for p in pairs if not (np.isnan(p[0]) or np.isnan(p[1]))]
            out["cg1"] = cg1_calibration(*confs["full"], *confs["ablated"], pairs)
            est = brier_quality_ratio_by_session(v["brier_sum"][0], v["n_conf"][0], v["brier_sum"][1],
                                                 v["n_conf"][1], sessions, n_resamples=0)
            value = est.value
            what = "calibration"
        cg = out["cg1"]
        n_note = f"n·KL = {cg['n_used'] * cg['kl']:.2f}"
        out["cg1_reading"] = (f"CG-1: KL {cg['kl']:.4f} nats → n ≈ {cg['n_needed'] or '∞'} needed, "
                              f"{cg['n_used']} used ({n_note}): this run "
                              f"{'could' if cg['detectable'] else 'could NOT'} detect the {what} difference; "
                              f"power {cg['power']:.2f}")
        flags = _flags_ratio(value, what) if not np.isnan(value) else []
        if flags:
            out["flags"] = flags
            out["red"] = True
        return out


def _confidences(columns) -> dict[str, tuple[list[float], list[float]]]:
    """Per condition: every stated confidence and its episode's outcome."""
    import orjson

    out: dict[str, tuple[list[float], list[float]]] = {"full": ([], []), "ablated": ([], [])}
    for cond, score, confs in zip(columns["condition"], columns["score"], columns["confidences"]):
        if cond not in out or confs is None:
            continue
        for c in orjson.loads(confs):
            out[cond][0].append(float(c))
            out[cond][1].append(float(score))
    return out


#: The entry point ``trb.tracks: 4`` (pyproject.toml): registered by the registry when it loads it.
TRACK = Track4()
