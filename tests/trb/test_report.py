"""The report from real results stores: numbers against independent computations, shape, honesty rules."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests_paths import ROOT
from trb.report import SMOKE_BANNER, build_report, plot_tracks, render_html, render_json, render_markdown
from trb.report.figures import _figure
from trb.results import ResultsError, ResultsStore
from trb.stats import mean_by_session, paired_delta_by_session

# simulates and releases corpora, and bootstraps every figure of the report
pytestmark = pytest.mark.slow

B = 1000
SHA = "c0ffee" + "0" * 58
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# Track 1 (tv) items as (item_id, session, score) — G(full) = 3.0 / 5, G(ablation) = 2.0 / 6
FULL_T1 = [("cf1", "s1", 1.0), ("cf2", "s1", 0.8), ("cf3", "s2", 0.6), ("cf4", "s3", 0.4), ("cf5", "s3", 0.2)]
ABL_T1 = [("cf1", "s1", 0.5), ("cf2", "s1", 0.5), ("cf3", "s2", 0.6), ("cf4", "s3", 0.1), ("cf5", "s3", 0.3),
          ("cf9", "s3", 0.0)]  # cf9 has no partner in the full run: in G(ablation), not in Δgov
# Track 3 items as (item_id, session, label, predicted)
FULL_T3 = [("a1", "s1", "self", "self"), ("a2", "s1", "self", "exogenous"), ("a3", "s2", "self", "self"),
           ("a4", "s2", "exogenous", "exogenous"), ("a5", "s3", "exogenous", "self"),
           ("a6", "s3", "exogenous", "missing"), ("a7", "s3", "exogenous", "exogenous")]
COT_T3 = [("a1", "s1", "self", "self"), ("a2", "s1", "self", "self"), ("a3", "s2", "self", "self"),
          ("a4", "s2", "exogenous", "self"), ("a5", "s3", "exogenous", "self"), ("a6", "s3", "exogenous", "exogenous"),
          ("a7", "s3", "exogenous", "self")]


def t1_rows(spec, *, synthetic=(), metric="tv") -> list[dict]:
    return [{"track": "1", "metric": metric, "item_id": i, "session_id": s, "score": x, "split": "eval",
             "origin": "synthetic" if i in synthetic else "paired_session", "adversarial": i == "cf1", "ood": False}
            for i, s, x in spec]


def t3_rows(spec) -> list[dict]:
    return [{"track": "3", "metric": "attribution", "item_id": i, "session_id": s, "label": lab, "predicted": p,
             "score": float(lab == p), "split": "eval"} for i, s, lab, p in spec]


def run(baseline: str, tier: str, *, sha=SHA, smoke=False, created="2026-08-03T10:00:00+00:00", tracks=("1", "3"),
        **over) -> dict:
    row = {"release_sha": sha, "release_version": "0.2.0", "release_kind": "smoke" if smoke else "trb",
           "smoke_test": smoke, "baseline": baseline, "adapter_tier": tier, "adapter_spec": {"kind": tier},
           "seed": 0, "tracks": list(tracks), "split": "eval", "synthetic_share": 0.4, "created_at": created}
    row.update(over)
    return row


def hand_store(tmp_path: Path, *, smoke: bool = False) -> ResultsStore:
    store = ResultsStore(tmp_path / "results.duckdb")
    # an older trace-full run, superseded by the later one below
    store.record_run(run("trace-full", "native", smoke=smoke, created="2026-08-01T09:00:00+00:00", run_id="old-full"),
                     t1_rows([(i, s, 0.0) for i, s, _ in FULL_T1]))
    store.record_run(run("trace-full", "native", smoke=smoke, run_id="full"),
                     t1_rows(FULL_T1, synthetic={"cf4"}) + t3_rows(FULL_T3))
    store.record_run(run("trace-ablation", "native", smoke=smoke, run_id="abl", tracks=("1",)), t1_rows(ABL_T1))
    store.record_run(run("cot-sft", "proxy", smoke=smoke, run_id="cot"),
                     t1_rows([(i, s, 0.25) for i, s, _ in FULL_T1]) + t3_rows(COT_T3))
    return store


def hand_ba(spec) -> float:
    pos = [p == "self" for _, _, lab, p in spec if lab == "self"]
    neg = [p == "exogenous" for _, _, lab, p in spec if lab == "exogenous"]
    return (sum(pos) / len(pos) + sum(neg) / len(neg)) / 2


def keys_anywhere(obj) -> set[str]:
    if isinstance(obj, dict):
        return set(obj) | {k for v in obj.values() for k in keys_anywhere(v)}
    if isinstance(obj, list):
        return {k for v in obj for k in keys_anywhere(v)}
    return set()


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[bool, dict]:
    """The hand-made release's report, as a smoke release and as a real one (built once; tests only read it)."""
    return {smoke: build_report(hand_store(tmp_path_factory.mktemp(f"smoke-{smoke}"), smoke=smoke), n_resamples=B)
            for smoke in (False, True)}


@pytest.fixture
def report(reports):
    return reports[False]


# -- numbers ----------------------------------------------------------------------------------------


def test_track_scores_match_independent_computations(report):
    by = {b["name"]: b for b in report["baselines"]}
    assert [b["name"] for b in report["baselines"]] == ["cot-sft", "trace-ablation", "trace-full"]  # spec §4 order
    full1 = by["trace-full"]["tracks"]["1"]
    assert full1["score"] == pytest.approx(np.mean([x for _, _, x in FULL_T1]), abs=1e-12)
    assert full1["score"] == pytest.approx(0.6, abs=1e-12)
    assert (full1["n_items"], full1["n_sessions"]) == (5, 3)
    assert full1["synthetic_share"] == pytest.approx(1 / 5)
    assert by["trace-ablation"]["tracks"]["1"]["score"] == pytest.approx(2.0 / 6, abs=1e-12)
    assert by["cot-sft"]["tracks"]["1"]["score"] == pytest.approx(0.25)
    # Track 3: balanced accuracy by hand — full: TPR 2/3, TNR 2/4 (the 'missing' prediction is a miss)
    assert by["trace-full"]["tracks"]["3"]["score"] == pytest.approx((2 / 3 + 2 / 4) / 2, abs=1e-12)
    assert by["trace-full"]["tracks"]["3"]["score"] == pytest.approx(hand_ba(FULL_T3), abs=1e-12)
    assert by["cot-sft"]["tracks"]["3"]["score"] == pytest.approx(hand_ba(COT_T3), abs=1e-12)  # (1 + 1/4) / 2
    assert by["cot-sft"]["tracks"]["3"]["score"] == pytest.approx(0.625, abs=1e-12)
    # the ablation did not run Track 3: shown, without a number
    assert by["trace-ablation"]["tracks"]["3"]["score"] is None
    assert "not run" in by["trace-ablation"]["tracks"]["3"]["note"]
    # an adversarial slice is reported beside the score, not folded into anything
    assert full1["slices"]["adversarial"] == {"score": 1.0, "n_items": 1}


def test_intervals_are_the_session_bootstrap_of_the_right_items(report):
    by = {b["name"]: b for b in report["baselines"]}
    est = mean_by_session([x for _, _, x in FULL_T1], [s for _, s, _ in FULL_T1], n_resamples=B, seed=0)
    full1 = by["trace-full"]["tracks"]["1"]
    assert (full1["ci_low"], full1["ci_high"]) == (est.ci_low, est.ci_high)
    for b in report["baselines"]:
        for entry in b["tracks"].values():
            if entry["score"] is not None:
                assert entry["ci_low"] <= entry["score"] <= entry["ci_high"]


def test_the_latest_run_of_each_baseline_is_reported(report):
    by = {b["name"]: b for b in report["baselines"]}
    assert by["trace-full"]["run_id"] == "full"
    assert any("superseded" in n for n in report["notes"])


def test_delta_gov_is_the_paired_difference_with_a_session_interval(report):
    d = report["delta_gov"]
    abl = dict((i, x) for i, _, x in ABL_T1)
    diffs = [x - abl[i] for i, _, x in FULL_T1]
    assert d["value"] == pytest.approx(np.mean(diffs), abs=1e-12)
    assert d["value"] == pytest.approx(0.2, abs=1e-12)
    # not the unpaired difference of the two G's, which counts cf9
    assert abs(d["value"] - (0.6 - 2.0 / 6)) > 0.05
    assert (d["n_items"], d["n_sessions"], d["n_unpaired_ablation"], d["n_unpaired_full"]) == (5, 3, 1, 0)
    order = sorted(range(5), key=lambda k: FULL_T1[k][0])
    ref = paired_delta_by_session([FULL_T1[k][2] for k in order], [abl[FULL_T1[k][0]] for k in order],
                                  [FULL_T1[k][1] for k in order], n_resamples=B, seed=0)
    assert (d["ci_low"], d["ci_high"]) == (ref.ci_low, ref.ci_high)
    assert d["ci_low"] <= d["value"] <= d["ci_high"]
    assert d["ci_excludes_zero"] == (d["ci_low"] > 0 or d["ci_high"] < 0)
    assert report["delta_gov_note"] is None


def test_delta_gov_is_null_with_a_reason_without_both_runs(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    store.record_run(run("trace-full", "native"), t1_rows(FULL_T1))
    rep = build_report(store, n_resamples=B)
    assert rep["delta_gov"] is None and "trace-ablation" in rep["delta_gov_note"]
    assert "not available" in render_markdown(rep, None) and json.loads(render_json(rep))["delta_gov"] is None


def test_delta_gov_without_common_items_is_null_with_a_reason(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    store.record_run(run("trace-full", "native"), t1_rows(FULL_T1))
    store.record_run(run("trace-ablation", "native"), t1_rows([("zz", "s1", 0.5), ("zy", "s2", 0.5)]))
    rep = build_report(store, n_resamples=B)
    assert rep["delta_gov"] is None and "none in common" in rep["delta_gov_note"]


def test_llr_items_are_reported_separately_from_g(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    llr = [(f"t{k}", f"s{k % 2}", 3.0 + k) for k in range(4)]
    store.record_run(run("cot-prompted", "proxy"), t1_rows(FULL_T1) + t1_rows(llr, metric="llr"))
    rep = build_report(store, n_resamples=B)
    tracks = rep["baselines"][0]["tracks"]
    assert tracks["1"]["score"] == pytest.approx(0.6) and tracks["1"]["n_items"] == 5
    assert tracks["1-llr"]["score"] == pytest.approx(4.5) and tracks["1-llr"]["n_items"] == 4
    assert "LLR" in render_markdown(rep, None)


def test_a_track3_run_with_one_class_has_no_score_and_says_why(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    store.record_run(run("instruct-base", "proxy", tracks=("3",)), t3_rows([("a1", "s1", "self", "self"),
                                                                            ("a2", "s2", "self", "exogenous")]))
    entry = build_report(store, n_resamples=B)["baselines"][0]["tracks"]["3"]
    assert entry["score"] is None and "both classes" in entry["note"] and entry["n_items"] == 2


def test_one_session_gives_a_score_without_an_interval(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    store.record_run(run("trace-full", "native", tracks=("1",)), t1_rows([("x1", "s1", 0.2), ("x2", "s1", 0.6)]))
    rep = build_report(store, n_resamples=B)
    entry = rep["baselines"][0]["tracks"]["1"]
    assert entry["score"] == pytest.approx(0.4) and entry["ci_low"] is None and "one session" in entry["note"]
    assert '"ci_low": null' in render_json(rep)
    assert "[CI n/a]" in render_markdown(rep, None)


# -- choosing the release -----------------------------------------------------------------------------


def test_the_latest_release_is_chosen_and_named_when_several_have_runs(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    store.record_run(run("trace-full", "native", sha="old" + "0" * 61, created="2026-08-01T00:00:00+00:00"),
                     t1_rows(FULL_T1))
    store.record_run(run("trace-full", "native", sha="new" + "0" * 61, created="2026-08-02T00:00:00+00:00"),
                     t1_rows(ABL_T1))
    rep = build_report(store, n_resamples=B)
    assert rep["release_sha"] == "new" + "0" * 61
    assert "new" + "0" * 61 in rep["release_choice"] and "old000000000" in rep["release_choice"]
    assert "Release chosen" in render_markdown(rep, None) and "Release chosen" in render_html(rep)
    older = build_report(store, release_sha="old" + "0" * 61, n_resamples=B)
    assert older["release_choice"] is None and older["baselines"][0]["tracks"]["1"]["score"] == pytest.approx(0.6)
    with pytest.raises(ResultsError, match="no runs on release nope"):
        build_report(store, release_sha="nope", n_resamples=B)


def test_an_empty_store_is_a_results_error(tmp_path):
    with pytest.raises(ResultsError, match="no runs"):
        build_report(ResultsStore(tmp_path / "r.duckdb"), n_resamples=B)


# -- shape and honesty -------------------------------------------------------------------------------------


def test_json_shape(report):
    data = json.loads(render_json(report))
    assert {"trb_version", "release_sha", "release_version", "smoke_test", "baselines", "delta_gov"} <= set(data)
    assert data["trb_version"] == "0.1" and data["release_sha"] == SHA and data["release_version"] == "0.2.0"
    assert data["smoke_test"] is False and data["banner"] is None
    for b in data["baselines"]:
        assert {"name", "adapter_tier", "run_id", "tracks"} <= set(b)
        # the profile vector names every track's headline, run or not (Tracks 2, 4 and 5 were not run here)
        assert set(b["tracks"]) == {"1", "ground", "3", "viab", "nav"}
        assert b["tracks"]["viab"]["note"] == "not run" and b["tracks"]["nav"]["score"] is None
        assert b["tracks"]["ground"]["note"] == "not run"
        for entry in b["tracks"].values():
            assert {"score", "ci_low", "ci_high", "n_items", "n_sessions", "synthetic_share"} <= set(entry)
    assert {b["name"]: b["adapter_tier"] for b in data["baselines"]} == {
        "cot-sft": "proxy", "trace-ablation": "native", "trace-full": "native"}
    assert {"value", "ci_low", "ci_high", "n_sessions", "n_items"} <= set(data["delta_gov"])


def test_no_mean_across_tracks_anywhere(report, tmp_path):
    banned = re.compile(r"overall|mean|average|aggregate|combined|total|composite", re.I)
    assert not [k for k in keys_anywhere(report) if banned.search(k)]
    for b in report["baselines"]:
        numeric = {k for k, v in b.items() if isinstance(v, float)}
        assert not numeric, f"a number outside the per-track entries: {numeric}"
    # the cross-track averages of this data appear in no output
    md = render_markdown(report, None)
    html_text = render_html(report)
    js = render_json(report)
    for b in report["baselines"]:
        scores = [e["score"] for e in b["tracks"].values() if e["score"] is not None]
        if len(scores) > 1:
            avg = sum(scores) / len(scores)
            assert f"{avg:.3f}" not in md and f"{avg:.3f}" not in html_text
            assert not re.search(rf"{avg:.6f}", js)


@pytest.mark.parametrize("smoke", [True, False])
def test_smoke_banner_in_every_format_iff_smoke(reports, tmp_path, smoke):
    rep = reports[smoke]
    assert rep["smoke_test"] is smoke
    data = json.loads(render_json(rep))
    assert data["smoke_test"] is smoke and (data["banner"] == SMOKE_BANNER) is smoke
    md = render_markdown(rep, None)
    lines = [ln for ln in md.splitlines() if ln.strip()]
    assert lines[0].startswith("# ")
    assert (SMOKE_BANNER in lines[1]) is smoke
    assert (SMOKE_BANNER in md) is smoke
    html_text = render_html(rep)
    assert ('class="banner"' in html_text) is smoke and (SMOKE_BANNER in html_text) is smoke
    assert (SMOKE_BANNER in _figure(rep).get_suptitle()) is smoke
    png = plot_tracks(rep, tmp_path / "p.png")
    with Image.open(png) as img:
        assert (SMOKE_BANNER in img.info.get("Title", "")) is smoke


def test_a_smoke_run_makes_the_whole_release_a_smoke_test(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    store.record_run(run("trace-full", "native"), t1_rows(FULL_T1))
    store.record_run(run("cot-sft", "proxy", smoke=True), t1_rows(FULL_T1))
    assert build_report(store, n_resamples=B)["smoke_test"] is True


def test_every_format_names_version_sha_and_tiers(report):
    md = render_markdown(report, None)
    html_text = render_html(report)
    for text in (md, html_text):
        assert "TRB version 0.1" in text and SHA in text
        for b in report["baselines"]:
            assert re.search(rf"{b['name']}.*?{b['adapter_tier']}", text, re.S)
    table = [ln for ln in md.splitlines() if ln.startswith("| trace-full ")]
    assert len(table) == 1 and "| native |" in table[0] and "0.600 [" in table[0] and "5 items / 3 sessions" in table[0]
    assert "20.0%" in table[0]  # the synthetic share beside Track 1
    assert "Δgov" in md and "+0.200 [" in md


def test_markdown_links_the_plot_when_given(report, tmp_path):
    assert "![" not in render_markdown(report, None)
    md = render_markdown(report, Path("plots/profile.png"))
    assert "](plots/profile.png)" in md


def test_the_plot_is_a_valid_png(report, tmp_path):
    path = plot_tracks(report, tmp_path / "out" / "profile.png")
    assert path.read_bytes()[:8] == PNG_MAGIC
    with Image.open(path) as img:
        img.verify()
    with Image.open(path) as img:
        assert img.format == "PNG" and img.size[0] > 400 and img.size[1] > 200
    fig = _figure(report)
    assert [ax.get_title() for ax in fig.axes][:2] == ["Track 1 — governance G", "Track 3 — attribution BA"]
    assert len(fig.axes) == 3  # Track 1, Track 3, Δgov: one panel each, no combined panel


@pytest.mark.parametrize("n_baselines", [3, 10, 16])
def test_the_per_track_plot_keeps_its_labels_apart_and_inside_it_however_many_baselines(report, n_baselines):
    """Each baseline's label stands under its point, none touching another and none past the figure's edge; a
    title wraps inside the figure (the HTML page shows this figure; its browser test measures it there too)."""
    rows = report["baselines"]  # the report's rows, copied under more names: the plot draws what they hold
    many = [dict(rows[k % len(rows)], name=f"baseline-number-{k:02d}") for k in range(n_baselines)]
    fig = _figure({**report, "baselines": many})
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    edge = fig.bbox
    for ax in fig.axes:
        lo, hi = sorted(ax.get_ylim())
        shown = [t for t in ax.get_yticklabels() if lo <= t.get_position()[1] <= hi]
        labels = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
        for i, a in enumerate(labels):
            assert all(not a.overlaps(b) for b in labels[i + 1:]), (ax.get_title(), i)
        for text in [ax.title, *ax.get_xticklabels(), *shown]:
            box = text.get_window_extent(renderer)
            assert edge.x0 - 0.5 <= box.x0 and box.x1 <= edge.x1 + 0.5 and edge.y0 - 0.5 <= box.y0, text.get_text()
    n_points = sum(b["tracks"].get("1", {}).get("score") is not None for b in many)
    assert len([t for t in fig.axes[0].get_xticklabels() if t.get_text()]) == n_points > 2


def test_html_is_self_contained_with_the_plot_embedded(report):
    text = render_html(report)
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)=["'](https?:|//|file:)""", text)
    # the per-track plot inline as SVG, its text drawn as glyphs, every reference inside it to its own ids
    m = re.search(r'<svg id="tracks-plot" class="plot" role="img"[^>]*viewBox="[^"]+"[^>]*>(.*?)</svg>', text, re.S)
    assert m and "<path" in m.group(1) and "<title>" in m.group(1)
    refs = re.findall(r'(?:href="#|url\(#)([^")]+)', m.group(1))
    assert refs and all(r.startswith("tracks-plot-") for r in refs)
    assert set(refs) <= set(re.findall(r'id="([^"]+)"', m.group(1)))


def test_report_modules_load_no_forbidden_packages():
    code = ("import sys, trb.stats, trb.results, trb.report; "
            "bad = sorted({m.split('.')[0] for m in sys.modules} & {'corpus', 'textual', 'torch', 'matplotlib'}); "
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == ""  # matplotlib too: it loads only when a plot is drawn


# -- pass bars, flags, sizes ---------------------------------------------------------------------------


def test_pass_bars_are_paired_differences_matching_hand_computations(report):
    (table,) = [t for t in report["tables"] if t["split"] == "eval"]
    g, t3, falsifier, ground = table["pass_bars"]
    full = np.array([x for _, _, x in FULL_T1])
    # Track 2 was run by no baseline here: its pass bar says what it needs, with no number
    assert ground["value"] is None and "needs a Track 2 ground figure" in ground["note"]
    assert g["comparison"] == "G(trace-full) − G(cot-sft)"
    assert g["value"] == pytest.approx(np.mean(full - 0.25), abs=1e-12) and g["n_items"] == 5 and g["n_sessions"] == 3
    assert g["ci_low"] <= g["value"] <= g["ci_high"] and "higher is better" in g["direction"]
    # Track 3: the best native (trace-full: the only one with Track 3) against the best proxy (cot-sft)
    assert t3["native"] == "trace-full" and t3["proxy"] == "cot-sft"
    assert t3["value"] == pytest.approx(hand_ba(FULL_T3) - hand_ba(COT_T3), abs=1e-12)
    assert falsifier["delta"] == 0.02 and falsifier["value"] == report["delta_gov"]["value"]
    md, page = render_markdown(report, None), render_html(report)
    for text in (md, page):
        assert "Pass-bar comparisons on eval" in text and "not verdicts" in text
        assert f"{g['value']:+.3f}" in text and "Δgov falsifier" in text
    assert not re.search(r"\b(PASS|FAIL)(ED)?\b", md)  # directions with numbers, never a verdict word


def test_a_near_zero_gap_is_read_as_falsifying(tmp_path):
    rng = np.random.default_rng(3)
    base = rng.uniform(0.3, 0.7, 400)
    spec_abl = [(f"cf{i}", f"s{i // 4}", float(x)) for i, x in enumerate(base)]
    spec_full = [(i, s, x + 0.001) for i, s, x in spec_abl]
    store = ResultsStore(tmp_path / "r.duckdb")
    store.record_run(run("trace-full", "native", run_id="f", tracks=("1",)), t1_rows(spec_full))
    store.record_run(run("trace-ablation", "native", run_id="a", tracks=("1",)), t1_rows(spec_abl))
    rep = build_report(store, n_resamples=B)
    falsifier = rep["tables"][0]["pass_bars"][2]
    assert -0.02 <= falsifier["ci_low"] and falsifier["ci_high"] <= 0.02
    assert "falsifies the central claim" in falsifier["reading"]
    assert "falsifies the central claim" in render_markdown(rep, None)


def test_a_one_class_attribution_is_flagged_in_every_format(tmp_path):
    spec = [(f"a{i}", f"s{i % 5}", "self" if i % 2 else "exogenous", "self") for i in range(20)]
    store = ResultsStore(tmp_path / "r.duckdb")
    store.record_run(run("cot-sft", "proxy", run_id="c", tracks=("3",)),
                     [dict(r, belief=0.7 + (i % 3) / 10) for i, r in enumerate(t3_rows(spec))])
    rep = build_report(store, n_resamples=B)
    entry = rep["baselines"][0]["tracks"]["3"]
    assert entry["score"] == 0.5 and entry["ci_low"] == entry["ci_high"] == 0.5
    assert any("one class: every item predicted self" in f for f in entry["flags"])
    assert any("zero-width interval" in f for f in entry["flags"])
    assert "one class" in json.loads(render_json(rep))["baselines"][0]["tracks"]["3"]["flags"][0]
    for text in (render_markdown(rep, None), render_html(rep)):
        assert "⚠ FLAG: one class: every item predicted self" in text
    # the threshold-free figures are shown beside it, in their own table (the same items as the headline)
    assert rep["baselines"][0]["tracks"]["3-auc"]["score"] is not None
    md = render_markdown(rep, None)
    head = next(line for line in md.splitlines() if line.startswith("| baseline | split"))
    assert "belief ROC AUC" not in head and "Track 3 — attribution BA" in head
    more = md.split("Reference points and threshold-free figures", 1)[1]
    assert "Track 3 — belief ROC AUC [95% CI]" in more and "Track 3 — Brier score" in more


def test_rows_carry_their_parameter_count(tmp_path):
    store = ResultsStore(tmp_path / "r.duckdb")
    store.record_run(run("trace-full", "native", run_id="f", tracks=("1",),
                         adapter_spec={"kind": "native", "n_parameters": 866_147}), t1_rows(FULL_T1))
    store.record_run(run("cot-sft", "proxy", run_id="c", tracks=("1",), adapter_spec={"kind": "proxy"}),
                     t1_rows(FULL_T1))
    rep = build_report(store, n_resamples=0)
    assert {b["name"]: b["n_parameters"] for b in rep["baselines"]} == {"cot-sft": None, "trace-full": 866_147}
    md = render_markdown(rep, None)
    assert "| parameters |" in md and "| 0.87M |" in md and "| n/a |" in md


def test_track1_slices_appear_in_markdown_and_html(report):
    entry = next(b for b in report["baselines"] if b["name"] == "trace-full")["tracks"]["1"]
    assert entry["slices"]["adversarial"] == {"score": 1.0, "n_items": 1}
    assert "adversarial r′: 1.000 (1 items)" in render_markdown(report, None)
    # the HTML gives a slice its own row in the second table: one cell per baseline, its score over its items
    page = re.sub(r"<[^>]+>", " ", render_html(report))
    cells = [b["tracks"]["1"]["slices"]["adversarial"] for b in report["baselines"]]
    row = r"\s+".join(rf"{c['score']:.3f}\s+{c['n_items']} items" for c in cells)
    assert re.search(rf"governance G, adversarial r′ only\s+{row}", page), row


# -- Track 2: details, the full − ablation gap, proxy-tier grounding, the profile plot ---------------------------

#: Each concept's largest cosine with another concept's direction: goal=B's is not separable (≥ 0.8).
CONCEPTS = {"goal=A": 0.21, "goal=B": 0.93, "planned_next=up": 0.35}
#: The concepts the headline keeps: the separable ones (each has 16 dev and 32 eval injected trials, over 5).
KEPT = ("goal=A", "planned_next=up")
STRENGTHS = (1.0, 2.0, 4.0, 8.0)
SITES = ("h", "embed")
T2_B = 200
WITH_ACCESS = {"capabilities": ["activation_access", "batched_act"]}


def t2_rows(gain: float, seed: int, *, sessions: int = 16, dev: int = 8, steps: int = 2, skip=(),
            concepts: dict[str, float] = CONCEPTS, sites: tuple[str, ...] = SITES) -> list[dict]:
    """Track 2 trials as the track writes them: per step, site and concept, the zero null and, at each strength,
    an injected and a random-direction trial. The injection raises the slot's probability by up to ``gain``
    (half that at the second site); steps in ``skip`` (``session/t``) have no trials."""
    rng = np.random.default_rng(seed)
    rows = []
    for split, n in (("eval", sessions), ("dev", dev)):
        for k in range(n):
            for t in range(steps):
                step = f"{split}-s{k}/{t}"
                for rank, site in enumerate(sites):
                    for c, cos in concepts.items():
                        base = rng.uniform(0, 0.5)
                        trials = [("zero", 0.0, base)]
                        for s in STRENGTHS:
                            eff = gain * (1 if rank == 0 else 0.5) * min(s, 4) / 4
                            trials += [("injected", s, base + eff * rng.uniform(0, 1)),
                                       ("random", s, base + 0.05 * rng.normal())]
                        if step in skip:
                            continue
                        rows += [{"track": "2", "metric": "grounding", "item_id": f"{step}|{site}|{c}|{cond}|{s:g}",
                                  "session_id": f"{split}-s{k}", "t": t, "split": split,
                                  "score": float(np.clip(round(x, 2), 0, 1)), "condition": cond, "concept": c,
                                  "site": site, "site_rank": rank, "strength": s, "cos_max": cos}
                                 for cond, s, x in trials]
    return rows


def _auc_mean(rows, pos, neg, weights=None, concepts=KEPT) -> float:
    """Mean over ``concepts`` of sklearn's (weighted) ROC AUC of ``pos`` trials against ``neg`` trials; nan if none."""
    from sklearn.metrics import roc_auc_score

    aucs = []
    for c in concepts:
        sel = [r for r in rows if r["concept"] == c and (pos(r) or neg(r))]
        y = np.array([pos(r) for r in sel])
        w = np.ones(len(sel)) if weights is None else np.array([weights[r["session_id"]] for r in sel])
        if w[y].sum() > 0 and w[~y].sum() > 0:
            aucs.append(roc_auc_score(y, [r["score"] for r in sel], sample_weight=w))
    return float(np.mean(aucs)) if aucs else math.nan


def _dev_zero(rows) -> dict[float, float]:
    """The dev AUC against the zero null at the default site, by strength, over the kept concepts."""
    dev = [r for r in rows if r["split"] == "dev" and r["site_rank"] == 0]
    return {s: _auc_mean(dev, lambda r, s=s: r["condition"] == "injected" and r["strength"] == s,
                         lambda r: r["condition"] == "zero") for s in STRENGTHS}


def hand_ground(rows, strength: float | None = None) -> tuple[float, float, list[dict]]:
    """A run's ground figure by hand: the strength with the best dev AUC against the zero null at the default
    site over the separable concepts (ties: the smaller), unless given, then the eval AUC against the zero null
    there over those concepts. Returns (AUC, strength, the trials)."""
    if strength is None:
        dev_auc = _dev_zero(rows)
        strength = max(STRENGTHS, key=lambda s: (dev_auc[s], -s))
    trials = [r for r in rows if r["split"] == "eval" and r["site_rank"] == 0 and r["concept"] in KEPT
              and (r["condition"] == "zero" or (r["condition"] == "injected" and r["strength"] == strength))]
    return _auc_mean(trials, lambda r: r["condition"] == "injected", lambda r: r["condition"] == "zero"), strength, \
        trials


def hand_shared(*runs) -> float:
    """The gap's shared strength by hand: the best AUC against the zero null on the runs' dev trials pooled, each
    run's concept a stratum (equal concept counts: the mean of the runs' dev AUCs); ties: the smaller."""
    dev = [_dev_zero(rows) for rows in runs]
    return max(STRENGTHS, key=lambda s: (round(float(np.mean([d[s] for d in dev])), 12), -s))


def _auc_pairs(rows, pos, neg, counts: dict) -> float:
    """Mean over concepts of the pairwise AUC under session counts, by enumerating pairs: a pair from sessions
    i != j weighs k_i * k_j, a pair within one session k_i (once per copy); nan if none."""
    aucs = []
    for c in KEPT:
        p = [r for r in rows if r["concept"] == c and pos(r)]
        q = [r for r in rows if r["concept"] == c and neg(r)]
        num = den = 0.0
        for a in p:
            for b in q:
                ka, kb = counts[a["session_id"]], counts[b["session_id"]]
                w = ka if a["session_id"] == b["session_id"] else ka * kb
                num += w * (1.0 if a["score"] > b["score"] else 0.5 if a["score"] == b["score"] else 0.0)
                den += w
        if den > 0:
            aucs.append(num / den)
    return float(np.mean(aucs)) if aucs else math.nan


def hand_gap_ci(full: list[dict], abl: list[dict], *, paired: bool, n: int = T2_B, seed: int = 0) -> tuple[float, float]:
    """The gap's percentile interval by hand: draw sessions (shared when paired, else the full run's then the
    ablation's), recompute both AUCs pair by pair under the drawn counts (:func:`_auc_pairs`)."""
    rng = np.random.default_rng(seed)
    inj = lambda r: r["condition"] == "injected"  # noqa: E731
    zero = lambda r: r["condition"] == "zero"  # noqa: E731
    sess = {name: sorted({r["session_id"] for r in rows}) for name, rows in (("f", full), ("a", abl))}
    if paired:
        assert sess["f"] == sess["a"]
        draws_f = rng.multinomial(len(sess["f"]), [1 / len(sess["f"])] * len(sess["f"]), size=n)
        draws_a = draws_f
    else:
        draws_f = rng.multinomial(len(sess["f"]), [1 / len(sess["f"])] * len(sess["f"]), size=n)
        draws_a = rng.multinomial(len(sess["a"]), [1 / len(sess["a"])] * len(sess["a"]), size=n)
    dist = []
    for df, da in zip(draws_f, draws_a):
        d = _auc_pairs(full, inj, zero, dict(zip(sess["f"], df))) - _auc_pairs(abl, inj, zero, dict(zip(sess["a"], da)))
        if not math.isnan(d):
            dist.append(d)
    low, high = np.quantile(dist, [0.025, 0.975])
    return float(low), float(high)


def t2_store(path: Path, *, full_gain: float = 0.25, abl_gain: float = 0.35, abl_skip=()) -> tuple[ResultsStore, dict]:
    """trace-full and trace-ablation (native) with Track 2, cot-sft (proxy) with proxy-tier grounding, and
    instruct-base (proxy, no activation access) with Track 1 only. Returns the store and each run's Track 2 rows."""
    t2 = {"full": t2_rows(full_gain, 1), "abl": t2_rows(abl_gain, 2, skip=abl_skip), "cot": t2_rows(0.1, 3)}
    store = ResultsStore(path)
    store.record_run(run("trace-full", "native", run_id="full", tracks=("1", "2", "3"), timings=WITH_ACCESS),
                     t1_rows(FULL_T1) + t3_rows(FULL_T3) + t2["full"])
    store.record_run(run("trace-ablation", "native", run_id="abl", tracks=("1", "2"), timings=WITH_ACCESS),
                     t1_rows(ABL_T1) + t2["abl"])
    store.record_run(run("cot-sft", "proxy", run_id="cot", tracks=("1", "2", "3"), timings=WITH_ACCESS),
                     t1_rows([(i, s, 0.25) for i, s, _ in FULL_T1]) + t3_rows(COT_T3) + t2["cot"])
    store.record_run(run("instruct-base", "proxy", run_id="ib", tracks=("1",),
                         timings={"capabilities": ["batched_act"]}), t1_rows([(i, s, 0.2) for i, s, _ in FULL_T1]))
    return store, t2


@pytest.fixture(scope="module")
def t2(tmp_path_factory) -> tuple[dict, dict]:
    """The Track 2 report (full 0.25 gain, ablation 0.35: the full model is NOT above the ablation) and the rows."""
    store, rows = t2_store(tmp_path_factory.mktemp("t2") / "results.duckdb")
    return build_report(store, n_resamples=T2_B), rows


def _gap(rep: dict) -> dict:
    (table,) = rep["tables"]
    return next(c for c in table["pass_bars"] if c["comparison"].startswith("Track 2"))


def test_ground_gap_is_the_paired_session_bootstrap_of_the_two_auc(t2):
    rep, rows = t2
    head_full, s_full, _ = hand_ground(rows["full"])
    head_abl, _, _ = hand_ground(rows["abl"])
    by = {b["name"]: b["tracks"] for b in rep["baselines"]}
    assert by["trace-full"]["ground"]["score"] == pytest.approx(head_full, abs=1e-12)
    assert by["trace-ablation"]["ground"]["score"] == pytest.approx(head_abl, abs=1e-12)
    assert by["trace-full"]["ground"]["strength"]["strength"] == s_full
    # the gap: both models at ONE strength, chosen on their pooled dev trials (never eval, never the gap)
    shared = hand_shared(rows["full"], rows["abl"])
    full, _, trials_full = hand_ground(rows["full"], shared)
    abl, _, trials_abl = hand_ground(rows["abl"], shared)
    gap = _gap(rep)
    assert gap["strength"]["strength"] == shared and gap["strength"]["split"] == "dev"
    assert gap["concepts"] == list(KEPT) and gap["left_out"] == ["goal=B"]
    assert gap["value"] == pytest.approx(full - abl, abs=1e-12) and gap["value"] < 0
    assert gap["bootstrap"] == "paired" and gap["n_sessions"] == 16
    assert gap["n_items"] == len(trials_full) + len(trials_abl)
    low, high = hand_gap_ci(trials_full, trials_abl, paired=True)
    assert (gap["ci_low"], gap["ci_high"]) == pytest.approx((low, high), abs=1e-9)
    # the point value is below 0 but the gap's interval reaches 0: the direction is not established (never decided
    # by the point value), and every format says so plainly, with the two levels
    assert gap["ci_low"] < 0 < gap["ci_high"]
    assert gap["direction_met"] is None
    plain = (f"full model above the ablation not established ({full:.3f} vs {abl:.3f} at the shared strength; the "
             "gap's CI includes 0)")
    assert plain in gap["statement"]
    js = json.loads(render_json(rep))
    assert plain in js["track2"]["gap"]["statement"] and js["track2"]["gap"]["value"] == pytest.approx(full - abl)
    for text in (render_markdown(rep, None), render_html(rep)):
        assert plain in text.replace("&#x27;", "'") and "direction not established" in text
        assert f"Track 2 ground(trace-full) − ground(trace-ablation) on eval = {full - abl:+.3f}" in text
    assert not re.search(r"\b(PASS|FAIL)(ED)?\b", render_markdown(rep, None))  # a direction, not a verdict


def test_ground_gap_is_independent_when_the_runs_are_on_different_steps(tmp_path):
    skip = {f"eval-s{k}/{t}" for k in (0, 1) for t in (0, 1)}  # the ablation lacks two eval sessions
    store, rows = t2_store(tmp_path / "r.duckdb", full_gain=0.45, abl_gain=0.05, abl_skip=skip)
    gap = _gap(build_report(store, n_resamples=T2_B))
    shared = hand_shared(rows["full"], rows["abl"])
    full, _, trials_full = hand_ground(rows["full"], shared)
    abl, _, trials_abl = hand_ground(rows["abl"], shared)
    assert gap["bootstrap"] == "independent" and gap["n_sessions"] == 16 + 14
    assert gap["value"] == pytest.approx(full - abl, abs=1e-12) and gap["value"] > 0
    assert (gap["ci_low"], gap["ci_high"]) == pytest.approx(hand_gap_ci(trials_full, trials_abl, paired=False),
                                                            abs=1e-9)
    assert gap["ci_low"] > 0 and gap["direction_met"] is True
    assert gap["statement"].startswith("direction met") and "full model above the ablation" in gap["statement"]


def test_track2_details_in_markdown_html_and_json(t2):
    rep, rows = t2
    g = next(b for b in rep["baselines"] if b["name"] == "trace-full")["tracks"]["ground"]
    # JSON: the strength choice (dev), the sweep, per-concept AUCs with their cosine, the identifiability flag
    js = next(b for b in json.loads(render_json(rep))["baselines"] if b["name"] == "trace-full")["tracks"]["ground"]
    assert js["strength"]["split"] == "dev" and set(js["sweep"]) == set(SITES) and js["default_site"] == "h"
    assert {c: f["separable"] for c, f in js["per_concept"].items()} == {"goal=A": True, "goal=B": False,
                                                                         "planned_next=up": True}
    assert any(f.startswith("not identifiable: 1 of 3 concepts") for f in js["flags"])
    # the dev AUCs the strength was chosen on (against the zero null, the separable concepts), against sklearn
    for s, want in _dev_zero(rows["full"]).items():
        assert g["strength"]["dev_auc_zero"][f"{s:g}"] == pytest.approx(want, abs=1e-12)
    # the not-separable concept is out of the headline and named beside it, with the AUC over every concept
    assert js["concepts"]["included"] == list(KEPT) and js["concepts"]["not_separable"] == ["goal=B"]
    assert js["per_concept"]["goal=B"]["in_headline"] is False
    every = _auc_mean([r for r in rows["full"] if r["split"] == "eval" and r["site_rank"] == 0],
                      lambda r: r["condition"] == "injected" and r["strength"] == g["strength"]["strength"],
                      lambda r: r["condition"] == "zero", concepts=CONCEPTS)
    assert js["concepts"]["all_concepts"]["zero"] == pytest.approx(every, abs=1e-12) != g["score"]
    s = f"{g['strength']['strength']:g}"
    md, page = render_markdown(rep, None), render_html(rep)
    for text in (md, page):
        assert "Track 2 — grounding by concept injection (native tier)" in text
        assert "chosen on the dev split alone, never on eval" in text and "chosen on dev, never eval" in text
        assert "not evidence of grounding" in text
    section = md.split("## Track 2 — grounding by concept injection (native tier)")[1].split("\n## ")[0]
    # the sweep: every site × strength, the headline cell (default site, chosen strength) marked
    sweep = [ln for ln in section.splitlines() if ln.startswith(("| h ", "| embed "))]
    assert len(sweep) == len(SITES) * len(STRENGTHS)
    head = next(ln for ln in sweep if ln.startswith(f"| h (default) | {s} |"))
    cell = g["sweep"]["h"][s]
    assert f"**{cell['zero']:.3f} / {cell['random']:.3f}** ◀" in head and f"{g['score']:.3f}" in head
    # per concept: the flagged concept's AUC is under its flag, never bare
    rows_md = {ln.split(" | ")[0][2:]: ln for ln in section.splitlines() if ln.startswith(("| goal=", "| planned_"))}
    flagged = g["per_concept"]["goal=B"]
    assert "⚠ not separable (max cos 0.930 ≥ 0.8)" in rows_md["goal=B"]
    assert rows_md["goal=B"].count("not evidence of grounding") == 2  # both native baselines' cells
    assert f"{flagged['zero']:.3f} / {flagged['random']:.3f} is not evidence" in rows_md["goal=B"]
    assert "not separable" not in rows_md["goal=A"] and "max cos 0.210" in rows_md["goal=A"]
    assert '<span class="red">⚠ not separable: not evidence</span>' in page
    # the native section lists native baselines only
    assert "| cot-sft |" not in section and "| trace-full |" in section


def test_proxy_tier_grounding_is_labelled_and_kept_apart_everywhere(t2):
    rep, _ = t2
    cot = next(b for b in rep["baselines"] if b["name"] == "cot-sft")
    assert cot["tracks"]["ground"]["label"] == "proxy-tier grounding" and cot["tracks"]["ground"]["tier"] == "proxy"
    full = next(b for b in rep["baselines"] if b["name"] == "trace-full")
    assert "label" not in full["tracks"]["ground"] and full["tracks"]["ground"]["tier"] == "native"
    score = f"{cot['tracks']['ground']['score']:.3f}"
    md = render_markdown(rep, None)
    main_row = next(ln for ln in md.splitlines() if ln.startswith("| cot-sft | eval |"))
    assert f"proxy-tier grounding: {score} [" in main_row
    vector = next(ln for ln in md.splitlines() if ln.startswith("| ground |"))
    assert f"proxy-tier grounding: {score} [" in vector
    assert vector.count("proxy-tier grounding") == 1  # trace-full's and trace-ablation's entries are native
    proxy = md.split("## Proxy-tier grounding (proxy tier: this toolkit's extension, not spec Track 2)")[1]
    assert "spec §3 defines track 2 on native models only" in proxy.lower() and "| cot-sft | eval |" in proxy
    js = json.loads(render_json(rep))
    pv = {p["name"]: p["vector"]["ground"] for p in js["profile_vectors"]}
    assert pv["cot-sft"]["label"] == "proxy-tier grounding" and pv["cot-sft"]["tier"] == "proxy"
    assert js["track2"]["proxy_tier"]["baselines"] == ["cot-sft (eval)"]
    assert js["track2"]["native_tier"] == ["trace-ablation (eval)", "trace-full (eval)"]
    page = render_html(rep)
    assert page.count('<span class="tier">proxy-tier grounding</span>') == 2  # ground and ground-rand of cot-sft
    assert "Proxy-tier grounding (proxy tier" in page
    # the per-track plot names it under its point
    ticks = [t.get_text() for ax in _figure(rep).axes if ax.get_title().startswith("Track 2")
             for t in ax.get_xticklabels()]
    assert "cot-sft\n(proxy-tier grounding, eval)" in ticks and "trace-full\n(native, eval)" in ticks


def test_profile_vector_ground_needs_recorded_activation_access(t2):
    rep, _ = t2
    pv = {p["name"]: p["vector"]["ground"] for p in rep["profile_vectors"]}
    by = {b["name"]: b["tracks"]["ground"] for b in rep["baselines"]}
    assert pv["trace-full"]["status"] == "ok" and pv["trace-full"]["score"] == by["trace-full"]["score"]
    assert pv["instruct-base"]["status"] == "not applicable"
    assert "capability activation_access" in pv["instruct-base"]["note"]


def test_the_profile_plot_has_a_panel_per_baseline_with_six_entries(t2, tmp_path):
    from trb.report.figures import _profiles_figure, plot_profiles

    rep, _ = t2
    fig, panels = _profiles_figure(rep)
    names = [p["name"] for p in rep["profile_vectors"]]
    assert list(panels) == names == ["instruct-base", "cot-sft", "trace-ablation", "trace-full"]
    assert [sf.get_suptitle() for sf in fig.subfigs[:4]] == [
        f"{p['name']} ({p['adapter_tier']})" for p in rep["profile_vectors"]]
    rows = {b["name"]: b["tracks"] for b in rep["baselines"]}
    for name, axes in panels.items():
        assert list(axes) == ["G", "ground", "attr", "viab", "nav", "trans"]
        vector = next(p for p in rep["profile_vectors"] if p["name"] == name)["vector"]
        for entry, ax in axes.items():
            texts = [t.get_text() for t in ax.texts]
            if vector[entry]["status"] != "ok":  # not run / not applicable: a grey label, nothing drawn
                assert texts == [f"n/a: {vector[entry]['status']}"] and not ax.lines and not ax.collections
                continue
            (point,) = [ln for ln in ax.lines if ln.get_marker() == "o"]
            assert point.get_xdata()[0] == pytest.approx(vector[entry]["score"])
            (bars,) = ax.collections  # the CI
            (seg,) = bars.get_segments()
            assert [seg[0][0], seg[1][0]] == pytest.approx([vector[entry]["ci_low"], vector[entry]["ci_high"]])
            nulls = [ln.get_xdata()[0] for ln in ax.lines if ln.get_linestyle() == "--"]
            assert nulls == ([0.5] if entry in ("ground", "attr") else [])  # G's null: no uniform-policy G here
    # each entry has one scale across the panels; an AUC's is [0, 1] (padded)
    for entry in ("G", "ground", "attr"):
        lims = {panels[n][entry].get_xlim() for n in names}
        assert len(lims) == 1 and min(lims)[0] < 0 < 1 < min(lims)[1]
    assert panels["cot-sft"]["ground"].get_ylabel() == "ground\n(proxy tier)"
    assert panels["trace-full"]["ground"].get_ylabel() == "ground"
    assert panels["instruct-base"]["ground"].texts[0].get_text() == "n/a: not applicable"
    assert rows["trace-full"]["3"]["score"] is not None and panels["trace-full"]["attr"].lines
    path = plot_profiles(rep, tmp_path / "out" / "profiles.png")
    assert path.read_bytes()[:8] == PNG_MAGIC
    with Image.open(path) as img:
        assert img.format == "PNG" and 1000 < img.size[0] <= 1280
    # Markdown links it under the profile vector; HTML holds it inline
    md = render_markdown(rep, Path("report.png"), Path("report-profiles.png"))
    vector_part = md.split("## Profile vector")[1].split("## Track 6")[0]
    assert "](report-profiles.png)" in vector_part
    m = re.search(r'<svg id="profiles-plot" class="plot"[^>]*>(.*?)</svg>', render_html(rep), re.S)
    assert m and m.group(1).count('id="profiles-plot-axes_') == 6 * len(names)  # six entries a baseline


def test_track2_interval_holds_its_point_when_a_sessions_trials_move_together(tmp_path):
    """Injected and null trials of one session move together (the same context). A literal session resample
    weighed a session's own pairs by its count squared and put the interval above the point (0.552 [0.558, 0.639]
    was seen); pairs within a session now weigh their count once, so the interval holds the point."""
    rng = np.random.default_rng(0)
    rows = []
    for k in range(10):
        base = rng.uniform(0, 1)  # sessions differ a lot; within one, the injection adds a little
        for t in range(4):
            for c in ("goal=A", "goal=B"):
                z = base + 0.02 * rng.normal()
                for split in ("eval", "dev"):
                    for cond, s, x in (("zero", 0.0, z), ("injected", 4.0, z + 0.03), ("random", 4.0, z)):
                        rows.append({"track": "2", "metric": "grounding", "item_id": f"{split}{k}/{t}|h|{c}|{cond}",
                                     "session_id": f"{split}{k}", "t": t, "split": split, "score": x,
                                     "condition": cond, "concept": c, "site": "h", "site_rank": 0, "strength": s,
                                     "cos_max": 0.1})
    store = ResultsStore(tmp_path / "r.duckdb")
    store.record_run(run("trace-full", "native", tracks=("2",), timings=WITH_ACCESS), rows)
    rep = build_report(store, n_resamples=500)
    g = rep["baselines"][0]["tracks"]["ground"]
    assert g["ci_low"] <= g["score"] <= g["ci_high"]
    assert not any(f.startswith("point outside its interval") for f in g.get("flags", []))


def test_a_point_outside_its_interval_is_flagged():
    """Any figure whose point lies outside its own interval says so, in every format."""
    from trb.report.profile import _track_entry
    from trb.stats import Estimate

    entry = _track_entry(Estimate(0.55, 0.56, 0.64, 80, 10), "a figure")
    assert any(f.startswith("point outside its interval") for f in entry["flags"])
    assert not any(f.startswith("point outside") for f in _track_entry(Estimate(0.6, 0.56, 0.64, 80, 10),
                                                                        "a figure").get("flags", []))


def test_track6_names_proxy_tier_grounding_too(tmp_path):
    store, _ = t2_store(tmp_path / "r.duckdb")
    ctx = {"s1": "ctxA", "s2": "ctxB", "s3": "ctxB"}
    t1 = [dict(r, split="transfer", context_id=ctx[r["session_id"]])
          for r in t1_rows([(i, s, 0.1) for i, s, _ in FULL_T1])]
    t2 = [dict(r, split="transfer", context_id="ctxA") for r in t2_rows(0.05, 9) if r["split"] == "eval"]
    store.record_run(run("cot-sft", "proxy", run_id="cot-tr", split="transfer", tracks=("1", "2"),
                         timings=WITH_ACCESS, trained_by=["Lab A"]), t1 + t2)
    rep = build_report(store, n_resamples=50)
    trans = next(p for p in rep["profile_vectors"] if p["name"] == "cot-sft")["vector"]["trans"]
    assert trans["figures"]["ground"]["title"] == "proxy-tier grounding (detection AUC vs no injection)"
    assert trans["figures"]["1"]["title"] == "Track 1 — governance G"
    row = next(ln for ln in render_markdown(rep, None).splitlines() if ln.startswith("| trans |"))
    assert "proxy-tier grounding (detection AUC vs no injection): " in row and "Track 2" not in row


def test_the_reports_session_codes_number_sessions_as_their_ids_do():
    # the report hands the tracks each item's session as a number, not its id: the numbers must order the sessions
    # as the ids do (the bootstrap draws sessions in that order), whatever the ids' script and however Arrow chunks
    # them, so every figure is the one the ids give
    import pyarrow as pa

    from trb.report.columns import _session_codes
    from trb.stats import _session_index, mean_by_session

    rng = np.random.default_rng(11)
    alphabet = ["a", "B", "é", "日", "0", "_", "ß", "\U0001F600", "z", "s-10", "s-9"]
    for _ in range(30):
        ids = ["".join(rng.choice(alphabet, rng.integers(1, 4))) for _ in range(rng.integers(2, 40))]
        items = [ids[i] for i in rng.integers(0, len(ids), 300)]
        cut = int(rng.integers(1, 299))
        codes = _session_codes(pa.chunked_array([items[:cut], items[cut:]], pa.string()))
        assert codes.dtype == np.int64
        assert _session_index(codes, codes.size)[0].tolist() == _session_index(np.array(items, dtype=object), 300)[0].tolist()
        scores = rng.random(300)
        assert mean_by_session(scores, codes, n_resamples=200, seed=2) == mean_by_session(
            scores, np.array(items, dtype=object), n_resamples=200, seed=2)


def test_the_report_reads_a_tracks_columns_as_asked_and_each_once(tmp_path, monkeypatch):
    # a million sessions' items are read a column at a time, only the columns a figure asks for, and each once
    # however often it is asked for: the values are the store's
    from trb.report.columns import _ItemColumns

    store = hand_store(tmp_path)
    names = ["metric", "session_id", "score", "origin", "adversarial", "ood"]
    want = store.items("full", track="1", columns=names)
    reads = []
    items = type(store).items

    def counted(self, *a, **k):
        reads.append(k.get("columns"))
        return items(self, *a, **k)

    monkeypatch.setattr(type(store), "items", counted)
    cols = _ItemColumns(store, "full", "1", names)
    assert list(cols) == names and "score" in cols and "label" not in cols and not reads
    with pytest.raises(KeyError):
        cols["label"]
    for _ in range(3):
        for n in ("score", "origin", "adversarial", "metric"):
            assert list(cols[n]) == want.column(n).to_pylist()
    assert reads == [["score"], ["origin"], ["adversarial"], ["metric"]]
    assert cols["session_id"].tolist() == [0, 0, 1, 2, 2]  # s1 s1 s2 s3 s3, numbered in the ids' order
    assert cols._read.keys() == {"score", "origin", "adversarial", "metric", "session_id"}  # never "ood"


def test_every_session_bootstrap_gives_the_same_figure_from_the_reports_codes_as_from_the_ids():
    # the report hands every track's figures its sessions as int64 codes; each estimator must draw the same sessions
    # from them as from the ids (a code turned into text would number "s-10" before "s-9" as "10" before "9"): the
    # same value and interval, bit for bit
    import pyarrow as pa

    from trb.beliefs import belief_distribution, brier_by_session, calibration_by_session, roc_auc_by_session
    from trb.grounding import detection_auc_by_session
    from trb.report.columns import _session_codes
    from trb.stats import (
        balanced_accuracy_by_session,
        brier_quality_ratio_by_session,
        mean_by_session,
        normalised_gain_by_session,
        paired_balanced_accuracy_delta_by_session,
        paired_delta_by_session,
        ratio_by_session,
    )

    rng = np.random.default_rng(3)
    n = 400
    ids = np.array([f"s-{i}" for i in rng.integers(0, 60, n)], dtype=object)  # s-10 .. s-59 beside s-2 .. s-9
    codes = _session_codes(pa.chunked_array([ids.tolist()], pa.string()))
    labels = np.array(rng.choice(["self", "exogenous", None], n), dtype=object)
    pred_a = np.array(rng.choice(["self", "exogenous"], n), dtype=object)
    pred_b = np.array(rng.choice(["self", "exogenous", "unsure"], n), dtype=object)
    beliefs = np.where(rng.random(n) < 0.1, np.nan, rng.random(n))
    a, b = rng.random(n), rng.random(n)
    strata = np.array(rng.choice(["c1", "c2"], n), dtype=object)
    figures = {
        "mean": lambda s: mean_by_session(a, s, n_resamples=300, seed=1),
        "paired delta": lambda s: paired_delta_by_session(a, b, s, n_resamples=300, seed=1),
        "normalised gain": lambda s: normalised_gain_by_session(a, b, s, n_resamples=300, seed=1),
        "ratio": lambda s: ratio_by_session(a, b + 0.1, s, n_resamples=300, seed=1),
        "brier quality ratio": lambda s: brier_quality_ratio_by_session(a, b + 1, b, a + 1, s, n_resamples=300, seed=1),
        "balanced accuracy": lambda s: balanced_accuracy_by_session(labels, pred_a, s, n_resamples=300, seed=1),
        "paired BA delta": lambda s: paired_balanced_accuracy_delta_by_session(labels, pred_a, pred_b, s,
                                                                              n_resamples=300, seed=1),
        "ROC AUC": lambda s: roc_auc_by_session(labels, beliefs, s, n_resamples=300, seed=1),
        "Brier": lambda s: brier_by_session(labels, beliefs, s, n_resamples=300, seed=1),
        "ECE": lambda s: calibration_by_session(labels, beliefs, s, n_resamples=300, seed=1).ece,
        "self share": lambda s: belief_distribution(beliefs, s, n_resamples=300, seed=1).share_self,
        "detection AUC": lambda s: detection_auc_by_session(a, b > 0.5, strata, s, n_resamples=300, seed=1),
    }
    for name, figure in figures.items():
        assert figure(codes) == figure(ids), name
