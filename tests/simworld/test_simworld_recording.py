"""The recorded corpus: determinism, validity, Φ exactness, caps, labels, transfer discipline."""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter, defaultdict

import jsonschema
import pydantic
import pytest

import schemas
from schemas.models import Record
from schemas.rules import record_rule_errors
from simworld import STIMULUS_SETS, TRANSFER_CONTEXTS, CorpusPlan, simulate
from simworld_helpers import ACTIONS, SEED, N, bfs, cells_in, move


def _dump(records) -> list[str]:
    return [json.dumps(r, sort_keys=True) for r in records]


def _index(sid: str) -> int:
    return int(sid.rsplit("-", 1)[1])


def _by_session(corpus, kind):
    out = defaultdict(list)
    for r in corpus:
        if r["kind"] == kind:
            out[r["session_id"]].append(r)
    return out


# -- determinism and streaming -------------------------------------------------------


def test_same_seed_same_records_different_seed_different():
    a = _dump(simulate(n_sessions=40, seed=5))
    assert a == _dump(simulate(n_sessions=40, seed=5))
    b = _dump(simulate(n_sessions=40, seed=6))
    assert a != b
    sessions_a = [r for r in a if '"kind": "session"' in r]
    sessions_b = [r for r in b if '"kind": "session"' in r]
    assert len(set(sessions_a) & set(sessions_b)) == 0


@pytest.mark.parametrize("n", [37, 38])
def test_piecewise_generation_equals_one_go(n):
    whole = _dump(simulate(n, 9))
    for cuts in ([0, 10, 23, n], [0, 1, 2, 3, n - 1, n], [0, n]):
        pieces = []
        for lo, hi in zip(cuts, cuts[1:]):
            pieces += _dump(simulate(n, 9, start=lo, stop=hi))
        assert pieces == whole, cuts
    # a range in the middle starts at a session record, with no transfer_context records
    mid = list(simulate(n, 9, start=11, stop=12))
    assert mid[0]["kind"] == "session" and mid[0]["session_id"] == "sim-9-0000011"
    assert {r["session_id"] for r in mid} == {"sim-9-0000011"}


def test_an_odd_last_session_has_no_partner():
    recs = list(simulate(n_sessions=7, seed=4))
    paired = [r for r in recs if r["kind"] == "counterfactual" and r["origin"] == "paired_session"]
    assert paired and all(r["session_id"] != "sim-4-0000006" for r in paired)
    assert {r["paired_session_id"] for r in paired} <= {f"sim-4-{i:07d}" for i in range(6)}


def test_simulate_rejects_bad_arguments():
    for bad in (dict(n_sessions=0, seed=1), dict(n_sessions=5, seed="1"), dict(n_sessions=5, seed=1, start=3, stop=2),
                dict(n_sessions=5, seed=1, stop=6)):
        with pytest.raises(ValueError):
            list(simulate(**bad))


def test_one_session():
    recs = list(simulate(n_sessions=1, seed=0))
    kinds = Counter(r["kind"] for r in recs)
    assert kinds["transfer_context"] == len(TRANSFER_CONTEXTS) and kinds["session"] == 1
    assert not [r for r in recs if r["kind"] == "counterfactual" and r["origin"] == "paired_session"]
    _validate(recs)


# -- validity --------------------------------------------------------------------------


def _validate(records):
    adapter = pydantic.TypeAdapter(Record)
    validators = {k: jsonschema.Draft202012Validator(schemas.load_schema(k)) for k in schemas.RECORD_KINDS}
    for rec in records:
        model = adapter.validate_python(rec)
        assert record_rule_errors(model) == [], rec
        errors = list(validators[rec["kind"]].iter_errors(rec))
        assert not errors, (rec.get("session_id"), errors[0].message)


def test_every_record_is_valid(corpus):
    _validate(corpus)


def test_record_order_and_cross_record_consistency(corpus, sessions):
    kinds = [r["kind"] for r in corpus]
    n_tc = len(TRANSFER_CONTEXTS)
    assert kinds[:n_tc] == ["transfer_context"] * n_tc and "transfer_context" not in kinds[n_tc:]
    assert list(sessions) == [f"sim-{SEED}-{i:07d}" for i in range(N)]
    current = None
    seen_ids = set()
    for rec in corpus[n_tc:]:
        if rec["kind"] == "session":
            current = rec
            continue
        # every counterfactual and attribution follows its own session record
        assert rec["session_id"] == current["session_id"]
        step = current["steps"][rec["t"]]
        if rec["kind"] == "counterfactual":
            assert step["r"] is not None
            assert list(rec["phi"]["probs"]) == step["action_space"]
            assert rec["cf_id"].startswith(f"{rec['session_id']}.t{rec['t']}.cf")
            seen_ids.add(rec["cf_id"])
        else:
            assert step["outcome"] is not None
            assert rec["item_id"] == f"{rec['session_id']}.t{rec['t']}.attr"
            seen_ids.add(rec["item_id"])
    n_items = sum(1 for r in corpus if r["kind"] in ("counterfactual", "attribution"))
    assert len(seen_ids) == n_items  # ids are unique


def test_sessions_look_like_the_brief(corpus, sessions):
    lengths = [len(s["steps"]) for s in sessions.values()]
    assert min(lengths) >= 6 and max(lengths) <= 14
    assert 9.0 <= statistics.mean(lengths) <= 11.0
    for s in sessions.values():
        assert s["source"]["kind"] == "simulated"
        for st in s["steps"]:
            assert st["action_space"] == list(ACTIONS)
        assert s["steps"][0]["r"] is None or s["steps"][0]["r"]["caused_by_self"] is None
    # some r_t are not reported, most are
    reported = [st["r"] is not None for s in sessions.values() for st in s["steps"]]
    assert 0.75 < sum(reported) / len(reported) < 0.99
    assert {s["context"]["language"] for s in sessions.values()} >= {"en", "de", "fr", "es"}
    assert len({s["context"]["stimulus_set"] for s in sessions.values()}) >= 3
    assert {"careful", "impulsive", "overclaiming"} <= {s["context"]["subject_population"] for s in sessions.values()}
    # subjects are reused across sessions
    assert len({s["subject_id"] for s in sessions.values()}) < N / 3


# -- Φ exactness -------------------------------------------------------------------------


def _expected_phi(subject, stim, pos, r):
    """The documented policy, computed here from scratch."""
    eps = subject.epsilon
    p = dict.fromkeys(ACTIONS, eps / 5)
    plan = r.get("planned_next")
    wp = subject.w_plan if plan in ACTIONS else 0.0
    goal_name = r.get("goal")
    goal = (ord(goal_name[0]) - 65, int(goal_name[1:]) - 1)
    if subject.population.navigation == "path":
        dist = bfs(stim, goal)
        toward = [a for a in ACTIONS[:4] if dist[move(stim, pos, a)] < dist[pos]]
    else:
        manhattan = lambda q: abs(q[0] - goal[0]) + abs(q[1] - goal[1])  # noqa: E731
        toward = [a for a in ACTIONS[:4]
                  if manhattan((pos[0] + {"left": -1, "right": 1}.get(a, 0), pos[1] + {"up": 1, "down": -1}.get(a, 0)))
                  < manhattan(pos)]
    h = subject.w_hesitate * (1 - r["confidence"]) if r.get("confidence") is not None else 0.0
    total = wp + subject.w_goal + h
    if wp:
        p[plan] += (1 - eps) * wp / total
    for a in toward or ["wait"]:
        p[a] += (1 - eps) * subject.w_goal / total / len(toward or ["wait"])
    p["wait"] += (1 - eps) * h / total
    return p


def test_phi_is_the_subjects_policy_exactly(corpus, sessions):
    plan = CorpusPlan(N, SEED)
    cfs = [r for r in corpus if r["kind"] == "counterfactual"]
    assert len(cfs) > 5 * N
    for cf in cfs:
        probs = cf["phi"]["probs"]
        assert abs(math.fsum(probs.values()) - 1.0) < 1e-9
        assert cf["phi"]["n"] is None
        session = sessions[cf["session_id"]]
        subject = plan.session_pair(_index(cf["session_id"])).subject
        assert subject.subject_id == session["subject_id"]
        stim = STIMULUS_SETS[session["context"]["stimulus_set"]]
        pos = cells_in(session["steps"][cf["t"]]["observation"])[0]
        expected = _expected_phi(subject, stim, pos, cf["r_prime"])
        assert all(math.isclose(probs[a], expected[a], abs_tol=1e-12) for a in ACTIONS), cf["cf_id"]


def test_phi_from_simulated_annotators_is_their_vote_share_and_changes_nothing_else(corpus):
    voted = list(simulate(N, SEED, annotators=3))
    _validate(voted)
    exact = {r["cf_id"]: r for r in corpus if r["kind"] == "counterfactual"}
    cfs = [r for r in voted if r["kind"] == "counterfactual"]
    assert [r["cf_id"] for r in cfs] == list(exact)
    assert _dump(r for r in voted if r["kind"] != "counterfactual") == _dump(r for r in corpus
                                                                             if r["kind"] != "counterfactual")
    shares = Counter()
    for cf in cfs:
        assert cf["phi"]["n"] == 3 and {k: v for k, v in cf.items() if k != "phi"} == {
            k: v for k, v in exact[cf["cf_id"]].items() if k != "phi"}
        probs = cf["phi"]["probs"]
        assert all(round(p * 3) in (1, 2, 3) and math.isclose(p * 3, round(p * 3)) for p in probs.values())
        assert math.isclose(math.fsum(probs.values()), 1.0) and set(probs) <= {
            a for a, p in exact[cf["cf_id"]]["phi"]["probs"].items() if p > 0}
        shares[len(probs)] += 1
    assert shares[2] and shares[3]  # the votes do split, and the majority is not always unanimous
    # the same votes in any chunking
    assert _dump(simulate(N, SEED, start=5, stop=9, annotators=3)) == _dump(
        r for r in voted if r.get("session_id") in {f"sim-{SEED}-{i:07d}" for i in range(5, 9)})
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError):
            list(simulate(3, 1, annotators=bad))


def test_recorded_actions_follow_the_recorded_r(sessions):
    """Statistically: actions are drawn from the policy with the recorded r_t."""
    plan = CorpusPlan(N, SEED)
    expected = observed = var = 0.0
    for sid, s in sessions.items():
        subject = plan.session_pair(_index(sid)).subject
        stim = STIMULUS_SETS[s["context"]["stimulus_set"]]
        for st in s["steps"]:
            if st["r"] is None:
                continue
            p = _expected_phi(subject, stim, cells_in(st["observation"])[0], st["r"])[st["r"]["planned_next"]]
            expected += p
            var += p * (1 - p)
            observed += st["action"] == st["r"]["planned_next"]
    assert abs(observed - expected) < 4 * math.sqrt(var)


# -- counterfactual origins and the synthetic cap ---------------------------------------------


def test_synthetic_at_most_three_per_human_in_every_session(corpus):
    per = _by_session(corpus, "counterfactual")
    totals = Counter()
    for sid, cfs in per.items():
        c = Counter("synthetic" if cf["origin"] == "synthetic" else "human" for cf in cfs)
        assert c["synthetic"] <= 3 * c["human"], sid
        totals.update(c)
    assert totals["synthetic"] > 0.5 * totals["human"]  # the cap binds, but synthetic cfs are common


def test_counterfactual_origins_and_authors(corpus, sessions):
    cfs = [r for r in corpus if r["kind"] == "counterfactual"]
    origins = Counter(cf["origin"] for cf in cfs)
    assert set(origins) == {"same_session_revision", "paired_session", "synthetic"}
    for cf in cfs:
        s = sessions[cf["session_id"]]
        r_t = s["steps"][cf["t"]]["r"]
        assert cf["r_prime"] != r_t
        if cf["origin"] == "synthetic":
            assert cf["author"]["person_id"] is None
            assert cf["author"]["generator"] == {"name": "simworld.synthetic", "version": "1.0.0", "seed": SEED}
        else:
            assert cf["author"] == {"person_id": s["subject_id"], "generator": None}
            assert not cf["flags"]["adversarial"] and not cf["flags"]["ood"]
        if cf["origin"] == "paired_session":
            i = _index(cf["session_id"])
            assert cf["paired_session_id"] == f"sim-{SEED}-{i ^ 1:07d}"
            partner = sessions[cf["paired_session_id"]]
            assert partner["subject_id"] == s["subject_id"]
            assert cf["r_prime"] == partner["steps"][cf["t"]]["r"]
        else:
            assert cf["paired_session_id"] is None


def test_paired_sessions_share_subject_context_and_start_but_not_goal(sessions):
    for i in range(0, N - 1, 2):
        a, b = sessions[f"sim-{SEED}-{i:07d}"], sessions[f"sim-{SEED}-{i + 1:07d}"]
        assert a["subject_id"] == b["subject_id"] and a["context"] == b["context"]
        pos_a, goal_a = cells_in(a["steps"][0]["observation"])[:2]
        pos_b, goal_b = cells_in(b["steps"][0]["observation"])[:2]
        assert pos_a == pos_b and goal_a != goal_b


def test_adversarial_and_ood_flags_mean_what_they_say(corpus, sessions):
    goals_used = {(s["context"]["stimulus_set"], tuple(cells_in(s["steps"][0]["observation"])[1]))
                  for s in sessions.values()}
    n_adv = n_ood = 0
    for cf in (r for r in corpus if r["kind"] == "counterfactual"):
        s = sessions[cf["session_id"]]
        stim = STIMULUS_SETS[s["context"]["stimulus_set"]]
        pos = cells_in(s["steps"][cf["t"]]["observation"])[0]
        goal = cells_in(cf["r_prime"]["goal"])[0]
        if cf["flags"]["adversarial"]:
            n_adv += 1
            dist = bfs(stim, goal)
            assert dist[move(stim, pos, cf["r_prime"]["planned_next"])] > dist[pos]
        if cf["flags"]["ood"]:
            n_ood += 1
            lay = stim.layout
            assert goal[0] in (0, lay.width - 1) or goal[1] in (0, lay.height - 1)
            assert (s["context"]["stimulus_set"], goal) not in goals_used
    assert n_adv > 20 and n_ood > 20


# -- attribution items --------------------------------------------------------------------


def _replay(session):
    """(label candidate or None) for each step but the last, from positions and actions alone."""
    stim = STIMULUS_SETS[session["context"]["stimulus_set"]]
    steps = session["steps"]
    goal = cells_in(steps[0]["observation"])[1]
    dist = bfs(stim, goal)
    out = []
    for t, st in enumerate(steps[:-1]):
        here = cells_in(st["observation"])[0]
        there = cells_in(st["outcome"])[0]
        assert there == cells_in(steps[t + 1]["observation"])[0]
        own = move(stim, here, st["action"])
        if dist[there] >= dist[here]:
            out.append(None)
        elif own != here and there == own:
            out.append("self")  # the agent's move alone (a drift push would have moved it further)
        elif own == here and there != here:
            out.append("exogenous")  # the action did nothing; the drift moved it
        else:
            out.append(None)  # both moved it
    return out


def test_attribution_labels_replay_from_the_recorded_steps(corpus, sessions):
    items = _by_session(corpus, "attribution")
    labels = Counter()
    for sid, s in sessions.items():
        truth = _replay(s)
        mine = {a["t"]: a["design_label"] for a in items.get(sid, [])}
        for t, label in mine.items():
            assert truth[t] == label, (sid, t)
        # every exogenous instance is an item; self-caused ones are sampled
        assert {t for t, c in enumerate(truth) if c == "exogenous"} == {t for t, lab in mine.items() if lab == "exogenous"}
        labels.update(mine.values())
    assert labels["self"] >= 30 and labels["exogenous"] >= 30
    assert 0.3 < labels["self"] / (labels["self"] + labels["exogenous"]) < 0.7


def test_overclaimers_claim_exogenous_improvements(corpus, sessions):
    claims = defaultdict(list)
    for a in (r for r in corpus if r["kind"] == "attribution" and r["design_label"] == "exogenous"):
        s = sessions[a["session_id"]]
        nxt = s["steps"][a["t"] + 1]["r"]
        if nxt is not None:
            claims[s["context"]["subject_population"]].append(nxt["caused_by_self"])
    assert statistics.mean(claims["overclaiming"]) > 0.8
    assert statistics.mean(claims["careful"]) < 0.3


# -- transfer contexts ----------------------------------------------------------------------


def test_transfer_contexts_have_their_own_subjects(corpus, sessions):
    tcs = {r["context_id"]: r for r in corpus if r["kind"] == "transfer_context"}
    assert len(tcs) == len(TRANSFER_CONTEXTS) >= 3
    for tc in tcs.values():
        assert "(simulated)" in tc["collector_org"] and tc["attestation_ref"] and tc["description"]
    held_out = defaultdict(set)
    in_dist = set()
    for s in sessions.values():
        cid = s["context"]["context_id"]
        if cid in tcs:
            held_out[cid].add(s["subject_id"])
            assert s["source"]["collector"] == tcs[cid]["collector_org"]
        else:
            in_dist.add(s["subject_id"])
    assert set(held_out) == set(tcs)  # 300 sessions reach every transfer context
    pools = list(held_out.values()) + [in_dist]
    for k, a in enumerate(pools):
        for b in pools[k + 1:]:
            assert not a & b
    # transfer contexts differ from every in-distribution context in stimuli, population or language
    in_dist_parts = [set() for _ in range(3)]
    for s in sessions.values():
        if s["context"]["context_id"] not in tcs:
            for part, v in zip(in_dist_parts, (s["context"]["stimulus_set"], s["context"]["subject_population"],
                                               s["context"]["language"])):
                part.add(v)
    for s in sessions.values():
        if s["context"]["context_id"] in tcs:
            c = s["context"]
            assert (c["stimulus_set"] not in in_dist_parts[0] or c["subject_population"] not in in_dist_parts[1]
                    or c["language"] not in in_dist_parts[2])
