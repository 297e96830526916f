"""Writes this folder's two tables from Unicode's own files (run it again to move to a newer Unicode version).

    python toolkit/unicode/generate.py confusables.txt DerivedCoreProperties.txt

* ``confusables.txt`` (Unicode Security Mechanisms, UTS #39, ``https://www.unicode.org/Public/security/``) ->
  ``confusables.tsv``: one ``SOURCE<TAB>PROTOTYPE`` line per mapping, code points in hex, the prototype's
  code points space-separated.
* ``DerivedCoreProperties.txt`` (the UCD) -> ``default_ignorable.tsv``: the ``Default_Ignorable_Code_Point``
  ranges, ``FIRST<TAB>LAST`` in hex.

Each table starts with ``#`` lines naming its source file and Unicode version, which :mod:`toolkit.skeleton`
reports.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_TERMS = "# Data © Unicode, Inc., under the Unicode License (https://www.unicode.org/terms_of_use.html)"
_VERSION = re.compile(r"^#\s*(?:Version:\s*([\d.]+)|DerivedCoreProperties-([\d.]+)\.txt)")


def _version(lines: list[str], name: str) -> str:
    for line in lines[:20]:
        if m := _VERSION.match(line.lstrip("\ufeff")):
            return m.group(1) or m.group(2)
    raise SystemExit(f"{name}: no Unicode version in its header")


def confusables(src: Path) -> list[str]:
    lines = src.read_text(encoding="utf-8-sig").splitlines()
    out = [f"# UTS #39 confusables.txt, Unicode {_version(lines, src.name)}: source -> prototype (generate.py)", _TERMS]
    for line in lines:
        data = line.split("#", 1)[0].strip()
        if data:
            source, prototype, _kind = (f.strip() for f in data.split(";"))
            out.append(f"{source}\t{' '.join(prototype.split())}")
    return out


def default_ignorable(src: Path) -> list[str]:
    lines = src.read_text(encoding="utf-8").splitlines()
    out = [f"# DerivedCoreProperties.txt, Unicode {_version(lines, src.name)}: Default_Ignorable_Code_Point "
           "ranges (generate.py)", _TERMS]
    for line in lines:
        data = line.split("#", 1)[0].strip()
        if data and data.split(";")[1].strip() == "Default_Ignorable_Code_Point":
            first, _, last = data.split(";")[0].strip().partition("..")
            out.append(f"{first}\t{last or first}")
    return out


def main(argv: list[str]) -> None:
    conf, dcp = (Path(a) for a in argv)
    (HERE / "confusables.tsv").write_text("\n".join(confusables(conf)) + "\n", encoding="utf-8")
    (HERE / "default_ignorable.tsv").write_text("\n".join(default_ignorable(dcp)) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
