"""Study files, the environment registry and the recorder, without any screen (the app is a layer over these)."""

import json
import random
from pathlib import Path

import pytest

from collect.cli import main
from collect.recorder import Collection, PersonalData, RInput, discard_draft, list_drafts
from collect.study import load_study, parse_study
from corpus import Corpus, init_corpus
from corpus.errors import InvalidInput, UsageError
from corpus.stats import corpus_stats
from environments import get_environment
from environments.base import EnvironmentRefused
from tests_paths import ROOT

PILOT = ROOT / "collect" / "studies" / "pilot-grid.toml"


@pytest.fixture()
def corpus(tmp_path):
    return Corpus(init_corpus(tmp_path / "c"))


@pytest.fixture()
def small(tmp_path):
    """A one-pair study on a 7x7 grid with no drift but for one task: short sessions."""
    text = PILOT.read_text().replace("pairs_per_subject = 2", "pairs_per_subject = 1").replace("budget = 6", "budget = 3")
    path = tmp_path / "small.toml"
    path.write_text(text)
    return load_study(path)


def _play(col: Collection, rng: random.Random, goal="reach the goal") -> None:
    while col.collecting:
        a = rng.choice(col.action_space)
        col.act(RInput(goal=goal, planned_next=a, confidence=0.7, caused_by_self=0.4), a)


def test_the_example_study_checks_and_says_what_it_records(capsys):
    s = load_study(PILOT)
    assert (s.id, s.pairs_per_subject, s.revise_steps, len(s.tasks), s.environment.name) == \
        ("pilot-grid", 2, (1, 2), 2, "grid")
    assert main(["check", str(PILOT)]) == 0
    out = capsys.readouterr().out
    assert "2 pair(s) per subject = 4 session(s)" in out and "revisions offered at steps 1, 2" in out


def test_a_bad_study_names_every_problem_with_its_line(tmp_path, capsys):
    text = PILOT.read_text()
    text = text.replace('id = "pilot-grid"', 'id = "pilot grid"').replace('goal = "E5"', 'goal = "Z9"')
    text = text.replace('language = "en"', 'language = "tlh"').replace("revise_steps = [1, 2]", "revise_steps = [0]")
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    lines = text.splitlines()
    with pytest.raises(InvalidInput) as e:
        load_study(bad)
    got = {p.pointer: p for p in e.value.problems}
    assert set(got) == {"study.id", "study.revise_steps", "environment.tasks[0].goal", "contexts[0].language"}
    for pointer, needle in (("study.id", 'id = "pilot grid"'), ("environment.tasks[0].goal", 'goal = "Z9"'),
                            ("contexts[0].language", 'language = "tlh"'), ("study.revise_steps", "revise_steps")):
        assert needle in lines[got[pointer].line - 1], pointer  # the line named is the line at fault
    assert "free cell" in got["environment.tasks[0].goal"].message
    assert main(["check", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:{got['study.id'].line}: study.id:" in err
    with pytest.raises(InvalidInput) as e:
        parse_study(b'[study]\nid = "x"\ntitle = \n', "broken.toml")
    assert e.value.problems[0].line == 3 and "not valid TOML" in e.value.problems[0].message


def test_environments_are_found_by_name_and_unknown_ones_are_refused():
    assert get_environment("grid").name == "grid"
    with pytest.raises(EnvironmentRefused) as e:
        get_environment("no-such-world")
    assert "known: grid" in e.value.message


def test_without_consent_nothing_is_recorded(small, corpus):
    with pytest.raises(UsageError):
        Collection.start(small, corpus, consent=False)
    assert list_drafts(corpus) == [] and not (corpus.dir / ".trb-collect").exists()


def test_a_run_becomes_sessions_revisions_pairs_and_attribution_items_in_one_ingest(small, corpus):
    col = Collection.start(small, corpus, consent=True, subject_id="subj-a1")
    assert col.progress() == "session 1 of 2 · step 1 of 3"
    _play(col, random.Random(3))
    items = col.revision_items()
    assert [(i, t) for i, t in items] == [(0, 0), (0, 1), (1, 0), (1, 1)]  # steps 1 and 2 of each session
    col.revise(items[0], RInput(goal="go left first", planned_next="left", confidence=0.9), "left")
    for item in col.revision_items():
        col.revise(item, None)  # skipped
    records = col.records()
    by_kind = {}
    for r in records:
        by_kind.setdefault(r["kind"], []).append(r)
    sessions = by_kind["session"]
    assert [s["session_id"] for s in sessions] == ["pilot-grid-subj-a1-p1a", "pilot-grid-subj-a1-p1b"]
    assert all(s["source"] == {"kind": "human_session", "collector": "TRB maintainers (pilot)",
                               "consent_ref": "consent/2026/pilot-grid-v1", "licence": "CC-BY-4.0"} for s in sessions)
    first = sessions[0]["steps"]
    assert "caused_by_self" not in first[0]["r"] and first[1]["r"]["caused_by_self"] == 0.4  # not at the first step
    [rev] = [c for c in by_kind["counterfactual"] if c["origin"] == "same_session_revision"]
    assert rev["r_prime"] == {"goal": "go left first", "planned_next": "left", "confidence": 0.9}
    assert rev["phi"] == {"type": "distribution", "probs": {"left": 1.0}, "n": 1}
    assert rev["author"] == {"person_id": "subj-a1"} and rev["t"] == 0
    pairs = [c for c in by_kind["counterfactual"] if c["origin"] == "paired_session"]
    assert {c["paired_session_id"] for c in pairs} <= {s["session_id"] for s in sessions}
    # attribution items from the environment's ground truth: replay each session and compare
    env = small.environment
    for s in sessions:
        ep = env.start(small.task(0), goal=env.goals(small.task(0))[s["session_id"].endswith("b")],
                       seed=col.sessions[0].seed, language="en")
        causes = [ep.step(st["action"]).cause for st in s["steps"]]
        want = {f"{s['session_id']}.t{t}.attr": c for t, c in enumerate(causes[:-1]) if c in ("self", "exogenous")}
        got = {a["item_id"]: a["design_label"] for a in by_kind.get("attribution", []) if a["session_id"] == s["session_id"]}
        assert got == want
    report = col.finish()
    assert report.new["session"] == 2 and not list_drafts(corpus)
    with corpus.open(write=False) as con:
        src = con.execute("SELECT DISTINCT src_file FROM store.sessions").fetchall()
    assert src[0][0].startswith("trb-collect study pilot-grid") and "subject subj-a1" in src[0][0]
    prov = corpus_stats(corpus)["sessions_by_provenance"]
    assert prov["collected from human subjects"] == 2 and prov["simulated or illustrative (smoke only)"] == 0


def test_personal_data_is_refused_at_entry_and_never_saved(small, corpus):
    col = Collection.start(small, corpus, consent=True, subject_id="subj-p1")
    with pytest.raises(PersonalData) as e:
        col.act(RInput(goal="mail me at jane.doe@example.com", planned_next="up", confidence=0.5), "up")
    assert [(p.field, p.message) for p in e.value.problems] == [
        ("goal", "What you are trying to do: this looks like an e-mail address; please say it without it (nothing "
                 "personal is recorded)")]
    with pytest.raises(PersonalData) as e:  # every problem at once, each naming its field
        col.act(RInput(goal="I am Alice Smith from Leeds", planned_next="north", confidence=None), None)
    assert [p.field for p in e.value.problems] == ["goal", "planned", "confidence", "action"]
    assert "a person's name and a place name" in e.value.problems[0].message
    draft = json.loads(list_drafts(corpus)[0].path.read_text())
    assert draft["sessions"][0]["steps"] == [] and "example.com" not in json.dumps(draft)
    with pytest.raises(UsageError):
        Collection.start(small, corpus, consent=True, subject_id="jane.doe@example.com")


def test_a_run_cut_off_is_a_draft_that_resumes_where_it_stopped_or_is_discarded(small, corpus, tmp_path):
    col = Collection.start(small, corpus, consent=True, subject_id="subj-d1")
    rng = random.Random(5)
    for _ in range(4):  # into the second session
        a = rng.choice(col.action_space)
        col.act(RInput(goal="g", planned_next=a, confidence=0.5, caused_by_self=0.5), a)
    where, seen = col.progress(), col.observation
    del col  # the app closed, or crashed
    with corpus.open(write=False) as con:
        assert con.execute("SELECT count(*) FROM store.sessions").fetchone()[0] == 0  # never ingested half
    [d] = list_drafts(corpus)
    back = Collection.resume(corpus, d.draft_id)
    assert (back.progress(), back.observation) == (where, seen)
    with pytest.raises(UsageError):  # the same subject cannot start again beside its draft
        Collection.start(small, corpus, consent=True, subject_id="subj-d1")
    # a changed study file cannot resume the draft
    Path(small.path).write_text(Path(small.path).read_text().replace("Pilot:", "Pilot (changed):"))
    with pytest.raises(UsageError) as e:
        Collection.resume(corpus, d.draft_id)
    assert "another version" in e.value.message
    assert discard_draft(corpus, d.draft_id).subject_id == "subj-d1" and list_drafts(corpus) == []
