"""Versions are read once (schemas.versions): the toolkit's from its distribution, agreeing with pyproject.toml."""

from __future__ import annotations

import importlib
import re
import tomllib
from importlib import metadata

import pytest
from click.testing import CliRunner

from schemas import versions
from schemas.versions import DISTRIBUTION, TOOLKIT_VERSION
from tests_paths import ROOT

#: Modules another change still moves onto schemas.versions; empty this set when it lands.
_PENDING: set[str] = set()


def test_pyproject_metadata_and_toolkit_version_agree():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION
    assert project["version"] == metadata.version(DISTRIBUTION) == TOOLKIT_VERSION


def test_a_bare_checkout_reads_the_version_from_pyproject(monkeypatch):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(versions.metadata, "version", not_installed)
    assert versions._toolkit_version() == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert versions._pyproject_version(ROOT / "no-such-pyproject.toml") is None


def test_schemas_reexports_the_same_versions():
    import schemas

    assert schemas.TRB_VERSION is versions.TRB_VERSION and schemas.SCHEMA_VERSION is versions.SCHEMA_VERSION


@pytest.mark.parametrize("module, prog", [("corpus.cli", "trb-corpus"), ("annotate.cli", "trb-annotate"),
                                          ("tui.cli", "trb-review")])
def test_every_cli_reports_the_toolkit_version(module, prog):
    result = CliRunner().invoke(importlib.import_module(module).cli, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"{prog}, version {TOOLKIT_VERSION}"


def test_no_module_hard_codes_the_toolkit_version():
    offenders = []
    for package in ("schemas", "toolkit", "corpus", "annotate", "tui", "trb", "pipeline", "simworld"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            text = path.read_text(encoding="utf-8")
            if rel not in _PENDING and re.search(r"TOOLKIT_VERSION\s*=\s*['\"]|version_option\(\s*['\"]", text):
                offenders.append(rel)
    assert offenders == []
