"""The revisions (the study's chosen steps: what the subject said and did, a revised r′ and the move it would
lead to, or a skip) and the save: the all-or-nothing ingest, a busy corpus shown and retried, a refused ingest
leaving the draft and the corpus as they were."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from collect.app import CollectApp
from collect.screens.confirm import ConfirmScreen
from collect.screens.revision import RevisionScreen
from collect.screens.save import SaveScreen
from collect.scripted import revise_step, settle, skip_revision
from collect_helpers import drafts, drive, play_sessions, region_text, screen_text, store_rows


def _flat(app) -> str:
    return " ".join(screen_text(app).split())


@drive
async def test_a_revision_shows_what_was_said_and_done_and_an_unchanged_one_is_refused(study, corpus):
    c = play_sessions(study, corpus, "subj-rev")
    app = CollectApp(study, corpus, resume=c.draft_id)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RevisionScreen) and screen.item == (0, 0)
        step = c.sessions[0].steps[0]
        text = _flat(app)
        assert "revision 1 of 4" in text and "Looking back: session 1 of 2, step 1 of 3" in text
        beside = region_text(app, screen.query_one("#then-texts"))  # beside the map of where the subject stood
        assert f"You saw {step['observation']}" in beside
        assert "You said goal reach E2 · plan right · sure 70 %" in beside and "last change yours" not in beside
        assert f"You did right → {step['outcome']}" in beside
        assert not screen.query_one("#row-cause").display  # a first step: no "your doing?" to revise
        await pilot.press("enter", "enter", "enter", "4", "enter")  # the same answers, the same move
        assert app.screen is screen and ("Your revised answers are the same as what you said then: change at least "
                                         "one, or skip this step (Esc)") in _flat(app)
        assert drafts(corpus.dir)[c.draft_id]["revisions"] == []
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "Skip step 1 of session 1?" in _flat(app)
        await pilot.press("n")
        await pilot.pause()
        assert app.screen is screen
        await skip_revision(pilot)
        assert isinstance(app.screen, RevisionScreen) and app.screen.item == (0, 1)
        assert "revision 2 of 4" in _flat(app)
        assert "last change yours 60 %" in region_text(app, app.screen.query_one("#then-texts"))
        await revise_step(pilot, 3, 3)
        assert app.screen.item == (1, 0)
    revisions = drafts(corpus.dir)[c.draft_id]["revisions"]
    assert revisions == [
        {"session": 0, "t": 0, "r_prime": None, "action": None},
        {"session": 0, "t": 1, "r_prime": {"goal": "reach E2", "planned_next": "left", "confidence": 0.7,
                                           "caused_by_self": 0.6}, "action": "left"}]


HOLDER = textwrap.dedent("""
    import sys, time
    from corpus.lock import CorpusLock
    with CorpusLock(sys.argv[1], exclusive=True, purpose="test holder"):
        print("held", flush=True)
        sys.stdin.readline()
""")


@drive
async def test_a_busy_corpus_is_shown_and_the_save_can_be_retried(study, corpus):
    c = play_sessions(study, corpus, "subj-busy")
    for item in c.revision_items():
        c.revise(item, None)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(corpus.dir)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        app = CollectApp(study, corpus, resume=c.draft_id, lock_wait=0.5)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, SaveScreen) and screen.states == ["saving", "waiting", "busy"]
            text = _flat(app)
            assert "The corpus is busy: nothing was saved yet." in text and f"pid {holder.pid}" in text
            assert "Your answers so far are kept safe" in text and "Press r to try again." in text
            assert store_rows(corpus.dir, "SELECT count(*) FROM sessions") == [(0,)]
            holder.communicate("\n", timeout=10)  # the other process lets go
            await pilot.press("r")
            await settle(pilot)
            assert screen.states[-2:] == ["saving", "saved"] and "Saved. Thank you!" in _flat(app)
            assert "all 2 sessions done · saved" in _flat(app)
            await pilot.press("enter")
        assert app.return_value.status == "saved"
    finally:
        holder.kill()
        holder.wait()
    assert store_rows(corpus.dir, "SELECT count(*) FROM sessions") == [(2,)] and drafts(corpus.dir) == {}


@drive
async def test_a_refused_ingest_writes_nothing_and_keeps_the_draft(study, corpus):
    from corpus.ingest import ingest_records

    c = play_sessions(study, corpus, "subj-conflict")
    for item in c.revision_items():
        c.revise(item, None)
    [first, *_] = c.records()
    first = dict(first, steps=first["steps"][:1])  # another record under the same session id
    ingest_records(corpus, {"elsewhere": [first]}, progress=False)
    app = CollectApp(study, corpus, resume=c.draft_id)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.states == ["saving", "failed"]
        text = _flat(app)
        assert "could not be saved: nothing was written" in text and "mini-subj-conflict-p1a" in text
        await pilot.press("q")
    assert app.return_value.status == "unsaved" and "--resume mini-subj-conflict" in app.return_value.message
    assert store_rows(corpus.dir, "SELECT session_id FROM sessions") == [("mini-subj-conflict-p1a",)]  # none of ours
    assert store_rows(corpus.dir, "SELECT count(*) FROM steps") == [(1,)]
    assert list(drafts(corpus.dir)) == ["mini-subj-conflict"]
