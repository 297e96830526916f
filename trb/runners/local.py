"""The local runner: every part scored in this process, in work-list order, each stored as soon as it is made."""

from __future__ import annotations

from collections.abc import Iterable

from trb.errors import UsageError
from trb.parts import Part
from trb.runners.base import RunJob, score_part

__all__ = ["LocalRunner", "RUNNER"]


class LocalRunner:
    name = "local"
    #: It takes no options (:mod:`trb.options`).
    options = ()

    def __init__(self, **options) -> None:
        given = {k: v for k, v in options.items() if v is not None}
        if given:
            raise UsageError(f"the local runner takes no {', '.join('--' + k.replace('_', '-') for k in given)} "
                             "(an option of another runner)")

    def start(self, adapter_spec: dict) -> None:
        pass

    def stop(self) -> None:
        pass

    def execute(self, job: RunJob, adapter, parts: Iterable[Part]) -> None:
        job.facts.update({"runner": self.name, "workers": 1})
        for part in parts:
            job.store(score_part(adapter, part, seed=job.seed, kwargs=job.kwargs[part.track], progress=job.progress))


#: The entry point ``trb.runners: local`` (pyproject.toml): the runner kind, made with the CLI's runner options.
RUNNER = LocalRunner
