"""A small study file and an empty corpus per test."""

from __future__ import annotations

import pytest

from collect_helpers import write_study


@pytest.fixture
def study_path(tmp_path):
    return write_study(tmp_path)


@pytest.fixture
def study(study_path):
    from collect.study import load_study

    return load_study(study_path)


@pytest.fixture
def corpus(corpus_dir):
    from corpus.store import Corpus

    return Corpus(corpus_dir)
