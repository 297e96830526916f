"""The labelled PII set (bench/data/pii_set.json, written by bench/data/make_pii_set.py) and how it is scored.

One copy for tests/corpus/test_pii_recall.py (floors) and bench/hardening_pii.py (figures, before and
after). Scoring takes the scanner's functions as arguments, so the bench can score another checkout's.

* A planted form is *caught* when one hit of its kind covers the whole planted span (what redaction
  must replace); a US SSN reported as ``ssn`` counts for ``national_id`` (the older scanner's name).
* A split form (two fields of one record) is caught when each field has a hit of its kind covering
  its part.
* An innocent string with a hit of kind K is a false positive of K. Precision of K is
  caught / (caught + false positives), over the planted forms of K and all innocent strings.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

SET = Path(__file__).resolve().parents[1] / "bench" / "data" / "pii_set.json"
#: addresses and names made by Faker in 18 locales (bench/data/make_pii_heldout.py): held out from the rules' author
HELDOUT = SET.with_name("pii_heldout.json")
#: a second Faker draw, scored only after the address rules were changed on what the first one missed
FRESH = SET.with_name("pii_heldout_fresh.json")
_SAME = {"national_id": {"national_id", "ssn"}}


def load(path: Path = SET) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _covers(hits, kind: str, a: int, b: int) -> bool:
    return any(h.kind in _SAME.get(kind, {kind}) and h.start <= a and h.end >= b for h in hits)


def score(data: dict, scan_text: Callable, scan_record: Callable) -> dict:
    """``{"kinds": {kind: {n, caught, fp, recall, precision}}, "missed": [...], "false": [...]}``."""
    n, caught, fp = Counter(), Counter(), Counter()
    missed, false = [], []
    for row in data["planted"]:
        k = row["kind"]
        n[k] += 1
        if _covers(scan_text(row["text"]), k, *row["span"]):
            caught[k] += 1
        else:
            missed.append(row)
    for row in data["split"]:
        k = "split " + row["kind"]
        n[k] += 1
        a, b = row["fields"]
        by_path: dict[str, list] = {}
        for path, h in scan_record({"a": a, "b": b}):
            by_path.setdefault(path, []).append(h)
        if all(_covers(by_path.get(p, []), row["kind"], *span) for p, span in zip("ab", row["spans"])):
            caught[k] += 1
        else:
            missed.append(row)
    for row in data["innocent"]:
        kinds = {h.kind for h in scan_text(row["text"])}
        for k in kinds:
            fp["national_id" if k == "ssn" else k] += 1
        if kinds:
            false.append((row["text"], sorted(kinds)))
    kinds = {}
    for k in sorted(n):
        base = k.split()[-1]
        c = caught[k]
        kinds[k] = {"n": n[k], "caught": c, "fp": fp[base] if k == base else 0, "recall": c / n[k],
                    "precision": c / (c + fp[base]) if c + (fp[base] if k == base else 0) else 0.0}
        if k != base:
            kinds[k]["precision"] = 1.0 if c else 0.0
    return {"kinds": kinds, "missed": missed, "false": false, "n_innocent": len(data["innocent"])}


def by_country(data: dict, result: dict) -> dict:
    """``{kind: {country: [caught, n]}}`` of ``data``'s planted forms, from :func:`score`'s ``result``."""
    missed = {(r["kind"], r["country"], r["text"]) for r in result["missed"] if "text" in r}
    out: dict[str, dict[str, list[int]]] = {}
    for row in data["planted"]:
        c = out.setdefault(row["kind"], {}).setdefault(row["country"], [0, 0])
        c[1] += 1
        c[0] += (row["kind"], row["country"], row["text"]) not in missed
    return out
