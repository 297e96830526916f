"""A whole study played through the real app by a scripted subject, key by key: consent, the two sessions of a
pair, the revisions; ingested; a ``trb`` release cut from it; Track 1 run on the revisions it produced."""

from __future__ import annotations

import duckdb
import pytest

from collect.app import CollectApp
from collect.screens.between import BetweenScreen
from collect.screens.revision import RevisionScreen
from collect.screens.save import SaveScreen
from collect.screens.step import StepScreen
from collect.scripted import Answer, agree, answer_step, go_on, revise_step, settle, skip_revision
from collect_helpers import drafts, drive, screen_text, store_rows

# drives the subject's app through whole studies (seconds per test)
pytestmark = pytest.mark.slow

ACTIONS = ("up", "down", "left", "right", "wait")
#: The scripted subject: session a walks right toward E2, session b up toward B5 (plan = move, option numbers).
PLAY = {0: [Answer("reach E2", 4, 4), Answer(None, 4, 4, confidence=6, cause=3), Answer(None, 4, 4, cause=0)],
        1: [Answer("reach B5", 1, 1, confidence=8), Answer(None, 1, 1), Answer(None, 1, 5, confidence=2, cause=1)]}
#: At the revisions: (plan, move) as option numbers, or None to skip (Esc, then y).
REVISE = [(3, 3), (5, 5), None, (2, 4)]


class ScriptedAdapter:
    """Puts weight 3 on the action r' plans and 1 on the others (the docs' example adapter, docs/examples/adapter)."""

    tier = "proxy"
    capabilities = ()

    def spec(self) -> dict:
        return {"kind": "scripted-test", "revision": "1"}

    def emit_r(self, context) -> dict:
        return {"planned_next": context.action_space[0], "confidence": 0.5}

    def act(self, context, r_override=None) -> dict[str, float]:
        r = r_override or self.emit_r(context)
        w = {a: 3.0 if a == r.get("planned_next") else 1.0 for a in context.action_space}
        return {a: v / sum(w.values()) for a, v in w.items()}


async def play_study(app, pilot) -> list[str]:
    """Consent, both sessions, the revisions, the save; the screens' progress lines on the way."""
    seen = []
    await agree(pilot)
    for session, answers in PLAY.items():
        for k, answer in enumerate(answers):
            assert isinstance(app.screen, StepScreen)
            seen.append(app.progress_line())
            assert f"session {session + 1} of 2 · step {k + 1} of 3" in seen[-1]
            await answer_step(pilot, answer)
        assert isinstance(app.screen, BetweenScreen)
        seen.append(screen_text(app))
        await go_on(pilot)
    for k, plan_move in enumerate(REVISE):
        assert isinstance(app.screen, RevisionScreen)
        assert f"revision {k + 1} of 4" in app.progress_line()
        if plan_move is None:
            await skip_revision(pilot)
        else:
            await revise_step(pilot, *plan_move)
    assert isinstance(app.screen, SaveScreen)
    await settle(pilot)
    return seen


@drive
async def test_a_scripted_subject_plays_the_whole_study_and_track_1_runs_on_its_revisions(study, corpus, tmp_path):
    from corpus.release import TEMPLATE, cut_release
    from trb.run import RunSpec, run_tracks

    app = CollectApp(study, corpus, subject_id="subj-full")
    async with app.run_test(size=(80, 24)) as pilot:
        seen = await play_study(app, pilot)
        assert "same place" in seen[3] and "another goal" in seen[3]  # between the two sessions of the pair
        assert "look back at 4 of your steps" in seen[7]
        assert app.screen.state == "saved", app.screen.status_text
        text = screen_text(app)
        assert "Saved. Thank you!" in text and "3 revised answers" in text and "2 sessions (6 steps" in text
        await pilot.press("q")
    assert app.return_value.status == "saved"
    assert drafts(corpus.dir) == {}  # the draft goes once the ingest has committed

    c = corpus.dir
    sessions = store_rows(c, "SELECT session_id, source_kind, consent_ref, subject_id FROM sessions ORDER BY 1")
    assert sessions == [(f"mini-subj-full-p1{r}", "human_session", "consent/tests/mini-v1", "subj-full")
                        for r in "ab"]
    steps = store_rows(c, "SELECT session_id, t, action FROM steps ORDER BY 1, 2")
    assert [a for _, _, a in steps] == ["right"] * 3 + ["up", "up", "wait"]
    revs = dict((r[0], r[1:]) for r in store_rows(
        c, "SELECT cf_id, t, rp_planned_next, phi_n, author_person FROM counterfactuals "
           "WHERE origin = 'same_session_revision' ORDER BY 1"))
    assert revs == {"mini-subj-full-p1a.t0.rev": (0, "left", 1, "subj-full"),
                    "mini-subj-full-p1a.t1.rev": (1, "wait", 1, "subj-full"),
                    "mini-subj-full-p1b.t1.rev": (1, "down", 1, "subj-full")}
    assert store_rows(c, "SELECT count(*) FROM counterfactuals WHERE origin = 'paired_session'") == [(2,)]

    curated = tmp_path / "DATASHEET.md"
    curated.write_text(TEMPLATE.read_text(encoding="utf-8").replace("[curator:", "(answered:"), encoding="utf-8")
    release = cut_release(corpus, "1.0.0", kind="trb", datasheet=curated, min_annotators=1, progress=False,
                          split_fractions={"train": 0.0, "dev": 0.0, "eval": 1.0})
    assert release.manifest["smoke_test"] is False
    results = tmp_path / "results.duckdb"
    run = run_tracks(RunSpec(release.directory, baseline="scripted", tracks=("1",), results=results),
                     ScriptedAdapter(), progress=False)
    assert run["smoke_test"] is False
    scores = dict(duckdb.connect(str(results), read_only=True).execute(
        "SELECT item_id, score FROM item_scores WHERE track = '1' AND item_id LIKE '%.rev'").fetchall())
    # Φ(r') is the move the subject chose; the adapter gives 3/7 to r'.planned_next: 1 - TV = 3/7 when the
    # revised move is the revised plan, 1/7 when it is not (the last revision: plan down, move right)
    assert scores.keys() == revs.keys()
    assert abs(scores["mini-subj-full-p1a.t0.rev"] - 3 / 7) < 1e-9
    assert abs(scores["mini-subj-full-p1a.t1.rev"] - 3 / 7) < 1e-9
    assert abs(scores["mini-subj-full-p1b.t1.rev"] - 1 / 7) < 1e-9
