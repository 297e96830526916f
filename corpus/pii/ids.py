"""National identity numbers, confirmed by ``python-stdnum``'s validators (checksums, dates, letter keys).

A candidate of each country's written shape (:data:`_FORMATS`) is a hit only when the country's
stdnum validator accepts it, so a look-alike with a wrong check digit is not redacted:

=======  =============================================  ==============================
country  number                                          shape looked for
=======  =============================================  ==============================
DE       Steuerliche Identifikationsnummer (de.idnr)     11 digits, or 2-3-3-3 grouped
FR       NIR / numéro de sécurité sociale (fr.nir)       15 digits, or 1-2-2-2-3-3-2
ES       DNI, NIE (es.dni, es.nie)                       8 digits + letter, X/Y/Z + 7 + letter
IT       codice fiscale (it.codicefiscale)               16 letters and digits
PL       PESEL (pl.pesel)                                11 digits
NL       BSN (nl.bsn)                                    9 digits, only after "BSN"/"burgerservicenummer"
BE       numéro national (be.nn)                         YY.MM.DD-NNN.CC
CH       AHV/AVS number (ch.ssn)                         756.NNNN.NNNN.NN
SE       personnummer (se.personnummer)                  YYMMDD-NNNN, YYYYMMDD-NNNN
DK       CPR (dk.cpr)                                    DDMMYY-NNNN
FI       henkilötunnus (fi.hetu)                         DDMMYY[-+A]NNNC
NO       fødselsnummer (no.fodselsnummer)                11 digits, or DDMMYY NNNNN
IE       PPS number (ie.pps)                             7 digits + 1-2 letters
GB       National Insurance number                       AB 12 34 56 C (HMRC's prefix rules)
US       SSN with spaces or none (us.ssn)                123 45 6789; 9 digits only after "SSN"
=======  =============================================  ==============================

Letters may be of either case ("12345678z", "rssmra85t10a562s"). A candidate must not continue a
longer token (the exact scanner's rule), so ids such as "sim-1-0000123" stay clear. Plain 9-digit
numbers (BSN, a compact SSN) pass a checksum too often by chance to be taken without their name.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from stdnum import luhn  # noqa: F401  (stdnum's modules load lazily; this keeps the package import cheap)
from stdnum.be import nn as be_nn
from stdnum.ch import ssn as ch_ssn
from stdnum.de import idnr as de_idnr
from stdnum.dk import cpr as dk_cpr
from stdnum.es import dni as es_dni
from stdnum.es import nie as es_nie
from stdnum.fi import hetu as fi_hetu
from stdnum.fr import nir as fr_nir
from stdnum.ie import pps as ie_pps
from stdnum.it import codicefiscale as it_cf
from stdnum.nl import bsn as nl_bsn
from stdnum.no import fodselsnummer as no_fnr
from stdnum.pl import pesel as pl_pesel
from stdnum.se import personnummer as se_pnr
from stdnum.us import ssn as us_ssn

__all__ = ["scan_ids"]

_B = r"(?<![\w./+-])"  # not inside a longer token
_E = r"(?![\w]|[./+-]\w)"

# GB NINO: two prefix letters (not D F I Q U V; second not O; not BG GB KN NK NT TN ZZ), 6 digits, A-D
_NINO_BAD = {"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"}


def _nino(v: str) -> bool:
    v = v.replace(" ", "").upper()
    return (v[0] not in "DFIQUV" and v[1] not in "DFIQUVO" and v[:2] not in _NINO_BAD)


def _cued(words: str) -> Callable[[str, str, int], bool]:
    cue = re.compile(rf"(?i:\b(?:{words})\b)[\w .:#-]{{0,12}}$")
    return lambda text, _v, start: cue.search(text, max(0, start - 40), start) is not None


def _ok(*modules) -> Callable[[str, str, int], bool]:
    def check(_text: str, v: str, _start: int) -> bool:
        return any(m.is_valid(v) for m in modules)
    return check


_SSN_CUE = _cued("ssn|social security(?: number| no\\.?)?")
_BSN_CUE = _cued("bsn|burgerservicenummer|sofinummer")

#: (pattern, check(text, candidate, start)) for each written shape.
_FORMATS: list[tuple[re.Pattern, Callable[[str, str, int], bool]]] = [
    (re.compile(_B + r"[0-9]{2} ?[0-9]{3} ?[0-9]{3} ?[0-9]{3}" + _E), _ok(de_idnr, pl_pesel, no_fnr)),
    (re.compile(_B + r"[0-9]{6} [0-9]{5}" + _E), _ok(no_fnr)),
    (re.compile(_B + r"[12] ?[0-9]{2} ?[0-9]{2} ?(?:[0-9]{2}|2[AB]) ?[0-9]{3} ?[0-9]{3} ?[0-9]{2}" + _E, re.I),
     _ok(fr_nir)),
    (re.compile(_B + r"[0-9]{8}-?[A-Z]" + _E, re.I), _ok(es_dni)),
    (re.compile(_B + r"[XYZ]-?[0-9]{7}-?[A-Z]" + _E, re.I), _ok(es_nie)),
    (re.compile(_B + r"[A-Z]{6}[0-9LMNPQRSTUV]{2}[A-Z][0-9LMNPQRSTUV]{2}[A-Z][0-9LMNPQRSTUV]{3}[A-Z]" + _E, re.I),
     _ok(it_cf)),
    (re.compile(_B + r"[0-9]{2}\.[0-9]{2}\.[0-9]{2}-[0-9]{3}\.[0-9]{2}" + _E), _ok(be_nn)),
    (re.compile(_B + r"756\.[0-9]{4}\.[0-9]{4}\.[0-9]{2}" + _E), _ok(ch_ssn)),
    (re.compile(_B + r"(?:[0-9]{2})?[0-9]{6}[-+][0-9]{4}" + _E), _ok(se_pnr, dk_cpr)),
    (re.compile(_B + r"[0-9]{6}[-+A][0-9]{3}[0-9A-Y]" + _E, re.I), _ok(fi_hetu)),
    (re.compile(_B + r"[0-9]{7}[A-W][A-IW]?" + _E, re.I), _ok(ie_pps)),
    (re.compile(_B + r"[A-Z]{2} ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D]" + _E, re.I), lambda _t, v, _s: _nino(v)),
    (re.compile(_B + r"[0-9]{3} [0-9]{2} [0-9]{4}" + _E), _ok(us_ssn)),
    (re.compile(_B + r"[0-9]{9}" + _E), lambda t, v, s: (_SSN_CUE(t, v, s) and us_ssn.is_valid(v))
     or (_BSN_CUE(t, v, s) and nl_bsn.is_valid(v))),
    (re.compile(_B + r"[0-9]{4}\.[0-9]{2}\.[0-9]{3}" + _E), lambda t, v, s: _BSN_CUE(t, v, s) and nl_bsn.is_valid(v)),
]
# every shape above holds one of these (6 digits in a row, digit pairs split by a separator, or the codice
# fiscale's year/day digits between letters)
_HINT = re.compile(r"[0-9]{6}|[0-9]{2}[ .-][0-9]{2}|[A-Za-z][0-9LMNPQRSTUV]{2}[A-Za-z][0-9LMNPQRSTUV]{2}[A-Za-z]")


#: Any of the shapes: one search decides whether the shapes are tried one by one.
_ANY = re.compile("|".join(f"(?i:{p.pattern})" if p.flags & re.I else f"(?:{p.pattern})" for p, _ in _FORMATS))


def scan_ids(text: str) -> list[tuple[int, int]]:
    """Spans of national identity numbers in ``text``."""
    if _HINT.search(text) is None or _ANY.search(text) is None:
        return []
    out = []
    for pattern, check in _FORMATS:
        for m in pattern.finditer(text):
            v = m.group()
            try:
                ok = check(text, v.upper().replace(" ", ""), m.start())
            except Exception:  # noqa: BLE001  (a validator raising on an odd candidate: not a number of its kind)
                ok = False
            if ok:
                out.append((m.start(), m.end()))
    return out
