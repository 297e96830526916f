"""Typed errors of ``trb-annotate``: Label Studio failures, rendered once at the CLI edge.

They derive from the one hierarchy's base, :class:`toolkit.errors.ToolkitError` (as the corpus's errors do, so
corpus errors (busy, not found, invalid records) pass through the same renderer); their codes (8-12) are in the
one table, :class:`toolkit.errors.ExitCode`.
No message ever holds the API key or the credentials of ``LABEL_STUDIO_URL`` (``user:password@`` and the
Basic auth an HTTP client makes of it, ``?token=``, ``;jsessionid=``, a fragment's token), nor a header
value a server echoes (``Authorization: Basic ...``): :func:`scrub` masks them in anything quoted from a
server or a library (:func:`toolkit.credentials.mask_credentials`: the secret value only, a short key only
as a whole token), and ``trb-annotate`` passes :func:`redact` over every line it prints.
"""

from __future__ import annotations

import os

from toolkit.credentials import mask_credentials
from toolkit.errors import ExitCode, ToolkitError
from toolkit.urls import url_secrets

__all__ = ["AnnotateExit", "AnnotateError", "LabelStudioUnreachable", "LabelStudioAuthFailed",
           "ProjectNotFound", "ConfigRejected", "LabelStudioFailed", "LabelStudioBadAnswer", "MissingSetting", "BadSetting", "redact",
           "remember_secret", "scrub"]

#: The shared exit-code table, under the name this module used when it kept 8-12 apart
#: (``AnnotateExit.UNREACHABLE`` ... ``AnnotateExit.SERVER`` are ``ExitCode`` members).
AnnotateExit = ExitCode


class AnnotateError(ToolkitError):
    """Base of the Label Studio errors."""

    exit_code = ExitCode.SERVER

    def __init__(self, message: str):
        super().__init__(scrub(message))


class LabelStudioUnreachable(AnnotateError):
    exit_code = ExitCode.UNREACHABLE


class LabelStudioAuthFailed(AnnotateError):
    exit_code = ExitCode.AUTH


class ProjectNotFound(AnnotateError):
    exit_code = ExitCode.PROJECT_NOT_FOUND


class ConfigRejected(AnnotateError):
    exit_code = ExitCode.CONFIG_REJECTED


class LabelStudioFailed(AnnotateError):
    exit_code = ExitCode.SERVER


class LabelStudioBadAnswer(LabelStudioFailed):
    """The server answered, but not as Label Studio does (an HTML page, an empty body, JSON of another shape, a 200
    carrying an error): the message names the server, the request and what the answer was."""


class MissingSetting(AnnotateError):
    """LABEL_STUDIO_URL or LABEL_STUDIO_API_KEY is not set, or cannot be used as given (a key with a character
    an HTTP header cannot carry, a URL that is not http(s))."""

    exit_code = ExitCode.AUTH


class BadSetting(AnnotateError):
    """A ``TRB_LS_*`` setting (retries, deadline) has a value that is not one (named, with what is expected)."""

    exit_code = ExitCode.USAGE


_SECRETS: set[str] = set()


def remember_secret(value: str | None) -> None:
    """Register a value (the API key) that :func:`scrub` removes from every message."""
    if value:
        _SECRETS.add(value)


def redact(text: str) -> str:
    """``text`` with every registered secret, the key in the environment and the credentials of the URL in the
    environment shown as ``***`` where they stand as a value, and every credential it quotes masked (header
    values, URLs, credential parameters: :func:`toolkit.credentials.mask_credentials`)."""
    secrets = set(_SECRETS)
    env = os.environ.get("LABEL_STUDIO_API_KEY")
    if env:
        secrets.add(env)
    secrets.update(url_secrets(os.environ.get("LABEL_STUDIO_URL") or ""))
    return mask_credentials(text, secrets)


def scrub(text: str) -> str:
    """``text`` :func:`redact`-ed and on one line."""
    return " ".join(redact(text).split())
