"""Postal addresses: a street with its house number, in the street-naming conventions of twelve countries.

An address is a hit when it has a *street part*: a house number and a street name with a word that
says it is a street (:data:`STREET_WORDS`, by language), in the order of its country:

* number first (US, GB, IE, FR, CA, AU): "221B Baker Street", "1600 Pennsylvania Ave NW",
  "12 rue de la Paix", "8 boulevard Saint-Michel";
* street first (DE, AT, CH, NL, SE, DK, NO, PL, ES, IT): "Hauptstraße 5", "Musterstr. 12a",
  "Keizersgracht 123", "Drottninggatan 53", "ul. Marszałkowska 10", "Calle Mayor 5", "C/ Mayor, 5",
  "Via Roma 10", "Piazza Navona 2";

then, when they follow (after a comma or a space), the flat, the postcode and the town are part of
the hit: "…, Apt 4", "…, 10115 Berlin", "…, London SW1A 1AA", "…, Springfield, IL 62704",
"…, 1012 AB Amsterdam", "…, 00-950 Warszawa". A UK postcode alone ("SW1A 1AA") is a hit too: it names
a handful of houses. A town alone is not an address ("we met in Paris"), nor a postcode-shaped number
alone ("75001"), nor a grid cell ("C3"), nor a street word without a number ("Main Street").

This is a structural rule, not a gazetteer: it misses an address written without a street word
("Am Markt 3", "Piccadilly 1") and one spelled out ("twelve Baker Street"); see the recall figures.
"""

from __future__ import annotations

import re

__all__ = ["STREET_WORDS", "scan_addresses"]

#: Words that name a street, by where they stand: after the name (number first or last) or before it.
STREET_WORDS = {
    "suffix": r"Street|St|Road|Rd|Avenue|Ave|Av|Lane|Ln|Drive|Dr|Boulevard|Blvd|Way|Court|Ct|Place|Pl|Terrace"
              r"|Close|Crescent|Square|Sq|Gardens|Grove|Hill|Row|Parade|Highway|Hwy|Parkway|Pkwy",
    "prefix_fr": r"rue|avenue|av\.|bd|boulevard|place|allée|chemin|impasse|quai|cours|route|square",
    "compound": r"straße|strasse|str\.|weg|platz|allee|gasse|ring|damm|ufer|straat|laan|plein|gracht|kade|singel"
                r"|dijk|gatan|vägen|gränd|torget|gade|vej|allé|gata|veien|gaten|vegen|katu|tie|kuja|polku|tori",
    "word": r"Straße|Strasse|Str\.|Gasse|Platz|Allee|Weg|Ring|gate|gata|gatan|vej|gade|straat|laan|katu|tie",
    "prefix": r"Calle|C/|Avenida|Avda\.?|Plaza|Paseo|Carrer|Rua|Via|Viale|Piazza|Corso|Largo|Vicolo|ul\.|al\."
              r"|Aleja|Rue|Avenue|Boulevard|Place|Chemin|Route",
}
_CAPW = r"[A-ZÀ-ÖØ-ÞĀ-Ž][\w'’.-]*"
_NUM = r"[0-9]{1,5}(?:[ -]?[A-Za-z](?![\w]))?(?:-[0-9]{1,4})?"
_PART = r"(?:d[eu']\s?|de la |de l'|des |la |le |del |de |della |di |dei |degli |delle )?"

_NUMBER_FIRST = re.compile(
    rf"(?<![\w./-]){_NUM},?\s+(?:{_CAPW}\s+){{1,3}}(?:{STREET_WORDS['suffix']})\.?(?![\w])(?:\s+(?:NW|NE|SW|SE|N|S|E|W)\b)?"
    rf"|(?<![\w./-]){_NUM}(?:\s?(?:bis|ter))?,?\s+(?i:{STREET_WORDS['prefix_fr']})\s+{_PART}{_CAPW}(?:\s+{_CAPW}){{0,2}}")
_STREET_FIRST = re.compile(
    rf"(?<![\w])[A-ZÀ-ÖØ-ÞĀ-Ž][\w-]*(?:{STREET_WORDS['compound']})(?:\s+{_CAPW})?,?\s+{_NUM}(?![\w.]\w)"
    rf"|(?<![\w])(?:{_CAPW}\s+){{1,3}}(?:{STREET_WORDS['word']})\s+{_NUM}(?![\w.]\w)"
    rf"|(?<![\w])(?:[A-ZÀ-ÖØ-ÞĀ-Ž][\w-]*\s+)?(?:{STREET_WORDS['prefix']})\s+{_PART}(?:{_CAPW}\s+){{0,3}}{_CAPW},?"
    rf"\s+(?:n[º°o.]\s*)?{_NUM}(?![\w.]\w)")
# what may follow a street part: a flat, then postcode and town in one of the countries' orders
_UK_POSTCODE = r"[A-Z]{1,2}[0-9][A-Z0-9]? ?[0-9][A-Z]{2}"
_TAIL = re.compile(
    rf"(?:,?\s+(?:Apt|Apartment|Flat|Suite|Unit|#|Wohnung|Whg\.|piso|escalera|appartement|app\.)\.?\s*[\w-]+)?"
    rf"(?:,?\s+(?:(?:[A-Z]{{1,2}}-)?[0-9]{{4,5}}|[0-9]{{2}}-[0-9]{{3}}|[0-9]{{3}} [0-9]{{2}}|[0-9]{{4}} ?[A-Z]{{2}})"
    rf"\s+{_CAPW}(?:[ -]{_CAPW})?"
    rf"|,\s+{_CAPW}(?:\s+(?!{_UK_POSTCODE}(?![\w-])){_CAPW})?(?: [0-9]{{1,2}}(?![\w.]))?(?:,?\s+(?:[A-Z]{{2}}\s+[0-9]{{5}}(?:-[0-9]{{4}})?|{_UK_POSTCODE}))?)?")
_POSTCODE_ALONE = re.compile(rf"(?<![\w-])(?:{_UK_POSTCODE})(?![\w-])")
_HINT = re.compile(r"[0-9]")


def _uk_postcode_ok(s: str) -> bool:
    return " " in s and not s.replace(" ", "")[:-3].isdigit()


def scan_addresses(text: str) -> list[tuple[int, int]]:
    """Spans of postal addresses in ``text``."""
    if _HINT.search(text) is None:
        return []
    out = []
    for pattern in (_NUMBER_FIRST, _STREET_FIRST):
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
