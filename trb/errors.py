"""The eval engine's typed errors, rendered once at the CLI edge.

They derive from the shared :class:`toolkit.errors.ToolkitError` and take their codes from
the one exit-code table, :class:`toolkit.errors.ExitCode` (re-exported here as ``ExitCode``),
so an engine code never means a corpus one. The results store's errors
(:class:`trb.results.ResultsError`, :class:`trb.results.ResultsBusy`) are in the same hierarchy.
"""

from __future__ import annotations

from toolkit.errors import ExitCode, ToolkitError, UsageError

__all__ = ["ExitCode", "TrbError", "ReleaseError", "AdapterError", "CheckFailed", "CalibrationFailed", "UsageError",
           "ModelError", "RunnerError"]


class TrbError(ToolkitError):
    """Base of the eval engine's errors."""


class ReleaseError(TrbError):
    """The release directory is missing, incomplete, or not in the published format."""

    exit_code = ExitCode.BAD_RELEASE


class AdapterError(TrbError):
    """An adapter could not be loaded or broke its contract."""

    exit_code = ExitCode.ADAPTER


class CheckFailed(TrbError):
    """A check the engine runs on itself did not pass: calibration, conformance, a rerun that does not reproduce."""

    exit_code = ExitCode.CHECK_FAILED


class CalibrationFailed(CheckFailed):
    """The engine did not separate the calibration agents it must separate."""


class ModelError(TrbError):
    """A known model could not be installed, converted or checked (``trb models``)."""

    exit_code = ExitCode.MODEL


class RunnerError(TrbError):
    """A runner could not reach its cluster, or a worker failed past its restarts and retries (``trb run --runner
    ray``); the parts stored so far are kept for ``trb run --resume``."""

    exit_code = ExitCode.RUNNER
