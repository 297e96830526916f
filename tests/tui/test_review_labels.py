"""Labelling from the keyboard: the label lands in the store, even while another process holds the corpus."""

from __future__ import annotations

import subprocess
import sys
import time

from review_helpers import drive, settle, status_text, store_rows
from tests_paths import ROOT
from tui.app import ReviewApp
from tui.screens.session import SessionScreen
from tui.widgets.timeline import Timeline

HOLDER = """
import sys, time
from corpus.store import Corpus
with Corpus(sys.argv[1]).open(write=True, purpose="test holder"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _reviewer_labels(corpus_dir, item_id):
    return store_rows(corpus_dir, "SELECT annotator_id, role, method, label, rationale FROM annotations "
                                  "WHERE target_id = ? AND role = 'reviewer' ORDER BY created_at", [item_id])


async def _open_clock_jump(app, pilot) -> SessionScreen:
    """Open 7f3a and move to t=5, the step of the exogenous clock jump item."""
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, SessionScreen)
    screen.query_one(Timeline).select_step(5)
    await pilot.pause()
    assert screen.current_item().item_id == "7f3a-attr-clock-jump"
    return screen


def _hold(corpus_dir, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(corpus_dir), str(seconds)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


@drive
async def test_label_an_item_with_a_note_and_see_it_in_the_store(review_corpus):
    app = ReviewApp(review_corpus, reviewer="rev-1")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_clock_jump(app, pilot)
        await pilot.press("e")
        await pilot.pause()
        await pilot.press(*"operator resync", "enter")
        await settle(pilot)
        assert _reviewer_labels(review_corpus, "7f3a-attr-clock-jump") == [
            ("rev-1", "reviewer", "reviewer", "exogenous", "operator resync")]
        assert "saved: exogenous on 7f3a-attr-clock-jump by rev-1" in status_text(screen)
        # the timeline marks the item adjudicated now
        assert str(screen.query_one(Timeline).get_row("5")[1]) == "✔"

        await pilot.press("u")  # then cancel: nothing more is written
        await pilot.pause()
        await pilot.press("escape")
        await settle(pilot)
        assert len(_reviewer_labels(review_corpus, "7f3a-attr-clock-jump")) == 1
        assert "cancelled" in status_text(screen)

        screen.query_one(Timeline).select_step(1)  # no item at t=1: the key says so
        await pilot.pause()
        await pilot.press("s")
        await pilot.pause()
        assert "no attribution item at this step" in status_text(screen)


@drive
async def test_a_label_made_while_another_process_writes_waits_and_lands(review_corpus):
    app = ReviewApp(review_corpus, reviewer="rev-2", attempt_wait=0.3, max_attempts=60)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_clock_jump(app, pilot)
        holder = _hold(review_corpus, 1.5)
        try:
            await pilot.press("s")
            await pilot.pause()
            await pilot.press(*"held", "enter")
            deadline = time.monotonic() + 10
            while not any("waiting for the corpus" in m for m in app.label_log) and time.monotonic() < deadline:
                await pilot.pause(0.05)
            waiting = [m for m in app.label_log if "waiting for the corpus" in m]
            assert waiting and f"pid {holder.pid}" in waiting[0] and "test holder" in waiting[0]
            assert "waiting for the corpus" in status_text(screen)
            await pilot.press("ctrl+q")  # quitting now would drop the label: the app says so and stays
            await pilot.pause()
            assert app.is_running and app.screen is screen
            assert any("still being saved" in n.message for n in app._notifications)
            await settle(pilot)
        finally:
            holder.wait(timeout=30)
        assert app.label_log[-1] == "saved: self on 7f3a-attr-clock-jump by rev-2, revision 1"
        assert _reviewer_labels(review_corpus, "7f3a-attr-clock-jump") == [
            ("rev-2", "reviewer", "reviewer", "self", "held")]


@drive
async def test_a_label_that_cannot_be_written_says_so_and_a_retry_saves_it(review_corpus):
    app = ReviewApp(review_corpus, reviewer="rev-3", attempt_wait=0.2, max_attempts=2)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_clock_jump(app, pilot)
        holder = _hold(review_corpus, 1.5)
        try:
            await pilot.press("s")
            await pilot.pause()
            await pilot.press("enter")
            await settle(pilot)
            assert app.label_log[-1].startswith("NOT saved: self on 7f3a-attr-clock-jump")
            assert "NOT saved" in status_text(screen)
        finally:
            holder.wait(timeout=30)
        assert _reviewer_labels(review_corpus, "7f3a-attr-clock-jump") == []
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert app.label_log[-1] == "saved: self on 7f3a-attr-clock-jump by rev-3, revision 1"
        assert len(_reviewer_labels(review_corpus, "7f3a-attr-clock-jump")) == 1
