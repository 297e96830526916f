"""Unicode's own rule for "these two strings look alike": the UTS #39 skeleton, from Unicode's data.

:func:`skeleton` is the skeleton of Unicode Technical Standard #39 (section 4, "Confusable Detection"):

1. the text in NFD;
2. every ``Default_Ignorable_Code_Point`` removed (:func:`strip_ignorable`: not only format characters
   (category Cf) but also the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0, the Mongolian free variation
   selectors U+180B..U+180F, the combining grapheme joiner U+034F, the Khmer inherent vowels U+17B4/U+17B5,
   the variation selectors and the whole tag block U+E0000..U+E0FFF, assigned or not);
3. each character replaced by its prototype from ``confusables.txt`` (Cyrillic ``а`` and Greek ``α`` are
   ``a``, Cherokee ``Ꭺ`` is ``A``, Armenian ``օ`` is ``o``, ``1``, ``I`` and ``|`` are ``l``, ``m`` is ``rn``);
4. NFD again.

The data is Unicode's, not a hand list: ``toolkit/unicode/confusables.tsv`` is generated from UTS #39
``confusables.txt`` version 14.0.0 (the version of this Python's ``unicodedata``, so steps 1 and 4 agree with
it) and ``toolkit/unicode/default_ignorable.tsv`` from ``DerivedCoreProperties.txt`` of Unicode 15.0.0, both by
``toolkit/unicode/generate.py`` (:data:`DATA_VERSIONS`). No package was used: ``unicodedata`` knows neither
table, PyICU builds against a system ICU, and the confusables packages on PyPI ship older or reshaped copies.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from pathlib import Path

__all__ = ["DATA_VERSIONS", "CONFUSABLE_PROTOTYPES", "is_default_ignorable", "strip_ignorable", "skeleton"]

_DATA = Path(__file__).resolve().parent / "unicode"


def _table(name: str) -> tuple[str, list[list[str]]]:
    lines = (_DATA / name).read_text(encoding="utf-8").splitlines()
    return lines[0].lstrip("# "), [line.split("\t") for line in lines if line and not line.startswith("#")]


_CONF_HEAD, _CONF_ROWS = _table("confusables.tsv")
_IGN_HEAD, _IGN_ROWS = _table("default_ignorable.tsv")

#: the header line of each table: its source file and Unicode version
DATA_VERSIONS: dict[str, str] = {"confusables": _CONF_HEAD, "default_ignorable": _IGN_HEAD}
#: character -> its prototype (confusables.txt)
CONFUSABLE_PROTOTYPES: dict[str, str] = {
    chr(int(src, 16)): "".join(chr(int(c, 16)) for c in proto.split()) for src, proto in _CONF_ROWS}
_IGNORABLE: frozenset[int] = frozenset(
    cp for first, last in _IGN_ROWS for cp in range(int(first, 16), int(last, 16) + 1))
_DROP_IGNORABLE = dict.fromkeys(_IGNORABLE)
_PROTOTYPES = str.maketrans(CONFUSABLE_PROTOTYPES)


def is_default_ignorable(char: str) -> bool:
    """Whether ``char`` has the Unicode property Default_Ignorable_Code_Point."""
    return ord(char) in _IGNORABLE


def strip_ignorable(text: str) -> str:
    """``text`` without its default-ignorable code points (invisible fillers, selectors, joiners, tags)."""
    return text.translate(_DROP_IGNORABLE)


@lru_cache(maxsize=8192)
def skeleton(text: str) -> str:
    """The UTS #39 skeleton of ``text`` (the module docstring): two strings that look alike have the same one."""
    return unicodedata.normalize("NFD", strip_ignorable(unicodedata.normalize("NFD", text)).translate(_PROTOTYPES))
