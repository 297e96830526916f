"""Every keystroke as typed: a 50-key burst (the terminal driver's path: bytes parsed into keys, all posted at once)
applied in order with nothing lost, "?" typed in a text field, keys typed ahead of a new step or screen set aside
(never answering it), the session-over screen not skipped by Enter, a prefilled answer never replaced by a stray
key; the map of the grid."""

from __future__ import annotations

import pytest
from textual._xterm_parser import XTermParser

from collect.app import CollectApp
from collect.recorder import Collection, RInput
from collect.screens.between import BetweenScreen
from collect.screens.help import HelpScreen
from collect.screens.revision import RevisionScreen
from collect.screens.step import StepScreen
from collect.scripted import Answer, agree, answer_step, settle
from collect_helpers import BURST_GOAL, burst_keys_lost, drafts, drive, play_sessions, region_text

# drives the subject's app (a second or two per test)
pytestmark = pytest.mark.slow

STEP_KEYS = BURST_GOAL + "\r4\r\x1b[C\x1b[C\x1b[C\r4\r"  # as a terminal sends them (→ is ESC [ C, Enter CR)


def keys_lost(step: dict | None, form=None) -> int:
    """Of the 50 keys of :data:`STEP_KEYS`, how many left no trace: goal characters missing (or out of order), and
    the keys of each field whose value is not what they set (plan 2 keys, confidence 4, move 2)."""
    if step is not None:
        goal, plan, conf, move = step["r"]["goal"], step["r"]["planned_next"], step["r"]["confidence"], step["action"]
    else:
        goal, plan = form.query_one("#goal").value, form.query_one("#planned").value
        conf, move = form.query_one("#confidence").value, form.query_one("#action").value
    return burst_keys_lost(goal, plan, conf, move)


def burst(app, data: str) -> int:
    """Send ``data`` as the terminal driver does: parsed into key events, each posted to the app at once (no pause,
    no waiting for the app between keys); the number of keys."""
    events = list(XTermParser().feed(data))
    for event in events:
        app._driver.process_message(event)
    return len(events)


async def _drain(pilot) -> None:
    for _ in range(3):
        await settle(pilot)


@drive
async def test_a_50_key_burst_is_applied_in_order_and_nothing_is_lost(study, corpus):
    app = CollectApp(study, corpus, subject_id="subj-burst")
    async with app.run_test(size=(80, 24)) as pilot:
        await agree(pilot)
        assert isinstance(app.screen, StepScreen) and app.focused.id == "goal"
        assert burst(app, STEP_KEYS) == 50
        await _drain(pilot)
        assert isinstance(app.screen, StepScreen) and "step 2 of 3" in app.progress_line()  # the "?" opened no help
        [step] = drafts(corpus.dir)["mini-subj-burst"]["sessions"][0]["steps"]
        assert keys_lost(step) == 0, f"{keys_lost(step)} of 50 keys lost"
        assert step["r"] == {"goal": BURST_GOAL, "planned_next": "right", "confidence": 0.6, "caused_by_self": None}
        assert step["action"] == "right" and app.keys.set_aside == 0


@drive
async def test_keys_typed_ahead_of_the_next_step_are_set_aside_and_said_so(study, corpus):
    app = CollectApp(study, corpus, subject_id="subj-ahead")
    async with app.run_test(size=(80, 24)) as pilot:
        await agree(pilot)
        # the step, then (before step 2 could be read) Enter, a plan, Enter ...: not applied to step 2
        assert burst(app, STEP_KEYS + "\r1\r\x1b[C\r") == 55
        await _drain(pilot)
        screen = app.screen
        assert "step 2 of 3" in app.progress_line() and app.keys.set_aside == 5
        assert app.focused.id == "goal" and screen.query_one("#planned").value is None
        assert "✗ 5 keys typed before this appeared were not used" in screen.keys_text
        assert len(drafts(corpus.dir)["mini-subj-ahead"]["sessions"][0]["steps"]) == 1
        await pilot.press("enter")  # a key typed once it is shown is applied
        assert app.focused.id == "planned"


@drive
async def test_a_question_mark_is_typed_in_a_text_field_and_helps_elsewhere(study, corpus):
    app = CollectApp(study, corpus, subject_id="subj-qm")
    async with app.run_test(size=(80, 24)) as pilot:
        await agree(pilot)
        burst(app, "where? E2? and then?")
        await _drain(pilot)
        assert isinstance(app.screen, StepScreen) and app.screen.query_one("#goal").value == "where? E2? and then?"
        burst(app, "\r?")  # on the plan (a choice, no text): help
        await _drain(pilot)
        assert isinstance(app.screen, HelpScreen)


@drive
async def test_enter_never_skips_the_session_over_screen_and_leftover_keys_save_nothing(study, corpus):
    c = play_sessions(study, corpus, "subj-over", sessions=0)
    c.act(RInput("reach E2", "right", 0.7), "right")
    c.act(RInput("reach E2", "right", 0.7, 0.6), "right")
    app = CollectApp(study, corpus, resume=c.draft_id)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.clear_notifications()
        assert isinstance(app.screen, StepScreen) and "step 3 of 3" in app.progress_line()
        # the last step of session 1, its Enter, and then Enter pressed again and again, a plan, Enter ...
        burst(app, "\r4\r\x1b[C\x1b[C\r\x1b[C\r4\r" + "\r\r1\r\r4\r\r")
        await _drain(pilot)
        screen = app.screen
        assert isinstance(screen, BetweenScreen) and "Session 1 of 2 is over" in region_text(app, screen)
        assert app.keys.set_aside == 8 and "read this first" in screen.keys_text
        await pilot.press("enter")  # pressed before there was time to read it: still there
        assert app.screen is screen
        await screen.armed.wait()
        assert "Enter or Space go on" in screen.keys_text
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, StepScreen) and "session 2 of 2 · step 1 of 3" in app.progress_line()
    draft = drafts(corpus.dir)["mini-subj-over"]
    assert draft["revisions"] == [] and draft["sessions"][1]["steps"] == []


@drive
async def test_a_prefilled_answer_is_not_selected_a_stray_key_adds_to_it(study, corpus):
    app = CollectApp(study, corpus, subject_id="subj-pre")
    async with app.run_test(size=(80, 24)) as pilot:
        await agree(pilot)
        await answer_step(pilot, Answer("reach E2", 4, 4))
        goal = app.screen.query_one("#goal")
        assert app.focused is goal and goal.value == "reach E2"
        assert goal.selection.is_empty and goal.cursor_position == len("reach E2")  # the cursor at its end
        await pilot.press("1")
        assert goal.value == "reach E21"  # added, not "1"

    c = play_sessions(study, corpus, "subj-prerev")
    app = CollectApp(study, corpus, resume=c.draft_id)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, RevisionScreen)
        goal = app.screen.query_one("#goal")
        assert goal.value == "reach E2" and goal.selection.is_empty
        await pilot.press("1")
        assert goal.value == "reach E21"


def _pushed(study, corpus) -> Collection:
    """A run (made through the recorder) whose first move the wind followed with a push."""
    for k in range(60):
        c = Collection.start(study, corpus, consent=True, subject_id=f"subj-wind{k}")
        c.act(RInput("reach E2", "right", 0.7), "right")
        if c.session.steps[0]["cause"] in ("exogenous", "both"):
            return c
    raise AssertionError("no push of the wind in 60 runs")


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
@drive
async def test_the_step_shows_a_map_and_what_the_wind_did(study, corpus, size):
    c = _pushed(study, corpus)
    before, now = c.sessions[0].steps[0]["seen"]["cell"], c.observation_data["cell"]
    app = CollectApp(study, corpus, resume=c.draft_id)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        app.clear_notifications()
        await pilot.pause()
        screen = app.screen
        mapped = screen.query_one("#map")
        lines = region_text(app, mapped)
        assert lines.startswith("A B C D E F G 7 ·") and "● you ◎ goal ■ wall ○ before" in lines
        rows = {int(r.split()[0]): r.split()[1:] for r in str(mapped.render()).splitlines()[1:8]}
        col = "ABCDEFG".index
        assert rows[int(now[1:])][col(now[0])] == "●" and rows[2][col("E")] == "◎"
        assert rows[int(before[1:])][col(before[0])] == "○"
        beside = region_text(app, screen.query_one("#texts"))
        assert "Then the wind pushed you" in beside and f"→ {now}." in beside
        assert "…" not in beside and mapped.region.right <= size[0]
