"""Every test that starts a real part carries its marker, and the tiers the Makefile runs are the ones defined in
tests/markers.py (a test file that starts Label Studio without the marker fails the suite)."""

from __future__ import annotations

import ast
import re
import textwrap

import pytest

from markers import DIRECT_STARTS, FAST, FIXTURE_MARKERS, INTEGRATION, MARKERS
from tests_paths import ROOT

TEST_FILES = sorted((ROOT / "tests").rglob("test_*.py"))
#: Files that define the fixtures or helpers which start the parts (not tests themselves).
#: Options of the in-process runs below: the snapshot plugin keeps one temp folder per process, which an inner
#: session's end would remove under the outer one.
INNER = ("-p", "no:textual-snapshot")
HELPERS = {"ls_server.py", "llama_server.py", "browser.py", "markers.py", "shared.py", "test_markers.py"}


def _file_markers(path) -> set[str]:
    """The markers a test file names anywhere (module ``pytestmark``, a decorator or a ``pytest.param``)."""
    return set(re.findall(r"pytest\.mark\.([a-z_0-9]+)", path.read_text(encoding="utf-8")))


def _code(path) -> str:
    """The file's source without its docstrings and comments (a docstring may name what it does not call)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(
                getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            body[0] = ast.Pass()
    return ast.unparse(tree)


@pytest.mark.parametrize("path", [p for p in TEST_FILES if p.name not in HELPERS], ids=lambda p: p.name)
def test_a_file_that_starts_a_real_part_directly_carries_its_marker(path):
    code, have = _code(path), _file_markers(path)
    missing = sorted({marker for call, marker in DIRECT_STARTS.items() if re.search(call, code)} - have)
    assert not missing, f"{path.relative_to(ROOT)} starts a real part without @pytest.mark.{missing}"


def test_every_marker_a_test_names_is_registered():
    """--strict-markers refuses an unknown one at collection; this names the file."""
    builtin = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings", "timeout"}
    for path in TEST_FILES:
        unknown = _file_markers(path) - set(MARKERS) - builtin
        assert not unknown, f"{path.relative_to(ROOT)} names unregistered markers {sorted(unknown)}"


def test_the_makefile_tiers_are_the_ones_defined_here():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert f'FAST_TESTS := {FAST}' in makefile
    assert f'INTEGRATION_TESTS := {INTEGRATION}' in makefile
    assert "--strict-markers" in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_a_test_using_label_studio_without_its_marker_fails_collection(pytester):
    """The guard itself: a test file that starts Label Studio (through ``ls_server``) unmarked fails the run."""
    pytester.syspathinsert(ROOT / "tests")
    pytester.makeconftest('pytest_plugins = ["markers"]\n'
                          "import pytest\n\n"
                          "@pytest.fixture\ndef ls_server():\n    raise AssertionError('never started')\n")
    pytester.makepyfile(test_unmarked=textwrap.dedent("""
        def test_pushes(ls_server):
            pass
    """), test_marked=textwrap.dedent("""
        import pytest
        pytestmark = pytest.mark.label_studio
        def test_pushes(ls_server):
            pass
    """))
    result = pytester.runpytest("--collect-only", "-q", "--strict-markers", *INNER)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    named = [ln.strip() for ln in result.errlines + result.outlines if "needs @pytest.mark" in ln]
    assert named == ["test_unmarked.py::test_pushes: needs @pytest.mark.label_studio"]


def test_a_postgresql_back_end_carries_its_marker(pytester):
    """``ls_server``'s PostgreSQL variants carry ``postgresql`` on their parameter; SQLite ones do not."""
    pytester.syspathinsert(ROOT / "tests")
    pytester.makeconftest('pytest_plugins = ["markers", "ls_server"]\n')
    pytester.makepyfile(test_ls=textwrap.dedent("""
        import pytest
        pytestmark = pytest.mark.label_studio
        def test_pushes(ls_server):
            pass
    """))
    result = pytester.runpytest("--collect-only", "-q", "-m", "postgresql", "--strict-markers", *INNER)
    assert result.ret == pytest.ExitCode.OK
    assert [ln for ln in result.outlines if "::" in ln] == ["test_ls.py::test_pushes[postgresql]"]


def test_every_fixture_that_starts_a_part_exists():
    """The guard names fixtures the suite defines (a renamed fixture would silently escape it)."""
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py"))
    for name in FIXTURE_MARKERS:
        assert re.search(rf"def {name}\(", sources), f"no fixture named {name}"
