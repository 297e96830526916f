"""Corpora for the review app: the 7f3a example plus a small simulated world, built once, copied per test."""

from __future__ import annotations

import shutil

import pytest

from tests_paths import EXAMPLE_7F3A

SIM_SESSIONS = 60
SIM_SEED = 1


@pytest.fixture(scope="session")
def review_template(tmp_path_factory):
    from corpus.ingest import ingest
    from corpus.simulate import write_simulation
    from corpus.store import Corpus, init_corpus

    root = tmp_path_factory.mktemp("review-template")
    sim = root / "sim.jsonl"
    write_simulation(sim, n_sessions=SIM_SESSIONS, seed=SIM_SEED, progress=False)
    d = init_corpus(root / "corpus")
    ingest(Corpus(d), [EXAMPLE_7F3A, sim], progress=False)
    return d


@pytest.fixture
def review_corpus(review_template, tmp_path):
    """A private copy of the review corpus (tests write labels into it)."""
    d = tmp_path / "corpus"
    shutil.copytree(review_template, d, ignore=shutil.ignore_patterns("corpus.lock"))
    return d
