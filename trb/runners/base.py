"""The runner registry, and what every runner shares: a run's job, one part's scoring, one part's storing.

A runner is an object with a ``name`` and ``execute(job, parts)``: it scores every part it is given
(:class:`~trb.parts.Part`, in any order, anywhere) with :func:`score_part` and hands each result to
``job.store`` (the driver's single writer of the results store) as soon as it has it. The engine
(:func:`trb.run.run_tracks`) plans the parts, skips the ones a resumed run already stored, and
finishes the run from the stored parts, whichever runner scored them.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from trb.errors import UsageError
from trb.parts import Part, part_seed
from trb.tracks.timing import AdapterTimer

__all__ = ["PartResult", "Runner", "RunJob", "get_runner", "register_runner", "registered_runners", "runner_problems",
           "ENTRY_POINT_GROUP", "score_part", "runner_options",
           "seed_everything", "diff_emit", "diff_cot_edit"]


@dataclass
class PartResult:
    """What scoring one part gave: its item rows, its summary, and its timings (seconds, adapter calls,
    the adapter's counters over the part, and where it was scored)."""

    track: str
    index: int
    first_key: str
    n_input: int
    rows: Any  # list of item-row dicts, or a pyarrow.Table of them
    summary: dict
    timings: dict
    #: A part file the result was read from (a runner that scores elsewhere): removed once the part is stored.
    source: Path | None = None


@dataclass
class RunJob:
    """One run's work as a runner sees it.

    ``adapter_spec`` re-creates the adapter elsewhere (a Ray worker); ``kwargs`` holds each track's keyword
    arguments for ``score`` (its options, or a rollout track's task set, split and greedy flag); ``store``
    takes each :class:`PartResult` (the engine's, writing the results store); ``progress`` counts items.
    """

    run_id: str
    seed: int
    adapter_spec: dict
    kwargs: dict[str, dict]
    store: Callable[[PartResult], None]
    progress: Callable[[int], None] | None = None
    #: Where a runner that scores elsewhere leaves part files for the driver (beside the results store).
    parts_dir: Path | None = None
    #: Runner facts recorded in the run's timings (workers, restarts seen, ...), filled by the runner.
    facts: dict = field(default_factory=dict)


@runtime_checkable
class Runner(Protocol):
    """A runner. Its class (or factory) may also declare ``options``: the keywords it takes, a tuple of
    :class:`trb.options.Option`, offered by ``trb run`` as flags."""

    name: str

    def start(self, adapter_spec: dict) -> None:
        """Get ready (reach a cluster, check the adapter can be re-created there) before the run is stored;
        raise a one-line error if it cannot."""
        ...

    def stop(self) -> None:
        """Let go of what :meth:`start` took (always called, after the run or its failure)."""
        ...

    def execute(self, job: RunJob, adapter, parts: Iterable[Part]) -> None:
        """Score every part of ``parts`` and pass each result to ``job.store``. ``adapter`` is the bound adapter
        of this process (a runner that scores elsewhere re-creates it there from ``job.adapter_spec``)."""
        ...


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and (when loaded) torch's global generators."""
    random.seed(seed)
    import numpy as np

    np.random.seed(seed % 2**32)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def diff_emit(after: dict | None, before: dict | None) -> dict | None:
    if after is None or before is None:
        return None
    return {"calls": after["calls"] - before["calls"],
            "missing": {s: n - before["missing"].get(s, 0) for s, n in after["missing"].items()}}


def diff_cot_edit(after: dict | None, before: dict | None) -> dict | None:
    """The cot_edit counters over a stretch of scoring (capability ``cot_edit``): after minus before (calls, items
    by outcome, slots missing; an item first met in this stretch counts here, a repeat only as a call)."""
    if after is None or before is None:
        return None
    return {"calls": after["calls"] - before["calls"],
            "items": {k: n - before["items"].get(k, 0) for k, n in after["items"].items()},
            "slots_missing": {s: n - before["slots_missing"].get(s, 0) for s, n in after["slots_missing"].items()}}


def score_part(bound, part: Part, *, seed: int, kwargs: dict, progress: Callable[[int], None] | None = None,
               where: str = "local") -> PartResult:
    """Score ``part`` through ``bound`` (a bound adapter) with the part's own seed; the result to store."""
    from trb.tracks.base import get_track

    track = get_track(part.track)
    seed_everything(part_seed(seed, part.track, part.index))
    timer = AdapterTimer()
    emit0, edit0 = bound.emit_stats(), bound.cot_edit_stats()
    t0 = time.perf_counter()
    rows, summary = track.score(bound, part.items, timer, progress=progress, **kwargs)
    timings = {"wall_s": time.perf_counter() - t0, "adapter_s": timer.seconds, "adapter_calls": timer.calls,
               "where": where}
    emit = diff_emit(bound.emit_stats(), emit0)
    if emit is not None:
        timings["emit_r"] = emit
    edit = diff_cot_edit(bound.cot_edit_stats(), edit0)
    if edit is not None:
        timings["cot_edit"] = edit
    return PartResult(part.track, part.index, part.first_key, part.n_input, rows, summary, timings)


#: The entry-point group of runners: the built-ins (local, ray) are listed under it in pyproject.toml, as a lab's
#: package lists its own (``[project.entry-points."trb.runners"] my-cluster = "my_pkg.runner:RUNNER"``, a class or
#: factory taking its options as keywords, each only when given; one it cannot use is a UsageError). The options it
#: declares (``options``, a tuple of :class:`trb.options.Option`) become ``trb run`` flags.
ENTRY_POINT_GROUP = "trb.runners"
_RUNNERS: dict[str, Callable[..., Runner]] = {}
_PLUGINS: dict[str, Any] = {"loaded": False, "problems": ()}


def register_runner(name: str, factory: Callable[..., Runner]) -> None:
    """Register a runner kind in-process: ``factory(**options)`` makes one (the entry-point group is the usual way)."""
    if name in _RUNNERS and _RUNNERS[name] is not factory:
        raise ValueError(f"runner {name!r} is already registered")
    _RUNNERS[name] = factory


def _load_entry(name: str, value: str, source: str):
    from toolkit.plugins import PluginError, load_object

    factory = load_object("runner", name, value, source)
    if not callable(factory):
        raise PluginError(f"runner {name!r} ({value}, from {source}) is not a class or factory of runners")
    try:
        register_runner(name, factory)
    except ValueError as e:
        raise PluginError(f"runner {name!r} ({value}, from {source}): {e}") from e
    return factory


def _load_plugins() -> tuple[str, ...]:
    from toolkit.plugins import discover_once

    return discover_once(_PLUGINS, ENTRY_POINT_GROUP, _load_entry, "runner")


def runner_problems() -> tuple[str, ...]:
    """Runners that were found but could not be loaded, as messages."""
    return _load_plugins()


def runner_options(name: str) -> tuple:
    """The options runner kind ``name`` declares (:class:`trb.options.Option`; none when it declares none)."""
    return tuple(getattr(registered_runners().get(name), "options", None) or ())


def registered_runners() -> dict[str, Callable[..., Runner]]:
    """Every runner kind by name, sorted (the entry-point group's, loaded on first use)."""
    _load_plugins()
    return dict(sorted(_RUNNERS.items()))


def get_runner(name: str, **options) -> Runner:
    """A runner of kind ``name`` made with ``options``.

    Raises:
        UsageError: no such runner; an option it does not take or a bad value.
    """
    runners = registered_runners()
    if name not in runners:
        raise UsageError(f"runner {name!r} is not available (available: {', '.join(runners)})")
    return runners[name](**options)
