"""A track adds its report through the track registry: its sections, its JSON block and its pass bar appear in
the report without an edit of the report package (trb/report/sections.py); Track 6 is a derived track that
`trb run` refuses by name."""

from __future__ import annotations

import numpy as np
import pytest

from trb.errors import UsageError
from trb.report import build_report, render_html, render_markdown
from trb.results import ResultsStore
from trb.stats import mean_by_session
from trb.tracks.base import Metric, register_track, registered_tracks, unregister_track

TOY = "97"


class ToyTrack:
    """A throw-away track with one metric over the common item columns, and a report section."""

    id = TOY
    name = "toy"
    section = "a test"
    needs: tuple = ()
    metrics = (Metric("toy", TOY, "toy", "Track 97 — toy mean", "the mean item score"),)
    columns: tuple = ()
    report = "test_report_sections:SECTION"

    def count(self, release, split, **_):
        return 0

    def items(self, release, split, **_):
        return iter(())

    def score(self, adapter, items, timer=None, progress=None, **_):
        return [], {"scored": 0}

    def aggregate(self, metric, columns, *, n_resamples, confidence, seed):
        return mean_by_session(columns["score"].astype(float), columns["session_id"], n_resamples=n_resamples,
                               confidence=confidence, seed=seed)


class ToySection:
    key = "toy"
    position = 30  # after Track 2's sections (20), before the profile vector (50)

    def build(self, ctx):
        return {"baselines": sorted({b for b, _ in ctx.latest}), "seen_profile_vectors": "profile_vectors" in ctx.report}

    def pass_bars(self, ctx, split, rows):
        return [{"comparison": "toy bar", "direction": "toy direction", "value": None, "ci_low": None, "ci_high": None,
                 "n_items": 0, "n_sessions": 0, "reading": None, "note": f"nothing to compare on {split}"}]

    def markdown(self, report, **_):
        return ["## Track 97 — the toy's own section", "", f"Baselines: {', '.join(report['toy']['baselines'])}.", ""]

    def html(self, report, **_):
        return "<h2>Track 97 — the toy's own section</h2>"


SECTION = ToySection()


@pytest.fixture
def toy_store(tmp_path):
    register_track(ToyTrack())
    try:
        store = ResultsStore(tmp_path / "results.duckdb")
        for name, tier, shift in (("trace-full", "native", 0.2), ("cot-sft", "proxy", 0.0)):
            rows = [{"track": TOY, "metric": "toy", "item_id": f"i{k}", "session_id": f"s{k % 4}", "split": "eval",
                     "score": float(0.5 + shift * (k % 2))} for k in range(12)]
            store.record_run({"release_sha": "ab" * 32, "release_version": "0.1.0", "release_kind": "trb",
                              "smoke_test": False, "baseline": name, "adapter_tier": tier,
                              "adapter_spec": {"kind": tier}, "seed": 0, "tracks": [TOY], "split": "eval",
                              "synthetic_share": None, "created_at": "2026-12-04T00:00:00+00:00", "run_id": name},
                             rows)
        yield store
    finally:
        unregister_track(TOY)


def test_a_new_tracks_section_block_and_pass_bar_come_through_the_registry(toy_store):
    rep = build_report(toy_store, n_resamples=200)
    assert rep["toy"] == {"baselines": ["cot-sft", "trace-full"], "seen_profile_vectors": True}
    full = next(b for b in rep["baselines"] if b["name"] == "trace-full")
    want = np.mean([0.5 + 0.2 * (k % 2) for k in range(12)])
    assert full["tracks"]["toy"]["score"] == pytest.approx(want)
    bars = rep["tables"][0]["pass_bars"]
    assert bars[-1]["comparison"] == "toy bar" and bars[-1]["note"] == "nothing to compare on eval"
    md = render_markdown(rep)
    toy, vector, native = (md.index(h) for h in ("## Track 97 — the toy's own section", "## Profile vector",
                                                 "## Track 2 — grounding"))
    assert native < toy < vector  # placed by its position among the others
    assert "Baselines: cot-sft, trace-full." in md and "toy bar: not available — nothing to compare on eval" in md
    assert "<h2>Track 97 — the toy's own section</h2>" in render_html(rep)


def test_without_the_track_its_section_is_gone(tmp_path):
    assert TOY not in registered_tracks()
    from trb.report.sections import report_sections

    assert [t for t, _ in report_sections()] == ["2", "6"]


def test_track_6_is_a_derived_track_that_trb_run_refuses_by_name(tmp_path):
    from trb.run import RunSpec, run_tracks

    six = registered_tracks()["6"]
    assert six.derived and six.report == "trb.tracks.track6_report:SECTION" and not six.metrics
    with pytest.raises(UsageError, match=r"Track 6 \(transfer\) is not run on its own: `trb report` computes it"):
        run_tracks(RunSpec(tmp_path / "no-release", baseline="x", tracks=("6",), results=tmp_path / "r.duckdb"),
                   object(), progress=False)
    assert not (tmp_path / "r.duckdb").exists()
