"""Fixtures of the simworld tests: one simulated corpus, generated once."""

from __future__ import annotations

import pytest

from simworld_helpers import SEED, N


@pytest.fixture(scope="session")
def corpus():
    from simworld import simulate

    return list(simulate(n_sessions=N, seed=SEED))


@pytest.fixture(scope="session")
def sessions(corpus):
    return {r["session_id"]: r for r in corpus if r["kind"] == "session"}
