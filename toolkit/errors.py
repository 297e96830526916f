"""One typed error hierarchy and one exit-code table for every TRB command line, rendered once.

Every error a TRB tool reports to a user is a :class:`ToolkitError`: a message, the lines
to print, and an exit code from :class:`ExitCode`. The codes are disjoint across the five
command lines (``trb-corpus``, ``trb-annotate``, ``trb``, ``trb-review``, ``trb-demo``), so a
code means one thing whichever tool returned it; README.md's "Exit codes" table lists them
(a test keeps it in step with this enum).

Each package derives its own errors from :class:`ToolkitError` (``corpus.errors``,
``annotate.errors``, ``trb.errors``, ``trb.results``); each CLI's ``main()`` is one call to
:func:`run_cli`, the one place an error becomes text on stderr and an exit code.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Sequence
from enum import IntEnum

__all__ = ["ExitCode", "ToolkitError", "UsageError", "run_cli"]


class ExitCode(IntEnum):
    """What a TRB command line's exit status means (the same in every tool)."""

    OK = 0
    INVALID = 1  # input records are invalid; nothing was written
    USAGE = 2  # the command line (or an option's value) is wrong
    CONFLICT = 3  # a record id exists with different content; nothing was written
    BUSY = 4  # another process held the corpus or the results store for longer than the wait
    NOT_FOUND = 5  # no corpus at the given path
    GATE_FAILED = 6  # a release gate refused the release; nothing was written
    PUBLISH_FAILED = 7  # the hub could not be reached or refused the upload
    UNREACHABLE = 8  # Label Studio did not answer (down, wrong URL), after retries
    AUTH = 9  # Label Studio refused the API key, or it or the URL is not set
    PROJECT_NOT_FOUND = 10  # no Label Studio project with that title
    CONFIG_REJECTED = 11  # Label Studio refused the labeling config
    SERVER = 12  # any other refusal or error from Label Studio
    BAD_RELEASE = 13  # a release directory is missing, incomplete, or does not match its manifest
    ADAPTER = 14  # an adapter could not load its model or broke its contract
    RESULTS = 15  # a results store cannot do what was asked: not a store, a bad query, a bad run
    CHECK_FAILED = 16  # a check the engine runs on itself did not pass (calibration, conformance, a rerun)
    MODEL = 17  # a known model could not be installed, converted or checked (trb models)
    RUNNER = 18  # a runner could not reach its cluster, or a worker failed past its restarts and retries
    INTERNAL = 70  # a bug: an unexpected exception (its traceback is printed)
    INTERRUPTED = 130  # Ctrl-C, or a prompt aborted


class ToolkitError(Exception):
    """Base of every error a TRB tool reports to a user.

    ``exit_code`` is the class's code from :class:`ExitCode`; :meth:`lines` is what the CLI
    prints on stderr (the message, one line, unless a subclass lists more, e.g. each problem).
    """

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def lines(self) -> list[str]:
        """What the CLI prints on stderr, one line each."""
        return self.message.splitlines() or [self.message]



class UsageError(ToolkitError):
    """The command line, an option's value or what was asked is wrong: the one usage error of every tool
    (``corpus.errors``, ``trb.errors`` and the others re-export it)."""

    exit_code = ExitCode.USAGE


def run_cli(command, argv: Sequence[str] | None, prog_name: str, *, interrupted: str = "interrupted",
            redact: Callable[[str], str] | None = None) -> int:
    """Run a click ``command`` on ``argv``; render what stops it once, on stderr; return the exit code.

    * a :class:`ToolkitError`: its :meth:`~ToolkitError.lines`, then its ``exit_code``;
    * a click usage error: click's own message and usage hint, then ``USAGE`` (2);
    * Ctrl-C: the ``interrupted`` line (saying what the tool left behind); a declined prompt:
      "aborted"; both ``INTERRUPTED`` (130);
    * anything else is a bug, not a user mistake: its traceback (what a bug report needs), one
      line saying so, and ``INTERNAL`` (70), never 1, which means invalid input.

    ``redact`` is applied to every printed line (``trb-annotate`` passes the function that
    removes the API key), then :func:`toolkit.credentials.mask_credentials` (header values, URLs'
    credentials, credential parameters), for every tool. A command fails by raising; its return value and ``ctx.exit`` codes
    other than 0 are not used (``--help`` and ``--version`` return 0).
    """
    import io

    import click

    from toolkit.credentials import mask_credentials

    def say(line: str) -> None:
        click.echo(mask_credentials(redact(line) if redact else line), err=True)

    try:
        command.main(args=list(argv) if argv is not None else None, prog_name=prog_name, standalone_mode=False)
    except ToolkitError as e:
        for line in e.lines():
            say(line)
        return int(e.exit_code)
    except click.exceptions.Abort as e:
        # click turns Ctrl-C into Abort, keeping it as the cause; a declined prompt has none.
        say(interrupted if isinstance(e.__cause__, KeyboardInterrupt) else "aborted")
        return int(ExitCode.INTERRUPTED)
    except click.ClickException as e:
        shown = io.StringIO()
        e.show(file=shown)
        for line in shown.getvalue().rstrip("\n").splitlines():
            say(line)
        return int(ExitCode.USAGE)
    except KeyboardInterrupt:
        say(interrupted)
        return int(ExitCode.INTERRUPTED)
    except Exception as e:  # noqa: BLE001 - the one place a bug becomes an exit code
        if _duckdb_out_of_memory(e):  # a limit too low for the work, not a bug: the setting named, no traceback
            from toolkit.duck_memory import memory_limit  # (it imports this module)

            say(f"{prog_name}: DuckDB ran out of the memory it may use ({memory_limit()}, "
                f"set by TRB_DUCKDB_MEMORY): {str(e).strip().splitlines()[0]}; run it again with a higher limit, "
                "e.g. TRB_DUCKDB_MEMORY=4GB")
            return int(ExitCode.USAGE)
        for line in "".join(traceback.format_exception(*sys.exc_info())).rstrip("\n").splitlines():
            say(line)
        say(f"{prog_name}: internal error (a bug, not a mistake in your input); please report it with the "
            "traceback above")
        return int(ExitCode.INTERNAL)
    return int(ExitCode.OK)


def _duckdb_out_of_memory(e: BaseException) -> bool:
    duckdb = sys.modules.get("duckdb")
    return duckdb is not None and isinstance(e, getattr(duckdb, "OutOfMemoryException", ()))
