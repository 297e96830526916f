"""A run is one object, RunSpec: checked when it is made, the same from `trb run`'s flags and from a script, and
re-made from a run's record; runners and tracks offer their options to `trb run` through their declarations."""

from __future__ import annotations

import json

import duckdb
import pytest
from engine_helpers import PlanFollower, make_release

from toolkit.errors import ExitCode
from trb.errors import UsageError
from trb.parts import DEFAULT_PART_ITEMS
from trb.run import RunSpec, run_tracks
from trb.run_spec import DEFAULT_FLUSH_SECONDS


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return make_release(tmp_path_factory.mktemp("rel"), sessions=60, seed=8)


def test_a_spec_is_normalised_and_checked_when_it_is_made():
    spec = RunSpec("rel", "b", tracks=" 1, 2,", trained_by="Lab A", part_items=None, flush_seconds=None,
                   track_options={2: {"max_contexts": 4}, "3": {}}, runner_options={"workers": None, "address": "x"})
    assert spec.tracks == ("1", "2") and spec.trained_by == ("Lab A",)
    assert spec.part_items == DEFAULT_PART_ITEMS and spec.flush_seconds == DEFAULT_FLUSH_SECONDS
    assert spec.track_options == {"2": {"max_contexts": 4}} and spec.runner_options == {"address": "x"}
    assert RunSpec("rel", "b", tracks="all").tracks is None and RunSpec("rel", "b", tracks=[1, 3]).tracks == ("1", "3")
    assert spec.with_(split="transfer").split == "transfer" and spec.split == "eval"  # a copy; the spec is frozen
    for bad, match in ((dict(tracks=" , "), "no track requested"), (dict(part_items=0), "--part-items"),
                       (dict(part_items=2.5), "--part-items"), (dict(flush_seconds="soon"), "--flush-seconds"),
                       (dict(flush_seconds=float("nan")), "--flush-seconds"), (dict(flush_seconds=-1), "0 or more"),
                       (dict(tracks="1", track_options={"2": {"max_contexts": 3}}), "does not include"),
                       (dict(track_options={"2": {"max_sessions": 3}}), "track 2 has no option 'max_sessions'"),
                       (dict(tracks="1,42"), "track '42' is not available")):
        with pytest.raises(UsageError, match=match):
            RunSpec("rel", "b", **bad)
    with pytest.raises(UsageError, match="--part-items"):
        spec.with_(part_items=0)  # changes are checked again


def test_run_tracks_takes_a_spec_and_refuses_anything_else(release, tmp_path):
    with pytest.raises(UsageError, match="run_tracks takes a RunSpec"):
        run_tracks(release, PlanFollower())
    run = run_tracks(RunSpec(release, "follower", tracks="1", results=tmp_path / "r.duckdb", seed=5, part_items=7),
                     PlanFollower(), progress=False)
    assert run["tracks"] == ["1"] and run["seed"] == 5 and run["n_items"] == run["summary"]["1"]["scored"] > 0
    assert json.loads(run["timings"])["plan"]["part_items"] == 7


def test_a_spec_is_re_made_from_the_runs_record(release, tmp_path):
    from trb.results import ResultsStore

    results = tmp_path / "r.duckdb"
    spec = RunSpec(release, "follower", tracks=("1", "3"), results=results, seed=11, trained_by=("Lab B", "Lab A"))
    run = run_tracks(spec, PlanFollower(), progress=False)
    again = RunSpec.from_record(ResultsStore(results).run(run["run_id"]), results=results)
    assert again.release == str(release.resolve()) and again.baseline == "follower"
    assert (again.tracks, again.split, again.seed, again.track_options) == (("1", "3"), "eval", 11, {})
    assert sorted(again.trained_by) == ["Lab A", "Lab B"]
    twin = run_tracks(again, PlanFollower(), progress=False)  # the same scores, item by item
    con = duckdb.connect(str(results), read_only=True)
    rows = [con.execute("SELECT track, item_id, score FROM item_scores WHERE run_id = ? ORDER BY ALL", [r]).fetchall()
            for r in (run["run_id"], twin["run_id"])]
    assert rows[0] == rows[1] and len(rows[0]) == run["n_items"]


def test_runner_and_track_options_come_from_their_declarations(release, tmp_path, capsys):
    from trb.cli import main, run
    from trb.runners.ray_runner import RayRunner
    from trb.tracks.track2 import Track2

    flags = {o for p in run.params for o in p.opts}
    assert {o.cli_flag for o in RayRunner.options} <= flags and {o.cli_flag for o in Track2.options} <= flags
    owners = {p.opts[0]: p.help.split("]")[0] + "]" for p in run.params if p.name.startswith("kind_option_")}
    assert owners["--workers"] == "[ray]" and owners["--grounding-contexts"] == "[track 2]"
    results = tmp_path / "r.duckdb"
    common = ["run", "--release", str(release), "--adapter", "native", "--model", "nowhere", "--baseline", "x",
              "--results", str(results)]
    assert main([*common, "--workers", "2"]) == ExitCode.USAGE  # the local runner is the default
    assert "--workers is an option of runner ray, not of --runner local" in capsys.readouterr().err
    assert main([*common, "--tracks", "1", "--grounding-contexts", "3"]) == ExitCode.USAGE
    assert "options given for track 2, which this run does not include" in capsys.readouterr().err
    assert not results.exists()  # refused before anything was written
