"""Fixtures of the engine tests shared across modules (built once per session)."""

from __future__ import annotations

import pytest
from run_helpers import run_args


@pytest.fixture(scope="session")
def resume_setup(tmp_path_factory):
    from engine_helpers import make_reference, make_release

    tmp = tmp_path_factory.mktemp("resume")
    release = make_release(tmp / "rel", sessions=240, seed=5)
    model = make_reference(release, tmp / "ref")
    return release, model


@pytest.fixture(scope="session")
def uninterrupted_run(resume_setup, tmp_path_factory):
    from trb.cli import main

    release, model = resume_setup
    results = tmp_path_factory.mktemp("whole") / "results.duckdb"
    assert main(run_args(release, model, results)) == 0
    from trb.results import ResultsStore

    (run,) = ResultsStore(results, create=False).runs()
    return results, run
