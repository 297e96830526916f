"""Recording the simulated subjects' episodes as a schema-v1 corpus.

The corpus plan
---------------
Sessions come in pairs: sessions ``2p`` and ``2p+1`` are the same subject in the
same context with the same start cell and two different goals, so the r_t of one
at step t is a natural "paired-session" counterfactual for the other (an odd last
session has no partner). Each pair is drawn from an RNG seeded by ``(seed, p)``
and each session from one seeded by ``(seed, i)``, so any session can be produced
alone, in any chunking, with flat memory.

About 15% of pairs belong to the transfer contexts
(:data:`simworld.contexts.TRANSFER_CONTEXTS`), each with its own pool of subjects;
the rest are in-distribution, drawn from a shared pool. Pools hold about
:data:`PAIRS_PER_SUBJECT` pairs per subject (sized from ``n_sessions``), so a
subject appears in several sessions and a split by subject is meaningful.

What a session yields
---------------------
* the ``session`` record: one step per episode step, the observation and outcome
  texts in the context's language, the action among :data:`simworld.ACTIONS`, and
  r_t when the subject reported it (it always has one: r_t drives the action, but
  a report is sometimes missing, as in real sessions). Recordings are 6 to 14
  steps long; an episode shorter than 6 steps is discarded and re-run, as a lab
  discards a trivially short trial.
* ``counterfactual`` records for steps with a recorded r_t: the subject's own
  revisions (``same_session_revision``, authored by the subject), the partner
  session's r_t at the same step (``paired_session``), and slot perturbations
  (``synthetic``, authored by :data:`GENERATOR_NAME`), never more than three
  synthetic ones per human one within a session. Φ(r') is the subject's policy
  with r' clamped in, exactly (``n`` null: no annotators, no annotator noise); with
  ``annotators=N`` it is instead the choices of N simulated annotators drawn from
  that policy (``n`` = N), seeded by ``(seed, cf_id)`` so it too is the same in any
  chunking, and the corpus shows Track 1's annotator noise.
* ``attribution`` records for steps (not the last) whose outcome brought the agent
  closer to its goal by exactly one cause: its own move with no drift (``self``) or
  the drift while its action did nothing (``wait`` or a blocked move;
  ``exogenous``). Every exogenous instance is kept; self-caused improvements are
  far more common and are kept at rate :data:`SELF_ITEM_RATE`, which leaves the
  two labels roughly balanced.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from schemas.models import SCHEMA_VERSION
from simworld.contexts import (
    IN_DISTRIBUTION_LANGUAGES,
    IN_DISTRIBUTION_POPULATIONS,
    IN_DISTRIBUTION_STIMULI,
    STIMULUS_SETS,
    TRANSFER_CONTEXTS,
    TransferSpec,
    context_id,
)
from simworld.counterfactuals import synthesize
from simworld.rollout import StepTrace, rollout
from simworld.subject import POPULATIONS, Subject
from simworld.world import ACTIONS, GridWorld, Pos, StimulusSet

__all__ = [
    "WORLD_VERSION",
    "GENERATOR_NAME",
    "GENERATOR_VERSION",
    "COLLECTOR",
    "LICENCE",
    "MIN_STEPS",
    "PAIRS_PER_SUBJECT",
    "PAIRED_RATE",
    "SYNTHETIC_RATE",
    "SYNTHETIC_CAP",
    "SELF_ITEM_RATE",
    "PairPlan",
    "CorpusPlan",
    "session_id",
    "transfer_context_records",
    "simulate",
]

#: Version of the world's dynamics and recording rules: a change here changes the corpus for a seed.
WORLD_VERSION = "1.0"
#: The generator named as author of synthetic counterfactuals.
GENERATOR_NAME = "simworld.synthetic"
GENERATOR_VERSION = "1.0.0"
#: source.collector of in-distribution sessions (transfer sessions name their lab).
COLLECTOR = "TRB simworld (simulated)"
#: source.licence of simulated sessions.
LICENCE = "CC0-1.0"

MIN_STEPS = 6
PAIRS_PER_SUBJECT = 3
#: Per step with a recorded r_t: probability of a paired-session r' (when the partner reported r at t).
PAIRED_RATE = 0.3
#: Per step with a recorded r_t: probability of a synthetic r'.
SYNTHETIC_RATE = 0.5
#: At most this many synthetic counterfactuals per human one, within every session.
SYNTHETIC_CAP = 3
#: Share of self-caused improvements kept as attribution items.
SELF_ITEM_RATE = 0.05

_MAX_ATTEMPTS = 20


def session_id(seed: int, i: int) -> str:
    return f"sim-{seed}-{i:07d}"


@dataclass(frozen=True)
class PairPlan:
    """What the two sessions of pair ``index`` share."""

    index: int
    subject: Subject
    stimulus: StimulusSet
    transfer: TransferSpec | None
    context: dict[str, str]
    start: Pos
    goals: tuple[Pos, Pos]


class CorpusPlan:
    """The deterministic plan of a simulated corpus of ``n_sessions`` sessions for ``seed``."""

    def __init__(self, n_sessions: int, seed: int) -> None:
        if isinstance(n_sessions, bool) or not isinstance(n_sessions, int) or n_sessions < 1:
            raise ValueError(f"n_sessions must be a positive int, got {n_sessions!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an int, got {seed!r}")
        self.n_sessions = n_sessions
        self.seed = seed
        self.n_pairs = (n_sessions + 1) // 2
        id_share = 1.0 - sum(t.share for t in TRANSFER_CONTEXTS)
        self.pool_sizes: dict[str | None, int] = {
            None: max(1, math.ceil(self.n_pairs * id_share / PAIRS_PER_SUBJECT)),
            **{t.key: max(1, math.ceil(self.n_pairs * t.share / PAIRS_PER_SUBJECT)) for t in TRANSFER_CONTEXTS},
        }
        self._pop_cdf = []
        acc = 0.0
        for name, share in IN_DISTRIBUTION_POPULATIONS.items():
            acc += share
            self._pop_cdf.append((acc, name))

    def session_id(self, i: int) -> str:
        return session_id(self.seed, i)

    def partner(self, i: int) -> int | None:
        """The paired session of session ``i``, or None (an odd last session)."""
        j = i ^ 1
        return j if j < self.n_sessions else None

    def subject(self, j: int, transfer: TransferSpec | None = None) -> Subject:
        """Subject ``j`` of the in-distribution pool, or of ``transfer``'s own pool."""
        if transfer is None:
            rng = random.Random(f"{self.seed}:subject:{j}")
            u = rng.random()
            pop = next((name for c, name in self._pop_cdf if u < c), self._pop_cdf[-1][1])
            lang = IN_DISTRIBUTION_LANGUAGES[rng.randrange(len(IN_DISTRIBUTION_LANGUAGES))]
            sid = f"sim-{self.seed}-subj-{j:06d}"
        else:
            rng = random.Random(f"{self.seed}:subject:{transfer.key}:{j}")
            pop, lang = transfer.population, transfer.language
            sid = f"sim-{self.seed}-{transfer.key}-subj-{j:06d}"
        return Subject.from_population(sid, POPULATIONS[pop], rng, language=lang)

    def pair(self, p: int) -> PairPlan:
        """The plan of pair ``p`` (sessions ``2p`` and ``2p+1``)."""
        if not 0 <= p < self.n_pairs:
            raise IndexError(f"pair {p} out of range 0..{self.n_pairs - 1}")
        rng = random.Random(f"{self.seed}:pair:{p}")
        u = rng.random()
        transfer = None
        acc = 0.0
        for t in TRANSFER_CONTEXTS:
            acc += t.share
            if u < acc:
                transfer = t
                break
        subject = self.subject(rng.randrange(self.pool_sizes[transfer.key if transfer else None]), transfer)
        if transfer is None:
            stim_name = IN_DISTRIBUTION_STIMULI[rng.randrange(len(IN_DISTRIBUTION_STIMULI))]
            ctx = context_id(stim_name, subject.population.name, subject.language)
        else:
            stim_name, ctx = transfer.stimulus, transfer.context_id
        stimulus = STIMULUS_SETS[stim_name]
        start, goals = stimulus.sample_task(rng, 2)
        context = {
            "context_id": ctx,
            "stimulus_set": stim_name,
            "subject_population": subject.population.name,
            "language": subject.language,
        }
        return PairPlan(p, subject, stimulus, transfer, context, start, goals)

    def session_pair(self, i: int) -> PairPlan:
        if not 0 <= i < self.n_sessions:
            raise IndexError(f"session {i} out of range 0..{self.n_sessions - 1}")
        return self.pair(i >> 1)


def transfer_context_records() -> list[dict[str, Any]]:
    """One ``transfer_context`` record per held-out context."""
    return [
        {
            "kind": "transfer_context",
            "schema_version": SCHEMA_VERSION,
            "context_id": t.context_id,
            "description": t.description,
            "collector_org": t.collector_org,
            "attestation_ref": t.attestation_ref,
        }
        for t in TRANSFER_CONTEXTS
    ]


@dataclass
class _Run:
    index: int
    sid: str
    rng: random.Random
    traces: list[StepTrace]
    #: The r_t as recorded (None where the subject did not report one).
    recorded: list[dict[str, Any] | None]


def _run_session(plan: CorpusPlan, pp: PairPlan, i: int) -> _Run:
    rng = random.Random(f"{plan.seed}:{i}")
    goal = pp.goals[i & 1]
    lang = pp.context["language"]
    world = GridWorld(pp.stimulus, rng=rng, language=lang)
    budget = pp.stimulus.sample_budget(rng)
    for _ in range(_MAX_ATTEMPTS):
        world.reset(pp.start, goal, budget)
        traces = rollout(pp.subject, world, rng)
        if len(traces) >= MIN_STEPS:
            break
    else:  # practically never: without drift an episode lasts at least the start distance (>= 6)
        world = GridWorld(pp.stimulus, rng=rng, language=lang, drift=0.0)
        world.reset(pp.start, goal, budget)
        traces = rollout(pp.subject, world, rng)
    rate = pp.subject.population.report_rate
    recorded = [tr.r_reported if rng.random() < rate else None for tr in traces]
    return _Run(i, plan.session_id(i), rng, traces, recorded)


def _source(pp: PairPlan) -> dict[str, Any]:
    return {
        "kind": "simulated",
        "collector": pp.transfer.collector_org if pp.transfer else COLLECTOR,
        "consent_ref": None,
        "licence": LICENCE,
    }


def _session_record(pp: PairPlan, run: _Run) -> dict[str, Any]:
    steps = []
    for t, (tr, r) in enumerate(zip(run.traces, run.recorded)):
        steps.append({
            "t": t,
            "observation": tr.observation,
            "r": dict(r) if r is not None else None,
            "action": tr.action,
            "action_space": list(ACTIONS),
            "outcome": tr.result.outcome,
        })
    return {
        "kind": "session",
        "schema_version": SCHEMA_VERSION,
        "session_id": run.sid,
        "source": _source(pp),
        "subject_id": pp.subject.subject_id,
        "context": dict(pp.context),
        "r_extensions": {},
        "steps": steps,
    }


_NO_FLAGS = (False, False)


def _phi(exact: dict[str, float], seed: int, cf_id: str, annotators: int | None) -> dict[str, Any]:
    """Φ(r'): the exact policy, or the share of ``annotators`` simulated annotators choosing each action."""
    if annotators is None:
        return {"type": "distribution", "probs": exact, "n": None}
    actions = [a for a, p in exact.items() if p > 0]
    votes = random.Random(f"{seed}:phi:{cf_id}").choices(actions, weights=[exact[a] for a in actions], k=annotators)
    probs = {a: votes.count(a) / annotators for a in actions if a in votes}
    return {"type": "distribution", "probs": probs, "n": annotators}


def _counterfactual_records(plan: CorpusPlan, pp: PairPlan, run: _Run, partner: _Run | None,
                            annotators: int | None = None) -> list[dict[str, Any]]:
    rng = run.rng
    subject = pp.subject
    rev_rate = subject.population.revision_rate
    human: list[tuple] = []
    synth: list[tuple] = []
    for t, (tr, r) in enumerate(zip(run.traces, run.recorded)):
        if r is None:
            continue
        if rng.random() < rev_rate:
            rev = subject.revise(tr.state, r, rng)
            if rev is not None and rev != r:
                human.append((t, 0, "same_session_revision", rev, None, _NO_FLAGS))
        if partner is not None and t < len(partner.recorded):
            pr = partner.recorded[t]
            if pr is not None and rng.random() < PAIRED_RATE and pr != r:
                human.append((t, 1, "paired_session", dict(pr), partner.sid, _NO_FLAGS))
        if rng.random() < SYNTHETIC_RATE:
            s = synthesize(tr.state, r, pp.stimulus, rng)
            synth.append((t, 2, "synthetic", s.r_prime, None, (s.adversarial, s.ood)))
    cap = SYNTHETIC_CAP * len(human)
    if len(synth) > cap:
        keep = sorted(rng.sample(range(len(synth)), cap))
        synth = [synth[k] for k in keep]
    cfs = sorted(human + synth, key=lambda c: (c[0], c[1]))
    out = []
    k = 0
    last_t = -1
    for t, _, origin, r_prime, paired, (adv, ood) in cfs:
        k = k + 1 if t == last_t else 0
        last_t = t
        cf_id = f"{run.sid}.t{t}.cf{k}"
        out.append({
            "kind": "counterfactual",
            "schema_version": SCHEMA_VERSION,
            "cf_id": cf_id,
            "session_id": run.sid,
            "t": t,
            "r_prime": r_prime,
            "origin": origin,
            "paired_session_id": paired,
            "flags": {"adversarial": adv, "ood": ood},
            "author": (
                {"person_id": None,
                 "generator": {"name": GENERATOR_NAME, "version": GENERATOR_VERSION, "seed": plan.seed}}
                if origin == "synthetic" else {"person_id": subject.subject_id, "generator": None}
            ),
            "phi": _phi(subject.action_distribution(run.traces[t].state, r_prime), plan.seed, cf_id, annotators),
        })
    return out


def _attribution_records(run: _Run) -> list[dict[str, Any]]:
    rng = run.rng
    out = []
    for t in range(len(run.traces) - 1):
        res = run.traces[t].result
        if res.distance_after >= res.distance_before:
            continue
        if res.moved_by_self and res.drift is None:
            if rng.random() >= SELF_ITEM_RATE:
                continue
            label = "self"
        elif not res.moved_by_self and res.drift is not None:
            label = "exogenous"
        else:
            continue
        out.append({
            "kind": "attribution",
            "schema_version": SCHEMA_VERSION,
            "item_id": f"{run.sid}.t{t}.attr",
            "session_id": run.sid,
            "t": t,
            "design_label": label,
            "endorsed": None,
            "note": None,
        })
    return out


def simulate(n_sessions: int, seed: int, *, start: int = 0, stop: int | None = None,
             annotators: int | None = None) -> Iterator[dict[str, Any]]:
    """Yield the schema-v1 records of sessions ``[start, stop)`` of the corpus ``(n_sessions, seed)``.

    ``annotators``: None (the default) gives each counterfactual the exact Φ(r') of the
    subject's policy; an int N >= 1 gives the empirical Φ of N simulated annotators
    drawn from it (see the module docstring). Everything else is the same either way.

    The ``transfer_context`` records come first when ``start == 0``; then, per
    session, its ``session`` record, its ``counterfactual`` records and its
    ``attribution`` records. Concatenating the output of consecutive ranges gives
    exactly the output of the whole range.
    """
    plan = CorpusPlan(n_sessions, seed)
    if annotators is not None and (isinstance(annotators, bool) or not isinstance(annotators, int) or annotators < 1):
        raise ValueError(f"annotators must be None or a positive int, got {annotators!r}")
    stop = n_sessions if stop is None else stop
    if not 0 <= start <= stop <= n_sessions:
        raise ValueError(f"need 0 <= start <= stop <= n_sessions, got start={start}, stop={stop}")
    if start == 0:
        yield from transfer_context_records()
    for p in range(start >> 1, (stop + 1) >> 1):
        pp = plan.pair(p)
        idx = [i for i in (2 * p, 2 * p + 1) if i < n_sessions]
        runs = {i: _run_session(plan, pp, i) for i in idx}
        for i in idx:
            if not start <= i < stop:
                continue
            run = runs[i]
            yield _session_record(pp, run)
            yield from _counterfactual_records(plan, pp, run, runs.get(i ^ 1), annotators)
            yield from _attribution_records(run)
