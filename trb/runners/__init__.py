"""Runners: where a run's parts are scored (:mod:`trb.parts`). ``local`` (the default) scores them in this
process; ``ray`` on a Ray cluster's workers. Both store each part as it is made, so a killed run resumes."""

from trb.runners.base import PartResult, RunJob, Runner, get_runner, register_runner, registered_runners, score_part

__all__ = ["PartResult", "Runner", "RunJob", "get_runner", "register_runner", "registered_runners", "score_part"]
