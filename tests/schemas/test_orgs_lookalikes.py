"""Look-alike spellings of an organisation (toolkit/orgs.py after UTS #39 skeletons, toolkit/skeleton.py): every
invisible filler Unicode calls default-ignorable and every look-alike letter in Unicode's confusables.txt (Cherokee,
Armenian, Greek, Cyrillic, Latin small capitals, mathematical alphanumerics, full-width) spell the same
organisation; distinct organisations, in any script, stay distinct. A name and its translation or transliteration
("Яндекс", "Yandex") are different spellings, not look-alikes: the trainer gives every name it goes by."""

from __future__ import annotations

import itertools

import pytest

from toolkit.orgs import same_org, transfer_offences
from toolkit.skeleton import DATA_VERSIONS, is_default_ignorable, skeleton, strip_ignorable

#: the trainer, a real organisation
ORG = "Hugging Face"
#: (collector as written, the mechanism) -> the same organisation as ORG
SPELLINGS = [
    ("Hug\u3164ging Face", "U+3164 HANGUL FILLER inside a word"),
    ("Hugging\u3164Face", "U+3164 HANGUL FILLER as the space"),
    ("Hugging\u115f Face", "U+115F HANGUL CHOSEONG FILLER"),
    ("Hugg\u1160ing Face", "U+1160 HANGUL JUNGSEONG FILLER"),
    ("Hugging\uffa0Face", "U+FFA0 HALFWIDTH HANGUL FILLER"),
    ("Hu\u180bgging Face", "U+180B MONGOLIAN FREE VARIATION SELECTOR ONE"),
    ("Hugg\u180ding Face", "U+180D MONGOLIAN FREE VARIATION SELECTOR THREE"),
    ("Huggi\u180eng Face", "U+180E MONGOLIAN VOWEL SEPARATOR"),
    ("Hugging F\u180face", "U+180F MONGOLIAN FREE VARIATION SELECTOR FOUR"),
    ("Hu\u034fgging Face", "U+034F COMBINING GRAPHEME JOINER"),
    ("Hugg\u17b4ing Face", "U+17B4 KHMER VOWEL INHERENT AQ"),
    ("Hugging Fa\u17b5ce", "U+17B5 KHMER VOWEL INHERENT AA"),
    ("Hugging\U000e0078 Face", "a tag character (TAG LATIN SMALL LETTER X)"),
    ("\U000e0001Hugging Face\U000e007f", "LANGUAGE TAG and CANCEL TAG"),
    ("Hug\U000e0fffging Face", "an unassigned code point of the tag block (U+E0FFF)"),
    ("H\ufe0fu\ufe0fg\ufe0fging Face", "VARIATION SELECTOR-16 after letters"),
    ("Hugging Fac\U000e0100e", "VARIATION SELECTOR-17 (U+E0100)"),
    ("Hugging\u2064Face", "U+2064 INVISIBLE PLUS as the space"),
    ("Hugg\u061cing Face", "U+061C ARABIC LETTER MARK"),
    ("Hugging F\ufff0ace", "U+FFF0, a reserved default-ignorable code point"),
    ("Hug\U0001bca1ging Face", "U+1BCA1 SHORTHAND FORMAT CONTINUING OVERLAP"),
    ("Hugging\U0001d173 Face", "U+1D173 MUSICAL SYMBOL BEGIN BEAM"),
    ("\u13bbU\u13c0\u13c0\u13a5N\u13c0 F\u13aa\u13df\u13ac", "Cherokee capitals"),
    ("\uab92ugg\uab75ng Fa\uabafe", "Cherokee small letters"),
    ("\u0570\u057dggi\u0578g Face", "Armenian small ho, seh, vo"),
    ("H\u057d\u0581\u0581i\u0578\u0581 Face", "Armenian co for g"),
    ("\u0397UGG\u0399\u039dG F\u0391CE", "Greek capitals"),
    ("\u0397ugg\u03b9ng F\u03b1c\u03b5", "Greek small iota, alpha, epsilon"),
    ("\u041dugg\u0456ng F\u0430\u0441\u0435", "Cyrillic letters"),
    ("\u029c\u1d1c\u0262\u0262\u026a\u0274\u0262 \ua730\u1d00\u1d04\u1d07", "Latin small capitals"),
    ("\U0001d407\U0001d42e\U0001d420\U0001d420\U0001d422\U0001d427\U0001d420 \U0001d405\U0001d41a\U0001d41c\U0001d41e",
     "mathematical bold"),
    ("\u210d\U0001d566\U0001d558\U0001d558\U0001d55a\U0001d55f\U0001d558 \U0001d53d\U0001d552\U0001d554\U0001d556",
     "mathematical double-struck"),
    ("\U0001d677\U0001d69e\U0001d690\U0001d690\U0001d692\U0001d697\U0001d690 Face", "mathematical monospace"),
    ("\uff28\uff55\uff47\uff47\uff49\uff4e\uff47 \uff26\uff41\uff43\uff45", "full-width letters"),
    ("Hugg\u0131ng Face", "a dotless i"),
    ("\u041dugg\u0456ng\u3164F\u0430\ufe0fce", "Cyrillic letters, a Hangul filler and a variation selector"),
    ("\u0570ugging\U000e0020Face, Inc.", "Armenian ho, a tag space and a legal form"),
]
#: distinct organisations (one of each pair a transliteration of the other): none is another, nor ORG
INNOCENT = [
    "Yandex", "Яндекс", "Sber", "Сбер", "Baidu", "百度", "Sony", "ソニー", "Samsung", "삼성전자", "Naver", "네이버",
    "Infosys", "इन्फोसिस", "Aramco", "أرامكو", "Teva", "טבע", "Alibaba", "阿里巴巴", "Piraeus Bank", "Τράπεζα Πειραιώς",
    "TBC Bank", "თიბისი ბანკი", "Mistral AI", "Cohere", "Aleph Alpha", "Stability AI", "Allen Institute", "EleutherAI",
]


@pytest.mark.parametrize("spelling, what", SPELLINGS, ids=[w for _, w in SPELLINGS])
def test_every_look_alike_spelling_is_the_organisation(spelling, what):
    assert same_org(spelling, ORG) and same_org(ORG, spelling), what


def test_the_table_covers_each_mechanism():
    assert len(SPELLINGS) >= 30 and len(INNOCENT) >= 20
    hidden = {c for s, _ in SPELLINGS for c in s if is_default_ignorable(c)}
    assert {"\u3164", "\u115f", "\uffa0", "\u180b", "\u180f", "\u034f", "\u17b4", "\u17b5", "\U000e0078",
            "\ufe0f", "\U000e0100"} <= hidden


def test_distinct_organisations_in_any_script_are_not_merged():
    merged = [(a, b) for a, b in itertools.combinations([*INNOCENT, ORG], 2) if same_org(a, b)]
    assert merged == []


def test_the_transfer_check_flags_every_spelling_and_no_innocent_collector():
    contexts = [(f"ctx-{i}", s, "attest/1") for i, (s, _) in enumerate(SPELLINGS)]
    contexts += [(f"ok-{i}", s, "attest/1") for i, s in enumerate(INNOCENT)]
    bad = transfer_offences(contexts, [], [ORG])
    assert set(bad) == {f"ctx-{i}" for i in range(len(SPELLINGS))}
    assert all([o.kind for o in why] == ["trainer"] for why in bad.values())


def test_the_skeleton_is_unicodes():
    assert "confusables.txt, Unicode 14.0.0" in DATA_VERSIONS["confusables"]
    assert "Unicode 15.0.0" in DATA_VERSIONS["default_ignorable"]
    assert skeleton("p\u0430yp\u0430l") == skeleton("paypal") != skeleton("paypa1x")  # UTS #39's own example
    assert skeleton("\u13aa") == "A" and skeleton("\u0585") == "o" and skeleton("1") == skeleton("I") == "l"
    assert strip_ignorable("a\u3164b\u200dc\U000e0fffd\u00ade") == "abcde"
    assert not any(map(is_default_ignorable, "aZ09 \u00a0\u3000-\u05d0\u0301"))
