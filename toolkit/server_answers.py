"""A server's answer read strictly, and said in words when it is not what a call expects.

The toolkit's HTTP clients (Label Studio's in ``annotate.client``, the served model's in
``trb.adapters.completions_client``) read each answer with :func:`decode` (strict JSON:
:func:`toolkit.strict_json.loads`) and check its shape; what does not fit raises
:class:`UnexpectedAnswer` with ``why`` in words ("an HTML page", "an empty body", "a JSON object
with keys 'foo' where a list was expected", "an error: ..."), which the client turns into its own
typed error naming the server and the call. Nothing here quotes a header; quoted bodies are cut
short and the clients mask credentials in them.
"""

from __future__ import annotations

from typing import Any

from toolkit.strict_json import loads

__all__ = ["UnexpectedAnswer", "decode", "describe", "error_of", "expect"]

_QUOTE = 120  # characters of a body or an error quoted in a message
#: Fields in which a server that answers 200 says it failed.
_ERROR_FIELDS = ("error", "errors", "detail", "message", "status_message")


class UnexpectedAnswer(Exception):
    """An answer that is not what the call expects; ``why`` says what it is instead (one line)."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = " ".join(why.split())


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= _QUOTE else text[:_QUOTE] + "…")


def decode(content: bytes, content_type: str | None = None) -> Any:
    """The JSON value of an answer's body. Raises :class:`UnexpectedAnswer`: an empty body, an HTML page, text that is
    not JSON, or JSON that is not strict (a NaN, a repeated key)."""
    text = content.decode("utf-8", "replace") if isinstance(content, (bytes, bytearray)) else str(content)
    if not text.strip():
        return _raise("an empty body where JSON was expected")
    head = text.lstrip()[:200].lower()
    if "html" in (content_type or "").lower() or head.startswith(("<!doctype html", "<html")):
        return _raise(f"an HTML page where JSON was expected ({_quote(text)})")
    try:
        return loads(content)
    except ValueError as e:  # StrictJSONError is one
        return _raise(f"not JSON ({e}; the body starts {_quote(text[:40])})")


def _raise(why: str):
    raise UnexpectedAnswer(why)


def error_of(value: Any) -> str | None:
    """The server's own words when ``value`` is a JSON object that says it failed (``{"error": ...}``,
    ``{"detail": ...}``), else None."""
    if not isinstance(value, dict):
        return None
    for key in _ERROR_FIELDS:
        said = value.get(key)
        if said:
            if isinstance(said, dict):
                said = said.get("message") or said.get("detail") or said
            return f"{key}: {_quote(str(said))}"
    return None


def describe(value: Any) -> str:
    """What ``value`` is, in a few words: "a JSON object with keys 'foo', 'bar'", "a JSON list of 3 items"..."""
    if isinstance(value, dict):
        keys = list(value)
        shown = ", ".join(repr(k) for k in keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
        return f"a JSON object with keys {shown}" if keys else "an empty JSON object"
    if isinstance(value, list):
        return f"a JSON list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    return f"the string {_quote(str(value))}"


def expect(ok: bool, value: Any, expected: str) -> None:
    """Raise :class:`UnexpectedAnswer` unless ``ok``: the server's error when ``value`` holds one, else what ``value``
    is and that ``expected`` was expected."""
    if ok:
        return
    said = error_of(value)
    if said:
        raise UnexpectedAnswer(f"an error in place of {expected} ({said})")
    raise UnexpectedAnswer(f"{describe(value)} where {expected} was expected")
