"""The rollout driver: a model acting in an environment, step after step, through the two hooks.

At each step of an episode the adapter's ``emit_r(c_t)`` gives r_t and the action distribution
comes from ``act(c_t, r_override=...)`` (or from the no-r_t ablation); the action is drawn from it
with the episode's recorded seed (or taken greedily), the environment steps, and the next context
is built. Every episode of a batch advances in **lockstep**: one batched ``emit_r`` and one batched
``act`` (or ablated act) per step for all the episodes still running, so N sessions cost about one
batched call per step, not N.

Conditions (what the action is drawn from; r_t is emitted at every step in all of them):

=================  ===================================================================================
``own``            act(c_t, r_override = r_t): the model acts through its own emitted r_t (Track 4 "full")
``ablated``        the no-r_t ablation (capability ``r_ablation``): r_t is still stated, never acted on
``steered``        act(c_t, r_override = r_t with goal := the target)  (Track 5)
``steered-plan``   as ``steered``, and planned_next := an action toward the target (the stated variant)
``forced``         the actions are given (a CG-2 route); r_t's goal is clamped per step; no act call.
                   After the route, the probes: one emit_r, and one act per probe goal, with goal := it.
=================  ===================================================================================

**Contexts are built exactly like the tracks' contexts** (:class:`~trb.context.StepContext`: the
completed steps, each with the r that was in force at it, its action, action space and outcome;
the current observation and action space; the context id, language and split), so every adapter
renders and windows them as it does for Tracks 1 and 3. The r a past step shows is the r_t in force
there: the emitted one (``own``, ``ablated``), the clamped one (``steered``, ``forced``).

**Resumed episodes** (Track 4's interventions): a spec with ``resume`` (a :class:`Resumption`) starts at a
recorded step of a release's session instead of a task's start: the environment's ``resume`` hook rebuilds
the state from the step's observation (:mod:`environments.base`), the context's past steps are the
recorded ones (exactly as Track 1's c_t holds them), and its context id and language are the session's. With
``do_r``, the first step's act is under do(r′) (``act(c_t, r_override = r′)``, shown as that step's r in the
later contexts); the episode then goes on as its condition says (``own``: through its own r_t).

**Randomness** (common random numbers): an episode's environment is seeded by its seed's integer,
its action draws by ``random.Random(seed text + ":policy")``; the paired conditions of one task and
seed share both, so their difference is the conditions', not the dice's.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from environments.base import Environment, Episode
from environments.tasksets import RolloutSeed, RolloutTask
from trb.context import PastStep, StepContext
from trb.distributions import check_distribution
from trb.errors import AdapterError
from trb.tracks.timing import AdapterTimer

__all__ = ["CONDITIONS", "Resumption", "EpisodeSpec", "StepRecord", "EpisodeTrace", "run_episodes", "tv_distance", "r_change"]

CONDITIONS = ("own", "ablated", "steered", "steered-plan", "forced")
#: Episodes advanced together in one batched call (bounds memory; results do not depend on it).
MAX_BATCH = 512


@dataclass(frozen=True)
class Resumption:
    """Where a resumed episode starts: a recorded step (its session's stimulus set, language and context id, the
    step's observation) and the recorded steps before it, the context's past."""

    stimulus_set: str | None
    language: str | None
    observation: str
    history: tuple[PastStep, ...]
    context_id: str | None = None


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode to roll: a task, a seed, a condition (and, for ``forced``, the route and goal schedule)."""

    episode_id: str
    pair_id: str  # the bootstrap unit: the episodes of one task and seed
    task: RolloutTask
    seed: RolloutSeed
    condition: str
    target: tuple[str, ...] | None = None  # the region whose reaching ends it (default: the task's goal)
    steer_to: tuple[str, ...] | None = None  # steered conditions: the region r's goal points at
    forced: tuple[str, ...] | None = None  # forced: the actions
    goals: tuple[str, ...] | None = None  # forced: r's goal at each step
    probe_goals: tuple[str, ...] = ()  # forced: the goals of the final probes (one act each), in order
    resume: Resumption | None = None  # start at a recorded step (environment's resume hook) instead of the task's
    do_r: dict | None = None  # the first step acts under do(r′) (own / steered conditions)

    def __post_init__(self) -> None:
        if len(set(self.probe_goals)) != len(self.probe_goals):
            raise ValueError(f"episode {self.episode_id}: the probe goals repeat: {self.probe_goals}")


@dataclass
class StepRecord:
    t: int
    r_emitted: dict
    r_acted: dict | None  # None under the ablation
    p: dict[str, float] | None  # None for a forced step
    action: str
    outcome: str
    cause: str
    reached: bool


@dataclass
class EpisodeTrace:
    spec: EpisodeSpec
    steps: list[StepRecord] = field(default_factory=list)
    reached: bool = False
    probe_r: dict | None = None  # forced: emitted r at the end state
    probe_ps: dict[str, dict[str, float]] = field(default_factory=dict)  # forced: probe goal -> act at the end state

    @property
    def probe_p(self) -> dict[str, float] | None:
        """The first probe's distribution (forced; None before the probes)."""
        goals = self.spec.probe_goals
        return self.probe_ps.get(goals[0]) if goals else None

    @property
    def confidences(self) -> list[float]:
        return [float(s.r_emitted["confidence"]) for s in self.steps
                if isinstance(s.r_emitted.get("confidence"), (int, float))
                and not isinstance(s.r_emitted.get("confidence"), bool)]


class _Live:
    """An episode in progress: the environment's episode, its history, its policy generator."""

    def __init__(self, spec: EpisodeSpec, env: Environment, language: str, split: str, context_id: str | None):
        self.spec = spec
        self.trace = EpisodeTrace(spec)
        self.rng = random.Random(spec.seed.text + ":policy")
        self.history: list[PastStep] = []
        if spec.resume is not None:
            at = spec.resume
            ep = env.resume(at.stimulus_set, at.language, at.observation, spec.seed.value)
            if ep is None:
                raise ValueError(f"episode {spec.episode_id}: environment {env.name} cannot resume its recorded step")
            self.ep, self.history = ep, list(at.history)
            language, context_id = at.language, at.context_id
        else:
            language = spec.task.language or language  # a transfer task speaks its context's language
            self.ep: Episode = env.start(spec.task.table, goal=spec.task.goal, seed=spec.seed.value,
                                         language=language, target=spec.target)
        self.start_t = len(self.history)
        self.language, self.split, self.context_id = language, split, context_id
        self.probed = False

    @property
    def running(self) -> bool:
        if self.spec.condition == "forced":
            return not self.probed
        return not self.ep.done

    def context(self) -> StepContext:
        space = self.ep.action_space
        return StepContext(self.spec.episode_id, len(self.history), tuple(self.history), self.ep.observation,
                           tuple(space) if space is not None else None, self.context_id, self.language, self.split)


def _steer(r: dict, live: _Live) -> dict:
    spec = live.spec
    out = dict(r)
    out["goal"] = spec.steer_to[0]
    if spec.condition == "steered-plan":
        toward = live.ep.toward(list(spec.steer_to))
        out["planned_next"] = toward[0] if toward else r.get("planned_next")
    return out


def _choose(p: dict[str, float], space: Sequence[str], rng: random.Random, greedy: bool) -> str:
    if greedy:
        return max(space, key=lambda a: (p[a], -space.index(a)))
    u = rng.random()
    acc = 0.0
    for a in space:
        acc += p[a]
        if u < acc:
            return a
    return space[-1]


def run_episodes(adapter, env: Environment, specs: Sequence[EpisodeSpec], *, language: str, split: str,
                 context_id: Callable[[RolloutTask], str | None] | None = None, greedy: bool = False,
                 timer: AdapterTimer | None = None, progress: Callable[[int], None] | None = None,
                 max_batch: int = MAX_BATCH) -> list[EpisodeTrace]:
    """Roll every episode of ``specs`` to its end in lockstep; return their traces in the order given.

    ``language`` is the episodes' language, except a transfer task's (:class:`RolloutTask` ``language``: its
    context's). ``adapter`` is a :class:`~trb.adapters.capabilities.BoundAdapter`; the ``ablated`` condition needs its
    ``r_ablation`` capability. ``progress`` is called with the number of episodes that finish.

    Raises:
        AdapterError: the adapter breaks its contract (a distribution off the action space, not summing to 1;
            a missing capability), or an open-ended step (a rollout acts on discrete steps only).
    """
    timer = timer or AdapterTimer()
    cx = context_id or (lambda task: None)
    out: list[EpisodeTrace] = []
    for lo in range(0, len(specs), max_batch):
        live = [_Live(s, env, language, split, cx(s.task)) for s in specs[lo:lo + max_batch]]
        while True:
            active = [x for x in live if x.running]
            if not active:
                break
            _advance(adapter, active, greedy, timer, progress)
        out += [x.trace for x in live]
    return out


def _advance(adapter, active: list[_Live], greedy: bool, timer: AdapterTimer, progress) -> None:
    contexts = [x.context() for x in active]
    for c in contexts:
        if not c.action_space:
            raise AdapterError(f"episode {c.session_id} step {c.t} is open-ended: rollouts act on discrete steps")
    with timer.timed(len(contexts)):
        emitted = adapter.emit_many(contexts)
    acting: list[int] = []
    overrides: list[dict] = []
    ablated: list[int] = []
    probes: list[int] = []
    acted: list[dict | None] = [None] * len(active)
    for i, (x, r) in enumerate(zip(active, emitted)):
        r = dict(r or {})
        emitted[i] = r
        cond = x.spec.condition
        if cond == "forced":
            t = len(x.history)
            if t < len(x.spec.forced):
                acted[i] = {**r, "goal": x.spec.goals[t]}
            else:
                probes.append(i)
                if x.spec.probe_goals:  # the first probe rides with this step's acting episodes
                    acted[i] = {**r, "goal": x.spec.probe_goals[0]}
                    acting.append(i)
                    overrides.append(acted[i])
        elif cond == "ablated":
            ablated.append(i)
        else:
            acted[i] = r if cond == "own" else _steer(r, x)
            if x.spec.do_r is not None and len(x.history) == x.start_t:
                acted[i] = dict(x.spec.do_r)
            acting.append(i)
            overrides.append(acted[i])
    dists: list[dict | None] = [None] * len(active)
    if acting:
        with timer.timed(len(acting)):
            ps = adapter.act_many([contexts[i] for i in acting], overrides)
        for i, p in zip(acting, ps):
            dists[i] = p
    if ablated:
        with timer.timed(len(ablated)):
            ps = adapter.act_ablated_many([contexts[i] for i in ablated])
        for i, p in zip(ablated, ps):
            dists[i] = p
    # the probes at the end of a forced route: the first went with the acting episodes; each later probe goal is
    # one more batched act for every episode probing it
    probed: dict[int, dict[str, dict]] = {i: {} for i in probes}
    for j in range(max((len(active[i].spec.probe_goals) for i in probes), default=0)):
        at = [i for i in probes if j < len(active[i].spec.probe_goals)]
        goals = [active[i].spec.probe_goals[j] for i in at]
        if j == 0:
            ps = [dists[i] for i in at]
        else:
            with timer.timed(len(at)):
                ps = adapter.act_many([contexts[i] for i in at], [{**emitted[i], "goal": g} for i, g in zip(at, goals)])
        for i, g, p in zip(at, goals, ps):
            probed[i][g] = p
    finished = 0
    for i, x in enumerate(active):
        c = contexts[i]
        who = f"{adapter.name} on episode {c.session_id} step {c.t}"
        if i in probed:
            x.trace.probe_r = emitted[i]
            x.trace.probe_ps = {g: check_distribution(p, c.action_space, f"{who} (probe, goal {g})")
                                for g, p in probed[i].items()}
            x.probed = True
            finished += 1
            continue
        if dists[i] is not None:
            dists[i] = check_distribution(dists[i], c.action_space, who)
        if x.spec.condition == "forced":
            action = x.spec.forced[len(x.history)]
        else:
            action = _choose(dists[i], c.action_space, x.rng, greedy)
        res = x.ep.step(action)
        shown = acted[i] if acted[i] is not None else emitted[i]
        x.history.append(PastStep(c.t, c.observation, shown, action, c.action_space, res.outcome))
        x.trace.steps.append(StepRecord(c.t, emitted[i], acted[i], dists[i], action, res.outcome, res.cause,
                                        res.reached))
        if res.reached:
            x.trace.reached = True
        if x.spec.condition != "forced" and x.ep.done:
            finished += 1
    if progress is not None and finished:
        progress(finished)


def tv_distance(p: dict[str, float], q: dict[str, float]) -> float:
    """Total variation distance between two distributions over the same actions."""
    keys = set(p) | set(q)
    return 0.5 * sum(abs(p.get(a, 0.0) - q.get(a, 0.0)) for a in keys)


def r_change(r1: dict | None, r2: dict | None) -> float:
    """How far two emitted r's are apart, in [0, 1]: the mean over the four slots of 1{differ} for goal and
    planned_next and |difference| for caused_by_self and confidence (a slot stated in one r and not the other
    differs by 1; a slot stated in neither is left out; 0 when neither states any)."""
    from trb.context import R_SLOTS

    r1, r2 = r1 or {}, r2 or {}
    parts = []
    for slot in R_SLOTS:
        a, b = r1.get(slot), r2.get(slot)
        if a is None and b is None:
            continue
        if a is None or b is None:
            parts.append(1.0)
        elif slot in ("caused_by_self", "confidence"):
            parts.append(min(1.0, abs(float(a) - float(b))))
        else:
            parts.append(0.0 if a == b else 1.0)
    return sum(parts) / len(parts) if parts else 0.0
