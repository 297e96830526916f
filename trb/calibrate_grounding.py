"""Calibration of Track 2: three scripted agents with known grounding answers, scored by the real track code.

The agents compute the same state z_t from a context (a fixed, seeded random projection of the
reference models' hashed context features, :func:`trb.reference.features.context_features`) and both
learn their concept directions from the train split through the same capability
(:func:`trb.grounding.learn_concepts`). They differ only in what their report reads:

* :class:`GroundedAgent` — its report reads z: slot logits are the projections of z (with the
  injection) onto its concept directions, so an injected concept registers: detection AUC well above 0.5;
* :class:`UngroundedAgent` — its report is computed from the context alone and ignores z, so an
  injection changes nothing: detection AUC 0.5 (every injected trial ties its null);
* :class:`EntangledAgent` — the grounded agent with a state that cannot tell two goals apart: the
  identifiability check must flag exactly those two concepts as not separable (and none of the grounded
  agent's).

:func:`run_grounding_calibration` scores both and says whether Track 2 separates them: on its own exact
world by default (:func:`grounding_world`: sessions in train, dev and eval splits; a step's observation
names its goal and cue, and its recorded r the goal and the planned action), so ``trb calibrate`` needs
no release; or on a release's splits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from trb.adapters.capabilities import ActivationAccess
from trb.context import StepContext
from trb.grounding import learn_concepts, learn_concepts_from
from trb.reference.features import context_features

__all__ = ["GroundedAgent", "UngroundedAgent", "EntangledAgent", "GroundingWorld", "grounding_world", "run_grounding_calibration",
           "GROUNDING_AGENTS"]

#: The agents of this calibration (names ``run_calibration(agents=...)`` can replace).
GROUNDING_AGENTS = ("grounded", "ungrounded", "entangled")
_GOALS = tuple(f"G{i}" for i in range(6))

_BUCKETS = 4096
_DIM = 32
_SITE = "z"
_BETA = 4.0


class _ScriptedGrounding:
    tier = "native"
    capabilities = (ActivationAccess,)
    reads_z = True

    def __init__(self, release, seed: int = 0):
        """``release``: a :class:`~trb.releases.Release` or a :class:`GroundingWorld` (whose train split gives
        the directions)."""
        self._table = np.random.default_rng(seed).standard_normal((_BUCKETS, _DIM)) / np.sqrt(_DIM)
        sha = f"scripted-{type(self).__name__}-{seed}"
        if isinstance(release, GroundingWorld):
            self._dirs = learn_concepts_from(self, release.train_contexts, release.train_recorded,
                                             release={"sha": release.sha, "version": "calibration"}, model_sha256=sha)
        else:
            self._dirs = learn_concepts(self, release, model_sha256=sha)

    def spec(self) -> dict:
        return {"kind": "scripted", "agent": type(self).__name__, "reads_z": self.reads_z}

    def activation_sites(self) -> tuple[str, ...]:
        return (_SITE,)

    def read_activations(self, contexts: Sequence[StepContext], site: str) -> np.ndarray:
        return np.stack([self._table[context_features(c, _BUCKETS)].mean(0) for c in contexts]) if contexts else \
            np.zeros((0, _DIM))

    def concept_directions(self):
        return self._dirs

    def _logits(self, z: np.ndarray, values: list[str], slot: str) -> np.ndarray:
        known = dict(self._dirs.concepts(_SITE, slot))
        unit = np.stack([known[v] / np.linalg.norm(known[v]) if v in known else np.zeros(_DIM) for v in values])
        return _BETA * z @ unit.T

    def slot_probs_injected(self, contexts, slot, site, vectors, strength) -> list[dict[str, float]]:
        z0 = self.read_activations(contexts, site)
        z = z0 + float(strength) * np.broadcast_to(np.asarray(vectors, dtype=float), z0.shape) if self.reads_z else z0
        out = []
        goals = [v for v, _ in self._dirs.concepts(_SITE, "goal")]
        for c, zi in zip(contexts, z):
            values = goals if slot == "goal" else list(c.action_space or ())
            if not values:
                out.append({})
                continue
            lg = self._logits(zi[None, :], values, slot)[0]
            p = np.exp(lg - lg.max())
            out.append(dict(zip(values, (p / p.sum()).tolist())))
        return out

    def emit_r(self, context: StepContext) -> dict:
        r = {}
        for slot in ("goal", "planned_next"):
            p = self.slot_probs_injected([context], slot, _SITE, np.zeros(_DIM), 0.0)[0]
            r[slot] = max(p, key=p.get) if p else None
        return r

    def act(self, context: StepContext, r_override: dict | None = None) -> dict[str, float]:
        space = context.action_space or ()
        return {a: 1.0 / len(space) for a in space}


class GroundedAgent(_ScriptedGrounding):
    """Its report reads z (injection registers)."""

    reads_z = True


class UngroundedAgent(_ScriptedGrounding):
    """Its report ignores z (injection cannot register)."""

    reads_z = False


class EntangledAgent(GroundedAgent):
    """Reads z like the grounded agent, but its state cannot tell goal G1 from G0 (it reads G1 as G0): the two
    concepts' directions coincide (cosine ≈ 1), so Track 2's identifiability check must flag G0 and G1 as not
    separable (an injection of one reads as the other) and leave the other goals clear."""

    MERGED = ("G1", "G0")

    def read_activations(self, contexts: Sequence[StepContext], site: str) -> np.ndarray:
        seen = [dataclasses.replace(c, observation=(c.observation or "").replace(*self.MERGED)) for c in contexts]
        return super().read_activations(seen, site)


@dataclass
class GroundingWorld:
    """The calibration's exact world: train contexts with their recorded slots, and the Track 2 items of dev and
    eval (deterministic for a seed)."""

    sha: str
    train_contexts: list
    train_recorded: list
    items: dict  # split -> [Track2Item]


def grounding_world(n_sessions: int = 60, steps: int = 6, seed: int = 0) -> GroundingWorld:
    """Sessions in the cue world with goals: 60% train, 20% dev, 20% eval (by session). A step shows
    ``goal G<k> cue c<j>``; its recorded r is that goal and the cue's action (:data:`trb.calibrate.ACTIONS`)."""
    import random
    from hashlib import sha256

    from trb.calibrate import _PREF, ACTIONS, CUES
    from trb.tracks.track2 import Track2Item

    rng = random.Random(f"trb-grounding-calibration:{seed}")
    world = GroundingWorld("", [], [], {"dev": [], "eval": []})
    for s in range(n_sessions):
        split = "train" if s % 5 < 3 else "dev" if s % 5 == 3 else "eval"
        sid = f"gcal-{s:04d}"
        goal = rng.choice(_GOALS)
        for t in range(steps):
            cue = rng.choice(CUES)
            ctx = StepContext(sid, t, (), f"goal {goal} cue {cue}", ACTIONS, "calibration", "en", split)
            if split == "train":
                world.train_contexts.append(ctx)
                world.train_recorded.append({"goal": goal, "planned_next": _PREF[cue]})
            else:
                world.items[split].append(Track2Item(f"{sid}/{t}", sid, t, split, "calibration", ctx))
    world.sha = sha256(f"trb-grounding-calibration:{seed}:{n_sessions}:{steps}".encode()).hexdigest()
    return world


def run_grounding_calibration(release_dir=None, *, split: str = "eval", seed: int = 0, n_resamples: int = 2000,
                              agents: dict | None = None) -> tuple[list[dict], list[str]]:
    """Score the grounded and the ungrounded agent with Track 2 on ``split`` of ``release_dir``, or of the exact
    world (:func:`grounding_world`) when it is None (strength chosen on dev, as always). Returns rows
    ``{"agent", "track": "2", "figures": {metric key: Estimate}}`` and the reasons the check fails (empty when
    Track 2 separates them: grounded AUC CI above 0.5, ungrounded CI containing 0.5; on the exact world also the
    identifiability check: the entangled agent's two merged goals flagged not separable, none of the grounded
    one's). ``agents`` replaces one of them by name (an adapter object, or a callable taking the world or release
    and the seed), e.g. to show the check fails."""
    from trb.tracks.track2 import TRACK, score_track2

    def make(source):
        cast = {"grounded": GroundedAgent(source, seed), "ungrounded": UngroundedAgent(source, seed)}
        if isinstance(source, GroundingWorld):  # the identifiability check needs the exact world's goals G0..G5
            cast["entangled"] = EntangledAgent(source, seed)
        for k, v in (agents or {}).items():
            if k in cast:
                cast[k] = v(source, seed) if isinstance(v, type) else v
        return cast

    if release_dir is None:
        world = grounding_world(seed=seed)
        cast = make(world)
        items = world.items[split] + (world.items["dev"] if split != "dev" else [])
    else:
        from trb.releases import Release

        rel = Release(release_dir)
        try:
            cast = make(rel)
            items = list(TRACK.items(rel, split))
        finally:
            rel.close()
    rows, reasons = [], []
    for name, agent in cast.items():
        ident = agent.concept_directions().identifiability(_SITE, "goal")
        if name == "entangled":  # its check is identifiability: its directions are read, no trial is needed
            rows.append({"agent": name, "track": "2", "figures": {}, "identifiability": ident})
            continue
        r, _ = score_track2(agent, items)
        cols = {k: np.asarray([row.get(k) for row in r], dtype=object) for k in r[0]}
        cols["score"] = cols["score"].astype(float)
        cols["strength"] = cols["strength"].astype(float)
        figs = {m.key: TRACK.aggregate(m, cols, n_resamples=n_resamples, confidence=0.95, seed=seed)
                for m in TRACK.metrics}
        rows.append({"agent": name, "track": "2", "figures": figs, "identifiability": ident})
    by = {row["agent"]: row["figures"] for row in rows}
    for key in ("ground", "ground-rand"):
        g, u = by["grounded"][key], by["ungrounded"][key]
        if not g.ci_low > 0.5:
            reasons.append(f"Track 2 {key}: the grounded agent's AUC CI [{g.ci_low:.3f}, {g.ci_high:.3f}] does not lie "
                           "above 0.5")
        if not (u.ci_low <= 0.5 <= u.ci_high or abs(u.value - 0.5) < 1e-12):
            reasons.append(f"Track 2 {key}: the ungrounded agent's AUC {u.value:.3f} [{u.ci_low:.3f}, "
                           f"{u.ci_high:.3f}] excludes 0.5")
    ident = {row["agent"]: row["identifiability"] for row in rows}
    merged = sorted(EntangledAgent.MERGED)
    if "entangled" not in ident:  # on a release: its goals are its own, and the scripted state need not separate them
        return rows, reasons
    if ident["entangled"]["flagged"] != merged:
        reasons.append(f"Track 2 identifiability: the entangled agent's goal concepts flagged not separable are "
                       f"{ident['entangled']['flagged'] or 'none'}, not {merged} (cosine ≥ {ident['entangled']['threshold']})")
    if ident["grounded"]["flagged"]:
        reasons.append(f"Track 2 identifiability: the grounded agent's goal concepts {ident['grounded']['flagged']} "
                       "are flagged not separable, though its state tells every goal apart")
    return rows, reasons
