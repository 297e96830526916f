"""pii: hand-worked positives, the corpus's false-positive traps, redaction, masking, and the real corpus."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re

import pytest

import simworld
from corpus.pii import PII_KINDS, PiiHit, redact, scan_record, scan_text, text_fields
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
    ],
}
CASES = [(kind, value) for kind, values in POSITIVES.items() for value in values]

LUHN_INVALID = ["4111 1111 1111 1112", "4111111111111112", "5500-0000-0000-0005", "378282246310006"]

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
    "x4111111111111111", "4111111111111111x", "4111-1111-1111-1111-2",
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
    assert all(luhn_ok(c) for c in POSITIVES["card"])
    assert not any(luhn_ok(c) for c in LUHN_INVALID)
    assert luhn_ok("2631629095219944")  # so the list test below is a real trap
    assert all(luhn_ok(c) for c in LUHN_VALID_NOT_CARDS)


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
    assert {h.kind for h in hits} == set(PII_KINDS)


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


def test_hits_are_frozen_and_kinds_listed():
    hit = scan_text("a@b.co")[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        hit.kind = "phone"  # type: ignore[misc]
    assert PII_KINDS == ("email", "phone", "ipv4", "ipv6", "card")


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
