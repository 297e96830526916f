"""Training the native reference models (TRB spec §4, baselines 4 and 5) on a release's train split.

Both variants have the same architecture and size (:class:`trb.reference.model.ModelConfig`)
and start from the same weights for a seed; they differ only in the objective:

* ``ablation`` (baseline 4, "Trace-AI ablation"): L_trace + L_selfrep.
  L_trace is the NLL of the recorded action with the model acting *through its
  own r-head output* (e(r̂), straight-through), exactly as at inference; nothing
  asks the action head to respond to an r it did not produce itself.
  L_selfrep fits the r-head to the recorded r_t slots that are present:
  cross-entropy for planned_next (over the action space) and goal (over the goal
  vocabulary), binary cross-entropy for caused_by_self and confidence.
* ``full`` (baseline 5, "Trace-AI full"): the same plus λ·L_gov, the cross-entropy
  H(Φ(r'), p(· | c_t, do(r_t := r'))) over the train counterfactuals that carry
  a distribution Φ (KL(Φ ‖ p) up to a constant in the model), with λ =
  :attr:`TrainSettings.lambda_gov` = 10: at λ = 1 the factual L_trace (whose
  r̂ is often not the r that drove the action) outweighs it and the action head
  fits Φ poorly (held-out KL about 0.12 nats against 0.08 at λ = 10).

Each batch holds steps (for L_trace and L_selfrep) and, for ``full``, about as
many counterfactuals (for L_gov). About a tenth of the train sessions is held
out of the gradient to pick the epoch (early stopping on the same objective,
with the learning rate cut on a plateau); they are still train-split sessions.

Split discipline (spec §5): every row read comes from the ``train`` split, in
the SQL itself and checked again per row; the counts used are recorded in
config.json. Runs are seeded (``torch.manual_seed`` and a seeded generator for the
data order and dropout), and every op has a deterministic backward, so the same
release, seed and torch thread count give bit-identical weights.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F
from tqdm import tqdm

from schemas.release_format import R_PREFIX, decode_r
from toolkit import strict_json
from trb.errors import ReleaseError, UsageError
from trb.numerics import describe
from trb.reference.features import HISTORY, SHORT, context_features, stable_hash
from trb.reference.model import FORMAT, FORMAT_VERSION, ModelConfig, ReferenceModel, RItem, collate, save_checkpoint
from trb.releases import Release
from trb.subjects import trained_on

__all__ = ["VARIANTS", "TRB_VERSION", "FORMAT", "FORMAT_VERSION", "TrainSettings", "train_reference", "load_config"]

VARIANTS = ("ablation", "full")
#: The benchmark version the models are built for (spec header).
TRB_VERSION = "0.1"
#: Most goal strings the r-head can choose among.
MAX_GOALS = 512

_SPLIT = "train"


class TrainSettings:
    """Optimisation settings (the same for both variants)."""

    batch_size = 128
    lr = 2e-3
    lambda_gov = 10.0
    feature_dropout = 0.2  # per hashed context feature (inverted dropout): against memorising single steps
    slot_dropout = 0.1  # per slot, on the own-r path of L_trace: the action head must cope with absent slots
    #: Share of train sessions held out of the gradient to pick the epoch (early stopping); still train split.
    validation_fraction = 0.1
    #: Early stopping: stop after this many epochs without a better validation loss; keep the best epoch.
    patience = 5
    #: On a plateau of this many epochs, multiply the learning rate by ``lr_decay``.
    lr_patience = 2
    lr_decay = 0.3
    max_epochs = 40
    #: Without enough train sessions for a validation share, train this many epochs.
    fallback_epochs = 12
    min_validation_sessions = 8

    @classmethod
    def to_dict(cls) -> dict:
        return {k: getattr(cls, k) for k in (
            "batch_size", "lr", "lambda_gov", "feature_dropout", "slot_dropout", "validation_fraction", "patience",
            "lr_patience", "lr_decay", "max_epochs", "fallback_epochs", "min_validation_sessions")}


def _phi_vector(probs, space: tuple[str, ...]) -> list[float] | None:
    p = {d["action"]: float(d["p"]) for d in probs or ()}
    vec = [max(0.0, p.get(a, 0.0)) for a in space]
    total = sum(vec)
    if not total > 0:
        return None
    return [v / total for v in vec]


def _load_train(rel: Release, variant: str, cfg: ModelConfig):
    """Step items, counterfactual items (each with its session id), goal vocabulary and counts: train split only."""
    steps: list[tuple[RItem, int, str]] = []
    by_key: dict[tuple[str, int], tuple[np.ndarray, tuple[str, ...] | None, bool]] = {}
    goals: Counter = Counter()
    counts = Counter()
    sessions: list[str] = []
    for sess in rel.sessions(split=_SPLIT):
        if sess.split != _SPLIT:  # the SQL filters already; a leak here is a bug, not data
            raise ReleaseError(f"session {sess.session_id} of split {sess.split!r} reached training")
        sessions.append(sess.session_id)
        for t in range(len(sess.steps)):
            ctx = sess.context(t)
            r_t = sess.recorded_r(t)  # the target the r-head learns; never in the context itself
            counts["steps"] += 1
            ids = np.asarray(context_features(ctx, cfg.context_buckets), dtype=np.int64)
            space = ctx.action_space or None
            by_key[(sess.session_id, t)] = (ids, space, t > 0)
            action = sess.steps[t]["action"]
            pos = space.index(action) if space and action in space else -1
            if pos >= 0:
                counts["steps_acted"] += 1
            if r_t is not None:
                counts["steps_with_r"] += 1
                if isinstance(r_t.get("goal"), str):
                    goals[r_t["goal"]] += 1
            if pos >= 0 or r_t is not None:
                steps.append((RItem(ids, space, r_t, t > 0), pos, sess.session_id))
    counts["sessions"] = len(sessions)
    vocab = [g for g, _ in sorted(goals.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_GOALS]]

    cfs: list[tuple[RItem, list[float], str]] = []
    if "counterfactuals" in rel.configs:
        counts["counterfactuals"] = rel.rows(
            "SELECT count(*) AS n FROM counterfactuals WHERE split = ?", [_SPLIT])[0]["n"]
        rows = rel.rows(
            "SELECT c.cf_id, c.session_id, c.t, c.split, c.rp_goal, c.rp_planned_next, c.rp_caused_by_self, "
            "c.rp_confidence, c.rp_ext, c.phi_probs FROM counterfactuals c JOIN sessions s USING (session_id) "
            "WHERE c.split = ? AND s.split = ? AND c.phi_type = 'distribution' ORDER BY c.session_id, c.t, c.cf_id",
            [_SPLIT, _SPLIT])
        counts["counterfactuals_with_distribution"] = len(rows)
        if variant == "full":
            for row in rows:
                if row["split"] != _SPLIT:
                    raise ReleaseError(f"counterfactual {row['cf_id']} of split {row['split']!r} reached training")
                key = (row["session_id"], row["t"])
                if key not in by_key:
                    continue
                ids, space, has_hist = by_key[key]
                if not space:
                    continue
                phi = _phi_vector(row["phi_probs"], space)
                if phi is None:
                    continue
                r = decode_r(row, R_PREFIX["counterfactuals"])
                cfs.append((RItem(ids, space, r, has_hist), phi, row["session_id"]))
    return steps, cfs, vocab, counts, sessions


def _selfrep_loss(heads: dict, b, ns: int) -> torch.Tensor:
    """L_selfrep over the first ``ns`` rows of the batch (the steps; their r is the recorded r_t)."""
    terms = []
    rows = (b.plan_pos[:ns] >= 0).nonzero().squeeze(-1)
    if rows.numel():
        terms.append(F.cross_entropy(heads["plan"][rows], b.plan_pos[rows]))
    if heads["goal"] is not None:
        rows = (b.goal_vocab[:ns] >= 0).nonzero().squeeze(-1)
        if rows.numel():
            terms.append(F.cross_entropy(heads["goal"][rows], b.goal_vocab[rows]))
    for slot in ("cbs", "conf"):
        rows = (getattr(b, f"{slot}_present")[:ns] > 0).nonzero().squeeze(-1)
        if rows.numel():
            terms.append(F.binary_cross_entropy_with_logits(heads[slot][rows], getattr(b, slot)[rows]))
    return torch.stack(terms).sum() if terms else torch.zeros(())


def _losses(model: ReferenceModel, chunk: list, cchunk: list, goal_index: dict,
            gen: torch.Generator | None) -> dict[str, torch.Tensor]:
    """The losses of one batch: ``chunk`` steps (L_trace, L_selfrep), then ``cchunk`` counterfactuals (L_gov).

    With ``gen`` (training) feature and slot dropout are drawn from it; without, none.
    """
    S = TrainSettings
    ns, nc = len(chunk), len(cchunk)
    # one batch: the steps (r = the recorded r_t, targets of L_selfrep) then the counterfactuals (r = r')
    b = collate([c[0] for c in chunk] + [c[0] for c in cchunk], model.cfg, goal_index)
    weights = None
    if gen is not None and S.feature_dropout:
        weights = (torch.rand(b.ctx_ids.shape, generator=gen) >= S.feature_dropout).float() / (1 - S.feature_dropout)
    h = model.encode(b, weights)
    acts, goals = model.strings(b)
    space_emb = model.space_embeddings(acts, b)
    heads = model.r_head(h, space_emb, b)
    out = {"selfrep": _selfrep_loss(heads, b, ns)}
    # L_trace: act through the r-head's own output, as at inference
    keep = (torch.rand((b.size, 4), generator=gen) >= S.slot_dropout).float() if gen is not None else None
    e_r, match = model.e_of_own_r(heads, space_emb, b, keep)
    if nc:  # L_gov rows act through e(r'): do(r_t := r')
        e_cf, match_cf = model.e_of_given_r(b, acts, goals)
        is_cf = (torch.arange(b.size) >= ns).unsqueeze(-1)
        e_r = torch.where(is_cf, e_cf, e_r)
        match = torch.where(is_cf, match_cf, match)
    logp = torch.log_softmax(model.action_logits(h, e_r, space_emb, match, b), dim=-1)
    target = torch.tensor([c[1] for c in chunk], dtype=torch.long)
    rows = (target >= 0).nonzero().squeeze(-1)
    out["trace"] = -logp[rows].gather(1, target[rows].unsqueeze(1)).mean() if rows.numel() else torch.zeros(())
    if nc:
        width = b.space_mask.shape[1]
        phi = torch.tensor([c[1] + [0.0] * (width - len(c[1])) for c in cchunk])
        out["gov"] = -(phi * logp[ns:]).sum(-1).mean()
        out["gov_kl"] = (out["gov"] + (phi * phi.clamp_min(1e-12).log()).sum(-1).mean()).detach()
    out["loss"] = out["trace"] + out["selfrep"] + (S.lambda_gov * out["gov"] if nc else 0.0)
    return out


def _split_validation(sessions: list[str]) -> set[str]:
    """A fixed share of the train sessions (by a stable hash of the id), held out of the gradient."""
    S = TrainSettings
    n_val = math.ceil(S.validation_fraction * len(sessions))
    if n_val < S.min_validation_sessions or len(sessions) - n_val < S.min_validation_sessions:
        return set()
    return set(sorted(sessions, key=lambda sid: stable_hash("validation:" + sid))[:n_val])


@torch.no_grad()
def _validate(model: ReferenceModel, steps: list, cfs: list, goal_index: dict) -> dict[str, float]:
    model.eval()
    S = TrainSettings
    n_batches = math.ceil(len(steps) / S.batch_size)
    cf_batch = math.ceil(len(cfs) / n_batches) if cfs else 0
    sums = Counter()
    for k in range(n_batches):
        chunk = steps[k * S.batch_size:(k + 1) * S.batch_size]
        cchunk = cfs[k * cf_batch:(k + 1) * cf_batch] if cf_batch else []
        out = _losses(model, chunk, cchunk, goal_index, None)
        sums["loss"] += float(out["trace"] + out["selfrep"]) * len(chunk)
        sums["trace"] += float(out["trace"]) * len(chunk)
        sums["n"] += len(chunk)
        if cchunk:
            sums["gov"] += float(out["gov"]) * len(cchunk)
            sums["gov_kl"] += float(out["gov_kl"]) * len(cchunk)
            sums["n_cf"] += len(cchunk)
    model.train()
    rec = {"loss": sums["loss"] / sums["n"], "trace_nll": sums["trace"] / sums["n"]}
    if sums["n_cf"]:
        rec["gov_kl"] = sums["gov_kl"] / sums["n_cf"]
        rec["loss"] += TrainSettings.lambda_gov * sums["gov"] / sums["n_cf"]
    return rec


def train_reference(release_dir: str | os.PathLike | Release, variant: str, out_dir: str | os.PathLike, *,
                    seed: int = 0, epochs: int | None = None, progress: bool = True) -> dict:
    """Train a reference model on the train split of ``release_dir`` and save it to ``out_dir``.

    ``release_dir`` is a release directory (checked against its manifest when opened) or an open
    :class:`~trb.releases.Release` (closed here).

    About a tenth of the train sessions (chosen by a stable hash of the session id,
    the same for every seed and variant) are held out of the gradient as a
    validation share: with ``epochs=None`` training stops when its loss has not
    improved for :attr:`TrainSettings.patience` epochs and keeps the best epoch's
    weights; with ``epochs=N`` it runs exactly N epochs and keeps the last.

    Writes ``out_dir/model.safetensors``, ``out_dir/config.json`` (architecture,
    feature hashing sizes, variant, seed, the release's SHA and version, the TRB
    version, and the training record: losses per epoch, train items used, wall time), and
    the Track 2 concept directions learned on the same train split, ``out_dir/concepts/``
    (:func:`trb.grounding.write_concepts`; none when no slot value is recorded often enough).

    Returns:
        The contents of config.json, plus ``path`` and ``sha256`` of the weights.
    Raises:
        UsageError: unknown variant, bad ``epochs``, or nothing to train on (e.g.
            ``full`` without train counterfactuals that carry a distribution Φ).
        ReleaseError: the release cannot be read.
    """
    if variant not in VARIANTS:
        raise UsageError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    if epochs is not None and epochs < 1:
        raise UsageError(f"epochs must be at least 1, got {epochs}")
    started = time.perf_counter()
    rel = release_dir if isinstance(release_dir, Release) else Release(release_dir)
    release_dir, checked = rel.dir, rel.check is not None
    try:
        cfg = ModelConfig()
        steps, cfs, vocab, counts, sessions = _load_train(rel, variant, cfg)
        release = {"sha": rel.sha, "version": rel.version, "kind": rel.kind, "smoke_test": rel.smoke_test}
        subjects = trained_on(rel, _SPLIT)
    finally:
        rel.close()
    if not any(pos >= 0 for _, pos, _ in steps):
        raise UsageError(f"{release_dir}: the train split has no step with a discrete action to train on")
    if variant == "full" and not cfs:
        raise UsageError(f"{release_dir}: variant 'full' needs train counterfactuals with a distribution Φ; "
                         "the train split has none")
    cfg.goal_vocab = vocab
    val_sessions = _split_validation(sessions)
    fit_steps = [s for s in steps if s[2] not in val_sessions]
    fit_cfs = [c for c in cfs if c[2] not in val_sessions]
    val_steps = [s for s in steps if s[2] in val_sessions]
    val_cfs = [c for c in cfs if c[2] in val_sessions]
    early_stopping = epochs is None and bool(val_steps)
    max_epochs = epochs if epochs is not None else (TrainSettings.max_epochs if early_stopping
                                                    else TrainSettings.fallback_epochs)

    S = TrainSettings
    n_batches = math.ceil(len(fit_steps) / S.batch_size)
    cf_batch = math.ceil(len(fit_cfs) / n_batches) if fit_cfs else 0
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = ReferenceModel(cfg)
    goal_index = {g: i for i, g in enumerate(vocab)}
    sparse = [model.ctx_emb.weight]
    dense = [p for n, p in model.named_parameters() if n != "ctx_emb.weight"]
    opts = [torch.optim.SparseAdam(sparse, lr=S.lr), torch.optim.Adam(dense, lr=S.lr)]

    history: list[dict] = []
    best = (math.inf, 0, None)  # validation loss, epoch, state
    bar = tqdm(total=max_epochs * n_batches, desc=f"training {variant}", unit="batch", file=sys.stderr,
               disable=not progress, leave=False)
    model.train()
    try:
        for epoch in range(1, max_epochs + 1):
            order = torch.randperm(len(fit_steps), generator=gen).tolist()
            cf_order = torch.randperm(len(fit_cfs), generator=gen).tolist() if fit_cfs else []
            sums = Counter()
            for k in range(n_batches):
                chunk = [fit_steps[i] for i in order[k * S.batch_size:(k + 1) * S.batch_size]]
                cchunk = [fit_cfs[i] for i in cf_order[k * cf_batch:(k + 1) * cf_batch]] if cf_batch else []
                out = _losses(model, chunk, cchunk, goal_index, gen)
                for o in opts:
                    o.zero_grad(set_to_none=True)
                out["loss"].backward()
                for o in opts:
                    o.step()
                sums["trace"] += float(out["trace"].detach()) * len(chunk)
                sums["selfrep"] += float(out["selfrep"].detach()) * len(chunk)
                sums["n"] += len(chunk)
                if cchunk:
                    sums["gov_kl"] += float(out["gov_kl"]) * len(cchunk)
                    sums["n_cf"] += len(cchunk)
                bar.update(1)
            rec = {"epoch": epoch, "trace_nll": sums["trace"] / sums["n"], "selfrep": sums["selfrep"] / sums["n"]}
            if sums["n_cf"]:
                rec["gov_kl"] = sums["gov_kl"] / sums["n_cf"]
            if val_steps:
                rec["validation"] = _validate(model, val_steps, val_cfs, goal_index)
            history.append(rec)
            bar.set_postfix({k: round(v, 3) for k, v in rec.items() if isinstance(v, float)})
            if early_stopping:
                if rec["validation"]["loss"] < best[0]:
                    best = (rec["validation"]["loss"], epoch,
                            {k: v.detach().clone() for k, v in model.state_dict().items()})
                elif epoch - best[1] >= S.patience:
                    break
                elif (epoch - best[1]) % S.lr_patience == 0:  # a plateau: smaller steps
                    for o in opts:
                        for grp in o.param_groups:
                            grp["lr"] *= S.lr_decay
                    rec["lr_decayed"] = True
    finally:
        bar.close()
    if early_stopping and best[2] is not None:
        model.load_state_dict(best[2])
    model.eval()
    kept_epoch = best[1] if early_stopping else len(history)

    wall = time.perf_counter() - started
    config = {
        "trb_version": TRB_VERSION,
        "variant": variant,
        "seed": seed,
        "features": {"module": "trb.reference.features", "hash": "blake2b-64", "short_token": SHORT,
                     "history": HISTORY},
        "release": release,
        "trained_on": subjects,
        "training": {
            "split": _SPLIT,
            "objective": "L_trace + L_selfrep" + (" + L_gov" if variant == "full" else ""),
            "settings": S.to_dict(),
            "n_train": {
                "sessions": counts["sessions"],
                "steps": counts["steps"],
                "steps_acted": counts["steps_acted"],
                "steps_with_r": counts["steps_with_r"],
                "counterfactuals": counts["counterfactuals"],
                "counterfactuals_with_distribution": counts["counterfactuals_with_distribution"],
                "counterfactuals_used": len(cfs),
                "validation_sessions": len(val_sessions),
                "fit_step_items": len(fit_steps),
                "validation_step_items": len(val_steps),
                "fit_counterfactuals": len(fit_cfs),
                "validation_counterfactuals": len(val_cfs),
            },
            "early_stopping": early_stopping,
            "epochs_run": len(history),
            "epoch_kept": kept_epoch,
            "losses_per_epoch": history,
            "n_parameters": sum(p.numel() for p in model.parameters()),
            "wall_time_s": round(wall, 2),
            "torch_version": torch.__version__,
            "torch_threads": torch.get_num_threads(),
            "numerics": describe(),  # the CPU kernels and threads it was trained with (trb.numerics)
        },
    }
    sha = save_checkpoint(model, config, out_dir)
    from trb.grounding import write_concepts  # Track 2's concept directions, from the same train split

    try:
        write_concepts(out_dir, Release(release_dir, check_files=checked))  # a checked release: cached, not read again
    except UsageError as e:  # a train split without enough recorded slot values: the model simply has none
        print(f"no concept directions: {e}", file=sys.stderr)
    return {**load_config(out_dir), "path": str(Path(out_dir)), "sha256": sha}


def load_config(model_dir: str | os.PathLike) -> dict:
    """The reference model's ``config.json``, read strictly (raises OSError, or StrictJSONError naming the file)."""
    return strict_json.load(Path(model_dir) / "config.json")
