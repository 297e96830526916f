"""The headless core stays headless, and the documentation (docs/) keeps step with the CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from docs_pages import docs_text
from tests_paths import ROOT

HEADLESS = ["schemas", "schemas.models", "schemas.rules", "corpus.cli", "corpus.ingest", "corpus.stats",
            "corpus.simulate", "corpus.release", "simworld", "trb.run", "trb.report", "trb.results", "trb.stats",
            "trb.beliefs", "trb.calibrate", "trb.tracks", "trb.releases", "trb.cli",
            "annotate.cli", "annotate.push", "annotate.pull", "annotate.agreement", "annotate.adjudicate",
            "annotate.status", "collect.cli", "collect.study", "collect.recorder", "environments", "environments.grid"]
def _modules(package: str) -> list[str]:
    """Every module of ``package`` in the checkout, by file."""
    base = ROOT / package
    out = []
    for path in sorted(base.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append(".".join(parts))
    return out


#: The eval engine reads releases, never the corpus store: no trb module imports corpus (the demo lives in pipeline).
ENGINE = _modules("trb")


#: What every module checked here may load: the third-party libraries they share and the published contract
#: (``schemas``, which every package imports). The import server (below) loads these once, so each check pays only
#: for a module's own imports; none of them loads a forbidden package (the server checks that first, and fails).
PRELOADED = ["numpy", "scipy.stats", "duckdb", "pyarrow", "pyarrow.parquet", "pyarrow.compute", "pydantic", "click",
             "orjson", "msgspec", "tqdm", "httpx", "filelock", "jsonschema", "zoneinfo", "tomllib", "gzip",
             "multiprocessing", "concurrent.futures", "schemas", "schemas.models", "schemas.rules", "toolkit.errors"]
FORBIDDEN = ("textual", "torch", "label_studio_sdk", "corpus")

_IMPORT_SERVER = r"""
import importlib, json, os, sys
modules, preload, forbidden = json.loads(sys.stdin.read())
def loaded():
    return sorted({m.split('.')[0] for m in sys.modules} & set(forbidden))
for m in preload:
    try:
        importlib.import_module(m)
    except ImportError:
        pass
if loaded():
    sys.exit(f"preloading {preload} loads {loaded()}")
out = {}
for module in modules:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # a fresh child per module: its imports are the only ones it adds
        os.close(r)
        try:
            importlib.import_module(module)
            msg = {"loaded": loaded()}
        except BaseException as e:
            msg = {"error": f"{type(e).__name__}: {e}"}
        os.write(w, json.dumps(msg).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out[module] = json.loads(f.read() or b'{"error": "the child died"}')
    os.waitpid(pid, 0)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def imported_alone():
    """For each module checked here: the forbidden packages loaded by importing it alone, in a fresh interpreter.

    One interpreter per module cost 1-2 s each (88 of them); here one interpreter loads :data:`PRELOADED` and
    forks a fresh child per module, which imports that module and reports what it loaded."""
    modules = sorted(set(HEADLESS) | set(ENGINE) | set(REVIEW_HEADLESS))
    r = subprocess.run([sys.executable, "-c", _IMPORT_SERVER], input=json.dumps([modules, PRELOADED, FORBIDDEN]),
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _loaded(imported_alone, module, packages) -> list[str]:
    got = imported_alone[module]
    assert "error" not in got, f"importing {module}: {got.get('error')}"
    return [p for p in got["loaded"] if p in packages]


@pytest.mark.parametrize("module", HEADLESS)
def test_headless_modules_never_load_textual_or_torch(module, imported_alone):
    bad = _loaded(imported_alone, module, ("textual", "torch", "label_studio_sdk"))
    assert bad == [], f"{module} loads {bad}"


def test_the_import_server_sees_what_a_module_loads(imported_alone):
    """The check can fail: a module that does load textual (the review app) is reported as loading it."""
    r = subprocess.run([sys.executable, "-c", _IMPORT_SERVER], input=json.dumps([["tui.app"], PRELOADED, FORBIDDEN]),
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "textual" in json.loads(r.stdout.strip().splitlines()[-1])["tui.app"]["loaded"]


def test_no_trb_module_names_the_corpus_in_its_source():
    """Not even a lazy import inside a function: the engine reads releases only (DESIGN.md)."""
    assert len(ENGINE) > 20
    for module in ENGINE:
        path = ROOT / (module.replace(".", "/") + ".py")
        if not path.is_file():
            path = ROOT / module.replace(".", "/") / "__init__.py"
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import)\s+(corpus|annotate|tui|pipeline)\b", text, re.M), \
            f"{module} imports a package the engine must not use"


@pytest.mark.parametrize("module", ENGINE)
def test_the_eval_engine_never_imports_the_corpus(module, imported_alone):
    bad = _loaded(imported_alone, module, ("corpus", "textual"))
    assert bad == [], f"{module} loads {bad}"


def test_environments_do_not_depend_on_the_corpus():
    """The engine will roll models forward in them, and the engine never loads the corpus."""
    code = ("import sys, environments; environments.get_environment('grid'); "
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('corpus', 'textual'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == ""


def test_simworld_does_not_depend_on_the_corpus():
    code = "import sys, simworld; print(','.join(sorted(m for m in sys.modules if m.split('.')[0] == 'corpus')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == ""


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    from corpus.cli import cli

    return sorted(cli.commands)


def test_every_command_is_documented_in_the_docs():
    docs = docs_text()
    for name in _commands():
        assert f"`trb-corpus {name}" in docs, f"trb-corpus {name} is not in docs/"


def test_every_command_the_docs_name_exists():
    named = set(re.findall(r"trb-corpus ([a-z][a-z-]+)", docs_text() + _readme()))
    assert named, "the docs name no trb-corpus command"
    assert named <= set(_commands()), f"the docs name commands that do not exist: {named - set(_commands())}"


def test_readme_quick_start_is_two_make_commands_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Quick start", 1)[1].split("```", 2)[1]
    cmds = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert cmds == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "torch==2.13.0" in makefile.split("-e '.[dev]'")[0], "torch must be installed before the project"
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_every_option_in_help_is_in_the_cli_not_invented():
    """Each command's --help renders (a broken option declaration fails here)."""
    from click.testing import CliRunner

    from corpus.cli import cli

    for name in _commands():
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output


def test_every_trb_command_is_documented_in_the_docs():
    from trb.cli import cli

    docs = docs_text()
    for name in cli.commands:
        assert f"`trb {name}" in docs, f"trb {name} is not in docs/"
    named = set(re.findall(r"`trb ([a-z][a-z-]+)", docs + _readme()))
    assert named <= set(cli.commands), f"the docs name trb commands that do not exist: {named - set(cli.commands)}"


def test_every_trb_annotate_command_is_documented_in_the_docs():
    from annotate.cli import cli

    docs = docs_text()
    for name in cli.commands:
        assert f"`trb-annotate {name}" in docs, f"trb-annotate {name} is not in docs/"
    named = set(re.findall(r"`trb-annotate ([a-z][a-z-]+)", docs + _readme()))
    assert named <= set(cli.commands), f"the docs name trb-annotate commands that do not exist: {named - set(cli.commands)}"


def test_every_trb_annotate_command_renders_its_help():
    from click.testing import CliRunner

    from annotate.cli import cli

    for name in cli.commands:
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output


#: The review app's headless parts: the TUI calls them; they never load textual.
REVIEW_HEADLESS = ["corpus.browse", "corpus.review", "corpus.labels", "tui.results_view"]


@pytest.mark.parametrize("module", REVIEW_HEADLESS)
def test_review_headless_modules_never_load_textual(module, imported_alone):
    bad = _loaded(imported_alone, module, ("textual", "torch"))
    assert bad == [], f"{module} loads {bad}"


def test_no_corpus_module_imports_textual_or_tui():
    """Dependencies point one way: tui uses corpus, never the reverse (checked in the source of every module)."""
    for path in sorted((ROOT / "corpus").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import)\s+(textual|tui)\b", text, re.M), f"{path.name} imports textual/tui"


def test_trb_review_is_documented_in_the_docs():
    guide = docs_text("guides/curators.md")
    assert "`trb-review" in guide
    for option in ("--results", "--reviewer", "TRB_REVIEWER"):
        assert option in guide, f"docs/guides/curators.md does not mention {option} of trb-review"
