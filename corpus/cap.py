"""The 3:1 synthetic:human cap as figures a curator can act on, before a release refuses.

The release gate (:func:`corpus.gates.synthetic_cap_gate`) is the rule; this module
states, from counts alone, whether a set of counterfactuals is within it and what it
would take to be: ingest and the importers use it to warn or refuse early, with the
same figures ``trb-corpus stats`` shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from schemas.release_format import HUMAN_ORIGINS, SYNTHETIC_CAP, SYNTHETIC_ORIGIN

__all__ = ["CapFigures", "store_cap_figures", "SYNTHETIC_CAP"]


@dataclass(frozen=True)
class CapFigures:
    """Synthetic and human-origin counterfactual counts against the cap (synthetic <= 3 x human)."""

    synthetic: int
    human: int

    @property
    def within(self) -> bool:
        return self.synthetic <= SYNTHETIC_CAP * self.human

    @property
    def ratio(self) -> float | None:
        """synthetic / human; None when there are no human-origin counterfactuals."""
        return self.synthetic / self.human if self.human else None

    @property
    def room(self) -> int:
        """How many more synthetic counterfactuals the cap allows (0 when over it)."""
        return max(0, math.floor(SYNTHETIC_CAP * self.human) - self.synthetic)

    @property
    def human_needed(self) -> int:
        """How many more human-origin counterfactuals would bring these synthetic ones within the cap."""
        return max(0, math.ceil(self.synthetic / SYNTHETIC_CAP) - self.human)

    def plus(self, synthetic: int = 0, human: int = 0) -> CapFigures:
        return CapFigures(self.synthetic + synthetic, self.human + human)

    def describe(self) -> str:
        """The figures in one sentence: counts, ratio, the limit, what is missing."""
        ratio = "no human-origin ones" if self.ratio is None else f"ratio {self.ratio:.2f}:1"
        head = (f"{self.synthetic:,} synthetic vs {self.human:,} human-origin counterfactual(s) "
                f"({', '.join(HUMAN_ORIGINS)}); {ratio}; the limit is {SYNTHETIC_CAP:g}:1")
        if self.within:
            return f"{head}: within it (room for {self.room:,} more synthetic)"
        return (f"{head}: over it; {self.human_needed:,} more human-origin counterfactual(s) are needed "
                f"(or {self.synthetic - math.floor(SYNTHETIC_CAP * self.human):,} fewer synthetic ones)")


def store_cap_figures(con, schema: str = "store", extra: str | None = None) -> CapFigures:
    """The cap figures of the counterfactuals in ``schema`` (an attached store), plus those of the table
    ``extra`` (same columns, e.g. an ingest's staged ``main.counterfactuals``) whose ids the store lacks."""
    union = f"SELECT cf_id, origin FROM {schema}.counterfactuals"
    if extra:
        union += (f" UNION ALL SELECT cf_id, origin FROM {extra} "
                  f"WHERE cf_id NOT IN (SELECT cf_id FROM {schema}.counterfactuals)")
    ((syn, hum),) = con.execute(
        f"SELECT count(*) FILTER (WHERE origin = '{SYNTHETIC_ORIGIN}'), "
        f"count(*) FILTER (WHERE origin IN {HUMAN_ORIGINS}) FROM ({union})").fetchall()
    return CapFigures(int(syn), int(hum))
