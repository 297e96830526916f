"""Track 5 — navigability, spec §3: is the self-model a steering wheel or a dashboard light?

**Reach-rate lift.** On the task set's navigation tasks (the observation names a goal; the task
defines a different *target* region), each held-out seed is rolled three times with the same
randomness, every episode ending when the target is reached or the budget is spent:

* ``steered``: r_t := the model's own emitted r_t with ``goal`` set to the target (``r_override``);
* ``steered-plan`` (the stated variant): also ``planned_next`` := an action toward the target;
* ``ablated``: the no-r_t ablation.

``nav`` = reach rate (steered) − reach rate (ablated), paired by task and seed, session-bootstrap
CI; ``nav-plan`` the same for the variant. Pass bar (a direction): lift > 0 with the CI excluding 0.

**CG-2, the holonomy of the steering** (``nav-cg2``, ``nav-cg2-r``). The spec asks whether the
effect of moving r's goal from g1 to g2 depends on the route by which the state was reached.
Operationalised on the loop tasks (drift 0, so routes are deterministic): three forced episodes
from the same start reach the same cell at the same step (the same state):

* reference **A**: route a, r's goal clamped to g1 at every step;
* **route loop**: route b (the same moves in another order), goal g1 throughout;
* **goal loop**: route a, r's goal clamped g1 → g2 → … → g2 (the alternative goal on every step
  after the first).

At the end state each is probed: ``emit_r(c)``, and ``act(c, r_override = emit_r(c) with goal
g)`` for g = g1 and g = g2 (one batched act per probe goal). The **steering effect** after a route
is the vector over actions ``e(a) = p(a | goal g2) − p(a | goal g1)``; the **holonomy** of a loop
is the size of the difference of the two routes' effects, ``½ Σ_a |e_loop(a) − e_A(a)|``
(:func:`holonomy`; in [0, 2], and at most TV(p_A(·|g1), p_A(·|g2)) + TV(p_loop(·|g1), p_loop(·|g2))).
``nav-cg2`` is the mean over loops of both kinds, CI over loop tasks (session bootstrap). A model
whose action depends on its history, but whose response to the goal change does not (the history
adds the same to both probes), gives 0; a model whose goal response depends on the route gives
> 0. The flag (:data:`HOLONOMY_RULE`) is decided by the interval against :data:`HOLONOMY_TOLERANCE`.
``nav-cg2-r`` is the change of the emitted r at the end state (:func:`trb.rollout.r_change`) — a
history dependence of the self-report, not a holonomy; it carries no flag.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import orjson
import pyarrow as pa

from environments.tasksets import TaskSet
from trb.adapters.capabilities import RAblation
from trb.paired_tests import mcnemar_verdict_test
from trb.rollout import EpisodeSpec, r_change
from trb.stats import mean_by_session, paired_delta_by_session
from trb.tracks.base import Column, Metric
from trb.tracks.rollouts import EPISODE_COLUMNS, episode_row, paired, roll
from trb.verdicts import FlagRule

__all__ = ["TRACK", "Track5", "track5_items", "LOOP_KINDS", "HOLONOMY_TOLERANCE", "steering_effect", "holonomy"]

REACH = ("steered", "steered-plan", "ablated")
LOOP_KINDS = ("route", "goal")
#: A mean holonomy above this is flagged as non-zero. A steerer whose goal response does not depend on the route gives
#: 0 (up to float rounding); a text model's probes go through its own emitted r and batched float arithmetic, which
#: can move its distributions by far less than this without the steering depending on the route; 0.01 (on the TV
#: scale: ½ Σ |difference|) is the smallest difference of steering effects the flag calls material.
HOLONOMY_TOLERANCE = 0.01
#: Steering that does not move the agent toward the target, decided by the exact paired (McNemar) test of the
#: steered and ablated episodes: flagged when it establishes the lift below 0; not flagged when it establishes it
#: above 0; a lift of about 0 (a dashboard light) is "not established": steering was not shown to work.
DASHBOARD_RULE = FlagRule("not a steering wheel", 0.0, "below", inclusive=True, red=False, test="paired exact",
                          says="steering r's goal moves the agent away from the target — worse than a dashboard "
                               "light")
#: Non-zero holonomy: the spec's red flag on Track 5 (trb.verdicts decides it by the interval).
HOLONOMY_RULE = FlagRule("path-dependent steering", HOLONOMY_TOLERANCE, "above", red=True,
                         says="the steering wheel behaves differently after a closed loop — a red flag on Track 5's "
                              "out-of-distribution generalisation")


def track5_items(tasks: TaskSet, split: str) -> Iterator[EpisodeSpec]:
    for task in tasks.of_kind("navigation"):
        for seed in tasks.seeds_for(task, split):
            pair = f"{task.id}/{seed.k}"
            for cond in REACH:
                yield EpisodeSpec(f"{pair}/{cond}", pair, task, seed, cond, target=task.target,
                                  steer_to=task.target if cond != "ablated" else None)
    for task in tasks.of_kind("loop"):
        seeds = tasks.seeds_for(task, split)
        if not seeds:
            continue
        seed = seeds[0]  # a loop is deterministic (drift 0): one seed
        g1, g2 = task.goal, task.alt_goal
        route_a, route_b = task.routes
        n = len(route_a)
        plans = {"ref": (route_a, (g1,) * n), "route": (route_b, (g1,) * n), "goal": (route_a, (g1,) + (g2,) * (n - 1))}
        for kind, (route, goals) in plans.items():
            yield EpisodeSpec(f"{task.id}/{kind}", task.id, task, seed, "forced", forced=route, goals=goals,
                              probe_goals=(g1, g2))


def steering_effect(p_g1: dict[str, float], p_g2: dict[str, float]) -> dict[str, float]:
    """The effect of moving r's goal from g1 to g2 at one state: ``p(a | g2) − p(a | g1)`` for every action."""
    return {a: p_g2.get(a, 0.0) - p_g1.get(a, 0.0) for a in sorted(set(p_g1) | set(p_g2))}


def holonomy(effect_a: dict[str, float], effect_b: dict[str, float]) -> float:
    """CG-2's holonomy of a loop: ``½ Σ_a |effect_b(a) − effect_a(a)|``, the size (on the TV scale) of the
    difference of two routes' steering effects at the same state (:func:`steering_effect`). 0 when the goal change
    moves the action distribution the same way after both routes; at most 2."""
    keys = sorted(set(effect_a) | set(effect_b))
    return 0.5 * sum(abs(effect_b.get(a, 0.0) - effect_a.get(a, 0.0)) for a in keys)


class Track5:
    """Track 5 on the registry: reach-rate lift under r_t-steering, and the CG-2 path-dependence check."""

    id = "5"
    name = "navigability"
    section = "TRB spec §3, Track 5 (navigability, with CG-2)"
    source = "tasks"
    needs: tuple[type, ...] = (RAblation,)
    metrics = (
        Metric("nav", "5", "reach", "Track 5 — navigability (reach-rate lift)",
               "target reach rate with r's goal steered to the target − under the no-r_t ablation, paired by task "
               "and seed (direction: > 0 with the CI excluding 0)", headline=True, bounds=(-1.0, 1.0), chance=0.0,
               verdict=DASHBOARD_RULE),
        Metric("nav-plan", "5", "reach", "Track 5 — lift, goal and planned_next steered",
               "as the lift, with planned_next also set to an action toward the target (the stated variant)",
               headline=False, bounds=(-1.0, 1.0), chance=0.0, verdict=DASHBOARD_RULE),
        Metric("nav-steered", "5", "reach", "Track 5 — reach rate, goal steered",
               "share of episodes reaching the target with r's goal steered to it", headline=False, bounds=(0.0, 1.0)),
        Metric("nav-abl", "5", "reach", "Track 5 — reach rate, no-r_t ablation",
               "share of episodes reaching the target under the no-r_t ablation", headline=False, bounds=(0.0, 1.0)),
        Metric("nav-cg2", "5", "holonomy", "Track 5 — CG-2 holonomy of the steering",
               "½ Σ_a |e_loop(a) − e_ref(a)|, where e(a) = p(a | r's goal g2) − p(a | r's goal g1) is the effect of "
               "moving r's goal from g1 to g2 at the same state reached by a closed loop and by the reference route "
               "(0: the goal's effect does not depend on the route; > 0 is a red flag)", headline=False,
               bounds=(0.0, 2.0), chance=0.0, verdict=HOLONOMY_RULE),
        Metric("nav-cg2-r", "5", "holonomy", "Track 5 — CG-2 change of the emitted r",
               "change of the emitted r at the same state after a closed loop (trb.rollout.r_change)",
               headline=False, bounds=(0.0, 1.0), requires="r_change", main=False),
    )
    columns = (*EPISODE_COLUMNS,
               Column("r_change", pa.float64(), "DOUBLE", "Track 5 (CG-2): change of the emitted r after a loop"))

    def count(self, tasks: TaskSet, split: str) -> int:
        nav = sum(len(tasks.seeds_for(t, split)) for t in tasks.of_kind("navigation")) * len(REACH)
        loops = sum(1 for t in tasks.of_kind("loop") if tasks.seeds_for(t, split)) * (1 + len(LOOP_KINDS))
        return nav + loops

    @staticmethod
    def part_key(spec: EpisodeSpec) -> str:
        """Parts (:mod:`trb.parts`) keep a task's episodes together: its paired conditions, its CG-2 loops."""
        return spec.task.id

    def items(self, tasks: TaskSet, split: str) -> Iterator[EpisodeSpec]:
        return track5_items(tasks, split)

    def score(self, adapter, items, timer=None, progress=None, *, tasks: TaskSet, split: str,
              greedy: bool = False):
        traces, cx = roll(adapter, items, tasks, split, greedy=greedy, timer=timer, progress=progress)
        rows = [episode_row("5", "reach", tr, tr.spec.condition, split, cx(tr.spec.task))
                for tr in traces if tr.spec.condition != "forced"]
        loops: dict[str, dict] = {}
        for tr in traces:
            if tr.spec.condition == "forced":
                loops.setdefault(tr.spec.task.id, {})[tr.spec.episode_id.rsplit("/", 1)[1]] = tr
        for loop_id, by in sorted(loops.items()):
            ref = by["ref"]
            g1, g2 = ref.spec.probe_goals
            effects = {k: steering_effect(tr.probe_ps[g1], tr.probe_ps[g2]) for k, tr in by.items()}
            side = {k: {"actions": list(tr.spec.forced), "goals": list(tr.spec.goals), "p": tr.probe_ps,
                        "effect": effects[k], "r": tr.probe_r} for k, tr in by.items()}
            for kind in LOOP_KINDS:
                other = by[kind]
                rows.append({"track": "5", "metric": "holonomy", "item_id": f"{loop_id}/{kind}", "session_id": loop_id,
                             "t": len(ref.steps), "split": split, "context_id": cx(ref.spec.task),
                             "score": holonomy(effects["ref"], effects[kind]), "condition": kind,
                             "steps": len(other.steps), "r_change": r_change(ref.probe_r, other.probe_r),
                             "detail": orjson.dumps({"probe_goals": [g1, g2], "reference": side["ref"],
                                                     "loop": side[kind]},
                                                    option=orjson.OPT_SORT_KEYS, default=str).decode()})
        reach = {c: sum(r["score"] for r in rows if r["metric"] == "reach" and r["condition"] == c) for c in REACH}
        return rows, {"scored": len(rows), "episodes": len(traces), "reached": reach, "loops": len(loops)}

    def aggregate(self, metric: Metric, columns, *, n_resamples: int, confidence: float, seed: int):
        opts = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
        if metric.key in ("nav", "nav-plan"):
            steered = "steered" if metric.key == "nav" else "steered-plan"
            sessions, v = paired(columns, steered, "ablated")
            return paired_delta_by_session(v["score"][0], v["score"][1], sessions, **opts)
        if metric.key in ("nav-steered", "nav-abl"):
            want = "steered" if metric.key == "nav-steered" else "ablated"
            sel = columns["condition"] == want
            if not sel.any():
                raise ValueError(f"no {want} episode")
            return mean_by_session(columns["score"][sel].astype(float), columns["session_id"][sel], **opts)
        if metric.key == "nav-cg2":
            return mean_by_session(columns["score"].astype(float), columns["session_id"], **opts)
        if metric.key == "nav-cg2-r":
            return mean_by_session(columns["r_change"].astype(float), columns["session_id"], **opts)
        raise KeyError(metric.key)

    def describe(self, metric: Metric, columns) -> dict:
        """The exact paired test the lifts' verdicts are decided by; the per-kind holonomy of CG-2 (the flags are
        the metrics' verdicts: :mod:`trb.verdicts`)."""
        out: dict = {}
        if metric.key in ("nav", "nav-plan"):
            _, v = paired(columns, "steered" if metric.key == "nav" else "steered-plan", "ablated")
            out["verdict_test"] = mcnemar_verdict_test(
                v["score"][0], v["score"][1], why_none="no discordant pair: the two conditions never differed, so "
                                                       "steering was not shown to work (a dashboard light is not "
                                                       "excluded)")
        if metric.key in ("nav-cg2", "nav-cg2-r"):
            col = columns["score"] if metric.key == "nav-cg2" else columns["r_change"]
            vals = np.asarray(col, dtype=float)
            out["by_kind"] = {k: float(np.mean(vals[columns["condition"] == k]))
                              for k in LOOP_KINDS if (columns["condition"] == k).any()}
        return out


#: The entry point ``trb.tracks: 5`` (pyproject.toml): registered by the registry when it loads it.
TRACK = Track5()
