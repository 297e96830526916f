"""Hostile inputs for every TRB command line: what ``tests/test_no_traceback.py`` runs, and
``bench/hardening_probe.py`` counts before and after.

A *case* is one command line with one hostile thing in it. The hostile things are built in a scratch directory:

* **contents** (:data:`CONTENTS`): an empty file, binary junk, truncated JSON, JSONL, TOML, parquet and DuckDB,
  JSON with NaN, a 3 MB line;
* **shapes** (:data:`SHAPES`): a path that does not exist, a directory where a file is expected, a path through a
  file (``file/inside``), an unreadable file (``chmod 000``; not a refusal for root, so that row is skipped there),
  a FIFO (fed junk by :class:`FifoFeeder` so that a reader never waits forever);
* **slots** (:data:`SLOTS`): where an argument puts the thing: the argument itself (``file``), or the file a
  directory argument is read through (``corpus.duckdb`` of a corpus, ``manifest.json`` of a release,
  ``config.json`` of a model directory), each directory argument also a file, a path through a file, missing.

:data:`TABLE` gives every command (``prog`` and subcommand path, as :func:`commands` enumerates them from the click
groups) its command lines, each with one ``{slot}`` placeholder; a command with no path argument gets option values
or an environment that is hostile (``TRB_MODELS_DIR`` through a file, an example name with ``..``).
:data:`SERVER_TABLE` is the Label Studio commands against a local server that answers HTML, nothing, or JSON that is
not Label Studio's (:class:`WrongServer`).
"""

from __future__ import annotations

import json
import os
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from answer_server import AnswerServer

#: The six command lines: prog -> (module, the click object, main).
PROGS = {
    "trb-corpus": "corpus.cli",
    "trb": "trb.cli",
    "trb-annotate": "annotate.cli",
    "trb-review": "tui.cli",
    "trb-demo": "pipeline.cli",
    "trb-collect": "collect.cli",
}


def commands() -> list[str]:
    """Every runnable command, ``"prog sub sub"``, read from the click groups (a new command is listed here)."""
    import importlib

    import click

    out: list[str] = []

    def walk(name: str, cmd: click.Command) -> None:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd, info_name=name)
            if cmd.invoke_without_command:
                out.append(name)
            for sub in cmd.list_commands(ctx):
                walk(f"{name} {sub}", cmd.get_command(ctx, sub))
        else:
            out.append(name)

    for prog, module in PROGS.items():
        walk(prog, importlib.import_module(module).cli)
    return out


def main_of(prog: str) -> Callable[[list[str]], int]:
    import importlib

    return importlib.import_module(PROGS[prog]).main


# -- the hostile things ---------------------------------------------------------------------------------------------

def _junk() -> bytes:
    return random.Random(41).randbytes(4096)


def _parquet(scratch: Path) -> bytes:
    import duckdb

    p = scratch / "real.parquet"
    if not p.exists():
        duckdb.sql(f"COPY (SELECT range AS i, 'x' || range AS s FROM range(2000)) TO '{p}' (FORMAT parquet)")
    data = p.read_bytes()
    return data[: len(data) // 2]


def _duckdb(scratch: Path) -> bytes:
    import duckdb

    p = scratch / "real.duckdb"
    if not p.exists():
        con = duckdb.connect(str(p))
        con.execute("CREATE TABLE t AS SELECT range AS i FROM range(100000)")
        con.close()
    data = p.read_bytes()
    return data[: len(data) // 3]


#: name -> the bytes (built from the scratch directory for the formats made by a real engine).
CONTENTS: dict[str, Callable[[Path], bytes]] = {
    "empty": lambda s: b"",
    "junk": lambda s: _junk(),
    "truncated-json": lambda s: b'{"format_version": 1, "version": "1.0.0", "files": [{"path": "da',
    "truncated-jsonl": lambda s: (b'{"kind": "transfer_context", "context_id": "c1", "description": "d", '
                                  b'"collector_org": "o"}\n{"kind": "session", "session_id": "s1", "ste'),
    "truncated-toml": lambda s: b'[study]\nid = "pilot\ntitle = ',
    "truncated-parquet": _parquet,
    "truncated-duckdb": _duckdb,
    "nan-json": lambda s: b'{"format_version": NaN, "version": Infinity, "files": []}',
    "huge-line": lambda s: b'{"kind": "session", "session_id": "' + b"a" * (3 << 20) + b'"}\n',
}

#: shapes of a path: name -> build(path) (the path's parent exists).
SHAPES: dict[str, Callable[[Path], Path]] = {}


def _shape(name: str):
    def register(f):
        SHAPES[name] = f
        return f
    return register


@_shape("missing")
def _missing(p: Path) -> Path:
    return p


@_shape("directory")
def _directory(p: Path) -> Path:
    p.mkdir()
    (p / "inside").write_text("a file in a directory given for a file\n")
    return p


@_shape("through-a-file")
def _through(p: Path) -> Path:
    p.write_bytes(b"a file, not a directory\n")
    return p / "inside"


@_shape("unreadable")
def _unreadable(p: Path) -> Path:
    p.write_bytes(b'{"kind": "session"}\n')
    p.chmod(0)
    return p


#: every FIFO made here (what :class:`FifoFeeder` feeds)
FIFOS: list[Path] = []


@_shape("fifo")
def _fifo(p: Path) -> Path:
    os.mkfifo(p)
    FIFOS.append(p)
    return p


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


#: why a shape is not hostile here (so its rows are skipped, saying why).
SKIP_SHAPES = {"unreadable": "running as root: chmod 000 does not stop root reading (the through-a-file rows "
                             "cover an unopenable path)"} if running_as_root() else {}


def hostile_names() -> list[str]:
    return [*CONTENTS, *SHAPES]


def make_hostile(scratch: Path, where: Path, name: str) -> Path:
    """Put hostile thing ``name`` at ``where`` (its parent made); return the path to give."""
    where.parent.mkdir(parents=True, exist_ok=True)
    if name in CONTENTS:
        where.write_bytes(CONTENTS[name](scratch))
        return where
    return SHAPES[name](where)


# -- slots: where an argument puts the thing ------------------------------------------------------------------------

@dataclass(frozen=True)
class Slot:
    """How a command line's ``{slot}`` becomes a hostile path: the argument itself (``inner`` None) or a directory
    whose ``inner`` file is hostile; ``names`` limits the things (default: all)."""

    inner: str | None = None
    names: tuple[str, ...] = ()
    #: extra files a directory needs so that the hostile one is reached (relative path -> bytes)
    beside: dict[str, bytes] = field(default_factory=dict)

    def cases(self) -> list[str]:
        names = list(self.names or hostile_names())
        if self.inner is not None:  # the directory argument itself, hostile: a file, through a file, missing
            names += [f"dir:{n}" for n in ("junk", "through-a-file", "missing", "fifo") if f"dir:{n}" not in names]
        return names

    def build(self, scratch: Path, case_dir: Path, name: str) -> Path:
        if name.startswith("dir:"):
            return make_hostile(scratch, case_dir / "arg", name[4:])
        if self.inner is None:
            return make_hostile(scratch, case_dir / "arg", name)
        d = case_dir / "arg"
        d.mkdir(parents=True)
        for rel, data in self.beside.items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_bytes(data)
        make_hostile(scratch, d / self.inner, name)
        return d


_OUT_NAMES = ("directory", "through-a-file")
SLOTS = {
    "file": Slot(),
    "corpus": Slot("corpus.duckdb"),
    "release": Slot("manifest.json"),
    "model": Slot("config.json", beside={"model.safetensors": b"\0" * 64}),
    "results": Slot(),
    "out": Slot(names=_OUT_NAMES),  # where a file is written
    "outdir": Slot(names=("junk", "through-a-file")),  # where a directory is made
    "env": Slot(names=("junk", "through-a-file", "directory")),  # a directory setting pointing at a bad path
}

#: prog + subcommands -> command lines, each with one {slot}; ``{ok_corpus}`` is a real, empty corpus and
#: ``{ok_release}`` an empty directory. ``env:VAR={slot}`` sets an environment variable instead of an argument.
TABLE: dict[str, list[str]] = {
    "trb-corpus init": ["init {outdir}"],
    "trb-corpus validate": ["validate {file} -q", "validate {ok_file} --corpus {corpus} -q"],
    "trb-corpus ingest": ["ingest {file} --corpus {ok_corpus} -q --wait 0", "ingest {ok_file} --corpus {corpus} -q"],
    "trb-corpus stats": ["stats --corpus {corpus}"],
    "trb-corpus simulate": ["simulate --sessions 3 --seed 1 -o {out} -q"],
    "trb-corpus synth": ["synth --corpus {corpus} --seed 1 -q"],
    "trb-corpus release": ["release --corpus {corpus} --version 1.0.0 --kind smoke -q",
                           "release --corpus {ok_corpus} --version 1.0.0 --kind smoke --datasheet {file} -q",
                           "release --corpus {ok_corpus} --version 1.0.0 --kind smoke --parent {release} -q"],
    "trb-corpus import mcq": ["import mcq {file} -o {ok_out} -q"],
    "trb-corpus import inspect": ["import inspect {file} -o {ok_out} -q"],
    "trb-corpus examples": ["examples ../../{file}", "examples {file} --readme"],
    "trb-corpus verify": ["verify {release}"],
    "trb-corpus releases": ["releases --corpus {corpus}"],
    "trb-corpus publish": ["publish {release} --repo org/name"],
    "trb train-reference": ["train-reference --release {release} --variant ablation -o {ok_outdir} -q"],
    "trb train-baseline": ["train-baseline --release {release} --variant instruct-base -o {ok_outdir} -q"],
    "trb run": ["run --release {release} --adapter native --model {ok_outdir} --baseline x -q",
                "run --results {results} --resume r1 -q",
                "run --release {ok_release} --adapter native --model {ok_outdir} --baseline x --tasks {file} -q"],
    "trb rerun": ["rerun r1 --results {results} -q"],
    "trb conformance": ["conformance --adapter native --model {model} --release {ok_release}"],
    "trb adapters": ["env:TRB_CACHE={env} adapters --json"],
    "trb query": ["query 'SELECT 1' --results {results}"],
    "trb report": ["report --results {results}"],
    "trb calibrate": ["calibrate --sessions 10 --seed {file}"],
    "trb plan": ["plan --results {results}"],
    "trb concepts": ["concepts {model} --release {ok_release}", "concepts {ok_outdir} --release {release}"],
    "trb models fetch": ["models fetch smollm2 --out {outdir}"],
    "trb models list": ["env:TRB_MODELS_DIR={env} models list"],
    "trb-annotate push": ["push --kind attribution --corpus {corpus}"],
    "trb-annotate pull": ["pull --corpus {corpus}"],
    "trb-annotate agreement": ["agreement --corpus {corpus}"],
    "trb-annotate adjudicate": ["adjudicate --corpus {corpus}"],
    "trb-annotate status": ["status --corpus {corpus}"],
    "trb-review": ["{corpus}", "{ok_corpus} --results {results}"],
    "trb-demo": ["--workdir {outdir} -q"],
    "trb-collect check": ["check {file}"],
    "trb-collect run": ["run {file} --corpus {ok_corpus}", "run {ok_study} --corpus {corpus}"],
    "trb-collect serve": ["serve {file} --corpus {ok_corpus}", "serve {ok_study} --corpus {corpus}"],
    "trb-collect drafts": ["drafts --corpus {corpus}"],
    "trb-collect drafts discard": ["drafts --corpus {corpus} discard d1"],
    "trb-collect drafts resume": ["drafts --corpus {corpus} resume d1"],
}


@dataclass(frozen=True)
class Case:
    """One hostile command line: ``command`` (prog and subcommands), the line's template, the thing and its slot."""

    command: str
    template: str
    slot: str
    thing: str

    @property
    def prog(self) -> str:
        return self.command.split()[0]

    @property
    def id(self) -> str:
        t = self.template.replace(" -q", "").replace("{", "").replace("}", "")
        return f"{self.prog}|{t}|{self.thing}"


def _slot_of(template: str) -> str:
    import re

    found = [s for s in re.findall(r"\{(\w+)\}", template) if s in SLOTS]
    assert len(found) == 1, f"{template!r}: one hostile slot, not {found}"
    return found[0]


def cases(table: dict[str, list[str]] | None = None) -> Iterator[Case]:
    for command, templates in (TABLE if table is None else table).items():
        for template in templates:
            slot = _slot_of(template)
            for thing in SLOTS[slot].cases():
                yield Case(command, template, slot, thing)


class FifoFeeder:
    """While open, feeds junk to any reader of the FIFOs under ``root`` (so that a command reading one never waits
    forever, and reads what a process substitution could give it) and drains any writer."""

    def __init__(self, root: Path):
        self.root = root
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> FifoFeeder:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)

    def _fifos(self) -> list[Path]:
        return [p for p in list(FIFOS) if p.is_relative_to(self.root)]

    def _run(self) -> None:
        junk = _junk()[:512]
        while not self._stop.wait(0.02):
            for p in self._fifos():
                try:  # a reader is waiting when a non-blocking writer can open
                    fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)
                except OSError:
                    continue
                try:
                    os.write(fd, junk)
                except OSError:
                    pass
                finally:
                    os.close(fd)


def build_case(case: Case, scratch: Path, case_dir: Path, fixtures: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of ``case``, its hostile thing built under ``case_dir``."""
    import shlex

    path = SLOTS[case.slot].build(scratch, case_dir, case.thing)
    values = {**fixtures, case.slot: str(path)}
    env: dict[str, str] = {}
    argv = []
    for word in shlex.split(case.template):
        word = word.format(**values)
        if word.startswith("env:"):
            k, v = word[4:].split("=", 1)
            env[k] = v
        else:
            argv.append(word)
    return argv, env


def base_fixtures(scratch: Path) -> dict[str, str]:
    """The good parts of the command lines: an empty corpus, a valid study, an empty release directory..."""
    from corpus.store import init_corpus

    ok = scratch / "ok"
    ok.mkdir(parents=True, exist_ok=True)
    corpus = ok / "corpus"
    if not corpus.exists():
        init_corpus(corpus)
    study = Path(__file__).resolve().parents[1] / "collect" / "studies" / "pilot-grid.toml"
    (ok / "release").mkdir(exist_ok=True)
    (ok / "records.jsonl").write_text(json.dumps({"kind": "transfer_context", "context_id": "c1",
                                                  "description": "d", "collector_org": "o"}) + "\n")
    return {"ok_corpus": str(corpus), "ok_study": str(study), "ok_release": str(ok / "release"),
            "ok_file": str(ok / "records.jsonl"), "ok_out": str(ok / "out.jsonl"), "ok_outdir": str(ok / "model-dir")}


# -- a Label Studio that answers the wrong thing --------------------------------------------------------------------

#: how the server answers every request: (status, content type, body)
ANSWERS = {
    "html": (200, "text/html", b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>"),
    "empty": (200, "application/json", b""),
    "wrong-json": (200, "application/json", json.dumps({"detail": "ok", "items": [1, 2]}).encode()),
    "json-list": (200, "application/json", b"[1, 2, 3]"),
    "error-html-500": (500, "text/html", b"<html><body>Internal Server Error</body></html>"),
    "truncated-json": (200, "application/json", b'{"results": [{"id": 1, "ti'),
}

SERVER_TABLE = {
    "trb-annotate push": ["push --kind attribution --corpus {ok_corpus} -q --wait 0"],
    "trb-annotate pull": ["pull --corpus {ok_corpus} -q --wait 0"],
    "trb-annotate status": ["status"],
}


def WrongServer(answer: str) -> AnswerServer:  # noqa: N802 - used as a class: ``with WrongServer(answer) as srv``
    """A loopback server (:class:`answer_server.AnswerServer`) that answers every request with :data:`ANSWERS`\\
    [answer]."""
    status, ctype, body = ANSWERS[answer]
    return AnswerServer(default=(status, ctype, body.decode()))


class Hung(BaseException):
    """A command ran past its time on a hostile input (a BaseException: ``run_cli`` must not render it)."""


class OpenedApp(BaseException):
    """A command opened its Textual app on a hostile input instead of refusing it first."""


def _refuse_to_open(app, *a, **kw):
    raise OpenedApp(f"{type(app).__name__} was opened on a hostile input instead of refusing it with one line")


def run_in_process(prog: str, argv: list[str], env: dict[str, str], seconds: float = 60.0) -> tuple[int, str, str]:
    """Run ``prog``'s ``main(argv)`` here, with ``env`` set for the call: (exit code, stdout, stderr).

    Raises:
        Hung: it ran longer than ``seconds`` (a SIGALRM stops it).
    """
    import contextlib
    import io
    import signal

    def alarm(*_):
        raise Hung(f"{prog} {' '.join(argv)} ran past {seconds} s")

    old_env = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    out, err = io.StringIO(), io.StringIO()
    from textual.app import App

    run_app = App.run
    App.run = _refuse_to_open  # an app opened here would take the terminal: opening it is the failure
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main_of(prog)(argv)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        App.run = run_app
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return code, out.getvalue(), err.getvalue()


def broken(code: int, out: str, err: str) -> str | None:
    """What is wrong with an answer to a hostile input (a traceback, exit 70, exit 0), or None."""
    if "Traceback" in out + err:
        return "a traceback"
    if code == 70:
        return "exit 70 (internal error)"
    return None
