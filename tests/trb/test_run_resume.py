"""Item scores are stored part by part as a run makes them; a run SIGKILLed at any point resumes with
`trb run --resume RUN_ID`, scoring only what is missing, to exactly an uninterrupted run's item scores; until
then it is never shown as a result (runs list, report, plan, rerun).

Real processes and real SIGKILLs of `trb run` on a real release, through the native adapter on a reference
model trained here (so the run can be re-created from its spec); real DuckDB files throughout.
"""

from __future__ import annotations

import json
import random

import pytest
from run_helpers import kill_after, run_args, scores, start, stored_parts

from toolkit.errors import ExitCode


@pytest.mark.e2e
def test_a_run_killed_several_times_resumes_to_the_uninterrupted_item_scores(resume_setup, uninterrupted_run, tmp_path,
                                                                                capsys):
    from trb.cli import main
    from trb.results import ResultsStore

    release, model = resume_setup
    whole_results, whole = uninterrupted_run
    total_parts = whole["timings"]["runner"]["parts"]
    assert total_parts > 6, "the release must give enough parts to kill the run between them"
    results = tmp_path / "results.duckdb"
    proc = start(run_args(release, model, results))
    kill_after(proc, results, 2)
    store = ResultsStore(results, create=False)
    (unfinished,) = store.unfinished_runs()
    run_id = unfinished["run_id"]
    assert 0 < unfinished["n_stored"] < whole["n_items"] and store.runs() == []

    # never shown as a result: report and plan refuse a store with no finished run, and say why
    assert main(["report", "--results", str(results), "--format", "json"]) == ExitCode.RESULTS
    err = capsys.readouterr().err
    assert run_id in err and "unfinished" in err and f"trb run --resume {run_id}" in err
    assert main(["rerun", run_id, "--results", str(results), "-q"]) == ExitCode.RESULTS
    assert "unfinished" in capsys.readouterr().err

    # resumed and killed again at random later points (seed 19), then resumed to the end
    rng = random.Random(19)
    for _ in range(2):
        have = stored_parts(results)
        proc = start(["run", "--resume", run_id, "--results", str(results), "--flush-seconds", "0", "-q"])
        kill_after(proc, results, have + rng.randint(1, 3))
    assert [r["run_id"] for r in store.unfinished_runs()] == [run_id]
    assert main(["run", "--resume", run_id[:10], "--results", str(results), "-q"]) == 0
    assert capsys.readouterr().out.strip() == run_id
    (done,) = store.runs()
    assert done["run_id"] == run_id and done["status"] == "complete" and store.unfinished_runs() == []
    assert done["n_items"] == whole["n_items"] and done["timings"]["runner"]["resumed"] is True
    assert done["timings"]["summary"] == whole["timings"]["summary"]
    assert scores(results, run_id) == scores(whole_results, whole["run_id"])
    # the finished run re-creates itself from its record, like any other
    assert main(["rerun", run_id, "--results", str(results), "-q"]) == 0


def test_resume_refuses_a_complete_run_an_unknown_one_and_options_the_record_fixes(resume_setup, uninterrupted_run, capsys):
    from trb.cli import main

    release, model = resume_setup
    results, whole = uninterrupted_run
    assert main(["run", "--resume", whole["run_id"], "--results", str(results)]) == ExitCode.RESULTS
    assert "complete" in capsys.readouterr().err
    assert main(["run", "--resume", "feedbeef" * 4, "--results", str(results)]) == ExitCode.RESULTS
    assert "no run" in capsys.readouterr().err
    assert main(["run", "--resume", whole["run_id"], "--results", str(results), "--seed", "3"]) == ExitCode.USAGE
    assert "--seed" in capsys.readouterr().err
    assert main(["run", "--release", str(release), "--results", str(results)]) == ExitCode.USAGE
    assert "--adapter" in capsys.readouterr().err


@pytest.mark.e2e
def test_a_killed_run_is_listed_as_unfinished_beside_finished_ones_and_the_report_says_so(resume_setup, uninterrupted_run,
                                                                                          tmp_path, capsys):
    import shutil

    from trb.cli import main

    release, model = resume_setup
    src, whole = uninterrupted_run
    results = tmp_path / "results.duckdb"
    shutil.copy(src, results)
    proc = start([*run_args(release, model, results)[:-1], "--baseline", "trace-ablation", "-q"])
    kill_after(proc, results, 1 + stored_parts(results))
    assert main(["report", "--results", str(results), "--format", "json"]) == 0
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert [b["name"] for b in report["baselines"]] == ["trace-full"]
    assert any("unfinished" in n and "trb run --resume" in n for n in report["notes"])
    assert main(["query", "--results", str(results), "SELECT count(*) FROM runs WHERE status = 'running'"]) == 0
    assert "1" in capsys.readouterr().out


def test_parts_stored_together_at_the_end_are_the_same_run(resume_setup, uninterrupted_run, tmp_path):
    """With a flush interval longer than the run, every part is stored in one transaction at its end."""
    from trb.cli import main
    from trb.results import ResultsStore

    release, model = resume_setup
    whole_results, whole = uninterrupted_run
    results = tmp_path / "results.duckdb"
    args = run_args(release, model, results)
    args[args.index("--flush-seconds") + 1] = "3600"
    assert main(args) == 0
    (run,) = ResultsStore(results, create=False).runs()
    assert run["timings"]["runner"]["flush_seconds"] == 3600.0
    assert run["timings"]["runner"]["parts"] == whole["timings"]["runner"]["parts"]
    assert scores(results, run["run_id"]) == scores(whole_results, whole["run_id"])
