"""A lab's own adapter package, installed beside the toolkit's wheel in a fresh virtual environment, runs
through `trb run --adapter <its name>` exactly as the built-ins do (registered through the same entry-point group)."""

from __future__ import annotations

import json
import shutil

import duckdb
import pytest
from engine_helpers import make_release

from tests_paths import ROOT
from wheelenv import fresh_venv, run_in

PLUGIN = ROOT / "tests" / "plugins" / "trb-toy-adapter"


@pytest.mark.e2e
def test_a_third_party_adapter_package_registers_runs_and_reruns(trb_wheel, tmp_path):
    release = make_release(tmp_path / "rel", sessions=120, seed=4)
    plugin = tmp_path / "plugin-src"
    shutil.copytree(PLUGIN, plugin, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    bin_dir = fresh_venv(tmp_path / "venv", [trb_wheel, plugin])
    work = tmp_path / "work"  # outside the checkout
    work.mkdir()

    listed = json.loads(run_in(bin_dir, ["trb", "adapters", "--json"], cwd=work).stdout)
    kinds = {a["name"]: a for a in listed["adapters"]}
    assert {"native", "proxy", "toy"} <= set(kinds) and listed["problems"] == []
    assert kinds["toy"]["source"] == "trb-toy-adapter 0.3.1" and kinds["toy"]["capabilities"] == ["batched_act"]
    assert "--toy-weight" in run_in(bin_dir, ["trb", "run", "--help"], cwd=work).stdout

    results = work / "results.duckdb"
    proc = run_in(bin_dir, ["trb", "run", "--release", release, "--adapter", "toy", "--model", "lab-ckpt-7",
                            "--toy-weight", "0.7", "--baseline", "toy", "--results", results, "-q"], cwd=work)
    run_id = proc.stdout.strip()
    con = duckdb.connect(str(results), read_only=True)
    spec = json.loads(con.execute("SELECT adapter_spec FROM runs WHERE run_id = ?", [run_id]).fetchone()[0])
    assert spec == {"kind": "toy", "name": "lab-ckpt-7", "weight": 0.7, "version": "0.3.1", "adapter": "toy",
                    "model": "lab-ckpt-7", "options": {"weight": 0.7}}
    # Track 1 by hand: 0.7 on r'.planned_next, 0.3 spread over the 5 actions
    got = dict(con.execute("SELECT item_id, score FROM item_scores WHERE track = '1'").fetchall())
    con.close()
    rows = duckdb.connect().execute(
        f"SELECT cf_id, rp_planned_next, phi_probs FROM read_parquet('{release}/data/counterfactuals/eval-*.parquet')"
        " WHERE phi_type = 'distribution'").fetchall()
    assert len(got) == len(rows) > 0
    for cf_id, plan, probs in rows:
        phi = {d["action"]: d["p"] for d in probs}
        p = {a: 0.06 + (0.7 if a == plan else 0.0) for a in ("up", "down", "left", "right", "wait")}
        assert abs(got[cf_id] - (1 - 0.5 * sum(abs(p[a] - phi.get(a, 0.0)) for a in p))) < 1e-9

    rerun = json.loads(run_in(bin_dir, ["trb", "rerun", run_id, "--results", results, "--json", "-q"],
                              cwd=work).stdout)
    assert rerun["reproduced"] and rerun["n_equal"] == rerun["n_items"] > 0
    conf = run_in(bin_dir, ["trb", "conformance", "--adapter", "toy", "--model", "x", "--release", release,
                            "--max-items", "6"], cwd=work)
    assert "conformance passed" in conf.stdout
    wrong = run_in(bin_dir, ["trb", "run", "--release", release, "--adapter", "toy", "--model", "x", "--dtype",
                             "float16", "--baseline", "toy", "--results", results], cwd=work, check=False)
    assert wrong.returncode == 2 and "adapter toy takes no option(s) dtype" in wrong.stderr
