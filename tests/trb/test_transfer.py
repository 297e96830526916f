"""Track 6 (transfer): provenance at run time, per-context figures, min and drop with CIs, collapse and the
anti-Goodhart flag, on real releases, real runs and real results stores."""

from __future__ import annotations

import json
import math

import duckdb
import numpy as np
import pytest

from environments.tasksets import default_taskset
from trb.adapters.capabilities import RAblation
from trb.calibrate_transfer import InstructBaseAgent, MemoriserAgent, StructureAgent, run_transfer_calibration
from trb.provenance import TransferProvenanceError
from trb.report import build_report, render_html, render_json, render_markdown
from trb.results import ResultsStore
from trb.run import RunSpec, run_tracks
from trb.tracks.base import get_track, metric_by_key
from trb.transfer import HIGH_LEVEL, LARGE_DROP, anti_goodhart, collapse_check, transfer_estimate

# trains native reference models on a simulated release
pytestmark = pytest.mark.slow

B = 400


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    from engine_helpers import make_release

    return make_release(tmp_path_factory.mktemp("rel"))


@pytest.fixture(scope="module")
def known_contexts(release):
    from trb.releases import Release

    rel = Release(release)
    try:
        return {r["context_id"] for r in rel.rows("SELECT DISTINCT context_id FROM sessions WHERE split <> 'transfer'")}
    finally:
        rel.close()


@pytest.fixture(scope="module")
def store(release, known_contexts, tmp_path_factory):
    """instruct-base (never governed), trace-full (transfers) and cot-sft (memorises) on eval and transfer."""
    path = tmp_path_factory.mktemp("res") / "results.duckdb"
    for name, agent in (("instruct-base", InstructBaseAgent()), ("trace-full", StructureAgent()),
                        ("cot-sft", MemoriserAgent(known_contexts))):
        for split in ("eval", "transfer"):
            spec = RunSpec(release, baseline=name, tracks=("1", "3"), split=split, results=path, trained_by="Lab A")
            run_tracks(spec, agent, progress=False)
    return ResultsStore(path)


@pytest.fixture(scope="module")
def report(store):
    return build_report(store, n_resamples=B, seed=3)


def _collectors(release) -> list[str]:
    con = duckdb.connect()
    return [r[0] for r in con.execute(f"SELECT collector_org FROM read_parquet('{release}/data/transfer/*.parquet') "
                                      "ORDER BY context_id").fetchall()]


# -- provenance at run time -------------------------------------------------------------------------


def test_a_transfer_run_without_a_trainer_is_refused_and_writes_nothing(release, tmp_path):
    results = tmp_path / "r.duckdb"
    with pytest.raises(TransferProvenanceError, match="--trained-by"):
        run_tracks(RunSpec(release, baseline="x", tracks=("1",), split="transfer", results=results),
                   StructureAgent(), progress=False)
    assert not results.exists()


def test_a_transfer_run_refuses_contexts_its_trainer_collected(release, tmp_path):
    results = tmp_path / "r.duckdb"
    run_tracks(RunSpec(release, baseline="x", tracks=("1",), split="eval", results=results),
               StructureAgent(), progress=False)
    collector = _collectors(release)[0]
    # compared case-folded and trimmed, as the release gate compares them; from the flag or from the adapter spec
    for kwargs, agent in (({"trained_by": ["Other Org", f"  {collector.upper()} "]}, StructureAgent()),
                          ({}, type("Declared", (StructureAgent,), {"spec": lambda self: {"trained_by": collector}})())):
        with pytest.raises(TransferProvenanceError, match="collected 1 of the 3 transfer context"):
            run_tracks(RunSpec(release, baseline="x", tracks=("1",), split="transfer", results=results, **kwargs),
                       agent, progress=False)
    runs = duckdb.connect(str(results), read_only=True).execute("SELECT count(*), min(split) FROM runs").fetchone()
    assert runs == (1, "eval")  # the refused runs wrote no row


def test_the_trainer_is_recorded_and_rollout_tracks_roll_the_transfer_tasks(release, tmp_path):
    class Ablatable(StructureAgent):
        capabilities = (RAblation,)

        def spec(self):
            return {"kind": "scripted", "trained_by": "Spec Lab"}

        def act_ablated(self, context):
            return {a: 1 / len(context.action_space) for a in context.action_space}

        def act_ablated_batch(self, contexts):
            return [self.act_ablated(c) for c in contexts]

    results = tmp_path / "r.duckdb"
    run = run_tracks(RunSpec(release, baseline="x", tracks=("1", "4", "5"), split="transfer", results=results,
                             trained_by="Flag Lab"), Ablatable(), progress=False)
    # the built-in task set's transfer tasks, on the release's transfer contexts (test_transfer_rollouts.py)
    assert run["summary"]["4"]["episodes"] > 0 and run["summary"]["5"]["episodes"] > 0
    assert run["summary"]["1"]["scored"] > 0 and run["taskset_sha"] == default_taskset().sha
    con = duckdb.connect(str(results), read_only=True)
    trained_by, timings = con.execute("SELECT trained_by, timings FROM runs").fetchone()
    assert trained_by == ["Flag Lab", "Spec Lab"]
    check = json.loads(timings)["transfer_check"]
    assert check["checked"] and [c["collector_org"] for c in check["contexts"]] == _collectors(release)
    con.close()


# -- the statistic against an independent computation ----------------------------------------------------

EVAL = [("e1", 0.9), ("e1", 0.7), ("e2", 0.8), ("e3", 1.0), ("e3", 0.6), ("e3", 0.5)]
XFER = [("A", "a1", 0.2), ("A", "a2", 0.4), ("A", "a2", 0.3), ("B", "b1", 0.9), ("B", "b2", 0.5), ("B", "b3", 0.7),
        ("B", "b3", 0.1)]


def _cols(rows, with_ctx=False):
    if with_ctx:
        return {"context_id": np.array([r[0] for r in rows], dtype=object),
                "session_id": np.array([r[1] for r in rows], dtype=object),
                "score": np.array([r[2] for r in rows], dtype=float)}
    return {"session_id": np.array([r[0] for r in rows], dtype=object),
            "score": np.array([r[1] for r in rows], dtype=float)}


def _hand(n_resamples, seed):
    """The documented recipe, written out with plain loops over sessions."""
    def by_session(rows):
        out = {}
        for s, x in rows:
            out.setdefault(s, []).append(x)
        return [out[s] for s in sorted(out)]

    groups = [by_session(EVAL)] + [by_session([(s, x) for c, s, x in XFER if c == ctx]) for ctx in ("A", "B")]
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, len(g), size=(n_resamples, len(g))) for g in groups]
    reps = [[float(np.mean([x for j in row for x in g[j]])) for row in d] for g, d in zip(groups, draws)]
    mins = [min(a, b) for a, b in zip(reps[1], reps[2])]
    drops = [e - m for e, m in zip(reps[0], mins)]
    return reps, mins, drops


def test_min_and_drop_match_a_hand_computation():
    m = metric_by_key("1")
    est = transfer_estimate(get_track("1"), m, _cols(EVAL), _cols(XFER, True), n_resamples=B, seed=7)
    # point values by hand: eval 4.5 / 6, A 0.9 / 3, B 2.2 / 4
    assert est["eval"]["score"] == pytest.approx(4.5 / 6, abs=1e-12)
    assert [c["context_id"] for c in est["contexts"]] == ["A", "B"]
    assert [c["score"] for c in est["contexts"]] == pytest.approx([0.3, 0.55], abs=1e-12)
    assert [(c["n_items"], c["n_sessions"]) for c in est["contexts"]] == [(3, 2), (4, 3)]
    assert est["min"]["context_id"] == "A" and est["min"]["score"] == pytest.approx(0.3, abs=1e-12)
    assert est["drop"]["value"] == pytest.approx(4.5 / 6 - 0.3, abs=1e-12)
    reps, mins, drops = _hand(B, 7)
    for got, dist in ((est["eval"], reps[0]), (est["contexts"][0], reps[1]), (est["contexts"][1], reps[2]),
                      (est["min"], mins)):
        assert (got["ci_low"], got["ci_high"]) == pytest.approx(tuple(np.quantile(dist, [0.025, 0.975])), abs=1e-12)
    assert (est["drop"]["ci_low"], est["drop"]["ci_high"]) == pytest.approx(
        tuple(np.quantile(drops, [0.025, 0.975])), abs=1e-12)
    # the track's own aggregate on every replicate gives the same figures as the vectorised path
    generic = transfer_estimate(get_track("1"), m, _cols(EVAL), _cols(XFER, True), n_resamples=B, seed=7,
                                generic=True)
    assert generic["drop"] == pytest.approx(est["drop"]) and generic["min"] == pytest.approx(est["min"])
    # reproducible: the same seed gives the same figures, bit for bit
    assert transfer_estimate(get_track("1"), m, _cols(EVAL), _cols(XFER, True), n_resamples=B, seed=7) == est


def test_the_verdicts_read_per_context_bonferroni_intervals_from_the_same_replicates():
    m = metric_by_key("1")
    est = transfer_estimate(get_track("1"), m, _cols(EVAL), _cols(XFER, True), n_resamples=B, seed=7)
    fix = est["correction"]
    assert (fix["method"], fix["k"], fix["contexts"]) == ("Bonferroni", 2, ["A", "B"])
    assert fix["confidence"] == pytest.approx(1 - 0.05 / 2)
    reps, _, _ = _hand(B, 7)
    q = [0.05 / 4, 1 - 0.05 / 4]
    for c, dist in zip(est["contexts"], reps[1:]):
        assert (c["corrected"]["ci_low"], c["corrected"]["ci_high"]) == pytest.approx(tuple(np.quantile(dist, q)))
        drop = np.asarray(reps[0]) - np.asarray(dist)
        assert c["drop"]["value"] == pytest.approx(est["eval"]["score"] - c["score"])
        assert (c["drop"]["ci_low"], c["drop"]["ci_high"]) == pytest.approx(tuple(np.quantile(drop, q)))
        # wider than the plain interval
        assert c["corrected"]["ci_low"] <= c["ci_low"] and c["corrected"]["ci_high"] >= c["ci_high"]


def test_a_context_where_the_figure_is_undefined_is_named_and_kept_out_of_the_minimum_and_the_rules():
    m = metric_by_key("3")
    rng = np.random.default_rng(0)
    n = 48

    def cols(ctx=None):
        c = {"session_id": np.array([f"s{i // 4}" for i in range(n)], dtype=object),
             "label": np.array(rng.choice(["self", "exogenous"], n), dtype=object),
             "predicted": np.array(rng.choice(["self", "exogenous"], n), dtype=object),
             "score": np.zeros(n), "belief": np.full(n, np.nan)}
        if ctx is not None:
            c["context_id"] = np.array([ctx(i) for i in range(n)], dtype=object)
        return c

    xf = cols(lambda i: "c1" if i < 16 else "c2" if i < 32 else "c3")
    xf["label"][32:] = "self"  # c3: no exogenous item, its balanced accuracy is undefined
    ev = cols()
    est = transfer_estimate(get_track("3"), m, ev, xf, n_resamples=200, seed=1)
    assert [u["context_id"] for u in est["undefined_contexts"]] == ["c3"]
    assert "both self and exogenous" in est["undefined_contexts"][0]["reason"] and "c3" in est["undefined_note"]
    assert [c["context_id"] for c in est["contexts"]] == ["c1", "c2"] and est["n_contexts"] == 3
    assert est["correction"]["k"] == 2 and est["min"]["context_id"] in ("c1", "c2")
    # the same figures as without c3 (its draws come after theirs)
    without = {k: v[:32] for k, v in xf.items()}
    again = transfer_estimate(get_track("3"), m, ev, without, n_resamples=200, seed=1)
    assert again["contexts"] == est["contexts"] and again["min"] == est["min"] and again["drop"] == est["drop"]
    xf["label"][:] = "self"  # undefined everywhere: the figure is
    with pytest.raises(ValueError, match="every transfer context"):
        transfer_estimate(get_track("3"), m, ev, xf, n_resamples=200, seed=1)


def test_a_context_with_one_session_is_named_and_kept_out_of_the_minimum():
    m = metric_by_key("1")
    xfer = [*XFER, ("C", "c1", 0.0), ("C", "c1", 0.05)]  # C: the lowest figure, from one session, no interval
    est = transfer_estimate(get_track("1"), m, _cols(EVAL), _cols(xfer, True), n_resamples=B, seed=7)
    assert est["small_contexts"] == ["C"] and "kept out of the minimum: C" in est["small_note"]
    c = next(c for c in est["contexts"] if c["context_id"] == "C")
    assert c["score"] == pytest.approx(0.025) and c["ci_low"] is None
    # the minimum is A's (the lowest context with an interval), with the same interval as without C
    without = transfer_estimate(get_track("1"), m, _cols(EVAL), _cols(XFER, True), n_resamples=B, seed=7)
    assert est["min"]["context_id"] == "A" and est["min"]["score"] == pytest.approx(0.3)
    assert est["min"]["ci_low"] is not None and est["drop"]["ci_low"] is not None
    assert without["min"]["context_id"] == "A"
    alone = transfer_estimate(get_track("1"), m, _cols(EVAL), _cols([("C", "c1", 0.0)], True), n_resamples=B, seed=7)
    assert alone["min"]["context_id"] == "C" and alone["min"]["ci_low"] is None and "every context" in \
        alone["small_note"]


def test_balanced_accuracy_transfer_agrees_with_the_tracks_own_aggregate():
    rng = np.random.default_rng(0)
    n = 60
    cols = {"session_id": np.array([f"s{i // 4}" for i in range(n)], dtype=object),
            "label": np.array(rng.choice(["self", "exogenous"], n), dtype=object),
            "predicted": np.array(rng.choice(["self", "exogenous", "missing"], n), dtype=object),
            "score": np.zeros(n), "belief": np.full(n, np.nan)}
    xfer = {**{k: v.copy() for k, v in cols.items()},
            "context_id": np.array(["c1" if i < 32 else "c2" for i in range(n)], dtype=object)}
    m = metric_by_key("3")
    fast = transfer_estimate(get_track("3"), m, cols, xfer, n_resamples=200, seed=1)
    slow = transfer_estimate(get_track("3"), m, cols, xfer, n_resamples=200, seed=1, generic=True)
    assert fast["eval"]["score"] == pytest.approx(
        get_track("3").aggregate(m, cols, n_resamples=0, confidence=0.95, seed=0).value, abs=1e-12)
    for key in ("eval", "min", "drop"):
        assert fast[key] == pytest.approx(slow[key], abs=1e-12)


def _t2_cols(rng, split: str, sessions: list[str], gain: float, contexts=None) -> dict:
    """Track 2 rows: per step, each concept's zero null, and injected/random at every strength."""
    from trb.tracks.track2 import STRENGTHS

    rows = []
    for sid in sessions:
        for _ in range(3):
            for c in ("goal=A", "goal=B"):
                level = rng.random()
                rows.append((sid, split, c, "zero", 0.0, level))
                for st in STRENGTHS:
                    rows.append((sid, split, c, "injected", st, level + gain * st / 8 + rng.normal(scale=0.05)))
                    rows.append((sid, split, c, "random", st, level + rng.normal(scale=0.05)))
    cols = {k: np.array([r[i] for r in rows], dtype=object) for i, k in
            enumerate(("session_id", "split", "concept", "condition", "strength", "score"))}
    cols["score"], cols["strength"] = cols["score"].astype(float), cols["strength"].astype(float)
    cols["site_rank"] = np.zeros(len(rows), dtype=int)
    cols["cos_max"] = np.zeros(len(rows))  # the two concepts' directions are orthogonal: both separable
    cols["context_id"] = np.array([None if contexts is None else contexts[sessions.index(r[0])] for r in rows],
                                  dtype=object)
    return cols


def test_track2_transfer_keeps_the_dev_trials_out_of_the_contexts_and_chooses_the_strength_on_them():
    """A transfer run's Track 2 rows hold the dev trials the strength is chosen on (no transfer context): each
    context's figure is Track 2's own on that context's trials with the dev trials, and the eval figure likewise."""
    rng = np.random.default_rng(5)
    cat = lambda *cs: {k: np.concatenate([c[k] for c in cs]) for k in cs[0]}  # noqa: E731
    dev = _t2_cols(rng, "dev", [f"d{i}" for i in range(6)], 0.4)
    ev = cat(_t2_cols(rng, "eval", [f"e{i}" for i in range(8)], 0.5), dev)
    xs = [f"x{i}" for i in range(8)]
    xf = cat(_t2_cols(rng, "transfer", xs, 0.1, contexts=["c1"] * 4 + ["c2"] * 4), dev)
    track, m = get_track("2"), metric_by_key("ground")
    est = transfer_estimate(track, m, ev, xf, n_resamples=300, seed=2)
    agg = lambda cols: track.aggregate(m, cols, n_resamples=0, confidence=0.95, seed=0).value  # noqa: E731
    assert est["eval"]["score"] == pytest.approx(agg(ev), abs=1e-12)
    for c in est["contexts"]:
        own = cat({k: v[xf["context_id"] == c["context_id"]] for k, v in xf.items()}, dev)
        assert c["score"] == pytest.approx(agg(own), abs=1e-12)
        assert c["n_sessions"] == 4 and c["ci_low"] <= c["score"] <= c["ci_high"]
    assert [c["context_id"] for c in est["contexts"]] == ["c1", "c2"] and est["drop"]["value"] > 0
    assert est["eval"]["n_sessions"] == 8  # dev sessions choose the strength; they are not resampled


def test_collapse_and_anti_goodhart_rules_are_decided_by_intervals():
    g = metric_by_key("1")

    def fig(ev, ctx, drop_ci=(0.15, 0.3), ev_ci=(0.75, 0.85), title="G"):
        """A figure by hand: each context's corrected interval is the one given; the worst context's drop interval
        is ``drop_ci``, the others' shifted by how much higher the context is."""
        low = min(ctx, key=lambda c: c[1])
        shift = lambda x, s: None if x is None else x - (s - low[1])  # noqa: E731
        contexts = [{"context_id": c, "score": s, "ci_low": lo, "ci_high": hi,
                     **({"corrected": {"ci_low": lo, "ci_high": hi},
                         "drop": {"value": ev - s, "ci_low": shift(drop_ci[0], s), "ci_high": shift(drop_ci[1], s)}}
                        if lo is not None else {})} for c, s, lo, hi in ctx]
        return {"title": title, "eval": {"score": ev, "ci_low": ev_ci[0], "ci_high": ev_ci[1]}, "contexts": contexts,
                "n_contexts": len(contexts), "min": {"score": low[1], "context_id": low[0]},
                "drop": {"value": ev - low[1], "ci_low": drop_ci[0], "ci_high": drop_ci[1]}}

    ref = fig(0.3, [("A", 0.3, 0.2, 0.4), ("B", 0.25, 0.2, 0.3)], ev_ci=(0.25, 0.35))
    # established above instruct-base in distribution; on A the whole interval is at or below its 0.3: collapsed
    c = collapse_check(fig(0.8, [("A", 0.25, 0.2, 0.3), ("B", 0.6, 0.5, 0.7)]), ref, baseline="m")
    assert (c["collapsed"], c["verdict"], c["contexts"]) == (True, "collapsed", ["A"])
    # on A the interval reaches 0.3 (the point value below it): not established, never a collapse by the point
    c = collapse_check(fig(0.8, [("A", 0.29, 0.2, 0.6), ("B", 0.6, 0.5, 0.7)]), ref, baseline="m")
    assert (c["collapsed"], c["verdict"], c["contexts"]) == (None, "not established", ["A"])
    c = collapse_check(fig(0.8, [("A", 0.5, 0.31, 0.6), ("B", 0.6, 0.5, 0.7)]), ref, baseline="m")
    assert (c["collapsed"], c["verdict"]) == (False, "not collapsed")
    c = collapse_check(fig(0.8, [("A", 0.3, None, None), ("B", 0.6, 0.5, 0.7)]), ref, baseline="m")
    assert c["verdict"] == "not established"  # a context with no interval decides nothing
    never = collapse_check(fig(0.3, [("A", 0.1, 0.0, 0.2)], ev_ci=(0.2, 0.3)), ref, baseline="m")
    # at or below instruct-base in distribution already: nothing to collapse from, never read as "not collapsed"
    assert (never["verdict"], never["collapsed"]) == ("not applicable", None) and "pass bar is not met" in never["note"]
    unsure = collapse_check(fig(0.4, [("A", 0.1, 0.0, 0.2)], ev_ci=(0.29, 0.5)), ref, baseline="m")
    assert unsure["verdict"] == "not established" and "above instruct-base in distribution" in unsure["note"]
    other = collapse_check(fig(0.8, [("A", 0.1, 0.0, 0.2)], title="proxy-tier grounding"), ref, baseline="m")
    assert other["checked"] is False and "never compared" in other["note"]  # a figure of another tier
    assert collapse_check(ref, ref, baseline="instruct-base")["checked"] is False
    assert collapse_check(ref, None, baseline="m")["checked"] is False
    # anti-Goodhart: the eval interval's lower bound ≥ HIGH_LEVEL and the drop's ≥ LARGE_DROP
    hi = (HIGH_LEVEL, HIGH_LEVEL + 0.1)
    assert anti_goodhart(fig(0.75, [("A", 0.5, 0, 1)], ev_ci=hi, drop_ci=(LARGE_DROP, 0.4)), g)["verdict"] == "flagged"
    assert anti_goodhart(fig(0.75, [("A", 0.5, 0, 1)], ev_ci=(0.6, 0.69), drop_ci=(0.2, 0.4)), g)["verdict"] == \
        "not flagged"
    assert anti_goodhart(fig(0.95, [("A", 0.9, 0, 1)], ev_ci=(0.9, 1.0), drop_ci=(0.0, 0.09)), g)["verdict"] == \
        "not flagged"
    # the point values say "flag" (0.95 and a drop of 0.45) but the drop's interval reaches below 0.1
    ag = anti_goodhart(fig(0.95, [("A", 0.5, 0, 1)], ev_ci=(0.9, 1.0), drop_ci=(-0.01, 0.9)), g)
    assert ag["verdict"] == "not established" and not ag["flagged"]
    ag = anti_goodhart(fig(0.95, [("A", 0.5, 0, 1)], ev_ci=(0.9, 1.0), drop_ci=(None, None)), g)
    assert ag["verdict"] == "not established"  # no interval: the point value never decides
    # per context: flagged on the context whose own corrected drop is large, whatever the plain drop eval − min says
    f = fig(0.9, [("A", 0.7, 0.6, 0.8), ("B", 0.75, 0.7, 0.8)], ev_ci=(0.85, 0.95), drop_ci=(0.12, 0.3))
    f["drop"].update(ci_low=0.0, ci_high=0.3)
    ag = anti_goodhart(f, g)
    assert ag["verdict"] == "flagged" and ag["contexts"] == ["A"] and "Bonferroni over k = 2" in ag["reason"]
    # not flagged needs every context's corrected drop below 0.1
    f = fig(0.9, [("A", 0.85, 0.8, 0.9), ("B", 0.7, 0.6, 0.8)], ev_ci=(0.85, 0.95), drop_ci=(0.0, 0.2))
    assert anti_goodhart(f, g)["verdict"] == "not established"
    f = fig(0.9, [("A", 0.85, 0.8, 0.9), ("B", 0.88, 0.8, 0.9)], ev_ci=(0.85, 0.95), drop_ci=(-0.05, 0.09))
    assert anti_goodhart(f, g)["verdict"] == "not flagged"
    # the collapse rule reads the corrected interval, not the plain one
    f = fig(0.8, [("A", 0.25, 0.2, 0.3), ("B", 0.6, 0.5, 0.7)])
    f["contexts"][0]["corrected"] = {"ci_low": 0.15, "ci_high": 0.35}
    assert collapse_check(f, ref, baseline="m")["verdict"] == "not established"


# -- calibration ---------------------------------------------------------------------------------------


def test_calibration_separates_the_memoriser_from_the_structure_agent():
    cal = run_transfer_calibration(n_resamples=300)
    assert cal.passed, cal.reasons
    mem, struct = cal.figures["1"]["memoriser"], cal.figures["1"]["structure"]
    assert mem["eval"]["score"] == pytest.approx(1.0) and struct["eval"]["score"] == pytest.approx(1.0)
    assert [c["score"] for c in mem["contexts"]] == pytest.approx([0.2] * 3)  # 1 − TV = 1 − 0.8
    assert [c["score"] for c in struct["contexts"]] == pytest.approx([1.0] * 3)
    assert mem["drop"]["value"] == pytest.approx(0.8) and struct["drop"]["value"] == pytest.approx(0.0)
    assert mem["anti_goodhart"]["flagged"] and mem["collapse"]["collapsed"]
    assert not struct["anti_goodhart"]["flagged"] and not struct["collapse"]["collapsed"]
    # Track 3: the memoriser claims credit off-distribution (balanced accuracy 0.5, instruct-base's), the structure
    # agent attributes from what it did everywhere
    mem3, struct3, base3 = (cal.figures["3"][a] for a in ("memoriser", "structure", "instruct-base"))
    assert [c["score"] for c in mem3["contexts"]] == pytest.approx([0.5] * 3) and base3["eval"]["score"] == 0.5
    assert mem3["eval"]["ci_low"] >= 0.7 and mem3["drop"]["ci_low"] >= 0.1
    assert mem3["anti_goodhart"]["flagged"] and mem3["collapse"]["collapsed"]
    assert not struct3["anti_goodhart"]["flagged"] and struct3["collapse"]["collapsed"] is False
    # Tracks 2, 4 and 5: the memoriser's report reads z / acts through r on the contexts it memorised only
    g = cal.figures["2"]
    assert [c["score"] for c in g["memoriser"]["contexts"]] == pytest.approx([0.5] * 3)
    assert g["memoriser"]["anti_goodhart"]["flagged"] and g["memoriser"]["collapse"]["collapsed"]
    assert [c["score"] for c in g["structure"]["contexts"]] == pytest.approx([1.0] * 3)
    assert not g["structure"]["anti_goodhart"]["flagged"] and g["structure"]["collapse"]["collapsed"] is False
    for track, chance in (("4", 1.0), ("5", 0.0)):  # collapse read against the model's own ablation
        mem, struct = cal.figures[track]["memoriser"], cal.figures[track]["structure"]
        assert [c["score"] for c in mem["contexts"]] == pytest.approx([chance] * 3), track
        assert mem["collapse"]["collapsed"] and mem["collapse"]["against"]["value"] == chance
        assert struct["collapse"]["collapsed"] is False and all(c["ci_low"] > chance for c in struct["contexts"])
        assert {c["context_id"].split(".")[0] for c in mem["contexts"]} == {"xfer-lab-b", "xfer-lab-c", "xfer-lab-d"}
        assert not mem["anti_goodhart"]["applies"]  # a ratio and a lift: the 0–1 rule does not apply
    # the check can fail: a "structure" agent that in fact memorised is caught on both tracks
    bad = run_transfer_calibration(n_resamples=100, agents={"structure": MemoriserAgent()})
    assert not bad.passed and [r.split(":")[0] for r in bad.reasons if "structure agent is flagged" in r] == [
        "Track 1 (Track 1 — governance G)", "Track 3 (Track 3 — attribution BA)"]
    # ... and on Tracks 2, 4 and 5
    from trb.calibrate_transfer import _grounding_cast, rollout_memoriser

    bad = run_transfer_calibration(n_resamples=100, agents={"grounding-structure": _grounding_cast(0)["memoriser"],
                                                            "rollout-structure": rollout_memoriser()})
    assert sorted(r.split(" (")[0] for r in bad.reasons) == ["Track 2", "Track 2", "Track 4", "Track 5"], bad.reasons


# -- the report ----------------------------------------------------------------------------------------


def test_report_track6_figures_against_the_item_scores(report, store):
    by = {p["name"]: p for p in report["profile_vectors"]}
    assert list(by) == ["instruct-base", "cot-sft", "trace-full"]
    con = duckdb.connect(str(store.path), read_only=True)
    for p in by.values():
        assert list(p["vector"]) == ["G", "ground", "attr", "viab", "nav", "trans"]
        trans = p["vector"]["trans"]
        g = trans["figures"]["1"]
        ev_run, tr_run = trans["eval_run_id"], trans["transfer_run_id"]
        (ev,) = con.execute("SELECT avg(score) FROM item_scores WHERE run_id = ? AND track = '1'", [ev_run]).fetchone()
        per_ctx = dict(con.execute("SELECT context_id, avg(score) FROM item_scores WHERE run_id = ? AND track = '1' "
                                   "GROUP BY 1", [tr_run]).fetchall())
        assert g["eval"]["score"] == pytest.approx(ev, abs=1e-12)
        assert {c["context_id"]: c["score"] for c in g["contexts"]} == pytest.approx(per_ctx, abs=1e-12)
        assert g["n_contexts"] == len(per_ctx) == 3 and g["min"]["score"] == pytest.approx(min(per_ctx.values()))
        assert g["drop"]["value"] == pytest.approx(ev - min(per_ctx.values()), abs=1e-12)
        assert g["drop"]["ci_low"] <= g["drop"]["value"] <= g["drop"]["ci_high"]
        assert trans["trained_by"] == ["Lab A"]
        assert p["vector"]["ground"]["status"] == "not applicable"
        assert "needs activation access" in p["vector"]["ground"]["note"]
    # the memoriser (cot-sft) is flagged and collapses; the structure agent (trace-full) is neither
    assert by["cot-sft"]["vector"]["trans"]["anti_goodhart"] and by["cot-sft"]["vector"]["trans"]["collapsed"]
    assert not by["trace-full"]["vector"]["trans"]["anti_goodhart"]
    assert not by["trace-full"]["vector"]["trans"]["collapsed"]
    assert by["cot-sft"]["vector"]["trans"]["figures"]["1"]["drop"]["ci_low"] > LARGE_DROP
    assert [f.split(":")[0] for f in report["track6"]["anti_goodhart_flagged"]] == ["cot-sft"]


def test_every_format_shows_the_flag_the_rules_and_six_entries(report):
    md, page, js = render_markdown(report), render_html(report), json.loads(render_json(report))
    for text in (md, page):
        assert "Profile vector (G, ground, attr, viab, nav, trans)" in text
        assert "Track 6 — transfer and the anti-Goodhart line" in text
        plain = text.replace("&#x27;", "'")
        assert f"the eval level's 95% interval's lower bound ≥ {HIGH_LEVEL} and, on some transfer context, the drop " \
               "eval − that context's figure" in plain and f"whose lower bound is ≥ {LARGE_DROP}" in plain
        assert "Bonferroni correction over the k contexts" in plain and "1 − 0.05/k" in plain
        assert "by the paired difference from instruct-base on the same items" in text
        assert "What is resampled" in text and "Collapse rule" in text and "--trained-by" in text
    assert "⚠ **FLAGGED, not celebrated**: ANTI-GOODHART FLAG" in md
    flagged = [ln for ln in md.splitlines() if "FLAGGED, not celebrated" in ln]
    assert len(flagged) == 1 and "| cot-sft |" in flagged[0]
    assert '<span class="red">⚠ FLAGGED, not celebrated: ANTI-GOODHART FLAG' in page
    assert page.count('<span class="red">⚠ FLAGGED') == 1
    rows = [ln for ln in md.splitlines() if ln.startswith(("| G |", "| ground |", "| attr |", "| viab |", "| nav |",
                                                            "| trans |"))]
    assert len(rows) == 6 and all(ln.count(" | ") == 3 for ln in rows)  # entry + three baselines
    assert js["track6"]["rules"]["high_level"] == HIGH_LEVEL and js["track6"]["rules"]["large_drop"] == LARGE_DROP
    assert "1 − 0.05/k" in js["track6"]["rules"]["correction"] and js["track6"]["rules"]["alpha"] == 0.05
    assert all(set(p["vector"]) == {"G", "ground", "attr", "viab", "nav", "trans"} for p in js["profile_vectors"])


def test_a_baseline_without_a_transfer_run_says_so(release, tmp_path):
    results = tmp_path / "r.duckdb"
    run_tracks(RunSpec(release, baseline="trace-full", tracks=("1",), results=results),
               StructureAgent(), progress=False)
    rep = build_report(ResultsStore(results), n_resamples=0)
    (p,) = rep["profile_vectors"]
    assert p["vector"]["trans"] == {"status": "not run", "note": "not run: no transfer-split run", "figures": {},
                                    "flags": []}
    assert p["vector"]["attr"]["status"] == "not run" and p["vector"]["G"]["status"] == "ok"
    assert "not run: no transfer-split run" in render_markdown(rep)


def test_report_is_reproducible(store):
    a = build_report(store, n_resamples=100, seed=5)
    b = build_report(store, n_resamples=100, seed=5)
    assert a["profile_vectors"] == b["profile_vectors"]
    assert not math.isnan(a["profile_vectors"][0]["vector"]["trans"]["figures"]["1"]["drop"]["ci_low"])


def test_cli_refuses_a_transfer_run_without_trained_by_once_on_stderr(release, tmp_path, capsys):
    from engine_helpers import make_tiny_lm

    from toolkit.errors import ExitCode
    from trb.cli import main

    model = make_tiny_lm(release, tmp_path / "tiny-lm")
    results = tmp_path / "r.duckdb"
    code = main(["run", "--release", str(release), "--adapter", "proxy", "--model", str(model), "--baseline", "x",
                 "--tracks", "all", "--split", "transfer", "--results", str(results), "-q"])
    out, err = capsys.readouterr()
    assert code == ExitCode.USAGE and out == "" and not results.exists()
    assert err.count("pass --trained-by ORG") == 1 and "Traceback" not in err
    collector = _collectors(release)[1]
    code = main(["run", "--release", str(release), "--adapter", "proxy", "--model", str(model), "--baseline", "x",
                 "--tracks", "all", "--split", "transfer", "--trained-by", collector, "--results", str(results), "-q"])
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE and collector in err and not results.exists()
