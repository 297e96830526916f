"""People's names: after a title, after words that introduce a name, and as the whole value of a name field.

No neural model (see docs/curators/pii.md for why): a name is found where the text itself says it is
one, and parsed with ``nameparser`` (:class:`nameparser.HumanName`) to confirm it has a given name or
a family name:

* after an honorific of one of the corpus's languages (:data:`HONORIFICS`: "Dr. Jane Roe", "Mrs Smith",
  "Herr Müller", "Mme Dupont", "Sra. García", "Dott.ssa Bianchi", "Dhr. de Vries", "Pani Nowak");
* after words that introduce a name (:data:`_CUES`: "my name is", "call me", "signed", "curated by",
  "collected by", "contact:", "regards,", ...): one to three Capitalised words;
* the whole value of a field that names a person (:data:`NAME_FIELDS`: a session's ``collector``, a
  datasheet's ``collectors``, ``curator``, ``annotator``, ``author``, ``contact``), unless it reads as an
  organisation (a word of :data:`ORG_WORDS`, a digit, an id such as "lab-a").

A Capitalised word is a capital then lower-case letters (any script's, an apostrophe or a hyphen
inside: "O'Brien", "Jean-Luc"); the particles "van", "von", "de", "di", "da", "del", "der", "le", "la"
may stand between. Not found: a name with no title, cue or field ("ask Alice"), and a name in lower
case. A city alone is not personal data ("Paris" in prose), nor a product or track name ("Label
Studio", "Track 2"): they follow no title or cue, and ORG_WORDS keeps "collected by Partner Lab B" clear.
"""

from __future__ import annotations

import re

from nameparser import HumanName

__all__ = ["HONORIFICS", "NAME_FIELDS", "ORG_WORDS", "is_person_name", "scan_names"]

HONORIFICS = (
    "Mr", "Mrs", "Ms", "Miss", "Mx", "Dr", "Prof", "Sir", "Dame", "Lady", "Lord", "Rev",
    "Herr", "Frau", "Fräulein", "Hr", "Fr", "Monsieur", "Madame", "Mademoiselle", "Mme", "Mlle", "M",
    "Sr", "Sra", "Srta", "Señor", "Señora", "Don", "Doña", "Sig", "Sig.ra", "Signor", "Signora", "Dott",
    "Dott.ssa", "Dhr", "Mevr", "Pan", "Pani", "Fru", "Herra", "Rouva",
)
#: Fields whose whole value is a person's name unless it reads as an organisation.
NAME_FIELDS = frozenset({"collector", "collectors", "curator", "curators", "annotator", "annotators", "author",
                         "authors", "contact", "collected_by", "curated_by"})
#: Words that make a value an organisation's name, not a person's.
ORG_WORDS = frozenset("""
lab labs laboratory laboratories university universität université universidad università universiteit
institute institut instituto istituto team group inc ltd llc gmbh ag sa sas bv srl plc corp corporation
company co foundation stiftung center centre department dept school college hospital clinic project
consortium association society maintainers maintainer studio track partner partners network unit office
council agency ministry services systems research sciences trb
""".split())
_PARTICLES = r"(?:van|von|de|di|da|del|der|den|du|le|la|dos|das|y)"
_WORD = r"[^\W\d_][^\W\d_]*(?:['’-][^\W\d_]+)*"  # a letter-only word (case checked after)
_CAP = rf"(?=[A-ZÀ-ÖØ-ÞĀ-Žʼ])(?:{_WORD})"
_NAME = rf"(?:{_PARTICLES}\s+)?{_CAP}(?:\s+(?:{_PARTICLES}\s+)?{_CAP}){{0,2}}"
_HON = "|".join(re.escape(h) for h in sorted(HONORIFICS, key=len, reverse=True))
_UPPER = re.compile(r"[A-ZÀ-ÖØ-ÞĀ-Ž]")
_TITLED = re.compile(rf"(?<![\w.])(?:{_HON})\.?\s+(?P<name>{_NAME})")
_CUES = (r"my name is|my name's|call me|i am called|signed(?: by)?|regards,|curated by|collected by|prepared by"
         r"|maintained by|written by|recorded by|annotated by|contact(?: person)?:|author:|curator:|collector:"
         r"|annotator:|name:|ich heiße|je m'appelle|me llamo|mi chiamo|mijn naam is|nazywam się")
_CUED = re.compile(rf"(?i:(?<!\w)(?:{_CUES}))\s+(?P<name>{_NAME})")


def _is_cap(word: str) -> bool:
    return word[:1].isupper() and (len(word) == 1 or not word[1:].replace("'", "").replace("-", "").isupper())


def _trim(name: str) -> str:
    """``name`` up to its first word that is an organisation word or not Capitalised."""
    kept: list[str] = []
    for w in name.split():
        if w.lower() in ORG_WORDS or not (_is_cap(w) or re.fullmatch(_PARTICLES, w)):
            break
        kept.append(w)
    while kept and not _is_cap(kept[-1]):
        kept.pop()
    return " ".join(kept)


def scan_names(text: str) -> list[tuple[int, int]]:
    """Spans of people's names in ``text`` (the title or cue itself is kept, only the name is a hit)."""
    if _UPPER.search(text) is None:
        return []
    out = []
    for pattern in (_TITLED, _CUED):
        for m in pattern.finditer(text):
            name = _trim(m.group("name"))
            if not name:
                continue
            rest = text[m.start("name") + len(name):].split(None, 1)
            if rest and rest[0].strip(",.;:()").lower() in ORG_WORDS:
                continue  # "collected by Simulated Field Lab B": an organisation's name
            parsed = HumanName(name)
            if parsed.first or parsed.last:
                out.append((m.start("name"), m.start("name") + len(name)))
    return out


_HONORIFIC_START = re.compile(rf"(?:{_HON})\.?\s+")


def is_person_name(value: str) -> bool:
    """Whether a name field's whole ``value`` is a person's name ("Jane Roe", "Dr. J. Roe", "Roe, Jane")."""
    v = _HONORIFIC_START.sub("", value.strip(), count=1)
    words = [w.strip(",") for w in v.split()]
    if not 1 <= len(words) <= 5 or any(w.lower().strip(".") in ORG_WORDS for w in words):
        return False
    if any(not re.fullmatch(rf"{_WORD}\.?|[A-Z]\.", w) for w in words if w):
        return False  # a digit, "lab-a", punctuation: an id, not a name
    if len(words) == 1 and v == value.strip():
        return False  # one word, no title: a team or a handle as often as a name
    if not all(_is_cap(w) or re.fullmatch(_PARTICLES, w) for w in words if w):
        return False
    parsed = HumanName(v)
    return bool(parsed.first or parsed.last)
