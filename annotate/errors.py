"""Typed errors of ``trb-annotate``: Label Studio failures, rendered once at the CLI edge.

They extend the corpus toolkit's hierarchy (:class:`corpus.errors.CorpusError`), so corpus
errors (busy, not found, invalid records) pass through the same renderer. No message ever
holds the API key: :func:`scrub` removes it from anything quoted from a server or a library.
"""

from __future__ import annotations

import os
from enum import IntEnum

from corpus.errors import CorpusError

__all__ = ["AnnotateExit", "AnnotateError", "LabelStudioUnreachable", "LabelStudioAuthFailed",
           "ProjectNotFound", "ConfigRejected", "LabelStudioFailed", "MissingSetting", "scrub"]


class AnnotateExit(IntEnum):
    """Exit codes beyond :class:`corpus.errors.ExitCode` (which keeps 0-7 and 70)."""

    UNREACHABLE = 8  # the server did not answer (down, wrong URL), after retries
    AUTH = 9  # the server refused the API key
    PROJECT_NOT_FOUND = 10  # no project with that title
    CONFIG_REJECTED = 11  # the server refused the labeling config
    SERVER = 12  # any other refusal or error from the server


class AnnotateError(CorpusError):
    """Base of the Label Studio errors."""

    exit_code = AnnotateExit.SERVER

    def __init__(self, message: str):
        super().__init__(scrub(message))


class LabelStudioUnreachable(AnnotateError):
    exit_code = AnnotateExit.UNREACHABLE


class LabelStudioAuthFailed(AnnotateError):
    exit_code = AnnotateExit.AUTH


class ProjectNotFound(AnnotateError):
    exit_code = AnnotateExit.PROJECT_NOT_FOUND


class ConfigRejected(AnnotateError):
    exit_code = AnnotateExit.CONFIG_REJECTED


class LabelStudioFailed(AnnotateError):
    exit_code = AnnotateExit.SERVER


class MissingSetting(AnnotateError):
    """LABEL_STUDIO_URL or LABEL_STUDIO_API_KEY is not set."""

    exit_code = AnnotateExit.AUTH


_SECRETS: set[str] = set()


def remember_secret(value: str | None) -> None:
    """Register a value (the API key) that :func:`scrub` removes from every message."""
    if value:
        _SECRETS.add(value)


def scrub(text: str) -> str:
    """``text`` with every registered secret and the key in the environment replaced by ``***``; one line."""
    secrets = set(_SECRETS)
    env = os.environ.get("LABEL_STUDIO_API_KEY")
    if env:
        secrets.add(env)
    for s in sorted(secrets, key=len, reverse=True):
        if s:
            text = text.replace(s, "***")
    return " ".join(str(text).split())
