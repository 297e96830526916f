"""What a subject's answer may not hold, checked exactly: people's names and place names introduced as such, and
the kinds of corpus.pii; never the study's own texts or ordinary answers (no false positives there)."""

from __future__ import annotations

import pytest

from collect.personal import SubjectIdRefused, check_subject_id, personal_data

#: (answer, kinds found)
CAUGHT = [
    ("I am Alice Smith from Leeds", ["name", "place"]),
    ("i'm Priya, going right", ["name"]),
    ("My name is Bob and I want E2", ["name"]),
    ("this is Jean-Luc heading up", ["name"]),
    ("call me Ana", ["name"]),
    ("I live in Paris, reach E2", ["place"]),
    ("going right, as near Manchester as I can", ["place"]),
    ("then Alice Smith said go up", ["name"]),
    ("reach E2 with Maria Lopez", ["name"]),
    ("Alice Smith walks right", ["name"]),  # the release gate's named-entity model (corpus/pii/people.py)
    ("mail jane.doe@example.org when done", ["email"]),
    ("call +44 7700 900123", ["phone"]),
]
#: What is not caught, as the docs say (lower case; one name with no phrase before it; a pair starting a sentence).
MISSED = ["i am alice from leeds", "ask Alice", "Reto Meier wrote back", "I am Will"]

#: Ordinary answers of the grid study: none is refused.
ORDINARY = [
    "reach E2", "Reach E2", "go right", "Go Right then Up", "head to the goal at E5", "get to B5 before the budget",
    "I am going right", "I'm trying to reach the goal", "I am Not sure", "from B2 to E5 along row 2",
    "in Step 2 I go up", "avoid the Wall at D3", "the Wind pushed me Up", "Top Right corner", "move to the North East",
    "stay at C3 and Wait", "right, right, right", "Maybe Left, maybe Right", "It's Windy: keep going right",
    "This is Hard, go up", "reach E2? then up", "I am at C2, goal is E2", "from Start to Goal", "near the Edge",
    "on Monday I would go right", "Then Up. Then Right.", "Up Up Up", "keep Going Right",
]


@pytest.mark.parametrize("text,kinds", CAUGHT)
def test_names_places_and_contact_details_are_caught(text, kinds):
    assert personal_data(text) == kinds


@pytest.mark.parametrize("text", MISSED)
def test_the_documented_gaps_are_gaps(text):
    assert personal_data(text) == []


def test_no_false_positive_on_the_study_texts_or_ordinary_answers(study):
    """Every observation and outcome the grid renders on the example study's tasks, the consent text, and
    ordinary answers: nothing is taken for a name or a place."""
    from collect.study import load_study
    from tests_paths import ROOT

    texts = list(ORDINARY)
    for s in (study, load_study(ROOT / "collect" / "studies" / "pilot-grid.toml")):
        texts += [s.title, s.consent_text, s.collector]
        for pair in range(len(s.tasks)):
            for goal in s.environment.goals(s.task(pair)):
                for seed in range(5):
                    ep = s.environment.start(s.task(pair), goal=goal, seed=seed, language="en")
                    texts.append(ep.observation)
                    while not ep.done:
                        out = ep.step(ep.action_space[seed % 5])
                        texts += [out.outcome, ep.observation]
    hits = [(t, personal_data(t)) for t in texts if personal_data(t)]
    assert hits == []


@pytest.mark.parametrize("subject", ["P-017", "subj-1a2b3c4d", "subj-12345678", "lab2.s14", "A_7"])
def test_a_pseudonym_is_a_subject_id(subject):
    assert check_subject_id(f" {subject} ") == subject


@pytest.mark.parametrize("subject,why", [
    ("bob@example.com", "an e-mail address"), ("07700900123", "a phone number"), ("+44 7700 900123", "a phone number"),
    ("7700-900-123", "a phone number"), ("12345678", "a phone number"), ("subj-0770090012", "a phone number"),
    ("Alice Smith", "it looks like personal data"), ("", "expected letters, digits"),
])
def test_an_email_or_phone_number_is_no_subject_id(subject, why):
    with pytest.raises(SubjectIdRefused, match=why):
        check_subject_id(subject)
