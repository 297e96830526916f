"""SVG snapshots of the subject's screens at 80×24: consent, a step (answered, before the move), a revision.

Fixed data: the small study of ``collect_helpers``, fixed subject ids (the environment's seed comes from the
study seed and the subject id). Update after an intended change with
``pytest tests/collect/test_collect_snapshots.py --snapshot-update`` and look at the SVGs under
``__snapshots__/`` before committing them.
"""

from __future__ import annotations

from collect.app import CollectApp
from collect.recorder import RInput
from collect.scripted import Answer, answer_step, settle
from collect_helpers import play_sessions

SIZE = (80, 24)


def test_consent_screen(study, corpus, snap_compare):
    assert snap_compare(CollectApp(study, corpus, subject_id="subj-snap"), terminal_size=SIZE, run_before=settle)


def test_step_screen(study, corpus, snap_compare):
    c = play_sessions(study, corpus, "subj-snap", sessions=0)
    c.act(RInput("reach E2", "right", 0.7), "right")

    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.clear_notifications()  # "resumed draft …" (a toast that times out)
        await answer_step(pilot, Answer(None, 4, 4), act=False)
        await settle(pilot)

    assert snap_compare(CollectApp(study, corpus, resume=c.draft_id), terminal_size=SIZE, run_before=run_before)


def test_revision_screen(study, corpus, snap_compare):
    c = play_sessions(study, corpus, "subj-snap")
    c.revise(c.revision_items()[0], None)

    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.press("enter", "3", "enter", "enter", "enter", "3")
        await settle(pilot)

    assert snap_compare(CollectApp(study, corpus, resume=c.draft_id), terminal_size=SIZE, run_before=run_before)
