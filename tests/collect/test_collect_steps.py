"""A step: the form's keys, the recorder's refusals shown on the field they name (nothing saved), the outcome on
the next screen, help, leaving mid-run (a draft, resumable), and nothing important cut at 80×24 or 120×36."""

from __future__ import annotations

import pytest

from collect.app import CollectApp
from collect.screens.confirm import ConfirmScreen
from collect.screens.help import HelpScreen
from collect.screens.revision import RevisionScreen
from collect.screens.step import StepScreen
from collect.scripted import Answer, agree, answer_step, type_text
from collect.widgets.choice import ChoiceBar
from collect.widgets.r_form import RForm
from collect.widgets.slider import Slider
from collect_helpers import drafts, drive, play_sessions, region_text, screen_lines, screen_text

# drives the subject's app through whole studies (seconds per test)
pytestmark = pytest.mark.slow


def _flat(app) -> str:
    return " ".join(screen_text(app).split())


@drive
async def test_the_form_keys_choose_and_set_what_they_say(study, corpus):
    app = CollectApp(study, corpus, subject_id="subj-keys")
    async with app.run_test(size=(80, 24)) as pilot:
        await agree(pilot)
        screen = app.screen
        assert isinstance(screen, StepScreen) and not screen.query_one("#row-cause").display  # not at a first step
        assert app.focused.id == "goal" and "type · Enter next" in screen.keys_text
        await type_text(pilot, "reach E2")
        await pilot.press("enter")
        planned = screen.query_one("#planned", ChoiceBar)
        assert app.focused is planned and planned.value is None and "1–5 or ←/→ choose" in screen.keys_text
        await pilot.press("3")
        assert planned.value == "left"
        await pilot.press("right", "right")
        assert planned.value == "wait"
        await pilot.press("right")
        assert planned.value == "up"  # round the options
        await pilot.press("tab")
        conf = screen.query_one("#confidence", Slider)
        assert app.focused is conf and conf.value is None and "not set" in str(conf.render())
        await pilot.press("right")
        assert conf.value == 0.5 and "50 %" in str(conf.render())
        await pilot.press("right", "right", "left")
        assert conf.value == 0.55
        await pilot.press("end")
        assert conf.value == 1.0 and "100 %" in str(conf.render())
        await pilot.press("home")
        assert conf.value == 0.0 and "  0 %" in str(conf.render())
        await pilot.press("left")
        assert conf.value == 0.0  # no lower than 0 %
        await pilot.press("shift+tab")
        assert app.focused is planned
        await pilot.press("enter", "enter")
        assert app.focused.id == "action" and "Enter do it" in screen.keys_text
        await pilot.press("2", "enter")
        await pilot.pause()
        assert isinstance(app.screen, StepScreen) and "step 2 of 3" in _flat(app)
        assert app.focused.id == "goal" and planned.value is None and conf.value is None  # a fresh form
        assert screen.query_one("#row-cause").display and screen.query_one("#cause", Slider).value is None
    [draft] = drafts(corpus.dir).values()
    assert draft["sessions"][0]["steps"] == [
        {"r": {"goal": "reach E2", "planned_next": "up", "confidence": 0.0, "caused_by_self": None},
         "action": "down"}]


@drive
async def test_every_problem_of_a_step_is_shown_at_once_in_the_subjects_words_and_nothing_is_saved(study, corpus):
    app = CollectApp(study, corpus, subject_id="subj-refuse")
    async with app.run_test(size=(80, 24)) as pilot:
        await agree(pilot)
        await answer_step(pilot, Answer("reach E2", 4, 4))
        step2 = app.screen
        # the goal with a name and a place, no plan, the sliders not set, no move: Enter through to the move
        await pilot.press("end", "ctrl+u")
        await type_text(pilot, "I am Alice Smith from Leeds")
        await pilot.press("enter", "enter", "enter", "enter", "enter")
        text = _flat(app)
        assert app.screen is step2 and "✗ What you are trying to do" in text  # in view, the first named field's
        for words in ("✗ What you are trying to do: this looks like a person's name and a place name; please say it "
                      "without it", "✗ What you will do next: choose one (1–5 or ←/→)",
                      "✗ Whether the last change was your doing: set it with ←/→ on its slider",
                      "✗ How sure you are: set it with ←/→ on its slider", "✗ Your move: choose one (1–5 or ←/→)",
                      "Nothing was saved"):
            assert words in " ".join(step2.query_one(RForm).error_text.split()), words
        for internal in ("caused_by_self", "planned_next", "planned next:", "confidence:"):
            assert internal not in step2.query_one(RForm).error_text  # no internal names
        assert all(step2.query_one(f"#row-{f}").has_class("-invalid")
                   for f in ("goal", "planned", "cause", "confidence", "action"))
        assert app.focused.id == "goal"  # the first field named
        assert len(drafts(corpus.dir)["mini-subj-refuse"]["sessions"][0]["steps"]) == 1  # nothing saved
        # corrected, every field: the step is taken and the errors are gone
        await pilot.press("end", "ctrl+u")
        await type_text(pilot, "reach E2")
        await pilot.press("enter", "4", "enter", "right", "enter", "right", "enter", "4", "enter")
        await pilot.pause()
        assert "step 3 of 3" in _flat(app) and "✗" not in _flat(app)
    steps = drafts(corpus.dir)["mini-subj-refuse"]["sessions"][0]["steps"]
    assert [s["r"]["goal"] for s in steps] == ["reach E2", "reach E2"] and "Alice" not in str(steps)


@drive
async def test_the_outcome_is_shown_on_the_next_step_and_the_goal_carried_over(study, corpus):
    app = CollectApp(study, corpus, subject_id="subj-out")
    async with app.run_test(size=(80, 24)) as pilot:
        await agree(pilot)
        assert "After your move" not in _flat(app) and "You see Step 1 of 3" in _flat(app)
        await answer_step(pilot, Answer("reach E2", 4, 4))
        step = app.collection.sessions[0].steps[0]
        text = region_text(app, app.screen.query_one("#texts"))  # beside the map
        assert f"After your move (right) {step['outcome']}" in text  # as the environment renders it
        assert f"You see {app.collection.observation}" in text
        text = _flat(app)
        assert app.screen.query_one("#goal").value == "reach E2" and app.screen.query_one("#row-cause").display
        assert "session 1 of 2 · step 2 of 3" in text


@drive
async def test_help_lists_the_keys_of_every_screen(study, corpus):
    app = CollectApp(study, corpus, subject_id="subj-help")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = _flat(app)
        for key in ("F1 help (or ? outside a text field", "Ctrl+Q leave", "y I agree", "n or q no", "Enter start", "Tab / Shift+Tab",
                    "1–5 or ←/→", "←/→ 5 %", "Home 0 %", "End 100 %", "Enter on your move: do it",
                    "Enter or Space go on", "Esc skip the step", "r retry", "q close"):
            assert key in text, key
        await pilot.press("question_mark")
        await pilot.pause()
        await agree(pilot)
        assert app.focused.id == "goal"
        await pilot.press("question_mark")  # in a text field: a typed "?", not the help
        await pilot.pause()
        assert isinstance(app.screen, StepScreen) and app.screen.query_one("#goal").value == "?"
        await pilot.press("f1")  # F1 helps even there
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, StepScreen) and app.screen.query_one("#goal").value == "?"
        await pilot.press("enter", "question_mark")  # on the plan (no text field): help
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


@drive
async def test_leaving_mid_run_keeps_a_draft_that_resumes_where_it_stopped(study, corpus):
    app = CollectApp(study, corpus, subject_id="subj-leave")
    async with app.run_test(size=(80, 24)) as pilot:
        await agree(pilot)
        await answer_step(pilot, Answer("reach E2", 4, 4))
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        text = _flat(app)
        assert "Leave the study now?" in text and "Your answers so far are kept safe" in text
        assert "trb-collect" not in text and "--resume" not in text  # the experimenter's commands: at the exit
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, StepScreen)
        await pilot.press("ctrl+q")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
    out = app.return_value
    assert out.status == "left" and out.draft_id == "mini-subj-leave"
    assert "--resume mini-subj-leave" in out.message and "session 1 of 2 · step 2 of 3" in out.message
    assert len(drafts(corpus.dir)["mini-subj-leave"]["sessions"][0]["steps"]) == 1

    again = CollectApp(study, corpus, resume="mini-subj-leave")
    async with again.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(again.screen, StepScreen)  # no consent again: it was given
        text = _flat(again)
        assert "session 1 of 2 · step 2 of 3" in text and "After your move (right)" in text
        await answer_step(pilot, Answer(None, 4, 4))
        assert "step 3 of 3" in _flat(again)
    assert len(drafts(corpus.dir)["mini-subj-leave"]["sessions"][0]["steps"]) == 2


def test_a_draft_of_another_study_version_is_refused_before_the_app_starts(study, corpus, tmp_path):
    from collect.recorder import DraftError
    from collect.study import load_study

    play_sessions(study, corpus, "subj-v1", sessions=0)
    changed = tmp_path / "mini.toml"
    changed.write_text(changed.read_text().replace("budget = 3", "budget = 4"))
    with pytest.raises(DraftError, match="another version"):
        CollectApp(load_study(changed), corpus, resume="mini-subj-v1")


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
@drive
async def test_nothing_important_is_cut(study, corpus, size):
    """At 80×24 and 120×36 the header, what the subject sees, every question, every option, every slider's
    value and the keys line are on screen whole (nothing clipped, nothing cut with an ellipsis)."""
    from collect.recorder import RInput

    app = CollectApp(study, corpus)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        lines = screen_lines(app)
        assert "y  yes, I agree    n  no" in lines[-2] and "n or q no (nothing is recorded)" in lines[-1]
        assert "before the study" in lines[0] and "…" not in "".join(lines)

    c = play_sessions(study, corpus, "subj-size", sessions=0)
    c.act(RInput("reach E2", "right", 0.7), "right")
    app = CollectApp(study, corpus, resume=c.draft_id)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await answer_step(pilot, Answer(None, 4, 4), act=False)
        lines = screen_lines(app)
        text = " ".join("\n".join(lines).split())
        assert "…" not in text and len(lines) == size[1]
        assert "mini │ session 1 of 2 · step 2 of 3 │ F1 help · Ctrl+Q leave" in lines[0]
        beside = region_text(app, app.screen.query_one("#texts"))
        assert " ".join(app.collection.observation.split()) in beside and "After your move (right)" in beside
        assert "Your move: right, B2 → C2." in beside or "Then the wind pushed you" in beside
        for label in ("What are you trying to do?", "What will you do next?", "Was the last change your doing?",
                      "How sure are you it will work?", "Now act: your move"):
            assert label in text
        assert sum("1 up  2 down  3 left  4 right  5 wait" in line for line in lines) == 2
        assert "no ━" in text and "yes 60 %" in text and "sure 70 %" in text
        assert "1–5 or ←/→ choose · Enter do it · Tab/Shift+Tab fields · Ctrl+Q leave" in lines[-1]

    c = play_sessions(study, corpus, "subj-size2")
    c.revise(c.revision_items()[0], None)
    app = CollectApp(study, corpus, resume=c.draft_id)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, RevisionScreen)
        x = app.screen.context
        lines = screen_lines(app)
        text = " ".join("\n".join(lines).split())
        assert "…" not in text and "revision 2 of 4" in lines[0]
        beside = region_text(app, app.screen.query_one("#then-texts"))  # beside the map of where the subject stood
        for part in (" ".join(x["observation"].split()), "goal reach E2 · plan right · last change yours 60 % · "
                     "sure 70 %", f"right → {x['outcome']}"):
            assert part in beside, part
        assert "● you" in region_text(app, app.screen.query_one("#map"))
        for part in ("Esc: skip this step", "Revised goal",
                     "Revised: last change yours?", "yes 60 %", "Then you would do", "5 wait —"):
            assert part in text, part
        assert "Esc skip" in lines[-1]
