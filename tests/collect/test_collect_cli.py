"""``trb-collect`` as the experimenter uses it around the app: check a study, list and discard drafts, and the
clean refusals of ``run`` (no traceback, an exit code)."""

from __future__ import annotations

import pytest

from collect.cli import main
from collect.recorder import RInput
from collect_helpers import SMALL_STUDY, drafts, play_sessions, write_study
from toolkit.errors import ExitCode


@pytest.fixture
def trb_collect(capsys):
    def run(*args) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_check_says_what_the_study_records_and_names_each_problem(trb_collect, study_path, tmp_path):
    code, out, err = trb_collect("check", study_path)
    assert code == 0 and out.startswith("study mini (Mini: three steps on a windy grid): 1 pair(s) per subject = "
                                        "2 session(s)") and "revisions offered at steps 1, 2" in out
    bad = write_study(tmp_path, SMALL_STUDY.replace('goal = "E2"', 'goal = "Z9"').replace("seed = 3", "seed = -1"),
                      name="bad.toml")
    code, out, err = trb_collect("check", bad)
    assert code == ExitCode.INVALID and out == ""
    assert f"{bad}:8: study.seed: expected a whole number ≥ 0" in err
    assert f"{bad}:27: environment.tasks[0].goal: expected a free cell" in err


def test_drafts_lists_and_discards_what_a_run_left(trb_collect, study, corpus):
    c = play_sessions(study, corpus, "subj-cli", sessions=0)
    c.act(RInput("reach E2", "right", 0.7), "right")
    code, out, err = trb_collect("drafts", "--corpus", corpus.dir)
    [line] = out.splitlines()
    assert code == 0 and line.startswith("mini-subj-cli\tstudy mini (") and "\tsubject subj-cli\t" in line
    assert "\tsession 1 of 2 · step 2 of 3\t" in line
    code, out, err = trb_collect("drafts", "--corpus", corpus.dir, "discard", "mini-subj-cli")
    assert code == 0 and "discarded draft mini-subj-cli (subject subj-cli, session 1 of 2 · step 2 of 3)" in err
    assert drafts(corpus.dir) == {}
    code, out, err = trb_collect("drafts", "--corpus", corpus.dir)
    assert code == 0 and out == "" and "no drafts" in err
    code, out, err = trb_collect("drafts", "--corpus", corpus.dir, "discard", "mini-subj-cli")
    assert code == ExitCode.USAGE and "no draft 'mini-subj-cli'" in err and "Traceback" not in err


def test_run_refuses_a_missing_draft_or_context_before_the_app_opens(trb_collect, study_path, corpus):
    code, out, err = trb_collect("run", study_path, "--corpus", corpus.dir, "--resume", "nope")
    assert code == ExitCode.USAGE and "no draft 'nope'" in err and "Traceback" not in err
    code, out, err = trb_collect("run", study_path, "--corpus", corpus.dir, "--context", "ctx-nope")
    assert code == ExitCode.INVALID and "has no context 'ctx-nope'" in err and drafts(corpus.dir) == {}
    code, out, err = trb_collect("serve", study_path, "--corpus", corpus.dir, "--context", "ctx-nope")
    assert code == ExitCode.INVALID and "has no context 'ctx-nope'" in err


@pytest.mark.parametrize("subject", ["bob@example.com", "07700900123", "+44 7700 900123", "12345678"])
def test_run_refuses_an_email_or_phone_subject_id_before_consent_is_asked(trb_collect, study_path, corpus, subject):
    """The app never opens (no consent screen, the subject sees nothing), nothing is written; the experimenter
    is told why on stderr."""
    before = sorted(p.name for p in corpus.dir.rglob("*"))
    code, out, err = trb_collect("run", study_path, "--corpus", corpus.dir, "--subject", subject)
    assert code == ExitCode.USAGE and out == "" and "Traceback" not in err
    assert "subject id refused: it looks like " + ("an e-mail address" if "@" in subject else "a phone number") in err
    assert drafts(corpus.dir) == {} and sorted(p.name for p in corpus.dir.rglob("*")) == before


def test_serve_runs_one_app_per_connection_with_this_python(study_path, corpus):
    import shlex
    import sys

    from collect.serve import app_command

    argv = shlex.split(app_command(study_path, corpus.dir, context_id="ctx-mini-en"))
    assert argv == [sys.executable, "-m", "collect.cli", "run", str(study_path.resolve()), "--corpus",
                    str(corpus.dir.resolve()), "--context", "ctx-mini-en"]


def test_every_trb_collect_command_is_in_the_docs_and_no_other():
    import re

    from collect.cli import cli
    from docs_pages import docs_text
    from tests_paths import ROOT

    guide = docs_text("guides/subjects.md")
    for name in cli.commands:
        assert f"`trb-collect {name}" in guide, f"trb-collect {name} is not in docs/guides/subjects.md"
    named = set(re.findall(r"`trb-collect ([a-z][a-z-]+)", docs_text() + (ROOT / "README.md").read_text()))
    assert named <= set(cli.commands), f"the docs name trb-collect commands that do not exist: {named - set(cli.commands)}"
