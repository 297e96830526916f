"""The toolkit works from its wheel: every file ships, and the console scripts run from a fresh venv outside the checkout."""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from wheelenv import ROOT, fresh_venv, run_in, site_packages

# builds the wheel and installs it into fresh virtual environments
pytestmark = pytest.mark.e2e

#: The project's top-level packages (pyproject.toml's [tool.setuptools.packages.find] include).
PACKAGES = ["schemas", "toolkit", "corpus", "simworld", "annotate", "trb", "tui", "pipeline", "collect", "environments"]
SCRIPTS = ["trb-corpus", "trb", "trb-annotate", "trb-review", "trb-demo", "trb-collect"]


def _checkout_files() -> set[str]:
    """Every file of the packages in the checkout (git's tracked and not-ignored ones when git can list them)."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard",
                              "--", *PACKAGES], capture_output=True, text=True, check=True, timeout=60).stdout
        return {f for f in out.splitlines() if (ROOT / f).is_file()}
    except (OSError, subprocess.SubprocessError):
        return {p.relative_to(ROOT).as_posix() for pkg in PACKAGES for p in (ROOT / pkg).rglob("*")
                if p.is_file() and "__pycache__" not in p.parts}


def test_the_wheel_holds_every_file_of_the_packages(trb_wheel):
    """Code and the data read at run time (schemas, label configs, datasheet template, examples) all ship."""
    with zipfile.ZipFile(trb_wheel) as whl:
        names = set(whl.namelist())
        entry_points = whl.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    missing = sorted(_checkout_files() - names)
    assert not missing, f"not in the wheel (add a package-data glob in pyproject.toml): {missing}"
    for data in ("corpus/templates/DATASHEET.md", "corpus/examples/7f3a/7f3a.jsonl", "corpus/examples/7f3a/README.md",
                 "schemas/session.schema.json", "annotate/configs/attribution.xml",
                 "annotate/instructions/attribution.html", "collect/studies/pilot-grid.toml",
                 "environments/tasksets/grid-rollouts-v1.toml"):
        assert data in names
    outside = sorted(n for n in names if n.split("/")[0] not in PACKAGES and ".dist-info/" not in n)
    assert not outside, f"the wheel ships files outside the packages: {outside}"
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    groups = dict(re.findall(r"^\[([^\]]+)\]\n((?:.+\n?)+)", entry_points, re.M))
    assert set(re.findall(r"^([a-z-]+) = ", groups["console_scripts"], re.M)) == set(SCRIPTS)
    # the built-in adapters are registered through the same entry-point group a lab's package uses
    assert set(re.findall(r"^([a-z-]+) = ", groups["trb.adapters"], re.M)) == {"native", "proxy", "served"}
    assert set(re.findall(r"^([a-z-]+) = ", groups["trb.environments"], re.M)) == {"grid"}
    assert set(re.findall(r"^([a-z-]+) = ", groups["trb.importers"], re.M)) == {"mcq", "inspect"}


def test_the_installed_wheel_runs_from_outside_the_checkout(trb_wheel, tmp_path):
    """validate the packaged example, cut a smoke release, calibrate: the venv's own copy, in a cwd outside the checkout."""
    assert not tmp_path.resolve().is_relative_to(ROOT)
    bin_dir = fresh_venv(tmp_path / "venv", [trb_wheel])
    site = site_packages(bin_dir).resolve()
    work = tmp_path / "work"
    work.mkdir()
    env = {"TRB_CORPUS": str(work / "no-corpus-here")}

    def run(*args, **kw) -> subprocess.CompletedProcess:
        return run_in(bin_dir, args, cwd=work, env=env, **kw)

    code = ("import importlib, json; from corpus.examples import example_path; from corpus.release import TEMPLATE; "
            "from annotate.tasks import label_config; from schemas import load_schema; "
            f"files = {{p: importlib.import_module(p).__file__ for p in {PACKAGES!r}}}; "
            "files['example'] = str(example_path('7f3a')); files['template'] = str(TEMPLATE); "
            "assert label_config('attribution') and load_schema('session'); print(json.dumps(files))")
    files = json.loads(run("python", "-c", code).stdout)
    for what, path in files.items():
        assert Path(path).resolve().is_relative_to(site), f"{what} is not the installed copy: {path}"
        assert not Path(path).resolve().is_relative_to(ROOT), f"{what} comes from the checkout: {path}"

    for script in SCRIPTS:
        assert "Usage:" in run(script, "--help").stdout, script

    assert run("trb-corpus", "examples").stdout == f"7f3a\t{files['example']}\n"
    example = run("trb-corpus", "examples", "7f3a").stdout.strip()
    assert example == files["example"]
    assert "25 record(s)" in run("trb-corpus", "validate", "-q", example).stderr

    run("trb-corpus", "init", "c")
    run("trb-corpus", "simulate", "--sessions", "30", "--seed", "1", "-o", "sim.jsonl", "-q")
    run("trb-corpus", "ingest", "--corpus", "c", "-q", "sim.jsonl", example)
    released = run("trb-corpus", "release", "--corpus", "c", "--version", "0.1.0", "--kind", "smoke", "-q")
    sha = released.stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{64}", sha) and "SMOKE TEST" in released.stderr
    release = work / "c" / "releases" / "0.1.0"
    datasheet = (release / "DATASHEET.md").read_text(encoding="utf-8")
    assert "{{" not in datasheet and "# Datasheet: TRB corpus release 0.1.0" in datasheet
    assert sha in run("trb-corpus", "verify", release).stderr

    study = Path(files["collect"]).parent / "studies" / "pilot-grid.toml"  # the example study ships too
    assert "study pilot-grid" in run("trb-collect", "check", study).stdout

    calibrated = run("trb", "calibrate")
    assert "calibration passed" in calibrated.stdout
