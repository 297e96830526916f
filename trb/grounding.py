"""Concept directions for Track 2 (grounding by concept injection), their storage, and the detection AUC.

A **concept** is one value of one r slot: a goal cell (``goal=G3``) or a planned action
(``planned_next=up``). Its **direction** at an activation site is learned from the
release's **train split only**: the mean z_t of the train steps whose *recorded* slot
has that value, minus the mean z_t of the train steps whose recorded slot has another
value. A value needs at least :data:`MIN_COUNT` steps on each side. Learning goes
through the tier-neutral capability :class:`~trb.adapters.capabilities.ActivationAccess`
(``read_activations``), so a proxy model can learn its own the same way.

A native checkpoint keeps its directions beside its weights, in ``<model>/concepts/``:
``directions.safetensors`` (one float64 vector per site and concept) and
``concepts.json`` (the record: weights' sha256, release SHA and version, split, counts
per concept, sites and widths, method; nothing time-dependent, so the same checkpoint
and release give byte-identical files). :func:`write_concepts` (``trb concepts``)
builds them in a temporary directory and renames it into place.

Identifiability: directions whose pairwise cosine similarity is at least
:data:`COSINE_FLAG` are flagged as not separable (an injection of one then reads as
the other, so an AUC there is not evidence that the slot is grounded).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from hashlib import blake2b
from pathlib import Path

import numpy as np

from toolkit import strict_json
from trb.errors import AdapterError, UsageError
from trb.stats import Estimate, _session_index

__all__ = [
    "CONCEPT_SLOTS",
    "MIN_COUNT",
    "COSINE_FLAG",
    "FORMAT",
    "FORMAT_VERSION",
    "ConceptDirections",
    "learn_concepts",
    "learn_concepts_from",
    "save_concepts",
    "load_concepts",
    "write_concepts",
    "detection_auc_by_session",
    "resampled_aucs",
]

#: The slots whose values are concepts.
CONCEPT_SLOTS = ("goal", "planned_next")
#: Fewest train steps with the value, and with another value, for a concept to get a direction.
MIN_COUNT = 5
#: Pairwise cosine at or above which two concept directions are flagged as not separable.
COSINE_FLAG = 0.8
FORMAT = "trb-concept-directions"
FORMAT_VERSION = 1
#: The directory of a checkpoint that holds its concept directions.
CONCEPTS_DIR = "concepts"
METHOD = ("mean difference: mean z_t of the train steps whose recorded slot has the value minus the mean z_t of "
          "the train steps whose recorded slot has another value")


@dataclass
class ConceptDirections:
    """Concept directions by (site, slot, value), with the record of how they were made."""

    record: dict
    vectors: dict[tuple[str, str, str], np.ndarray]

    def sites(self) -> list[str]:
        return list(self.record["sites"])

    def concepts(self, site: str, slot: str) -> list[tuple[str, np.ndarray]]:
        """(value, direction) of ``slot`` at ``site``, in the record's order."""
        return [(c["value"], self.vectors[(site, slot, c["value"])]) for c in self.record["concepts"]
                if c["slot"] == slot and (site, slot, c["value"]) in self.vectors]

    def cosines(self, site: str, slot: str) -> tuple[list[str], np.ndarray]:
        """The values of ``slot`` and the pairwise cosine similarity of their directions at ``site``."""
        cs = self.concepts(site, slot)
        if not cs:
            return [], np.zeros((0, 0))
        m = np.stack([v for _, v in cs])
        norms = np.linalg.norm(m, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = (m @ m.T) / np.outer(norms, norms)
        return [v for v, _ in cs], np.nan_to_num(cos, nan=0.0)

    def identifiability(self, site: str, slot: str, threshold: float = COSINE_FLAG) -> dict:
        """Per value, its largest cosine with another value's direction; the pairs at or above ``threshold``."""
        values, cos = self.cosines(site, slot)
        off = cos - 2 * np.eye(len(values))  # exclude the diagonal from the max
        max_cos = {v: (float(off[i].max()) if len(values) > 1 else 0.0) for i, v in enumerate(values)}
        pairs = [[values[i], values[j], float(cos[i, j])] for i in range(len(values))
                 for j in range(i + 1, len(values)) if cos[i, j] >= threshold]
        return {"threshold": threshold, "max_cos": max_cos, "not_separable": pairs,
                "flagged": sorted({p[0] for p in pairs} | {p[1] for p in pairs})}


def _recorded(r: dict | None, slot: str) -> str | None:
    v = (r or {}).get(slot)
    return v if isinstance(v, str) and v else None


def learn_concepts(access, release, *, split: str = "train", sites: Sequence[str] | None = None,
                   min_count: int = MIN_COUNT, model_sha256: str | None = None,
                   max_steps: int | None = None) -> ConceptDirections:
    """Learn concept directions through ``access`` (an ActivationAccess adapter) from ``split`` of ``release``.

    Args:
        access: the adapter (its ``read_activations`` and ``activation_sites``).
        release: a :class:`trb.releases.Release` or a release directory.
        split: the split to learn from: ``train`` (anything else is refused; the eval split is never fitted on).
        sites: the sites (default: every site the adapter has).
        model_sha256: the weights the directions belong to (recorded; default: ``access.spec()["sha256"]``).
        max_steps: learn from at most this many of the split's steps with a recorded slot: a fixed sample,
            the steps whose ``session_id/t`` has the smallest :data:`STEP_SAMPLE` hash, the same for every
            model (for a large model, whose z costs a forward pass over the step's whole prompt). The
            record says so (``sample``). Default: every step.
    Raises:
        UsageError: a split other than train, no concept with enough steps, bad ``min_count``.
        ReleaseError: the release cannot be read.
        AdapterError: the adapter fails.
    """
    from trb.releases import Release

    if split != "train":
        raise UsageError(f"concept directions are learned from the train split only, not {split!r}")
    if min_count < 1:
        raise UsageError(f"min_count must be at least 1, got {min_count}")
    if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1):
        raise UsageError(f"max_steps must be a positive integer, got {max_steps!r}")
    own = not isinstance(release, Release)
    rel = Release(release) if own else release
    try:
        contexts, recorded, ids = [], [], []
        for sess in rel.sessions(split=split):
            for t in range(len(sess.steps)):
                r = sess.recorded_r(t)
                if any(_recorded(r, s) for s in CONCEPT_SLOTS):
                    contexts.append(sess.context(t))
                    recorded.append({s: _recorded(r, s) for s in CONCEPT_SLOTS})
                    ids.append(f"{sess.session_id}/{t}")
        release_rec = {"sha": rel.sha, "version": rel.version}
    finally:
        if own:
            rel.close()
    sample = None
    if max_steps is not None:
        sample = {"max_steps": max_steps, "of": len(contexts), "rule": STEP_SAMPLE}
        if len(contexts) > max_steps:  # the steps with the smallest hash, kept in release order
            keep = set(sorted(range(len(ids)), key=lambda i: _step_key(ids[i]))[:max_steps])
            contexts = [c for i, c in enumerate(contexts) if i in keep]
            recorded = [r for i, r in enumerate(recorded) if i in keep]
    dirs = learn_concepts_from(access, contexts, recorded, release=release_rec, split=split, sites=sites,
                               min_count=min_count, model_sha256=model_sha256)
    if sample is not None:
        dirs.record["sample"] = sample
    return dirs


#: How ``max_steps`` samples the train steps: blake2b of this prefix and ``session_id/t``, smallest first.
STEP_SAMPLE = "blake2b('trb-concepts-sample:' + session_id + '/' + t), smallest first"


def _step_key(step_id: str) -> bytes:
    return blake2b(f"trb-concepts-sample:{step_id}".encode(), digest_size=16).digest()


def learn_concepts_from(access, contexts: Sequence, recorded: Sequence[dict], *, release: dict, split: str = "train",
                        sites: Sequence[str] | None = None, min_count: int = MIN_COUNT,
                        model_sha256: str | None = None) -> ConceptDirections:
    """:func:`learn_concepts` on given step contexts and their recorded slots (``{slot: value or None}``), e.g. a
    world built in memory (the calibration's). ``release`` is recorded as where they came from."""
    if split != "train":
        raise UsageError(f"concept directions are learned from the train split only, not {split!r}")
    if len(contexts) != len(recorded):
        raise UsageError(f"{len(contexts)} contexts but {len(recorded)} recorded slots")
    if min_count < 1:
        raise UsageError(f"min_count must be at least 1, got {min_count}")
    release_rec = release
    all_sites = tuple(access.activation_sites())
    sites = list(all_sites if sites is None else sites)
    for s in sites:
        if s not in all_sites:
            raise UsageError(f"unknown activation site {s!r} (sites: {', '.join(all_sites)})")
    concepts: list[dict] = []
    for slot in CONCEPT_SLOTS:
        vals = [rec[slot] for rec in recorded]
        n_present = sum(v is not None for v in vals)
        counts: dict[str, int] = {}
        for v in vals:
            if v is not None:
                counts[v] = counts.get(v, 0) + 1
        for value in sorted(counts, key=lambda v: (-counts[v], v)):
            if counts[value] >= min_count and n_present - counts[value] >= min_count:
                concepts.append({"slot": slot, "value": value, "n_with": counts[value],
                                 "n_other": n_present - counts[value]})
    if not concepts:
        raise UsageError(f"split {split!r} of release {release_rec['version']} has no slot value recorded on at least "
                         f"{min_count} steps (and another value on {min_count}): no concept direction can be learned")
    vectors: dict[tuple[str, str, str], np.ndarray] = {}
    dims: dict[str, int] = {}
    for site in sites:
        z = np.asarray(access.read_activations(contexts, site), dtype=np.float64)
        if z.ndim != 2 or z.shape[0] != len(contexts):
            raise AdapterError(f"read_activations returned shape {z.shape} for {len(contexts)} contexts")
        dims[site] = int(z.shape[1])
        for c in concepts:
            vals = np.array([rec[c["slot"]] for rec in recorded], dtype=object)
            with_v = vals == c["value"]
            other = (vals != c["value"]) & np.array([v is not None for v in vals])
            vectors[(site, c["slot"], c["value"])] = z[with_v].mean(0) - z[other].mean(0)
    for c in concepts:
        c["norm"] = {site: float(np.linalg.norm(vectors[(site, c["slot"], c["value"])])) for site in sites}
    if model_sha256 is None:
        model_sha256 = (access.spec() or {}).get("sha256")
    z = access.z_signature() if callable(getattr(access, "z_signature", None)) else None
    record = {"format": FORMAT, "format_version": FORMAT_VERSION, "model_sha256": model_sha256,
              **({"z": z} if z is not None else {}),
              "release": release_rec, "split": split, "method": METHOD, "min_count": min_count,
              "n_steps": len(contexts), "sites": {s: {"dim": dims[s]} for s in sites}, "concepts": concepts}
    return ConceptDirections(record, vectors)


def _key(site: str, slot: str, i: int) -> str:
    return f"{site}/{slot}/{i}"


def save_concepts(dirs: ConceptDirections, model_dir: str | os.PathLike) -> Path:
    """Write ``dirs`` to ``model_dir/concepts`` atomically: built in a temporary directory beside it, then renamed
    into place (an older set is replaced only once the new one is complete). Returns the directory."""
    from safetensors.numpy import save_file

    model_dir = Path(model_dir)
    final = model_dir / CONCEPTS_DIR
    part = model_dir / f".{CONCEPTS_DIR}.part-{os.getpid()}"
    old = model_dir / f".{CONCEPTS_DIR}.old-{os.getpid()}"
    shutil.rmtree(part, ignore_errors=True)
    try:
        part.mkdir(parents=True)
        tensors = {}
        for i, c in enumerate(dirs.record["concepts"]):
            c["index"] = i
            for site in dirs.record["sites"]:
                tensors[_key(site, c["slot"], i)] = np.ascontiguousarray(dirs.vectors[(site, c["slot"], c["value"])],
                                                                         dtype=np.float64)
        save_file(tensors, str(part / "directions.safetensors"), metadata={"format": FORMAT})
        (part / "concepts.json").write_text(json.dumps(dirs.record, indent=2, ensure_ascii=False) + "\n",
                                            encoding="utf-8")
        if final.exists():
            os.replace(final, old)
        os.replace(part, final)
    finally:
        shutil.rmtree(part, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return final


def load_concepts(model_dir: str | os.PathLike, *, expect_sha256: str | None = None,
                  expect_z: dict | None = None) -> ConceptDirections | None:
    """The directions in ``model_dir/concepts``, or None when there are none.

    Raises:
        AdapterError: unreadable files, an unknown format, or directions made for other weights than
            ``expect_sha256`` or for another z than ``expect_z`` (the adapter's ``z_signature``, e.g. another
            prompt history); re-make them with ``trb concepts``.
    """
    d = Path(model_dir) / CONCEPTS_DIR
    if not d.is_dir():
        return None
    try:
        record = strict_json.loads((d / "concepts.json").read_bytes())
        from safetensors.numpy import load_file

        tensors = load_file(str(d / "directions.safetensors"))
    except Exception as e:  # OSError, JSON errors, safetensors' own error types
        raise AdapterError(f"{d}: cannot read the concept directions ({e}); re-make them with trb concepts") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT or record.get("format_version") != FORMAT_VERSION:
        raise AdapterError(f"{d}/concepts.json: not a {FORMAT} v{FORMAT_VERSION} record")
    if expect_sha256 is not None and record.get("model_sha256") != expect_sha256:
        raise AdapterError(f"{d}: the concept directions were made for weights {str(record.get('model_sha256'))[:12]}, "
                           f"not this checkpoint's {expect_sha256[:12]}; re-make them with trb concepts")
    if expect_z is not None and record.get("z") != expect_z:
        raise AdapterError(f"{d}: the concept directions were made for z = {record.get('z')}, not this adapter's "
                           f"{expect_z}; re-make them with trb concepts (with the same adapter options)")
    vectors = {}
    try:
        for c in record["concepts"]:
            for site in record["sites"]:
                vectors[(site, c["slot"], c["value"])] = tensors[_key(site, c["slot"], c["index"])]
    except KeyError as e:
        raise AdapterError(f"{d}: concepts.json and directions.safetensors do not fit together (no {e})") from None
    return ConceptDirections(record, vectors)


def write_concepts(model_dir: str | os.PathLike, release_dir, *, adapter: str = "native",
                   min_count: int = MIN_COUNT, max_steps: int | None = None, **options) -> dict:
    """(Re)write the concept directions of the model in ``model_dir`` from the train split of ``release_dir`` (a
    release directory, or an open :class:`~trb.releases.Release`, closed here), atomically. Returns the record.

    ``adapter``: ``native`` (a reference model: the release must be the one it was trained on) or ``proxy`` (a
    Hugging Face causal LM, ``options`` as :meth:`~trb.adapters.proxy.ProxyAdapter.load` takes them; a TRB LM
    baseline must be given the release it was trained on; a model trained elsewhere, e.g. SmolLM2, learns its
    directions from this release's train split, never from the split it is evaluated on). ``max_steps``: see
    :func:`learn_concepts`.

    Raises:
        AdapterError: no readable checkpoint in ``model_dir``.
        UsageError: ``release_dir`` is not the release the checkpoint was trained on, or has no concept; an
            unknown adapter kind.
        ReleaseError: the release cannot be read.
    """
    from trb.releases import Release

    rel = release_dir if isinstance(release_dir, Release) else None  # an open release is closed here, whatever happens
    try:
        if adapter == "native":
            from trb.adapters.native import NativeAdapter

            loaded = NativeAdapter.load(model_dir, **options)
            trained = (loaded.config.get("release") or {}).get("sha")
        elif adapter == "proxy":
            from trb.adapters.proxy import ProxyAdapter

            loaded = ProxyAdapter.load(model_dir, **options)
            baseline = Path(model_dir) / "trb-baseline.json"
            trained = ((strict_json.load(baseline).get("release") or {}).get("sha")
                       if baseline.is_file() else None)
        else:
            raise UsageError(f"concept directions are made through the native or the proxy adapter, not {adapter!r}")
        rel = rel or Release(release_dir)
        release_dir = rel.dir
        if trained and trained != rel.sha:
            raise UsageError(f"{model_dir} was trained on release {trained[:12]}, not {rel.sha[:12]} ({release_dir}): "
                             "concept directions come from the train split the checkpoint was fitted on")
        dirs = learn_concepts(loaded, rel, min_count=min_count, model_sha256=loaded.sha256, max_steps=max_steps)
    finally:
        if rel is not None:
            rel.close()
    save_concepts(dirs, model_dir)
    return dirs.record


# -- the detection AUC ---------------------------------------------------------------------------------


def _auc_parts(scores: np.ndarray, pos: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The Mann-Whitney numerator (ties 1/2) and denominator of ``scores`` for ``pos`` under each row of
    ``weights`` (R, n): sums over (positive, negative) pairs of the product of their weights."""
    order = np.argsort(scores, kind="stable")
    ranked = scores[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])  # each tie group's first trial
    w, p = weights[:, order], pos[order]
    pw = np.add.reduceat(w * p, starts, axis=1)  # (R, G) positive weight per tie group, scores ascending
    nw = np.add.reduceat(w * ~p, starts, axis=1)
    below = np.cumsum(nw, axis=1) - nw
    return np.sum(pw * (below + 0.5 * nw), axis=1), pw.sum(1) * nw.sum(1)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 1e-12, num / np.where(den > 1e-12, den, 1.0), np.nan)


def _auc_weighted(scores: np.ndarray, pos: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Mann-Whitney AUC (ties 1/2) of ``scores`` for ``pos`` under each row of ``weights`` (R, n); nan where a
    class has no weight."""
    return _ratio(*_auc_parts(scores, pos, weights))


def resampled_aucs(scores: np.ndarray, pos: np.ndarray, codes: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """The AUC of one stratum under each session resample: ``draws`` (R, k) counts how often each session was drawn,
    ``codes`` gives each trial's session (0..k-1). Nan where a class is not drawn.

    A pair of trials from two sessions i ≠ j weighs k_i·k_j; a pair within one session weighs k_i, once per copy
    of the session, not k_i² (a literal resample would also pair one copy's injected trials with another copy's
    null trials of the same steps, so on average it weighs within-session pairs about twice as much as the point
    estimate does, and a step's injected and null trials share a context: the intervals would sit above the
    point value). Every pair then weighs 1 in expectation, as in the point estimate.
    """
    num, den = _auc_parts(scores, pos, draws[:, codes])
    present = np.unique(codes)
    own = np.zeros((present.size, scores.size))
    own[np.searchsorted(present, codes), np.arange(scores.size)] = 1.0
    num_s, den_s = _auc_parts(scores, pos, own)  # per session: its within-session pairs, unweighted
    k = draws[:, present]
    extra = k * k - k
    return _ratio(num - extra @ num_s, den - extra @ den_s)


def detection_auc_by_session(scores: Sequence[float], injected: Sequence[bool], strata: Sequence, sessions: Sequence,
                             *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> Estimate:
    """Detection AUC of injected vs null trials: the Mann-Whitney AUC of ``scores`` for ``injected`` within each
    stratum (a concept), averaged over strata, with a session-bootstrap percentile CI.

    A resample draws sessions with replacement; a pair of trials weighs the product of their sessions' counts, a
    pair within one session its count (:func:`resampled_aucs`); a stratum without both kinds of trial in a
    resample is left out of that resample's mean, and a resample with no stratum left is skipped (``n_skipped``).

    Raises:
        ValueError: misaligned inputs, non-finite scores, or no stratum with both injected and null trials.
    """
    s = np.asarray(scores, dtype=float).reshape(-1)
    pos = np.asarray(injected, dtype=bool).reshape(-1)
    st = np.asarray(strata, dtype=object).reshape(-1)
    if not (s.size == pos.size == st.size):
        raise ValueError(f"scores ({s.size}), injected ({pos.size}) and strata ({st.size}) must align")
    if s.size == 0 or not np.all(np.isfinite(s)):
        raise ValueError("detection AUC needs finite scores")
    codes, k = _session_index(sessions, s.size)
    groups = [np.flatnonzero(st == v) for v in dict.fromkeys(st.tolist())]
    groups = [g for g in groups if pos[g].any() and (~pos[g]).any()]
    if not groups:
        raise ValueError("no concept has both injected and null trials")
    value = float(np.mean([_auc_weighted(s[g], pos[g], np.ones((1, g.size)))[0] for g in groups]))
    if k < 2 or n_resamples == 0:
        return Estimate(value, math.nan, math.nan, int(s.size), k)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(k, np.full(k, 1.0 / k), size=n_resamples).astype(float)  # (R, k) session counts
    per = np.stack([resampled_aucs(s[g], pos[g], codes[g], draws) for g in groups], axis=1)  # (R, strata)
    with warnings.catch_warnings():  # a resample with no stratum left: nanmean of nothing
        warnings.simplefilter("ignore", RuntimeWarning)
        dist = np.nanmean(per, axis=1)
    kept = dist[~np.isnan(dist)]
    if kept.size == 0:
        return Estimate(value, math.nan, math.nan, int(s.size), k, int(dist.size))
    alpha = (1 - confidence) / 2
    low, high = np.quantile(kept, [alpha, 1 - alpha])
    return Estimate(value, float(low), float(high), int(s.size), k, int(dist.size - kept.size))
