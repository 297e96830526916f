"""No traceback ever (issue 41, point 8): every command of every TRB command line, enumerated from the click groups,
against a table of hostile inputs (tests/hostile.py: malformed files, wrong paths, a FIFO, a 3 MB line, a Label
Studio answering the wrong thing) and against SIGINT/SIGTERM. A refusal may take any code but 70, and no output may
hold a traceback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import hostile
from tests_paths import ROOT
from toolkit.errors import ExitCode


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The scratch directory (engines' real files truncated from here), the good parts, a feeder of its FIFOs."""
    root = tmp_path_factory.mktemp("hostile")
    fixtures = hostile.base_fixtures(root)
    with hostile.FifoFeeder(root):
        yield root, fixtures


def test_every_command_has_hostile_rows():
    commands = hostile.commands()
    assert len(commands) >= 35, commands  # the enumeration reaches every group's subcommands
    assert sorted(set(commands) - set(hostile.TABLE)) == [], "a command without hostile rows (tests/hostile.py TABLE)"
    assert sorted(set(hostile.TABLE) - set(commands)) == [], "rows for a command that is not there"


def _check(case_id: str, code: int, out: str, err: str) -> None:
    why = hostile.broken(code, out, err)
    assert why is None, f"{case_id}: {why} (exit {code})\n{err[-3000:]}"


@pytest.mark.parametrize("command", sorted(hostile.TABLE))
def test_hostile_inputs_are_refused_without_a_traceback(command, scratch):
    root, fixtures = scratch  # built under root, where the feeder reaches the FIFOs
    tried = 0
    for i, case in enumerate(hostile.cases({command: hostile.TABLE[command]})):
        if case.thing in hostile.SKIP_SHAPES:  # reason: hostile.SKIP_SHAPES (chmod 000 does not stop root)
            continue
        argv, env = hostile.build_case(case, root, root / command.replace(" ", "-") / str(i), fixtures)
        _check(case.id, *hostile.run_in_process(case.prog, argv, env))
        tried += 1
    assert tried, "every row was skipped"


@pytest.mark.skipif(not hostile.running_as_root(), reason="only as root is chmod 000 not a refusal")
def test_as_root_the_unreadable_rows_are_skipped_and_through_a_file_rows_stand_in():
    assert "unreadable" in hostile.SKIP_SHAPES and "through-a-file" in hostile.SHAPES


@pytest.mark.parametrize("answer", sorted(hostile.ANSWERS))
@pytest.mark.parametrize("command", sorted(hostile.SERVER_TABLE))
def test_a_wrong_label_studio_answer_is_one_line(command, answer, scratch):
    root, fixtures = scratch
    with hostile.WrongServer(answer) as srv:
        env = {"LABEL_STUDIO_URL": srv.url, "LABEL_STUDIO_API_KEY": "hostile-key-41", "TRB_LS_RETRIES": "0"}
        for template in hostile.SERVER_TABLE[command]:
            code, out, err = hostile.run_in_process("trb-annotate", template.format(**fixtures).split(), env)
            _check(f"{command} against {answer}", code, out, err)
            assert code != 0 and srv.url in err, err


@pytest.fixture(scope="module")
def nan_release(tmp_path_factory):
    """A real release (tests/release_tampers.py) whose manifest holds NaN where a number is."""
    import release_tampers

    rel = release_tampers.build_fixture(tmp_path_factory.mktemp("nan"))
    m = json.loads((rel / "manifest.json").read_text())
    m["synthetic_share"] = float("nan")
    (rel / "manifest.json").write_text(json.dumps(m, indent=2))  # json writes NaN
    return rel


@pytest.mark.parametrize("prog,argv", [
    ("trb-corpus", ["verify", "{release}"]),
    ("trb", ["run", "--release", "{release}", "--adapter", "native", "--model", "{ok_outdir}", "--baseline", "x",
             "--results", "{results}", "-q"]),
], ids=["verify", "trb-run"])
def test_nan_in_a_real_manifest_is_refused(prog, argv, nan_release, scratch, tmp_path):
    _, fixtures = scratch
    values = {**fixtures, "release": str(nan_release), "results": str(tmp_path / "results.duckdb")}
    code, out, err = hostile.run_in_process(prog, [a.format(**values) for a in argv], {})
    _check(f"{prog} on NaN", code, out, err)
    assert code == ExitCode.BAD_RELEASE, err


# -- signals: a long command, in its own process --------------------------------------------------------------------

LONG = {
    "trb-corpus simulate": ["corpus.cli", "simulate", "--sessions", "1000000", "--seed", "1", "-o", "{out}"],
    "trb calibrate": ["trb.cli", "calibrate", "--sessions", "100000"],
}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("command", sorted(LONG))
def test_a_signal_stops_a_long_command_with_the_interrupt_code(command, sig, tmp_path):
    out = tmp_path / "sim.jsonl"
    module, *args = LONG[command]
    p = subprocess.Popen([sys.executable, "-m", module, *[a.format(out=out) for a in args]], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    time.sleep(4)  # past the imports, into the work
    assert p.poll() is None, f"{command} finished before the signal: {p.communicate()}"
    p.send_signal(sig)
    stdout, stderr = p.communicate(timeout=60)
    assert "Traceback" not in stdout + stderr, stderr
    assert p.returncode == ExitCode.INTERRUPTED, (p.returncode, stderr[-2000:])
    assert stderr.strip().splitlines()[-1].endswith(("interrupted", "interrupted; nothing half-written")), stderr
    assert not out.exists() and [q.name for q in tmp_path.iterdir()] == [], "something half-written was left"
    shutil.rmtree(tmp_path, ignore_errors=True)


# -- what the fixes promise, one line each ------------------------------------------------------------------------

def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("prog,argv,option", [
    ("trb-corpus", ["init", "{bad}"], "DIRECTORY"),
    ("trb-corpus", ["simulate", "--sessions", "2", "--seed", "1", "-o", "{bad}", "-q"], "--output"),
    ("trb-demo", ["--workdir", "{bad}", "-q"], "--workdir"),
    ("trb", ["models", "fetch", "smollm2", "--out", "{bad}"], "--out"),
], ids=["init", "simulate", "demo", "models-fetch"])
def test_an_output_path_under_a_file_is_one_usage_line_and_nothing_is_made(prog, argv, option, tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    bad = tmp_path / "notes.txt" / "out"
    code, out, err = hostile.run_in_process(prog, [a.format(bad=bad) for a in argv], {})
    line = _one_line(err)
    assert code == ExitCode.USAGE and line.startswith(f"{option} {bad}: ") and "is a file, not a directory" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"] and (tmp_path / "notes.txt").read_text() == "mine\n"


def test_a_binary_datasheet_is_one_usage_line(corpus_dir, tmp_path):
    sheet = tmp_path / "DATASHEET.md"
    sheet.write_bytes(b"# Datasheet\n\x92\x00 junk")
    code, _, err = hostile.run_in_process("trb-corpus", ["release", "--corpus", str(corpus_dir), "--version", "1.0.0",
                                                         "--kind", "smoke", "--datasheet", str(sheet), "-q"], {})
    assert code == ExitCode.USAGE and _one_line(err) == (f"--datasheet {sheet}: not UTF-8 text (byte 12); a datasheet "
                                                         "template is a Markdown file")
    assert not (corpus_dir / "releases").exists()


@pytest.mark.parametrize("prog,argv", [("trb-review", ["{corpus}"]),
                                       ("trb-collect", ["run", "{study}", "--corpus", "{corpus}"])],
                         ids=["trb-review", "trb-collect-run"])
def test_a_damaged_store_is_refused_before_the_app_opens(prog, argv, corpus_dir, scratch):
    (corpus_dir / "corpus.duckdb").write_bytes(b"\0" * 5000)
    values = {"corpus": str(corpus_dir), "study": scratch[1]["ok_study"]}
    code, _, err = hostile.run_in_process(prog, [a.format(**values) for a in argv], {})  # OpenedApp if it opened
    assert code == ExitCode.NOT_FOUND and str(corpus_dir / "corpus.duckdb") in _one_line(err), err


def test_a_corpus_held_by_another_process_still_opens_the_review_app(corpus_dir):
    """The check before the app does not wait for a writer: the app waits, and says so, itself."""
    hold = ("import sys, time\nfrom corpus.lock import CorpusLock\nwith CorpusLock(sys.argv[1], exclusive=True, "
            "purpose='test holder'):\n    print('held', flush=True)\n    time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(corpus_dir)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(hostile.OpenedApp):
            hostile.run_in_process("trb-review", [str(corpus_dir)], {}, seconds=20)
    finally:
        holder.kill()
        holder.wait()
