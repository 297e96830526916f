"""The corpus toolkit's typed errors, rendered once at the CLI edge.

They derive from the shared :class:`toolkit.errors.ToolkitError` and take their codes from
the one exit-code table, :class:`toolkit.errors.ExitCode` (re-exported here as ``ExitCode``).
"""

from __future__ import annotations

from dataclasses import dataclass

from toolkit.errors import ExitCode, ToolkitError, UsageError

__all__ = [
    "ExitCode",
    "Problem",
    "CorpusError",
    "InvalidInput",
    "RecordConflict",
    "CorpusBusy",
    "CorpusNotFound",
    "CorpusUnreadable",
    "DiskFull",
    "MemoryLimit",
    "CorpusExists",
    "UsageError",
    "ReleaseRefused",
    "VerifyFailed",
    "InvalidReleases",
    "PublishFailed",
]


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


class CorpusError(ToolkitError):
    """Base of the corpus toolkit's errors."""


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


class CorpusUnreadable(CorpusError):
    """The corpus's ``corpus.duckdb`` is not a corpus store this toolkit can read: not a DuckDB file, another
    database, damaged, or of a newer store format. Nothing was changed."""

    exit_code = ExitCode.NOT_FOUND


class DiskFull(CorpusError):
    """The disk (or quota) being written filled up: the message says what was written (nothing for a release;
    for the corpus store nothing, unless it says the changes were committed to the store's log)."""

    exit_code = ExitCode.INVALID


class MemoryLimit(CorpusError):
    """DuckDB ran out of the memory the corpus store may use (``TRB_DUCKDB_MEMORY``): the message says what was
    written (nothing, unless it says the changes were committed to the store's log) and how to raise the limit."""

    exit_code = ExitCode.INVALID


class CorpusExists(CorpusError):
    exit_code = ExitCode.USAGE


class ReleaseRefused(CorpusError):
    """One or more release gates failed; nothing was written."""

    exit_code = ExitCode.GATE_FAILED

    def __init__(self, failed: list, message: str = ""):
        self.failed = failed
        super().__init__(message or f"release refused: {len(failed)} gate(s) failed "
                                   f"({', '.join(g.name for g in failed)}); nothing was written")

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

    exit_code = ExitCode.BAD_RELEASE

    def __init__(self, directory: str, differences: list[str]):
        self.differences = differences
        super().__init__(f"verify {directory}: {len(differences)} difference(s): the release is not what its manifest says")

    def lines(self) -> list[str]:
        return [*self.differences, self.message]


class InvalidReleases(CorpusError):
    """Directories under ``<corpus>/releases/`` whose manifest is not a release manifest (one line each)."""

    exit_code = ExitCode.BAD_RELEASE

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


class PublishFailed(CorpusError):
    exit_code = ExitCode.PUBLISH_FAILED
