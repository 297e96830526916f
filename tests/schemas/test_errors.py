"""One error hierarchy, one exit-code table, one renderer (toolkit.errors) shared by every package."""

from __future__ import annotations

import inspect

import click
import pytest

from toolkit.errors import ExitCode, ToolkitError, run_cli

#: Every module that defines typed errors a CLI renders.
ERROR_MODULES = ["corpus.errors", "annotate.errors", "trb.errors", "trb.results"]


def _error_classes():
    import importlib

    for name in ERROR_MODULES:
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == name:
                yield cls


def test_every_typed_error_derives_from_the_shared_base_and_has_a_code_of_the_table():
    classes = list(_error_classes())
    assert {c.__name__ for c in classes} >= {"CorpusError", "CorpusBusy", "VerifyFailed", "AnnotateError",
                                             "MissingSetting", "TrbError", "ReleaseError", "CalibrationFailed",
                                             "ModelError", "ResultsError", "ResultsBusy"}
    for cls in classes:
        assert issubclass(cls, ToolkitError), f"{cls.__module__}.{cls.__name__} is outside the hierarchy"
        assert isinstance(cls.exit_code, ExitCode), cls


def _defined_exceptions():
    """(module, class name) of every class any module of the packages defines with an Error/Exception base."""
    import ast

    from tests_paths import ROOT

    for package in ("schemas", "toolkit", "corpus", "annotate", "trb", "tui", "collect", "pipeline", "environments",
                    "simworld"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and any(
                        (getattr(b, "id", None) or getattr(b, "attr", "")).endswith(("Error", "Exception", "Exit",
                                                                                     "Refused", "Failed", "Busy"))
                        for b in node.bases):
                    module = path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
                    yield module.removesuffix(".__init__"), node.name


def test_every_exception_class_anywhere_is_in_the_one_hierarchy_with_one_usage_error():
    import importlib

    found = list(_defined_exceptions())
    assert len(found) > 40
    outside = []
    for module, name in found:
        cls = getattr(importlib.import_module(module), name)
        if isinstance(cls, type) and issubclass(cls, BaseException) and not issubclass(cls, ToolkitError):
            outside.append(f"{module}.{name}")
    assert outside == []
    assert [m for m, n in found if n == "UsageError"] == ["toolkit.errors"]
    from corpus.errors import UsageError as CorpusUsage
    from toolkit.errors import UsageError
    from trb.errors import UsageError as TrbUsage

    assert CorpusUsage is TrbUsage is UsageError and UsageError.exit_code == ExitCode.USAGE


def test_the_old_names_are_the_one_table():
    from annotate.errors import AnnotateExit
    from corpus.errors import ExitCode as CorpusExit
    from trb.errors import ExitCode as TrbExit

    assert CorpusExit is TrbExit is AnnotateExit is ExitCode


def test_codes_are_disjoint_across_tools():
    from annotate.errors import LabelStudioUnreachable, MissingSetting
    from corpus.errors import CorpusBusy, VerifyFailed
    from trb.errors import AdapterError, CalibrationFailed, ModelError, ReleaseError
    from trb.results import ResultsBusy, ResultsError

    assert CorpusBusy.exit_code == ResultsBusy.exit_code == ExitCode.BUSY == 4
    assert VerifyFailed.exit_code == ReleaseError.exit_code == ExitCode.BAD_RELEASE == 13
    assert (AdapterError.exit_code, ResultsError.exit_code, CalibrationFailed.exit_code, ModelError.exit_code) == \
        (14, 15, 16, 17)
    assert (LabelStudioUnreachable.exit_code, MissingSetting.exit_code) == (8, 9)
    assert len({int(c) for c in ExitCode}) == len(list(ExitCode))


def test_scrub_still_removes_the_key_from_a_message(monkeypatch):
    from annotate.errors import LabelStudioFailed, redact, scrub

    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "tok-1234567890")
    assert LabelStudioFailed("refused tok-1234567890\n  again").message == "refused *** again"
    assert scrub("a  tok-1234567890\nb") == "a *** b"
    assert redact("  a tok-1234567890\n") == "  a ***\n"


class _Busy(ToolkitError):
    exit_code = ExitCode.BUSY


def _command(action):
    @click.command()
    @click.option("--n", type=int, default=0)
    def cmd(n):
        action()

    return cmd


def _run(action, *argv, **kw):
    return run_cli(_command(action), list(argv), "trb-test", **kw)


def _raise(exc):
    def action():
        raise exc

    return action


def test_a_typed_error_is_its_lines_and_its_code(capsys):
    assert _run(_raise(_Busy("held by pid 7; nothing was changed"))) == ExitCode.BUSY
    out, err = capsys.readouterr()
    assert out == "" and err == "held by pid 7; nothing was changed\n"


def test_success_and_help_are_ok(capsys):
    assert _run(lambda: None) == ExitCode.OK
    assert _run(lambda: None, "--help") == ExitCode.OK
    assert "Usage: trb-test" in capsys.readouterr().out


def test_a_bad_command_line_is_usage(capsys):
    assert _run(lambda: None, "--n", "x") == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "Error: Invalid value for '--n'" in err and "Traceback" not in err


def test_ctrl_c_is_130_with_the_tools_own_line(capsys):
    assert _run(_raise(KeyboardInterrupt()), interrupted="interrupted; nothing half-written") == 130
    assert capsys.readouterr().err.strip() == "interrupted; nothing half-written"
    assert _run(_raise(click.Abort())) == ExitCode.INTERRUPTED
    assert capsys.readouterr().err.strip() == "aborted"


def test_an_unexpected_exception_is_a_bug_internal_70_with_its_traceback(capsys):
    """Decided: a bug is never exit 1 (INVALID); the traceback stays, for the bug report."""
    assert _run(_raise(ZeroDivisionError("oops"))) == ExitCode.INTERNAL
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("Traceback") and "ZeroDivisionError: oops" in err
    assert err[-1].startswith("trb-test: internal error (a bug")


def test_redact_runs_over_every_printed_line(capsys):
    hide = lambda s: s.replace("sekrit", "***")  # noqa: E731
    assert _run(_raise(_Busy("key sekrit")), redact=hide) == ExitCode.BUSY
    assert _run(_raise(RuntimeError("key sekrit")), redact=hide) == ExitCode.INTERNAL
    err = capsys.readouterr().err
    assert "sekrit" not in err and err.count("key ***") == 2


@pytest.mark.parametrize("message,lines", [("one", ["one"]), ("a\nb", ["a", "b"]), ("", [""])])
def test_lines_are_the_message_lines(message, lines):
    assert ToolkitError(message).lines() == lines and ToolkitError(message).exit_code == ExitCode.INTERNAL


def test_duckdb_out_of_its_memory_is_a_usage_error_naming_the_setting_not_a_bug(capsys, monkeypatch):
    import duckdb

    monkeypatch.setenv("TRB_DUCKDB_MEMORY", "8MB")

    def sort_too_big():  # a real DuckDB, held to 8MB, sorting far more than that
        con = duckdb.connect(":memory:", config={"memory_limit": "8MB", "threads": 2})
        con.execute("SELECT * FROM (SELECT md5(range::VARCHAR) || repeat('x', 500) AS s FROM range(300000)) "
                    "ORDER BY s").fetchall()

    assert _run(sort_too_big) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith("trb-test: DuckDB ran out of the memory it may use (8MB, set by TRB_DUCKDB_MEMORY): ")
    assert "TRB_DUCKDB_MEMORY=4GB" in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_a_bad_trb_duckdb_memory_is_refused_with_the_setting_named(monkeypatch):
    from toolkit.duck_memory import DEFAULT, BadMemorySetting, memory_limit

    monkeypatch.delenv("TRB_DUCKDB_MEMORY", raising=False)
    assert memory_limit() == DEFAULT == "256MB"
    for good in ("4GB", "1.5 GB", "512MiB", "10gb"):
        monkeypatch.setenv("TRB_DUCKDB_MEMORY", good)
        assert memory_limit() == good
    for bad in ("lots", "5", "-1GB", "3XB", ""):
        monkeypatch.setenv("TRB_DUCKDB_MEMORY", bad)
        with pytest.raises(BadMemorySetting, match="TRB_DUCKDB_MEMORY=.* is not a memory size") as e:
            memory_limit()
        assert e.value.exit_code == ExitCode.USAGE
