"""``trb plan``: sessions needed for a target CI half-width, on real results stores, checked against simulation."""

from __future__ import annotations

import json
import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from scipy import stats as sps
from statsmodels.stats.oneway import anova_oneway

from toolkit.errors import ExitCode
from trb.errors import UsageError
from trb.plan import (
    anova_icc,
    plan_clustered_mean,
    plan_collection,
    plan_paired_lift,
    plan_paired_ratio,
    render_plan,
    sessions_for_half_width,
)
from trb.results import ITEM_SCHEMA, ResultsError, ResultsStore
from trb.stats import paired_delta_by_session

Z95 = float(sps.norm.ppf(0.975))
SHA = "b" * 64


# -- writing pilot stores --------------------------------------------------------------------------

def run_row(baseline: str, **over) -> dict:
    row = {"release_sha": SHA, "release_version": "0.1.0", "release_kind": "trb", "smoke_test": False,
           "baseline": baseline, "adapter_tier": "native", "adapter_spec": {"kind": "native"}, "seed": 0,
           "tracks": ["1", "4", "5"], "split": "eval"}
    row.update(over)
    return row


def record(path, run: dict, rows: list[dict]) -> str:
    """``record_run``, with each row's ``condition`` stored as a store with Tracks 4 and 5 holds it.

    While the track registry declares no ``condition`` column, ``record_run`` refuses one: the rows
    are recorded without it and the column is added the way a store upgrade adds a track's column.
    """
    if "condition" in ITEM_SCHEMA.names:
        return ResultsStore(path).record_run(run, rows)
    conds = [r.get("condition") for r in rows]
    plain = [{k: v for k, v in r.items() if k != "condition"} for r in rows]
    run_id = ResultsStore(path).record_run(run, plain)
    if any(c is not None for c in conds):
        con = duckdb.connect(str(path))
        try:
            cols = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                              "WHERE table_name = 'item_scores'").fetchall()}
            if "condition" not in cols:
                con.execute("ALTER TABLE item_scores ADD COLUMN condition VARCHAR")
            con.register("cond", pa.table({"track": [r["track"] for r in rows], "metric": [r["metric"] for r in rows],
                                           "item_id": [r["item_id"] for r in rows], "condition": conds}))
            con.execute("UPDATE item_scores SET condition = cond.condition FROM cond WHERE item_scores.run_id = ? "
                        "AND item_scores.track = cond.track AND item_scores.metric = cond.metric "
                        "AND item_scores.item_id = cond.item_id", [run_id])
        finally:
            con.close()
    return run_id


def t1_rows(scores, sessions, prefix: str = "cf") -> list[dict]:
    return [{"track": "1", "metric": "tv", "item_id": f"{prefix}{i}", "session_id": str(s), "split": "eval",
             "score": float(v)} for i, (v, s) in enumerate(zip(scores, sessions))]


def paired_rows(track: str, metric: str, by_condition: dict[str, np.ndarray], task: str = "task") -> list[dict]:
    out = []
    for cond, scores in by_condition.items():
        out += [{"track": track, "metric": metric, "item_id": f"{task}/{k}/{cond}", "session_id": f"{task}/{k}",
                 "condition": cond, "split": "eval", "score": float(v)} for k, v in enumerate(scores)]
    return out


# -- the generating processes of the simulation checks ---------------------------------------------

def gen_track1(rng, k: int, mu=0.08, sd_b=0.06, sd_w=0.10):
    """k sessions of 3..9 items; per item full = ablation + d, d = mu + b_session + e_item (ICC 0.265)."""
    sizes = rng.integers(3, 10, size=k)
    sessions = np.repeat(np.arange(k), sizes)
    d = mu + rng.normal(0, sd_b, size=k)[sessions] + rng.normal(0, sd_w, size=sessions.size)
    ablation = np.clip(0.45 + rng.normal(0, 0.03, size=sessions.size), 0, 1)
    full = np.clip(ablation + d, 0, 1)
    return full, ablation, sessions


def gen_pairs(rng, k: int, cut_x: float, cut_y: float):
    """k paired Bernoulli sessions sharing a latent difficulty (positively correlated x and y)."""
    z = rng.normal(size=k)
    x = (z + 0.8 * rng.normal(size=k) < cut_x).astype(float)
    y = (z + 0.8 * rng.normal(size=k) < cut_y).astype(float)
    return x, y


def cluster_half_width(d: np.ndarray, sessions: np.ndarray) -> float:
    """z × the session-clustered SE of the item mean of d (the normal interval on session totals)."""
    k = int(sessions.max()) + 1
    m = np.bincount(sessions, minlength=k)
    tot = np.bincount(sessions, weights=d, minlength=k)
    mean = tot.sum() / m.sum()
    resid = tot - mean * m
    return Z95 * math.sqrt(k / (k - 1) * np.sum(resid ** 2)) / m.sum()


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    """A pilot store (read only): trace-full / trace-ablation with Tracks 1, 4, 5; cot-sft with Track 4 only;
    rows of other metrics."""
    rng = np.random.default_rng(11)
    path = tmp_path_factory.mktemp("pilot") / "results.duckdb"
    full, abl, sess = gen_track1(rng, 300)
    x4, y4 = gen_pairs(rng, 1500, 0.6, 0.2)
    x5, y5 = gen_pairs(rng, 1500, 0.5, 0.0)
    xp, _ = gen_pairs(rng, 1500, 0.3, 0.0)
    noise = [{"track": "5", "metric": "holonomy", "item_id": "loop1", "session_id": "task/0", "score": 9.0},
             {"track": "4", "metric": "calibration", "item_id": "task/0/full", "session_id": "task/0", "score": 9.0},
             {"track": "3", "metric": "ba", "item_id": "a1", "session_id": "s0", "score": 1.0, "label": "self"}]
    # an older trace-full run, superseded by the later one (the plan reads the latest, as the report does)
    record(path, run_row(FULL := "trace-full"), t1_rows(np.ones(10), np.arange(10) % 2))
    record(path, run_row("trace-ablation"), t1_rows(abl, sess) + noise)
    record(path, run_row(FULL), t1_rows(full, sess)
           + paired_rows("4", "completion", {"full": x4, "ablated": y4})
           + paired_rows("5", "reach", {"steered": x5, "ablated": y5, "steered-plan": xp}) + noise)
    record(path, run_row("cot-sft", tracks=["4"]), paired_rows("4", "completion", {"full": y4, "ablated": x4}))
    data = {"d": full - abl, "sessions": sess, "x4": x4, "y4": y4, "x5": x5, "y5": y5, "xp": xp}
    return path, data


def by_key(plan: dict) -> dict:
    return {(q["quantity"], q["baseline"]): q for q in plan["quantities"]}


# -- (a) hand-worked cases -------------------------------------------------------------------------

def test_hand_worked_delta_gov_variance_icc_deff_and_n(tmp_path):
    """3 sessions of 2 paired items, d = (.1,.3), (.2,.4), (.6,.8): MSB .14, MSW .02, σ_b² .06, ICC .75, DEFF 1.75."""
    d = np.array([0.1, 0.3, 0.2, 0.4, 0.6, 0.8])
    sessions = np.array(["s1", "s1", "s2", "s2", "s3", "s3"])
    path = tmp_path / "r.duckdb"
    record(path, run_row("trace-ablation"), t1_rows(np.full(6, 0.25), sessions))
    record(path, run_row("trace-full"), t1_rows(0.25 + d, sessions))
    plan = plan_collection(ResultsStore(path), half_width={"delta_gov": 0.05})
    q = by_key(plan)[("delta_gov", "trace-full − trace-ablation")]
    assert q["status"] == "planned"
    assert q["estimate"] == pytest.approx(0.4)
    assert (q["n_sessions"], q["n_items"], q["m"]) == (3, 6, 2.0)
    assert q["sd"] == pytest.approx(math.sqrt(0.08))
    assert q["sd_between"] == pytest.approx(math.sqrt(0.06)) and q["sd_within"] == pytest.approx(math.sqrt(0.02))
    assert q["icc"] == pytest.approx(0.75) and q["deff"] == pytest.approx(1.75)
    # closed form: n = (z σ / h)² · DEFF / m, rounded up
    n = Z95 ** 2 * 0.08 * 1.75 / 2 / 0.05 ** 2
    assert n == pytest.approx(107.56, abs=0.01)
    assert q["n_needed"] == math.ceil(n) == 108 and q["n_more"] == 105
    assert q["half_width_now"] == pytest.approx(Z95 * math.sqrt(0.08 * 1.75 / 6))
    # the ICC agrees with statsmodels' one-way ANOVA F: ICC = (F − 1) / (F − 1 + m)
    f = anova_oneway([d[:2], d[2:4], d[4:]], use_var="equal").statistic
    assert q["icc"] == pytest.approx((f - 1) / (f - 1 + 2))
    # no Track 4/5 pilot: listed, with the reason
    assert by_key(plan)[("viab", None)]["status"] == "no pilot data"


def test_anova_icc_unequal_sessions_and_one_item_sessions():
    a = anova_icc([1.0, 2.0, 3.0, 5.0, 5.0, 0.0], ["a", "a", "a", "b", "b", "c"])
    y = np.array([1.0, 2.0, 3.0, 5.0, 5.0, 0.0])
    msb = (3 * (2 - 16 / 6) ** 2 + 2 * (5 - 16 / 6) ** 2 + 1 * (0 - 16 / 6) ** 2) / 2
    msw = 2.0 / 3
    m0 = (6 - (9 + 4 + 1) / 6) / 2
    assert a["ms_between"] == pytest.approx(msb) and a["ms_within"] == pytest.approx(msw)
    assert a["icc"] == pytest.approx(((msb - msw) / m0) / ((msb - msw) / m0 + msw))
    assert a["m_weighted"] == pytest.approx(14 / 6) and a["m_mean"] == 2.0
    one = anova_icc(y, list("abcdef"))
    assert one["icc"] is None and one["var_total"] == pytest.approx(np.var(y, ddof=1))
    neg = anova_icc([0.0, 1.0, 0.0, 1.0], ["a", "a", "b", "b"])  # no between-session variance: truncated at 0
    assert neg["icc"] == 0.0 and neg["icc_truncated"]


def test_hand_worked_ratio_and_lift():
    x, y = np.array([1.0, 1, 1, 0]), np.array([1.0, 0, 1, 1])
    r = plan_paired_ratio(x, y, half_width=0.05)
    # R = .75/.75 = 1; u = (x − y)/.75 = (0, 4/3, 0, −4/3); SD(u)² = 32/27
    assert r["estimate"] == 1.0 and r["sd"] == pytest.approx(math.sqrt(32 / 27))
    assert r["n_needed"] == math.ceil(Z95 ** 2 * (32 / 27) / 0.05 ** 2) and r["deff"] == 1.0
    lift = plan_paired_lift(x, y, half_width=0.1)
    assert lift["estimate"] == 0.0 and lift["sd"] == pytest.approx(math.sqrt(2 / 3))
    assert lift["n_needed"] == math.ceil(Z95 ** 2 * (2 / 3) / 0.1 ** 2)
    assert sessions_for_half_width(0.001, 0.5) == 2  # never fewer than two sessions
    with pytest.raises(ValueError, match="undefined"):
        plan_paired_ratio([1.0, 0.0], [0.0, 0.0], half_width=0.05)


# -- (b) the plan against simulation ---------------------------------------------------------------

def test_delta_gov_plan_gives_the_target_half_width_in_simulation(pilot):
    path, data = pilot
    h = 0.01
    q = by_key(plan_collection(ResultsStore(path), half_width={"delta_gov": h}))[("delta_gov", "trace-full − trace-ablation")]
    assert q["icc"] == pytest.approx(0.265, abs=0.08) and q["deff"] > 2  # a real cluster effect
    n = q["n_needed"]
    rng = np.random.default_rng(2024)
    halves, boot = [], []
    for i in range(300):
        full, abl, sess = gen_track1(rng, n)
        halves.append(cluster_half_width(full - abl, sess))
        if i < 30:  # the project's own session bootstrap, with few resamples
            est = paired_delta_by_session(full, abl, sess, n_resamples=400, seed=i)
            boot.append((est.ci_high - est.ci_low) / 2)
    assert np.median(halves) == pytest.approx(h, rel=0.10)
    assert np.median(boot) == pytest.approx(h, rel=0.15)
    # the check can fail: ignoring the design effect would size the collection far too small
    naive = math.ceil(Z95 ** 2 * q["sd"] ** 2 / (q["m"] * h ** 2))
    assert naive < n / 2


def _simulate_pairs(n: int, cut_x: float, cut_y: float, statistic, seed: int, reps: int = 1000):
    rng = np.random.default_rng(seed)
    values, halves = [], []
    for _ in range(reps):
        x, y = gen_pairs(rng, n, cut_x, cut_y)
        v, se = statistic(x, y)
        values.append(v)
        halves.append(Z95 * se)
    return np.array(values), np.array(halves)


def _ratio(x, y):
    r = x.mean() / y.mean()
    return r, np.std((x - r * y) / y.mean(), ddof=1) / math.sqrt(x.size)


def _lift(x, y):
    return (x - y).mean(), np.std(x - y, ddof=1) / math.sqrt(x.size)


@pytest.mark.parametrize("quantity, cuts, statistic, h", [
    ("viab", (0.6, 0.2), _ratio, 0.05),
    ("nav", (0.5, 0.0), _lift, 0.03),
])
def test_track4_ratio_and_track5_lift_plans_give_the_target_half_width(pilot, quantity, cuts, statistic, h):
    path, _ = pilot
    q = by_key(plan_collection(ResultsStore(path), half_width={quantity: h}))[(quantity, "trace-full")]
    assert q["status"] == "planned" and q["m"] == 1.0 and q["deff"] == 1.0 and q["n_sessions"] == 1500
    values, halves = _simulate_pairs(q["n_needed"], *cuts, statistic, seed=7)
    assert np.median(halves) == pytest.approx(h, rel=0.10)  # the interval each collection would report
    assert Z95 * np.std(values, ddof=1) == pytest.approx(h, rel=0.12)  # the estimates' actual spread


# -- the store: what is read, what is ignored ------------------------------------------------------

def test_plan_reads_the_latest_runs_pairs_by_session_and_ignores_other_metrics(pilot):
    path, data = pilot
    plan = plan_collection(ResultsStore(path))
    got = by_key(plan)
    assert set(got) == {("delta_gov", "trace-full − trace-ablation"), ("viab", "trace-full"), ("nav", "trace-full"),
                        ("nav-plan", "trace-full"), ("viab", "cot-sft")}
    dg = got[("delta_gov", "trace-full − trace-ablation")]
    same = plan_clustered_mean(data["d"], data["sessions"], half_width=0.02)
    assert dg["n_needed"] == same["n_needed"] and dg["estimate"] == pytest.approx(same["estimate"])
    assert dg["n_sessions"] == 300  # the older 10-item trace-full run is superseded
    assert dg["m_weighted"] > dg["m"] and any("m* = Σm²/Σm" in n for n in dg["notes"])
    v = got[("viab", "trace-full")]
    assert v["estimate"] == pytest.approx(data["x4"].mean() / data["y4"].mean())
    assert v["n_needed"] == plan_paired_ratio(data["x4"], data["y4"], half_width=0.05)["n_needed"]
    assert got[("nav", "trace-full")]["estimate"] == pytest.approx(data["x5"].mean() - data["y5"].mean())
    assert got[("nav-plan", "trace-full")]["estimate"] == pytest.approx(data["xp"].mean() - data["y5"].mean())
    assert got[("viab", "cot-sft")]["estimate"] == pytest.approx(data["y4"].mean() / data["x4"].mean())
    # --baseline: Tracks 4/5 of that baseline only, and no Δgov for a baseline Δgov does not involve
    only = by_key(plan_collection(ResultsStore(path), baseline="cot-sft"))
    assert set(only) == {("viab", "cot-sft"), ("nav", "cot-sft")}
    assert only[("nav", "cot-sft")]["status"] == "no pilot data"
    assert "no Track 5 reach items" in only[("nav", "cot-sft")]["reason"]


def test_a_store_without_the_condition_column_plans_delta_gov_only(tmp_path):
    rng = np.random.default_rng(3)
    full, abl, sess = gen_track1(rng, 20)
    path = tmp_path / "old.duckdb"
    record(path, run_row("trace-ablation"), t1_rows(abl, sess))
    record(path, run_row("trace-full"), t1_rows(full, sess))
    import duckdb

    with duckdb.connect(str(path)) as con:  # a store written before Tracks 4 and 5 existed
        con.execute("ALTER TABLE item_scores DROP COLUMN condition")
    got = by_key(plan_collection(ResultsStore(path)))
    assert got[("delta_gov", "trace-full − trace-ablation")]["status"] == "planned"
    for q in ("viab", "nav"):
        assert got[(q, None)]["status"] == "no pilot data" and "no condition column" in got[(q, None)]["reason"]
    text = render_plan(plan_collection(ResultsStore(path)))
    assert "no condition column" in text


# -- (c) the command line --------------------------------------------------------------------------

def test_cli_prints_the_table_and_json(pilot, capsys):
    from trb.cli import main

    path, _ = pilot
    capsys.readouterr()
    assert main(["plan", "--results", str(path), "--half-width-nav", "0.03"]) == 0
    out = capsys.readouterr().out
    head = next(line for line in out.splitlines() if line.startswith("quantity"))
    for col in ("baseline", "estimate", "sessions", "SD", "ICC", "DEFF", "n needed", "more"):
        assert col in head
    plan = plan_collection(ResultsStore(path), half_width={"nav": 0.03})
    nav = by_key(plan)[("nav", "trace-full")]
    row = next(line for line in out.splitlines() if line.startswith("nav ") and "trace-full" in line)
    assert row.split()[-2:] == [f"{nav['n_needed']:,}", f"{nav['n_more']:,}"]
    assert any(line.startswith("delta_gov") for line in out.splitlines())

    assert main(["plan", "--results", str(path), "--json", "--baseline", "trace-full"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["split"] == "eval" and data["release_sha"] == SHA and data["baseline"] == "trace-full"
    got = {(q["quantity"], q["baseline"]): q for q in data["quantities"]}
    ref = by_key(plan_collection(ResultsStore(path), baseline="trace-full"))
    assert set(got) == set(ref)
    assert got[("delta_gov", "trace-full − trace-ablation")]["n_needed"] == ref[
        ("delta_gov", "trace-full − trace-ablation")]["n_needed"]


# -- (d) errors ------------------------------------------------------------------------------------

def test_a_store_without_any_pilot_is_a_results_error(tmp_path, capsys):
    from trb.cli import main

    path = tmp_path / "r.duckdb"
    record(path, run_row("cot-sft", tracks=["3"]), [{"track": "3", "metric": "ba", "item_id": "a", "session_id": "s",
                                                    "score": 1.0, "label": "self"}])
    with pytest.raises(ResultsError, match="no usable pilot"):
        plan_collection(ResultsStore(path))
    capsys.readouterr()
    assert main(["plan", "--results", str(path)]) == ExitCode.RESULTS
    err = capsys.readouterr().err
    assert "no usable pilot" in err and "Traceback" not in err
    # one session of Δgov and one-sided Track 4 rows: data, but nothing to plan from
    one = tmp_path / "one.duckdb"
    record(one, run_row("trace-ablation"), t1_rows([0.5, 0.5], ["s", "s"]))
    record(one, run_row("trace-full"), t1_rows([0.6, 0.7], ["s", "s"])
           + paired_rows("4", "completion", {"full": np.ones(5)}))
    with pytest.raises(ResultsError, match="1 session.*at least two.*viab: 0 paired session"):
        plan_collection(ResultsStore(one))
    # sessions that all score the same: no variance to size from
    flat = tmp_path / "flat.duckdb"
    record(flat, run_row("cot-sft"), paired_rows("4", "completion", {"full": np.ones(9), "ablated": np.ones(9)}))
    with pytest.raises(ResultsError, match="no variation between sessions"):
        plan_collection(ResultsStore(flat))


def test_missing_store_empty_store_bad_baseline_and_bad_half_width(tmp_path, capsys):
    from trb.cli import main

    missing = tmp_path / "nope.duckdb"
    capsys.readouterr()
    assert main(["plan", "--results", str(missing)]) == ExitCode.RESULTS
    assert "no results store at" in capsys.readouterr().err
    assert not missing.exists()  # planning never creates a store
    empty = tmp_path / "empty.duckdb"
    ResultsStore(empty)
    with pytest.raises(ResultsError, match="holds no runs"):
        plan_collection(ResultsStore(empty))
    path = tmp_path / "r.duckdb"
    record(path, run_row("trace-full"), t1_rows([0.5, 0.6], ["a", "b"]))
    with pytest.raises(ResultsError, match="no run of baseline nobody"):
        plan_collection(ResultsStore(path), baseline="nobody")
    with pytest.raises(ResultsError, match="no runs on split transfer"):
        plan_collection(ResultsStore(path), split="transfer")
    with pytest.raises(UsageError, match="half-width"):
        plan_collection(ResultsStore(path), half_width={"viab": 0})
    with pytest.raises(UsageError, match="unknown half-width"):
        plan_collection(ResultsStore(path), half_width={"g": 0.1})
    assert main(["plan", "--results", str(path), "--half-width-viab", "-1"]) == ExitCode.USAGE
