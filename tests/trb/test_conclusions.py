"""The report's conclusions table (trb.report.conclusions): every verdict the report gives, with its figures, the
stability of the verdicts across seeds, and the quoted blocks the docs carry."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from trb.report.conclusions import conclusions, quoted_block, render_conclusions, replace_block, stability

GOLDEN = Path(__file__).parent / "data" / "report_golden" / "report.json"


@pytest.fixture(scope="module")
def report() -> dict:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_every_verdict_of_the_report_is_a_conclusion_with_its_figures(report):
    c = conclusions(report)
    assert c["header"] == {"trb_version": report["trb_version"], "release_sha": report["release_sha"],
                           "smoke_test": True, "split": "eval", "seed": 1}
    by = {r["id"]: r for r in c["rows"]}
    dg = report["tables"][0]["delta_gov"]
    assert by["delta_gov"]["figure"] == f"{dg['value']:+.3f} [{dg['ci_low']:+.3f}, {dg['ci_high']:+.3f}]"
    assert by["delta_gov"]["verdict"] == "CI above 0"
    # every pass bar, with its reading
    for pb in report["tables"][0]["pass_bars"]:
        assert by[f"pass:{pb['comparison']}"]["verdict"] == pb["reading"]
    # every metric verdict of every baseline, CG-1's reading beside Track 4's
    n = 0
    for b in report["tables"][0]["baselines"]:
        for key, e in b["tracks"].items():
            for v in e.get("verdicts", []):
                row = by[f"{b['name']}:{key}:{v['name']}"]
                assert row["verdict"].startswith(v["verdict"])
                assert ("CG-1: " + e["cg1"]["reading"] in row["verdict"]) if e.get("cg1") else "CG-1" not in row["verdict"]
                n += 1
    assert n == 25  # five baselines x viab, viab-cal, nav, nav-plan, nav-cg2
    # Track 6: the collapse shown with the worst context's paired gap and the corrected interval that decided it
    # (its plain 95% interval [-0.037, -0.000] lies at or below 0; at 97.5%, Bonferroni over 2 contexts, it reaches 0)
    row = by["cot-sft:trans:1:collapse"]
    assert row["verdict"] == "not established"
    assert row["figure"] == ("gap to instruct-base on xfer-lab-c.open-8x8-windy.novice.de: -0.017 [-0.041, +0.002] "
                             "(97.5% interval, Bonferroni over k = 2)")
    assert "instruct-base:trans:1:collapse" not in by  # the reference itself is never checked


def test_stability_marks_a_verdict_that_differs_between_seeds(report):
    a = conclusions(report)
    b = copy.deepcopy(a)
    flipped = next(r for r in b["rows"] if r["id"] == "trace-full:nav-cg2:path-dependent steering")
    assert flipped["verdict"] == "flagged"
    flipped["verdict"], flipped["figure"] = "not established", "0.020 [0.005, 0.040]"
    b["rows"] = [r for r in b["rows"] if r["id"] != "delta_gov"]  # absent at one seed: unstable too
    s = stability({1: a, 2: b, 3: a})
    assert s["seeds"] == [1, 2, 3] and s["n_unstable"] == 2 and s["n_stable"] == len(a["rows"]) - 2
    assert s["rows"]["trace-full:nav-cg2:path-dependent steering"] == {
        "outcomes": {"1": "flagged", "2": "not established", "3": "flagged"}, "stable": False}
    assert s["rows"]["delta_gov"]["outcomes"]["2"] == "absent"
    # a figure that moves while the verdict holds is stable (CG-1's p-value is part of the figures, not the outcome)
    c = copy.deepcopy(a)
    for r in c["rows"]:
        r["figure"] = "0.5 [0.4, 0.6]"
    assert stability({1: a, 2: c})["n_unstable"] == 0
    md = render_conclusions(a, s)
    assert "Across seeds 1, 2, 3: " in md and f"{len(a['rows']) - 2} conclusions agree, 2 differ" in md
    assert "| UNSTABLE: 1: flagged; 2: not established; 3: flagged |" in md


def test_render_is_labelled_and_the_short_block_keeps_what_it_names(report):
    c = conclusions(report)
    md = render_conclusions(c)
    assert md.startswith("SMOKE TEST (simulated release): not a TRB score. TRB 0.1, release ed8f5c2494cd, split eval, "
                         "seed 1.\n")
    assert md.count("\n| ") == len(c["rows"]) + 1  # the header row and one row a conclusion
    short = render_conclusions(c, only=("delta_gov", "pass:"))
    assert short.count("\n| ") == 1 + 1 + len(report["tables"][0]["pass_bars"])


def test_quoted_block_round_trip(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n<!-- demo-conclusions:start -->\nold\n<!-- demo-conclusions:end -->\n\nAfter.\n")
    assert quoted_block(page) == "old\n"
    assert replace_block(page, "new | table\n") is True
    assert quoted_block(page) == "new | table\n"
    assert page.read_text().endswith("<!-- demo-conclusions:end -->\n\nAfter.\n")
    assert replace_block(page, "new | table\n") is False
    bare = tmp_path / "bare.md"
    bare.write_text("no block\n")
    assert quoted_block(bare) is None
    with pytest.raises(ValueError, match="no <!-- demo-conclusions:start -->"):
        replace_block(bare, "x")
    assert bare.read_text() == "no block\n"  # nothing half-written


def test_demo_conclusions_writes_the_stability_and_both_blocks_from_finished_seeds(report, tmp_path, monkeypatch):
    """`make demo-conclusions` (pipeline.conclusions) on three finished seeds (their conclusions.json on disk: read,
    never re-run): the stability file, the README's short block and the docs page's full block, from seed 1."""
    import pipeline.conclusions as pc

    a = conclusions(report)
    b = copy.deepcopy(a)
    next(r for r in b["rows"] if r["id"] == "trace-full:nav-cg2:path-dependent steering")["verdict"] = "not established"
    work = tmp_path / "seeds"
    for seed, c in ((1, a), (2, b), (3, a)):
        (work / f"seed-{seed}").mkdir(parents=True)
        (work / f"seed-{seed}" / "conclusions.json").write_text(json.dumps(c), encoding="utf-8")
    paths = {}
    for name in ("README", "DOCS_PAGE"):
        paths[name] = tmp_path / f"{name}.md"
        paths[name].write_text("intro\n<!-- demo-conclusions:start -->\nstale\n<!-- demo-conclusions:end -->\nend\n")
        monkeypatch.setattr(pc, name, paths[name])
    monkeypatch.setattr(pc, "STABILITY", tmp_path / "data" / "demo-stability.json")
    monkeypatch.setattr(pc, "ROOT", tmp_path)
    assert pc.main(["--workdir", str(work), "--seeds", "1", "2", "3"]) == 0
    stable = json.loads((tmp_path / "data" / "demo-stability.json").read_text())
    assert stable["seeds"] == [1, 2, 3] and stable["n_unstable"] == 1
    short, full = quoted_block(paths["README"]), quoted_block(paths["DOCS_PAGE"])
    assert short == render_conclusions(a, stable, only=pc.SHORT) and full == render_conclusions(a, stable)
    assert "UNSTABLE: 1: flagged; 2: not established; 3: flagged" in full and "UNSTABLE" not in short
    assert paths["README"].read_text().startswith("intro\n") and paths["README"].read_text().endswith("end\n")
