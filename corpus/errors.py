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
    "ReleaseRefused",
    "VerifyFailed",
    "PublishFailed",
]


class ExitCode(IntEnum):
    OK = 0
    INVALID = 1  # input records are invalid; nothing was written
    USAGE = 2  # the command line is wrong
    CONFLICT = 3  # a record id exists with different content
    BUSY = 4  # another process held the corpus for longer than the wait
    NOT_FOUND = 5  # no corpus at the given path
    GATE_FAILED = 6  # a release gate refused the release; nothing was written
    PUBLISH_FAILED = 7  # the hub could not be reached or refused the upload
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


class ReleaseRefused(CorpusError):
    """One or more release gates failed; nothing was written."""

    exit_code = ExitCode.GATE_FAILED

    def __init__(self, failed: list, message: str = ""):
        self.failed = failed
        super().__init__(message or f"release refused: {len(failed)} gate(s) failed; nothing was written")

    def lines(self) -> list[str]:
        out = []
        for g in self.failed:
            out.append(f"gate {g.name}: FAILED: {g.figure} (bar: {g.bar})")
            if g.detail:
                out.extend(f"  {line}" for line in g.detail.splitlines())
        out.append(self.message)
        return out


class VerifyFailed(CorpusError):
    """A release directory does not match its manifest."""

    exit_code = ExitCode.INVALID

    def __init__(self, directory: str, differences: list[str]):
        self.differences = differences
        super().__init__(f"verify {directory}: {len(differences)} difference(s): the release is not what its manifest says")

    def lines(self) -> list[str]:
        return [*self.differences, self.message]


class PublishFailed(CorpusError):
    exit_code = ExitCode.PUBLISH_FAILED
