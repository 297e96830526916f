"""Write bench/data/pii_set.json: the labelled set for PII recall and precision (bench and tests read it).

`PYTHONPATH=$PWD .venv/bin/python bench/data/make_pii_set.py` (deterministic: seed 41).

Planted forms: personal data of each kind, in the national formats of 16 countries, put in a
sentence: ``{"kind", "country", "form", "text", "span": [start, end]}``; ``span`` is what redaction
must replace. Phone numbers are libphonenumber's example numbers of each region, written in the
region's national format and with a slash, a dash or spaces after the area code; identity numbers and
IBANs get valid check digits (python-stdnum) on random bodies. Split forms are two-field records:
``{"kind", "form", "fields": [a, b], "spans": [[s, e], [s, e]]}``.

Innocent strings: what a corpus holds that is not personal data: every distinct short string of the
example session 7f3a and of a simulated corpus (clock times, ids, versions, grid cells, prose),
and written traps (capitalised prose such as "Track 2", "Label Studio", "we met in Paris", a street
word without a number, numbers near a phone's shape): ``{"text", "source"}``.
"""

from __future__ import annotations

import base64
import json
import random
import sys
from pathlib import Path
from urllib.parse import quote

import phonenumbers as pn

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).with_name("pii_set.json")
COUNTRIES = ("DE", "FR", "GB", "US", "ES", "IT", "NL", "PL", "SE", "DK", "FI", "NO", "BE", "CH", "AT", "IE")
NAMES = {  # (honorific, given, family) of each country
    "DE": ("Herr", "Jürgen", "Müller"), "FR": ("Mme", "Camille", "Dupont"), "GB": ("Mrs", "Olivia", "Smith"),
    "US": ("Dr.", "Jane", "Roe"), "ES": ("Sra.", "Lucía", "García López"), "IT": ("Dott.ssa", "Giulia", "Bianchi"),
    "NL": ("Dhr.", "Daan", "de Vries"), "PL": ("Pani", "Zofia", "Nowak"), "SE": ("Fru", "Astrid", "Lindqvist"),
    "DK": ("Hr.", "Mads", "Jørgensen"), "FI": ("Prof.", "Aino", "Virtanen"), "NO": ("Dr", "Ingrid", "Hansen"),
    "BE": ("M.", "Lucas", "Peeters"), "CH": ("Frau", "Anna", "Keller"), "AT": ("Herr", "Lukas", "Gruber"),
    "IE": ("Ms", "Siobhán", "O'Brien"),
}
ADDRESSES = {
    "DE": "Hauptstraße 5, 10115 Berlin", "FR": "12 rue de la Paix, 75002 Paris",
    "GB": "221B Baker Street, London NW1 6XE", "US": "1600 Pennsylvania Ave NW, Washington, DC 20500",
    "ES": "Calle Mayor 5, 28013 Madrid", "IT": "Via Roma 10, 00184 Roma",
    "NL": "Keizersgracht 123, 1015 CJ Amsterdam", "PL": "ul. Marszałkowska 10, 00-950 Warszawa",
    "SE": "Drottninggatan 53, 111 21 Stockholm", "DK": "Vesterbrogade 12, 1620 København V",
    "FI": "Mannerheimintie 14, 00100 Helsinki", "NO": "Karl Johans gate 22, 0159 Oslo",
    "BE": "Rue de la Loi 16, 1000 Bruxelles", "CH": "Bahnhofstrasse 1, 8001 Zürich",
    "AT": "Mariahilfer Straße 77, 1060 Wien", "IE": "14 Grafton Street, Dublin 2",
}
ADDRESSES_2 = {
    "DE": "Musterstr. 12a", "FR": "8 boulevard Saint-Michel", "GB": "10 Downing Street", "US": "742 Evergreen Terrace",
    "ES": "C/ Alcalá, 48", "IT": "Piazza Navona 2", "NL": "Damrak 1", "PL": "ul. Floriańska 3",
    "SE": "Storgatan 7", "DK": "Nørregade 8", "FI": "Aleksanterinkatu 52", "NO": "Storgata 3",
    "BE": "Avenue Louise 54", "CH": "Rue du Rhône 10", "AT": "Kärntner Straße 9", "IE": "7 Merrion Square",
}
#: names with no title or cue (the named-entity route, corpus/pii/people.py): four of each country's naming
#: conventions (compound, particle and hyphenated family names, given names with diacritics) and of nine more
CUELESS = {
    "DE": ("Katrin Schneider", "Stefan Hoffmann", "Lena Fischer", "Tobias Wagner"),
    "FR": ("Jean Dupont", "Claire Moreau", "Julien Lefèvre", "Élodie Girard"),
    "GB": ("Alice Martin", "Oliver Hughes", "Charlotte Evans", "Harry Whitaker"),
    "US": ("Emily Johnson", "Michael Brown", "Ashley Rodriguez", "Tyler Jackson"),
    "ES": ("Carlos Fernández", "María José Ruiz", "Javier Moreno Díaz", "Carmen Sánchez"),
    "IT": ("Marco Rossi", "Francesca Romano", "Luca Esposito", "Chiara Colombo"),
    "NL": ("Sanne Jansen", "Pieter van Dijk", "Lotte Bakker", "Joost de Boer"),
    "PL": ("Katarzyna Kowalska", "Piotr Wiśniewski", "Agnieszka Wójcik", "Tomasz Lewandowski"),
    "SE": ("Erik Johansson", "Maja Karlsson", "Lars Nilsson", "Elin Andersson"),
    "DK": ("Mette Nielsen", "Søren Kristensen", "Freja Rasmussen", "Anders Poulsen"),
    "FI": ("Mikko Korhonen", "Laura Mäkinen", "Juha Nieminen", "Emilia Heikkinen"),
    "NO": ("Ola Nordmann", "Kari Johansen", "Sigrid Larsen", "Henrik Berg"),
    "BE": ("Thomas Claes", "Marie Dubois", "Wout Maes", "Elise Janssens"),
    "CH": ("Reto Meier", "Nicole Brunner", "Urs Baumann", "Sandra Frei"),
    "AT": ("Florian Huber", "Verena Steiner", "Matthias Hofer", "Katharina Moser"),
    "IE": ("Seán Murphy", "Aoife Kelly", "Ciarán Byrne", "Niamh O'Sullivan"),
    "CN": ("Wei Zhang", "Xiaoming Wang", "Li Na Chen", "Jun Liu"),
    "JP": ("Kenji Tanaka", "Yuki Sato", "Haruto Suzuki", "Aiko Watanabe"),
    "IN": ("Priya Sharma", "Rahul Gupta", "Ananya Iyer", "Vikram Reddy"),
    "NG": ("Chinedu Okafor", "Ngozi Adeyemi", "Emeka Nwosu", "Funmilayo Bello"),
    "BR": ("João Silva", "Ana Pereira", "Lucas Oliveira", "Fernanda Costa"),
    "TR": ("Mehmet Yılmaz", "Ayşe Demir", "Emre Kaya", "Zeynep Çelik"),
    "KR": ("Min-jun Kim", "Seo-yeon Park", "Ji-ho Lee", "Hye-jin Choi"),
    "VN": ("Nguyen Van An", "Tran Thi Mai", "Le Minh Duc", "Pham Thu Trang"),
    "AR": ("Martín Gómez", "Sofía Rodríguez", "Mateo Fernández", "Valentina López"),
}
CUELESS_SENTENCES = ("ask {} about it", "{} wrote back yesterday", "I showed the grid to {} and we agreed",
                     "the run was checked with {} last week", "{} thinks the drift is too strong")
SENTENCES = ("please write to {} soon", "Kontakt: {}.", "the subject said {} when asked", "({})", "{}")


def _valid(module, make, rng: random.Random) -> str:
    for _ in range(100000):
        v = make(rng)
        try:
            if module.is_valid(v):
                return v
        except Exception:  # noqa: BLE001
            continue
    raise RuntimeError(f"no valid {module.__name__}")


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def _ids(rng: random.Random) -> list[tuple[str, str, str]]:
    from stdnum.be import nn
    from stdnum.ch import ssn
    from stdnum.de import idnr
    from stdnum.dk import cpr
    from stdnum.es import dni, nie
    from stdnum.fi import hetu
    from stdnum.fr import nir
    from stdnum.ie import pps
    from stdnum.it import codicefiscale
    from stdnum.nl import bsn
    from stdnum.no import fodselsnummer
    from stdnum.pl import pesel
    from stdnum.se import personnummer
    from stdnum.us import ssn as us_ssn

    out = []
    for _ in range(2):
        d = _valid(idnr, lambda r: str(r.randint(1, 9)) + _digits(r, 10), rng)
        out += [("DE", "Steuer-ID compact", d), ("DE", "Steuer-ID grouped", f"{d[:2]} {d[2:5]} {d[5:8]} {d[8:]}")]
        f = _valid(nir, lambda r: r.choice("12") + _digits(r, 2) + f"{r.randint(1, 12):02d}" + _digits(r, 10), rng)
        out += [("FR", "NIR compact", f), ("FR", "NIR grouped", f"{f[0]} {f[1:3]} {f[3:5]} {f[5:7]} {f[7:10]} "
                                                               f"{f[10:13]} {f[13:]}")]
        e = _valid(dni, lambda r: (lambda b: b + dni.calc_check_digit(b))(_digits(r, 8)), rng)
        out += [("ES", "DNI", e), ("ES", "DNI lower case", e.lower()), ("ES", "DNI with hyphen", e[:8] + "-" + e[8])]
        x = _valid(nie, lambda r: (lambda b: b + nie.calc_check_digit(b))(r.choice("XYZ") + _digits(r, 7)), rng)
        out.append(("ES", "NIE", x))
        out.append(("PL", "PESEL", _valid(pesel, lambda r: (lambda b: b + pesel.calc_check_digit(b))(
            f"{r.randint(50, 99)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}" + _digits(r, 4)), rng)))
        num = _valid(bsn, lambda r: _digits(r, 9), rng)
        out += [("NL", "BSN after its name", "BSN " + num)]
        out.append(("BE", "numéro national", (lambda v: f"{v[:2]}.{v[2:4]}.{v[4:6]}-{v[6:9]}.{v[9:]}")(
            _valid(nn, lambda r: (lambda b: b + f"{97 - int(b) % 97:02d}")(
                f"{r.randint(50, 99)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}" + _digits(r, 3)), rng))))
        c = _valid(ssn, lambda r: (lambda b: b + __import__("stdnum.ean", fromlist=["x"]).calc_check_digit(b))(
            "756" + _digits(r, 9)), rng)
        out.append(("CH", "AHV number", f"{c[:3]}.{c[3:7]}.{c[7:11]}.{c[11:]}"))
        s = _valid(personnummer, lambda r: f"{r.randint(50, 99)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}-"
                   + _digits(r, 4), rng)
        out.append(("SE", "personnummer", s))
        k = _valid(cpr, lambda r: f"{r.randint(1, 28):02d}{r.randint(1, 12):02d}{r.randint(50, 99)}-"
                   + _digits(r, 4), rng)
        out.append(("DK", "CPR", k))
        h = _valid(hetu, lambda r: (lambda b: b[:6] + "-" + b[6:] + "0123456789ABCDEFHJKLMNPRSTUVWXY"[int(b) % 31])(
            f"{r.randint(1, 28):02d}{r.randint(1, 12):02d}{r.randint(50, 99)}" + f"{r.randint(2, 899):03d}"), rng)
        out.append(("FI", "henkilötunnus", h))
        n = _valid(fodselsnummer, lambda r: f"{r.randint(1, 28):02d}{r.randint(1, 12):02d}{r.randint(50, 99)}"
                   + _digits(r, 5), rng)
        out += [("NO", "fødselsnummer", n), ("NO", "fødselsnummer grouped", n[:6] + " " + n[6:])]
        out.append(("IE", "PPS number", _valid(pps, lambda r: _digits(r, 7) + r.choice("ABCDEFGHIJKLMNOPQRSTUVW"),
                                               rng)))
        u = _valid(us_ssn, lambda r: f"{r.randint(100, 665)}" + _digits(r, 6), rng)
        out += [("US", "SSN with spaces", f"{u[:3]} {u[3:5]} {u[5:]}"), ("US", "SSN after its name", "SSN " + u)]
        out.append(("GB", "National Insurance number", f"{rng.choice(['AB', 'JG', 'NP', 'SZ'])} {_digits(rng, 2)} "
                                                       f"{_digits(rng, 2)} {_digits(rng, 2)} {rng.choice('ABCD')}"))
    out.append(("IT", "codice fiscale", "RSSMRA85T10A562S"))
    out.append(("IT", "codice fiscale lower case", "rssmra85t10a562s"))
    out.append(("IT", "codice fiscale", codicefiscale.compact("RCCMNL83S18D969H")))
    return out


def _phones() -> list[tuple[str, str, str]]:
    out = []
    for cc in COUNTRIES:
        for typ in (pn.PhoneNumberType.FIXED_LINE, pn.PhoneNumberType.MOBILE):
            n = pn.example_number_for_type(cc, typ)
            if n is None:
                continue
            nat = pn.format_number(n, pn.PhoneNumberFormat.NATIONAL)
            out.append((cc, f"{typ} national", nat))
            if " " in nat:
                area, rest = nat.split(" ", 1)
                out.append((cc, f"{typ} slash after the area code", f"{area}/{rest.replace(' ', '')}"))
                out.append((cc, f"{typ} dash after the area code", f"{area}-{rest.replace(' ', '')}"))
            out.append((cc, f"{typ} international", pn.format_number(n, pn.PhoneNumberFormat.INTERNATIONAL)))
    return out


def _ibans(rng: random.Random) -> list[tuple[str, str, str]]:
    from stdnum import iban

    bodies = {"DE": "370400440532013000", "GB": "WEST12345698765432", "FR": "20041010050500013M02606",
              "ES": "21000418450200051332", "IT": "X0542811101000000123456", "NL": "ABNA0417164300",
              "BE": "539007547034", "PL": "109010140000071219812874", "SE": "50000000058398257466",
              "DK": "00400440116243", "FI": "12345600000785", "NO": "86011117947", "CH": "00762011623852957",
              "AT": "1904300234573201", "IE": "AIBK93115212345678", "US": None}
    out = []
    for cc, body in bodies.items():
        if body is None:
            continue
        v = cc + iban.calc_check_digits(cc + "00" + body) + body
        spaced = " ".join(v[i:i + 4] for i in range(0, len(v), 4))
        out += [(cc, "compact", v), (cc, "spaced", spaced), (cc, "lower case", v.lower()),
                (cc, "lower case spaced", spaced.lower())]
    return out


def _emails(rng: random.Random) -> list[tuple[str, str, str]]:
    out = []
    for cc in COUNTRIES:
        _, given, family = NAMES[cc]
        local = (given + "." + family.split()[-1]).lower().replace("'", "")
        tld = {"GB": "co.uk", "US": "com"}.get(cc, cc.lower())
        addr = f"{local}@example.{tld}".encode("ascii", "ignore").decode() if not local.isascii() else \
            f"{local}@example.{tld}"
        out.append((cc, "plain", addr))
        out.append((cc, "percent-encoded @", addr.replace("@", "%40")))
        out.append((cc, "percent-encoded in full", quote(addr, safe="")))
        out.append((cc, "HTML decimal references", addr.replace("@", "&#64;").replace(".", "&#46;")))
        out.append((cc, "HTML named reference", addr.replace("@", "&commat;")))
        out.append((cc, "base64", base64.b64encode(addr.encode()).decode()))
        out.append((cc, "base64 without padding", base64.urlsafe_b64encode(addr.encode()).decode().rstrip("=")))
    return out


def _planted(rng: random.Random) -> list[dict]:
    rows: list[dict] = []

    def add(kind, cc, form, value, sentence=None):
        sentence = sentence or SENTENCES[len(rows) % len(SENTENCES)]
        a = sentence.index("{}")
        rows.append({"kind": kind, "country": cc, "form": form, "text": sentence.format(value),
                     "span": [a, a + len(value)]})

    for cc, form, v in _phones():
        add("phone", cc, form, v)
    for cc, form, v in _ids(rng):
        add("national_id" if not form.startswith("SSN") and "after its name" not in form else "national_id", cc,
            form, v.split(" ", 1)[1] if "after its name" in form else v,
            (v.split(" ", 1)[0] + " {} on file") if "after its name" in form else None)
    for cc, form, v in _ibans(rng):
        add("iban", cc, form, v)
    for cc, form, v in _emails(rng):
        add("email", cc, form, v)
    for cc, (title, given, family) in NAMES.items():
        add("name", cc, "with a title", f"{given} {family}", f"ask {title} {{}} about it")
        add("name", cc, "family name after a title", family, f"{title} {{}} will call")
        add("name", cc, "after 'curated by'", f"{given} {family}", "This corpus was curated by {}.")
        add("name", cc, "after 'my name is'", f"{given} {family}", "hello, my name is {} and I")
    for cc, names in CUELESS.items():
        for v in names:
            add("name", cc, "no title or cue", v, CUELESS_SENTENCES[len(rows) % len(CUELESS_SENTENCES)])
    for cc in COUNTRIES:
        add("address", cc, "street, postcode and town", ADDRESSES[cc], "send it to {} please")
        add("address", cc, "street and number", ADDRESSES_2[cc], "we live at {} now")
    for v in ("4111 1111 1111 1111", "5500-0000-0000-0004", "378282246310005"):
        add("card", "US", "card", v)
    return rows


def _split() -> list[dict]:
    rows = []
    for cc in COUNTRIES:
        _, given, family = NAMES[cc]
        local = (given[0] + family.split()[-1]).lower().encode("ascii", "ignore").decode().replace("'", "")
        for form, a, b in (("e-mail split at the @", f"write to {local}@", f"example.{cc.lower()} soon"),
                           ("e-mail split before the @", f"write to {local}", f"@example.{cc.lower()} soon")):
            sa = a.rindex(" ") + 1
            sb = b.index(" ")
            rows.append({"kind": "email", "country": cc, "form": form, "fields": [a, b],
                         "spans": [[sa, len(a)], [0, sb]]})
    return rows


TRAPS = [
    "Track 2", "Track 2 scores the plan", "Label Studio", "Label Studio 1.13.1 on port 8080", "we met in Paris",
    "a workshop in Paris in 2026", "Main Street", "the Goal is at C3", "Step 3 of 14", "it is 3:44 pm", "15:46:00",
    "2026-11-29T10:00:00Z", "version 1.2.3.4", "v0.1", "2.13.0", "sim-1-0000123", "7f3a.t2.cf0", "consent/2026/001",
    "grid cell B12 at 3:44 pm", "ordinary numbers 123 456 789 and 1234567890", "ISBN 978-3-16-148410-0",
    "Partner Lab B (simulated)", "collected by Partner Lab B", "TRB maintainers (pilot)", "lab-a", "Mr. Right",
    "look at the dot on the grid", "Prof-level tasks", "Street Fighter 2", "Route 66", "Via Ferrata", "Platz 2",
    "row 12, column 4", "seed 1234567", "1732870800000", "DE89 on the map", "Drive 3 cells north",
    "hash 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "step 12 of 14, 3 4 5 6 7 8 9 10",
    "Held out: maze-9x9-gusty", "The Wind pushed me to D4", "I am Tired", "Dr. visit not needed", "M. 3",
    "x @ self.weight", "q @ k.T", "4111.1111.1111.1112", "123-45-67890", "01.02.03.04.05", "+49 30 1234",
    "The Smith chart", "London", "Berlin, Madrid and Rome", "Amsterdam 2026", "10115 is a number", "Apt to drift",
    # capitalised prose of the toolkit's own vocabulary, which the named-entity route must leave alone
    "Label Studio exports the tasks", "Running Label Studio locally", "Label Studio Community Edition",
    "the Data Manager lists every task", "Track 1 and Track 2 agree", "What Track 2 measures", "Δgov rose after Track 2",
    "Δgov and Δself differ", "Held Out sessions stay held out", "The Goal Cell is C3", "Hugging Face Hub",
    "published on the Hugging Face Hub", "Reflection Benchmark", "Bench Hard scores", "Acme Labs trained it",
    "Partner Lab B collected the contexts", "North American sites", "National Insurance", "The Ray cluster",
    "Plan Tracks", "Compare All runs", "Label All Tasks", "When Enter is pressed", "Our Lab curated it",
    "International Business Machines", "Python Software Foundation", "Croissant metadata", "Main Street Lab",
    "Grid World v2", "Gusty Maze", "Step Budget", "Counterfactual Pairs", "Self Report", "Data Stewards",
    "The Wind Pushed Me", "Dein Ziel ist E6", "Votre objectif est C3", "Tu objetivo es B2", "Il tuo obiettivo è D4",
]


def _innocent() -> list[dict]:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    import simworld
    from tests_paths import EXAMPLE_7F3A

    def strings(o):
        if isinstance(o, str):
            yield o
        elif isinstance(o, dict):
            for k, v in o.items():
                yield k
                yield from strings(v)
        elif isinstance(o, list):
            for v in o:
                yield from strings(v)

    out = [{"text": t, "source": "trap"} for t in TRAPS]
    seen = {t for t in TRAPS}
    recs = [json.loads(line) for line in EXAMPLE_7F3A.read_text(encoding="utf-8").splitlines() if line.strip()]
    for source, rs in (("example 7f3a", recs), ("simulated corpus", list(simworld.simulate(n_sessions=20, seed=1)))):
        found = sorted({s for r in rs for s in strings(r) if 4 <= len(s) <= 300} - seen)
        random.Random(41).shuffle(found)
        for s in found[:150]:
            out.append({"text": s, "source": source})
            seen.add(s)
    return out


def build() -> dict:
    rng = random.Random(41)
    return {"planted": _planted(rng), "split": _split(), "innocent": _innocent()}


if __name__ == "__main__":
    data = build()
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(data['planted'])} planted, {len(data['split'])} split, {len(data['innocent'])} innocent")
