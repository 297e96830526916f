"""The annotator-noise ceiling beside G (issue 12 item 7), on simulated releases whose true Φ is known.

The simulated world can give each counterfactual the subject's exact policy p (no annotators)
or the choices of n simulated annotators drawn from p. The same seed gives the same sessions
and counterfactuals either way, so an "oracle" adapter that answers p (read from the exact
release) can be scored against Φ from 3 annotators: its G is the true ceiling,
mean E[1 − TV(p, p̂_3)], within its session CI; the ceiling the run reports is the plug-in one
(Φ as the truth), which over-states it: an upper bound that the oracle does not reach.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest

from toolkit.ceiling import oracle_g
from trb.releases import Release
from trb.stats import mean_by_session
from trb.tracks.track1 import score_track1, track1_items

SESSIONS, SEED = 600, 11


def _release(tmp: Path, annotators: int | None) -> Path:
    from corpus import Corpus, ingest, init_corpus
    from corpus.release import cut_release
    from corpus.simulate import write_simulation

    tmp.mkdir(parents=True, exist_ok=True)
    write_simulation(tmp / "sim.jsonl", n_sessions=SESSIONS, seed=SEED, annotators=annotators, progress=False)
    c = Corpus(init_corpus(tmp / "corpus"))
    ingest(c, [tmp / "sim.jsonl"], progress=False)
    return Path(cut_release(c, "0.1.0", kind="smoke", progress=False, min_annotators=3).directory)


def _key(item) -> tuple:
    return item.session_id, item.t, orjson.dumps(item.r_prime, option=orjson.OPT_SORT_KEYS)


def _items(release: Path) -> list:
    rel = Release(release)
    try:
        return [i for i in track1_items(rel, "eval") if i.phi_type == "distribution" and i.context.action_space]
    finally:
        rel.close()


class Oracle:
    """Answers the true distribution p of each (step, r′); uniform for anything else."""

    tier = "native"

    def __init__(self, truth: dict):
        self.truth = truth

    def spec(self):
        return {"kind": "oracle"}

    def emit_r(self, context):
        return {}

    def act(self, context, r_override=None):
        space = context.action_space
        if r_override is not None:
            key = (context.session_id, context.t, orjson.dumps(r_override, option=orjson.OPT_SORT_KEYS))
            if key in self.truth:
                p = self.truth[key]
                return {a: p.get(a, 0.0) for a in space}
        return {a: 1 / len(space) for a in space}


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("ceiling")
    return _release(root / "exact", None), _release(root / "three", 3)


def test_an_oracle_scores_at_the_true_ceiling_and_the_reported_one_bounds_it(releases):
    exact, three = releases
    truth = {_key(i): i.phi for i in _items(exact)}
    items = _items(three)
    assert len(items) > 200 and all(i.phi_n == 3 for i in items)
    assert all(_key(i) in truth for i in items)  # the same counterfactuals, only Φ differs
    rows, _ = score_track1(Oracle(truth), items)
    sessions = [r["session_id"] for r in rows]
    g = mean_by_session([r["score"] for r in rows], sessions, n_resamples=2000, seed=0)
    # the true ceiling, from the known p: the oracle's expected G
    true_ceiling = float(np.mean([oracle_g(truth[_key(i)], 3) for i in items]))
    assert g.ci_low <= true_ceiling <= g.ci_high, (g, true_ceiling)
    # what the run records (Φ as the truth) over-states the ceiling: the oracle stays below it
    plug_in = float(np.mean([r["g_ceiling"] for r in rows]))
    assert all(r["phi_n"] == 3 for r in rows)
    assert plug_in > g.ci_high and plug_in > true_ceiling
    # far from 1: with Φ from 3 annotators even the truth scores well below a perfect G
    assert g.value < 0.9


def test_exact_phi_has_no_ceiling_to_report(releases):
    exact, _ = releases
    items = _items(exact)
    assert items and all(i.phi_n is None for i in items)
    rows, _ = score_track1(Oracle({_key(i): i.phi for i in items}), items)
    assert all(r["g_ceiling"] is None for r in rows)
    assert all(r["score"] == pytest.approx(1.0) for r in rows)  # the truth against the exact Φ: G = 1
