"""What a subject's answer or a subject id may not hold: personal data, refused when it is entered.

Two checks, both exact rules (no model, no dictionary of names):

* :func:`personal_data` (free text: a goal, a plan, an open-ended move): the kinds of
  :func:`corpus.pii.scan_text` (e-mail addresses, phone numbers in international and national formats,
  internet addresses, card and bank account numbers, US social security numbers and other national
  identity numbers, postal addresses, names after a title such as "Dr." or "Frau"; encoded forms too),
  and **people's names and place names** where the
  text says what they are:

  - a self-introduction: "I am", "I'm", "my name is", "my name's", "call me", "this is", "it's"
    followed by a Capitalised word ("I am Alice", "my name is Bob Jones", "this is Priya");
  - a place after "from", "in", "near", "at", "live in", "born in", "based in", "grew up in"
    ("I am from Leeds", "near Paris", "at Leeds station");
  - two Capitalised words in a row that do not start a sentence ("then Alice Smith came", "I am
    Alice Smith");

  where a Capitalised word is a capital letter then at least one lower-case letter, and is not one
  of :data:`COMMON_WORDS` (words of the task and of ordinary English that are capitalised for
  emphasis or at a sentence start: "Right", "Up", "Goal", "Wind", "Then", "Maybe", ...). Not caught:
  a name or place in lower case ("i am alice from leeds"), a single Capitalised name with no such
  phrase before it ("ask Alice"), a pair of Capitalised words at the very start of a sentence
  ("Alice Smith was here"), and names that are also common words after those phrases ("I am Will",
  "from Reading"). Caught though harmless: a Capitalised word that is not in the list after one of
  those phrases ("I am Tired" — write it in lower case).

* :func:`check_subject_id`: a pseudonym, never contact details: letters, digits, ``.``, ``_``,
  ``-`` (at most 64), no ``@``, no phone number (:func:`corpus.pii.scan_text`), no run of 10 or
  more digits and not made only of 7 or more digits (with separators): "07700900123",
  "+44 7700 900123", "7700-900-123" are refused, "P-017" and "subj-1a2b3c4d" are not.
"""

from __future__ import annotations

import re

from corpus.pii import scan_text
from toolkit.errors import UsageError

__all__ = ["COMMON_WORDS", "KIND_WORDS", "personal_data", "check_subject_id", "SubjectIdRefused"]

#: Each kind of personal data in the subject's words.
KIND_WORDS = {"email": "an e-mail address", "phone": "a phone number", "ipv4": "an internet address",
              "ipv6": "an internet address", "card": "a card number", "iban": "a bank account number",
              "ssn": "a social security number", "national_id": "a national identity number",
              "address": "a postal address", "name": "a person's name", "place": "a place name"}

#: Capitalised words that are never taken for a name or a place.
COMMON_WORDS = frozenset("""
a an the i me my mine we us our you your he she it they them this that these those here there
and or but so then than if when while because as at by for from in into of off on onto out over to up
down left right wait top bottom middle centre center corner edge side north south east west
northeast northwest southeast southwest upper lower
go going gone went goal goals start started step steps move moves moving moved walk walking reach
reached reaching get getting got try trying tried keep keeping stay staying stop head heading turn
turning plan planned planning next last first second third final one two three four five six seven
eight nine ten wind windy gust breeze drift push pushed pushing blown blow wall walls grid cell cells
row rows column columns square squares target way path route direction towards toward closer farther
further away near nearer close back again still now soon later already just only also not no yes
maybe perhaps probably sure unsure think thought guess hope want need will would should could can
may might must shall do did does done doing be am is are was were been being have has had having
make made take took let see saw look looking know knew feel felt seem seems good bad ok okay fine
well very quite really more most less least much many some any all every each both either neither
other another same different new old big small long short fast slow quick quickly slowly easy hard
straight directly diagonally once twice thrice time times before after during until since
agent session sessions study task tasks answer answers question questions self myself
monday tuesday wednesday thursday friday saturday sunday january february march april may june
july august september october november december today tomorrow yesterday morning afternoon evening
english french german spanish italian
""".split())

_WORD = r"[A-Z][a-z]+(?:['’-][A-Za-z]+)?(?![A-Za-z])"
_INTRO = re.compile(rf"(?i:\b(?:i\s+am|i['’]m|my\s+name\s+is|my\s+name['’]s|call\s+me|this\s+is|it['’]s))\s+(?P<w>{_WORD})")
_PLACE = re.compile(rf"(?i:\b(?:live\s+in|living\s+in|born\s+in|based\s+in|grew\s+up\s+in|from|in|near|at))\s+"
                    rf"(?P<w>{_WORD})")
_PAIR = re.compile(rf"\b(?=(?P<a>{_WORD})[ \t]+(?P<b>{_WORD}))")  # overlapping: "Then Alice Smith"
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s*|\n\s*|[\"“(]\s*)$")


def _proper(word: str) -> bool:
    return word.lower() not in COMMON_WORDS and word.split("'")[0].split("’")[0].lower() not in COMMON_WORDS


def _names_and_places(text: str) -> set[str]:
    found = set()
    for m in _INTRO.finditer(text):
        if _proper(m.group("w")):
            found.add("name")
    for m in _PLACE.finditer(text):
        if _proper(m.group("w")):
            found.add("place")
    for m in _PAIR.finditer(text):
        if _SENTENCE_START.search(text[:m.start()]):
            continue
        if _proper(m.group("a")) and _proper(m.group("b")):
            found.add("name")
    return found


def personal_data(text: str) -> list[str]:
    """The kinds of personal data in a free-text answer (the keys of :data:`KIND_WORDS`), in a fixed order."""
    kinds = {h.kind for h in scan_text(text)} | _names_and_places(text)
    return [k for k in KIND_WORDS if k in kinds]


class SubjectIdRefused(UsageError):
    """A subject id that is not a pseudonym (a name, an e-mail address, a phone number)."""


_SUBJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,63}$")
_LONG_DIGITS = re.compile(r"[0-9]{10}")
_DIGITS_ONLY = re.compile(r"^\+?[0-9 ().\-]+$")


def check_subject_id(subject_id: str) -> str:
    """``subject_id`` stripped, or :class:`SubjectIdRefused` saying why it is not a pseudonym."""
    s = (subject_id or "").strip()
    why = None
    if "@" in s:
        why = "it looks like an e-mail address"
    elif (any(h.kind == "phone" for h in scan_text(s)) or _LONG_DIGITS.search(s)
          or (_DIGITS_ONLY.match(s) and sum(c.isdigit() for c in s) >= 7)):
        why = "it looks like a phone number"
    elif scan_text(s):
        why = "it looks like personal data"
    elif not _SUBJECT.match(s):
        why = "expected letters, digits, . _ - (at most 64, no spaces)"
    if why:
        raise SubjectIdRefused(f"subject id refused: {why}. Use a pseudonym such as P-017, never a name, an e-mail "
                               "address or a phone number")
    return s
