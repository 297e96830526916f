"""Counterfactuals whose Φ is pending (issue 42, point 2): Track 1 scores their Φ-free figures (r-sensitivity and
the planned-action LLR) with session CIs, labelled "Φ pending" in every format, while G waits for Φ; every item
not scored is counted by reason in the run record and the report; and a run with nothing to score says why before
any model is loaded.

Real releases (ingested and cut by the corpus, read by DuckDB), a real results store, and a small adapter of the
test's own whose distributions are worked out by hand below.
"""

from __future__ import annotations

import json
import math

import duckdb
import pytest

from factories import counterfactual, session, write_jsonl

N_SESSIONS = 12


def _boost(session_id: str) -> float:
    """How much do(r) multiplies the weight of the action r plans: 3 in even sessions, 0.5 in odd ones."""
    return 3.0 if int(session_id.removeprefix("s")) % 2 == 0 else 0.5


class PlanFollower:
    """A proxy adapter: every action weighs 1, the action r plans weighs ``_boost(session)``; no r, uniform.

    So under do(r′) the action a′ = r′.planned_next has p = b / (4 + b) and under do(r_t) (r_t plans another action)
    p = 1 / (4 + b): the planned-action LLR is log b, and r-sensitivity is 1 exactly where b > 1."""

    tier = "proxy"
    capabilities = ()

    def spec(self) -> dict:
        return {"kind": "plan-follower"}

    def emit_r(self, context) -> dict:
        return {}

    def act(self, context, r_override=None) -> dict[str, float]:
        planned = (r_override or {}).get("planned_next")
        w = {a: (_boost(context.session_id) if a == planned else 1.0) for a in context.action_space}
        total = sum(w.values())
        return {a: v / total for a, v in w.items()}


def _pending(cf: dict) -> dict:
    return {**cf, "phi": None}


def _records(*, with_phi: int = 0) -> list[dict]:
    """12 one-subject sessions of 2 steps, each with counterfactuals at t = 0 whose Φ is pending:

    * r′ plans "up" (r_t plans "right"): Φ-free figures defined;
    * in sessions s00 and s01 also one whose r′ plans "right" (r_t's own action): not scorable, counted;
    * in session s02 one at step 1, an open-ended step (no action space): not scorable, counted;
    * in session s03 one whose r′ plans nothing (a goal only): not scorable, counted.

    The first ``with_phi`` sessions' "up" counterfactual has Φ (a mixed release)."""
    out = []
    for i in range(N_SESSIONS):
        sid = f"s{i:02d}"
        s = session(sid, n_steps=2, subject=f"subj-{i:02d}")
        if i == 2:
            del s["steps"][1]["action_space"]
        out.append(s)
        up = counterfactual(f"{sid}.up", sid, 0)
        out.append(up if i < with_phi else _pending(up))
        if i < 2:
            same = counterfactual(f"{sid}.same", sid, 0)
            same["r_prime"] = {"goal": "C3", "planned_next": "right"}
            out.append(_pending(same))
        if i == 2:
            out.append(_pending(counterfactual(f"{sid}.t1", sid, 1)))
        if i == 3:
            out.append(_pending({**counterfactual(f"{sid}.goal", sid, 0), "r_prime": {"goal": "A1"}}))
    return out


def _release(tmp, records: list[dict], fractions: dict[str, float]):
    from corpus import Corpus, ingest, init_corpus
    from corpus.release import cut_release

    c = Corpus(init_corpus(tmp / "corpus"))
    ingest(c, [write_jsonl(tmp / "records.jsonl", records)], progress=False)
    return cut_release(c, "0.1.0", kind="smoke", split_fractions=fractions, progress=False).directory


@pytest.fixture(scope="module")
def pending_release(tmp_path_factory):
    """Every session in train; every counterfactual's Φ pending."""
    return _release(tmp_path_factory.mktemp("pending"), _records(), {"train": 1.0})


@pytest.fixture(scope="module")
def mixed_release(tmp_path_factory):
    """Every session in train; the "up" counterfactual of s00–s04 has Φ, the rest are pending."""
    return _release(tmp_path_factory.mktemp("mixed"), _records(with_phi=5), {"train": 1.0})


@pytest.fixture(scope="module")
def held_out_release(tmp_path_factory):
    """Sessions in train and eval: the eval counterfactuals, all pending, are kept out of the release."""
    return _release(tmp_path_factory.mktemp("heldout"), _records(), {"train": 0.5, "eval": 0.5})


def _run(release, tmp_path, split="train"):
    from trb.run import RunSpec, run_tracks

    results = tmp_path / "results.duckdb"
    run = run_tracks(RunSpec(release, baseline="instruct-base", tracks="1", split=split, allow_train_split=True,
                             results=results), PlanFollower(), progress=False)
    return run, results


def _cf_rows(release, where: str = "") -> list[tuple]:
    return duckdb.connect().execute(
        f"SELECT cf_id, session_id, rp_planned_next, phi_type FROM read_parquet('{release}/data/counterfactuals/*.parquet')"
        f" {where} ORDER BY cf_id").fetchall()


def test_pending_items_get_phi_free_figures_and_every_other_item_is_counted(pending_release, tmp_path):
    run, results = _run(pending_release, tmp_path)
    cfs = _cf_rows(pending_release)
    assert len(cfs) == N_SESSIONS + 4 and all(phi is None for *_, phi in cfs)
    s1 = run["summary"]["1"]
    assert s1["phi_pending"] == len(cfs)
    assert s1["skipped"]["phi_pending_r_prime_plans_the_recorded_action"] == 2
    assert s1["skipped"]["phi_pending_open_ended_step"] == 1
    assert s1["skipped"]["phi_pending_r_prime_plans_no_action"] == 1
    assert s1["scored"] == N_SESSIONS and s1["scored"] + sum(s1["skipped"].values()) == len(cfs)  # none dropped
    stored = json.loads(duckdb.connect(str(results), read_only=True).execute(
        "SELECT timings FROM runs").fetchone()[0])
    assert stored["summary"]["1"] == s1  # the run record holds the counters

    rows = duckdb.connect(str(results), read_only=True).execute(
        "SELECT item_id, session_id, metric, score, r_sensitive, llr_planned, detail FROM item_scores "
        "ORDER BY item_id").fetchall()
    assert {r[2] for r in rows} == {"phi_free"} and [r[0] for r in rows] == [f"s{i:02d}.up" for i in range(12)]
    for _, sid, _, score, sens, llr, detail in rows:
        b = _boost(sid)  # worked by hand: p(up | do(r′)) = b / (4 + b), p(up | do(r_t)) = 1 / (4 + b)
        d = json.loads(detail)
        assert d["p_planned_do_r_prime"] == pytest.approx(b / (4 + b))
        assert d["p_planned_do_r_t"] == pytest.approx(1 / (4 + b))
        assert llr == pytest.approx(math.log(b)) and score == sens == (1.0 if b > 1 else 0.0)


def test_the_report_labels_the_phi_free_figures_and_g_waits(pending_release, tmp_path):
    from trb.report import build_report, render_html, render_markdown

    _, results = _run(pending_release, tmp_path)
    from trb.results import ResultsStore

    rep = build_report(ResultsStore(results, create=False), n_resamples=500)
    row = rep["baselines"][0]
    tracks = row["tracks"]
    sens, llr, g = tracks["1-sens-pending"], tracks["1-llr-pending"], tracks["1"]
    # a direct computation: 6 of the 12 sessions boost (b = 3), 6 dampen (b = 0.5); one scored item each
    assert sens["score"] == pytest.approx(6 / 12) and sens["n_items"] == 12 and sens["n_sessions"] == 12
    assert llr["score"] == pytest.approx((6 * math.log(3) + 6 * math.log(0.5)) / 12)
    for e in (sens, llr):
        assert e["label"] == "Φ pending" and e["ci_low"] is not None and e["ci_low"] < e["score"] < e["ci_high"]
    assert g["score"] is None and g["status"] == "no items"
    assert g["waiting"] == f"Φ pending on {N_SESSIONS + 4} item(s): G waits for their Φ"
    assert "1-sens" not in tracks  # r-sensitivity on items with Φ: there are none
    ns = row["not_scored"]["1"]
    assert ns["skipped"] == {"phi_pending_r_prime_plans_the_recorded_action": 2, "phi_pending_open_ended_step": 1,
                             "phi_pending_r_prime_plans_no_action": 1}
    md = render_markdown(rep)
    assert "Track 1 — r-sensitivity (Φ pending) [95% CI]" in md
    assert f"Φ pending: {sens['score']:.3f} [{sens['ci_low']:.3f}, {sens['ci_high']:.3f}]" in md
    assert "n/a (no item scored yet: Φ pending on 16 item(s): G waits for their Φ)" in md
    assert ("instruct-base (train), track 1: Φ pending on 16 item(s): G waits for their Φ; 1 not scored: Φ pending, "
            "on an open-ended step") in md
    assert "2 not scored: Φ pending, and r′ plans the action r_t plans" in md
    html = render_html(rep)
    assert "Track 1 — r-sensitivity (Φ pending)" in html and "2 not scored: Φ pending, and r′ plans" in html


def test_a_mixed_release_scores_g_on_items_with_phi_and_counts_the_rest(mixed_release, tmp_path):
    from trb.report import build_report, render_markdown
    from trb.results import ResultsStore

    run, results = _run(mixed_release, tmp_path)
    s1 = run["summary"]["1"]
    assert s1["phi_pending"] == N_SESSIONS + 4 - 5 and s1["scored"] == N_SESSIONS
    metrics = dict(duckdb.connect(str(results), read_only=True).execute(
        "SELECT metric, count(*) FROM item_scores GROUP BY 1").fetchall())
    assert metrics == {"tv": 5, "phi_free": N_SESSIONS - 5}
    rep = build_report(ResultsStore(results, create=False), n_resamples=200)
    tracks = rep["baselines"][0]["tracks"]
    # G by hand on s00–s04: Φ = {up: .75, right: .25}; act(do(r′)) puts b/(4+b) on up, 1/(4+b) elsewhere
    tv = []
    for i in range(5):
        b = _boost(f"s{i:02d}")
        p = {a: (b if a == "up" else 1.0) / (4 + b) for a in ("up", "down", "left", "right", "wait")}
        phi = {"up": 0.75, "right": 0.25}
        tv.append(0.5 * sum(abs(p[a] - phi.get(a, 0.0)) for a in p))
    assert tracks["1"]["score"] == pytest.approx(1 - sum(tv) / 5) and tracks["1"]["n_items"] == 5
    assert tracks["1"]["waiting"] == "Φ pending on 11 item(s): G waits for their Φ"
    assert tracks["1-sens-pending"]["n_items"] == N_SESSIONS - 5
    assert tracks["1-sens-pending"]["score"] == pytest.approx(3 / 7)  # s06, s08, s10 boost of s05–s11
    assert tracks["1-sens"]["n_items"] == 5 and tracks["1-sens"]["score"] == pytest.approx(3 / 5)
    md = render_markdown(rep)
    assert "· Φ pending on 11 item(s): G waits for their Φ" in md


def _cli_run(tmp_path, release, split, *extra):
    """`trb run` on a model path that does not exist: an error about the model means it was loaded first."""
    from trb.cli import main

    return main(["run", "--release", str(release), "--adapter", "native", "--model",
                 str(tmp_path / "no-such-model"), "--baseline", "trace-full", "--tracks", "1", "--split", split,
                 "--results", str(tmp_path / "results.duckdb"), "-q", *extra])


def test_nothing_to_score_says_phi_pending_before_the_model_loads(held_out_release, tmp_path, capsys):
    from toolkit.errors import ExitCode

    manifest = json.loads((held_out_release / "manifest.json").read_text())
    kept_out = manifest["excluded"]["counterfactuals_lacking_phi_kept_out_of_eval"]
    n_train = len(_cf_rows(held_out_release, "WHERE split = 'train'"))
    assert kept_out > 0 and n_train > 0
    assert _cli_run(tmp_path, held_out_release, "eval") == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "has nothing to score for track(s) 1" in err and "no-such-model" not in err
    assert f"Φ pending on {kept_out} counterfactual(s) of the held-out splits" in err
    assert f"splits with items: train (track 1: {n_train} (Φ pending on {n_train}))" in err
    assert not (tmp_path / "results.duckdb").exists()


def test_nothing_scorable_names_each_reason_before_the_model_loads(tmp_path, capsys):
    """Every counterfactual pending and none with a Φ-free figure (r′ plans r_t's action): refused, by reason."""
    from toolkit.errors import ExitCode

    records = [session("s00", n_steps=1, subject="subj-00"),
               _pending({**counterfactual("s00.same", "s00", 0), "r_prime": {"planned_next": "right"}})]
    release = _release(tmp_path, records, {"train": 1.0})
    assert _cli_run(tmp_path, release, "train", "--allow-train-split") == ExitCode.USAGE
    err = capsys.readouterr().err
    assert ("track 1: 1 item(s) (Φ pending on 1), none scorable: Φ pending, and r′ plans the action r_t plans: 1"
            in err) and "no-such-model" not in err


def test_no_counterfactuals_and_a_wrong_split_are_named(tmp_path, capsys):
    from toolkit.errors import ExitCode

    release = _release(tmp_path, [session("s00", n_steps=1, subject="subj-00")], {"train": 1.0})
    assert _cli_run(tmp_path, release, "train", "--allow-train-split") == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "track 1: the release has no counterfactuals" in err or "no counterfactuals in split 'train'" in err
    assert "no-such-model" not in err
    assert _cli_run(tmp_path, release, "dev") == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "has no split 'dev'" in err and "splits with items: none" in err and "no-such-model" not in err
