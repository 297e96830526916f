"""Consent first: the study's text, an explicit yes; a no (or leaving before the start) records nothing at all.
Then the subject id: a pseudonym made at random, or the one the experimenter types; never a name or an e-mail."""

from __future__ import annotations

import re

import pytest

from collect.app import CollectApp
from collect.screens.consent import ConsentScreen, DeclinedScreen
from collect.screens.step import StepScreen
from collect.screens.subject import SubjectScreen
from collect.scripted import settle, type_text
from collect_helpers import (
    CONSENT_LINE,
    SMALL_STUDY,
    drafts,
    drive,
    play_sessions,
    screen_lines,
    screen_text,
    store_counts,
    write_study,
)


def _files(corpus_dir) -> set[str]:
    return {str(p.relative_to(corpus_dir)) for p in corpus_dir.rglob("*")}


def _nothing_recorded(corpus_dir, before: tuple) -> None:
    """No draft folder, let alone a draft; no new file beside the corpus; not a row more in any store table."""
    assert not (corpus_dir / ".trb-collect").exists()
    assert (_files(corpus_dir) - {"corpus.lock"}, store_counts(corpus_dir)) == before


def _state(corpus_dir) -> tuple:
    return _files(corpus_dir) - {"corpus.lock"}, store_counts(corpus_dir)


@pytest.mark.parametrize("key", ["n", "q"])
@drive
async def test_the_consent_text_comes_first_and_a_no_records_nothing(study, corpus, key):
    before = _state(corpus.dir)
    app = CollectApp(study, corpus)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ConsentScreen)
        text = " ".join(screen_text(app).split())
        assert CONSENT_LINE in text and "consent/tests/mini-v1" in text and "y yes, I agree n no" in text
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, DeclinedScreen) and "nothing was recorded" in screen_text(app)
        await pilot.press("q")
    assert app.return_value.status == "declined"
    _nothing_recorded(corpus.dir, before)


@drive
async def test_a_long_consent_text_scrolls_and_the_question_stays_in_view(tmp_path, corpus):
    from collect.study import load_study

    long_text = "\n".join(f"Paragraph {i}: what the study asks of you, at some length.\n" for i in range(40))
    study = load_study(write_study(tmp_path, SMALL_STUDY.replace("You will walk a small grid", long_text + "\nEND")))
    app = CollectApp(study, corpus)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        scroll = app.screen.query_one("#consent")
        assert scroll.max_scroll_y > 0 and "Paragraph 39" not in screen_text(app)
        assert "Do you agree" in screen_lines_last(app, 2)
        await pilot.press("end")
        await pilot.pause()
        assert scroll.scroll_y == scroll.max_scroll_y and "Paragraph 39" in screen_text(app)
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, SubjectScreen)


def screen_lines_last(app, n: int) -> str:
    return "\n".join(screen_lines(app)[-n:])


@drive
async def test_leaving_before_the_start_records_nothing(study, corpus):
    before = _state(corpus.dir)
    app = CollectApp(study, corpus)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, SubjectScreen)
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert app.return_value.status == "left" and "nothing was recorded" in app.return_value.message
    _nothing_recorded(corpus.dir, before)


@drive
async def test_yes_then_enter_starts_under_a_random_pseudonym(study, corpus):
    app = CollectApp(study, corpus)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("y")
        await pilot.pause()
        text = screen_text(app)
        assert "never under your name" in text and "Never type a name or an e-mail" in text
        subject = app.screen.query_one("#subject").value
        assert re.fullmatch(r"subj-[0-9a-f]{8}", subject)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, StepScreen)
        assert "session 1 of 2 · step 1 of 3" in screen_text(app)
    [(draft_id, draft)] = drafts(corpus.dir).items()
    assert draft_id == f"mini-{subject}" and draft["subject_id"] == subject
    assert draft["consent_ref"] == "consent/tests/mini-v1" and draft["sessions"][0]["steps"] == []


@drive
async def test_the_experimenter_types_an_id_and_an_email_is_refused(study, corpus):
    app = CollectApp(study, corpus)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("y")
        await pilot.pause()
        await type_text(pilot, "P-0")  # the random id is selected: typing replaces it
        assert app.screen.query_one("#subject").value == "P-0"
        await pilot.press("end", "ctrl+u")
        await type_text(pilot, "jane.doe@example.org")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SubjectScreen)
        assert "subject id refused: it looks like an e-mail address" in " ".join(screen_text(app).split())
        assert drafts(corpus.dir) == {}
        await pilot.press("end", "ctrl+u")
        await type_text(pilot, "P-017")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, StepScreen)
    assert list(drafts(corpus.dir)) == ["mini-P-017"]


@drive
async def test_an_id_that_already_has_a_draft_is_refused(study, corpus):
    play_sessions(study, corpus, "subj-taken", sessions=0)
    app = CollectApp(study, corpus, subject_id="subj-taken")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("y")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SubjectScreen)
        assert "already has a draft" in " ".join(screen_text(app).split())


@pytest.mark.slow  # three app runs
@drive
async def test_a_browser_that_comes_back_is_offered_its_unfinished_run_not_a_new_subject(study, corpus):
    from collect.recorder import Collection, RInput
    from collect.screens.returning import ReturnScreen

    c = Collection.start(study, corpus, consent=True, subject_id="subj-back", browser="ab" * 16)
    c.act(RInput("reach E2", "right", 0.7), "right")
    app = CollectApp(study, corpus, browser="ab" * 16)  # trb-collect serve: the same browser's cookie
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ReturnScreen)
        text = " ".join(screen_text(app).split())
        assert "A run was left unfinished in this browser (session 1 of 2 · step 2 of 3" in text
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, StepScreen) and app.collection.subject_id == "subj-back"
        assert "session 1 of 2 · step 2 of 3" in app.progress_line()
    assert list(drafts(corpus.dir)) == ["mini-subj-back"]

    app = CollectApp(study, corpus, browser="ab" * 16)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("n")  # another person at the same computer: consent first; the old draft stays
        await settle(pilot)
        assert isinstance(app.screen, ConsentScreen)
    other = CollectApp(study, corpus, browser="cd" * 16)  # another browser: consent, as any new subject
    async with other.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(other.screen, ConsentScreen)
    assert list(drafts(corpus.dir)) == ["mini-subj-back"]
