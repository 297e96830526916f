"""PII recall by kind on the labelled set (bench/data/pii_set.json: 544 planted forms in 25 countries, 100 of them
names with no title or cue, 32 split across two fields) and precision on 395 innocent strings of the corpus and of
the toolkit's own capitalised vocabulary; floors a change may not go below.
The figures, before and after, are bench/hardening_pii.py's."""

from __future__ import annotations

import pytest

import pii_labelled
from corpus.pii import scan_record, scan_text

#: kind -> least recall (the measured figure, rounded down); precision must stay 1.0 for every kind
RECALL_FLOORS = {"email": 1.0, "split email": 1.0, "iban": 1.0, "national_id": 1.0, "name": 0.85, "card": 1.0,
                 "address": 0.95, "phone": 0.80}


@pytest.fixture(scope="module")
def scored() -> dict:
    return pii_labelled.score(pii_labelled.load(), scan_text, scan_record)


def test_the_labelled_set_is_large_and_spread_over_countries():
    data = pii_labelled.load()
    assert len(data["planted"]) + len(data["split"]) >= 200 and len(data["innocent"]) >= 200
    assert len({r["country"] for r in data["planted"]}) >= 10
    for kind in ("phone", "national_id", "iban", "name", "address", "email"):
        assert len({r["country"] for r in data["planted"] if r["kind"] == kind}) >= 10, kind
    assert {r["source"] for r in data["innocent"]} == {"trap", "example 7f3a", "simulated corpus"}


@pytest.mark.parametrize("kind", sorted(RECALL_FLOORS))
def test_recall_of_each_kind_is_at_least_its_floor(scored, kind):
    k = scored["kinds"][kind]
    missed = [r.get("text") or r.get("fields") for r in scored["missed"]
              if (r["kind"] if "text" in r else "split " + r["kind"]) == kind]
    assert k["recall"] >= RECALL_FLOORS[kind], f"{kind}: {k['caught']}/{k['n']}; missed: {missed[:10]}"


def test_every_name_after_a_title_or_cue_is_caught_and_most_with_none(scored):
    """The title and cue route is exact (all caught); the named-entity route finds 79 of the 100 names with neither
    (the small model tags some as an organisation, or not at all: "Reto Meier wrote back")."""
    missed = [r for r in scored["missed"] if r["kind"] == "name"]
    assert [r["text"] for r in missed if r["form"] != "no title or cue"] == []
    assert len(missed) <= 21, [r["text"] for r in missed]


#: held-out draws (bench/data/make_pii_heldout.py: Faker, 18 locales, 288 addresses and 288 names each):
#: kind -> (least recall over all, least recall of any one locale), the measured figures rounded down
HELDOUT_FLOORS = {"address": (0.85, 0.35), "name": (0.75, 0.45)}


@pytest.mark.parametrize("which", ["HELDOUT", "FRESH"])
def test_held_out_addresses_and_names_made_by_faker_are_found(which):
    """Addresses and names no one on the project wrote: 264 and 250 of 288 addresses, 232 and 220 of 288 names
    (the fewest: Norwegian addresses, 8 and 6 of 16, whose street names Faker ends in words such as "-faret")."""
    data = pii_labelled.load(getattr(pii_labelled, which))
    assert len({r["country"] for r in data["planted"]}) >= 12
    result = pii_labelled.score(data, scan_text, scan_record)
    for kind, per in pii_labelled.by_country(data, result).items():
        least_all, least_one = HELDOUT_FLOORS[kind]
        n = sum(t for _, t in per.values())
        assert n >= 240
        missed = [r["text"] for r in result["missed"] if r["kind"] == kind]
        assert result["kinds"][kind]["recall"] >= least_all, f"{kind}: {result['kinds'][kind]}; missed: {missed[:10]}"
        low = {loc: f"{c}/{t}" for loc, (c, t) in per.items() if c / t < least_one}
        assert not low, f"{kind}: locales under {least_one:.0%}: {low}"


@pytest.mark.parametrize("text", ["Track 2, 2026 Berlin", "Table 2, 1500 Runs were kept", "Version 2, 2024 Edition",
                                  "3 Held Out Sessions, Track B, AB 12345", "Session 12, 1234 AB", "sent via Track 2"])
def test_a_label_and_a_number_before_a_year_or_a_count_is_no_address(text):
    assert [h for h in scan_text(text) if h.kind == "address"] == []


def test_no_innocent_string_is_flagged(scored):
    assert scored["false"] == []
    assert all(k["precision"] == 1.0 for k in scored["kinds"].values())


@pytest.mark.parametrize(("text", "redacted"), [
    # the probe's forms, one of each
    ("ruf 030/12345678 an", "ruf [REDACTED:phone] an"),
    ("tel. 0171-1234567", "tel. [REDACTED:phone]"),
    ("IBAN de89 3704 0044 0532 0130 00", "IBAN [REDACTED:iban]"),
    ("SSN 536 90 4399", "SSN [REDACTED:national_id]"),
    ("Steuer-ID 36574261809", "Steuer-ID [REDACTED:national_id]"),
    ("NIR 2 95 10 99 126 111 93", "NIR [REDACTED:national_id]"),
    ("ask Dr. Jane Roe", "ask Dr. [REDACTED:name]"),
    ("at 221B Baker Street, London NW1 6XE.", "at [REDACTED:address]."),
    ("mail jane.roe%40example.org", "mail [REDACTED:email]"),
    ("mail jane.roe&#64;example&#46;org", "mail [REDACTED:email]"),
    ("mail amFuZS5yb2VAZXhhbXBsZS5vcmc=", "mail [REDACTED:email]"),
    # a look-alike with a wrong check digit is not redacted
    ("Steuer-ID 36574261808", "Steuer-ID 36574261808"),
    ("we met in Paris near Main Street", "we met in Paris near Main Street"),
])
def test_probe_forms_are_redacted_whole(text, redacted):
    from corpus.pii import redact

    assert redact(text) == redacted


def test_a_value_split_across_two_fields_is_redacted_in_both():
    from corpus.pii import record_hits, redact_value

    rec = {"note": "write to jane.roe@", "more": "example.org today", "id": "s1"}
    assert redact_value(rec, record_hits(rec)) == {"note": "write to [REDACTED:email]",
                                                   "more": "[REDACTED:email] today", "id": "s1"}
    # an address that ends its field is that field's alone
    rec = {"a": "mail a@b.co", "b": "x"}
    assert redact_value(rec, record_hits(rec)) == {"a": "mail [REDACTED:email]", "b": "x"}
