"""Postal addresses: a street with its house number, in the street-naming conventions of eighteen countries.

An address is a hit when it has a *street part*: a house number and a street name with a word that
says it is a street (:data:`STREET_WORDS`, by language: each country's common street types), in the order of
its country:

* number first (US, GB, IE, FR, CA, AU): "221B Baker Street", "1600 Pennsylvania Ave NW",
  "12 rue de la Paix", "8 boulevard Saint-Michel";
* street first (DE, AT, CH, NL, BE, SE, DK, NO, FI, PL, ES, IT, PT, BR): "Hauptstraße 5", "Musterstr. 12a",
  "Konrad-Adenauer-Platz 3/1", "Keizersgracht 123", "Drottninggatan 53", "ul. Marszałkowska 10", "plac Zbawiciela 2",
  "Calle Mayor 5", "C/ Mayor, 5", "Via Roma 10", "Piazza Navona 2", "rue Charpié 67", "Rua Augusta, 92";

or, whatever the street is called, when a postcode of a telling shape and a town follow the number
("Timpad 8, 6540 GA Oudelande", "Rua X, 92, Centro, 01310-100 São Paulo / SP"), or a town and a US state and ZIP or
a UK postcode ("0059 Brittney Mountain, Mariamouth, MN 30304", "Studio 5, Ryan Street, Port Mariahaven, M32 4UU").

Then, when they follow (after a comma or a space), flats, postcodes, towns, provinces and states are part of the
hit: "…, Apt 4", "… Piano 9", "…, 10115 Berlin", "…, London SW1A 1AA", "…, Springfield, IL 62704",
"…, 1012 AB Amsterdam", "…, 00-950 Warszawa", "… D02 X285 Dublin", "…, 00184 Roma (RM)". A UK postcode alone
("SW1A 1AA") is a hit too: it names a handful of houses. A town alone is not an address ("we met in Paris"), nor
a postcode-shaped number alone ("75001"), nor a grid cell ("C3"), nor a street word without a number ("Main
Street"), nor a label and a number before a year or a count ("Track 2, 2026 Berlin": bare digits never make
an address without a street word).

This is a structural rule, not a gazetteer: it misses an address written without a street word and without a
telling postcode ("Am Markt 3", "Piccadilly 1", "Hagenfaret 8, 4258 Olsen") and one spelled out ("twelve
Baker Street"); see the recall figures (bench/hardening_pii.py: the labelled set and two held-out Faker draws).
"""

from __future__ import annotations

import re

__all__ = ["STREET_WORDS", "scan_addresses"]

#: Words that name a street, by where they stand: after the name (number first or last) or before it. Each
#: country's own conventions (its common street types), never a generator's word list.
STREET_WORDS = {
    "suffix": r"Street|St|Road|Rd|Avenue|Ave|Av|Lane|Ln|Drive|Dr|Boulevard|Blvd|Way|Court|Ct|Place|Pl|Terrace"
              r"|Close|Crescent|Square|Sq|Gardens|Grove|Hill|Row|Parade|Highway|Hwy|Parkway|Pkwy|Circle|Cir|Trail"
              r"|Path|Walk|Mews|Rise|Vale|Wharf|Quay|Loop|Pike|Turnpike|Plaza|Heights|Crossing",
    "prefix_fr": r"rue|avenue|av\.|bd|boulevard|place|allée|chemin|impasse|quai|cours|route|square|voie|passage"
                 r"|sentier|promenade|esplanade|ruelle|faubourg",
    "compound": r"straße|strasse|str\.|weg|platz|allee|gasse|ring|damm|ufer|straat|laan|plein|gracht|kade|singel"
                r"|dijk|steeg|baan|dreef|gatan|vägen|gränd|torget|stigen|backen|gade|vej|allé|stræde|plads|vænge"
                r"|gata|veien|gaten|vegen|vei|veg|plass|bakken|stien|svingen|kroken|løkka|haugen|åsen|tunet|jordet|brygga"
                r"|kollen|stranda|hof|katu|tie|kuja|polku"
                r"|tori|bulevardi|väylä|aukio|kaari"
                r"|-(?:Straße|Strasse|Weg|Platz|Allee|Gasse|Ring|Damm|Ufer|Markt|Steig|Promenade)",
    "word": r"Straße|Strasse|Str\.|Gasse|Platz|Allee|Weg|Ring|gate|gata|gatan|vej|gade|straat|laan|katu|tie"
            r"|bulevardi|kuja|polku|vei|veg|plass",
    "prefix": r"Calle|C/|C\.|Avenida|Avda\.?|Plaza|Paseo|Ronda|Pasaje|Travesía|Camino|Carretera|Glorieta|Cañada"
              r"|Callejón|Rambla|Carrer|Avinguda|Passeig|Plaça|Rua|R\.|Travessa|Estrada|Rodovia|Alameda|Praça"
              r"|Ladeira|Via|Viale|Piazza|Piazzale|Corso|Largo|Vicolo|Vico|Strada|Borgo|Contrada|Lungomare|Salita"
              r"|Traversa|ul\.|al\.|Aleja|Rue|Avenue|Boulevard|Place|Chemin|Route"
              r"|(?i:rue|avenue|boulevard|chemin|allée|impasse|quai|ulica|ul\.|plac|pl\.|aleja|al\.|osiedle|os\.)",
}
_CAPW = r"[A-ZÀ-ÖØ-ÞĀ-Ž][\w'’.-]*"
_NUM = r"[0-9]{1,5}(?:[ -]?[A-Za-z](?![\w]))?(?:[-/][0-9]{1,4}[A-Za-z]?)?"
_PART = r"(?:d[eu']\s?|de la |de l'|des |la |le |del |de |della |di |dei |degli |delle )?"
# postcodes: NL "1012 AB", PL "00-950", SE/CZ "111 21", BR "01310-100", PT "1000-001", IE's Eircode "D02 X285",
# 4 or 5 digits (with a country letter: "D-10115", "CH-8001")
_UK_POSTCODE = r"[A-Z]{1,2}[0-9][A-Z0-9]? ?[0-9][A-Z]{2}"
_EIRCODE = r"(?:[AC-FHKNPRTV-Y][0-9]{2}|D6W) ?[0-9AC-FHKNPRTV-Y]{4}"
_PC = (rf"(?:[0-9]{{5}}-?[0-9]{{3}}|[0-9]{{4}}-[0-9]{{3}}|[0-9]{{4}} ?[A-Z]{{2}}(?![\w])|[0-9]{{2}}-[0-9]{{3}}"
       rf"|[0-9]{{3}} [0-9]{{2}}|(?:[A-Z]{{1,2}}-)?[0-9]{{4,5}}|{_EIRCODE})(?![\w-])")
# the USPS's codes of the states, DC, the territories and the armed forces' post offices
_US_STATES = ("AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH"
              " OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC AS GU MP PR VI AA AE AP").split()
_US_STATE_ZIP = rf"(?:{'|'.join(_US_STATES)})\s+[0-9]{{5}}(?:-[0-9]{{4}})?"
# the postcodes that say "postcode" by their shape alone (NL "1012 AB", PL "00-950", SE/CZ "111 21", BR, PT); a
# bare 4 or 5 digits could be a year or a count ("Track 2, 2026 Berlin", "Table 2, 1500 Runs")
_PC_SHAPED = (r"(?:[0-9]{5}-[0-9]{3}|[0-9]{4}-[0-9]{3}|[0-9]{4} ?[A-Z]{2}(?![\w])|[0-9]{2}-[0-9]{3}"
              r"|[0-9]{3} [0-9]{2})(?![\w-])")
_LINK = r"(?:da|de|do|das|dos|di|del|della|am|an|der|im|bei|sur|sous|près|en|la|le|les|aan|op|upon|on)"
_TOWN_WORD = rf"(?!(?:{_UK_POSTCODE}|{_EIRCODE})(?![\w-])){_CAPW}"
_TOWN = (rf"(?:{_LINK} )?{_TOWN_WORD}(?:[ -](?:{_LINK}[ -])*{_TOWN_WORD}){{0,3}}"
         rf"(?: [0-9]{{1,2}}(?![\w.])| \([A-Z]{{2}}\)| ?/ ?[A-Z]{{2}}(?![\w]))?")
_FLAT = (r"(?:,?\s+(?i:Apt|Apartment|Flat|Suite|Unit|#|Wohnung|Whg\.|Top|Stiege|piso|puerta|planta|escalera"
         r"|appartement|app\.|appartamento|piano|interno|scala|andar|sala)\.?\s*[\w/-]+){0,2}")
# a street with its number, then (a district and) a postcode of a telling shape and a town: an address whatever the
# street is called ("Timpad 8, 6540 GA Oudelande", "Rua X, 92, Centro, 01310-100 São Paulo / SP"); number first,
# then a town and a US state and ZIP or a UK postcode ("0059 Brittney Mountain, Mariamouth, MN 30304")
_STRUCT = re.compile(
    rf"(?<![\w])(?:{_CAPW}\s+(?:{_LINK}\s+)?){{0,3}}{_CAPW},?\s+{_NUM}(?={_FLAT}(?:,\s+{_TOWN})?,?\s+{_PC_SHAPED},?\s+{_CAPW})"
    rf"|(?<![\w./-]){_NUM}\s+(?:{_CAPW}\s+){{0,3}}{_CAPW}(?={_FLAT},\s+{_TOWN},\s+(?:{_US_STATE_ZIP}|{_UK_POSTCODE}))"
    rf"|(?<![\w])(?:Flat|Studio|Apartment|Apt\.?|Unit|Suite)\s+[0-9]+[A-Za-z]?,\s+(?:{_NUM}\s+)?(?:{_CAPW}\s+){{0,3}}"
    rf"{_CAPW}(?=,\s+{_TOWN},\s+(?:{_US_STATE_ZIP}|{_UK_POSTCODE}))"
    rf"|(?<![\w])(?i:{STREET_WORDS['prefix_fr']})\s+{_PART}{_CAPW}(?:\s+{_CAPW}){{0,2}}(?=,\s+[0-9]{{4,5}}\s+{_CAPW})"
    rf"|(?<![\w])(?:(?:USNS|USNV|USS|USCGC)\s+{_CAPW}|PSC\s+[0-9]{{4}},\s+Box\s+[0-9]{{4}}|Unit\s+[0-9]{{4}}\s+Box"
    rf"\s+[0-9]{{4}}),\s+(?:FPO|APO|DPO)\s+A[AEP]\s+[0-9]{{5}}")

_NUMBER_FIRST = re.compile(
    rf"(?<![\w./-]){_NUM},?\s+(?:{_CAPW}\s+){{1,3}}(?:{STREET_WORDS['suffix']})\.?(?![\w])(?:\s+(?:NW|NE|SW|SE|N|S|E|W)\b)?"
    rf"|(?<![\w./-]){_NUM}(?:\s?(?:bis|ter))?,?\s+(?i:{STREET_WORDS['prefix_fr']})\s+{_PART}{_CAPW}(?:\s+{_CAPW}){{0,2}}")
_STREET_FIRST = re.compile(
    rf"(?<![\w])[A-ZÀ-ÖØ-ÞĀ-Ž][\w-]*(?:{STREET_WORDS['compound']})(?:\s+{_CAPW})?,?\s+{_NUM}(?![\w.]\w)"
    rf"|(?<![\w])(?:{_CAPW}\s+){{1,3}}(?:{STREET_WORDS['word']})\s+{_NUM}(?![\w.]\w)"
    rf"|(?<![\w])(?:[A-ZÀ-ÖØ-ÞĀ-Ž][\w-]*\s+)?(?:{STREET_WORDS['prefix']})\s+{_PART}(?:{_CAPW}\s+){{0,3}}{_CAPW},?"
    rf"\s+(?:n[º°o.]\s*)?{_NUM}(?![\w.]\w)")
# what may follow a street part: flats, then up to four of postcode, town, state and ZIP in the countries' orders
_ELEMENT = (rf"(?:,\s+(?:{_PC}(?:,?\s+{_TOWN})?|{_TOWN}(?:,?\s+(?:{_US_STATE_ZIP}|{_UK_POSTCODE}|{_PC}(?:\s+{_TOWN})?))?)"
            rf"|\s+(?:{_PC}\s+{_TOWN}|{_UK_POSTCODE}(?![\w-])|{_EIRCODE}(?:\s+{_TOWN})?))")
_TAIL = re.compile(rf"{_FLAT}(?:{_ELEMENT}){{0,4}}")
_POSTCODE_ALONE = re.compile(rf"(?<![\w-])(?:{_UK_POSTCODE})(?![\w-])")
_HINT = re.compile(r"[0-9]")


def _uk_postcode_ok(s: str) -> bool:
    return " " in s and not s.replace(" ", "")[:-3].isdigit()


def scan_addresses(text: str) -> list[tuple[int, int]]:
    """Spans of postal addresses in ``text``."""
    if _HINT.search(text) is None:
        return []
    out = []
    for pattern in (_NUMBER_FIRST, _STREET_FIRST, _STRUCT):
        for m in pattern.finditer(text):
            end = m.end()
            while end > m.start() and text[end - 1] in " ,":
                end -= 1
            t = _TAIL.match(text, end)
            if t is not None and t.end() > end:
                end = t.end()
            out.append((m.start(), end))
    for m in _POSTCODE_ALONE.finditer(text):
        if _uk_postcode_ok(m.group()):
            out.append((m.start(), m.end()))
    return out
