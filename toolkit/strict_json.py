"""Strict JSON: every number finite and no key twice in one object, or located problems.

JSON (RFC 8259) has no NaN or Infinity, and a number beyond a double's range (``1e400``)
cannot be stored as one; an object whose keys repeat means whatever the reader makes of it
(most keep the last). Every reader of JSON someone else could have written (ingest, the importers, release
manifests, ``hub.json``, sidecars, study and task files, Label Studio exports, run records)
goes through :func:`loads` or :func:`load`, so such input is refused, with where it is (the
file and a JSON pointer), instead of becoming ``null``, ``inf``, a crash or the first or last
of two values.

The common case costs one ``orjson`` parse (which already refuses NaN, Infinity and numbers
that overflow a double) and one ``orjson`` serialisation: a document with a repeated key has
more ``:`` separators than its parsed value written back. Only a document that fails either
check (or escapes a colon, ``\\u003a``) is parsed again, slowly, to say where each problem is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson

from toolkit.errors import ExitCode, ToolkitError

__all__ = ["StrictJSONError", "check", "load", "loads", "pointer"]


class StrictJSONError(ToolkitError, ValueError):
    """The document is not strict JSON: ``problems`` are ``(json_pointer, message)`` pairs (pointer ``""`` for the
    document as a whole); ``source`` is the file it was read from (:func:`load`), named first in the message."""

    exit_code = ExitCode.INVALID

    def __init__(self, problems: list[tuple[str, str]], source: str | None = None):
        self.problems = problems
        self.source = source
        text = "; ".join(f"{p}: {m}" if p else m for p, m in problems)
        super().__init__(f"{source}: {text}" if source else text)


def pointer(parts) -> str:
    """The JSON pointer (RFC 6901) of a path of keys and indices."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


class _Pairs(list):
    """An object as its key/value pairs in input order, repeats included."""


class _NonFinite:
    __slots__ = ("token",)

    def __init__(self, token: str):
        self.token = token

    def message(self) -> str:
        if self.token.lstrip("-") in ("NaN", "Infinity"):
            return f"{self.token} is not a JSON number: give a finite number"
        token = self.token if len(self.token) <= 40 else f"{self.token[:20]}…({len(self.token)} characters)"
        return f"{token} is beyond the range of a double (about ±1.8e308): give a finite number"


def _float(token: str):
    value = float(token)
    return _NonFinite(token) if value in (float("inf"), float("-inf")) else value


def _int(token: str):
    value = int(token)
    try:
        float(value)
    except OverflowError:
        return _NonFinite(token)
    return value


def _walk(node, path: list, out: list[tuple[str, str]]) -> None:
    if isinstance(node, _Pairs):
        counts: dict[str, int] = {}
        for key, _ in node:
            counts[key] = counts.get(key, 0) + 1
        reported = set()
        for key, value in node:
            if counts[key] > 1 and key not in reported:
                reported.add(key)
                times = "twice" if counts[key] == 2 else f"{counts[key]} times"
                out.append((pointer([*path, key]), f"duplicate key {key!r} ({times} in one object): a JSON object "
                                                   "must not repeat a key (which value counts would depend on the "
                                                   "reader); give it once"))
            _walk(value, [*path, key], out)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _walk(value, [*path, i], out)
    elif isinstance(node, _NonFinite):
        out.append((pointer(path), node.message()))


def _located(raw: bytes) -> list[tuple[str, str]] | None:
    """Every non-finite number and repeated key of ``raw``, located; None when it is not JSON at all."""
    try:
        tree = json.loads(raw.decode("utf-8"), object_pairs_hook=_Pairs, parse_constant=_NonFinite,
                          parse_float=_float, parse_int=_int)
    except (ValueError, RecursionError):
        return None
    out: list[tuple[str, str]] = []
    _walk(tree, [], out)
    return out


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse ``data`` as strict JSON (module docstring).

    Raises:
        StrictJSONError: not JSON (orjson's reason, with its position), a number that is NaN, Infinity or beyond
            a double's range, or a key repeated in one object; each problem located by a JSON pointer.
    """
    raw = data if type(data) is bytes else data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise StrictJSONError(_located(raw) or [("", f"invalid JSON: {e}")]) from None
    try:
        suspect = b"\\u003" in raw or raw.count(b":") != orjson.dumps(value).count(b":")
    except orjson.JSONEncodeError:  # nested deeper than orjson writes: check it the slow way
        suspect = True
    if suspect:
        problems = _located(raw)
        if problems:
            raise StrictJSONError(problems)
    return value


def load(path: str | os.PathLike) -> Any:
    """Read the file at ``path`` and parse it as strict JSON (module docstring).

    Raises:
        OSError: as reading the file does.
        StrictJSONError: as :func:`loads`, with ``source`` the file (its message starts with it).
    """
    data = Path(path).read_bytes()
    try:
        return loads(data)
    except StrictJSONError as e:
        raise StrictJSONError(e.problems, str(path)) from None


def check(data: bytes | bytearray | memoryview | str) -> None:
    """Check that ``data`` is strict JSON, keeping nothing of it (for a caller that parses it its own way).

    Raises:
        StrictJSONError: as :func:`loads`.
    """
    loads(data)
