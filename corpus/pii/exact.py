"""The exact detectors of the PII scanner (:mod:`corpus.pii`): e-mail, phone shapes, IP, card, IBAN, US SSN.

These are the patterns whose shape (and checksum) decides: they stay regexes. The kinds that need a
library or context (national phone formats, national identity numbers, names, addresses, encoded
forms, values split across fields) are in the sibling modules; :mod:`corpus.pii.scanner` joins them.

Before a corpus release every text field is scanned; each hit is listed and the
release is refused unless the hit is redacted. This module looks for seven kinds
(:data:`EXACT_KINDS`) and is tuned for precision as much as for recall, because
the corpus is full of numbers that are not personal data: clock times
("3:44 pm", "15:46:00"), dates and ISO timestamps ("2026-11-29T10:00:00Z"),
grid cells ("C3"), decimals ("0.75", "1e-6"), versions ("v0.1", "2.13.0"), hex
digests, counts ("Step 3 of 14", "2+2=4") and ids ("sim-1-0000123",
"7f3a.t2.cf0", "consent/2026/001"), and full of prose with "at" and "dot" in it
("look at the dot on the grid").

Normalisation. Text that is not plain ASCII is matched in its NFKC form with the
invisible format characters (Unicode category Cf: zero-width space and joiners,
soft hyphen, bidi controls, BOM, ...) taken out, so a full-width "＠" or digit, a
no-break space or a zero-width space inside an address hides nothing. A hit is
reported at, and redaction replaces, the span of the *original* text it came
from (the format characters inside it included); :attr:`PiiHit.value` holds the
normalised (for an obfuscated e-mail: the plain ``local@domain``) form.

Rules
-----
Tokens. A hit never starts or ends inside a longer token: it must not touch a
letter, digit or ``_`` on either side, nor continue into one through ``.``,
``-``, ``/``, ``+`` or ``:`` (so "sim-1-0000123", "1.2.3.4.5", "v1.2.3.4",
"10:00 ..." and digit runs inside hex digests are never split into a hit).
Only ASCII digits count as digits.

email
    ``local@domain.tld``: a dot-atom local part of word characters and ``%+-``,
    one or more domain labels (letters, digits, inner hyphens) and a top-level
    domain of at least 2 letters or an IDN ``xn--`` label; letters and digits of
    any script count ("josé@bücher.de", "иван@пример.рф" are hits).
    "user@localhost" (no TLD) is not a hit. Obfuscated forms are hits too:

    * "@" written with single spaces around it ("john @ example.com"), when the
      top-level domain is a common one (:data:`_COMMON_TLDS`) and no "(" follows
      (so code such as "x @ self.weight" or "W @ x.to(device)" stays clear);
    * "@" and "." written as ``at`` / ``dot`` in brackets (``[at]``, ``(at)``,
      ``{at}``, ``<at>``, any case, spaces allowed): "john[at]example[dot]com",
      "john (at) example (dot) com", "john(at)example.com";
    * ``at`` / ``dot`` as plain words ("john at example dot com", "john.doe AT
      example DOT org"): a plain ``at`` needs a ``dot`` word (or bracket) in the
      domain ("page at example.com" is prose, not an address), no part may be a
      common English word (:data:`_STOPWORDS`: "look at the dot com bubble"),
      and after a plain ``dot`` the top-level domain must be a common one that is
      not an English word ("look at the dot on the grid"; so "at example dot in"
      is a known gap).

    The hit covers the whole written form, separators and brackets included.
phone
    10 to 15 digits in all (E.164 allows 7-15; fewer than 10 is refused so that
    times, dates and counts stay clear), written as digit groups separated by
    single spaces, hyphens or dots, with optional parenthesised groups:

    * international: a leading ``+`` and the country code, any grouping, e.g.
      "+1 415 555 0167", "+44 (0)20 7946 0958", "+14155550167";
    * national, one of: a parenthesised area code first ("(415) 555-0167",
      "(020) 7946 0958"); a trunk prefix ``0`` (first group 2-5 digits starting
      with 0 then 1-9, or with 00 then 1-9, every other group at least 2
      digits, spaces or hyphens: "020 7946 0958", "06 12 34 56 78",
      "0044 20 7946 0958"; not "000-000-0000"); or the North
      American 3-3-4 shape with an area code starting 2-9 and one kind of
      separator, optionally after a "1" ("415-555-0167", "415.555.0167",
      "1 415 555 0167").

    A bare digit run without ``+`` ("4155550167") is a number, not a phone.
    Between groups of a national number there is one kind of separator (the
    space or nothing around a parenthesised group excepted); a dotted national
    number must be 3-3-4 (so "01.02.03.04.05" is not a hit). A candidate
    containing a date (2026-11-29, 29.11.2026, 29 11 2026) is refused, and a
    number followed by ``:`` and a digit is a time, not a phone.
ipv4
    Four dotted decimal octets, each 0-255 without leading zeros ("010.1.1.1" is
    not canonical and is not a hit), not part of a longer dotted sequence:
    "1.2.3.4.5" and "v1.2.3.4" are not hits. Every valid address is a hit,
    loopback and private ones included (the gate errs on the side of redaction).
    "1.0.0.1" IS a hit: it is a real public address (a DNS resolver) and a
    bare four-part version string cannot be told from it by its shape; four-part
    versions are a tolerated false positive, and "v1.0.0.1" is not a hit, nor
    is an address right after a version word ("version 1.2.3.4", "release
    10.0.0.1", "build: 1.2.3.4", "pkg==1.2.3.4"; :data:`_VERSION_BEFORE`).
ipv6
    Full, compressed and IPv4-suffixed forms ("2001:0db8:0000:0000:0000:ff00:0042:8329",
    "2001:db8::1", "::1", "::ffff:192.0.2.1"), confirmed by
    :class:`ipaddress.IPv6Address`. A candidate needs at least two colons, at
    least one decimal digit (so code paths such as "dead::beef" or "Foo::bar"
    are not hits) and must not end with a colon ("f32::" in code). Clock times
    ("3:44", "15:46:00") are never valid addresses.
card
    13 to 19 digits, contiguous or grouped by single spaces, single hyphens or
    single dots (one kind per number), passing the Luhn check and starting with an issuer
    prefix of its length: Visa 4 (13, 16 or 19 digits), Mastercard 51-55 and
    2221-2720 (16), Amex 34/37 (15), Diners/JCB 30, 35, 36, 38, 39 (14+),
    Discover/UnionPay/Maestro 6, 50, 56-58. The prefix rule keeps epoch
    timestamps (1732870800000) and lists of years ("2019 2020 2021 2022") clear.
    A grouped number is grouped in fours (the last group 1-4 digits) or 4-6-4
    / 4-6-5 (Diners, Amex): "4111 1111 1111 1111", "5500-0000-0000-0004",
    "3782 822463 10005", "378282246310005", "4111.1111.1111.1111".
iban
    An International Bank Account Number: two capital letters of a country in
    the IBAN registry (:data:`_IBAN_LENGTHS`), two check digits and the account
    number in capitals and digits, exactly the country's length, either compact
    ("DE89370400440532013000", "GB82WEST12345698765432") or grouped in fours by
    single spaces, the last group 1-4 ("DE89 3704 0044 0532 0130 00"); the
    ISO 7064 mod-97 check must give 1. A spaced IBAN is an IBAN, never a phone
    (it starts left of any phone inside it). Letters of any case count
    ("de89 3704 0044 0532 0130 00", "gb82west12345698765432"): the check is made
    on the upper-case form.
ssn
    A US social security number written ``AAA-GG-SSSS``, without the numbers
    never issued: area 000, 666 or 900-999 (ITINs), group 00, serial 0000
    ("123-45-6789" is a hit, "666-12-3456" and "sim-123-45-6789" are not).

Digit runs (phone and card). A run is a maximal sequence of digit groups joined
by single separators; within it the leftmost, longest valid *window* of whole
groups is taken, and the search goes on after it. A window starts at the run's
start or after a space and ends at the run's end or before a space, so it never
cuts a hyphen- or dot-joined token ("ref 12 (415) 555-0167" yields the phone,
"12-415-555-0167" yields nothing). Shapes that are ambiguous with a list of
numbers need more: a card grouped by spaces must not have another group of 3+
digits next to it in the run, and a North American number grouped by spaces no
other digit group at all. So "2631 6290 9521 9944" and
"4111 1111 1111 1111 12/28" hold a card, but the same four groups inside the list
"7654 2631 6290 9521 9944 1612" do not (nor do two space-grouped cards written
one after the other with a single space, a known gap), and "6 415 555 0167 2"
holds no phone.

:func:`scan_exact` returns every hit, overlapping ones included; :mod:`corpus.pii.scanner` resolves
overlaps (leftmost first, then longest, then by :data:`PRIORITY`: card, iban, email, ssn, national_id,
ipv6, ipv4, phone, address, name) together with the other modules' hits. :meth:`PiiHit.masked` gives a
display form that does not reprint the value (a name or an address: only its number of words).

Speed. Each detector runs only where a cheap test passes: email needs ``@``
(an obfuscated one "dot" or "DOT", or a bracketed "at" or "AT"; so "Dot" and
"dOt" are found only beside one of those), ipv6 ``::`` or ``:h:h:h:h:`` (hex
groups), ipv4 the fast regex for ".d.d.d", phone and card 10 characters of
digits and separators in a row (``[+(0-9][0-9 ().-]{9}``), ssn that and "-",
iban that and two capitals before two digits (every IBAN format holds 10 such
characters in a row: its account number); the exact, slower patterns run only
from those places. A field with none of these
costs a few substring tests and a few regex scans that skip on their first
character. ASCII text (most of a corpus) is not normalised.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["EXACT_KINDS", "PII_KINDS", "PiiHit", "normalise", "scan_exact"]

#: The kinds of personal data the scanner reports.
PII_KINDS: tuple[str, ...] = ("email", "phone", "ipv4", "ipv6", "card", "iban", "ssn", "national_id", "name",
                              "address")
#: The kinds this module finds.
EXACT_KINDS: tuple[str, ...] = PII_KINDS[:7]

#: Which kind wins when two hits have the same span (lower first).
PRIORITY = {"card": 0, "iban": 1, "email": 2, "ssn": 3, "national_id": 4, "ipv6": 5, "ipv4": 6, "phone": 7,
            "address": 8, "name": 9}
_DIGITS = "0123456789"

# Every character of Unicode category Cf (format: invisible), as of Unicode 15; a test checks it against
# the running Python's unicodedata.
_FORMAT_CHARS = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)

# An e-mail's parts (``\w`` is any script's letters and digits, and ``_``).
_LABEL = r"[^\W_](?:(?:[^\W_]|-){0,61}[^\W_])?"
_TLD = r"(?:xn--[a-z0-9-]{1,59}|[^\W\d_]{2,63})"
_EMAIL = re.compile(
    rf"(?<![\w%+.-])[\w%+-]+(?:\.[\w%+-]+)*(?P<at>@| @ )(?:{_LABEL}\.)+(?P<tld>{_TLD})(?![\w-])"
)
# Obfuscated "@" and ".": a bracketed word, a plain word, or (with another obfuscated separator) the sign itself.
_OPEN, _CLOSE = r"[\[({<]", r"[\])}>]"
_OB_AT = (rf"(?:[ \t]?{_OPEN}[ \t]?(?i:at)[ \t]?{_CLOSE}[ \t]?|[ \t]{{1,3}}(?i:at)[ \t]{{1,3}}"
          r"|[ \t]@[ \t]|@)")
_OB_DOT = rf"(?:[ \t]?{_OPEN}[ \t]?(?i:dot)[ \t]?{_CLOSE}[ \t]?|[ \t]{{1,3}}(?i:dot)[ \t]{{1,3}}|\.)"
_OB_DOT_RE = re.compile(_OB_DOT)
_OBFUSCATED = re.compile(
    rf"(?<![\w%+.-])(?P<local>[\w%+-]{{1,64}}(?:{_OB_DOT}[\w%+-]{{1,64}}){{0,7}})(?P<at>{_OB_AT})"
    rf"(?P<domain>(?:{_LABEL}{_OB_DOT}){{1,8}}(?P<tld>{_TLD}))(?![\w-])"
)  # bounded (local parts of at most 8 atoms, domains of at most 9 labels): "dot dot dot ..." stays linear
# a bracketed "at"; first "at" or "AT" before a closing bracket (a literal first: a fast search)
_BRACKET_AT = re.compile(rf"{_OPEN}[ \t]?[aA][tT][ \t]?{_CLOSE}")
_AT_CLOSING = (re.compile(rf"at[ \t]?{_CLOSE}"), re.compile(rf"AT[ \t]?{_CLOSE}"))
#: Top-level domains an address written with a spaced "@" or a plain "dot" must end in: common ones that are
#: not English words (so "in", "it", "is", "me", "no", "to", "us", "at", "be", "do", "so", "la" are left out).
_COMMON_TLDS = frozenset(
    "com org net edu gov mil int info biz name pro mobi io ai co app dev xyz online site tech email mail cloud "
    "uk de fr es nl se ch ca au jp cn ru br pl eu dk fi nz za kr tw hk sg mx ar cz gr hu ro pt ie il tr ua cl "
    "pe ve ly fm tv cc ws lu lt lv ee sk si hr rs bg by kz th vn ph my id ng ke eg sa ae qa ir pk bd lk np "
    "jo kw om".split())
#: Words that are not part of an address written with plain "at" / "dot" words ("look at the dot com bubble").
_STOPWORDS = frozenset(
    "a an the this that these those my your his her its our their some any each every no one all another other "
    "it me you us we they he she him them i to of in on and or is are was were be been not here there where "
    "what who which look looks looking looked stare staring point pointing aim aiming meet meeting arrive "
    "arrived red blue green black white big small same".split())

_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27, "BR": 29,
    "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
    "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
    "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28,
    "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20,
    "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25,
    "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27,
    "SO": 23, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}
_IBAN_HINT = re.compile(r"[A-Za-z][A-Za-z][0-9][0-9]")
_IBAN = re.compile(r"[A-Za-z]{2}[0-9]{2}(?:[A-Za-z0-9]{11,30}|(?: [A-Za-z0-9]{4}){2,7}(?: [A-Za-z0-9]{1,4})?)")
_SSN = re.compile(r"-([0-9]{2})-([0-9]{4})")  # the area number's 3 digits are checked before it
#: Words right before a dotted quad that make it a version, not an address.
_VERSION_BEFORE = re.compile(
    r"(?:(?<![\w])(?i:version|ver|v|release|rel|build|rev|revision|firmware|update|updated|upgrade|upgraded"
    r"|upgrading|patch|tag|pkg|package)(?:[ \t]*[:=#]?[ \t]*|[ \t]+to[ \t]+)|[=<>~!]=[ \t]*)$"
)

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w]|\.[0-9A-Za-z])")

_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,8}"
    r"(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}(?![0-9])|[0-9A-Fa-f]{0,4})"
)

# A run of digit groups (with an optional leading "+", parenthesised groups and
# single separators) in which phones and cards are looked for.
# It may not start right after a word character, a joiner (. - / +) or
# "<digit>:" (a clock time).
_RUN = re.compile(
    r"(?<![\w.+/-])(?<![0-9]:)"
    r"(?:\+[0-9]+|\([0-9]{1,5}\)|[0-9]+)"
    r"(?:[ .-]?\([0-9]{1,5}\)|(?<=\))[0-9]+|[ .-][0-9]+)*"
)
# Cheap gates, each starting with a literal or a small class so that ``re`` skips
# through text quickly: the start of 10 run characters in a row (a run with 10
# digits has at least that), and ".d.d.d" (the tail of a dotted quad).
_RUN_HINT = re.compile(r"[+(0-9][0-9 ().-]{9}")
_IPV4_HINT = re.compile(r"\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]")
# an IPv6 address without "::" has 7 colons (6 before an IPv4 tail): 4 hex groups between 5 of them
_IPV6_HINT = re.compile(r":[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:")
_ATOM = re.compile(r"([ .-]?)(\+[0-9]+|\([0-9]{1,5}\)|[0-9]+)")

_TRUNK = re.compile(r"0[1-9]|00[1-9]")
DATE = re.compile(
    r"(?<![0-9])(?:(?:19|20)[0-9]{2}([-./ ])(?:0?[1-9]|1[0-2])\1(?:0?[1-9]|[12][0-9]|3[01])"
    r"|(?:0?[1-9]|[12][0-9]|3[01])([-./ ])(?:0?[1-9]|1[0-2])\2(?:19|20)[0-9]{2})(?![0-9])"
)


@dataclass(frozen=True)
class PiiHit:
    """One piece of personal data: ``text == source[start:end]``.

    ``value`` is the normalised form that was matched when it differs from ``text``
    (NFKC, format characters removed; an obfuscated e-mail as ``local@domain``),
    else ``None``; it is not part of a hit's equality.
    """

    kind: str
    start: int
    end: int
    text: str
    value: str | None = field(default=None, compare=False)

    def masked(self) -> str:
        """A display form that shows the kind and shape but not the value.

        email "j***@e***.org"; phone keeps a leading "+CC" group and the last 2
        digits ("+1 *** *** **67"); card keeps the first 4 and last 4 digits
        ("4111 **** **** 1111"); ipv4 keeps the first octet ("192.*.*.*");
        ipv6 keeps the first group ("2001:****"); iban keeps the country and
        the last 2 characters ("DE** **** **** **** **** 00"); ssn the last 2
        digits ("***-**-**89"). Made from :attr:`value` when there is one.
        """
        t = self.value or self.text
        if self.kind in ("name", "address"):  # initials would say too much of a short name: only the size
            return f"<{self.kind}: {len(t.split())} word(s)>"
        if self.kind == "national_id":
            alnum = [i for i, c in enumerate(t) if c.isalnum()]
            keep = set(alnum[-2:])
            return "".join(c if i in keep or not c.isalnum() else "*" for i, c in enumerate(t))
        if self.kind == "iban":
            alnum = [i for i, c in enumerate(t) if c.isalnum()]
            keep = set(alnum[:2] + alnum[-2:])
            return "".join(c if i in keep or not c.isalnum() else "*" for i, c in enumerate(t))
        if self.kind == "email":
            local, domain = t.rsplit("@", 1)
            labels = domain.split(".")
            return f"{local[0]}***@{labels[0][0]}***.{labels[-1]}"
        if self.kind == "ipv4":
            return t.split(".", 1)[0] + ".*.*.*"
        if self.kind == "ipv6":
            return t.split(":", 1)[0] + ":****"
        if self.kind == "card":
            n = sum(c.isdigit() for c in t)
            keep = lambda i: i < 4 or i >= n - 4  # noqa: E731
        elif self.kind == "ssn":
            keep = lambda i: i >= 7  # noqa: E731
        else:  # phone
            n = sum(c.isdigit() for c in t)
            cc = 0
            m = re.match(r"\+([0-9]{1,3})(?![0-9])", t)
            if m:
                cc = len(m.group(1))
            keep = lambda i: i < cc or i >= n - 2  # noqa: E731
        out, i = [], 0
        for c in t:
            if c.isdigit():
                out.append(c if keep(i) else "*")
                i += 1
            else:
                out.append(c)
        return "".join(out)


def _luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = ord(c) - 48
        if i & 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card_brand_ok(digits: str) -> bool:
    """Whether the number starts with an issuer prefix (IIN) of a payment card and has its length."""
    n = len(digits)
    d1, d2, d4 = int(digits[0]), int(digits[:2]), int(digits[:4])
    if d1 == 4:                                   # Visa
        return n in (13, 16, 19)
    if d2 in (34, 37):                            # American Express
        return n == 15
    if 51 <= d2 <= 55 or 2221 <= d4 <= 2720:      # Mastercard
        return n == 16
    if d2 in (30, 36, 38, 39, 35):                # Diners Club, JCB
        return n >= 14
    return d1 == 6 or d2 in (50, 56, 57, 58)     # Discover, UnionPay, Maestro


def _is_card(atoms: list[tuple[str, str]], around: tuple[str, ...]) -> bool:
    """``atoms``: the (separator, group) pairs of one window; ``around``: the groups next to it in its run."""
    groups = [g for _, g in atoms]
    if len(groups) > 5 or not all(g.isdigit() for g in groups):  # no "+..." or "(...)"
        return False
    digits = "".join(groups)
    if not 13 <= len(digits) <= 19 or not _card_brand_ok(digits):
        return False
    if len(groups) > 1:
        seps = {s for s, _ in atoms[1:]}
        if seps not in ({" "}, {"-"}, {"."}):
            return False
        if seps == {" "} and any(g.isdigit() and len(g) >= 3 for g in around):  # "7654 2631 ... 1612" lists
            return False
        sizes = [len(g) for g in groups]
        if sizes not in ([4, 6, 4], [4, 6, 5]) and not (sizes[:-1] == [4] * (len(sizes) - 1) and sizes[-1] <= 4):
            return False
    return _luhn(digits)


def _is_phone(atoms: list[tuple[str, str]], window: str, around: tuple[str, ...]) -> bool:
    """``atoms``: the (separator, group) pairs of one window; ``window``: its text; ``around``: see :func:`_is_card`."""
    ndigits = sum(map(window.count, _DIGITS))
    if not 10 <= ndigits <= 15 or DATE.search(window):
        return False
    groups = [g for _, g in atoms]
    if groups[0].startswith("+"):
        return True
    # National. One kind of separator between groups; around a "(...)" group it is free.
    seps = {sep for (sep, g), (_, prev) in zip(atoms[1:], atoms) if not prev.endswith(")") and not g.startswith("(")}
    if len(seps) > 1:
        return False
    sep = seps.pop() if seps else " "
    bare = [g.strip("()") for g in groups]
    sizes = [len(g) for g in bare]
    # North American 3-3-4 with an area code 2-9, optionally after a bare "1"
    if sizes == [3, 3, 4] or (sizes == [1, 3, 3, 4] and groups[0] == "1"):
        listed = sep == " " and "(" not in window and any(g.isdigit() for g in around)  # "6 415 555 0167 2"
        if bare[-3][0] not in "01" and not listed:
            return True
    if sep == "." or any(s < 2 for s in sizes):
        return False
    # a parenthesised area code, or a trunk prefix 0 / international prefix 00 (first group of 2-5 digits)
    return groups[0].startswith("(") or (sizes[0] <= 5 and _TRUNK.match(bare[0]) is not None)


def _continues(text: str, end: int) -> bool:
    """Whether ``text`` goes on past ``end`` as part of the same token."""
    if end >= len(text):
        return False
    c = text[end]
    if c.isalnum() or c == "_":
        return True
    return c in ".:/+-" and end + 1 < len(text) and text[end + 1].isalnum()


_MAX_WINDOW_ATOMS = 8  # a phone or card has at most 8 groups (and at most 19 digits)


def _scan_runs(text: str, out: list[PiiHit], hint: re.Match | None) -> None:
    """Phones and cards: the leftmost, longest valid windows of whole groups in each digit run."""
    while hint is not None:
        # no run of 10+ digits starts before the hint (it would contain an earlier one)
        m = _RUN.search(text, hint.start())
        if m is None:
            return
        hint = _RUN_HINT.search(text, m.end())
        run = m.group()
        if len(run) < 10 or sum(map(run.count, _DIGITS)) < 10:
            continue
        base = m.start()
        atoms = [(a.group(1), a.group(2), base + a.start(2), base + a.end(2)) for a in _ATOM.finditer(run)]
        n = len(atoms)
        # a window starts at the run start or after a space, and ends at the run end or before a space
        starts = [0] + [i for i in range(1, n) if atoms[i][0] == " "]
        ends = [j for j in range(1, n) if atoms[j][0] == " "]
        if not _continues(text, m.end()):
            ends.append(n)
        next_free = 0
        for i in starts:
            if i < next_free:
                continue
            for j in reversed(ends[bisect_right(ends, i):bisect_right(ends, i + _MAX_WINDOW_ATOMS)]):
                pairs = [(s, g) for s, g, _, _ in atoms[i:j]]
                a0, a1 = atoms[i][2], atoms[j - 1][3]
                window = text[a0:a1]
                around = (atoms[i - 1][1] if i else "", atoms[j][1] if j < n else "")
                kind = "card" if _is_card(pairs, around) else "phone" if _is_phone(pairs, window, around) else None
                if kind:
                    out.append(PiiHit(kind, a0, a1, window))
                    next_free = j
                    break


def _scan_email(text: str, out: list[PiiHit]) -> None:
    pos = 0
    while (m := _EMAIL.search(text, pos)) is not None:
        if m.group("at") != "@" and (m.group("tld").lower() not in _COMMON_TLDS or text[m.end():m.end() + 1] == "("):
            pos = m.start() + 1  # "x @ self.weight", "W @ x.to(device)": code, not an address
            continue
        out.append(PiiHit("email", m.start(), m.end(), m.group()))
        pos = m.end()


def _separator_form(sep: str) -> str:
    s = sep.strip(" \t")
    return "sign" if s in ("@", ".") else "bracket" if s[0] in "[({<" else "word"


def _plain_email(m: re.Match) -> str | None:
    """``local@domain`` for an obfuscated address ``m`` of :data:`_OBFUSCATED`, or None where it is not one."""
    local, at, domain = m.group("local"), m.group("at"), m.group("domain")
    local_dots, domain_dots = _OB_DOT_RE.findall(local), _OB_DOT_RE.findall(domain)
    forms = [_separator_form(s) for s in (at, *local_dots, *domain_dots)]
    if all(f == "sign" for f in forms):
        return None  # a plain address: _EMAIL's
    parts = _OB_DOT_RE.split(local) + _OB_DOT_RE.split(domain)
    if "word" in forms and any(p.lower() in _STOPWORDS for p in parts):
        return None
    at_form = forms[0]
    if at_form == "word" and all(_separator_form(s) == "sign" for s in domain_dots):
        return None  # "the page at example.com"
    last = _separator_form(domain_dots[-1])
    if (last == "word" or at.strip(" \t") != at and at_form == "sign") and m.group("tld").lower() not in _COMMON_TLDS:
        return None  # "look at the dot on the grid", "x @ self[dot]weight"
    return ".".join(_OB_DOT_RE.split(local)) + "@" + ".".join(_OB_DOT_RE.split(domain))


def _scan_obfuscated_email(text: str, out: list[PiiHit]) -> None:
    pos = 0
    while (m := _OBFUSCATED.search(text, pos)) is not None:
        plain = _plain_email(m)
        if plain is None:
            pos = m.start() + 1
            continue
        out.append(PiiHit("email", m.start(), m.end(), m.group(), plain))
        pos = m.end()


def _iban_ok(compact: str) -> bool:
    compact = compact.upper()
    if _IBAN_LENGTHS.get(compact[:2]) != len(compact):
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _scan_iban(text: str, out: list[PiiHit], hint: re.Match | None) -> None:
    while hint is not None:
        start = hint.start()
        pos = start + 1
        m = _IBAN.match(text, start)
        if m is not None and (start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "_.+/-")):
            length = _IBAN_LENGTHS.get(m.group()[:2].upper(), 0)
            end, n = start, 0
            for c in m.group():  # the shortest prefix holding the country's length of characters
                end += 1
                n += c != " "
                if n == length:
                    break
            cand = text[start:end]
            if n == length and not _continues(text, end) and _iban_ok(cand.replace(" ", "")):
                out.append(PiiHit("iban", start, end, cand))
                pos = end
        hint = _IBAN_HINT.search(text, pos)


def _scan_ssn(text: str, out: list[PiiHit]) -> None:
    for m in _SSN.finditer(text):
        group, serial = m.groups()
        start = m.start() - 3
        area = text[max(0, start):m.start()]
        if start < 0 or not (area.isdigit() and area.isascii()):
            continue
        if start and (text[start - 1].isalnum() or text[start - 1] in "_.+/-"):
            continue
        if area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000" or _continues(text, m.end()):
            continue
        out.append(PiiHit("ssn", start, m.end(), text[start:m.end()]))


def _scan_ipv4(text: str, out: list[PiiHit], hint: re.Match | None) -> None:
    while hint is not None:
        dot = hint.start()  # the first octet is the 1-3 characters before it
        pos = dot + 1
        for start in range(max(0, dot - 3), dot):
            m = _IPV4.match(text, start)
            if m is not None:
                if not _VERSION_BEFORE.search(text, max(0, start - 24), start):
                    out.append(PiiHit("ipv4", m.start(), m.end(), m.group()))
                pos = m.end()
                break
        hint = _IPV4_HINT.search(text, pos)


def _scan_ipv6(text: str, out: list[PiiHit], near: int) -> None:
    # an address is at most 45 characters long, so none that contains the
    # first "::" or hint (at ``near``) starts more than 45 characters before it
    for m in _IPV6.finditer(text, max(0, near - 45)):
        cand = m.group()
        if cand.endswith(":") or cand.count(":") < 2 or not any(c.isdigit() for c in cand):
            continue
        if _continues(text, m.end()) or text[m.end():m.end() + 1] == ":":
            continue
        try:
            ipaddress.IPv6Address(cand)
        except ValueError:
            continue
        out.append(PiiHit("ipv6", m.start(), m.end(), cand))


def _no_format_chars(text: str) -> bool:
    # str.isprintable() is False for every Cf character (and for line breaks and tabs): a fast first test
    return (text.isprintable() or text.replace("\n", "").replace("\t", "").replace("\r", "").isprintable()
            or _FORMAT_CHARS.search(text) is None)


_NFKC_CHAR: dict[str, str] = {}  # a cache: character -> its NFKC form ("" for a format character)


def _nfkc_char(c: str) -> str:
    v = _NFKC_CHAR.get(c)
    if v is None:
        v = "" if _FORMAT_CHARS.match(c) else unicodedata.normalize("NFKC", c)
        if len(_NFKC_CHAR) < 65536:
            _NFKC_CHAR[c] = v
    return v


def _normalise_clusters(text: str) -> tuple[str, list[int], list[int]]:
    """:func:`normalise` for text with combining marks: each base character is normalised with its marks."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i, n = 0, len(text)
    while i < n:
        j = i + 1
        while j < n and unicodedata.category(text[j])[0] == "M":
            j += 1
        piece = text[i:j]
        if not piece.isascii():
            piece = "".join(_nfkc_char(c) for c in piece) if j == i + 1 else unicodedata.normalize(
                "NFKC", _FORMAT_CHARS.sub("", piece))
        out.append(piece)
        starts.extend([i] * len(piece))
        ends.extend([j] * len(piece))
        i = j
    return "".join(out), starts, ends


def normalise(text: str) -> tuple[str, list[int] | None, list[int] | None]:
    """``text`` as the scanner matches it, and where each of its characters came from.

    Returns ``(norm, starts, ends)``: ``norm`` is ``text`` without its format characters
    (Unicode category Cf) and in NFKC form, taken character by character (a base
    character together with its combining marks); ``norm[i]`` came from
    ``text[starts[i]:ends[i]]``. ``starts`` and ``ends`` are None where every character
    of ``norm`` came from the one at its own position (``norm`` is then ``text``, or
    ``text`` with characters replaced one for one: a full-width "＠", a no-break space).
    """
    if text.isascii() or (unicodedata.is_normalized("NFKC", text) and _no_format_chars(text)):
        return text, None, None
    table: dict[int, str] = {}
    for c in set(text):
        if c > "\x7f":
            if unicodedata.category(c)[0] == "M":
                return _normalise_clusters(text)
            v = _nfkc_char(c)
            if v != c:
                table[ord(c)] = v
    if not table:
        return text, None, None
    norm = text
    for c, v in table.items():  # (str.translate looks every character up: far slower)
        norm = norm.replace(chr(c), v)
    if all(len(v) == 1 for v in table.values()):
        return norm, None, None
    # the characters that became more or fewer than one ("…" -> "...", a zero-width space -> "")
    moved = sorted(i for c, v in table.items() if len(v) != 1 for i in _positions(text, chr(c)))
    starts: list[int] = []
    ends: list[int] = []
    prev = 0
    for i in moved:
        starts.extend(range(prev, i))
        ends.extend(range(prev + 1, i + 1))
        k = len(table[ord(text[i])])
        starts.extend([i] * k)
        ends.extend([i + 1] * k)
        prev = i + 1
    starts.extend(range(prev, len(text)))
    ends.extend(range(prev + 1, len(text) + 1))
    return norm, starts, ends


def _positions(text: str, c: str) -> Iterator[int]:
    i = text.find(c)
    while i >= 0:
        yield i
        i = text.find(c, i + 1)


def scan_exact(text: str) -> list[PiiHit]:
    """The hits of this module's kinds in ``text`` (already normalised), overlapping ones included."""
    found: list[PiiHit] = []
    if "@" in text:
        _scan_email(text, found)
    if ("dot" in text or "DOT" in text
            or (")" in text or "]" in text or "}" in text or ">" in text)
            and (_AT_CLOSING[0].search(text) or _AT_CLOSING[1].search(text)) and _BRACKET_AT.search(text) is not None):
        _scan_obfuscated_email(text, found)
    run_hint = _RUN_HINT.search(text)
    if run_hint is not None:
        # "ddd-dd-dddd" is 11 run characters; every IBAN format has 10 in a row (its account number)
        if "-" in text:
            _scan_ssn(text, found)
        if (hint := _IBAN_HINT.search(text)) is not None:
            _scan_iban(text, found, hint)
    if ":" in text:
        # where the first address can be: at the first "::" or the first ":h:h:h:h:"
        near = text.find("::")
        hint = _IPV6_HINT.search(text)
        if hint is not None and (near < 0 or hint.start() < near):
            near = hint.start()
        if near >= 0:
            _scan_ipv6(text, found, near)
    if "." in text and (hint := _IPV4_HINT.search(text)) is not None:
        _scan_ipv4(text, found, hint)
    if run_hint is not None:
        _scan_runs(text, found, run_hint)
    return found
