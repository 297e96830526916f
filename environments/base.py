"""The environment protocol and its registry.

An environment turns a *task* (a table of a study file, checked by the environment) into
episodes. An episode shows an observation, offers an action space (or none: an open-ended
step, whose action is free text), and answers each action with the outcome as the
environment renders it (never saying why it happened) and, for the record, the ground-truth
cause of the change: ``self`` (the agent's own action), ``exogenous`` (a change from outside),
``both`` or ``none``. Attribution items are made from that cause.

Environments are found by name: the built-ins, then the ``trb.environments`` entry-point group
(a package declares ``[project.entry-points."trb.environments"] name = "pkg.module:ENVIRONMENT"``).
Episodes are deterministic given (task, goal, seed, language, target) and the actions taken, so a
half-recorded session can be replayed from its actions, and a closed-loop rollout (Tracks 4 and 5,
:mod:`trb.rollout`) re-created from its seed. A rollout's tasks come from a versioned task set
(:mod:`environments.tasksets`).

**The optional resume hook.** An environment may also offer
``resume(stimulus_set, language, observation, seed) -> Episode | None``: the episode at a *recorded*
step of a release's session, rebuilt from what the release holds (the session's stimulus set and
language, the step's observation text) and a seed for what happens next; None when that step is not
one of its own. Track 4 acts the release's interventions through it in closed loop (the model sees
the recorded steps before t, then acts under do(r′) from the rebuilt state); an environment without
it leaves them "not resumable". :func:`resumable` finds the environment that can resume a step. It
is not part of the :class:`Environment` protocol, so environments written before it stay valid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from toolkit.errors import ExitCode, ToolkitError

__all__ = ["ENTRY_POINT_GROUP", "StepOutcome", "Episode", "Environment", "EnvironmentRefused",
           "register_environment", "get_environment", "environment_names", "environment_problems", "resumable"]

ENTRY_POINT_GROUP = "trb.environments"
Cause = Literal["self", "exogenous", "both", "none"]


class EnvironmentRefused(ToolkitError):
    """An environment name that is not registered, or a task it cannot run (a usage error: exit 2).

    It depends on :mod:`schemas` only, so the engine (which never imports the corpus) can use environments."""

    exit_code = ExitCode.USAGE


@dataclass(frozen=True)
class StepOutcome:
    outcome: str  # as the environment renders it, in the episode's language
    cause: Cause  # ground truth: who changed the world this step
    done: bool
    reached: bool = False  # the episode's target region is reached (the episode is then done)


@runtime_checkable
class Episode(Protocol):
    @property
    def observation(self) -> str:
        """What the agent sees now, as text (what a model is shown)."""
        ...

    @property
    def observation_data(self) -> dict:
        """The same observation as structure (JSON-serialisable; for records and scripted agents, never a
        model's input)."""
        ...

    @property
    def action_space(self) -> list[str] | None: ...

    @property
    def done(self) -> bool: ...

    @property
    def target_reached(self) -> bool:
        """The agent stands in the episode's target region (the task's goal unless ``start`` was given a target)."""
        ...

    def toward(self, cells: Sequence[str]) -> tuple[str, ...]:
        """The actions that bring the agent closer to the region ``cells`` now (empty when none does): what a
        rollout writes into ``planned_next`` when it steers toward a target (Track 5's stated variant)."""
        ...

    def step(self, action: str) -> StepOutcome: ...


@runtime_checkable
class Environment(Protocol):
    name: str
    languages: tuple[str, ...]  # languages its texts come in

    def check_task(self, task: Mapping) -> list[tuple[str, str]]:
        """Problems of a task table: (key, what is wrong). Empty when the task can run."""
        ...

    def goals(self, task: Mapping) -> tuple[str, str | None]:
        """The task's goal and its paired goal (the second session's; None when the task has none)."""
        ...

    def start(self, task: Mapping, *, goal: str, seed: int, language: str,
              target: Sequence[str] | None = None) -> Episode:
        """A new episode of ``task`` toward ``goal``; ``target`` is the region whose reaching ends it (default: the
        goal). Deterministic given its arguments and the actions taken."""
        ...

    def check_region(self, task: Mapping, cells: Sequence[str]) -> str | None:
        """What is wrong with ``cells`` as a target region of ``task`` (None when they can be one)."""
        ...


_REGISTERED: dict[str, Environment] = {}
_PLUGINS: dict = {"loaded": False, "problems": ()}


def register_environment(env: Environment) -> Environment:
    """Add an environment in-process (by its ``name``); the entry-point group is the usual way, built-ins included."""
    _REGISTERED.setdefault(env.name, env)
    return env


def _load_entry(name: str, value: str, source: str) -> Environment:
    from toolkit.plugins import PluginError, load_object

    env = load_object("environment", name, value, source)
    if not isinstance(env, Environment):
        raise PluginError(f"entry point {name!r} ({value}) is not an environment (it lacks the protocol's name, "
                          "languages, check_task, goals and start)")
    _REGISTERED.setdefault(name, env)
    return env


def _load_plugins() -> tuple[str, ...]:
    """Every environment of the entry-point group, once (the built-in grid world is one of them); the problems."""
    from toolkit.plugins import discover_once

    return discover_once(_PLUGINS, ENTRY_POINT_GROUP, _load_entry, "environment")


def environment_problems() -> tuple[str, ...]:
    """Environments that were found but could not be loaded, as messages."""
    return _load_plugins()


def environment_names() -> list[str]:
    _load_plugins()
    return sorted(_REGISTERED)


def get_environment(name: str) -> Environment:
    """The environment registered as ``name``; EnvironmentRefused naming the known ones (and any that failed to
    load) otherwise."""
    _load_plugins()
    if name not in _REGISTERED:
        problems = "".join(f"; {p}" for p in _PLUGINS["problems"])
        raise EnvironmentRefused(f"no environment named {name!r}; known: {', '.join(environment_names())}{problems}")
    return _REGISTERED[name]


def resumable(stimulus_set: str | None, language: str | None, observation: str | None, seed: int
              ) -> tuple[str, Episode] | None:
    """The first registered environment (by name) whose ``resume`` hook rebuilds this recorded step, with the
    episode it rebuilt; None when none does (the step is not resumable)."""
    for name in environment_names():
        hook = getattr(_REGISTERED[name], "resume", None)
        if hook is None:
            continue
        ep = hook(stimulus_set, language, observation, seed)
        if ep is not None:
            return name, ep
    return None
