"""Results in the app (--results): runs with per-track scores, worst items first, Enter jumps to the trace."""

from __future__ import annotations

import re

import pytest

from review_helpers import drive, said, settle, table_rows
from trb.results import ResultsStore
from tui.app import ReviewApp
from tui.results_view import cached_runs, forget_memo, item_lists, read_runs, worst_items
from tui.screens.results import ResultsScreen
from tui.screens.session import SessionScreen
from tui.widgets.fit_table import FitTable
from tui.widgets.timeline import Timeline

# drives the review app over simulated corpora and runs (seconds per test)
pytestmark = pytest.mark.slow

RUN = {"run_id": "run-a-0001", "created_at": "2026-11-20T10:00:00+00:00", "release_sha": "b" * 64,
       "release_version": "0.1.0", "release_kind": "smoke", "smoke_test": True, "baseline": "trace-full",
       "adapter_tier": "native", "adapter_spec": {"kind": "native"}, "seed": 7, "tracks": ["1", "3"], "split": "eval"}
#: Track 1: score = 1 - TV(model, Φ), detail as Track 1 writes it; Track 3: 1 right, 0 wrong. Items point at real
#: 7f3a steps (7f3a-cf-syn-t1-adv: Φ(r') = answer_2 0.25, answer_4 0.75; r' plans answer_2; the agent took answer_4).
T1_DETAIL = '{"p":{"answer_2":0.85,"answer_4":0.15},"phi":{"answer_2":0.25,"answer_4":0.75},"tv":0.6}'
ITEMS = [
    {"track": "1", "metric": "tv", "item_id": "7f3a-cf-syn-t1-adv", "session_id": "7f3a", "t": 1, "score": 0.40,
     "origin": "synthetic", "adversarial": True, "detail": T1_DETAIL},
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


def t2_items(gain: float, sessions: int = 6) -> list[dict]:
    """Track 2 trials: per session (eval, and dev where the strength is chosen) and concept, the zero null and at
    each strength an injected and a random-direction trial; planned_next=left's direction is not separable."""
    rows = []
    for split, n in (("eval", sessions), ("dev", 3)):
        for s in range(n):
            for c, cos in (("goal=C6", 0.3), ("planned_next=left", 0.85)):
                base = 0.1 + 0.05 * s
                trials = [("zero", 0.0, base)] + [
                    (cond, st, base + (gain * st / 8 if cond == "injected" else 0.01 * (s % 3)))
                    for st in (1.0, 2.0, 4.0, 8.0) for cond in ("injected", "random")]
                rows += [{"track": "2", "metric": "grounding", "item_id": f"{split}{s}/0|h|{c}|{cond}|{st:g}",
                          "session_id": f"7f3a-{split}{s}", "t": 0, "split": split, "score": round(x, 3),
                          "condition": cond, "concept": c, "site": "h", "site_rank": 0, "strength": st,
                          "cos_max": cos} for cond, st, x in trials]
    return rows


#: Tracks 4 and 5, one episode per task and condition: completion 3/4 acting through r, 1/4 ablated (ratio 3);
#: reach 3/4 steered, 1/4 ablated (lift 0.5).
ROLLOUTS = ([{"track": "4", "metric": "completion", "item_id": f"task{i}/0/{c}", "session_id": f"task{i}/0",
              "score": float(x), "condition": c} for i in range(4) for c, x in (("full", i != 1), ("ablated", i == 0))]
            + [{"track": "5", "metric": "reach", "item_id": f"task{i}/0/{c}", "session_id": f"task{i}/0",
                "score": float(x), "condition": c} for i in range(4) for c, x in (("steered", i != 1), ("ablated", i == 0))])


def make_results(path):
    """Three runs of Tracks 1 and 3, a fourth with every headline figure (Tracks 1 to 5), and a proxy run with
    proxy-tier grounding (Track 2 on a proxy adapter)."""
    store = ResultsStore(path)
    store.record_run(RUN, ITEMS)
    store.record_run({**RUN, "run_id": "run-b-0002", "created_at": "2026-11-21T10:00:00+00:00",
                      "baseline": "no-trace", "adapter_tier": "proxy"},
                     [{**ITEMS[0], "score": 0.5}])
    store.record_run({**RUN, "run_id": "run-c-0003", "created_at": "2026-11-22T10:00:00+00:00",
                      "baseline": "trace-ablation", "tracks": ["1"]}, MANY)
    store.record_run({**RUN, "run_id": "run-d-0004", "created_at": "2026-11-23T10:00:00+00:00",
                      "tracks": ["1", "2", "3", "4", "5"]}, ITEMS + t2_items(0.5) + ROLLOUTS)
    store.record_run({**RUN, "run_id": "run-e-0005", "created_at": "2026-11-24T10:00:00+00:00", "baseline": "cot-sft",
                      "adapter_tier": "proxy", "tracks": ["2"]}, t2_items(0.2))
    return path


def test_runs_have_hand_computed_figures_and_worst_items_come_per_track(tmp_path):
    path = make_results(tmp_path / "results.duckdb")
    runs = read_runs(path)
    assert [r.run_id for r in runs] == ["run-a-0001", "run-b-0002", "run-c-0003", "run-d-0004", "run-e-0005"]
    t1_mean, t1_n = runs[0].tracks["1"]
    assert abs(t1_mean - (0.40 + 0.90 + 0.80) / 3) < 1e-12 and t1_n == 3
    # Track 3 is balanced accuracy, as in the report: (TPR 1/1 + TNR 1/2) / 2 = 0.75 (plain accuracy would be 2/3)
    assert runs[0].tracks["3"] == (0.75, 3)
    assert [(f.title, f.score) for f in runs[0].figures if f.headline] == [
        ("Track 1 — governance G", t1_mean), ("Track 2 — grounding (detection AUC vs no injection)", None),
        ("Track 3 — attribution BA", 0.75), ("Track 4 — viability (completion ratio)", None),
        ("Track 5 — navigability (reach-rate lift)", None)]
    # R*'s adversarial slice stands beside Track 1 (spec §5), as in the report: the one adversarial item, 0.40
    (g,) = [f for f in runs[0].figures if f.key == "1"]
    assert "adversarial r′ slice: 0.400 (n=1)" in g.details
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
    return said(app)  # notifications and the status line


async def _open_results(app, pilot):
    """The results screen, opened with R from the queue."""
    await settle(pilot)
    await pilot.press("R")
    await settle(pilot)
    return app.screen


@drive
async def test_jump_from_a_bad_score_to_its_trace(review_corpus, tmp_path):
    path = make_results(tmp_path / "results.duckdb")
    app = ReviewApp(review_corpus, results=path, reviewer="rev-1")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_results(app, pilot)
        assert isinstance(screen, ResultsScreen)
        runs_table = screen.query_one("#runs", FitTable)
        # at 80 columns every headline figure has its column, titled by its profile-vector entry (the run id and
        # tier give way; the pane below names them), each figure without its item count (the pane gives it)
        assert [str(c.label) for c in runs_table.columns.values()] == [
            "baseline", "split", "release", "G", "ground", "attr", "viab", "nav"]
        runs = table_rows(runs_table)
        assert runs[0] == ["trace-full*", "eval", "0.1.0", "0.700", "—", "0.750", "—", "—"]
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
        assert table_rows(runs_table)[0] == ["run-a-0001", "trace-full*", "eval", "native", "0.1.0", "0.700 (n=3)",
                                             "—", "0.750 (n=3)", "—", "—"]
        assert not any(c.endswith("…") for t in (runs_table, worst) for r in table_rows(t) for c in r)


def test_the_app_shows_exactly_the_reports_numbers(tmp_path):
    """Same store, same figures: the results screen's cells are the report's values, metric by metric.

    Track 1 here mixes TV and LLR items (the LLR variant is its own figure, never averaged into G),
    Track 3 has unbalanced classes (balanced accuracy differs from plain accuracy), and Track 2 runs on a
    native adapter and on a proxy one (proxy-tier grounding, labelled as the report labels it).
    """
    from trb.report import build_report, format_score
    from tui.results_view import metric_columns

    path = tmp_path / "results.duckdb"
    store = ResultsStore(path)
    store.record_run({**RUN, "tracks": ["1", "2", "3"]}, ITEMS + t2_items(0.5) + [
        {"track": "1", "metric": "llr", "item_id": "cf-text", "session_id": "7f3a", "t": 4, "score": -3.0}])
    store.record_run({**RUN, "run_id": "run-e-0005", "baseline": "cot-sft", "adapter_tier": "proxy", "tracks": ["2"]},
                     t2_items(0.2))
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
            assert run.labels.get(key) == entry.get("label")  # "proxy-tier grounding" where the report says so
            compared += 1
    assert compared == 6
    assert shown["run-e-0005"].labels == {"ground": "proxy-tier grounding"} and not shown["run-a-0001"].labels
    assert shown["run-a-0001"].tracks["1"][0] == (0.40 + 0.90 + 0.80) / 3  # the LLR item is not in G
    # the pane's every figure, too: the report's value under the registry's title, for every metric it shows
    from trb.tracks.base import metric_by_key

    figures = 0
    for base in report["baselines"]:
        shown_figures = {f.key: f for f in shown[base["run_id"]].figures}
        for key, entry in base["tracks"].items():
            f = shown_figures[key]
            assert f.title == metric_by_key(key).title and f.score == entry["score"]
            # the same flags, but those about an interval (the app shows point values, without intervals)
            interval = ("zero-width interval", "point outside its interval")
            assert f.label == entry.get("label")
            assert f.flags == tuple(x for x in entry.get("flags") or () if not x.startswith(interval))
            figures += entry["score"] is not None
    assert figures > compared  # the LLR variant and Track 3's threshold-free figures are among them


@drive
async def test_every_headline_fits_80_columns_and_proxy_tier_grounding_is_named(review_corpus, tmp_path):
    path = make_results(tmp_path / "results.duckdb")
    app = ReviewApp(review_corpus, results=path, reviewer="rev-1")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_results(app, pilot)
        runs_table = screen.query_one("#runs", FitTable)
        # the run with every headline figure: all five on screen at 80 columns, none cut
        # (Track 2's headline leaves out the concept whose direction is not separable: 0.986, not 0.833 over both)
        full = next(r for r in table_rows(runs_table) if r[3:] == ["0.700", "0.986", "0.750", "3.000", "0.500"])
        assert full[0] == "trace-full*" and not any(c.endswith("…") for r in table_rows(runs_table) for c in r)
        # Track 4's ratio and Track 5's lift by hand (ROLLOUTS): 3/4 ÷ 1/4 and 3/4 − 1/4
        (run_d,) = [r for r in read_runs(path) if r.run_id == "run-d-0004"]
        assert run_d.tracks["viab"] == (3.0, 4) and run_d.tracks["nav"] == (0.5, 4)
        # the proxy adapter's Track 2 figure: "proxy" in its cell, "proxy-tier grounding" in the title and the pane
        proxy = table_rows(runs_table)[4]
        assert proxy[0] == "cot-sft*" and proxy[4] == "proxy 0.778"
        for _ in range(4):
            await pilot.press("down")
        await settle(pilot)
        pane = _pane(screen)
        assert re.search(r"^proxy-tier grounding \(detection AUC vs no injection\) +0\.778  n=\d+$", pane, re.M)
        assert "Track 2 — grounding" not in pane  # never under the native title
        # its dev trials of the one separable concept are under Track 2's minimum: the strength is fixed a priori
        assert "  strength 4 at site h (no dev-split trials of a concept the headline keeps (separable, at least 5 " \
               "injected): fixed a priori at 4)" in pane
        assert pane.count("proxy-tier grounding: this toolkit's extension (spec §3 defines Track 2 on native") == 1
        assert pane.count("⚠ not identifiable: 1 of 2 concepts") == 1  # said once for ground and ground-rand
        # its list of worst items is proxy-tier grounding too, never titled as Track 2's native grounding
        listed = str(screen.query_one("#list").render())
        assert listed.startswith("proxy-tier grounding (detection AUC vs no injection) · worst first")
        await pilot.press("up")  # the native run with Track 2: its list keeps the registry's title
        await settle(pilot)
        while screen.current_list is not None and screen.current_list.track != "2":
            await pilot.press("t")
            await settle(pilot)
        assert str(screen.query_one("#list").render()).startswith("Track 2 — grounding (detection AUC vs no injection)")


def test_the_runs_figures_are_computed_once_per_store(tmp_path, monkeypatch):
    """The first read computes; the same app reads memory; a restarted app reads the cache file; a store written
    since (a new run) is computed afresh."""
    monkeypatch.setenv("TRB_CACHE", str(tmp_path / "cache"))
    path = make_results(tmp_path / "results.duckdb")
    forget_memo()
    runs, source = cached_runs(path)
    assert source == "computed" and runs == read_runs(path)
    assert cached_runs(path) == (runs, "memory")
    forget_memo()  # a new process: only the file under $TRB_CACHE/review/ is left
    assert list((tmp_path / "cache" / "review").glob("runs-*.json"))
    assert cached_runs(path) == (runs, "cache")
    ResultsStore(path).record_run({**RUN, "run_id": "run-f-0006", "created_at": "2026-11-25T10:00:00+00:00"}, ITEMS)
    again, source = cached_runs(path)
    assert source == "computed" and [r.run_id for r in again] == [r.run_id for r in runs] + ["run-f-0006"]


@drive
async def test_the_results_screen_opens_from_the_cache_the_second_time(review_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("TRB_CACHE", str(tmp_path / "cache"))
    path = make_results(tmp_path / "results.duckdb")
    forget_memo()

    def baselines(screen) -> list[str]:
        table = screen.query_one("#runs", FitTable)
        return [dict(zip(table.shown_columns(), r))["baseline"] for r in table_rows(table)]

    # R before anything is computed (no prefetch): computed, then kept for a second open in the same process
    for expected, said_now in (("computed", "figures computed"), ("memory", "figures computed once for this store")):
        app = ReviewApp(review_corpus, results=path, reviewer="rev-1", prefetch_results=False)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await _open_results(app, pilot)
            assert screen.runs_source == expected and len(screen.runs) == 5
            assert said_now in str(screen.query_one("#status").render())
    forget_memo()
    # a restarted app reads them back from $TRB_CACHE/review/ as it starts: the screen finds them ready
    app = ReviewApp(review_corpus, results=path, reviewer="rev-1")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await _open_results(app, pilot)
        assert app.results_prefetched == "cache" and screen.runs_source == "memory"
        assert baselines(screen) == ["trace-full*", "no-trace*", "trace-ablation*", "trace-full*", "cot-sft*"]
    # a store written since (a new run) is computed afresh
    ResultsStore(path).record_run({**RUN, "run_id": "run-f-0006", "created_at": "2026-11-25T10:00:00+00:00"}, ITEMS)
    app = ReviewApp(review_corpus, results=path, reviewer="rev-1")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await _open_results(app, pilot)
        assert app.results_prefetched == "computed" and len(screen.runs) == 6
        assert baselines(screen)[-1] == "trace-full*"
