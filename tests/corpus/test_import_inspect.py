"""`trb-corpus import inspect`: real inspect_ai logs (written by inspect_ai's own writer) in, sessions out.

The logs are made here with ``write_eval_log`` in inspect_ai's interpreter (``make install-inspect``); the
importer reads them with inspect_ai's ``read_eval_log`` there too. Nothing is downloaded.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from corpus.importers.inspect_log import MAPPING_VERSION, REASONING_SLOT, inspect_python
from corpus.release import cut_release
from corpus.stats import corpus_stats
from corpus.store import Corpus
from trb.releases import Release

# reads inspect_ai logs through its own venv (.venv-inspect) in a subprocess
pytestmark = pytest.mark.slow

WRITER = Path(__file__).with_name("inspect_log_writer.py")


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("inspect-logs")
    eval_log, json_log = tmp / "run0.eval", tmp / "run1.json"
    subprocess.run([inspect_python(), str(WRITER), str(eval_log), str(json_log)], check=True)
    return eval_log, json_log


def test_logs_round_trip_into_sessions_a_release_and_contexts(corpus_dir, tmp_path, cli, logs):
    code, _, err = cli("import", "inspect", "--corpus", corpus_dir, "--licence", "CC-BY-4.0", "-q", *logs)
    assert code == 0, err
    assert f"import inspect (mapping {MAPPING_VERSION}): " in err and "samples 10, sessions 6" in err
    # what could not be mapped is counted, by reason, per log (two logs)
    not_mapped = next(line for line in err.splitlines() if line.startswith("not mapped"))
    for reason in ("sample ended in an error 2", "sample without an assistant message 2", "redacted reasoning 2",
                   "non-text content (image) 2", "answer not read as one of the choices (step left open-ended) 2"):
        assert reason in not_mapped, not_mapped
    s = corpus_stats(Corpus(corpus_dir))
    assert s["sessions_by_source_kind"] == {"model_rollout": 6} and s["steps"] == {"total": 8, "with_r": 4, "with_empty_r": 0}

    r = cut_release(Corpus(corpus_dir), "0.1.0", kind="trb", out=tmp_path / "rel",
                    datasheet=_curated(tmp_path), split_fractions={"train": 0.0, "dev": 0.0, "eval": 1.0},
                    progress=False)
    rel = Release(r.directory)
    try:
        by_id = {sess.session_id: sess for sess in rel.sessions()}
        mc = next(sess for sid, sess in by_id.items() if "-mc-0-e1" in sid)
        ctx = mc.context(0)
        assert ctx.action_space == ("A", "B", "C") and ctx.action_texts == ("42", "17, or 18", "none of these")
        assert ctx.observation.startswith("user: What is 6 x 7?")
        assert mc.steps[0]["action"] == "A" and mc.steps[0]["outcome"] == 'scores: choice="C"'
        assert mc.recorded_r(0) == {"goal": "answer correctly", "planned_next": "A", "caused_by_self": None,
                                    "confidence": 0.9,
                                    "ext": {REASONING_SLOT: "Six sevens are forty-two.\nGoal: answer correctly\n"
                                                            "Plan: A\nConfidence: 90%"}}
        agent = next(sess for sid, sess in by_id.items() if "-agent-1-e1" in sid)
        first, last = agent.steps
        assert first["observation"] == "system: You are an agent with a shell.\nuser: How many files are there?"
        assert first["action"] == 'bash({"cmd": "ls"})' and first["outcome"] == "a.txt\nb.txt"
        assert agent.recorded_r(0)["ext"] == {REASONING_SLOT: "I will list them first."}
        assert last["action"] == "There are 2 files." and last["observation"] == "tool bash: a.txt\nb.txt"
        assert agent.recorded_r(1) is None  # its only reasoning was redacted: nothing is invented
        assert agent.context(1).action_texts is None
        vague = next(sess for sid, sess in by_id.items() if "-vague-0-e2" in sid)
        assert vague.context(0).action_space is None and vague.steps[0]["action"] == "I am not sure."
        row = rel.rows("SELECT source_kind, collector, licence, subject_id FROM sessions WHERE session_id = ?",
                       [mc.session_id])[0]
        assert row["source_kind"] == "model_rollout" and row["licence"] == "CC-BY-4.0"
        assert row["collector"] == "inspect_ai log run0.eval (hf/tiny-local)"
        assert row["subject_id"].startswith("arith_agent-g")
    finally:
        rel.close()


def _curated(tmp_path: Path) -> Path:
    from corpus.release import TEMPLATE

    p = tmp_path / "DATASHEET.md"
    p.write_text(TEMPLATE.read_text(encoding="utf-8").replace("[curator:", "(answered:"))
    return p


def test_a_file_inspect_cannot_read_is_named_and_nothing_is_written(corpus_dir, tmp_path, cli, logs):
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": "not a log"}')
    code, _, err = cli("import", "inspect", "--corpus", corpus_dir, "-q", logs[0], bad)
    assert code == 1
    assert f"{bad}: not an inspect_ai log inspect_ai can read" in err and "nothing was written" in err
    assert corpus_stats(Corpus(corpus_dir))["records"]["session"] == 0


def test_help_declares_the_mapping_and_the_subjects(cli):
    code, out, _ = cli("import", "inspect", "--help")
    assert code == 0 and f"Mapping {MAPPING_VERSION}" in out and f"r.ext.{REASONING_SLOT}" in out
    assert "pseudo-subject" in out and "read_eval_log" in out
