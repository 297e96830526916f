"""Organisation names compared as organisations (toolkit/orgs.py): the one rule of transfer provenance.

Every spelling a careless or hostile collector record might use for the trainer "Acme Labs" is the
same organisation; names that only share a generic word, or a prefix inside a word, are not."""

from __future__ import annotations

import pytest

from toolkit.orgs import Offence, org_key, org_tokens, same_org, transfer_offences

TRAINER = "Acme Labs"

#: (collector as written, what it is) -> the same organisation as TRAINER
SAME = [
    ("Acme Labs, Inc.", "legal suffix with a comma and a dot"),
    ("Acme Labs LLC", "LLC"),
    ("Acme Labs Ltd.", "Ltd."),
    ("Acme Labs GmbH", "GmbH, camel-cased"),
    ("ACME LABS GMBH & CO. KG", "a chain of legal forms"),
    ("Acme Labs S.A.", "a dotted legal form"),
    ("The Acme Labs Corporation", "'The' and Corporation"),
    ("ACME", "a name inside the other at word boundaries"),
    ("acme labs", "case"),
    ("Acme  Labs", "a double space"),
    ("Acme\u00a0Labs", "a no-break space"),
    ("Acme\u2003Labs", "an em space"),
    ("Acme\tLabs\n", "tab and newline"),
    ("Acme\u200bLabs", "a zero-width space instead of the space"),
    ("Ac\u200bme Labs", "a zero-width space inside a word"),
    ("Acme\u200d Labs\ufeff", "a zero-width joiner and a BOM"),
    ("Ac\u00adme Labs", "a soft hyphen"),
    ("\u0410cme Labs", "a Cyrillic capital A"),
    ("Acm\u0435 L\u0430bs", "Cyrillic small e and a"),
    ("\u0391cme Labs", "a Greek capital Alpha"),
    ("Acme Lab\u0455", "a Cyrillic small dze for s"),
    ("\uff21\uff43\uff4d\uff45 Labs", "full-width letters"),
    ("Acm\u00e9 Labs", "an accent"),
    ("Acme\u0301 Labs", "a combining accent"),
    ("Acme-Labs", "a hyphen"),
    ("Acme_Labs", "an underscore"),
    ("Acme.Labs", "a dot"),
    ("AcmeLabs", "no space (camel case)"),
    ("Acmelabs", "no space, one word"),
    ("AcmeIabs", "a capital I for the l"),
    ("Acme 1abs", "a digit one for the l"),
    ("Acrne Labs", "rn for m"),
    ("Jane Roe, Acme Labs", "a person at the organisation"),
    ("Acme Labs (Berlin office)", "a site in parentheses"),
    ("AL", "the initials"),
    ("A.L.", "dotted initials"),
]

#: not the same organisation as TRAINER
DIFFERENT = ["Beta Labs", "Acmeson", "Acme Research", "Partner Lab B", "Lab A", "Labs Acme", "ACMEX", "Acm", ""]


@pytest.mark.parametrize("collector, what", SAME, ids=[w for _, w in SAME])
def test_every_spelling_of_the_trainer_is_the_same_organisation(collector, what):
    assert same_org(collector, TRAINER) and same_org(TRAINER, collector), what


@pytest.mark.parametrize("collector", DIFFERENT)
def test_other_organisations_are_not_the_trainer(collector):
    assert not same_org(collector, TRAINER)


def test_initials_name_the_organisation_both_ways():
    assert same_org("IBM", "International Business Machines Corp.")
    assert same_org("I.B.M.", "International Business Machines")
    assert same_org("International Business Machines", "IBM")
    assert not same_org("IBX", "International Business Machines")


def test_a_trainer_given_with_its_legal_form_still_matches_the_bare_name():
    assert same_org("Acme", "ACME Labs, Inc.") and same_org("acme labs", "Acme Labs Ltd")


def test_a_name_of_nothing_matches_nothing_and_has_no_words():
    for blank in ("", "   ", "\u200b\u200b", "---", "Inc."[:0]):
        assert org_tokens(blank) == () and not same_org(blank, TRAINER) and not same_org(blank, blank)
    # a name made only of a legal form keeps it (it names something), but is not every company
    assert org_tokens("Inc.") == ("inc",) and not same_org("Inc.", TRAINER)


def test_the_key_is_one_spelling_for_equivalent_names():
    keys = {org_key(c) for c, _ in SAME[:30] if len(org_tokens(c)) == 2}
    assert keys == {org_key(TRAINER)}


def test_transfer_offences_checks_the_context_record_and_every_session_collector():
    contexts = [("ctx-ok", "Independent Field Lab", "attest/1"),
                ("ctx-rec", "ACME LABS, INC.", "attest/2"),
                ("ctx-sess", "Independent Field Lab", "attest/3"),
                ("ctx-noatt", "Independent Field Lab", " "),
                ("ctx-blank", "\u200b", "attest/5")]
    sessions = [("ctx-ok", "Independent Field Lab", 4), ("ctx-sess", "Jane Roe (Acme-Labs)", 2),
                ("ctx-sess", "Independent Field Lab", 3), ("ctx-blank", "Someone Else", 1)]
    bad = transfer_offences(contexts, sessions, ["Other Org", TRAINER])
    assert set(bad) == {"ctx-rec", "ctx-sess", "ctx-noatt", "ctx-blank"}
    assert [o.kind for o in bad["ctx-rec"]] == ["trainer"] and "'Acme Labs'" in str(bad["ctx-rec"][0])
    assert bad["ctx-sess"] == [Offence("trainer", "2 session(s) collected by 'Jane Roe (Acme-Labs)', the trainer "
                                                  "org 'Acme Labs'")]
    assert [o.kind for o in bad["ctx-noatt"]] == ["attestation"]
    assert [o.kind for o in bad["ctx-blank"]] == ["unnamed"]
    # with no trainer named, only the provenance of the records themselves can fail
    assert set(transfer_offences(contexts, sessions, [])) == {"ctx-noatt", "ctx-blank"}
    # a trainer "name" of invisible characters names no one: it is ignored, never matched
    assert set(transfer_offences(contexts, sessions, ["\u200b"])) == {"ctx-noatt", "ctx-blank"}
