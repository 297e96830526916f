"""Contexts of the simulated corpus: stimulus sets, populations, languages, transfer contexts.

A context is what Track 6 transfers across: a stimulus set (grid, walls, drift), a
subject population and the language of the self-report. In-distribution sessions
draw their stimulus set from :data:`IN_DISTRIBUTION_STIMULI`; their subjects come
from the in-distribution populations and languages. Each :class:`TransferSpec`
is a held-out context "collected" by a separate (simulated) lab, with its own
subjects, and at least one of a new stimulus set, a new population or a new
language.
"""

from __future__ import annotations

from dataclasses import dataclass

from simworld.world import Layout, StimulusSet

__all__ = [
    "STIMULUS_SETS",
    "IN_DISTRIBUTION_STIMULI",
    "IN_DISTRIBUTION_POPULATIONS",
    "IN_DISTRIBUTION_LANGUAGES",
    "TransferSpec",
    "TRANSFER_CONTEXTS",
    "context_id",
]

_UNIFORM = {"up": 0.25, "down": 0.25, "left": 0.25, "right": 0.25}

STIMULUS_SETS: dict[str, StimulusSet] = {
    s.name: s
    for s in (
        StimulusSet(
            "open-7x7-breeze", "7x7 open grid; the drift fires on 30% of steps, in any direction",
            Layout(7, 7), drift=0.3, wind=_UNIFORM, start_distance=(7, 10), budget=(9, 14),
        ),
        StimulusSet(
            "open-8x8-windy", "8x8 open grid; the drift fires on 40% of steps, mostly pushing right",
            Layout(8, 8), drift=0.4, wind={"up": 0.2, "down": 0.2, "left": 0.15, "right": 0.45},
            start_distance=(7, 11), budget=(9, 14),
        ),
        StimulusSet(
            "walls-8x8-breeze", "8x8 grid with two wall segments; the drift fires on 30% of steps",
            Layout(8, 8, walls=("D3", "D4", "D5", "D6", "F6", "G6")), drift=0.3, wind=_UNIFORM,
            start_distance=(7, 11), budget=(9, 14),
        ),
        # held out: used only by transfer contexts
        StimulusSet(
            "maze-9x9-gusty", "9x9 maze-like grid; the drift fires on 35% of steps, mostly pushing up",
            Layout(9, 9, walls=("C2", "C3", "C4", "C5", "E5", "E6", "E7", "E8", "G2", "G3", "G4", "H6")),
            drift=0.35, wind={"up": 0.4, "down": 0.2, "left": 0.2, "right": 0.2},
            start_distance=(7, 11), budget=(9, 14),
        ),
        StimulusSet(
            "walls-10x6-breeze", "10x6 grid with two wall segments; the drift fires on 30% of steps",
            Layout(10, 6, walls=("D2", "D3", "D4", "G3", "G4", "G5")), drift=0.3, wind=_UNIFORM,
            start_distance=(7, 11), budget=(9, 14),
        ),
    )
}

IN_DISTRIBUTION_STIMULI: tuple[str, ...] = ("open-7x7-breeze", "open-8x8-windy", "walls-8x8-breeze")
#: Population -> share of in-distribution subjects.
IN_DISTRIBUTION_POPULATIONS: dict[str, float] = {"careful": 0.4, "impulsive": 0.3, "overclaiming": 0.3}
IN_DISTRIBUTION_LANGUAGES: tuple[str, ...] = ("en", "de", "fr", "es")


def context_id(stimulus: str, population: str, language: str, prefix: str | None = None) -> str:
    """``stimulus.population.language``, after ``prefix.`` for a transfer context."""
    base = f"{stimulus}.{population}.{language}"
    return f"{prefix}.{base}" if prefix else base


@dataclass(frozen=True)
class TransferSpec:
    """A held-out context with third-party (simulated) provenance."""

    key: str
    stimulus: str
    population: str
    language: str
    collector_org: str
    attestation_ref: str
    #: Share of all sessions recorded in this context.
    share: float

    @property
    def context_id(self) -> str:
        return context_id(self.stimulus, self.population, self.language, prefix=self.key)

    @property
    def description(self) -> str:
        new = []
        if self.stimulus not in IN_DISTRIBUTION_STIMULI:
            new.append("new stimuli")
        if self.population not in IN_DISTRIBUTION_POPULATIONS:
            new.append("a new subject population")
        if self.language not in IN_DISTRIBUTION_LANGUAGES:
            new.append("a new language of self-report")
        what = ", ".join(new) if new else "new subjects only"
        return (
            f"Held-out simulated context ({what}): stimulus set {self.stimulus} "
            f"({STIMULUS_SETS[self.stimulus].description}), {self.population} subjects reporting in "
            f"{self.language}; recorded by {self.collector_org} with its own subjects."
        )


TRANSFER_CONTEXTS: tuple[TransferSpec, ...] = (
    TransferSpec(
        "xfer-lab-b", "maze-9x9-gusty", "careful", "it",
        "Simulated Field Lab B (simulated)", "simworld:attestation:field-lab-b:no-model-training", 0.05,
    ),
    TransferSpec(
        "xfer-lab-c", "open-8x8-windy", "novice", "de",
        "Simulated Field Lab C (simulated)", "simworld:attestation:field-lab-c:no-model-training", 0.05,
    ),
    TransferSpec(
        "xfer-lab-d", "walls-10x6-breeze", "overclaiming", "es",
        "Simulated Field Lab D (simulated)", "simworld:attestation:field-lab-d:no-model-training", 0.05,
    ),
)
