"""Track 2 — grounding by concept injection, spec §3 (Lindsey, 2025): does r_t read the state z_t it reports on?

Needs the capability ``activation_access`` (:class:`~trb.adapters.capabilities.ActivationAccess`);
an adapter without it is "not applicable (needs activation_access)".

* **Concepts** are the values of the ``goal`` and ``planned_next`` slots; their directions are
  learned on the train split (:mod:`trb.grounding`) and stored with the checkpoint.
* **Trials.** On every step context of the evaluated split, and of the ``dev`` split (where the
  headline strength is chosen), at every activation site, for every concept c: read the
  report's distribution over c's slot with nothing injected (the **zero** null, strength 0),
  with ``s * d_c`` added to z (**injected**) and with ``s * u`` added, u a random direction of
  the same norm as d_c (the **random** null, seeded by the trial's id), for each strength s of
  :data:`STRENGTHS`. A trial's score is the probability the slot gives c (graded, no threshold).
* **Metric.** Detection AUC of injected vs null trials (Mann-Whitney, ties 1/2) within each
  concept, averaged over concepts, with a session-bootstrap CI (:func:`trb.grounding.detection_auc_by_session`):
  ``ground`` against the zero null, ``ground-rand`` against the random null, both at the adapter's
  default site and at the **headline strength**, chosen on the dev split alone (:data:`CHOICE_RULE`):
  the strength with the highest dev AUC against the zero null, the headline's own null (ties: the
  smaller). The figures are on the evaluated split's trials only; with no dev trials the strength is
  fixed a priori at :data:`DEFAULT_STRENGTH`.
* **The headline's concepts** (:data:`CONCEPT_RULE`). Concepts whose direction has a cosine similarity
  of at least :data:`trb.grounding.COSINE_FLAG` with another concept's (same slot and site) are not
  separable, and concepts with fewer than :data:`MIN_TRIALS` injected trials are too thin: both are
  left out of the headline AUC and named beside it, with the AUC over every concept. With no concept
  left the headline is undefined (never 0).
* **Budget** (:data:`BUDGET_RULE`). Unless ``max_contexts`` is given, each split keeps
  :func:`contexts_for_width` (``target_width``, default :data:`TARGET_WIDTH`) contexts: enough for the
  AUC's 95 % CI to be at most the target wide by the Hanley–McNeil variance at AUC 0.5.
* **Pass bar** (:mod:`trb.tracks.track2_report`): the full − ablation gap is read at one strength shared
  by both models, :func:`choose_shared_strength` (:data:`SHARED_RULE`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from hashlib import blake2b

import numpy as np
import pyarrow as pa

from trb.adapters.capabilities import ActivationAccess, bind
from trb.errors import AdapterError, UsageError
from trb.grounding import COSINE_FLAG, detection_auc_by_session
from trb.options import Option
from trb.releases import Release
from trb.tracks.base import Column, ItemRow, Metric, StepItem

__all__ = ["TRACK", "Track2", "Track2Item", "track2_items", "score_track2", "choose_strength", "choose_shared_strength",
           "headline_concepts", "contexts_for_width", "width_for_trials", "STRENGTHS", "DEFAULT_STRENGTH",
           "CHOICE_SPLIT", "RANDOM_SEED", "MIN_TRIALS", "TARGET_WIDTH"]

#: Injection strengths: multiples of the concept direction (a mean difference, so 1 moves z by one class gap).
STRENGTHS = (1.0, 2.0, 4.0, 8.0)
#: The strength used when there is no dev split to choose on.
DEFAULT_STRENGTH = 4.0
#: The split the headline strength is chosen on.
CHOICE_SPLIT = "dev"
#: Seed of the random-direction control (with each trial's id).
RANDOM_SEED = 20250
#: How a trial budget (``max_contexts``) samples contexts: blake2b of this prefix and the item id, smallest first.
SAMPLE = "blake2b('trb-track2-sample:' + item_id), smallest first"
CHOICE_RULE = ("the strength with the highest dev-split detection AUC against the zero null (nothing injected: the "
               "headline's own null) at the default site, over the concepts the headline keeps (ties: the smaller "
               "strength)")
#: Fewest injected trials (reported split, default site, one strength) a concept needs to count in the headline.
MIN_TRIALS = 5
CONCEPT_RULE = (f"the headline AUC averages the concepts that are separable (direction cosine below the threshold "
                f"with every other concept of the same slot and site) and have at least {MIN_TRIALS} injected trials; "
                "the others are left out and named, beside the AUC over every concept; with none left the headline "
                "is undefined")
SHARED_RULE = ("one strength for both models, chosen on the dev split only (never eval, never the gap): the strength "
               "with the highest detection AUC against the zero null on both models' dev trials pooled (each model's "
               "concept its own stratum, the concepts each headline keeps, default site); ties: the smaller strength; "
               f"with no dev trials {DEFAULT_STRENGTH:g} a priori. The gap averages the concepts both headlines keep")
#: The default trial budget: the width the detection AUC's 95 % CI is sized to reach.
TARGET_WIDTH = 0.10
BUDGET_RULE = ("unless max_contexts is given, each split (eval and dev) keeps n contexts, n the smallest count at "
               "which a concept's AUC from n injected and n null trials has a 95% CI no wider than the target width "
               "by the Hanley–McNeil variance at AUC 0.5, (2n+1)/(12n²) (the largest it takes; every concept injected "
               "into every context; independent trials), capped by the contexts the split has")


def width_for_trials(n: int, confidence: float = 0.95) -> float:
    """The normal-theory CI width of one concept's AUC from ``n`` injected and ``n`` null trials at AUC 0.5
    (Hanley–McNeil: variance (2n+1)/(12n²))."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return 2 * z * math.sqrt((2 * n + 1) / (12 * n * n))


def contexts_for_width(width: float = TARGET_WIDTH, confidence: float = 0.95) -> int:
    """The smallest n with :func:`width_for_trials` (n) ≤ ``width``: the contexts per split of the default budget."""
    from statistics import NormalDist

    if not width > 0:
        raise UsageError(f"Track 2's target_width must be positive, got {width!r}")
    h2 = (width / (2 * NormalDist().inv_cdf(0.5 + confidence / 2))) ** 2
    n = max(1, math.floor((2 + math.sqrt(4 + 48 * h2)) / (24 * h2)) - 1)  # the root of 12 h² n² − 2n − 1, then up
    while width_for_trials(n, confidence) > width:
        n += 1
    return n


def _budget(max_contexts: int | None, target_width: float | None) -> tuple[int, dict]:
    """The contexts per split and the budget's record: explicit ``max_contexts``, else sized from the width."""
    _check_budget(max_contexts)
    if max_contexts is not None:
        return max_contexts, {"max_contexts": max_contexts, "source": "max_contexts"}
    w = TARGET_WIDTH if target_width is None else float(target_width)
    n = contexts_for_width(w)
    return n, {"max_contexts": n, "source": "target_width", "target_width": w, "rule": BUDGET_RULE}


def _null_aucs(columns, rows, strength: float) -> dict:
    """The AUC of ``rows``' injected trials at ``strength`` against each null (zero; random at the same strength)."""
    inj = rows & (columns["condition"] == "injected") & (columns["strength"] == strength)
    out = {}
    for null in ("zero", "random"):
        nm = rows & (columns["condition"] == null)
        if null == "random":
            nm &= columns["strength"] == strength
        try:
            out[null] = _auc(columns, inj, nm).value
        except ValueError:
            out[null] = None
    return out


class Track2Item(StepItem):
    """A step whose report Track 2 reads under injection (no label: the concept injected is the truth)."""


def _digest(text: str, size: int = 16) -> bytes:
    """blake2b of ``text``: the same in every process (Python's hash() is salted)."""
    return blake2b(text.encode(), digest_size=size).digest()


def _sample_key(item_id: str) -> bytes:
    return _digest(f"trb-track2-sample:{item_id}")


def _split_items(release: Release, split: str, max_contexts: int | None) -> Iterator[Track2Item]:
    items = [Track2Item(f"{sess.session_id}/{t}", sess.session_id, t, sess.split, sess.context_id, sess.context(t))
             for sess in release.sessions(split=split) for t in range(len(sess.steps))]
    if max_contexts is not None and len(items) > max_contexts:
        # a fixed sample, the same for every model and seed (so two baselines' trials pair up): the contexts
        # with the smallest hash of their item id, kept in release order
        keep = set(sorted(range(len(items)), key=lambda i: _sample_key(items[i].item_id))[:max_contexts])
        items = [it for i, it in enumerate(items) if i in keep]
    yield from items


def _check_budget(value: int | None, name: str = "max_contexts") -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise UsageError(f"Track 2's {name} must be a positive integer, got {value!r}")


def _concepts_for(item_id: str, slot: str, concepts, dist: dict, budget: int | None) -> list[int]:
    """Indices of the concepts injected into one context: those the slot can give, at most ``budget`` of them."""
    js = [j for j, (v, _) in enumerate(concepts) if v in dist]
    if budget is None or len(js) <= budget:
        return js
    keep = set(sorted(js, key=lambda j: _sample_key(f"{item_id}|{slot}={concepts[j][0]}"))[:budget])
    return [j for j in js if j in keep]


def track2_items(release: Release, split: str = "eval", max_contexts: int | None = None, *,
                 target_width: float | None = None) -> Iterator[Track2Item]:
    """Every step context of ``split``, then (unless ``split`` is dev) of the dev split, where the strength is chosen.

    ``max_contexts`` (the trial budget) keeps at most that many contexts of each split: a fixed sample, the
    contexts whose item id has the smallest :data:`SAMPLE` hash, independent of the model and the seed. Without
    it, the default budget: :func:`contexts_for_width` of ``target_width`` (default :data:`TARGET_WIDTH`).
    """
    max_contexts, _ = _budget(max_contexts, target_width)
    yield from _split_items(release, split, max_contexts)
    if split != CHOICE_SPLIT and CHOICE_SPLIT in release.splits:
        yield from _split_items(release, CHOICE_SPLIT, max_contexts)


def _random_vectors(keys: list[str], norms: np.ndarray, d: int) -> np.ndarray:
    """One Gaussian direction per key, scaled to the given norm; each from its own seed (order-independent)."""
    out = np.empty((len(keys), d))
    for i, k in enumerate(keys):
        key = int.from_bytes(_digest(k, 8), "little")
        u = np.random.default_rng([RANDOM_SEED, key]).standard_normal(d)
        out[i] = u * (norms[i] / np.linalg.norm(u))
    return out


def score_track2(adapter, items, timer=None, progress=None, *, max_concepts: int | None = None,
                 budget: dict | None = None) -> tuple[list[ItemRow], dict]:
    """The trials of every item (see the module docstring). ``max_concepts``: inject at most that many concepts of
    each slot into each context (the ones with the smallest hash of item id and concept; every concept the
    slot can give otherwise). Raises AdapterError when the adapter has no concept directions or breaks the
    capability's contract."""
    _check_budget(max_concepts, "max_concepts")
    bound = bind(adapter)
    access = bound.get(ActivationAccess)
    if access is None:
        raise AdapterError(f"{bound.name} does not declare activation_access: Track 2 cannot inject concepts")
    dirs = access.concept_directions()
    if dirs is None:
        raise AdapterError(f"{bound.name} has no concept directions: make them from the train split with "
                           "`trb concepts MODEL --release DIR`")
    items = list(items)
    own_sites = list(access.activation_sites())
    sites = [s for s in own_sites if s in dirs.sites()]
    if not sites:
        raise AdapterError(f"the concept directions are for sites {dirs.sites()}, the adapter has {own_sites}")
    rows: list[ItemRow] = []
    ident: dict = {}
    ctxs = [it.context for it in items]
    for rank, site in enumerate(sites):
        d = int(dirs.record["sites"][site]["dim"])
        for slot in ("goal", "planned_next"):
            concepts = dirs.concepts(site, slot)
            if not concepts or not items:
                continue
            idf = dirs.identifiability(site, slot)
            ident.setdefault(site, {})[slot] = {"threshold": idf["threshold"], "flagged": idf["flagged"],
                                                "not_separable": idf["not_separable"]}
            base = access.slot_probs_injected(ctxs, slot, site, np.zeros(d), 0.0)
            if len(base) != len(items):
                raise AdapterError(f"{bound.name}: slot_probs_injected returned {len(base)} for {len(items)} contexts")
            # trials: (item index, concept index) where the slot can give the concept, item by item (an adapter
            # that shares a context's work across its trials sees them together)
            pairs = [(i, j) for i in range(len(items)) for j in _concepts_for(items[i].item_id, slot, concepts, base[i],
                                                                              max_concepts)]
            if not pairs:
                continue
            names = [f"{slot}={v}" for v, _ in concepts]
            vec = np.stack([concepts[j][1] for _, j in pairs])
            keys = [f"{items[i].item_id}|{site}|{names[j]}" for i, j in pairs]
            rnd = _random_vectors(keys, np.linalg.norm(vec, axis=1), d)
            # every injected and random trial of a context in one call: (pair, condition, strength) rows, the
            # vectors scaled here and handed over at strength 1
            conds = [(cond, s) for s in STRENGTHS for cond in ("injected", "random")]
            trial_ctx = [ctxs[i] for i, _ in pairs for _ in conds]
            scale = np.array([s for _, s in conds])[None, :, None]
            injected = np.array([cond == "injected" for cond, _ in conds])[None, :, None]
            trial_vec = (np.where(injected, vec[:, None, :], rnd[:, None, :]) * scale).reshape(-1, d)
            probs = access.slot_probs_injected(trial_ctx, slot, site, trial_vec, 1.0)
            if len(probs) != len(trial_ctx):
                raise AdapterError(f"{bound.name}: slot_probs_injected returned {len(probs)} distributions for "
                                   f"{len(trial_ctx)} contexts")
            trials = [("zero", 0.0, [base[i] for i, _ in pairs])]
            trials += [(cond, s, probs[c::len(conds)]) for c, (cond, s) in enumerate(conds)]
            for cond, strength, ps in trials:
                for (i, j), key, p in zip(pairs, keys, ps):
                    it, v = items[i], concepts[j][0]
                    rows.append({"track": "2", "metric": "grounding", "item_id": f"{key}|{cond}|{strength:g}",
                                 "session_id": it.session_id, "t": it.t, "split": it.split,
                                 "context_id": it.context_id, "score": float(p.get(v, 0.0)), "condition": cond,
                                 "concept": names[j], "site": site, "site_rank": rank, "strength": float(strength),
                                 "cos_max": float(idf["max_cos"].get(v, 0.0))})
    if progress is not None:
        progress(len(items))
    splits: dict[str, int] = {}
    for it in items:
        splits[it.split] = splits.get(it.split, 0) + 1
    rec = dirs.record
    return rows, {"scored": len(rows), "contexts": splits, "sites": sites, "strengths": list(STRENGTHS),
                  **({"max_concepts": max_concepts} if max_concepts is not None else {}),
                  **({"budget": budget} if budget is not None else {}),
                  "concepts": len(rec["concepts"]), "identifiability": ident,
                  "directions": {"release": rec.get("release"), "split": rec.get("split"),
                                 "model_sha256": rec.get("model_sha256")}}


# -- aggregation -----------------------------------------------------------------------------------------


def _auc(columns, sel_inj: np.ndarray, sel_null: np.ndarray, *, n_resamples: int = 0, confidence: float = 0.95,
         seed: int = 0):
    sel = sel_inj | sel_null
    return detection_auc_by_session(columns["score"][sel].astype(float), sel_inj[sel], columns["concept"][sel],
                                    columns["session_id"][sel], n_resamples=n_resamples, confidence=confidence,
                                    seed=seed)


def _report_mask(columns) -> tuple[np.ndarray, bool]:
    """Rows of the reported split (everything but dev, or dev alone when the run was on dev) and whether the
    reported split is the choice split."""
    is_dev = columns["split"] == CHOICE_SPLIT
    if (~is_dev).any():
        return ~is_dev, False
    return is_dev, True


def headline_concepts(columns, rows: np.ndarray | None = None) -> dict:
    """Which concepts the headline keeps (:data:`CONCEPT_RULE`), from ``rows`` at the default site (default: the
    reported split's): ``included``, ``not_separable`` (cosine ≥ the flag), ``too_few_trials`` (concept ->
    injected trials, fewer than :data:`MIN_TRIALS`; counted at the strength with the most: each strength has the
    same trials)."""
    if rows is None:
        rows = _report_mask(columns)[0]
    at = rows & (columns["site_rank"] == 0)
    inj = at & (columns["condition"] == "injected")
    included, flagged, thin = [], [], {}
    for c in dict.fromkeys(columns["concept"][at].tolist()):
        sel = at & (columns["concept"] == c)
        n = max((int((inj & sel & (columns["strength"] == s)).sum()) for s in STRENGTHS), default=0)
        if float(columns["cos_max"][sel][0]) >= COSINE_FLAG:
            flagged.append(c)
        elif n < MIN_TRIALS:
            thin[c] = n
        else:
            included.append(c)
    return {"included": included, "not_separable": flagged, "too_few_trials": thin, "min_trials": MIN_TRIALS,
            "rule": CONCEPT_RULE}


def _no_concepts(kept: dict) -> str:
    """Why no concept is left for the headline."""
    parts = []
    if kept["not_separable"]:
        parts.append(f"{len(kept['not_separable'])} not separable (cosine ≥ {COSINE_FLAG}: "
                     f"{', '.join(kept['not_separable'])})")
    if kept["too_few_trials"]:
        parts.append(f"{len(kept['too_few_trials'])} with fewer than {MIN_TRIALS} injected trials ("
                     + ", ".join(f"{c}: {n}" for c, n in kept["too_few_trials"].items()) + ")")
    return "no concept left for the headline: " + ("; ".join(parts) or "no concept has trials")


def _in(columns, concepts) -> np.ndarray:
    return np.isin(columns["concept"], np.asarray(list(concepts), dtype=object))


def headline_masks(columns, null: str, strength: float, rows: np.ndarray, concepts) -> tuple[np.ndarray, np.ndarray]:
    """(injected, null) masks of the headline figure: ``rows`` at the default site, ``concepts`` only, injected at
    ``strength`` against ``null`` (zero; or random at the same strength)."""
    at = rows & (columns["site_rank"] == 0) & _in(columns, concepts)
    inj = at & (columns["condition"] == "injected") & (columns["strength"] == strength)
    nm = at & (columns["condition"] == null)
    if null == "random":
        nm &= columns["strength"] == strength
    return inj, nm


def _dev_aucs(parts: list) -> dict[str, float]:
    """The dev-split AUC against the zero null at each strength, every part's (columns, concepts) trials pooled with
    each part's concept its own stratum; rounded to 12 digits, so that the order of the parts cannot decide a tie."""
    aucs: dict[str, float] = {}
    for s in STRENGTHS:
        score, pos, strata, sess = [], [], [], []
        for k, (cols, concepts) in enumerate(parts):
            inj, nm = headline_masks(cols, "zero", s, cols["split"] == CHOICE_SPLIT, concepts)
            sel = inj | nm
            score.append(cols["score"][sel].astype(float))
            pos.append(inj[sel])
            strata.append(np.array([f"{k}|{c}" for c in cols["concept"][sel]], dtype=object))
            sess.append(cols["session_id"][sel])
        try:
            aucs[f"{s:g}"] = round(detection_auc_by_session(np.concatenate(score), np.concatenate(pos),
                                                            np.concatenate(strata), np.concatenate(sess),
                                                            n_resamples=0).value, 12)
        except ValueError:
            continue
    return aucs


def _choice(aucs: dict[str, float], rule: str) -> dict:
    if not aucs:
        return {"strength": DEFAULT_STRENGTH, "split": None,
                "rule": f"no dev-split trials of a concept the headline keeps (separable, at least {MIN_TRIALS} "
                        f"injected): fixed a priori at {DEFAULT_STRENGTH:g}", "dev_auc_zero": {}}
    best = max(STRENGTHS, key=lambda s: (aucs.get(f"{s:g}", -1.0), -s))
    return {"strength": best, "split": CHOICE_SPLIT, "rule": rule, "dev_auc_zero": aucs}


def _dev_concepts(columns) -> list:
    return headline_concepts(columns, columns["split"] == CHOICE_SPLIT)["included"]


def choose_strength(columns) -> dict:
    """The headline strength (:data:`CHOICE_RULE`), from the dev split's trials alone (never the evaluated split's)."""
    return _choice(_dev_aucs([(columns, _dev_concepts(columns))]), CHOICE_RULE)


def choose_shared_strength(*runs) -> dict:
    """One strength for several runs' figures (:data:`SHARED_RULE`): their dev trials pooled, each run's concept a
    stratum; the same whatever the runs' order, and never reads an eval trial or the figures compared."""
    parts = sorted(((cols, _dev_concepts(cols)) for cols in runs),
                   key=lambda p: (len(p[0]["score"]), float(np.sum(p[0]["score"]))))
    return _choice(_dev_aucs(parts), SHARED_RULE)


#: How proxy-tier Track 2 figures are labelled in every output.
PROXY_GROUNDING = "proxy-tier grounding"
PROXY_GROUNDING_NOTE = ("spec §3 defines Track 2 on native models only (activation-level access to an r_t "
                        "pathway); proxy-tier grounding adds the concept's vector to a causal LM's residual stream and "
                        "reads the slot it elicits: this toolkit's extension, reported apart from native-tier grounding "
                        "and never compared with it")


def _null(metric: Metric) -> str:
    return "random" if metric.key == "ground-rand" else "zero"


class Track2:
    """Track 2 on the registry: detection AUC of concept injection, against a zero and a random null."""

    id = "2"
    name = "grounding"
    section = "TRB spec §3, Track 2 (grounding by concept injection)"
    needs: tuple[type, ...] = (ActivationAccess,)
    metrics = (
        Metric("ground", "2", "grounding", "Track 2 — grounding (detection AUC vs no injection)",
               "AUC of the probability r gives concept c with c's direction injected into z vs with nothing injected, "
               "per concept then averaged; default site, strength chosen on dev", headline=True, bounds=(0.0, 1.0),
               chance=0.5, needs=(ActivationAccess,)),
        Metric("ground-rand", "2", "grounding", "Track 2 — grounding (detection AUC vs random direction)",
               "the same AUC against injecting a random direction of the same norm (seeded) at the same strength",
               headline=False, bounds=(0.0, 1.0), chance=0.5, needs=(ActivationAccess,), main=True),
    )
    columns = (
        # a common column, declared so the report hands it to aggregate(): the strength is chosen on dev trials
        Column("split", pa.string(), "VARCHAR", "the release split"),
        Column("condition", pa.string(), "VARCHAR", "Track 2: the trial (injected, zero or random); Tracks 4 and 5: "
               "the rollout condition of the episode or the CG-2 loop kind"),
        Column("concept", pa.string(), "VARCHAR", "Track 2: the concept injected and read (slot=value)"),
        Column("site", pa.string(), "VARCHAR", "Track 2: the activation site injected at"),
        Column("site_rank", pa.int32(), "INTEGER", "Track 2: the site's place in the adapter's list (0: default)"),
        Column("strength", pa.float64(), "DOUBLE", "Track 2: the injection strength (0 for the zero null)"),
        Column("cos_max", pa.float64(), "DOUBLE", "Track 2: the concept direction's largest cosine with another's"),
    )

    def unavailable(self, bound) -> str | None:
        """Why this adapter, though it declares activation access, cannot run Track 2 now (None: it can)."""
        access = bound.get(ActivationAccess)
        if access is not None and access.concept_directions() is None:
            return "no concept directions: make them from the train split with `trb concepts MODEL --release DIR`"
        return None

    #: Its part of the report: the pass bar's gap, the ``track2`` block, its sections and its figures' tier labels.
    report = "trb.tracks.track2_report:SECTION"

    #: Options a run may set (``RunSpec(track_options={"2": {...}})``, or ``trb run``'s flags), recorded with the run.
    options = (
        Option("max_contexts", "The trial budget: at most N step contexts of each split (eval and dev), a fixed "
                               "hash sample, the same for every model; recorded with the run (default: sized from "
                               "--grounding-width).", type=int, minimum=1, flag="--grounding-contexts", metavar="N"),
        Option("target_width", f"The default trial budget: enough contexts of each split for the detection AUC's "
                               f"95% CI to be at most W wide (Hanley-McNeil at AUC 0.5; default {TARGET_WIDTH:g}); "
                               "--grounding-contexts overrides it.", type=float, minimum=0.001,
               flag="--grounding-width", metavar="W"),
        Option("max_concepts", "The trial budget: inject at most K concepts of each slot into each context, a "
                               "fixed hash sample; recorded with the run (default: every concept).", type=int,
               minimum=1, flag="--grounding-concepts", metavar="K"),
    )

    def count(self, release: Release, split: str, max_contexts: int | None = None,
              target_width: float | None = None, **_) -> int:
        max_contexts, _ = _budget(max_contexts, target_width)
        splits = [split] + ([CHOICE_SPLIT] if split != CHOICE_SPLIT and CHOICE_SPLIT in release.splits else [])
        return sum(min(release.count("steps", s), max_contexts or release.count("steps", s)) for s in splits)

    def items(self, release: Release, split: str, max_contexts: int | None = None,
              target_width: float | None = None, **_) -> Iterator[Track2Item]:
        return track2_items(release, split, max_contexts, target_width=target_width)

    #: Summary fields of the whole run, the same in every part (:func:`trb.parts.merge_summaries`).
    summary_constant = ("sites", "strengths", "max_concepts", "concepts", "identifiability", "directions", "budget")

    def score(self, adapter, items, timer=None, progress=None, max_concepts: int | None = None,
              max_contexts: int | None = None, target_width: float | None = None, **_):
        return score_track2(adapter, items, timer, progress, max_concepts=max_concepts,
                            budget=_budget(max_contexts, target_width)[1])

    def aggregate(self, metric: Metric, columns, *, n_resamples: int, confidence: float, seed: int):
        if metric.key not in ("ground", "ground-rand"):
            raise KeyError(metric.key)
        strength = choose_strength(columns)["strength"]
        report, _ = _report_mask(columns)
        kept = headline_concepts(columns, report)
        if not kept["included"]:
            raise ValueError(_no_concepts(kept))
        inj, null = headline_masks(columns, _null(metric), strength, report, kept["included"])
        return _auc(columns, inj, null, n_resamples=n_resamples, confidence=confidence, seed=seed)

    #: Rows of this split choose the headline strength and are not scored (Track 6 keeps them out of the contexts).
    choice_split = CHOICE_SPLIT

    def weighted_figure(self, metric: Metric, columns, codes: np.ndarray, k: int, shared=None):
        """The figure as a function of session weights (R, k) (``codes``: each row's session), for Track 6's
        resampling: the strength is chosen once, on ``shared`` (the dev trials; else the columns' own dev rows),
        and each replicate's AUC weighs pairs as :func:`trb.grounding.resampled_aucs` does (a pair within a
        session once per copy). Rows of the choice split in ``columns`` take no part in the AUC."""
        from trb.grounding import resampled_aucs

        if metric.key not in ("ground", "ground-rand"):
            raise KeyError(metric.key)
        strength = choose_strength(shared if shared is not None else columns)["strength"]
        rows = columns["split"] != CHOICE_SPLIT
        inj, null = headline_masks(columns, _null(metric), strength, rows, headline_concepts(columns, rows)["included"])
        sel = inj | null
        score, pos = np.asarray(columns["score"], dtype=float)[sel], inj[sel]
        concept, code = np.asarray(columns["concept"], dtype=object)[sel], np.asarray(codes)[sel]
        groups = [np.flatnonzero(concept == c) for c in dict.fromkeys(concept.tolist())]
        groups = [g for g in groups if pos[g].any() and (~pos[g]).any()]

        def stat(w: np.ndarray) -> np.ndarray:
            if not groups:
                return np.full(w.shape[0], np.nan)
            per = np.stack([resampled_aucs(score[g], pos[g], code[g], w) for g in groups], axis=1)
            with warnings.catch_warnings():  # a replicate with no concept left: nanmean of nothing
                warnings.simplefilter("ignore", RuntimeWarning)
                return np.nanmean(per, axis=1)
        return stat

    def describe(self, metric: Metric, columns) -> dict:
        """The strength choice (dev), the sweep by site and strength and the per-concept AUCs (reported split,
        point values), and the identifiability flags."""
        choice = choose_strength(columns)
        report, same = _report_mask(columns)
        strength = choice["strength"]
        kept = headline_concepts(columns, report)
        sweep: dict = {}  # over the headline's concepts (every concept where it keeps none)
        over = report & _in(columns, kept["included"]) if kept["included"] else report
        for site in dict.fromkeys(columns["site"][report].tolist()):
            at = over & (columns["site"] == site)
            sweep[site] = {}
            for s in STRENGTHS:
                sweep[site][f"{s:g}"] = _null_aucs(columns, at, s)
        at = report & (columns["site_rank"] == 0)
        per: dict = {}
        for c in dict.fromkeys(columns["concept"][at].tolist()):
            sel = at & (columns["concept"] == c)
            fig = _null_aucs(columns, sel, strength)
            cos = float(columns["cos_max"][sel][0])
            fig["cos_max"] = cos
            fig["separable"] = cos < COSINE_FLAG
            fig["n_injected"] = int((sel & (columns["condition"] == "injected") & (columns["strength"] == strength)
                                     ).sum())
            fig["in_headline"] = c in kept["included"]
            per[c] = fig
        kept["all_concepts"] = _null_aucs(columns, at, strength)  # the AUC over every concept, beside the headline
        flagged = kept["not_separable"]
        flags = []
        if flagged:
            flags.append(f"not identifiable: {len(flagged)} of {len(per)} concepts have a direction with cosine ≥ "
                         f"{COSINE_FLAG} to another concept's ({', '.join(flagged)}); left out of the headline: their "
                         "AUC is not evidence of grounding")
        if kept["too_few_trials"]:
            flags.append(f"too few trials: {len(kept['too_few_trials'])} of {len(per)} concepts have fewer than "
                         f"{MIN_TRIALS} injected trials (" + ", ".join(f"{c}: {n}" for c, n in
                                                              kept["too_few_trials"].items())
                         + "); left out of the headline")
        if same:
            flags.append("the strength was chosen on the dev split and the figure is on the dev split too")
        elif choice["split"] is None:
            flags.append(choice["rule"])
        out = {"strength": choice, "sweep": sweep, "per_concept": per, "cosine_threshold": COSINE_FLAG,
               "concepts": kept}
        if flags:
            out["flags"] = flags
        return out


#: The entry point ``trb.tracks: 2`` (pyproject.toml): registered by the registry when it loads it.
TRACK = Track2()
