"""SVG snapshots of the main screens at 80×24 (fixed data: the 7f3a example, simulated seed 1, fixed times).

Update after an intended change with ``pytest tests/tui/test_review_snapshots.py --snapshot-update``
and look at the SVGs under ``__snapshots__/`` before committing them.
"""

from __future__ import annotations

import pytest

from review_helpers import settle
from test_review_queue import fill_queue
from test_review_results import make_results
from tui.app import ReviewApp
from tui.widgets.timeline import Timeline

# drives the review app over simulated corpora and runs (seconds per test)
pytestmark = pytest.mark.slow

SIZE = (80, 24)


def _keys(*keys):
    async def run_before(pilot) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run_before


def test_sessions_screen(review_corpus, snap_compare):
    assert snap_compare(ReviewApp(review_corpus, reviewer="rev-1"), terminal_size=SIZE, run_before=_keys())


def test_session_screen(review_corpus, snap_compare):
    async def run_before(pilot) -> None:
        await _keys("enter")(pilot)
        pilot.app.screen.query_one(Timeline).select_step(5)
        await settle(pilot)

    assert snap_compare(ReviewApp(review_corpus, reviewer="rev-1"), terminal_size=SIZE, run_before=run_before)


def test_counterfactuals_screen(review_corpus, snap_compare):
    assert snap_compare(ReviewApp(review_corpus, reviewer="rev-1"), terminal_size=SIZE,
                        run_before=_keys("enter", "c"))


def test_queue_screen(review_corpus, snap_compare):
    fill_queue(review_corpus)
    assert snap_compare(ReviewApp(review_corpus, reviewer="rev-1"), terminal_size=SIZE, run_before=_keys("a"))


def test_results_screen(review_corpus, tmp_path, snap_compare):
    path = make_results(tmp_path / "results.duckdb")
    assert snap_compare(ReviewApp(review_corpus, results=path, reviewer="rev-1"), terminal_size=SIZE,
                        run_before=_keys("R"))


def test_help_screen(review_corpus, snap_compare):
    assert snap_compare(ReviewApp(review_corpus, reviewer="rev-1"), terminal_size=SIZE,
                        run_before=_keys("question_mark"))
