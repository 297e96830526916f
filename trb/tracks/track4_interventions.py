"""Track 4 on the release's interventions (spec §3, Track 4: "the Track 1 interventions, plus a no-r_t ablation").

Every Track 1 intervention (t, r′) of the evaluated split (:func:`trb.tracks.track1.track1_items`: a
counterfactual with Φ) is acted through in **closed loop**, twice from the same replayed state and with the
same randomness (common random numbers, seeded by the counterfactual's id):

* **full under do(r′)** — the environment's ``resume`` hook rebuilds the recorded state at step t from the
  step's observation (:mod:`environments.base`); the model sees the recorded context (the steps before t,
  exactly Track 1's c_t), acts at t with ``act(c_t, r_override = r′)``, then goes on acting through its own
  emitted r_t until the recorded goal is reached or the remaining budget is spent;
* **ablated** — the no-r_t ablation (capability ``r_ablation``) from the same state.

Rows: metric ``intervention``, ``item_id`` ``<cf_id>/<condition>``, ``session_id`` the recorded session (the
bootstrap unit), ``t`` the intervened step, ``cf_id`` the pair. An intervention whose step no registered
environment can resume (not a grid stimulus set, an open-ended step, a text Φ) scores no row: the summary
counts and names it under ``interventions.not_resumable``, and where none of a run's interventions could be
resumed the figures are "not applicable" with that reason, never an error.

The work list is capped by the Track 4 option ``max_interventions`` (a fixed hash sample of the split's
interventions by cf_id, the same for every model; recorded with the run).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import orjson

from environments.base import get_environment, resumable
from environments.tasksets import RolloutSeed, RolloutTask
from trb.adapters.capabilities import bind
from trb.context import PastStep
from trb.rollout import EpisodeSpec, EpisodeTrace, Resumption, run_episodes
from trb.tracks.rollouts import compact_trace

__all__ = ["Intervention", "intervention_items", "count_interventions", "score_interventions", "paired_by_cf",
           "DEFAULT_MAX_INTERVENTIONS", "NOT_RESUMABLE", "INT_CONDITIONS"]

#: The interventions a run acts through by default (each is two episodes): sized so that the demo's five
#: baselines stay within its time cap (docs/methodology/track4.md gives the measured cost).
DEFAULT_MAX_INTERVENTIONS = 40
#: Row condition -> the driver's condition.
INT_CONDITIONS = {"full": "own", "ablated": "ablated"}
#: Why the intervention figures are not applicable when no intervention of the run could be resumed.
NOT_RESUMABLE = ("no Track 1 intervention of the split could be resumed in a registered environment (those "
                 "that could not are counted and named under interventions.not_resumable in the run summary)")
#: Summary names of the reasons an intervention is not resumable (named per cf_id in the summary).
_TEXT_PHI = "text Φ (an open-ended step: a rollout acts on discrete steps only)"
_OPEN = "open-ended step (no action space)"
_NO_ENV = "no registered environment resumes the step (its stimulus set or observation is not one of theirs)"


@dataclass(frozen=True)
class Intervention:
    """One episode of one intervention: the recorded step, r′, the condition (``full`` or ``ablated``)."""

    cf_id: str
    session_id: str
    t: int
    split: str
    context_id: str | None
    language: str | None
    stimulus_set: str | None
    observation: str | None
    history: tuple[PastStep, ...]
    action_space: tuple[str, ...] | None
    r_prime: dict
    phi_type: str
    condition: str
    #: How many Track 1 interventions the split holds (the sample was drawn from them).
    of_split: int = 0


def _hash(cf_id: str) -> bytes:
    return hashlib.sha256(f"trb-track4-intervention:{cf_id}".encode()).digest()


def _cf_ids(release, split: str) -> list[str]:
    if "counterfactuals" not in release.configs:
        return []
    return [r["cf_id"] for r in release.rows(
        "SELECT cf_id FROM counterfactuals WHERE split = ? AND phi_type IS NOT NULL", [split])]


def _check_cap(max_interventions) -> int:
    if max_interventions is None:
        return DEFAULT_MAX_INTERVENTIONS
    if not isinstance(max_interventions, int) or isinstance(max_interventions, bool) or max_interventions < 0:
        raise ValueError(f"max_interventions must be a whole number ≥ 0, got {max_interventions!r}")
    return max_interventions


def count_interventions(release, split: str, max_interventions: int | None = None) -> int:
    """The episodes :func:`intervention_items` yields: two per sampled intervention."""
    return 2 * min(len(_cf_ids(release, split)), _check_cap(max_interventions))


def intervention_items(release, split: str, max_interventions: int | None = None) -> Iterator[Intervention]:
    """The two episodes (full, ablated) of each sampled intervention of ``split``, session by session."""
    from trb.tracks.track1 import track1_items

    cap = _check_cap(max_interventions)
    ids = _cf_ids(release, split)
    keep = set(sorted(ids, key=_hash)[:cap])
    if not keep:
        return
    stimulus = {r["session_id"]: r["stimulus_set"] for r in release.rows(
        "SELECT session_id, stimulus_set FROM sessions WHERE split = ?", [split])}
    for item in track1_items(release, split):
        if item.item_id not in keep:
            continue
        c = item.context
        for name in INT_CONDITIONS:
            yield Intervention(item.item_id, item.session_id, item.t, item.split, item.context_id, c.language,
                               stimulus.get(item.session_id), c.observation, c.history, c.action_space,
                               dict(item.r_prime), item.phi_type, name, len(ids))


def _why_not(item: Intervention) -> str | None:
    if item.phi_type != "distribution":
        return _TEXT_PHI
    if not item.action_space:
        return _OPEN
    return None


def score_interventions(adapter, items: Iterable[Intervention], *, greedy: bool = False, timer=None,
                        progress=None) -> tuple[list[dict], dict]:
    """Roll each resumable intervention's two episodes; the rows and the ``interventions`` summary."""
    by_env: dict[str, list[EpisodeSpec]] = {}
    of: dict[str, Intervention] = {}
    left: dict[str, int | None] = {}  # the steps left at the resumed step
    not_resumable: dict[str, str] = {}
    by_reason: dict[str, int] = {}
    of_split = 0
    for item in items:
        of_split = max(of_split, item.of_split)
        seed = RolloutSeed(item.split, 0, f"intervention:{item.cf_id}")
        why = _why_not(item)
        found = None if why else resumable(item.stimulus_set, item.language, item.observation, seed.value)
        if found is None:
            why = why or _NO_ENV
            if item.cf_id not in not_resumable:
                not_resumable[item.cf_id] = why
                by_reason[why] = by_reason.get(why, 0) + 1
            if progress is not None:
                progress(1)
            continue
        env_name, ep = found
        goal = ep.observation_data.get("goal") if hasattr(ep, "observation_data") else None
        task = RolloutTask(item.session_id, "intervention", {"stimulus": item.stimulus_set, "goal": goal})
        spec = EpisodeSpec(f"{item.cf_id}/{item.condition}", item.cf_id, task, seed, INT_CONDITIONS[item.condition],
                           resume=Resumption(item.stimulus_set, item.language, item.observation, item.history,
                                             item.context_id),
                           do_r=item.r_prime if item.condition == "full" else None)
        by_env.setdefault(env_name, []).append(spec)
        of[spec.episode_id] = item
        left[spec.episode_id] = (ep.observation_data or {}).get("steps_left") if hasattr(ep, "observation_data") \
            else None
    bound = bind(adapter)
    rows: list[dict] = []
    for env_name, specs in by_env.items():
        traces = run_episodes(bound, get_environment(env_name), specs, language="en", split=specs[0].seed.split,
                              greedy=greedy, timer=timer, progress=progress)
        rows += [_row(of[tr.spec.episode_id], tr, env_name, left[tr.spec.episode_id]) for tr in traces]
    rows.sort(key=lambda r: r["item_id"])
    reached = {n: sum(r["score"] for r in rows if r["condition"] == n) for n in INT_CONDITIONS}
    summary = {"episodes": len(rows), "reached": reached,
               "steps": int(sum(r["steps"] for r in rows)),
               "not_resumable": {"n": len(not_resumable), "by_reason": by_reason, "items": not_resumable}}
    if of_split:
        summary["of_split"] = of_split
    return rows, summary


def _row(item: Intervention, trace: EpisodeTrace, env_name: str, steps_left: int | None) -> dict:
    reached = 1.0 if trace.reached else 0.0
    confs = trace.confidences
    detail = {**compact_trace(trace), "cf_id": item.cf_id, "t": item.t, "environment": env_name,
              "do_r": item.r_prime if item.condition == "full" else None, "steps_left": steps_left}
    return {"track": "4", "metric": "intervention", "item_id": f"{item.cf_id}/{item.condition}",
            "session_id": item.session_id, "t": item.t, "split": item.split, "context_id": item.context_id,
            "score": reached, "condition": item.condition, "cf_id": item.cf_id, "steps": len(trace.steps),
            "brier_sum": float(sum((c - reached) ** 2 for c in confs)), "n_conf": len(confs),
            "confidences": orjson.dumps(confs).decode(),
            "detail": orjson.dumps(detail, option=orjson.OPT_SORT_KEYS, default=str).decode()}


def paired_by_cf(columns, fields: tuple[str, ...] = ("score",)):
    """The interventions with both a full and an ablated episode: (their recorded sessions, {field: (full values,
    ablated values)}), pair by pair in cf_id order."""
    cond, cf, sess = columns["condition"], np.asarray(columns["cf_id"]), np.asarray(columns["session_id"])
    where: dict = {}
    for i, (c, k) in enumerate(zip(cond, cf)):
        if c in INT_CONDITIONS and k is not None:
            where.setdefault(k, {})[c] = i
    keys = sorted(k for k, v in where.items() if len(v) == 2)
    if not keys:
        raise ValueError("no intervention has both a full and an ablated episode")
    ia = np.asarray([where[k]["full"] for k in keys], dtype=int)
    ib = np.asarray([where[k]["ablated"] for k in keys], dtype=int)
    out = {f: (np.asarray(columns[f], dtype=float)[ia], np.asarray(columns[f], dtype=float)[ib]) for f in fields}
    return sess[ia], out
