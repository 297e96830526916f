"""The documentation site builds without a warning, its CLI reference is what the commands say now, and each
extension point's example (docs/examples/) runs end to end, registered the way a lab's package registers it."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from docs_pages import DOCS, docs_text
from tests_paths import ROOT

EXAMPLES = DOCS / "examples"


def _gen_cli():
    spec = importlib.util.spec_from_file_location("gen_cli", DOCS / "gen_cli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the site ---------------------------------------------------------------------------------------------------


def test_mkdocs_build_strict_passes(tmp_path):
    """Every warning (a broken link or anchor, a page missing from the nav) fails the build."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], capture_output=True, text=True, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()


def test_the_cli_reference_is_what_the_commands_say_now():
    # rendered in a fresh interpreter: click caches a command's help option the first time a context asks for it,
    # so a command another test in this process already invoked could render its help differently
    r = subprocess.run([sys.executable, str(DOCS / "gen_cli.py"), "--check"], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 0, f"docs/reference/cli.md is out of date: run python docs/gen_cli.py\n{r.stdout}{r.stderr}"
    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    assert page.startswith("# Command-line reference") and "trb run" in page


def test_the_cli_reference_covers_every_console_script_and_command():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    gen = _gen_cli()
    assert {name: ref.replace(":cli", ":main") for name, ref in gen.COMMANDS.items()} == scripts
    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    from annotate.cli import cli as annotate
    from collect.cli import cli as collect
    from corpus.cli import cli as corpus
    from trb.cli import cli as trb

    for prog, group in (("trb", trb), ("trb-corpus", corpus), ("trb-annotate", annotate), ("trb-collect", collect)):
        for name in group.commands:
            assert f"`{prog} {name}`" in page, f"{prog} {name} is not in the CLI reference"
            assert f"Usage: {prog} {name} " in page
    for prog in ("trb-review", "trb-demo"):
        assert f"## `{prog}`" in page and f"Usage: {prog} " in page


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "examples" not in p.parts}
    assert pages and all(p in nav for p in pages), sorted(p for p in pages if p not in nav)


def test_the_docs_quote_no_hand_typed_demo_table():
    """The demo's figures are the reader's to produce (make demo): no page carries a baseline table of them."""
    text = docs_text()
    assert not re.search(r"^\| instruct-base \| \d", text, re.M)
    assert "Δgov on eval = " not in text


# -- the extension points' examples ------------------------------------------------------------------------------


def _installed(example: Path, site: Path) -> dict:
    """The environment of a process in which the example package is installed: its modules on the path and its
    entry points (read from its own pyproject.toml) in a dist-info, as pip would leave them."""
    project = tomllib.loads((example / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    lines = [line for group, eps in project["entry-points"].items()
             for line in (f"[{group}]", *(f"{k} = {v}" for k, v in eps.items()), "")]
    (info / "entry_points.txt").write_text("\n".join(lines))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(example), str(ROOT)])
    return env


def _run(args, env, cwd=ROOT):
    done = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    from corpus import Corpus, ingest, init_corpus
    from corpus.release import cut_release
    from corpus.simulate import write_simulation

    tmp = tmp_path_factory.mktemp("docs-rel")
    write_simulation(tmp / "sim.jsonl", n_sessions=120, seed=4, progress=False)
    c = Corpus(init_corpus(tmp / "corpus"))
    ingest(c, [tmp / "sim.jsonl"], progress=False)
    return Path(cut_release(c, "0.1.0", kind="smoke", progress=False).directory)


def test_the_adapter_example_is_found_by_trb_and_runs(release, tmp_path):
    env = _installed(EXAMPLES / "adapter", tmp_path / "site")
    code, out, err = _run(["-m", "trb.cli", "adapters"], env)
    assert code == 0 and "my-model" in out and "my-lab-adapter 0.1.0" in out, out + err
    results = tmp_path / "results.duckdb"
    code, out, err = _run(["-m", "trb.cli", "run", "--release", release, "--adapter", "my-model", "--model", "ckpt",
                           "--revision", "r7", "--baseline", "my-model", "--tracks", "1,3", "--results", results,
                           "-q"], env)
    assert code == 0, err
    code, out, err = _run(["-m", "trb.cli", "query", "SELECT adapter_spec FROM runs", "--results", results, "--json"],
                          env)
    assert code == 0 and '"revision": "r7"' in out.replace('":"', '": "'), out + err
    code, out, err = _run([EXAMPLES / "adapter" / "run_my_adapter.py", release, tmp_path / "r2.duckdb"], env)
    assert code == 0, err
    assert re.fullmatch(r"[0-9a-f]{32}", out.strip().splitlines()[-1]), out


def test_the_importer_example_is_found_by_trb_corpus_and_ingests(tmp_path):
    env = _installed(EXAMPLES / "importer", tmp_path / "site")
    corpus = tmp_path / "corpus"
    assert _run(["-m", "corpus.cli", "init", corpus], env)[0] == 0
    answers = tmp_path / "answers.txt"
    answers.write_text("left, then up\nwait\n", encoding="utf-8")
    code, out, err = _run(["-m", "corpus.cli", "import", "lines", "--corpus", corpus, "--model", "m1", "-q",
                           answers], env)
    assert code == 0 and "ingested: 2 record(s)" in err, err
    code, out, err = _run(["-m", "corpus.cli", "stats", "--corpus", corpus, "--json"], env)
    assert code == 0 and '"model_rollout": 2' in out.replace('":2', '": 2'), out
    answers.write_text("one\n\n", encoding="utf-8")
    code, out, err = _run(["-m", "corpus.cli", "import", "lines", "--corpus", corpus, "-q", answers], env)
    assert code == 1 and f"{answers}:2: /: an empty line is not an answer" in err, err


def test_the_environment_example_is_found_by_name_and_runs_a_study_check_and_an_episode(tmp_path):
    example = EXAMPLES / "environment"
    env = _installed(example, tmp_path / "site")
    code, out, err = _run(["-m", "collect.cli", "check", example / "corridor-study.toml"], env)
    assert code == 0, out + err
    play = ("from environments import Environment, get_environment\n"
            "env = get_environment('corridor')\n"
            "assert isinstance(env, Environment)\n"
            "task = {'start': 'c1', 'goal': 'c5', 'length': 7, 'budget': 8}\n"
            "assert env.check_task(task) == [] and env.check_task({**task, 'length': 1})\n"
            "ep = env.start(task, goal='c5', seed=0, language='en')\n"
            "while not ep.done:\n"
            "    ep.step(ep.toward(['c5'])[0])\n"
            "print(ep.target_reached, ep.observation_data['cell'])\n")
    code, out, err = _run(["-c", play], env)
    assert code == 0 and out.split() == ["True", "c5"], out + err


def test_the_track_example_registers_runs_and_reports(release, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(EXAMPLES / "track"), str(ROOT)]))
    code, out, err = _run([EXAMPLES / "track" / "run_imitation.py", release, tmp_path / "results.duckdb"], env)
    assert code == 0, err
    assert "| Track 90 — imitation [95% CI] |" in out and "## Track 90 — imitation" in out
    assert re.search(r"^\| uniform \| eval \|", out, re.M), out


def test_each_extension_page_shows_its_example_file():
    for page, example in (("track", "track/imitation_track.py"), ("adapter", "adapter/my_lab_adapter/__init__.py"),
                          ("environment", "environment/corridor_env/__init__.py"),
                          ("importer", "importer/lab_lines_importer/__init__.py")):
        text = (DOCS / "extending" / f"{page}.md").read_text(encoding="utf-8")
        assert f'--8<-- "docs/examples/{example}"' in text, page
    # the runner's example is the third-party package tests/trb/test_extension_plugins.py installs and runs
    runner = (DOCS / "extending" / "runner.md").read_text(encoding="utf-8")
    for f in ("pyproject.toml", "trb_toy_extensions/runner.py"):
        assert f'--8<-- "tests/plugins/trb-toy-extensions/{f}"' in runner, f
