"""Organisation names compared as organisations, not as strings: the one rule of transfer provenance.

Spec §5: a transfer context must be collected by a party that did not train the model. The
release gate ``transfer_provenance`` (``trb-corpus release --trainer-org``) and the run-time
check of ``trb run --split transfer --trained-by`` both ask "is this collector one of the
trainers?" through :func:`same_org`, so they cannot disagree.

The two directions of error are not alike. A false "same organisation" refuses a transfer
context that was fine (a curator sees the refusal and names the collector unambiguously);
a false "different" lets a trainer's own data into the transfer split, which is the hole
the rule exists to close. So the comparison leans towards "same".

A name is first normalised (:func:`org_tokens`):

1. Every default-ignorable code point is removed (:func:`toolkit.skeleton.strip_ignorable`: zero-width
   spaces and joiners, soft hyphen, BOM, bidirectional marks, but also the Hangul fillers U+3164, U+115F,
   U+FFA0, the Mongolian variation selectors, U+034F, the Khmer inherent vowels, variation selectors and tag
   characters), then Unicode NFKC (full-width letters, mathematical alphanumerics, ligatures, compatibility
   spaces become their plain forms) and the combining marks are dropped (``Acmé`` is ``Acme``).
2. ``&`` is ``and``; an apostrophe is dropped; every other punctuation mark or symbol is a space;
   whitespace of any kind separates words; a camel-case boundary splits a word (``AcmeLabs`` is
   ``Acme Labs``, in any script with letter case).
3. Each word is replaced by its look-alike form (:func:`fold`): its UTS #39 skeleton
   (:func:`toolkit.skeleton.skeleton`, from Unicode's ``confusables.txt``: Cyrillic, Greek, Cherokee,
   Armenian and other look-alike letters become the Latin letter they imitate), case-folded; before the
   skeleton, :data:`CONFUSABLES` (look-alikes whose Unicode prototype is not a Latin letter: ``п`` is ``n``)
   and Latin small capitals (``ᴀ``, by their Unicode names) become their letter, and letters whose case
   folding is a capital (Cherokee small letters) that capital; all this is repeated until nothing changes.
   Then characters that pass for one another are written one way (:data:`SKELETON`: ``l``, ``1`` and ``|``
   as ``i``, ``0`` as ``o``, ``rn`` as ``m``, ``vv`` as ``w``).
4. The words "the" and "and" and legal-form words (:data:`LEGAL_FORMS`: Inc, LLC, Ltd,
   GmbH, Corp, Co, SA, AG, PLC, ..., also spelt with dots, ``S.A.``) are dropped wherever
   they stand, unless nothing would be left.

Two names are the same organisation (:func:`same_org`) when, for their normalised words
(and, failing that, for their words before step 4):

* one name written without spaces equals a run of consecutive words of the other written
  without spaces: ``Acme Labs, Inc.`` = ``ACME  LABS`` = ``Acme-Labs`` = ``AcmeLabs``;
  ``ACME`` = ``Acme Labs`` (a name inside the other at word boundaries);
  ``Jane Roe, Acme Labs`` = ``Acme Labs``; but ``Acme`` is not ``Acmeson``; or
* one name is a single word of at least two letters (or letters with dots, ``I.B.M.``) that
  is the initials of a run of at least two consecutive words of the other: ``IBM`` =
  ``International Business Machines``.

Not caught, because no rule on spellings can know it: another name of the same
organisation (a parent company, a former name, a translation or a transliteration: ``Яндекс`` is not
``Yandex``, the letters differ even though the name is one). Give every name the
trainer goes by (``--trainer-org`` and ``--trained-by`` are repeatable).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

from toolkit.skeleton import skeleton, strip_ignorable

__all__ = ["CONFUSABLES", "SKELETON", "LEGAL_FORMS", "FILLER_WORDS", "fold", "org_tokens", "org_key", "same_org", "matching_org", "Offence", "transfer_offences"]

#: Look-alike characters -> the Latin letter they imitate, where Unicode's ``confusables.txt`` gives another
#: prototype (``п`` is ``π`` there, ``н`` is ``ʜ``) or none (``ω``, ``ȷ``): applied before the UTS #39 skeleton.
CONFUSABLES: dict[str, str] = {
    "Ԁ": "D", "Ԛ": "Q", "Һ": "H", "Ꙅ": "S",
    "в": "b", "к": "k", "м": "m", "н": "h", "п": "n", "т": "t", "ӏ": "l", "ь": "b", "г": "r",
    "β": "b", "ε": "e", "η": "n", "κ": "k", "τ": "t", "χ": "x", "ω": "w", "γ": "y", "ν": "v", "υ": "u",
    "ȷ": "j", "ĸ": "k", "ɩ": "i", "ı": "i",
}

#: After the skeleton, characters and pairs that pass for one another are written one way (both names alike):
#: ``l``, ``1`` and ``|`` as ``i`` (``AcmeIabs``, ``Acme1abs``), ``0`` as ``o``, ``rn`` as ``m``, ``vv`` as ``w``.
SKELETON = {"l": "i", "1": "i", "|": "i", "0": "o", "rn": "m", "vv": "w"}

#: Legal-form words dropped from a name (case-folded, dots removed: ``S.A.`` is ``sa``).
LEGAL_FORMS = frozenset("""
    inc incorporated llc lc llp lllp lp ltd limited plc corp corporation co company cos
    gmbh mbh ag kg kgaa ug se ev eg gbr ohg
    sa sas sasu sarl srl spa sapa sl slu sa de cv bv nv vof
    ab oy oyj asa as aps hf
    kk gk yk pty pte pvt lda ltda cia sc sp zoo doo dd ad ood kft zrt nyrt rt sro as ou
""".split())
#: Words that say nothing about which organisation it is, dropped like the legal forms.
FILLER_WORDS = frozenset({"the", "and"})


def _small_capitals() -> dict[str, str]:
    """Latin small capitals (``ᴀ`` LATIN LETTER SMALL CAPITAL A) -> their small letter, read from Unicode's names."""
    out = {}
    for cp in [*range(0x0250, 0x02B0), *range(0x1D00, 0x1DC0), *range(0xA720, 0xA800), *range(0x10780, 0x107C0)]:
        name = unicodedata.name(chr(cp), "")
        if name.startswith("LATIN LETTER SMALL CAPITAL ") and len(letter := name.rpartition(" ")[2]) == 1:
            out[chr(cp)] = letter.lower()
    return out


_TABLE = str.maketrans({**CONFUSABLES, **_small_capitals()})
_SKELETON = re.compile("|".join(re.escape(k) for k in sorted(SKELETON, key=len, reverse=True)))
_APOSTROPHES = "'’ʼ‘`´"
_MARKS = ("Mn", "Me")


def _no_marks(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) not in _MARKS)


@lru_cache(maxsize=16384)
def fold(word: str) -> str:
    """A word as its look-alike skeleton, case-folded (step 3 of the module docstring): words that look alike,
    whatever their scripts, case or invisible characters, fold alike."""
    # Cherokee small letters case-fold to their capitals, the look-alikes in confusables.txt
    word = "".join(c.casefold() if c.casefold().isupper() else c for c in word)
    for _ in range(4):  # a case-folded prototype may have a prototype of its own: fold until nothing changes
        folded = _no_marks(skeleton(word.translate(_TABLE))).casefold().translate(_TABLE)
        if folded == word:
            break
        word = folded
    return _SKELETON.sub(lambda m: SKELETON[m.group(0)], word)


#: the legal forms and fillers as the words of a name are written (folded)
_DROP = frozenset(fold(w) for w in LEGAL_FORMS | FILLER_WORDS)


def _separated(text: str, *, ampersand: bool) -> list[str]:
    """Step 2's words of ``text``: ``&`` (when ``ampersand``) is "and", apostrophes go, other punctuation splits."""
    spaced = []
    for c in text:
        if c == "&" and ampersand:
            spaced.append(" and ")
        elif c in _APOSTROPHES:
            continue
        elif c.isspace() or unicodedata.category(c)[0] in "PSZC":
            spaced.append(" ")
        else:
            spaced.append(c)
    return "".join(spaced).split()


def _camel_parts(word: str) -> list[str]:
    """``word`` split at camel-case boundaries (``AcmeLabs``, ``IBMResearch``), in any script with letter case."""
    cuts = [i for i in range(1, len(word))
            if (word[i - 1].islower() and word[i].isupper())
            or (word[i - 1].isupper() and word[i].isupper() and i + 1 < len(word) and word[i + 1].islower())]
    return [word[i:j] for i, j in zip([0, *cuts], [*cuts, len(word)], strict=True)]


def _words(name: str) -> list[str]:
    """Steps 1 to 3 of the module docstring: the name's words, normalised."""
    text = _no_marks(strip_ignorable(unicodedata.normalize("NFKC", strip_ignorable(name))))
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    out: list[str] = []
    for word in _separated(unicodedata.normalize("NFC", text), ampersand=True):
        parts = [word] if fold(word) in _DROP else _camel_parts(word)  # GmbH stays whole
        for part in parts:  # a prototype may be punctuation (``ǃ`` is ``!``): it separates as punctuation does
            out.extend(_separated(fold(part), ampersand=False))
    return out


def _drop_forms(words: list[str]) -> list[str]:
    """The words without legal forms and fillers (a dotted form such as ``s a`` counts as one)."""
    out: list[str] = []
    i = 0
    while i < len(words):
        # a run of one-letter words spelling a legal form: "S.A." -> s, a
        j = i
        while j < len(words) and len(words[j]) == 1:
            j += 1
        if j - i >= 2 and "".join(words[i:j]) in _DROP:
            i = j
            continue
        if words[i] not in _DROP:
            out.append(words[i])
        i += 1
    return out


@lru_cache(maxsize=4096)
def _forms(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    raw = _words(name)
    kept = _drop_forms(raw)
    return tuple(kept or raw), tuple(raw)


def org_tokens(name: str) -> tuple[str, ...]:
    """The normalised words of an organisation's name (see the module docstring); () when it names nothing."""
    return _forms(name)[0]


def org_key(name: str) -> str:
    """A canonical form of the name (its normalised words, one space apart; a skeleton, not for display): names
    with the same key are the same organisation; names with different keys may still be (:func:`same_org`)."""
    return " ".join(org_tokens(name))


def _runs(words: tuple[str, ...], min_len: int = 1) -> Iterable[tuple[str, ...]]:
    for i in range(len(words)):
        for j in range(i + min_len, len(words) + 1):
            yield words[i:j]


def _words_match(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    if not a or not b:
        return False
    for x, y in ((a, b), (b, a)):
        compact = "".join(x)
        if any("".join(run) == compact for run in _runs(y)):
            return True
        acronym = len(x) == 1 or all(len(w) == 1 for w in x)
        if acronym and len(compact) >= 2 and any("".join(w[0] for w in run) == compact for run in _runs(y, 2)):
            return True
    return False


def same_org(a: str, b: str) -> bool:
    """Whether the names ``a`` and ``b`` may be the same organisation (the rule in the module docstring).

    A name that normalises to nothing (blank, punctuation or invisible characters only) matches nothing.
    """
    (ka, ra), (kb, rb) = _forms(a), _forms(b)
    return _words_match(ka, kb) or _words_match(ra, rb)


def matching_org(name: str, orgs: Iterable[str]) -> str | None:
    """The first of ``orgs`` that ``name`` is the same organisation as (:func:`same_org`), or None."""
    return next((o for o in orgs if same_org(name, o)), None)


class Offence(NamedTuple):
    """Why a transfer context fails provenance: ``kind`` is ``trainer`` (collected by a trainer org), ``unnamed``
    (a collector that names no one) or ``attestation`` (none); ``text`` says it for a person."""

    kind: str
    text: str

    def __str__(self) -> str:
        return self.text


def transfer_offences(contexts, sessions, trainer_orgs: list[str]) -> dict[str, list[Offence]]:
    """Why each transfer context fails provenance, ``{context_id: [Offence, ...]}`` for the failing ones: the one
    rule the release gate (``transfer_provenance``) and the run-time check (``trb run --split transfer``) apply.

    ``contexts``: ``(context_id, collector_org, attestation_ref)`` rows; ``sessions``: ``(context_id, collector,
    n_sessions)`` rows of the transfer split. A context fails when its record or any of its sessions was collected
    by one of ``trainer_orgs`` (:func:`same_org`: compared as organisations, not as strings), when a
    collector names no one at all (blank, punctuation or invisible characters only), or when it has no attestation.
    """
    orgs = [o for o in trainer_orgs if org_tokens(o)]
    out: dict[str, list[Offence]] = {}
    for cid, org, attestation in contexts:
        why = []
        if not org_tokens(org or ""):
            why.append(Offence("unnamed", f"its collector_org {org!r} names no organisation"))
        elif (hit := matching_org(org, orgs)) is not None:
            why.append(Offence("trainer", f"collector_org {org!r} is the trainer org {hit!r}"))
        if not (attestation or "").strip():
            why.append(Offence("attestation", "no attestation"))
        if why:
            out[cid] = why
    for cid, collector, n in sessions:
        if not org_tokens(collector or ""):
            out.setdefault(cid, []).append(Offence("unnamed", f"{n} session(s) whose collector {collector!r} names "
                                                              "no one"))
        elif (hit := matching_org(collector, orgs)) is not None:
            out.setdefault(cid, []).append(Offence("trainer", f"{n} session(s) collected by {collector!r}, the "
                                                              f"trainer org {hit!r}"))
    return out
