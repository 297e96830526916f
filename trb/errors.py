"""One typed error hierarchy for the eval engine, rendered once at the CLI edge."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode", "TrbError", "ReleaseError", "AdapterError", "CalibrationFailed", "CheckFailed", "UsageError", "ModelError"]


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1  # a check did not pass (e.g. calibration)
    USAGE = 2
    BAD_RELEASE = 3
    ADAPTER = 4
    RESULTS = 5
    INTERNAL = 70


class TrbError(Exception):
    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def lines(self) -> list[str]:
        return self.message.splitlines() or [self.message]


class UsageError(TrbError):
    exit_code = ExitCode.USAGE


class ReleaseError(TrbError):
    """The release directory is missing, incomplete, or not in the published format."""

    exit_code = ExitCode.BAD_RELEASE


class AdapterError(TrbError):
    """An adapter could not be loaded or broke its contract."""

    exit_code = ExitCode.ADAPTER


class CheckFailed(TrbError):
    """A check did not pass: calibration, adapter conformance, a rerun that did not reproduce."""

    exit_code = ExitCode.FAILED


class CalibrationFailed(CheckFailed):
    """The engine did not separate the calibration agents it must separate."""


class ModelError(TrbError):
    """A known model could not be installed, converted or checked (``trb models``)."""

    exit_code = ExitCode.ADAPTER
