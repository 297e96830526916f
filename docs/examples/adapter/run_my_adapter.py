"""Run the conformance suite and the tracks on a release through MyAdapter, from Python.

    python run_my_adapter.py RELEASE_DIR RESULTS_FILE
"""

from __future__ import annotations

import sys

from my_lab_adapter import MyAdapter

from trb import RunSpec, check_adapter, run_tracks


def main(release: str, results: str) -> str:
    adapter = MyAdapter("ckpt/")
    print(check_adapter(adapter, release).render())  # the conformance suite
    run = run_tracks(RunSpec(release, baseline="my-model", results=results), adapter, progress=False)
    print(run["run_id"])  # then: trb report --results RESULTS_FILE
    return run["run_id"]


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
