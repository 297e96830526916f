"""URLs as a tool may show or store them, with the credentials a user put in them removed; keys it can send.

A server's URL is given by a user (``LABEL_STUDIO_URL``, ``trb run --adapter served --model URL``)
and may carry credentials: ``http://user:password@host``, or a query parameter such as
``?token=...``, ``?api_key=...``, ``?access_token=...``. Every message, progress line and stored
record that names a server goes through :func:`redact_url` (the one place this is done): the
userinfo is dropped, the value of every query or path parameter whose name says it is a credential
(``?token=``, ``;jsessionid=``) becomes ``***``, and so does every value of the fragment (never sent to a
server, it carries tokens: ``#access_token=...``); nothing else changes, so a URL without credentials
reads as typed.
:func:`url_secrets` gives the secret parts themselves, for a tool that scrubs them from text it
did not write (a library's error message that quotes the URL).

Both never raise: a URL that does not parse is handled as text. :func:`header_value_problem`
says why a key cannot be sent in an HTTP header (a non-ASCII character, a space or newline), by
position, never quoting it, so a tool can refuse it in one line before any request.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["REDACTED", "has_credentials", "header_value_problem", "is_credential_name", "redact_url", "url_secrets"]

#: What a credential's value is shown as.
REDACTED = "***"
#: A query or path parameter is a credential when its name (lower-cased, ``-`` read as ``_``)
#: contains one of these.
_CREDENTIAL_WORDS = ("token", "key", "secret", "pass", "pwd", "auth", "sig", "credential", "session", "cookie",
                     "jwt", "bearer")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*:)?//")
_FRAGMENT_TOKEN = 16  # a fragment without "=" at least this long is taken for a token (#eyJhbGciOi...)
_MIN_SECRET = 4  # shorter parts are not scrubbed from other text (they would mangle it); the URL itself still is


def _split(url: str) -> tuple[str, str, str, str]:
    """(scheme and ``//``, userinfo or "", the rest before the query, the query and fragment with their marks)."""
    m = _SCHEME.match(url)
    head = m.group(0) if m else ""
    rest = url[len(head):]
    cut = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    before, tail = rest[:cut], rest[cut:]
    # the userinfo ends at the last "@" before the query: a password typed with a raw "/" or "@" is still cut off
    at = before.rfind("@")
    if at >= 0:
        return head, before[:at], before[at + 1:], tail
    return head, "", before, tail


def is_credential_name(name: str) -> bool:
    """Whether a parameter named ``name`` (``access_token``, ``jsessionid``, ``api-key``...) carries a credential."""
    n = unquote(name).strip().lower().replace("-", "_")
    return any(w in n for w in _CREDENTIAL_WORDS)


_is_credential = is_credential_name


def _params(part: str):
    """(separator before, name, value or None) for each ``name=value`` of a query or fragment (``&`` or ``;``)."""
    for m in re.finditer(r"([&;]?)([^&;=]*)(?:=([^&;]*))?", part):
        if m.group(0):
            yield m.group(1), m.group(2), m.group(3)


def _redact_params(part: str, every: bool = False) -> str:
    """``part`` with the value of each credential parameter (of ``every`` parameter) as ``***``."""
    out = []
    for sep, name, value in _params(part):
        if value is not None and value != "" and (every or _is_credential(name)):
            value = REDACTED
        out.append(f"{sep}{name}" + ("" if value is None else f"={value}"))
    return "".join(out)


def _redact_path(path: str) -> str:
    """``path`` with the value of each credential path parameter (``/app;jsessionid=...``) as ``***``."""
    if ";" not in path:
        return path
    return "/".join(seg.split(";", 1)[0] + (";" + _redact_params(seg.split(";", 1)[1]) if ";" in seg else "")
                    for seg in path.split("/"))


def _redact_fragment(fragment: str) -> str:
    """A fragment (without its ``#``) with every value as ``***``; a bare one that looks like a token, whole."""
    if "=" in fragment:
        return _redact_params(fragment, every=True)
    return REDACTED if len(fragment) >= _FRAGMENT_TOKEN else fragment


def redact_url(url) -> str:
    """``url`` without its credentials: no ``user:password@``, ``***`` for each credential parameter's value (query
    and path) and for the fragment's values.

    Where the part before the last ``@`` holds a ``/`` (a password typed with a raw ``/``, or an ``@`` in the
    path: the two cannot be told apart), everything from the host on up to that ``@`` is shown as ``***@``.

    >>> redact_url("http://admin:pw@ls.example:8080/?token=abc&page=2")
    'http://ls.example:8080/?token=***&page=2'
    """
    text = str(url)
    head, userinfo, host_path, tail = _split(text)
    if "/" in userinfo or userinfo == REDACTED:  # (the second: a URL already redacted stays as it is)
        host_path = f"{REDACTED}@{host_path}"
    host_path = _redact_path(host_path)
    if not tail:
        return head + host_path
    query, fragment = tail, ""
    if "#" in tail:
        query, fragment = tail.split("#", 1)
        fragment = "#" + _redact_fragment(fragment)
    if query.startswith("?"):
        query = "?" + _redact_params(query[1:])
    return head + host_path + query + fragment


def url_secrets(url) -> list[str]:
    """The secret parts of ``url`` (its userinfo and password, what an HTTP client sends for them as Basic auth,
    credential parameter values of the query and the path, the fragment's token-like values), as typed and decoded; parts
    shorter than 4 characters are left out."""
    import base64

    text = str(url)
    _head, userinfo, host_path, tail = _split(text)
    found = []
    if userinfo:
        found.append(userinfo)
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
        found.append(base64.b64encode(unquote(userinfo).encode("utf-8", "replace")).decode("ascii"))
    query, _, fragment = tail.partition("#")
    parts = [(query.lstrip("?"), False)] + [(seg.split(";", 1)[1], False) for seg in host_path.split("/") if ";" in seg]
    if "=" in fragment:
        parts.append((fragment, True))
    elif len(fragment) >= _FRAGMENT_TOKEN:
        found.append(fragment)
    for part, every in parts:
        for _sep, name, value in _params(part):
            if value and (_is_credential(name) or (every and len(value) >= _FRAGMENT_TOKEN)):
                found.append(value)
    out: list[str] = []
    for s in found:
        for v in (s, unquote(s)):
            if len(v) >= _MIN_SECRET and v not in out:
                out.append(v)
    return out


def has_credentials(url) -> bool:
    """Whether ``url`` carries a userinfo or a credential parameter (what :func:`redact_url` removes)."""
    text = str(url)
    return redact_url(text) != text or bool(_split(text)[1])


def header_value_problem(value: str) -> str | None:
    """Why ``value`` (an API key) cannot be an HTTP header value as given, e.g. ``"a non-ASCII character at
    position 3 of 20"``; None when it can. Only printable ASCII without spaces passes (a key has no spaces,
    and a trailing newline is a copy-paste slip)."""
    for i, ch in enumerate(value):
        if not (" " < ch < "\x7f"):
            kind = "a non-ASCII character" if ord(ch) > 127 else "a space or control character"
            return f"{kind} at position {i + 1} of {len(value)}"
    return None
