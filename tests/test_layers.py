"""Dependencies point one way (DESIGN.md, "Layout"): toolkit/ (the shared runtime) imports no other package;
schemas/ (the contract) only toolkit/; trb/ never imports corpus/; no package imports tui/. Read from every import
statement of every module, at its top or inside a function."""

from __future__ import annotations

import ast

import pytest

from tests_paths import ROOT

#: package -> the packages of the toolkit it may import
ALLOWED = {
    "toolkit": set(),
    "schemas": {"toolkit"},
    "simworld": {"toolkit", "schemas"},
    "environments": {"toolkit", "schemas", "simworld"},
    "corpus": {"toolkit", "schemas", "simworld", "environments"},
    "trb": {"toolkit", "schemas", "simworld", "environments"},
    "annotate": {"toolkit", "schemas", "corpus"},
    "collect": {"toolkit", "schemas", "simworld", "environments", "corpus"},
    "tui": {"toolkit", "schemas", "corpus", "annotate", "trb"},
    "pipeline": {"toolkit", "schemas", "simworld", "environments", "corpus", "trb"},
}


def imported_packages(package: str, root=ROOT) -> dict[str, set[str]]:
    """Each toolkit package ``package``'s modules import (other than itself) -> the modules that import it."""
    out: dict[str, set[str]] = {}
    for path in sorted((root / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in ALLOWED and top != package:
                    out.setdefault(top, set()).add(path.relative_to(root).as_posix())
    return out


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_a_package_imports_only_the_layers_below_it(package):
    bad = {p: sorted(m) for p, m in imported_packages(package).items() if p not in ALLOWED[package]}
    assert bad == {}, f"{package} imports {bad}"


def test_the_rule_catches_an_upward_import(tmp_path):
    (tmp_path / "toolkit").mkdir()
    (tmp_path / "toolkit" / "x.py").write_text("def f():\n    from trb.report import build_report\n")
    assert imported_packages("toolkit", tmp_path) == {"trb": {"toolkit/x.py"}}
