"""Track 6's rules under a null and an alternative (bench/transfer_rules.py; rates in bench/README.md): 2,000
simulated runs a scenario, vectorised; each group percentile-bootstrapped as trb.transfer does, and the verdicts
read per context with the Bonferroni correction over the k = 3 contexts (level 1 − 0.05/3)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from transfer_rules import SCENARIOS, rates  # noqa: E402

pytestmark = pytest.mark.slow

RUNS = 2000
#: the nominal rate (5%) plus three binomial standard errors of a 5% rate over RUNS runs
CEILING = 0.05 + 3 * (0.05 * 0.95 / RUNS) ** 0.5


@pytest.mark.parametrize("name", [n for n in SCENARIOS if " null " in n])
def test_a_verdict_errs_at_most_at_the_nominal_rate_whichever_contexts_are_at_the_boundary(name):
    """One, two or every context at the boundary: the per-context Bonferroni reading bounds the union."""
    assert rates(*SCENARIOS[name], runs=RUNS, seed=1) <= CEILING


@pytest.mark.parametrize("name", ["anti-Goodhart null (all contexts at the boundary)",
                                  "collapse null (all contexts at the reference)"])
def test_without_the_correction_every_context_at_the_boundary_errs_above_the_nominal_rate(name):
    """Why the correction is there: the rules as they were (the drop eval − min, each context at 95%) exceed it."""
    assert rates(*SCENARIOS[name], runs=RUNS, seed=1, corrected=False) > CEILING


@pytest.mark.parametrize("name", ["anti-Goodhart alternative (drop 0.3)", "collapse alternative (one context at 0.35)"])
def test_the_rules_have_power_against_a_stated_alternative(name):
    assert rates(*SCENARIOS[name], runs=RUNS, seed=1) >= 0.9
