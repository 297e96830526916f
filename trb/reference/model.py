"""The reference model: a context encoder, an r-head, and an action head that acts *through* e(r).

::

    context --hashed features--> sum of embeddings -> LayerNorm -> MLP -> h
    h --r-head--> caused_by_self, confidence (sigmoids)
                  planned_next (softmax over the step's actions, scored against action embeddings)
                  goal (softmax over the goal vocabulary seen in training, scored against goal embeddings)
    r --e(r)--> [E_act(planned_next), E_goal(goal), caused_by_self, confidence, one presence flag per slot]
    (h, e(r)) --action head--> p(a) ∝ exp(u · E_act(a) + g · 1{a = r.planned_next})

``u`` and the gate ``g`` are computed from ``[h, e(r)]`` by an MLP, so a slot acts
on every action through its embedding and the stated plan can also act directly
on its own action. Acting without an override runs e(r) on the model's own r
(the r-head's argmax plan and goal, its two probabilities): its self-report is
what drives its action, and ``do(r_t := r')`` replaces e(r) by e(r'), nothing
else. The current step's r_t is never an input to the encoder.

Slots of an r (own or override): a ``planned_next`` outside the step's action
space still enters e(r) through its embedding (it just matches no action); a
``goal`` never seen in training is embedded from its characters; a probability
is clipped into [0, 1]; a slot that is None, NaN or of the wrong type is
*absent* (presence flag 0, value 0). Extension slots (``ext``) are not read.
``caused_by_self`` is reported only once there is an outcome to attribute (not at
a session's first step), as in the recordings.

This module holds the network and the batching (:func:`collate`); training is in
:mod:`trb.reference.train`, the adapter in :mod:`trb.adapters.native`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from toolkit import strict_json
from toolkit.hashing import sha256_file
from trb.errors import AdapterError
from trb.reference.features import string_features

__all__ = ["ModelConfig", "ReferenceModel", "SITES", "Batch", "collate", "RItem", "NEG", "FORMAT", "FORMAT_VERSION",
           "save_checkpoint", "load_checkpoint", "file_sha256"]

#: ``format`` of a reference model's config.json, and its version.
FORMAT = "trb-reference-model"
FORMAT_VERSION = 1

#: Where z can be read and injected (:meth:`ReferenceModel.encode_at`): the heads' input first.
SITES = ("h", "embed")

#: Logit of a padded (absent) action slot.
NEG = -1e9


@dataclass
class ModelConfig:
    """Architecture and feature hashing sizes (saved in config.json; the same for both variants)."""

    #: 6,144 x 48 context features: 0.63M parameters in all, within 15% of the LM baselines' 0.61-0.63M
    #: (spec §4: every baseline "at the same model size"; 32,768 x 96 gave 3.5M, 5.7x theirs).
    context_buckets: int = 6144
    context_dim: int = 48
    hidden: int = 128
    string_buckets: int = 1 << 12
    string_dim: int = 32
    head_hidden: int = 128
    #: Dropout on h during training (regularises the encoder; off at inference).
    dropout: float = 0.2
    #: Goal strings the r-head can emit, most frequent in the train split first (may be empty: goal is then None).
    goal_vocab: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**known)


@dataclass
class RItem:
    """One row of a batch: a context's feature ids, its action space, and an r (override or target)."""

    ctx_ids: Sequence[int]  # hashed context features (a list or an int64 array)
    space: tuple[str, ...] | None
    r: dict | None
    has_history: bool


@dataclass
class Batch:
    ctx_ids: torch.Tensor
    ctx_offsets: torch.Tensor
    act_ids: torch.Tensor  # unique action strings of the batch, as an EmbeddingBag input
    act_offsets: torch.Tensor
    space_idx: torch.Tensor  # (B, A) index into the unique action strings
    space_mask: torch.Tensor  # (B, A) True where the action exists
    plan_pos: torch.Tensor  # (B,) position of r.planned_next in the step's space, -1 if absent
    plan_str: torch.Tensor  # (B,) index of r.planned_next among the unique action strings, -1 if absent
    goal_ids: torch.Tensor  # unique goal strings of the batch
    goal_offsets: torch.Tensor
    goal_str: torch.Tensor  # (B,) index of r.goal among the unique goal strings, -1 if absent
    goal_vocab: torch.Tensor  # (B,) index of r.goal in the vocabulary, -1 if not in it
    cbs: torch.Tensor
    cbs_present: torch.Tensor
    conf: torch.Tensor
    conf_present: torch.Tensor
    has_history: torch.Tensor
    has_space: torch.Tensor

    @property
    def size(self) -> int:
        return self.ctx_offsets.shape[0]


def _prob(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    if v != v:  # NaN
        return None
    return min(1.0, max(0.0, v))


def _bag(strings: list[str], buckets: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids: list[int] = []
    offsets: list[int] = []
    for s in strings:
        offsets.append(len(ids))
        ids.extend(string_features(s, buckets))
    return torch.tensor(ids, dtype=torch.long), torch.tensor(offsets, dtype=torch.long)


def collate(items: Sequence[RItem], cfg: ModelConfig, goal_index: dict[str, int],
            dtype: torch.dtype = torch.float32) -> Batch:
    """Tensors for a batch of items (r slots that are absent or unusable get presence 0); floats in ``dtype``."""
    lengths = np.fromiter((len(it.ctx_ids) for it in items), dtype=np.int64, count=len(items))
    ctx_offsets = np.zeros(len(items), dtype=np.int64)
    np.cumsum(lengths[:-1], out=ctx_offsets[1:])
    ctx_ids = np.concatenate([np.asarray(it.ctx_ids, dtype=np.int64) for it in items]) if items else \
        np.zeros(0, dtype=np.int64)
    acts: dict[str, int] = {}
    goals: dict[str, int] = {}
    width = max([len(it.space) for it in items if it.space] or [1])
    n = len(items)
    space_idx = [[0] * width for _ in range(n)]
    space_mask = [[False] * width for _ in range(n)]
    plan_pos, plan_str, goal_str, goal_vocab = [-1] * n, [-1] * n, [-1] * n, [-1] * n
    cbs, cbs_present, conf, conf_present = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    has_history = [1.0 if it.has_history else 0.0 for it in items]
    has_space = [1.0 if it.space else 0.0 for it in items]
    for i, it in enumerate(items):
        if it.space:
            row, mrow = space_idx[i], space_mask[i]
            for j, a in enumerate(it.space):
                row[j] = acts.setdefault(a, len(acts))
                mrow[j] = True
        r = it.r
        if not r:
            continue
        plan = r.get("planned_next")
        if isinstance(plan, str):
            plan_str[i] = acts.setdefault(plan, len(acts))
            if it.space and plan in it.space:
                plan_pos[i] = it.space.index(plan)
        goal = r.get("goal")
        if isinstance(goal, str):
            goal_str[i] = goals.setdefault(goal, len(goals))
            goal_vocab[i] = goal_index.get(goal, -1)
        p = _prob(r.get("caused_by_self"))
        if p is not None:
            cbs[i], cbs_present[i] = p, 1.0
        p = _prob(r.get("confidence"))
        if p is not None:
            conf[i], conf_present[i] = p, 1.0
    act_ids, act_offsets = _bag(list(acts), cfg.string_buckets)
    goal_ids, goal_offsets = _bag(list(goals), cfg.string_buckets)
    L, F32 = torch.long, dtype
    return Batch(torch.from_numpy(ctx_ids), torch.from_numpy(ctx_offsets), act_ids, act_offsets,
                 torch.tensor(space_idx, dtype=L), torch.tensor(space_mask, dtype=torch.bool),
                 torch.tensor(plan_pos, dtype=L), torch.tensor(plan_str, dtype=L), goal_ids, goal_offsets,
                 torch.tensor(goal_str, dtype=L), torch.tensor(goal_vocab, dtype=L), torch.tensor(cbs, dtype=F32),
                 torch.tensor(cbs_present, dtype=F32), torch.tensor(conf, dtype=F32),
                 torch.tensor(conf_present, dtype=F32), torch.tensor(has_history, dtype=F32),
                 torch.tensor(has_space, dtype=F32))


def _gather_rows(table: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Rows of ``table`` at ``idx`` (zeros where idx == -1)."""
    if table.shape[0] == 0:
        return torch.zeros((idx.shape[0], table.shape[1]), dtype=table.dtype)
    out = F.embedding(idx.clamp(min=0), table)  # not table[idx]: its backward accumulates in no fixed order
    return out * (idx >= 0).unsqueeze(-1).to(out.dtype)


class ReferenceModel(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        d, s = cfg.hidden, cfg.string_dim
        # sparse: each batch touches a few thousand of the buckets (trained with SparseAdam)
        self.ctx_emb = nn.Embedding(cfg.context_buckets, cfg.context_dim, sparse=True)
        nn.init.normal_(self.ctx_emb.weight, std=1.0 / math.sqrt(cfg.context_dim))
        self.encoder = nn.Sequential(
            nn.LayerNorm(cfg.context_dim), nn.Linear(cfg.context_dim, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(),
            nn.Dropout(cfg.dropout))
        self.act_bag = nn.EmbeddingBag(cfg.string_buckets, s, mode="mean")
        self.goal_bag = nn.EmbeddingBag(cfg.string_buckets, s, mode="mean")
        # r-head
        self.cbs_head = nn.Linear(d, 1)
        self.conf_head = nn.Linear(d, 1)
        self.plan_query = nn.Linear(d, s)
        self.goal_query = nn.Linear(d, s)
        # action head over [h, e(r)]
        self.r_dim = 2 * s + 6
        self.act_mlp = nn.Sequential(
            nn.Linear(d + self.r_dim, cfg.head_hidden), nn.ReLU(),
            nn.Linear(cfg.head_hidden, cfg.head_hidden), nn.ReLU())
        self.act_u = nn.Linear(cfg.head_hidden, s)
        self.act_gate = nn.Linear(cfg.head_hidden, 1)
        self.register_buffer("goal_vocab_ids", torch.zeros(0, dtype=torch.long), persistent=False)
        self.register_buffer("goal_vocab_offsets", torch.zeros(0, dtype=torch.long), persistent=False)
        self.set_goal_vocab(cfg.goal_vocab)

    def set_goal_vocab(self, vocab: list[str]) -> None:
        self.cfg.goal_vocab = list(vocab)
        ids, offsets = _bag(list(vocab), self.cfg.string_buckets)
        self.goal_vocab_ids, self.goal_vocab_offsets = ids, offsets

    # -- pieces ----------------------------------------------------------------------

    def encode(self, b: Batch, feature_weights: torch.Tensor | None = None) -> torch.Tensor:
        """h for each row; ``feature_weights`` (one per feature id) implements feature dropout in training."""
        # look up each distinct bucket once (a small sparse gradient), then sum per row
        uniq, inv = torch.unique(b.ctx_ids, return_inverse=True)
        rows = F.embedding(uniq, self.ctx_emb.weight, sparse=True)
        bag = F.embedding_bag(inv, rows, b.ctx_offsets, mode="sum", per_sample_weights=feature_weights)
        return self.encoder(bag)

    def encode_at(self, b: Batch, site: str, add: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(z, h): the activation z at ``site`` (one of :data:`SITES`) and the h the heads read, with ``add``
        (B, d) added to z first when given. ``"embed"`` is the summed feature embeddings before the encoder
        (d = ``context_dim``), ``"h"`` the encoder's output (d = ``hidden``). Inference only (no feature dropout)."""
        if site not in SITES:
            raise ValueError(f"unknown activation site {site!r} (sites: {', '.join(SITES)})")
        uniq, inv = torch.unique(b.ctx_ids, return_inverse=True)
        rows = F.embedding(uniq, self.ctx_emb.weight)
        bag = F.embedding_bag(inv, rows, b.ctx_offsets, mode="sum")
        if site == "embed":
            z = bag if add is None else bag + add
            return z, self.encoder(z)
        h = self.encoder(bag)
        z = h if add is None else h + add
        return z, z

    def site_dim(self, site: str) -> int:
        """The width of z at ``site``."""
        if site not in SITES:
            raise ValueError(f"unknown activation site {site!r} (sites: {', '.join(SITES)})")
        return self.cfg.context_dim if site == "embed" else self.cfg.hidden

    def strings(self, b: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Embeddings of the batch's unique action strings and unique goal strings."""
        s = self.cfg.string_dim
        dt = self.act_bag.weight.dtype
        acts = self.act_bag(b.act_ids, b.act_offsets) if b.act_offsets.numel() else torch.zeros(0, s, dtype=dt)
        goals = self.goal_bag(b.goal_ids, b.goal_offsets) if b.goal_offsets.numel() else torch.zeros(0, s, dtype=dt)
        return acts, goals

    def vocab_embeddings(self) -> torch.Tensor | None:
        if not self.cfg.goal_vocab:
            return None
        return self.goal_bag(self.goal_vocab_ids, self.goal_vocab_offsets)

    def space_embeddings(self, acts: torch.Tensor, b: Batch) -> torch.Tensor:
        """(B, A, s) embeddings of each step's actions (padding rows are garbage, masked later)."""
        if acts.shape[0] == 0:
            return torch.zeros(b.space_idx.shape + (self.cfg.string_dim,), dtype=acts.dtype)
        return F.embedding(b.space_idx, acts)  # deterministic backward, unlike acts[b.space_idx]

    def r_head(self, h: torch.Tensor, space_emb: torch.Tensor, b: Batch) -> dict[str, torch.Tensor | None]:
        """Logits of the r slots: ``cbs`` (B,), ``conf`` (B,), ``plan`` (B, A) masked, ``goal`` (B, V) or None."""
        plan = torch.einsum("bs,bas->ba", self.plan_query(h), space_emb).masked_fill(~b.space_mask, NEG)
        vocab = self.vocab_embeddings()
        goal = self.goal_query(h) @ vocab.T if vocab is not None else None
        return {"cbs": self.cbs_head(h).squeeze(-1), "conf": self.conf_head(h).squeeze(-1), "plan": plan,
                "goal": goal}

    def embed_r(self, plan_emb, plan_present, goal_emb, goal_present, cbs, cbs_present, conf, conf_present):
        return torch.cat([
            plan_emb * plan_present.unsqueeze(-1), plan_present.unsqueeze(-1),
            goal_emb * goal_present.unsqueeze(-1), goal_present.unsqueeze(-1),
            (cbs * cbs_present).unsqueeze(-1), cbs_present.unsqueeze(-1),
            (conf * conf_present).unsqueeze(-1), conf_present.unsqueeze(-1)], dim=-1)

    def action_logits(self, h: torch.Tensor, e_r: torch.Tensor, space_emb: torch.Tensor, match: torch.Tensor,
                      b: Batch) -> torch.Tensor:
        """(B, A) masked logits of p(a | h, e(r)); ``match`` (B, A) marks the stated plan."""
        z = self.act_mlp(torch.cat([h, e_r], dim=-1))
        logits = torch.einsum("bs,bas->ba", self.act_u(z), space_emb) + self.act_gate(z) * match
        return logits.masked_fill(~b.space_mask, NEG)

    # -- the two ways of filling e(r) ------------------------------------------------

    def e_of_given_r(self, b: Batch, acts: torch.Tensor, goals: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """e(r) and the plan-match mask for the r carried by the batch (an override r', or an emitted r)."""
        plan_present = (b.plan_str >= 0).float()
        plan_emb = _gather_rows(acts, b.plan_str)
        goal_present = (b.goal_str >= 0).float()
        goal_emb = _gather_rows(goals, b.goal_str)
        e_r = self.embed_r(plan_emb, plan_present, goal_emb, goal_present, b.cbs, b.cbs_present, b.conf,
                           b.conf_present)
        match = torch.zeros(b.space_mask.shape, dtype=b.cbs.dtype)
        rows = (b.plan_pos >= 0).nonzero().squeeze(-1)
        match[rows, b.plan_pos[rows]] = 1.0
        return e_r, match

    def e_of_own_r(self, heads: dict, space_emb: torch.Tensor, b: Batch,
                   keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """e(r̂) of the r-head's own output, straight-through: the forward pass uses the argmax plan and goal
        (exactly what :meth:`emit` reports), gradients flow through the softmaxes. ``keep`` (B, 4) drops slots."""
        p_plan = torch.softmax(heads["plan"], dim=-1)
        hard = F.one_hot(p_plan.argmax(-1), p_plan.shape[-1]).to(p_plan.dtype)
        st_plan = (hard - p_plan.detach() + p_plan) * b.space_mask
        plan_emb = torch.einsum("ba,bas->bs", st_plan, space_emb)
        plan_present = b.has_space.clone()
        vocab = self.vocab_embeddings()
        if vocab is not None:
            p_goal = torch.softmax(heads["goal"], dim=-1)
            hard_g = F.one_hot(p_goal.argmax(-1), p_goal.shape[-1]).to(p_goal.dtype)
            goal_emb = (hard_g - p_goal.detach() + p_goal) @ vocab
            goal_present = torch.ones(b.size, dtype=b.cbs.dtype)
        else:
            goal_emb = torch.zeros(b.size, self.cfg.string_dim, dtype=b.cbs.dtype)
            goal_present = torch.zeros(b.size, dtype=b.cbs.dtype)
        cbs, cbs_present = torch.sigmoid(heads["cbs"]), b.has_history.clone()
        conf, conf_present = torch.sigmoid(heads["conf"]), torch.ones(b.size, dtype=b.cbs.dtype)
        if keep is not None:
            plan_present = plan_present * keep[:, 0]
            goal_present = goal_present * keep[:, 1]
            cbs_present = cbs_present * keep[:, 2]
            conf_present = conf_present * keep[:, 3]
        match = st_plan * plan_present.unsqueeze(-1)
        e_r = self.embed_r(plan_emb, plan_present, goal_emb, goal_present, cbs, cbs_present, conf, conf_present)
        return e_r, match

    # -- inference ------------------------------------------------------------------

    @torch.no_grad()
    def emit(self, b: Batch, spaces: Sequence[tuple[str, ...] | None]) -> list[dict]:
        """The r-head's report for each row: argmax plan (None without an action space), argmax goal
        (None without a goal vocabulary), caused_by_self (None before any outcome), confidence."""
        h = self.encode(b)
        acts, _ = self.strings(b)
        heads = self.r_head(h, self.space_embeddings(acts, b), b)
        plan_idx = heads["plan"].argmax(-1).tolist()
        goal_idx = heads["goal"].argmax(-1).tolist() if heads["goal"] is not None else None
        # reported at float32 precision: a model run in float64 then gives the same report whatever the batch
        cbs = torch.sigmoid(heads["cbs"]).float().tolist()
        conf = torch.sigmoid(heads["conf"]).float().tolist()
        out = []
        for i in range(b.size):
            r = {"goal": None, "planned_next": None, "caused_by_self": None, "confidence": conf[i]}
            if spaces[i]:
                r["planned_next"] = spaces[i][plan_idx[i]]
            if goal_idx is not None:
                r["goal"] = self.cfg.goal_vocab[goal_idx[i]]
            if b.has_history[i] > 0:
                r["caused_by_self"] = cbs[i]
            out.append(r)
        return out

    @torch.no_grad()
    def act_probs(self, b: Batch) -> torch.Tensor:
        """(B, A) p(a | h, e(r)) for the r each row carries (padding columns are 0), in the model's dtype."""
        h = self.encode(b)
        acts, goals = self.strings(b)
        e_r, match = self.e_of_given_r(b, acts, goals)
        logits = self.action_logits(h, e_r, self.space_embeddings(acts, b), match, b)
        return torch.softmax(logits, dim=-1) * b.space_mask


# -- checkpoints -------------------------------------------------------------------------


#: The weights' sha256: the one file-hashing helper (:func:`toolkit.hashing.sha256_file`), under this module's name.
file_sha256 = sha256_file


def save_checkpoint(model: ReferenceModel, config: dict, out_dir: str | os.PathLike) -> str:
    """Write ``out_dir/model.safetensors`` and ``out_dir/config.json``; return the weights' sha256.

    ``config["architecture"]`` is set from the model; each file appears complete or not at all.
    """
    from safetensors.torch import save_file

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = {"format": FORMAT, "format_version": FORMAT_VERSION,
              **{k: v for k, v in config.items() if k not in ("format", "format_version", "architecture")},
              "architecture": model.cfg.to_dict()}
    weights = out / "model.safetensors"
    tmp = out / f".model.safetensors.part-{os.getpid()}"
    try:
        # one metadata key only: safetensors writes a metadata map in no fixed order, which would make the
        # sha256 of identical weights differ between runs
        save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(tmp),
                  metadata={"format": FORMAT})
        os.replace(tmp, weights)
    finally:
        tmp.unlink(missing_ok=True)
    ctmp = out / f".config.json.part-{os.getpid()}"
    ctmp.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(ctmp, out / "config.json")
    return file_sha256(weights)


def load_checkpoint(path: str | os.PathLike) -> tuple[ReferenceModel, dict, str]:
    """The model (in eval mode), its config.json and the weights' sha256, from a checkpoint directory.

    Raises:
        AdapterError: the directory, config or weights are missing, unreadable or do not fit together.
    """
    p = Path(path)
    if not p.is_dir():
        raise AdapterError(f"{p}: no reference model directory here (train one with trb.reference.train_reference)")
    cpath, wpath = p / "config.json", p / "model.safetensors"
    for f in (cpath, wpath):
        if not f.is_file():
            raise AdapterError(f"{p}: not a reference model directory (no {f.name})")
    try:
        config = strict_json.loads(cpath.read_bytes())
    except (OSError, ValueError) as e:
        raise AdapterError(f"{cpath}: not strict JSON ({e})") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise AdapterError(f"{cpath}: not a reference model config (format is not {FORMAT!r})")
    if config.get("format_version") != FORMAT_VERSION:
        raise AdapterError(f"{cpath}: format_version {config.get('format_version')!r} is not supported "
                           f"(this toolkit reads {FORMAT_VERSION})")
    arch = config.get("architecture")
    if not isinstance(arch, dict):
        raise AdapterError(f"{cpath}: no architecture section")
    try:
        model = ReferenceModel(ModelConfig.from_dict(arch))
    except (TypeError, ValueError, RuntimeError) as e:
        raise AdapterError(f"{cpath}: bad architecture ({e})") from None
    from safetensors.torch import load_file

    try:
        state = load_file(str(wpath))
    except Exception as e:  # safetensors raises its own error types for a corrupt file
        raise AdapterError(f"{wpath}: cannot read the weights ({e})") from None
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        raise AdapterError(f"{wpath}: the weights do not fit the architecture in config.json ({e})") from None
    model.eval()
    return model, config, file_sha256(wpath)
