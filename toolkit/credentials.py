"""Credentials masked in text a tool shows or stores: header values, URL parts, and known secret values.

A server's error page, a library's exception or a progress line can quote what a request carried:
``Authorization: Basic dXNlcjpwdw==`` (what an HTTP client makes of a URL's ``user:password@``), a
``Bearer``/``Token`` key, a cookie, a URL with ``;jsessionid=...`` or ``?token=...``.
:func:`mask_credentials` masks all of these wherever they stand; only the secret value becomes
``***`` (``Authorization: Basic ***``), the words around it are kept:

* the value of an ``Authorization``, ``Proxy-Authorization``, ``Cookie``, ``Set-Cookie``, ``X-Api-Key``
  or ``X-Auth-Token`` header (as ``Name: value``, in JSON, or as a Python pair ``('name', 'value')``),
  and a ``Basic``/``Bearer`` credential standing alone (base64 of ``user:password``; a token-like value);
* in every URL, what :func:`toolkit.urls.redact_url` removes (``user:password@``, credential parameters of
  the query, the path (``;jsessionid=``) and the fragment), and a credential parameter quoted without
  its URL (``/api/x;token=...``);
* each of ``secrets`` (an API key, a URL's password) where it stands as a value: a secret of at least
  :data:`WHOLE_WORD_BELOW` characters wherever it occurs, a shorter one only as a whole token (not inside
  a word: with the key ``k``, "tracebacks" stays as it is and ``Token k`` becomes ``Token ***``).

It never raises, and text without credentials comes back unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from toolkit.urls import REDACTED, is_credential_name, redact_url

__all__ = ["WHOLE_WORD_BELOW", "mask_credentials", "mask_secret"]

#: Secrets shorter than this are masked only as whole tokens (a short one inside a word is a coincidence).
WHOLE_WORD_BELOW = 8

_HEADER_NAMES = r"(?:proxy-)?authorization|set-cookie|cookie|x-api-key|api-key|x-auth-token"
# a header name, its separator (": ", "=", '": "', or "', '" in a Python pair), an optional scheme, then the value up
# to a space, a quote, a comma, a semicolon or a bracket (a cookie header is masked whole, to the end of the line)
_HEADER = re.compile(
    rf"""(?ix)
    (?P<name>(?<![a-z0-9-])(?:{_HEADER_NAMES}))
    (?P<sep>(?:["']\s*,|["']?\s*[:=])\s*(?:[bu]?["'])?\s*)
    (?P<scheme>(?:basic|bearer|token|digest|negotiate|apikey)\s+)?
    (?P<value>[^\s"',;)}}\]\\]+)""")
_COOKIE_REST = re.compile(r"[^\r\n\"'\\]*")
_SCHEME_ALONE = re.compile(r"\b(Basic|Bearer|basic|bearer)(\s+)([A-Za-z0-9+/_.~-]{8,}=*)")
_URL = re.compile(r"""(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>`{}|\\^\]\[]+""")
_PARAM = re.compile(r"""(?P<mark>[?&;#])(?P<name>[A-Za-z0-9_.%-]+)=(?P<value>[^&;#?\s"'<>,)\]}]+)""")


def mask_secret(text: str, secret: str) -> str:
    """``text`` with ``secret`` as ``***`` where it stands as a value (see the module docstring)."""
    if not secret or secret not in text:
        return text
    if len(secret) >= WHOLE_WORD_BELOW:
        return text.replace(secret, REDACTED)
    # not inside a word: no letter or digit right before (a %XX escape counts as a boundary) or right after
    pattern = rf"(?:(?<![^\W_])|(?<=%[0-9A-Fa-f]{{2}})){re.escape(secret)}(?![^\W_])"
    return re.sub(pattern, REDACTED, text)


def _header(m: re.Match) -> str:
    name, sep, scheme, value = m.group("name", "sep", "scheme", "value")
    return f"{name}{sep}{scheme or ''}{REDACTED}"


def _mask_headers(text: str) -> str:
    out, pos = [], 0
    for m in _HEADER.finditer(text):
        out.append(text[pos:m.start()])
        out.append(_header(m))
        pos = m.end()
        if "cookie" in m.group("name").lower():  # a cookie header's every value, to the end of the line
            pos = _COOKIE_REST.match(text, pos).end()
    out.append(text[pos:])
    return "".join(out)


def _mask_param(m: re.Match) -> str:
    if is_credential_name(m.group("name")) and not m.group("value").startswith(REDACTED):
        return f"{m.group('mark')}{m.group('name')}={REDACTED}"
    return m.group(0)


def _looks_like_credential(scheme: str, value: str) -> bool:
    """Whether ``value`` after a bare ``Basic``/``Bearer`` is one ("Basic information" is not): Basic's is base64 of
    ``user:password``; Bearer's holds a digit or a token's punctuation, or is long."""
    if scheme.lower() == "basic":
        import base64
        import binascii

        try:
            return b":" in base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        except (binascii.Error, ValueError):
            return False
    return bool(re.search(r"[0-9._~+/-]", value)) or len(value) >= 24


def _scheme_alone(m: re.Match) -> str:
    if not _looks_like_credential(m.group(1), m.group(3)):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{REDACTED}"


def mask_credentials(text, secrets: Iterable[str] = ()) -> str:
    """``text`` with every credential it quotes masked (see the module docstring); ``secrets`` are known values
    (an API key, a URL's password) masked where they stand as a value."""
    text = str(text)
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = mask_secret(text, secret)
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    text = _PARAM.sub(_mask_param, text)
    text = _mask_headers(text)
    return _SCHEME_ALONE.sub(_scheme_alone, text)
