"""A lab's package adds a track (with its own report section) and a runner through the toolkit's entry-point groups,
installed beside the toolkit's wheel in a fresh virtual environment: `trb run --tracks 97 --runner reverse` scores
it, `trb report` shows its figure and its section, nothing in the toolkit edited (tests/plugins/trb-toy-extensions,
with the scripted adapter of tests/plugins/trb-toy-adapter)."""

from __future__ import annotations

import json
import shutil

import duckdb
import pytest
from engine_helpers import make_release

from tests_paths import ROOT
from wheelenv import fresh_venv, run_in

PLUGINS = ROOT / "tests" / "plugins"


@pytest.mark.e2e
def test_a_third_party_track_and_runner_register_run_and_report(trb_wheel, tmp_path):
    release = make_release(tmp_path / "rel", sessions=60, seed=6)
    sources = []
    for name in ("trb-toy-adapter", "trb-toy-extensions"):
        shutil.copytree(PLUGINS / name, tmp_path / name, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                                      "__pycache__"))
        sources.append(tmp_path / name)
    bin_dir = fresh_venv(tmp_path / "venv", [trb_wheel, *sources])
    work = tmp_path / "work"  # outside the checkout
    work.mkdir()

    help_text = " ".join(run_in(bin_dir, ["trb", "run", "--help"], cwd=work).stdout.split())
    assert "[local|ray|reverse]" in help_text
    assert "--reverse-label TEXT [reverse] a label recorded in the run's runner facts" in help_text
    results = work / "results.duckdb"
    run_id = run_in(bin_dir, ["trb", "run", "--release", release, "--adapter", "toy", "--model", "lab-ckpt",
                              "--toy-weight", "0.7", "--baseline", "toy", "--tracks", "97", "--runner", "reverse",
                              "--reverse-label", "lab-cluster", "--part-items", "3", "--results", results, "-q"],
                    cwd=work).stdout.strip()
    con = duckdb.connect(str(results), read_only=True)
    scores = con.execute("SELECT score FROM item_scores WHERE run_id = ? AND track = '97'", [run_id]).fetchall()
    timings = json.loads(con.execute("SELECT timings FROM runs WHERE run_id = ?", [run_id]).fetchone()[0])
    con.close()
    # the toy adapter puts 0.7 on r'.planned_next and 0.3 over the 5 actions: p(planned) = 0.76 on every item
    want = duckdb.connect().execute(
        f"SELECT count(*) FROM read_parquet('{release}/data/counterfactuals/eval-*.parquet') "
        "WHERE phi_type IS NOT NULL AND rp_planned_next IS NOT NULL").fetchone()[0]
    assert len(scores) == want > 3 and all(abs(s - 0.76) < 1e-9 for (s,) in scores)
    assert timings["runner"]["runner"] == "reverse" and timings["runner"]["label"] == "lab-cluster"

    md = work / "report.md"
    run_in(bin_dir, ["trb", "report", "--results", results, "-o", md], cwd=work)
    text = md.read_text(encoding="utf-8")
    assert "Track 97 — plan mass [95% CI]" in text and "0.760 [0.760, 0.760]" in text
    assert "## Track 97 — plan mass (a plug-in's own section)" in text and "Runs of: toy." in text

    wrong = run_in(bin_dir, ["trb", "run", "--release", release, "--adapter", "toy", "--model", "x", "--baseline",
                             "toy", "--tracks", "97", "--runner", "reverse", "--workers", "2", "--results", results],
                   cwd=work, check=False)
    assert wrong.returncode == 2 and "--workers is an option of runner ray, not of --runner reverse" in wrong.stderr
