"""Track 6 calibration: the engine must tell a model that memorised the eval from one that captured structure.

An exact world (the cue world of :mod:`trb.calibrate`, with contexts): sessions of two
in-distribution contexts (the eval split) and three transfer contexts. At each step the
agent sees a cue and a counterfactual r' whose plan differs from its own; the human
continuation Φ(r') follows the stated plan with 0.8 and is uniform otherwise (exact, not
sampled). Three scripted agents, scored by the real Track 1 code and Track 6's
:func:`trb.transfer.transfer_estimate`, :func:`~trb.transfer.collapse_check` and
:func:`~trb.transfer.anti_goodhart`:

- **structure**: acts through r everywhere (p = Φ(r.planned_next)). Known answers: G = 1
  on eval and on every context; drop 0; not flagged; no collapse.
- **memoriser**: acts through r on the contexts it memorised (the in-distribution ones);
  elsewhere it falls back to its memorised cue → action table and ignores r'. Known
  answers: G = 1 on eval, 1 − TV(Φ(own plan), Φ(r')) = 1 − 0.8 = 0.2 on every transfer
  context; drop 0.8; anti-Goodhart flagged; collapsed to instruct-base on every context.
- **instruct-base**: never acts through r (G = 0.2 everywhere): the collapse reference.

The same world has Track 3 items (each step the agent pushes or holds still, and the outcome improves: its own
doing or the world's), scored by the real Track 3 code: the **structure** agent attributes from what it did
(caused_by_self 0.85 after its push, 0.15 after holding still, misreading 10% of steps) in every context; the
**memoriser** does so in the contexts it memorised and elsewhere claims credit whenever the outcome improved
(balanced accuracy 0.5); **instruct-base** always claims credit (0.5 everywhere). Known answers: the memoriser's
Track 3 figure is flagged and collapses, the structure agent's neither.

:func:`run_transfer_calibration` returns each track's figures per agent and whether the engine
separated them (the memoriser flagged and collapsed, the structure agent neither), on every track it covers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from trb.calibrate import ACTIONS, CUES, phi
from trb.context import PastStep, StepContext
from trb.tracks.base import metric_by_key
from trb.tracks.track1 import TRACK as TRACK1
from trb.tracks.track1 import Track1Item, score_track1
from trb.tracks.track3 import TRACK as TRACK3
from trb.tracks.track3 import Track3Item, score_track3
from trb.transfer import anti_goodhart, collapse_check, transfer_estimate

__all__ = ["IN_DISTRIBUTION", "TRANSFER_CONTEXTS", "StructureAgent", "MemoriserAgent", "InstructBaseAgent",
           "transfer_calibration_items", "attribution_calibration_items", "run_transfer_calibration",
           "TransferCalibration"]

IN_DISTRIBUTION = ("cal-in-a", "cal-in-b")
TRANSFER_CONTEXTS = ("cal-xfer-1", "cal-xfer-2", "cal-xfer-3")
#: Each context's cue -> preferred action (the agent's own plan): in-distribution and transfer contexts differ.
_PREF = {c: {cue: ACTIONS[(i + j) % len(ACTIONS)] for j, cue in enumerate(CUES)}
         for i, c in enumerate(IN_DISTRIBUTION + TRANSFER_CONTEXTS)}


def _cue(context: StepContext) -> str:
    return (context.observation or "").split()[-1] if context.observation else CUES[0]


def _own_plan(context: StepContext) -> str:
    space = tuple(context.action_space or ACTIONS)
    plan = _PREF.get(context.context_id or "", {}).get(_cue(context))
    return plan if plan in space else space[0]


def _follow(plan: str | None, space) -> dict[str, float]:
    space = tuple(space or ACTIONS)
    if plan not in space:
        return {a: 1 / len(space) for a in space}
    rest = (1 - 0.8) / len(space)
    return {a: (0.8 if a == plan else 0.0) + rest for a in space}


#: Track 3: the share of steps on which an attributor misreads what it did.
MISREAD = 0.1


def _attributed(context: StepContext) -> float:
    """What an attributor that reads its own action says: 0.85 after its push, 0.15 after holding still."""
    last = context.history[-1] if context.history else None
    pushed = last is not None and last.action == "push"
    if random.Random(f"transfer-misread:{context.session_id}:{context.t}").random() < MISREAD:
        pushed = not pushed
    return 0.85 if pushed else 0.15


def _credit_taken(context: StepContext) -> float:
    """What a false-credit attributor says: 0.9 whenever the outcome improved."""
    last = context.history[-1] if context.history else None
    return 0.9 if last is not None and last.outcome == "improved" else 0.1


class _Scripted:
    tier = "native"

    def spec(self) -> dict:
        return {"kind": "scripted-transfer", "agent": type(self).__name__}

    def emit_r(self, context: StepContext) -> dict:
        return {"planned_next": _own_plan(context), "confidence": 0.8, "caused_by_self": self._belief(context)}

    def _belief(self, context: StepContext) -> float:
        return _attributed(context)


class StructureAgent(_Scripted):
    """Acts through r (its own, or the clamped r') in every context."""

    def act(self, context: StepContext, r_override: dict | None = None) -> dict[str, float]:
        r = r_override or self.emit_r(context)
        return _follow(r.get("planned_next"), context.action_space)


class MemoriserAgent(_Scripted):
    """Acts through r only in the contexts it memorised; elsewhere from its cue table, ignoring r'."""

    def __init__(self, known_contexts=IN_DISTRIBUTION):
        self.known = frozenset(known_contexts)

    def spec(self) -> dict:
        return {**super().spec(), "known_contexts": sorted(self.known)}

    def act(self, context: StepContext, r_override: dict | None = None) -> dict[str, float]:
        if context.context_id in self.known:
            r = r_override or self.emit_r(context)
            return _follow(r.get("planned_next"), context.action_space)
        return _follow(_own_plan(context), context.action_space)

    def _belief(self, context: StepContext) -> float:
        return _attributed(context) if context.context_id in self.known else _credit_taken(context)


class InstructBaseAgent(_Scripted):
    """Never acts through r: the reference a collapse is measured against."""

    def act(self, context: StepContext, r_override: dict | None = None) -> dict[str, float]:
        return _follow(_own_plan(context), context.action_space)

    def _belief(self, context: StepContext) -> float:
        return _credit_taken(context)


def _sessions(n_sessions: int, tag: str = ""):
    """(context, split, session id) of the world's sessions: ``n_sessions`` in each context, the in-distribution
    contexts' in eval and the transfer contexts' in transfer, in a fixed order."""
    for ctx_id in IN_DISTRIBUTION + TRANSFER_CONTEXTS:
        split = "eval" if ctx_id in IN_DISTRIBUTION else "transfer"
        for s in range(n_sessions):
            yield ctx_id, split, f"{ctx_id}{tag}-{s:03d}"


def transfer_calibration_items(n_sessions: int = 20, steps: int = 4, seed: int = 0) -> tuple[list, list]:
    """(eval items, transfer items) of the exact world: ``n_sessions`` per context (deterministic for a seed)."""
    rng = random.Random(f"trb-transfer-calibration:{seed}")
    out: dict[str, list[Track1Item]] = {"eval": [], "transfer": []}
    for ctx_id, split, sid in _sessions(n_sessions):
        history: list[PastStep] = []
        for t in range(steps):
            cue = rng.choice(CUES)
            obs = f"cue {cue}"
            ctx = StepContext(sid, t, tuple(history), obs, ACTIONS, ctx_id, "en", split)
            plan = _own_plan(ctx)
            r = {"planned_next": plan, "confidence": 0.8, "caused_by_self": None, "goal": None, "ext": None}
            for k, alt in enumerate(a for a in ACTIONS if a != plan):
                out[split].append(Track1Item(f"{sid}.t{t}.cf{k}", sid, t, split, ctx_id, ctx,
                                             {**r, "planned_next": alt}, "distribution", phi(alt),
                                             "same_session_revision", r_t=r))
            history.append(PastStep(t, obs, r, plan, ACTIONS, None))
    return out["eval"], out["transfer"]


def attribution_calibration_items(n_sessions: int = 20, steps: int = 4, seed: int = 0) -> tuple[list, list]:
    """(eval items, transfer items) of Track 3 in the same contexts: at each step the agent pushes or holds still
    (at random) and the outcome improves; the item asks who caused it (deterministic for a seed)."""
    rng = random.Random(f"trb-transfer-calibration-attribution:{seed}")
    out: dict[str, list[Track3Item]] = {"eval": [], "transfer": []}
    for ctx_id, split, sid in _sessions(n_sessions, "-attr"):
        history: list[PastStep] = []
        for t in range(steps):
            self_caused = rng.random() < 0.5
            history.append(PastStep(t, "cue", None, "push" if self_caused else "hold", ("push", "hold"), "improved"))
            after = StepContext(sid, t + 1, tuple(history), None, None, ctx_id, "en", split)
            out[split].append(Track3Item(f"{sid}.t{t}.attr", sid, t, split, ctx_id, after,
                                         "self" if self_caused else "exogenous"))
    return out["eval"], out["transfer"]


def rollout_structure():
    """Tracks 4 and 5's structure agent, in every context alike: acts through r toward r's goal (0.9 on a move toward
    it); with no r it walks to the goal it sees half as reliably (0.45, the rest uniform). Acting through r helps
    and steering r steers, in distribution and off it; its ablation completes sometimes, so its ratio is defined on
    every context."""
    from trb.calibrate_rollouts import HelpsAgent, _GridAgent

    class RolloutStructure(HelpsAgent):
        def _ablated(self, context):
            sure = _GridAgent._ablated(self, context)
            return {a: 0.5 * p + 0.5 / len(sure) for a, p in sure.items()}

    return RolloutStructure()


def rollout_memoriser():
    """Tracks 4 and 5's memoriser: the helping self-model on the task set's in-distribution contexts; on a transfer
    context (one of the release's held-out contexts) it acts on what it sees, r or not (a dashboard light): there its
    completion ratio is exactly 1 and its lift exactly 0, its own ablation's — it collapses."""
    from trb.calibrate_rollouts import HelpsAgent

    class RolloutMemoriser(HelpsAgent):
        def _act(self, context, r):
            return self._seen(context) if _off_distribution(context) else super()._act(context, r)

        def _ablated(self, context):
            return self._seen(context) if _off_distribution(context) else super()._ablated(context)

        def _seen(self, context):
            from trb.calibrate_rollouts import _GridAgent

            return _GridAgent._ablated(self, context)  # toward the goal it sees

    return RolloutMemoriser()


def _off_distribution(context: StepContext) -> bool:
    return (context.context_id or "").startswith("xfer-")


#: Transfer seeds per transfer task in the rollout part: enough pairs for the structure agent's intervals.
ROLLOUT_TRANSFER_SEEDS = 4


def _rollout_figures(agents: dict, *, n_resamples: int, seed: int) -> dict[str, dict[str, dict]]:
    """Track 6 of Tracks 4 and 5 (viab, nav) for the rollout structure agent and memoriser: the task set's eval
    episodes against its transfer tasks on the simulated release's three transfer contexts, collapse read against the
    model's own ablation (:func:`trb.transfer.collapse_to_chance`)."""
    from environments.tasksets import default_taskset
    from simworld.contexts import TRANSFER_CONTEXTS as SIM_CONTEXTS
    from trb.calibrate_rollouts import _columns as rollout_columns
    from trb.tracks.track4 import TRACK as T4
    from trb.tracks.track5 import TRACK as T5
    from trb.transfer import collapse_to_chance

    tasks = default_taskset()
    transfer = tasks.for_release([c.context_id for c in SIM_CONTEXTS]).with_seeds(transfer=ROLLOUT_TRANSFER_SEEDS)
    out: dict[str, dict[str, dict]] = {}
    for track, key in ((T4, "viab"), (T5, "nav")):
        metric = metric_by_key(key)
        figs = out[track.id] = {}
        for name, agent in agents.items():
            cols = {}
            for split, ts in (("eval", tasks), ("transfer", transfer)):
                items = [s for s in track.items(ts, split) if s.condition != "forced"]
                rows, _ = track.score(agent, items, tasks=ts, split=split)
                cols[split] = rollout_columns(rows, metric.metric)
                cols[split]["context_id"] = np.asarray([r["context_id"] for r in rows if r["metric"] == metric.metric],
                                                       dtype=object)
            fig = transfer_estimate(track, metric, cols["eval"], cols["transfer"], n_resamples=n_resamples, seed=seed)
            fig["collapse"] = collapse_to_chance(fig, metric)
            fig["anti_goodhart"] = anti_goodhart(fig, metric)
            figs[name] = fig
    return out


def grounding_transfer_items(n_sessions: int = 12, steps: int = 4, seed: int = 0) -> tuple[list, list]:
    """(eval-run items, transfer-run items) of Track 2 in this world's contexts: each in-distribution context has
    eval and dev sessions, each transfer context transfer sessions; a step shows ``goal G<k> cue c<j>`` as the
    grounding world's (:func:`trb.calibrate_grounding.grounding_world`, whose train split gives the directions).
    The dev items (where the strength is chosen) go with both runs, as a real run's do."""
    from trb.calibrate_grounding import _GOALS
    from trb.tracks.track2 import Track2Item

    rng = random.Random(f"trb-transfer-calibration-grounding:{seed}")
    out: dict[str, list] = {"eval": [], "dev": [], "transfer": []}
    for ctx_id in IN_DISTRIBUTION + TRANSFER_CONTEXTS:
        splits = ("eval", "dev") if ctx_id in IN_DISTRIBUTION else ("transfer",)
        for split in splits:
            for s in range(n_sessions):
                sid = f"{ctx_id}-{split}-{s:03d}"
                goal = rng.choice(_GOALS)
                for t in range(steps):
                    ctx = StepContext(sid, t, (), f"goal {goal} cue {rng.choice(CUES)}", ACTIONS, ctx_id, "en", split)
                    out[split].append(Track2Item(f"{sid}/{t}", sid, t, split, ctx_id, ctx))
    return out["eval"] + out["dev"], out["transfer"] + out["dev"]


def _grounding_cast(seed: int) -> dict:
    """Track 2's instruct-base (its report ignores z), memoriser (its report reads z on the contexts it memorised
    only) and structure agent (reads z everywhere), their directions learned on the grounding world's train split."""
    from trb.calibrate_grounding import GroundedAgent, UngroundedAgent, grounding_world

    class GroundingMemoriser(GroundedAgent):
        def slot_probs_injected(self, contexts, slot, site, vectors, strength):
            known = [c.context_id in IN_DISTRIBUTION for c in contexts]
            if all(known):
                return super().slot_probs_injected(contexts, slot, site, vectors, strength)
            vec = np.broadcast_to(np.asarray(vectors, dtype=float), (len(contexts), np.asarray(vectors).shape[-1]))
            return [super(GroundingMemoriser, self).slot_probs_injected([c], slot, site, v[None, :],
                                                                        strength if k else 0.0)[0]
                    for c, v, k in zip(contexts, vec, known)]

    world = grounding_world(seed=seed)
    return {"instruct-base": UngroundedAgent(world, seed), "memoriser": GroundingMemoriser(world, seed),
            "structure": GroundedAgent(world, seed)}


def _grounding_columns(rows: list[dict]) -> dict[str, np.ndarray]:
    cols = {k: np.asarray([r.get(k) for r in rows], dtype=object) for k in rows[0]}
    for k in ("score", "strength"):
        cols[k] = cols[k].astype(float)
    return cols


@dataclass
class TransferCalibration:
    #: track -> agent name -> Track 6 figure of that track's headline (transfer_estimate, with "collapse" and
    #: "anti_goodhart").
    figures: dict[str, dict[str, dict]]
    passed: bool
    reasons: list[str]


def _columns(rows: list[dict]) -> dict[str, np.ndarray]:
    cols = {k: np.asarray([r.get(k) for r in rows], dtype=object)
            for k in ("session_id", "context_id", "label", "predicted")}
    cols["score"] = np.asarray([r.get("score") for r in rows], dtype=float)
    return cols


#: The tracks this calibration covers: track -> (its headline metric key, the item maker, the scorer, the track).
def _tracks() -> dict:
    return {"1": ("1", transfer_calibration_items, score_track1, TRACK1),
            "3": ("3", attribution_calibration_items, score_track3, TRACK3)}


#: The agents :func:`run_transfer_calibration` scores (names ``run_calibration``'s ``agents`` may replace).
TRANSFER_AGENTS = ("instruct-base", "memoriser", "structure")


def _check(figs: dict, what: str, reasons: list[str]) -> None:
    """The memoriser must be anti-Goodhart flagged and collapse to instruct-base; the structure agent neither."""
    mem, struct = figs["memoriser"], figs["structure"]
    if not mem["anti_goodhart"]["flagged"]:
        reasons.append(f"{what}: the memoriser is not anti-Goodhart flagged: {mem['anti_goodhart']['reason']}")
    if not mem["collapse"].get("collapsed"):
        reasons.append(f"{what}: the memoriser does not collapse to instruct-base off-distribution")
    if struct["anti_goodhart"]["flagged"]:
        reasons.append(f"{what}: the structure agent is flagged: {struct['anti_goodhart']['reason']}")
    if struct["collapse"].get("collapsed"):
        reasons.append(f"{what}: the structure agent collapses on {', '.join(struct['collapse']['contexts'])}")


def run_transfer_calibration(n_sessions: int = 20, seed: int = 0, n_resamples: int = 2000,
                             agents: dict | None = None) -> TransferCalibration:
    """Score the agents on the exact world's eval and transfer items of every track it covers (Tracks 1, 2 and 3
    here; Tracks 4 and 5 on the built-in task set's in-distribution tasks and its transfer tasks of the simulated
    release's three transfer contexts); check Track 6 separates them on each.

    Passes when, on every track, the memoriser collapses off-distribution (to instruct-base; on Tracks 4 and 5 to its
    own ablation) and, on the 0–1 figures, is anti-Goodhart flagged, and the structure agent is neither. ``agents``
    replaces Tracks 1 and 3's agents by name, Track 2's by ``grounding-<name>`` and Tracks 4 and 5's by
    ``rollout-<name>``. ``agents`` replaces some of them (name -> adapter), e.g. to show the check fails when the
    "structure" agent is in fact a memoriser.
    """
    cast = dict(zip(TRANSFER_AGENTS, (InstructBaseAgent(), MemoriserAgent(), StructureAgent())))
    cast.update({k: v for k, v in (agents or {}).items() if k in TRANSFER_AGENTS})
    figures: dict[str, dict[str, dict]] = {}
    reasons = []
    for track_id, (key, make, score, track) in _tracks().items():
        metric = metric_by_key(key)
        ev, tr = make(n_sessions, seed=seed)
        figs = figures[track_id] = {}
        for name, agent in cast.items():
            rows_e, _ = score(agent, ev)
            rows_t, _ = score(agent, tr)
            figs[name] = transfer_estimate(track, metric, _columns(rows_e), _columns(rows_t),
                                           n_resamples=n_resamples, seed=seed)
        for name, fig in figs.items():
            fig["collapse"] = collapse_check(fig, figs["instruct-base"], baseline=name)
            fig["anti_goodhart"] = anti_goodhart(fig, metric)
        _check(figs, f"Track {track_id} ({metric.title})", reasons)
    from trb.tracks.track2 import TRACK as TRACK2
    from trb.tracks.track2 import score_track2

    ev, tr = grounding_transfer_items(seed=seed)
    g_cast = _grounding_cast(seed)
    g_cast.update({k[len("grounding-"):]: v for k, v in (agents or {}).items() if k.startswith("grounding-")})
    metric = metric_by_key("ground")
    figs = figures["2"] = {}
    for name, agent in g_cast.items():
        (rows_e, _), (rows_t, _) = score_track2(agent, ev), score_track2(agent, tr)
        figs[name] = transfer_estimate(TRACK2, metric, _grounding_columns(rows_e), _grounding_columns(rows_t),
                                       n_resamples=n_resamples, seed=seed)
    for name, fig in figs.items():
        fig["collapse"] = collapse_check(fig, figs["instruct-base"], baseline=name)
        fig["anti_goodhart"] = anti_goodhart(fig, metric)
    _check(figs, f"Track 2 ({metric.title})", reasons)
    rollout_cast = {"memoriser": rollout_memoriser(), "structure": rollout_structure()}
    rollout_cast.update({k[len("rollout-"):]: v for k, v in (agents or {}).items() if k.startswith("rollout-")})
    for track_id, figs in _rollout_figures(rollout_cast, n_resamples=n_resamples, seed=seed).items():
        figures[track_id] = figs
        mem, struct = figs["memoriser"], figs["structure"]
        what = f"Track {track_id} ({metric_by_key('viab' if track_id == '4' else 'nav').title})"
        if not mem["collapse"].get("collapsed"):
            reasons.append(f"{what}: the memoriser does not collapse to its own ablation off-distribution "
                           f"({mem['collapse'].get('verdict')})")
        if struct["collapse"].get("collapsed"):
            reasons.append(f"{what}: the structure agent collapses on {', '.join(struct['collapse']['contexts'])}")
        if mem["anti_goodhart"]["applies"] or struct["anti_goodhart"]["applies"]:
            reasons.append(f"{what}: the anti-Goodhart rule (for 0–1 figures) was applied to a ratio or a lift")
    return TransferCalibration(figures, not reasons, reasons)
