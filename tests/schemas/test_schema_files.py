"""The published JSON Schema files and the Python models must agree."""

from __future__ import annotations

import json

import jsonschema
import pytest
from pydantic import TypeAdapter, ValidationError

import schemas
from factories import DELETE, annotation, attribution, counterfactual, mutated, session, small_corpus, transfer_context
from schemas import generate
from schemas.models import SCHEMA_FILES, Record

ADAPTER = TypeAdapter(Record)


def test_checked_in_files_equal_the_models():
    """Editing a model without regenerating its file (or the reverse) fails here."""
    for name, model in SCHEMA_FILES.items():
        on_disk = (generate.HERE / name).read_text(encoding="utf-8")
        assert on_disk == generate.render(model), f"{name} drifted from {model.__name__}: run python -m schemas.generate"
    assert generate.main(["--check"]) == 0


def test_every_schema_file_is_draft_2020_12_with_a_versioned_id():
    for name in SCHEMA_FILES:
        doc = schemas.load_schema(name.removesuffix(".schema.json"))
        jsonschema.Draft202012Validator.check_schema(doc)
        assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert doc["$id"] == f"{schemas.SCHEMA_BASE_URL}/{name}"
        assert "/v1/" in doc["$id"]


def _validators():
    return {k: jsonschema.Draft202012Validator(schemas.load_schema(k)) for k in schemas.RECORD_KINDS}


def _pydantic_ok(rec) -> bool:
    try:
        ADAPTER.validate_python(json.loads(json.dumps(rec)), strict=True)
    except ValidationError:
        return False
    return True


VALID = small_corpus() + [
    mutated(session(), "r_extensions", {"mood": {"type": "string", "description": "stated mood"}}),
    mutated(session(), "steps/0/action_space", None),
    mutated(counterfactual(), "phi", {"type": "text", "text": "I would check the clock first."}),
    mutated(counterfactual(), "phi", None),
    mutated(annotation(), "value", {"type": "attribution", "label": "unsure", "endorsed": False, "rationale": "?"}),
]

INVALID = [
    mutated(session(), "steps/0/r/confidence", 1.7),
    mutated(session(), "steps/0/r/caused_by_self", -0.1),
    mutated(session(), "steps/0/r/mood", "calm"),
    mutated(session(), "steps/0/t", "0"),
    mutated(session(), "steps/0/t", -1),
    mutated(session(), "source/kind", "scraped"),
    mutated(session(), "subject_id", DELETE),
    mutated(session(), "steps", []),
    mutated(session(), "session_id", "has space"),
    mutated(session(), "context/language", "English"),
    mutated(session(), "extra_field", 1),
    mutated(session(), "schema_version", 2),
    mutated(counterfactual(), "origin", "guess"),
    mutated(counterfactual(), "phi/probs/up", 1.5),
    mutated(counterfactual(), "phi/type", "histogram"),
    mutated(counterfactual(), "flags", {"adversarial": "yes"}),
    mutated(attribution(), "design_label", "unsure"),
    mutated(annotation(), "created_at", "yesterday"),
    mutated(annotation(), "value", {"type": "attribution", "label": "maybe"}),
    mutated(transfer_context(), "attestation_ref", DELETE),
    {"kind": "nothing"},
]


@pytest.mark.parametrize("rec", VALID, ids=lambda r: r.get("kind"))
def test_valid_records_pass_both(rec):
    assert not list(_validators()[rec["kind"]].iter_errors(rec))
    assert _pydantic_ok(rec)


@pytest.mark.parametrize("rec", INVALID, ids=lambda r: r.get("kind"))
def test_invalid_records_fail_both(rec):
    validator = _validators().get(rec["kind"])
    if validator is not None:
        assert list(validator.iter_errors(rec)), "the JSON Schema file accepts what the model rejects"
    assert not _pydantic_ok(rec)


def test_example_and_simulated_records_agree_with_the_files():
    from simworld import simulate
    from tests_paths import EXAMPLE_7F3A

    recs = [json.loads(line) for line in EXAMPLE_7F3A.read_text(encoding="utf-8").splitlines() if line.strip()]
    recs += list(simulate(n_sessions=20, seed=3))
    v = _validators()
    for rec in recs:
        assert not list(v[rec["kind"]].iter_errors(rec))
        assert _pydantic_ok(rec)
