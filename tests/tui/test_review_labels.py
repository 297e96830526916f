"""Labelling from the keyboard: the label lands in the store, even while another process holds the corpus."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from corpus.labels import UNDO_METHOD
from corpus.review import short_time
from review_helpers import drive, said, settle, status_text, store_rows
from tests_paths import ROOT
from tui.app import ReviewApp
from tui.screens.confirm import ConfirmScreen
from tui.screens.note import NoteScreen
from tui.screens.session import SessionScreen
from tui.widgets.timeline import Timeline

# drives the review app over simulated corpora and runs (seconds per test)
pytestmark = pytest.mark.slow

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


def _notes(app) -> str:
    return said(app)  # notifications and the status line


def _revisions(corpus_dir, item_id, reviewer):
    return store_rows(corpus_dir, "SELECT revision, label, method, rationale, created_at FROM annotations "
                                  "WHERE target_id = ? AND annotator_id = ? AND role = 'reviewer' ORDER BY revision",
                      [item_id, reviewer])


@drive
async def test_label_an_item_with_a_note_and_see_it_in_the_store(review_corpus):
    """clock-jump is annotated, undecided: unsure leaves it so (and says so); exogenous decides it, revision 2."""
    app = ReviewApp(review_corpus, reviewer="rev-1")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_clock_jump(app, pilot)
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, NoteScreen)
        assert str(app.screen.query_one("#effect").render()).startswith("unsure does not decide the item (revision 1)")
        await pilot.press("enter")
        await settle(pilot)
        assert _reviewer_labels(review_corpus, "7f3a-attr-clock-jump") == [
            ("rev-1", "reviewer", "reviewer", "unsure", None)]
        assert status_text(screen) == "saved: unsure on 7f3a-attr-clock-jump by rev-1, revision 1"
        assert str(screen.query_one(Timeline).get_row("5")[1]) == "◆"  # still annotated, not adjudicated
        assert "undecided" in str(screen.query_one("#step").render())

        await pilot.press("e")
        await pilot.pause()
        assert str(app.screen.query_one("#effect").render()).startswith("exogenous decides the item (revision 2)")
        await pilot.press(*"resync", "enter")
        await settle(pilot)
        revs = _revisions(review_corpus, "7f3a-attr-clock-jump", "rev-1")
        assert [r[:4] for r in revs] == [(1, "unsure", "reviewer", None),
                                         (2, "exogenous", "reviewer", "resync")]
        assert status_text(screen) == "saved: exogenous on 7f3a-attr-clock-jump by rev-1, revision 2"
        # the timeline marks the item adjudicated now; the pane shows the decision, each revision and its time
        assert str(screen.query_one(Timeline).get_row("5")[1]) == "✔"
        pane = str(screen.query_one("#step").render())
        second = short_time(revs[1][4])
        assert f"decided: exogenous by you (reviewer, rev 2, {second})" in pane
        assert f"unsure  rev 1 · {short_time(revs[0][4])}" in pane and f"exogenous  rev 2 · {second}" in pane

        await pilot.press("s")  # self would replace that decision: a confirmation first; Esc writes nothing
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "replacing the decision exogenous by you" in str(app.screen.query_one("#body").render())
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and len(_revisions(review_corpus, "7f3a-attr-clock-jump", "rev-1")) == 2
        assert "cancelled" in status_text(screen)

        screen.query_one(Timeline).select_step(1)  # no item at t=1: the key says so
        await pilot.pause()
        await pilot.press("s")
        await pilot.pause()
        assert "no attribution item at this step" in status_text(screen)
        assert "no attribution item at this step" in _notes(app)


@drive
async def test_overriding_an_adjudication_asks_first_and_an_undo_restores_it(review_corpus):
    """2plus2 (t=0) is adjudicated self by cur-01: exogenous asks first; z undoes it with a new revision."""
    app = ReviewApp(review_corpus, reviewer="rev-4")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("R")  # no --results: the key says how to get them
        await pilot.pause()
        assert "start trb-review with --results FILE" in _notes(app)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert screen.current_item().item_id == "7f3a-attr-2plus2"
        await pilot.press("z")  # nothing of this reviewer's to undo yet
        await pilot.pause()
        assert "nothing to undo: you (rev-4) have no label on 7f3a-attr-2plus2" in _notes(app)

        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        body = str(app.screen.query_one("#body").render())
        assert "replacing the decision self by cur-01 (adjudicator, majority vote" in body
        await pilot.press("enter")  # Enter does not confirm
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "press y to go on" in _notes(app)
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, NoteScreen)
        await pilot.press(*"said", "enter")
        await settle(pilot)
        assert "decided: exogenous by you" in str(screen.query_one("#step").render())

        await pilot.press("z")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "undo your revision 1 (exogenous)" in str(app.screen.query_one("#question").render())
        await pilot.press("y")
        await settle(pilot)
        revs = _revisions(review_corpus, "7f3a-attr-2plus2", "rev-4")
        assert [r[:4] for r in revs] == [(1, "exogenous", "reviewer", "said"),
                                         (2, "unsure", UNDO_METHOD, "undo of revision 1 (exogenous): withdrawn")]
        pane = str(screen.query_one("#step").render())
        assert "decided: self by cur-01" in pane and "rev 2 undo" in pane
        assert str(screen.query_one(Timeline).get_row("0")[1]) == "✔"


@drive
async def test_a_label_made_while_another_process_writes_waits_and_lands(review_corpus):
    app = ReviewApp(review_corpus, reviewer="rev-2", attempt_wait=0.3, max_attempts=60)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_clock_jump(app, pilot)
        holder = _hold(review_corpus, 5.0)  # held past the typing, even on a loaded machine
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
            assert "still being saved" in status_text(screen)
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
        holder = _hold(review_corpus, 5.0)  # long enough that a loaded machine still tries while it is held
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
