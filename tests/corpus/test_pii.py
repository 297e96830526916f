"""pii: hand-worked positives, the corpus's false-positive traps, redaction, masking, and the real corpus."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re

import pytest

import simworld
from corpus.pii import _FORMAT_CHARS, PII_KINDS, PiiHit, normalise, redact, scan_record, scan_text, text_fields
from corpus.pii.exact import EXACT_KINDS
from tests_paths import EXAMPLE_7F3A


def luhn_ok(number: str) -> bool:
    """Independent Luhn check, used to prove the card data below is what it claims to be."""
    digits = [int(c) for c in number if c.isdigit()]
    odd = digits[-1::-2]
    even = [sum(divmod(2 * d, 10)) for d in digits[-2::-2]]
    return (sum(odd) + sum(even)) % 10 == 0


POSITIVES = {
    "email": [
        "john.doe@example.org",
        "a@b.co",
        "first_last+tag@mail.example.co.uk",
        "J.Smith-99@Sub-Domain.Example.COM",
    ],
    "phone": [
        "+1 415 555 0167",
        "+44 (0)20 7946 0958",
        "+14155550167",
        "+49-30-1234567",
        "+33 1 23 45 67 89",
        "(415) 555-0167",
        "415-555-0167",
        "415.555.0167",
        "1 415 555 0167",
        "020 7946 0958",
        "06 12 34 56 78",
        "0044 20 7946 0958",
    ],
    "ipv4": ["192.168.1.1", "8.8.8.8", "255.255.255.255", "0.0.0.0", "1.0.0.1"],
    "ipv6": [
        "2001:0db8:0000:0000:0000:ff00:0042:8329",
        "2001:db8::1",
        "::1",
        "fe80::1ff:fe23:4567:890a",
        "::ffff:192.0.2.1",
    ],
    "card": [
        "4111 1111 1111 1111",  # Visa test card
        "5500-0000-0000-0004",  # Mastercard test card
        "378282246310005",  # Amex test card
        "3782 822463 10005",  # the same, grouped 4-6-5
        "4111111111111111",
        "5555 5555 5555 4444",
        "6011111111111117",  # Discover
        "30569309025904",  # Diners Club, 14 digits
        "2631 6290 9521 9944",  # Mastercard 2-series
        "4111.1111.1111.1111",  # grouped by dots
    ],
    "iban": [
        "DE89370400440532013000",
        "DE89 3704 0044 0532 0130 00",
        "GB82WEST12345698765432",
        "GB82 WEST 1234 5698 7654 32",
        "NL91ABNA0417164300",
        "FR1420041010050500013M02606",
        "BE68539007547034",
        "CH9300762011623852957",
        "NO9386011117947",
    ],
    "ssn": ["123-45-6789", "078-05-1120", "665-01-0001", "899-99-9999"],
}
CASES = [(kind, value) for kind, values in POSITIVES.items() for value in values]

LUHN_INVALID = ["4111 1111 1111 1112", "4111111111111112", "5500-0000-0000-0005", "378282246310006"]

def iban_ok(iban: str) -> bool:
    """Independent ISO 7064 mod-97 check (letters A=10 ... Z=35), used to prove the IBAN data below."""
    s = iban.replace(" ", "")
    s = s[4:] + s[:4]
    return int("".join(str(ord(c) - 55) if c.isalpha() else c for c in s)) % 97 == 1


IBAN_INVALID = ["DE89370400440532013001", "DE89 3704 0044 0532 0130 01", "GB82WEST12345698765433",
                "DE8937040044053201300", "XX89370400440532013000"]

LUHN_VALID_NOT_CARDS = ["411111111111116", "41111111111111113", "711111111111113", "912345678901238", "111111111111119"]

SHA = hashlib.sha256(b"trb").hexdigest()
NOT_PII = [
    # clock times, dates, timestamps
    "3:44 pm", "15:46", "3:46 AM", "15:46:00", "12:30:45.123", "2026-11-29", "2026-11-29T10:00:00Z",
    "2026-11-29T10:00:00+02:00", "2026-11-29 10:00:00", "29/11/2026", "29.11.2026 10:00",
    # grid cells, probabilities, decimals, versions
    "C3", "B12", "0.75", "1e-6", "0.75 0.25 0.50 0.10 0.20", "v0.1", "1.0.0", "2.13.0", "torch==2.13.0", "v1.0.0.1",
    # digests, counts, sums, ids
    SHA, f"sha256:{SHA}", "Step 3 of 14", "2+2=4", "2+2=2", "sim-1-0000123", "subj-7f3a", "7f3a.t2.cf0",
    "consent/2026/001", "sim-1-0000123.t2.cf0", "sim-1-subj-000017", "10x6 grid, drift on 30% of steps",
    # near misses of each kind
    "user@localhost", "name@domain.c", "1.2.3.4.5", "v1.2.3.4", "256.1.1.1", "010.1.1.1", "4155550167",
    "000-000-0000", "12-415-555-0167", "6 415 555 0167 2", "1 234 567 890", "01.02.03.04.05",
    "dead::beef", "std::vector", "use f32::{EPSILON}", "a:b:c", "00:1a:2b:3c:4d:5e",
    "1732870800000", "1732870800000000000", "2019 2020 2021 2022", "7654 2631 6290 9521 9944 1612",
    "x4111111111111111", "4111111111111111x", "4111-1111-1111-1111-2", "4111.1111.1111.1112", "1.2.3.4.5.6.7.8.9.10",
    # versions written like an address, never-issued social security numbers, an IBAN's shape in ids and hashes
    "version 1.2.3.4", "release 10.0.0.1", "build: 1.2.3.4", "pkg==1.2.3.4", "Version 4.0.0.1",
    "000-12-3456", "666-12-3456", "900-12-3456", "999-45-6789", "123-00-4567", "123-45-0000", "sim-123-45-6789",
    "123-45-6789-0", "123-45-67890", "1123-45-6789", "ISBN 978-3-16-148410-0", "DE89", "de89370400440532013001",
    "DE89370400440532013000X",
    # dates written like phone numbers, phone shapes with fewer than 10 digits, a run glued to "12:"
    "01 12 2026 10 30", "05-11-2026-1030", "+49 30 1234", "06 12 34 56", "(415) 555-01", "12:020 7946 0958",
    # Luhn-valid, but not a card: wrong length for a Visa, no issuer starts with 7, 9 or 1
    *LUHN_VALID_NOT_CARDS,
]


@pytest.mark.parametrize("kind, value", CASES)
def test_each_positive_is_found_exactly(kind, value):
    text = f"Contact: {value} today."
    hits = scan_text(text)
    assert hits == [PiiHit(kind, 9, 9 + len(value), value)]
    alone = scan_text(value)
    assert [(h.kind, h.text) for h in alone] == [(kind, value)]


def test_the_card_data_is_what_it_claims():
    assert all(iban_ok(c) for c in POSITIVES["iban"])
    assert not any(iban_ok(c) for c in IBAN_INVALID[:3])  # (the last two: a wrong length, no such country)
    assert iban_ok(IBAN_INVALID[4].replace("XX", "DE"))
    assert all(luhn_ok(c) for c in POSITIVES["card"])
    assert not any(luhn_ok(c) for c in LUHN_INVALID)
    assert luhn_ok("2631629095219944")  # so the list test below is a real trap
    assert all(luhn_ok(c) for c in LUHN_VALID_NOT_CARDS)


@pytest.mark.parametrize("number", IBAN_INVALID)
def test_checksum_or_length_invalid_ibans_are_not_ibans(number):
    assert [h.kind for h in scan_text(number)] in ([], ["phone"])  # a bad spaced IBAN may still hold a phone shape
    assert "iban" not in {h.kind for h in scan_text(f"pay to {number} now")}


@pytest.mark.parametrize("number", LUHN_INVALID)
def test_luhn_invalid_numbers_are_not_cards(number):
    assert scan_text(number) == []
    assert scan_text(f"card {number} on file") == []


@pytest.mark.parametrize("text", NOT_PII)
def test_false_positive_traps_are_not_flagged(text):
    assert scan_text(text) == []
    assert scan_text(f"At {text}, the subject said so.") == []


def test_all_traps_in_one_string_are_not_flagged():
    # (joined by a plain space, neighbouring digit groups would merge into new numbers)
    assert scan_text(" | ".join(NOT_PII)) == []
    assert scan_text("; ".join(NOT_PII)) == []


def test_decisions_on_edges():
    # "1.0.0.1" is a real public address; a bare 4-part version cannot be told from it
    assert [h.kind for h in scan_text("resolver 1.0.0.1")] == ["ipv4"]
    # a card followed by an expiry date, a phone in a longer run: the valid window is found
    assert [h.text for h in scan_text("4111 1111 1111 1111 12/28")] == ["4111 1111 1111 1111"]
    assert [h.text for h in scan_text("ref 12 (415) 555-0167 24 hours")] == ["(415) 555-0167"]
    # a scheme prefix does not hide the value
    assert [h.text for h in scan_text("tel:+1-415-555-0167")] == ["+1-415-555-0167"]
    assert [h.text for h in scan_text("mailto:a@b.co")] == ["a@b.co"]
    # an IPv4-suffixed IPv6 is one ipv6 hit, not an ipv4 inside it
    assert [(h.kind, h.text) for h in scan_text("src ::ffff:10.0.0.1 ok")] == [("ipv6", "::ffff:10.0.0.1")]
    # trailing punctuation is not part of a hit; a zone id or port is not part of the address
    assert [h.text for h in scan_text("Mail a@b.co.")] == ["a@b.co"]
    assert [h.text for h in scan_text("at 10.0.0.1:8080.")] == ["10.0.0.1"]
    assert [h.text for h in scan_text("fe80::1%eth0")] == ["fe80::1"]


def test_far_apart_hints_do_not_hide_an_address():
    # the scan for IPv6 starts near the first "::" or ":h:h:h:h:", whichever is first
    full = "2001:0db8:0000:0000:0000:ff00:0042:8329"
    text = f"{full} " + "x " * 60 + "then Foo::bar"
    assert [h.text for h in scan_text(text)] == [full]
    text = "Foo::bar " + "x " * 60 + full
    assert [h.text for h in scan_text(text)] == [full]
    # a dotted non-address first, an address later
    assert [h.text for h in scan_text("1.2.3.4.5 and then 10.0.0.1")] == ["10.0.0.1"]
    # a short digit run, a hyphenated id, then a phone
    assert [h.text for h in scan_text("3 of 14, sim-1-0000123 then +44 20 7946 0958")] == ["+44 20 7946 0958"]


MIXED = ("Reach Jane at jane.roe@example.com or +1 (415) 555-0167; her card 5500-0000-0000-0004 "
         "was used from 203.0.113.7 and 2001:db8::42 at 15:46 on 2026-11-29.")


def test_mixed_sentence_hits_in_order_with_spans():
    hits = scan_text(MIXED)
    assert [(h.kind, h.text) for h in hits] == [
        ("email", "jane.roe@example.com"),
        ("phone", "+1 (415) 555-0167"),
        ("card", "5500-0000-0000-0004"),
        ("ipv4", "203.0.113.7"),
        ("ipv6", "2001:db8::42"),
    ]
    for h in hits:
        assert MIXED[h.start:h.end] == h.text
    assert all(a.end <= b.start for a, b in zip(hits, hits[1:]))
    assert {h.kind for h in hits} == set(EXACT_KINDS) - {"iban", "ssn"}


def test_redaction_exact_strings():
    assert redact(MIXED) == (
        "Reach Jane at [REDACTED:email] or [REDACTED:phone]; her card [REDACTED:card] "
        "was used from [REDACTED:ipv4] and [REDACTED:ipv6] at 15:46 on 2026-11-29."
    )
    assert redact("Mail john.doe@example.org or call +1 415 555 0167.") == (
        "Mail [REDACTED:email] or call [REDACTED:phone].")
    assert redact("4111 1111 1111 1111") == "[REDACTED:card]"
    text = "a@b.co and 10.0.0.1"
    hits = scan_text(text)
    assert redact(text, hits[1:]) == "a@b.co and [REDACTED:ipv4]"
    assert redact(text, list(reversed(hits))) == "[REDACTED:email] and [REDACTED:ipv4]"
    assert redact(text, []) == text
    clean = "It's about 3:44 pm. Step 3 of 14."
    assert redact(clean) == clean


def test_redaction_refuses_hits_that_do_not_fit():
    text = "a@b.co and 10.0.0.1"
    with pytest.raises(ValueError, match="does not lie"):
        redact(text, [PiiHit("email", 0, 6, "x@y.zz")])
    with pytest.raises(ValueError, match="overlaps"):
        redact(text, [PiiHit("email", 0, 6, "a@b.co"), PiiHit("email", 2, 6, "b.co")])


EXPECTED_MASKS = {
    "john.doe@example.org": "j***@e***.org",
    "+1 415 555 0167": "+1 *** *** **67",
    "(415) 555-0167": "(***) ***-**67",
    "4111 1111 1111 1111": "4111 **** **** 1111",
    "5500-0000-0000-0004": "5500-****-****-0004",
    "378282246310005": "3782*******0005",
    "192.168.1.1": "192.*.*.*",
    "2001:db8::1": "2001:****",
    "4111.1111.1111.1111": "4111.****.****.1111",
    "DE89 3704 0044 0532 0130 00": "DE** **** **** **** **** 00",
    "DE89370400440532013000": "DE******************00",
    "123-45-6789": "***-**-**89",
    "john at example dot com": "j***@e***.com",
    "j\u200bohn＠example.com": "j***@e***.com",
}


@pytest.mark.parametrize("value, mask", EXPECTED_MASKS.items())
def test_masked_exact(value, mask):
    [hit] = scan_text(value)
    assert hit.masked() == mask


@pytest.mark.parametrize("kind, value", CASES)
def test_masked_never_reprints_the_value(kind, value):
    [hit] = scan_text(value)
    shown = hit.masked()
    assert value not in shown and shown != value
    digits, shown_digits = re.sub(r"\D", "", value), re.sub(r"\D", "", shown)
    if kind in ("phone", "card"):
        assert len(shown) == len(value)  # shape kept
        assert len(shown_digits) <= (8 if kind == "card" else 5) < len(digits)
    if kind in ("iban", "ssn"):
        assert len(shown) == len(value) and len(shown_digits) <= 4 < len(digits)


def test_hits_are_frozen_and_kinds_listed():
    hit = scan_text("a@b.co")[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        hit.kind = "phone"  # type: ignore[misc]
    assert PII_KINDS == ("email", "phone", "ipv4", "ipv6", "card", "iban", "ssn", "national_id", "name", "address")


def _all_strings(obj) -> list[str]:
    """Independent walk: every string value and key in a JSON-like value."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in [k, *_all_strings(v)]]
    if isinstance(obj, list):
        return [s for v in obj for s in _all_strings(v)]
    return []


def test_text_fields_reach_every_string_and_scan_record_reports_paths():
    rec = {"kind": "session", "steps": [{"t": 0, "observation": "ok"}, {"t": 1, "observation": "mail a@b.co",
                                                                         "r": {"ext": {"note": ["x", "10.0.0.1"]}}}]}
    assert sorted(s for _, s in text_fields(rec)) == sorted(_all_strings(rec))
    assert [(path, h.kind) for path, h in scan_record(rec)] == [
        ("steps[1].observation", "email"), ("steps[1].r.ext.note[1]", "ipv4")]


def test_example_and_simulated_corpus_have_no_hits():
    records = [json.loads(line) for line in EXAMPLE_7F3A.read_text(encoding="utf-8").splitlines() if line.strip()]
    records += list(simworld.simulate(n_sessions=200, seed=1))
    strings = [s for rec in records for s in _all_strings(rec)]
    assert len(strings) > 50_000  # the scan really covers the corpus
    assert any("3:44 pm" in s for s in strings) and any(s.startswith("sim-1-0000") for s in strings)
    flagged = [(s, h) for s in strings for h in scan_text(s)]
    assert flagged == []
    assert [hit for rec in records for hit in scan_record(rec)] == []
    # and the same walk does find PII put into a nested field of one of those records
    planted = json.loads(json.dumps(records[-1]))
    planted["note"] = "reach me at +44 20 7946 0958"
    assert [h.kind for _, h in scan_record(planted)] == ["phone"]


def test_adversarial_inputs_finish_and_find_nothing():
    """Long runs of near-misses (speed is measured in bench/, not here; the suite's timeout catches a blow-up)."""
    for text in ("1 " * 5000, "12 " * 5000, "a" * 10000 + "@", "aaaa@" + "b-" * 5000, "1:" * 5000,
                 "1." * 5000, "(1) " * 3000):
        assert scan_text(text) == [], text[:20]


# Obfuscated and non-ASCII forms (issue 18): (written form, kind, the normalised value the hit carries).
OBFUSCATED = [
    ("john at example dot com", "email", "john@example.com"),
    ("john AT example DOT com", "email", "john@example.com"),
    ("john.doe at mail dot example dot co dot uk", "email", "john.doe@mail.example.co.uk"),
    ("john dot doe at example dot org", "email", "john.doe@example.org"),
    ("john[at]example[dot]com", "email", "john@example.com"),
    ("john [at] example [dot] com", "email", "john@example.com"),
    ("john (at) example (dot) com", "email", "john@example.com"),
    ("john(at)example.com", "email", "john@example.com"),
    ("john{at}example{dot}io", "email", "john@example.io"),
    ("john <at> example <dot> com", "email", "john@example.com"),
    ("john@example[dot]com", "email", "john@example.com"),
    ("john[AT]example[DOT]museum", "email", "john@example.museum"),
    ("john @ example.com", "email", "john @ example.com"),
    ("john＠example.com", "email", "john@example.com"),  # full-width @
    ("ｊｏｈｎ＠ｅｘａｍｐｌｅ．ｃｏｍ", "email", "john@example.com"),  # all full-width
    ("jo\u200bhn@example.com", "email", "john@example.com"),  # zero-width space
    ("john@exam\u200dple.com", "email", "john@example.com"),  # zero-width joiner
    ("john\u00ad.doe@example.com", "email", "john.doe@example.com"),  # soft hyphen
    ("\ufeffjohn@example.com", "email", "john@example.com"),  # BOM before: not part of the hit
    ("josé@example.com", "email", "josé@example.com"),
    ("jose\u0301@example.com", "email", "josé@example.com"),  # decomposed: composed by NFKC
    ("info@bücher.de", "email", "info@bücher.de"),
    ("info@xn--bcher-kva.de", "email", "info@xn--bcher-kva.de"),
    ("иван@пример.рф", "email", "иван@пример.рф"),
    ("用户@例子.广告", "email", "用户@例子.广告"),
    ("4111.1111.1111.1111", "card", "4111.1111.1111.1111"),
    ("４１１１ １１１１ １１１１ １１１１", "card", "4111 1111 1111 1111"),
    ("DE89370400440532013000", "iban", "DE89370400440532013000"),
    ("DE89 3704 0044 0532 0130 00", "iban", "DE89 3704 0044 0532 0130 00"),
    ("GB82 WEST 1234 5698 7654 32", "iban", "GB82 WEST 1234 5698 7654 32"),
    ("123-45-6789", "ssn", "123-45-6789"),
    ("+1\u00a0415\u00a0555\u00a00167", "phone", "+1 415 555 0167"),  # no-break spaces
]


@pytest.mark.parametrize("written, kind, value", OBFUSCATED)
def test_obfuscated_forms_are_found_whole_and_named(written, kind, value):
    text = f"please write to {written} soon"
    start = 16 + (1 if written.startswith("\ufeff") else 0)
    [hit] = scan_text(text)
    assert (hit.kind, hit.start, hit.end) == (kind, start, 16 + len(written))
    assert hit.text == text[hit.start:hit.end]  # the original span, invisible characters and all
    assert (hit.value or hit.text) == value
    assert redact(text) == f"please write to {chr(0xfeff) if start == 17 else ''}[REDACTED:{kind}] soon"
    assert value not in hit.masked() and written not in hit.masked()


# Ordinary text from real traces that mentions "at" and "dot", "@", grids, times, versions and numbers.
PROSE_TRAPS = [
    "look at the dot on the grid", "meet at 3 at the station", "the agent at C3 looks at the red dot in D4",
    "look at the dot com bubble", "stare at a dot in the corner", "point at the dot at C3", "dot dot dot at the end",
    "at (3, 4) then at (5, 6)", "grid cell B12 at 3:44 pm", "it is 3:44 pm at the latest", "col 3 at row 4 dot 5",
    "the page at example.com", "we arrived at noon dot", "email me at noon", "look at [the] map (at) noon",
    "x @ self.weight", "q @ k.T", "y = W @ x.to(device)", "thanks @john.doe for the fix", "see @alice.dev",
    "a @ b @ c", "@ home. com", "look at the dot in the corner", "one at a time, dot by dot",
    "ordinary numbers 123 456 789 and 1234567890", "3.14159 and 2.71828", "1,234,567", "0.1.2.3.4",
    "version 1.2.3.4 of the tool", "E.164 allows 15 digits", "12:30 at the dot", "room 101 at 10:00",
]


@pytest.mark.parametrize("text", PROSE_TRAPS)
def test_prose_with_at_and_dot_is_not_pii(text):
    assert scan_text(text) == []
    assert redact(text) == text


def test_spaced_iban_is_an_iban_not_a_phone():
    text = "IBAN DE89 3704 0044 0532 0130 00, phone +44 20 7946 0958"
    assert [(h.kind, h.text) for h in scan_text(text)] == [
        ("iban", "DE89 3704 0044 0532 0130 00"), ("phone", "+44 20 7946 0958")]
    # an IBAN followed by another group: the country's length (16 for BE) is taken, the rest is left
    assert [(h.kind, h.text) for h in scan_text("BE68 5390 0754 7034 1234")] == [("iban", "BE68 5390 0754 7034")]
    assert scan_text("BE68539007547034X") == [] and scan_text("BE6853900754703412") == []


def test_ssn_edges():
    assert [h.text for h in scan_text("SSN 123-45-6789.")] == ["123-45-6789"]
    for area in ("000", "666", "900", "950", "999"):
        assert scan_text(f"SSN {area}-45-6789") == []
    assert scan_text("SSN 123-00-6789") == [] and scan_text("SSN 123-45-0000") == []
    assert [h.kind for h in scan_text("001-01-0001")] == ["ssn"]


def test_versions_are_not_addresses_but_servers_are():
    assert scan_text("upgraded to 1.2.3.4 today") == []
    assert [h.text for h in scan_text("server 1.2.3.4 is down")] == ["1.2.3.4"]
    assert [h.text for h in scan_text("version 1.2.3.4 at 10.0.0.1")] == ["10.0.0.1"]
    assert [h.text for h in scan_text("ssh root@10.0.0.1")] == ["10.0.0.1"]


def test_all_kinds_in_one_sentence_redacted_exactly():
    text = ("Mail john (at) example (dot) com or ｊａｎｅ＠example.org, call +1 415 555 0167, "
            "card 4111.1111.1111.1111, IBAN GB82 WEST 1234 5698 7654 32, SSN 123-45-6789, from 10.0.0.1 or ::1.")
    assert {h.kind for h in scan_text(text)} == set(EXACT_KINDS)
    assert redact(text) == ("Mail [REDACTED:email] or [REDACTED:email], call [REDACTED:phone], card [REDACTED:card], "
                            "IBAN [REDACTED:iban], SSN [REDACTED:ssn], from [REDACTED:ipv4] or [REDACTED:ipv6].")


def test_normalise_maps_every_character_back():
    text = "a\u200bb…c＠d ﬁ"
    norm, starts, ends = normalise(text)
    assert norm == "ab...c@d fi"
    assert [text[a:b] for a, b in zip(starts, ends)] == ["a", "b", "…", "…", "…", "c", "＠", "d", " ", "ﬁ", "ﬁ"]
    assert normalise("plain ascii") == ("plain ascii", None, None)
    assert normalise("déjà vu") == ("déjà vu", None, None)  # already NFKC: not copied
    assert normalise("ｘ＠ｙ") == ("x@y", None, None)  # one for one: positions kept


def test_format_chars_are_every_cf_character():
    import sys
    import unicodedata

    cf = {chr(i) for i in range(sys.maxunicode + 1) if unicodedata.category(chr(i)) == "Cf"}
    assert all(_FORMAT_CHARS.match(c) for c in cf)
    listed = {chr(i) for i in range(sys.maxunicode + 1) if _FORMAT_CHARS.match(chr(i))}
    assert all(unicodedata.category(c) in ("Cf", "Cn") for c in listed)  # Cn: assigned after this Python's Unicode


def test_adversarial_obfuscation_inputs_finish_and_find_nothing():
    for text in ("dot " * 5000, "a dot " * 3000, "aa[dot]" * 3000, "a at " * 3000 + "b dot c", "[at]" * 3000,
                 "john at " + "example dot " * 3000 + "x", "x @ " * 3000, "DE89 " * 3000, "AB12" * 3000,
                 "123-45-" * 3000, "x\u200b" * 5000, "é" * 10000, "e\u0301" * 3000, "…" * 5000):
        assert scan_text(text) == [], text[:20]
