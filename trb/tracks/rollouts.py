"""What Tracks 4 and 5 share: episodes from a task set, rolled through the driver, as item rows.

A rollout track's work list comes from a task set (:mod:`environments.tasksets`), not from the
release: ``count(tasks, split)`` and ``items(tasks, split)`` take the :class:`TaskSet` the run was
given. Its item rows are episodes: ``item_id`` ``<task>/<k>/<condition>``, ``session_id``
``<task>/<k>`` (the task-and-seed pair, the bootstrap unit: the paired conditions of one task and
seed are resampled together), ``condition``, ``score`` 1.0 when the target was reached, ``steps``,
and the calibration sums of the stated confidences against that outcome (``brier_sum``, ``n_conf``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import orjson
import pyarrow as pa

from environments.tasksets import TaskSet
from trb.adapters.capabilities import bind
from trb.rollout import EpisodeTrace, run_episodes
from trb.tracks.base import Column

__all__ = ["EPISODE_COLUMNS", "context_id", "episode_row", "paired", "compact_trace", "roll"]

EPISODE_COLUMNS = (
    Column("condition", pa.string(), "VARCHAR", "Tracks 4 and 5: the rollout condition of the episode (full, "
           "ablated, steered, steered-plan) or the CG-2 loop kind (route, goal)"),
    Column("steps", pa.int32(), "INTEGER", "Tracks 4 and 5: the episode's steps"),
    Column("brier_sum", pa.float64(), "DOUBLE", "Track 4: Σ (confidence − reached)² over the episode's steps"),
    Column("n_conf", pa.int32(), "INTEGER", "Track 4: the steps with a stated confidence"),
    Column("confidences", pa.string(), "VARCHAR", "Track 4: the episode's stated confidences, a JSON list"),
)


def context_id(tasks: TaskSet):
    """The context id a rollout's contexts carry: a transfer task's own context (the release's transfer context id,
    so Track 6 groups its rows with the other tracks' items there); otherwise ``<stimulus>.rollout.<language>``
    (for the grid; the environment's task table names its stimulus set), like a release's
    ``<stimulus>.<population>.<language>``."""

    def of(task) -> str:
        if task.context is not None:
            return task.context
        return f"{task.table.get('stimulus', tasks.environment)}.rollout.{tasks.language}"

    return of


def roll(adapter, items, tasks: TaskSet, split: str, *, greedy: bool = False, timer=None, progress=None):
    """Roll a track's episodes (``items``: EpisodeSpecs) through ``adapter`` in the task set's environment.

    Returns (the traces, in the order given; the context-id function the episodes used)."""
    cx = context_id(tasks)
    traces = run_episodes(bind(adapter), tasks.env(), list(items), language=tasks.language, split=split,
                          context_id=cx, greedy=greedy, timer=timer, progress=progress)
    return traces, cx


def compact_trace(trace: EpisodeTrace) -> dict:
    spec = trace.spec
    return {"task": spec.task.id, "seed": spec.seed.text, "seed_value": spec.seed.value,
            "condition": spec.condition, "target": list(spec.target or [spec.task.goal]),
            "actions": [s.action for s in trace.steps], "causes": [s.cause for s in trace.steps],
            "r": [s.r_emitted for s in trace.steps],
            "steered": [s.r_acted for s in trace.steps] if spec.condition.startswith("steered") else None,
            "reached": trace.reached}


def episode_row(track: str, metric: str, trace: EpisodeTrace, condition: str, split: str, cx: str | None) -> dict:
    reached = 1.0 if trace.reached else 0.0
    confs = trace.confidences
    return {"track": track, "metric": metric, "item_id": f"{trace.spec.pair_id}/{condition}",
            "session_id": trace.spec.pair_id, "t": None, "split": split, "context_id": cx, "score": reached,
            "condition": condition, "steps": len(trace.steps),
            "brier_sum": float(sum((c - reached) ** 2 for c in confs)), "n_conf": len(confs),
            "confidences": orjson.dumps(confs).decode(),
            "detail": orjson.dumps(compact_trace(trace), option=orjson.OPT_SORT_KEYS, default=str).decode()}


def paired(columns: Mapping[str, np.ndarray], a: str, b: str, fields: tuple[str, ...] = ("score",)):
    """The pairs (sessions) that have both condition ``a`` and ``b``: (sessions, {field: (values_a, values_b)})."""
    cond, sess = columns["condition"], np.asarray(columns["session_id"])
    where: dict = {}  # a session's id, or its code (the report's): grouped and ordered as they are
    for i, (c, s) in enumerate(zip(cond, sess)):
        if c in (a, b):
            where.setdefault(s, {})[c] = i
    keys = sorted(k for k, v in where.items() if a in v and b in v)
    ia = np.asarray([where[k][a] for k in keys], dtype=int)
    ib = np.asarray([where[k][b] for k in keys], dtype=int)
    out = {f: (np.asarray(columns[f], dtype=float)[ia], np.asarray(columns[f], dtype=float)[ib]) for f in fields}
    if not keys:
        raise ValueError(f"no task-and-seed pair has both a {a!r} and an {b!r} episode")
    return np.asarray(keys, dtype=sess.dtype if sess.dtype.kind in "iu" else object), out
