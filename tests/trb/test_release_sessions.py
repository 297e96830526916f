"""Release.sessions builds, field by field and type by type, the contexts the straightforward reading builds.

The straightforward reading (below) is how the engine read sessions before it read
step columns as Arrow batches: one nested ``list(st ORDER BY st.t)`` per session,
each step a dict, each r decoded by ``decode_r``. Every context, past and step row
must come out the same (compared by ``repr``, so a float or a tuple cannot drift).
"""

from __future__ import annotations

import orjson
import pytest

from factories import session, write_jsonl
from schemas.release_format import decode_r
from trb import releases
from trb.context import PastStep, StepContext
from trb.releases import Release


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    from corpus import Corpus, ingest, init_corpus
    from corpus.release import cut_release
    from corpus.simulate import write_simulation

    tmp = tmp_path_factory.mktemp("rel-sessions")
    write_simulation(tmp / "sim.jsonl", n_sessions=60, seed=11, progress=False)
    # hand-made sessions for what the simulation never writes: extension slots, steps without r,
    # an open-ended step, a step without an outcome, actions that JSON must quote, a one-step session
    odd = session("odd-1", n_steps=5, subject="odd-subj-1")
    odd["schema_version"] = "1.1"  # a slot the user says (speaker, schema 1.1)
    odd["r_extensions"] = {"mood": {"type": "string", "description": "How the subject feels."},
                           "effort": {"type": "number", "description": "Effort, 0 to 1."},
                           "hint": {"type": "string", "speaker": "user", "description": "What the user suggests."},
                           "plan": {"type": "string", "speaker": "agent", "description": "The plan, said aloud."}}
    odd["steps"][0]["r"]["ext"] = {"mood": "calm", "effort": 0.25}
    del odd["steps"][1]["r"]
    odd["steps"][2]["r"] = {"goal": "D4", "caused_by_self": 1.0}
    odd["steps"][3]["action_space"] = None
    odd["steps"][3]["action"] = "I look around"
    del odd["steps"][4]["outcome"]
    odd["steps"][4]["action_space"] = ["go, then \"stop\"", "naïve \\ step", "[up]", "null"]
    odd["steps"][4]["action"] = "[up]"
    one = session("odd-2", n_steps=1, subject="odd-subj-2")
    c = Corpus(init_corpus(tmp / "corpus"))
    ingest(c, [tmp / "sim.jsonl", write_jsonl(tmp / "odd.jsonl", [odd, one])], progress=False)
    return cut_release(c, "0.1.0", kind="smoke", progress=False).directory


def _straightforward(rel: Release, split=None, session_ids=None):
    """(session_id, split, context_id, language, steps, past, contexts, contexts_after) per session, the plain way."""
    where, params = [], []
    if split is not None:
        where.append("s.split = ?")
        params.append(split)
    if session_ids is not None:
        where.append("s.session_id IN (SELECT unnest(?::VARCHAR[]))")
        params.append(list(session_ids))
    cond = ("WHERE " + " AND ".join(where)) if where else ""
    rows = rel.con.execute(f"""
        SELECT s.session_id, s.split, s.context_id, s.language, s.r_extensions, list(st ORDER BY st.t) AS steps
        FROM sessions s JOIN steps st USING (session_id) {cond}
        GROUP BY ALL ORDER BY s.session_id""", params).fetchall()

    def r(s):
        return decode_r(s, "r_") if s["has_r"] else None

    def space(s):
        return tuple(s["action_space"]) if s["action_space"] is not None else None

    out = []
    for sid, split_, ctx, lang, ext, steps in rows:
        users = frozenset(k for k, v in orjson.loads(ext or "{}").items() if v.get("speaker") == "user")
        past = tuple(PastStep(s["t"], s["observation"], r(s), s["action"], space(s), s["outcome"]) for s in steps)
        contexts = [StepContext(session_id=sid, t=t, history=past[:t], observation=s["observation"],
                                action_space=space(s), context_id=ctx, language=lang, split=split_,
                                user_slots=users)
                    for t, s in enumerate(steps)]
        after = []
        for t in range(len(steps)):
            nxt = steps[t + 1] if t + 1 < len(steps) else None
            after.append(StepContext(session_id=sid, t=t + 1, history=past[:t + 1],
                                     observation=nxt["observation"] if nxt else None,
                                     action_space=space(nxt) if nxt else None,
                                     context_id=ctx, language=lang, split=split_, user_slots=users))
        out.append((sid, split_, ctx, lang, steps, past, contexts, after, [r(s) for s in steps]))
    return out


def _built(sessions):
    out = []
    for s in sessions:
        n = len(s.steps)
        out.append((s.session_id, s.split, s.context_id, s.language, s.steps, s.past(n),
                    [s.context(t) for t in range(n)], [s.context_after(t) for t in range(n)],
                    [s.recorded_r(t) for t in range(n)]))
    return out


@pytest.mark.parametrize("batch_rows", [65_536, 7, 1])
def test_sessions_build_exactly_the_straightforward_contexts(release, monkeypatch, batch_rows):
    monkeypatch.setattr(releases, "_BATCH_ROWS", batch_rows)  # small batches cut sessions across batches
    rel = Release(release)
    try:
        for kw in ({}, {"split": "eval"}, {"split": "transfer"}):
            want, got = _straightforward(rel, **kw), _built(rel.sessions(**kw))
            assert [w[0] for w in want] == [g[0] for g in got] and want
            assert repr(got) == repr(want)
            assert got == want
        ids = ["odd-1", "odd-2", "no-such-session", _straightforward(rel)[3][0]]
        assert repr(_built(rel.sessions(session_ids=ids))) == repr(_straightforward(rel, session_ids=ids))
        assert list(rel.sessions(session_ids=[])) == []
    finally:
        rel.close()


def test_the_hand_made_session_reads_as_written(release):
    rel = Release(release)
    try:
        (odd,) = rel.sessions(session_ids=["odd-1"])
        c0, c1, c2, c3, c4 = (odd.context(t) for t in range(5))
        r0, r1, r2 = (odd.recorded_r(t) for t in range(3))
        assert r0["ext"] == {"mood": "calm", "effort": 0.25} and r1 is None
        assert r2 == {"goal": "D4", "planned_next": None, "caused_by_self": 1.0, "confidence": None, "ext": None}
        assert c4.history[2].r == r2  # an earlier step's self-report is part of c_t; the current one is not
        assert not hasattr(c2, "r")
        assert c3.action_space is None and c4.history[3].action == "I look around"
        assert odd.past(5)[4].outcome is None and odd.context_after(4).observation is None
        assert c4.action_space == ('go, then "stop"', "naïve \\ step", "[up]", "null")
        assert odd.steps[4]["action_space"] == list(c4.action_space)
        assert odd.context_after(1) is odd.context(2) and odd.context(2) is odd.context(2)
        # the slot declared "speaker": "user" is the user's in every context of the session, and only it
        assert c0.user_slots == c4.user_slots == odd.context_after(4).user_slots == frozenset({"hint"})
        (one,) = rel.sessions(session_ids=["odd-2"])
        assert one.context(0).user_slots == frozenset()
        with pytest.raises(IndexError):
            odd.context(5)
    finally:
        rel.close()


def test_with_sessions_groups_rows_by_session(release):
    rel = Release(release)
    try:
        sids = [s.session_id for s in rel.sessions(split="eval")][:3]
        rows = [{"session_id": sid, "k": i} for i, sid in enumerate(reversed(sids * 2))] + [{"session_id": "nope"}]
        got = [(s.session_id, [r["k"] for r in rs]) for s, rs in rel.with_sessions(rows)]
        assert got == [(sid, [i for i, r in enumerate(reversed(sids * 2)) if r == sid]) for sid in sids]
    finally:
        rel.close()


@pytest.mark.parametrize("batch_rows", [1, 7, 64])
def test_track1_work_list_read_in_batches_without_the_session_cache_is_the_same_work_list(release, monkeypatch,
                                                                                             batch_rows):
    # a large release reads its work list in batches of whole sessions and keeps no session for the next track
    # (the 1M-session scale run's driver grew to 6.4 GB holding them): the items must be the ones read at once
    from trb.tracks import track1

    def items():
        rel = Release(release)
        try:
            return [repr((i.item_id, i.session_id, i.t, i.split, i.context_id, i.context, i.r_prime, i.phi_type,
                          i.phi, i.origin, i.adversarial, i.ood, i.r_t, i.phi_n))
                    for split in ("train", "dev", "eval") for i in track1.track1_items(rel, split)]
        finally:
            rel.close()

    whole = items()
    assert len(whole) > 100 and len({w.split(",")[0] for w in whole}) == len(whole)
    monkeypatch.setattr(track1, "_ITEM_BATCH_ROWS", batch_rows)
    monkeypatch.setattr(releases, "SESSION_CACHE_MAX", 0)
    monkeypatch.setattr(releases, "_BATCH_ROWS", 5)
    assert items() == whole
