"""Results in the app (--results): runs with per-track scores, worst items first, Enter jumps to the trace."""

from __future__ import annotations

from textual.widgets import DataTable

from review_helpers import drive, settle, table_rows
from trb.results import ResultsStore
from tui.app import ReviewApp
from tui.results_view import read_runs, worst_items
from tui.screens.results import ResultsScreen
from tui.screens.session import SessionScreen
from tui.widgets.timeline import Timeline

RUN = {"run_id": "run-a-0001", "created_at": "2026-11-20T10:00:00+00:00", "release_sha": "b" * 64,
       "release_version": "0.1.0", "release_kind": "smoke", "smoke_test": True, "baseline": "trace-full",
       "adapter_tier": "native", "adapter_spec": {"kind": "native"}, "seed": 7, "tracks": ["1", "3"], "split": "eval"}
#: Track 1: score = 1 - TV(model, Φ); Track 3: 1 right, 0 wrong. Items point at real 7f3a steps.
ITEMS = [
    {"track": "1", "metric": "tv", "item_id": "7f3a-cf-syn-t1-adv", "session_id": "7f3a", "t": 1, "score": 0.40},
    {"track": "1", "metric": "tv", "item_id": "cf-b", "session_id": "7f3a", "t": 2, "score": 0.90},
    {"track": "1", "metric": "tv", "item_id": "cf-c", "session_id": "7f3a", "t": 3, "score": 0.80},
    {"track": "3", "metric": "attribution", "item_id": "7f3a-attr-clock-jump", "session_id": "7f3a", "t": 5,
     "score": 0.0, "label": "exogenous", "predicted": "self"},
    {"track": "3", "metric": "attribution", "item_id": "7f3a-attr-2plus2", "session_id": "7f3a", "t": 0,
     "score": 1.0, "label": "self", "predicted": "self"},
    {"track": "3", "metric": "attribution", "item_id": "attr-x", "session_id": "7f3a", "t": 3,
     "score": 1.0, "label": "exogenous", "predicted": "exogenous"},
]


def make_results(path):
    store = ResultsStore(path)
    store.record_run(RUN, ITEMS)
    store.record_run({**RUN, "run_id": "run-b-0002", "created_at": "2026-11-21T10:00:00+00:00",
                      "baseline": "no-trace", "adapter_tier": "proxy"},
                     [{**ITEMS[0], "score": 0.5}])
    return path


def test_runs_have_hand_computed_figures_and_worst_items_come_first(tmp_path):
    path = make_results(tmp_path / "results.duckdb")
    runs = read_runs(path)
    assert [r.run_id for r in runs] == ["run-a-0001", "run-b-0002"]
    t1_mean, t1_n = runs[0].tracks["1"]
    assert abs(t1_mean - (0.40 + 0.90 + 0.80) / 3) < 1e-12 and t1_n == 3
    # Track 3 is balanced accuracy, as in the report: (TPR 1/1 + TNR 1/2) / 2 = 0.75 (plain accuracy would be 2/3)
    assert runs[0].tracks["3"] == (0.75, 3)
    assert runs[1].tracks == {"1": (0.5, 1)} and runs[1].notes["3"] == "run on this track but no items scored"
    worst = worst_items(path, "run-a-0001")
    assert [(w.track, w.item_id, w.score) for w in worst] == [
        ("3", "7f3a-attr-clock-jump", 0.0), ("1", "7f3a-cf-syn-t1-adv", 0.40), ("1", "cf-c", 0.80),
        ("1", "cf-b", 0.90), ("3", "7f3a-attr-2plus2", 1.0), ("3", "attr-x", 1.0)]
    assert (worst[0].session_id, worst[0].t) == ("7f3a", 5)


@drive
async def test_jump_from_a_bad_score_to_its_trace(review_corpus, tmp_path):
    path = make_results(tmp_path / "results.duckdb")
    app = ReviewApp(review_corpus, results=path, reviewer="rev-1")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        runs = table_rows(screen.query_one("#runs", DataTable))
        assert runs[0][:7] == ["run-a-00", "trace-full*", "eval", "native", "0.1.0", "0.700 (n=3)", "0.750 (n=3)"]
        assert "SMOKE TEST" in str(screen.query_one("#title").render())
        worst = table_rows(screen.query_one("#worst", DataTable))
        assert [r[2] for r in worst[:2]] == ["7f3a-attr-clock-jump", "7f3a-cf-syn-t1-adv"]

        await pilot.press("tab", "enter")  # to the items; Enter on the worst one
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)
        assert app.screen.session_id == "7f3a" and app.screen.query_one(Timeline).selected_t == 5
        assert app.screen.current_item().item_id == "7f3a-attr-clock-jump"

        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen and screen.query_one("#worst", DataTable).has_focus
        await pilot.press("tab", "down")  # back to the runs; the second run shows its one item
        await settle(pilot)
        assert [r[2] for r in table_rows(screen.query_one("#worst", DataTable))] == ["7f3a-cf-syn-t1-adv"]


@drive
async def test_results_key_without_a_results_store_says_how_to_get_one(review_corpus):
    app = ReviewApp(review_corpus, reviewer="rev-1")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await pilot.pause()
        assert not isinstance(app.screen, ResultsScreen)
        assert any("--results" in n.message for n in app._notifications)


def test_the_app_shows_exactly_the_reports_numbers(tmp_path):
    """Same store, same figures: the results screen's cells are the report's values, metric by metric.

    Track 1 here mixes TV and LLR items (the LLR variant is its own figure, never averaged into G)
    and Track 3 has unbalanced classes (balanced accuracy differs from plain accuracy).
    """
    from trb.report import build_report, format_score
    from tui.results_view import metric_columns

    path = tmp_path / "results.duckdb"
    store = ResultsStore(path)
    store.record_run(RUN, ITEMS + [{"track": "1", "metric": "llr", "item_id": "cf-text", "session_id": "7f3a",
                                    "t": 4, "score": -3.0}])
    store.record_run({**RUN, "run_id": "run-c-0003", "created_at": "2026-11-22T10:00:00+00:00",
                      "baseline": "trace-ablation", "split": "transfer"},
                     [{**ITEMS[0], "score": 0.25}, {**ITEMS[3], "session_id": "s2"}, {**ITEMS[4], "session_id": "s3"}])
    report = build_report(store, n_resamples=50)
    shown = {r.run_id: r for r in read_runs(path)}
    keys = [c.key for c in metric_columns()]
    assert keys == ["1", "3"]
    compared = 0
    for base in report["baselines"]:
        run = shown[base["run_id"]]
        assert run.split == base["split"]
        for key in keys:
            entry = base["tracks"].get(key)
            if entry is None or entry["score"] is None:
                assert key not in run.tracks
                continue
            assert run.tracks[key] == (entry["score"], entry["n_items"])
            assert format_score(entry) == f"{run.tracks[key][0]:.3f}"
            compared += 1
    assert compared == 4
    assert shown["run-a-0001"].tracks["1"][0] == (0.40 + 0.90 + 0.80) / 3  # the LLR item is not in G
