"""Results in the app (--results): runs with per-track scores, worst items first, Enter jumps to the trace."""

from __future__ import annotations

import re

from review_helpers import drive, settle, table_rows
from trb.results import ResultsStore
from tui.app import ReviewApp
from tui.results_view import item_lists, read_runs, worst_items
from tui.screens.results import ResultsScreen
from tui.screens.session import SessionScreen
from tui.widgets.fit_table import FitTable
from tui.widgets.timeline import Timeline

RUN = {"run_id": "run-a-0001", "created_at": "2026-11-20T10:00:00+00:00", "release_sha": "b" * 64,
       "release_version": "0.1.0", "release_kind": "smoke", "smoke_test": True, "baseline": "trace-full",
       "adapter_tier": "native", "adapter_spec": {"kind": "native"}, "seed": 7, "tracks": ["1", "3"], "split": "eval"}
#: Track 1: score = 1 - TV(model, Φ), detail as Track 1 writes it; Track 3: 1 right, 0 wrong. Items point at real
#: 7f3a steps (7f3a-cf-syn-t1-adv: Φ(r') = answer_2 0.25, answer_4 0.75; r' plans answer_2; the agent took answer_4).
T1_DETAIL = '{"p":{"answer_2":0.85,"answer_4":0.15},"phi":{"answer_2":0.25,"answer_4":0.75},"tv":0.6}'
ITEMS = [
    {"track": "1", "metric": "tv", "item_id": "7f3a-cf-syn-t1-adv", "session_id": "7f3a", "t": 1, "score": 0.40,
     "origin": "synthetic", "detail": T1_DETAIL},
    {"track": "1", "metric": "tv", "item_id": "cf-b", "session_id": "7f3a", "t": 2, "score": 0.90},
    {"track": "1", "metric": "tv", "item_id": "cf-c", "session_id": "7f3a", "t": 3, "score": 0.80},
    {"track": "3", "metric": "attribution", "item_id": "7f3a-attr-clock-jump", "session_id": "7f3a", "t": 5,
     "score": 0.0, "label": "exogenous", "predicted": "self", "belief": 0.83},
    {"track": "3", "metric": "attribution", "item_id": "7f3a-attr-2plus2", "session_id": "7f3a", "t": 0,
     "score": 1.0, "label": "self", "predicted": "self"},
    {"track": "3", "metric": "attribution", "item_id": "attr-x", "session_id": "7f3a", "t": 3,
     "score": 1.0, "label": "exogenous", "predicted": "exogenous"},
]


#: A third run with many Track 1 items: its worst items come a page at a time.
MANY = [{"track": "1", "metric": "tv", "item_id": f"cf-p{i:03d}", "session_id": "7f3a", "t": i % 8,
         "score": round(1 - i / 200, 3)} for i in range(120)]


def make_results(path):
    store = ResultsStore(path)
    store.record_run(RUN, ITEMS)
    store.record_run({**RUN, "run_id": "run-b-0002", "created_at": "2026-11-21T10:00:00+00:00",
                      "baseline": "no-trace", "adapter_tier": "proxy"},
                     [{**ITEMS[0], "score": 0.5}])
    store.record_run({**RUN, "run_id": "run-c-0003", "created_at": "2026-11-22T10:00:00+00:00",
                      "baseline": "trace-ablation", "tracks": ["1"]}, MANY)
    return path


def test_runs_have_hand_computed_figures_and_worst_items_come_per_track(tmp_path):
    path = make_results(tmp_path / "results.duckdb")
    runs = read_runs(path)
    assert [r.run_id for r in runs] == ["run-a-0001", "run-b-0002", "run-c-0003"]
    t1_mean, t1_n = runs[0].tracks["1"]
    assert abs(t1_mean - (0.40 + 0.90 + 0.80) / 3) < 1e-12 and t1_n == 3
    # Track 3 is balanced accuracy, as in the report: (TPR 1/1 + TNR 1/2) / 2 = 0.75 (plain accuracy would be 2/3)
    assert runs[0].tracks["3"] == (0.75, 3)
    assert [(f.title, f.score) for f in runs[0].figures if f.headline] == [
        ("Track 1 — governance G", t1_mean), ("Track 2 — grounding (detection AUC vs no injection)", None),
        ("Track 3 — attribution BA", 0.75), ("Track 4 — viability (completion ratio)", None),
        ("Track 5 — navigability (reach-rate lift)", None)]
    assert runs[1].tracks == {"1": (0.5, 1)} and runs[1].notes["3"] == "run on this track but no items scored"
    # one list per track (and stored metric), titled by the registry; never mixed
    lists = item_lists(path, "run-a-0001")
    assert [(x.track, x.metric, x.title, x.n_items) for x in lists] == [
        ("1", "tv", "Track 1 — governance G", 3), ("3", "attribution", "Track 3 — attribution BA", 3)]
    t1 = worst_items(path, "run-a-0001", track="1", metric="tv")
    assert [(w.item_id, w.score) for w in t1.items] == [("7f3a-cf-syn-t1-adv", 0.40), ("cf-c", 0.80), ("cf-b", 0.90)]
    assert t1.total == 3 and t1.items[0].detail == {"p": {"answer_2": 0.85, "answer_4": 0.15},
                                                    "phi": {"answer_2": 0.25, "answer_4": 0.75}, "tv": 0.6}
    t3 = worst_items(path, "run-a-0001", track="3", metric="attribution")
    assert [(w.item_id, w.score, w.predicted, w.belief) for w in t3.items] == [
        ("7f3a-attr-clock-jump", 0.0, "self", 0.83), ("7f3a-attr-2plus2", 1.0, "self", None),
        ("attr-x", 1.0, "exogenous", None)]
    assert (t3.items[0].session_id, t3.items[0].t) == ("7f3a", 5)
    # paged, not capped: every item once, lowest first
    pages = [worst_items(path, "run-c-0003", track="1", metric="tv", offset=o, limit=50) for o in (0, 50, 100)]
    assert [len(p.items) for p in pages] == [50, 50, 20] and {p.total for p in pages} == {120}
    assert [w.item_id for p in pages for w in p.items] == [f"cf-p{i:03d}" for i in range(119, -1, -1)]


def _pane(screen) -> str:
    return str(screen.query_one("#pane").render())


def _notes(app) -> str:
    return "\n".join(n.message for n in app._notifications)


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
        runs_table = screen.query_one("#runs", FitTable)
        # at 80 columns the registry's full titles head the figure columns (run id, tier and release give way;
        # the pane below names them)
        assert [str(c.label) for c in runs_table.columns.values()] == [
            "baseline", "split", "Track 1 — governance G", "Track 2 — grounding (detection AUC vs no injection)",
            "Track 3 — attribution BA", "Track 4 — viability (completion ratio)",
            "Track 5 — navigability (reach-rate lift)"]
        runs = table_rows(runs_table)
        assert runs[0][1:] == ["eval", "0.700 (n=3)", "—", "0.750 (n=3)", "—", "—"] and runs[0][0].startswith("trace-f")
        assert "SMOKE TEST" in str(screen.query_one("#title").render())
        pane = _pane(screen)  # the run's every figure, under the registry's titles
        assert "run run-a-0001" in pane and "native tier" in pane
        assert re.search(r"^Track 1 — governance G +0\.700  n=3$", pane, re.M)
        assert re.search(r"^Track 3 — attribution BA +0\.750  n=3$", pane, re.M)
        await pilot.press("enter")  # Enter on a run cannot open anything: it says where to go
        await pilot.pause()
        assert "Tab to the worst items" in _notes(app)

        assert str(screen.query_one("#list").render()).startswith(
            "Track 1 — governance G · worst first: 1–3 of 3 · page 1/1 · t: next list")
        await pilot.press("tab")  # to the items: the pane shows the model's distribution beside Φ(r')
        await settle(pilot)
        worst = screen.query_one("#worst", FitTable)
        assert [r[:3] for r in table_rows(worst)] == [["0.400", "0.600", "7f3a-cf-syn-t1-adv"],
                                                      ["0.800", "0.200", "cf-c"], ["0.900", "0.100", "cf-b"]]
        lines = _pane(screen).splitlines()
        assert "score 0.400 · TV 0.600" in lines[0]
        a2 = next(ln for ln in lines if ln.startswith("answer_2"))
        a4 = next(ln for ln in lines if ln.startswith("answer_4"))
        assert "0.85" in a2 and "0.25" in a2 and a2.endswith("← r′")  # r' plans answer_2
        assert "0.15" in a4 and "0.75" in a4 and a4.endswith("◀ taken")  # the agent took answer_4

        await pilot.press("t")  # the next track's list
        await settle(pilot)
        assert str(screen.query_one("#list").render()).startswith("Track 3 — attribution BA · worst first: 1–3 of 3")
        assert table_rows(worst)[0][:3] == ["0.000", "7f3a-attr-clock-jump", "7f3a"]
        assert "label exogenous · predicted self · belief 0.83" in _pane(screen)
        await pilot.press("enter")  # Enter on the worst one: its trace
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)
        assert app.screen.session_id == "7f3a" and app.screen.query_one(Timeline).selected_t == 5
        assert app.screen.current_item().item_id == "7f3a-attr-clock-jump"

        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen and worst.has_focus
        await pilot.press("tab", "down")  # back to the runs; the second run shows its one item
        await settle(pilot)
        assert [r[2] for r in table_rows(worst)] == ["7f3a-cf-syn-t1-adv"]
        await pilot.press("t")  # one list only: the key says so
        await pilot.pause()
        assert "no other track to show" in _notes(app)

        await pilot.press("down")  # the third run: 120 items, 50 a page
        await settle(pilot)
        assert "worst first: 1–50 of 120" in str(screen.query_one("#list").render())
        await pilot.press("right_square_bracket", "right_square_bracket")
        await settle(pilot)
        assert "worst first: 101–120 of 120" in str(screen.query_one("#list").render())
        assert table_rows(worst)[-1][2] == "cf-p000"
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert "already on the last page" in _notes(app)

        await pilot.resize_terminal(260, 36)  # with room, every column comes back, nothing cut
        await settle(pilot)
        assert runs_table.shown_columns() == ["run", "baseline", "split", "tier", "release", "1", "ground", "3", "viab",
                                              "nav"]
        assert table_rows(runs_table)[0][:5] == ["run-a-0001", "trace-full*", "eval", "native", "0.1.0"]
        assert not any(c.endswith("…") for t in (runs_table, worst) for r in table_rows(t) for c in r)


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
    assert keys == ["1", "ground", "3", "viab", "nav"]
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
    # the pane's every figure, too: the report's value under the registry's title, for every metric it shows
    from trb.tracks.base import metric_by_key

    figures = 0
    for base in report["baselines"]:
        shown_figures = {f.key: f for f in shown[base["run_id"]].figures}
        for key, entry in base["tracks"].items():
            f = shown_figures[key]
            assert f.title == metric_by_key(key).title and f.score == entry["score"]
            figures += entry["score"] is not None
    assert figures > compared  # the LLR variant and Track 3's threshold-free figures are among them
