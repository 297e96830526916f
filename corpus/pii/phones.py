"""Phone numbers in national formats, found by Google's libphonenumber (the ``phonenumbers`` package).

:mod:`corpus.pii.exact` finds international numbers and the common national shapes (a trunk ``0``
then groups split by spaces or hyphens, the North American 3-3-4). National formats vary too much
for one pattern ("030/12345678", "0171-1234567", "089 / 123 45 67", "08-123 456 78", "612 345 678"),
so each place that could hold one is handed to :class:`phonenumbers.PhoneNumberMatcher` for the
regions of :data:`REGIONS`, with leniency ``VALID``: a number is a hit only where libphonenumber's
metadata says a real number of that region has that length and those leading digits.

Precision: the matcher already refuses dates, clock times and digit runs that continue into a
word; on top of that a national number must hold at least 9 digits (8 for a Danish or Norwegian number, whose length is 8: "32 12 34 56",
or a Swedish one with its area code and a dash: "08-12 34 56"; "+49 30 1234" is cut short), not be
in the US SSN shape 3-2-4 ("666-12-3456" is not a phone either), no date, no group after the
first of one digit, dots only in the 3-3-4 shape ("01.02.03.04.05" is not a phone) ("3 4 5 6 7 8 9 10"), and either start with a trunk ``0``/``+`` or be written in at
least three groups, the first of 3+ digits not starting with 1 (so "1234567890", "123 456 789" and
"123 456" stay numbers; "612 345 678", a Spanish mobile, is a hit; a first group of 2 digits only in
four groups or more of an 8-digit region: "32 12 34 56"), and a
candidate inside a longer token ("sim-1-0000123", "v1.2.3") is refused as in the exact scanner.

Speed: libphonenumber is slow (about 0.1 ms a region), so the matcher runs only on a run of digit and
separator characters holding 8 digits that starts and ends a token and holds no date (:data:`_HINT`:
"sim-1-0000123", "2026-11-29T10:00:00Z" never reach it), on a window around that run.
"""

from __future__ import annotations

import re

from phonenumbers import Leniency, PhoneNumberMatcher, region_code_for_number

from corpus.pii.exact import DATE as _DATE

__all__ = ["REGIONS", "scan_phones"]

#: Regions whose national formats are looked for (the corpus's languages and the probe's countries).
REGIONS = ("DE", "FR", "GB", "US", "ES", "IT", "NL", "PL", "SE", "DK", "FI", "NO", "BE", "CH", "AT", "PT", "IE")

#: Regions whose numbers have 8 digits and no trunk 0 ("32 12 34 56"); Sweden's "08-12 34 56" is the other
#: 8-digit form taken (an area code and a dash).
_EIGHT = frozenset({"DK", "NO"})
_SE_AREA = re.compile(r"0[0-9]{1,3}-")
_HINT = re.compile(r"(?<![\w.+/:#-])[0-9+(][0-9 ()/.-]{6,}[0-9](?![\w/]|[.:-][0-9])")
_SEP = re.compile(r"[ ()/.-]+")


def _plausible(raw: str, text: str, start: int, end: int, region: str | None) -> bool:
    digits = sum(c.isdigit() for c in raw)
    if digits < 9 and not (digits == 8 and "(" not in raw and (
            region in _EIGHT and raw[0] not in "01" or region == "SE" and _SE_AREA.match(raw))):
        return False
    before = text[start - 1] if start else ""
    after = text[end] if end < len(text) else ""
    if before and (before.isalnum() or before in "_.+/-:#") or after and (after.isalnum() or after in "_/"):
        return False
    if after in ".-:" and end + 1 < len(text) and text[end + 1].isdigit():
        return False
    if _DATE.search(raw):
        return False
    groups = [g for g in _SEP.split(raw) if g]
    if raw[0] != "+" and any(len(g) < 2 for g in groups[1:]) or [len(g) for g in groups] == [3, 2, 4]:
        return False
    if "." in raw and raw[0] != "+" and [len(g) for g in groups] != [3, 3, 4]:
        return False  # "01.02.03.04.05": a dotted national number is 3-3-4, as in the exact scanner
    if raw.count("(") != raw.count(")"):
        return False
    if raw[0] in "+0(":
        return True
    if raw[0] == "1" or len(groups) < 3:
        return False
    return len(groups[0]) >= 3 or region in _EIGHT and len(groups) >= 4


def scan_phones(text: str) -> list[tuple[int, int]]:
    """Spans of phone numbers in national (or international) formats in ``text``."""
    out: list[tuple[int, int]] = []
    pos = 0
    while (m := _HINT.search(text, pos)) is not None:
        if sum(c.isdigit() for c in m.group()) < 8 or _DATE.search(m.group()) is not None:
            pos = m.end()
            continue
        a, b = max(0, m.start() - 4), min(len(text), m.end() + 4)
        window = text[a:b]
        found: tuple[int, int] | None = None
        for region in REGIONS:
            for pm in PhoneNumberMatcher(window, region, leniency=Leniency.VALID):
                s, e, raw = a + pm.start, a + pm.end, pm.raw_string
                if raw.count("(") > raw.count(")") and raw[0] == "(":  # "(06/12345678)": the bracket is the text's
                    s, raw = s + 1, raw[1:]
                if _plausible(raw, text, s, e, region_code_for_number(pm.number)) and (found is None or e - s > found[1] - found[0]):
                    found = (s, e)
            if found is not None and found[0] <= m.start() and found[1] >= m.end():
                break
        if found is not None:
            out.append(found)
        pos = m.end()
    return out

