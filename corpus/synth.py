"""Synthetic counterfactuals for steps that have r_t, never past the 3:1 cap.

Each generated r' perturbs the recorded r_t (a slot changed), and is recorded
with origin ``synthetic``, its flags, and the generator (name, version, seed) as
author. Φ(r') is left empty: it comes from the continuation project in Label
Studio, and until then the release keeps these counterfactuals out of eval.

The cap is kept per session (synthetic ≤ 3 × human counterfactuals of the same
session), which keeps it in every split of any release, whatever the split of the
session. Ids are deterministic in (seed, session, step, k): re-running with the
same seed adds nothing new.
"""

from __future__ import annotations

import hashlib
import os
import random
from dataclasses import dataclass
from pathlib import Path

import orjson

from corpus.ingest import ingest
from corpus.store import Corpus
from schemas.release_format import HUMAN_ORIGINS, SYNTHETIC_CAP

__all__ = ["GENERATOR_NAME", "GENERATOR_VERSION", "SynthReport", "synthesize"]

GENERATOR_NAME = "trb-corpus.synth"
GENERATOR_VERSION = "1.0.0"


@dataclass
class SynthReport:
    capacity: int  # how many synthetic counterfactuals the cap leaves room for
    candidates: int  # how many the options asked for (before the cap)
    added: int

    def summary(self) -> str:
        return (f"synth: the 3:1 cap leaves room for {self.capacity} synthetic counterfactual(s); "
                f"{self.candidates} asked for; {self.added} added (origin synthetic, Φ pending)")


def _cf_id(session_id: str, t: int, seed: int, k: int) -> str:
    cid = f"{session_id}.t{t}.synth{seed}.{k}"
    if len(cid) <= 128:
        return cid
    return "synth-" + hashlib.sha256(f"{session_id}|{t}|{seed}|{k}".encode()).hexdigest()[:40]


def _perturb(rng: random.Random, variant: str, r: dict, action: str, space: list[str] | None,
             goals: list[str]) -> dict:
    rp = dict(r)
    if variant == "adversarial":
        # a confident plan that points away from what the subject did and said
        others = [a for a in (space or []) if a not in (r.get("planned_next"), action)]
        if others:
            rp["planned_next"] = rng.choice(others)
        rp["confidence"] = 0.95
        if rp.get("caused_by_self") is not None:
            rp["caused_by_self"] = round(1.0 - rp["caused_by_self"], 6)
        return rp
    if variant == "ood":
        # values never seen in the traces: an unknown goal, an extreme confidence
        rp["goal"] = f"OOD-{rng.randrange(16**6):06x}"
        rp["confidence"] = rng.choice([0.0, 1.0])
        return rp
    slots = []
    if space and len(space) > 1:
        slots.append("planned_next")
    if len(set(goals) - {r.get("goal")}) > 0:
        slots.append("goal")
    if r.get("confidence") is not None:
        slots.append("confidence")
    slot = rng.choice(slots) if slots else "confidence"
    if slot == "planned_next":
        rp["planned_next"] = rng.choice([a for a in space if a != r.get("planned_next")])
    elif slot == "goal":
        rp["goal"] = rng.choice(sorted(set(goals) - {r.get("goal")}))
    else:
        rp["confidence"] = round(1.0 - (r.get("confidence") or 0.5), 6)
    return rp


def synthesize(corpus: Corpus, *, seed: int, per_step: int = 1, adversarial: bool = False, ood: bool = False,
               progress: bool = True, wait_seconds: float | None = None) -> SynthReport:
    """Add up to ``per_step`` synthetic r' per step with r_t, within each session's cap."""
    variants = ["plain"] + (["adversarial"] if adversarial else []) + (["ood"] if ood else [])
    with corpus.open(write=False, wait_seconds=wait_seconds, purpose="trb-corpus synth") as con:
        budgets = dict(con.execute(f"""
            SELECT s.session_id,
                   greatest(0, {int(SYNTHETIC_CAP)} * count(c.cf_id) FILTER (WHERE c.origin IN {HUMAN_ORIGINS})
                               - count(c.cf_id) FILTER (WHERE c.origin = 'synthetic'))
            FROM store.sessions s LEFT JOIN store.counterfactuals c USING (session_id)
            GROUP BY 1""").fetchall())
        existing = {r[0] for r in con.execute("SELECT cf_id FROM store.counterfactuals WHERE origin = 'synthetic'").fetchall()}
        steps = con.execute("""
            SELECT session_id, t, r_goal, r_planned_next, r_caused_by_self, r_confidence, r_ext, action, action_space,
                   list(r_goal) FILTER (WHERE r_goal IS NOT NULL) OVER (PARTITION BY session_id) AS goals
            FROM store.steps WHERE has_r ORDER BY session_id, t""").fetchall()
    records, capacity, candidates = [], sum(budgets.values()), 0
    by_session: dict[str, list] = {}
    for row in steps:
        by_session.setdefault(row[0], []).append(row)
    for sid, rows in by_session.items():
        budget = budgets.get(sid, 0)
        for k in range(per_step):  # one round over the session's steps per k: the cap spreads over steps
            for _, t, goal, plan, cbs, conf, ext, action, space, goals in rows:
                candidates += 1
                cid = _cf_id(sid, t, seed, k)
                if cid in existing or budget <= 0:
                    continue
                rng = random.Random(f"{GENERATOR_NAME}:{seed}:{sid}:{t}:{k}")
                variant = variants[(t + k) % len(variants)]
                r = {"goal": goal, "planned_next": plan, "caused_by_self": cbs, "confidence": conf,
                     # not strict_json: the corpus store's own JSON column, written by the toolkit after ingest's strict read
                     "ext": orjson.loads(ext) if ext else None}
                rp = _perturb(rng, variant, r, action, space, goals or [])
                records.append({
                    "kind": "counterfactual", "cf_id": cid, "session_id": sid, "t": t, "r_prime": rp,
                    "origin": "synthetic", "flags": {"adversarial": variant == "adversarial", "ood": variant == "ood"},
                    "author": {"generator": {"name": GENERATOR_NAME, "version": GENERATOR_VERSION, "seed": seed}},
                    "phi": None,
                })
                budget -= 1
    if not records:
        return SynthReport(capacity, candidates, 0)
    tmp = corpus.dir / f".synth-{os.getpid()}.jsonl"
    try:
        tmp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
        report = ingest(corpus, [tmp], progress=progress, wait_seconds=wait_seconds)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return SynthReport(capacity, candidates, report.new["counterfactual"])
