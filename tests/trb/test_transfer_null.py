"""Track 6's rules under a null and an alternative (bench/transfer_rules.py; rates in bench/README.md): 2,000
simulated runs a scenario, vectorised; each group percentile-bootstrapped as trb.transfer does."""

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


@pytest.mark.parametrize("name", ["anti-Goodhart null (one context at the boundary)",
                                  "collapse null (one context at the reference)"])
def test_a_verdict_errs_at_most_at_the_nominal_rate_at_the_boundary(name):
    assert rates(*SCENARIOS[name], runs=RUNS, seed=1) <= CEILING


@pytest.mark.parametrize("name", ["anti-Goodhart alternative (drop 0.3)", "collapse alternative (one context at 0.35)"])
def test_the_rules_have_power_against_a_stated_alternative(name):
    assert rates(*SCENARIOS[name], runs=RUNS, seed=1) >= 0.9


@pytest.mark.xfail(strict=True, reason="known (bench/README.md, Track 6): with every context at the boundary the "
                                       "rules read the minimum / any context without a multiplicity correction: "
                                       "the anti-Goodhart flag errs ~17%, the collapse verdict ~9% (3 contexts)")
@pytest.mark.parametrize("name", ["anti-Goodhart null (all contexts at the boundary)",
                                  "collapse null (all contexts at the reference)"])
def test_with_every_context_at_the_boundary_the_rules_err_above_the_nominal_rate(name):
    assert rates(*SCENARIOS[name], runs=RUNS, seed=1) <= CEILING
