"""Run the imitation track on a release through the smallest adapter, then report it.

    python run_imitation.py RELEASE_DIR RESULTS_FILE
"""

from __future__ import annotations

import sys

import imitation_track  # noqa: F401 - registers Track 90

from trb.report import build_report, render_markdown
from trb.results import ResultsStore
from trb.run import RunSpec, run_tracks


class Uniform:
    """The smallest adapter there is: every action equally likely, no self-report."""

    tier = "proxy"

    def spec(self) -> dict:
        return {"kind": "uniform"}

    def emit_r(self, context) -> dict:
        return {}

    def act(self, context, r_override=None) -> dict[str, float]:
        return {a: 1 / len(context.action_space) for a in context.action_space}


def main(release: str, results: str) -> str:
    run = run_tracks(RunSpec(release, baseline="uniform", tracks=("90",), results=results), Uniform(), progress=False)
    markdown = render_markdown(build_report(ResultsStore(results), n_resamples=200))
    print(markdown)
    return run["run_id"]


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
