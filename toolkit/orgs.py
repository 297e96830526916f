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

1. Unicode NFKC (full-width letters, ligatures, no-break and other compatibility spaces
   become their plain forms), then NFKD with the combining marks dropped (``Acmé`` is
   ``Acme``); format characters (zero-width space and joiners, soft hyphen, BOM,
   bidirectional marks: category Cf) are removed.
2. Look-alike letters are folded to the Latin letter they imitate (:data:`CONFUSABLES`: the
   Cyrillic and Greek letters that look like Latin ones, and ``ı``), then a camel-case
   boundary splits a word (``AcmeLabs`` is ``Acme Labs``), then the name is case-folded
   and characters that pass for one another are written one way (:data:`SKELETON`: ``l``,
   ``1`` and ``|`` as ``i``, ``0`` as ``o``, ``rn`` as ``m``, ``vv`` as ``w``).
3. ``&`` is ``and``; an apostrophe is dropped; every other punctuation mark or symbol is a
   space; whitespace of any kind separates words.
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
organisation (a parent company, a former name, a translation). Give every name the
trainer goes by (``--trainer-org`` and ``--trained-by`` are repeatable).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

__all__ = ["CONFUSABLES", "SKELETON", "LEGAL_FORMS", "FILLER_WORDS", "org_tokens", "org_key", "same_org", "matching_org", "Offence", "transfer_offences"]

#: Look-alike characters -> the Latin letter they imitate (applied after NFKC, before case folding).
CONFUSABLES: dict[str, str] = {
    # Cyrillic capitals
    "А": "A", "В": "B", "С": "C", "Е": "E", "Н": "H", "І": "I", "Ј": "J", "К": "K", "М": "M", "О": "O",
    "Р": "P", "Ѕ": "S", "Т": "T", "Х": "X", "У": "Y", "Ү": "Y", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W", "Ӏ": "I",
    "Һ": "H", "Ꙅ": "S",
    # Cyrillic small letters
    "а": "a", "в": "b", "с": "c", "е": "e", "һ": "h", "і": "i", "ј": "j", "к": "k", "м": "m", "н": "h",
    "о": "o", "п": "n", "р": "p", "ѕ": "s", "т": "t", "у": "y", "ү": "y", "х": "x", "ԁ": "d", "ԛ": "q",
    "ԝ": "w", "ӏ": "l", "ѵ": "v", "ɡ": "g", "г": "r", "ь": "b",
    # Greek capitals
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C", "Ϳ": "J",
    # Greek small letters
    "α": "a", "β": "b", "γ": "y", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "ϲ": "c", "ϳ": "j", "ω": "w",
    # Latin look-alikes NFKC leaves alone
    "ı": "i", "ȷ": "j", "ɩ": "i", "ǀ": "l",
}

#: After case folding, characters and pairs that pass for one another are written one way (both names alike):
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

_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_TABLE = str.maketrans(CONFUSABLES)
_SKELETON = re.compile("|".join(re.escape(k) for k in sorted(SKELETON, key=len, reverse=True)))
_APOSTROPHES = "'’ʼ‘`´"


def _skeleton(word: str) -> str:
    return _SKELETON.sub(lambda m: SKELETON[m.group(0)], word.casefold())


#: the legal forms and fillers as the words of a name are written (their skeletons)
_DROP = frozenset(_skeleton(w) for w in LEGAL_FORMS | FILLER_WORDS)


def _words(name: str) -> list[str]:
    """Steps 1 to 3 of the module docstring: the name's words, normalised."""
    text = unicodedata.normalize("NFKC", name)
    text = "".join(c for c in unicodedata.normalize("NFKD", text)
                   if unicodedata.category(c) not in ("Mn", "Me", "Cf"))
    text = unicodedata.normalize("NFC", text).translate(_TABLE)
    spaced = []
    for c in text:
        if c == "&":
            spaced.append(" and ")
        elif c in _APOSTROPHES:
            continue
        elif c.isspace() or unicodedata.category(c)[0] in "PSZC":
            spaced.append(" ")
        else:
            spaced.append(c)
    out: list[str] = []
    for word in "".join(spaced).split():
        parts = [word] if word.casefold() in LEGAL_FORMS else _CAMEL.sub(" ", word).split()  # GmbH stays whole
        out.extend(_skeleton(p) for p in parts)
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
