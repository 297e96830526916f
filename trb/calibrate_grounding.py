"""Calibration of Track 2: two scripted agents with known grounding answers, scored by the real track code.

Both agents compute the same state z_t from a context (a fixed, seeded random projection of the
reference models' hashed context features, :func:`trb.reference.features.context_features`) and both
learn their concept directions from the train split through the same capability
(:func:`trb.grounding.learn_concepts`). They differ only in what their report reads:

* :class:`GroundedAgent` — its report reads z: slot logits are the projections of z (with the
  injection) onto its concept directions, so an injected concept registers: detection AUC well above 0.5;
* :class:`UngroundedAgent` — its report is computed from the context alone and ignores z, so an
  injection changes nothing: detection AUC 0.5 (every injected trial ties its null).

:func:`run_grounding_calibration` scores both on a release and says whether Track 2 separates them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from trb.adapters.capabilities import ActivationAccess
from trb.context import StepContext
from trb.grounding import learn_concepts
from trb.reference.features import context_features

__all__ = ["GroundedAgent", "UngroundedAgent", "run_grounding_calibration"]

_BUCKETS = 4096
_DIM = 32
_SITE = "z"
_BETA = 4.0


class _ScriptedGrounding:
    tier = "native"
    capabilities = (ActivationAccess,)
    reads_z = True

    def __init__(self, release, seed: int = 0):
        self._table = np.random.default_rng(seed).standard_normal((_BUCKETS, _DIM)) / np.sqrt(_DIM)
        self._dirs = learn_concepts(self, release, model_sha256=f"scripted-{type(self).__name__}-{seed}")
        self._mean = None

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


def run_grounding_calibration(release_dir, *, split: str = "eval", seed: int = 0, n_resamples: int = 2000,
                              agents: dict | None = None) -> tuple[list[dict], list[str]]:
    """Score the grounded and the ungrounded agent with Track 2 on ``split`` of ``release_dir`` (strength chosen on
    dev, as always). Returns rows ``{"agent", "track": "2", "figures": {metric key: Estimate}}`` and the reasons the
    check fails (empty when Track 2 separates them: grounded AUC CI above 0.5, ungrounded CI containing 0.5).
    ``agents`` replaces one of them by name, e.g. to show the check fails."""
    from trb.releases import Release
    from trb.tracks.track2 import TRACK, score_track2

    rel = Release(release_dir)
    try:
        cast = {"grounded": GroundedAgent(rel, seed), "ungrounded": UngroundedAgent(rel, seed)}
        cast.update({k: v for k, v in (agents or {}).items() if k in cast})
        items = list(TRACK.items(rel, split))
    finally:
        rel.close()
    rows, reasons = [], []
    for name, agent in cast.items():
        r, _ = score_track2(agent, items)
        cols = {k: np.asarray([row.get(k) for row in r], dtype=object) for k in r[0]}
        cols["score"] = cols["score"].astype(float)
        cols["strength"] = cols["strength"].astype(float)
        figs = {m.key: TRACK.aggregate(m, cols, n_resamples=n_resamples, confidence=0.95, seed=seed)
                for m in TRACK.metrics}
        rows.append({"agent": name, "track": "2", "figures": figs})
    by = {row["agent"]: row["figures"] for row in rows}
    for key in ("ground", "ground-rand"):
        g, u = by["grounded"][key], by["ungrounded"][key]
        if not g.ci_low > 0.5:
            reasons.append(f"Track 2 {key}: the grounded agent's AUC CI [{g.ci_low:.3f}, {g.ci_high:.3f}] does not lie "
                           "above 0.5")
        if not (u.ci_low <= 0.5 <= u.ci_high or abs(u.value - 0.5) < 1e-12):
            reasons.append(f"Track 2 {key}: the ungrounded agent's AUC {u.value:.3f} [{u.ci_low:.3f}, "
                           f"{u.ci_high:.3f}] excludes 0.5")
    return rows, reasons
