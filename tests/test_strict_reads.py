"""Issue 41: the JSON files a user or a third party hands the toolkit (beyond the release, whose matrix is in
tests/release_tampers.py) are read strictly: a NaN, an Infinity or a key given twice is refused naming the file and
the JSON pointer, as the error type of the reader, never a crash or a silent pick of one of two values."""

from __future__ import annotations

import pytest

from schemas.release_format import read_manifest
from toolkit.strict_json import StrictJSONError, load
from trb.errors import AdapterError, ModelError


def test_load_names_the_file_and_the_pointer(tmp_path):
    p = tmp_path / "doc.json"
    p.write_text('{"a": {"b": 1, "b": 2}, "c": [NaN]}')
    with pytest.raises(StrictJSONError) as e:
        load(p)
    assert e.value.source == str(p) and str(e.value).startswith(f"{p}: ")
    assert "/a/b: duplicate key 'b'" in str(e.value) and "/c/0: NaN is not a JSON number" in str(e.value)
    p.write_text('{"a": 1}')
    assert load(p) == {"a": 1}


def test_read_manifest_refuses_a_repeated_key(tmp_path):
    (tmp_path / "manifest.json").write_text('{"release_sha": "' + "f" * 64 + '", "release_sha": "' + "0" * 64 + '"}')
    with pytest.raises(StrictJSONError, match="/release_sha: duplicate key"):
        read_manifest(tmp_path)


def test_a_models_provenance_file_with_infinity_is_refused_with_its_pointer(tmp_path):
    from trb.models import PROVENANCE_FILE, read_provenance

    (tmp_path / PROVENANCE_FILE).write_text('{"sha256": "x", "bytes": Infinity}')
    with pytest.raises(ModelError, match=r"/bytes: Infinity is not a JSON number"):
        read_provenance(tmp_path)


def test_a_reference_models_config_with_a_repeated_key_is_refused(tmp_path):
    from trb.reference.model import load_checkpoint

    (tmp_path / "config.json").write_text('{"format": "a", "format": "b"}')
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(AdapterError, match=r"config.json: not strict JSON \(/format: duplicate key"):
        load_checkpoint(tmp_path)


def test_a_croissant_file_with_nan_is_a_problem_not_a_crash(tmp_path):
    from corpus.croissant import validate_croissant

    p = tmp_path / "croissant.json"
    p.write_text('{"name": "x", "size": NaN}')
    (problem,) = validate_croissant(p, read_records=False)
    assert problem.startswith(f"cannot read {p}") and "/size: NaN is not a JSON number" in problem
