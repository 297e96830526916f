"""One typed error hierarchy for the corpus toolkit, rendered once at the CLI edge."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

__all__ = [
    "ExitCode",
    "Problem",
    "CorpusError",
    "InvalidInput",
    "RecordConflict",
    "CorpusBusy",
    "CorpusNotFound",
    "CorpusExists",
    "UsageError",
]


class ExitCode(IntEnum):
    OK = 0
    INVALID = 1  # input records are invalid; nothing was written
    USAGE = 2  # the command line is wrong
    CONFLICT = 3  # a record id exists with different content
    BUSY = 4  # another process held the corpus for longer than the wait
    NOT_FOUND = 5  # no corpus at the given path
    INTERNAL = 70


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with the input, located as ``FILE:LINE: /json/pointer: message``."""

    file: str
    line: int | None
    pointer: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.pointer}: {self.message}" if self.pointer else f"{where}: {self.message}"


class CorpusError(Exception):
    """Base of every error the toolkit reports to a user."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def lines(self) -> list[str]:
        """What the CLI prints on stderr, one line each."""
        return [self.message]


class _ProblemsError(CorpusError):
    def __init__(self, problems: list[Problem], total: int | None = None, summary: str = ""):
        self.problems = problems
        self.total = total if total is not None else len(problems)
        super().__init__(summary or f"{self.total} problem(s)")

    def lines(self) -> list[str]:
        out = [str(p) for p in self.problems]
        if self.total > len(self.problems):
            out.append(f"... and {self.total - len(self.problems)} more problem(s) not shown")
        out.append(self.message)
        return out


class InvalidInput(_ProblemsError):
    """Records failed validation; nothing was written."""

    exit_code = ExitCode.INVALID


class RecordConflict(_ProblemsError):
    """Record ids exist in the corpus with different content; nothing was written."""

    exit_code = ExitCode.CONFLICT


class CorpusBusy(CorpusError):
    exit_code = ExitCode.BUSY


class CorpusNotFound(CorpusError):
    exit_code = ExitCode.NOT_FOUND


class CorpusExists(CorpusError):
    exit_code = ExitCode.USAGE


class UsageError(CorpusError):
    exit_code = ExitCode.USAGE
