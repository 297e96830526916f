"""Parsing one JSONL line into a schema-v1 record, with located, readable errors.

The structural check is the pydantic model of :mod:`schemas.models` (kept equal to
the published JSON Schema files); the single-record rules come from
:mod:`schemas.rules`. Errors are ``(json_pointer, message)`` pairs.

This is the reference path: the ingest parses lines with :mod:`corpus.fast_records`, which gives the same canonical
form for a valid record and hands every line it doubts to :func:`parse_record`, so that problems are worded here.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson
from pydantic import TypeAdapter, ValidationError

from schemas.models import RECORD_MODELS, Record
from schemas.rules import record_rule_errors
from toolkit import strict_json

__all__ = ["ParsedRecord", "parse_record", "canonical_json", "content_hash", "record_id", "may_underflow",
           "underflow_problems"]

_ADAPTER: TypeAdapter = TypeAdapter(Record)
_KINDS = ", ".join(RECORD_MODELS)
_ID_FIELD = {
    "session": "session_id",
    "counterfactual": "cf_id",
    "attribution": "item_id",
    "annotation": "annotation_id",
    "transfer_context": "context_id",
}
_CORE_SLOTS = "goal, planned_next, caused_by_self, confidence, ext"


class ParsedRecord:
    """A valid record: the model, its canonical JSON and content hash."""

    __slots__ = ("model", "canonical", "sha256")

    def __init__(self, model):
        self.model = model
        self.canonical = canonical_json(model)
        self.sha256 = hashlib.sha256(self.canonical).hexdigest()

    @property
    def kind(self) -> str:
        return self.model.kind

    @property
    def id(self) -> str:
        return record_id(self.model)


def record_id(model) -> str:
    return getattr(model, _ID_FIELD[model.kind])


def canonical_json(model) -> bytes:
    """The record as canonical JSON: every field (defaults filled), keys sorted, no spaces, UTF-8.

    Two inputs that differ only in key order, whitespace, number spelling (``1`` vs
    ``1.0`` for a probability) or omitted defaults have the same canonical form.
    """
    return orjson.dumps(model.model_dump(mode="python"), option=orjson.OPT_SORT_KEYS)


def content_hash(model) -> str:
    return hashlib.sha256(canonical_json(model)).hexdigest()


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _pointer(loc: tuple, data: Any, missing: bool) -> tuple[str, list]:
    """Map a pydantic error location onto the input document as a JSON pointer.

    Location parts that are not in the input (union tags such as ``'session'`` or
    ``'distribution'``) are dropped; a missing field keeps its name as the last part.
    """
    parts: list = []
    node = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            parts.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            parts.append(part)
            node = node[part]
        elif last and missing and isinstance(part, str):
            parts.append(part)
    text = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return text, parts


def _is_r_object(parts: list) -> bool:
    return (len(parts) == 3 and parts[0] == "steps" and parts[2] == "r") or parts == ["r_prime"]


def _num(x: Any) -> Any:
    return int(x) if isinstance(x, float) and x.is_integer() else x


def _message(err: dict, parts: list) -> str:
    typ = err["type"]
    value = err.get("input")
    ctx = err.get("ctx") or {}
    if typ == "missing":
        return "required field is missing"
    if typ == "extra_forbidden":
        name = parts[-1] if parts else "?"
        if _is_r_object(parts[:-1]):
            return (
                f"unknown r_t slot {name!r} (core slots: {_CORE_SLOTS}; "
                "declare extension slots in the session's r_extensions and put their values under r.ext)"
            )
        return f"unknown field {name!r}"
    if typ in ("less_than_equal", "less_than"):
        return f"{_short(value)} is greater than the maximum of {_num(ctx.get('le', ctx.get('lt')))}"
    if typ in ("greater_than_equal", "greater_than"):
        return f"{_short(value)} is less than the minimum of {_num(ctx.get('ge', ctx.get('gt')))}"
    if typ == "union_tag_not_found":
        if not parts:
            return f"'kind' is missing: every record names its schema ({_KINDS})"
        return f"'{ctx.get('discriminator', 'type').strip(chr(39))}' is missing"
    if typ == "union_tag_invalid":
        tag = ctx.get("tag")
        if not parts:
            return f"kind {tag!r} is not one of {_KINDS}"
        return f"type {tag!r} is not one of {ctx.get('expected_tags')}"
    if typ == "model_attributes_type" or typ == "dict_type" or typ == "model_type":
        return f"expected a JSON object, got {_short(value)}"
    if typ == "string_pattern_mismatch":
        return f"{_short(value)} does not match the pattern {ctx.get('pattern')}"
    if typ == "too_short":
        return f"{_short(value)} is too short: {err['msg'][0].lower()}{err['msg'][1:]}"
    return f"{err['msg']}, got {_short(value)}"


def _validation_problems(exc: ValidationError, data: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for err in exc.errors(include_url=False):
        pointer, parts = _pointer(err["loc"], data, err["type"] == "missing")
        # A value that fails every member of a plain union (str | float | bool)
        # yields one error per member; report the place once.
        key = pointer if err["type"].endswith("_type") else f"{pointer}\0{err['type']}"
        if key in seen:
            continue
        seen.add(key)
        out.append((pointer, _message(err, parts)))
    return out


#: every digit as 0 and E as e, so that one byte search finds a number literal of any digits
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789E", b"000000000e")
_LONG_RUN = b"0" * 300


def may_underflow(line: bytes) -> bool:
    """Whether a number literal of ``line`` may be too small for a double (the smallest is about 4.9e-324): a digit
    then an exponent of three digits or more below zero (``1e-400``), or a run of 300 digits (``0.000…01``). A
    cheap look (byte searches); only a line it says yes to is parsed again to see (:func:`underflow_problems`), and
    the fast path leaves such a line to this module."""
    digits = line.translate(_DIGITS_AS_ZERO)
    return b"0e-000" in digits or _LONG_RUN in digits


class _Tiny(float):
    """A number literal that is not zero but parses to 0.0 (``1e-400``): it keeps its text for the message."""

    token: str


def _tiny_or_float(token: str) -> float:
    value = float(token)
    if value == 0.0 and any(c in "123456789" for c in token.partition("e")[0].partition("E")[0]):
        tiny = _Tiny(0.0)
        tiny.token = token
        return tiny
    return value


def _tiny_pointers(node: Any, path: list, out: list[tuple[str, str]]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            _tiny_pointers(value, [*path, key], out)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _tiny_pointers(value, [*path, i], out)
    elif isinstance(node, _Tiny):
        token = node.token if len(node.token) <= 40 else f"{node.token[:20]}…({len(node.token)} characters)"
        out.append((strict_json.pointer(path), f"{token} is too small for a double: it would be stored as 0 (the "
                                               "smallest is about 4.9e-324); give 0 or a representable number"))


def underflow_problems(line: bytes) -> list[tuple[str, str]]:
    """Each number of the (strict JSON) ``line`` whose literal is not zero but that a double holds as 0.0, located:
    ``1e-400`` would be stored silently as 0 (an overflow, ``1e400``, is refused by :mod:`toolkit.strict_json`)."""
    if not may_underflow(line):
        return []
    out: list[tuple[str, str]] = []
    _tiny_pointers(json.loads(line, parse_float=_tiny_or_float), [], out)
    return out


def parse_record(line: bytes) -> ParsedRecord | list[tuple[str, str]]:
    """Parse and check one JSONL line: a :class:`ParsedRecord`, or every problem found.

    The line must be strict JSON (:mod:`toolkit.strict_json`: no NaN, Infinity or number beyond a double's range,
    no key twice in one object) with no number too small for a double (:func:`underflow_problems`), then a valid
    record."""
    try:
        strict_json.check(line)  # what it parses is dropped at once: validate_json is faster on the bytes
    except strict_json.StrictJSONError as e:
        return e.problems
    if tiny := underflow_problems(line):
        return tiny
    try:
        model = _ADAPTER.validate_json(line)
    except ValidationError as exc:
        data = orjson.loads(line)
        if not isinstance(data, dict):
            return [("", f"a record must be a JSON object, got {type(data).__name__}")]
        return _validation_problems(exc, data)
    problems = record_rule_errors(model)
    if problems:
        return problems
    return ParsedRecord(model)
