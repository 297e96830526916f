"""A runner that scores a run's parts in this process, last part first (a toy stand-in for a lab's cluster)."""

from __future__ import annotations

from trb.errors import UsageError
from trb.options import Option
from trb.runners.base import score_part


class ReverseRunner:
    name = "reverse"
    #: Its one option: `trb run --runner reverse --reverse-label TEXT` (the CLI's flag comes from this declaration).
    options = (Option("label", "a label recorded in the run's runner facts", flag="--reverse-label", metavar="TEXT"),)

    def __init__(self, label: str | None = None, **options) -> None:
        if options:
            raise UsageError(f"the reverse runner takes no {', '.join(sorted(options))}")
        self.label = label

    def start(self, adapter_spec: dict) -> None:
        pass

    def stop(self) -> None:
        pass

    def execute(self, job, adapter, parts) -> None:
        job.facts.update({"runner": self.name, "workers": 1, "label": self.label})
        for part in reversed(list(parts)):
            job.store(score_part(adapter, part, seed=job.seed, kwargs=job.kwargs[part.track], progress=job.progress))


RUNNER = ReverseRunner
