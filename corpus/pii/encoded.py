"""Personal data written in an encoding: percent (URL) encoding, HTML character references, base64.

These three are what a form, a web page or a log hands a corpus most often
("john%40example.com", "john&#64;example&#46;com", "am9obkBleGFtcGxlLmNvbQ=="); quoted-printable
("john=40example.com", mail bodies) and others are not decoded. A token (a run of characters
without white space) that holds an escape of its encoding is decoded and the decoded text is
scanned with the plain detectors; a hit there makes the whole token a hit of that kind. A base64
token is decoded only when it is 12 to 2048 characters of the alphabet (standard or URL-safe, padded
or not) and decodes to printable UTF-8 text, so hex digests and ids (which decode to bytes that are
not text) cost one failed decode and are never hits.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
from collections.abc import Callable
from urllib.parse import unquote

__all__ = ["ENCODINGS", "scan_encoded"]

#: The encodings decoded, in the order tried.
ENCODINGS = ("percent", "html", "base64")

_PERCENT = re.compile(r"[^\s%]*(?:%[0-9A-Fa-f]{2}[^\s%]*)+")
_ENTITY = re.compile(r"[^\s&]*(?:&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});[^\s&]*)+")
_BASE64 = re.compile(r"(?<![\w+/=-])(?=[A-Za-z0-9+/_-]{0,2047}[A-Z0-9])[A-Za-z0-9+/_-]{12,2048}={0,2}(?![\w+/=-])")


def _b64(token: str) -> str | None:
    t = token.rstrip("=")
    if len(t) % 4 == 1 or not (any(c.isdigit() for c in t) or any(c.isupper() for c in t[1:])):
        return None
    t += "=" * (-len(t) % 4)
    try:
        raw = base64.b64decode(t.replace("-", "+").replace("_", "/"), validate=True)
        out = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return out if out.isprintable() and any(c.isalpha() for c in out) else None


def scan_encoded(text: str, scan: Callable[[str], list[str]]) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of tokens of ``text`` whose decoded form holds personal data.

    ``scan`` gives the kinds found in a decoded text (the plain detectors).
    """
    out: list[tuple[int, int, str]] = []
    if "%" in text:
        for m in _PERCENT.finditer(text):
            kinds = scan(unquote(m.group()))
            if kinds:
                out.append((m.start(), m.end(), kinds[0]))
    if "&" in text and ";" in text:
        for m in _ENTITY.finditer(text):
            kinds = scan(html.unescape(m.group()))
            if kinds:
                out.append((m.start(), m.end(), kinds[0]))
    for m in _BASE64.finditer(text):
        decoded = _b64(m.group())
        if decoded is not None:
            kinds = scan(decoded)
            if kinds:
                out.append((m.start(), m.end(), kinds[0]))
    return out
