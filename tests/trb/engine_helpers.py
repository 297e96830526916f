"""Shared makers for the engine tests: a smoke release, a tiny local causal LM, a tiny reference model."""

from __future__ import annotations

from pathlib import Path


class PlanFollower:
    """A scripted adapter: weight 3 on r.planned_next, 1 elsewhere; r.caused_by_self 0.7 (its spec's kind is
    ``kind``)."""

    tier = "proxy"
    capabilities = ()

    def __init__(self, kind: str = "plan-follower") -> None:
        self.kind = kind

    def spec(self):
        return {"kind": self.kind}

    def emit_r(self, context):
        return {"planned_next": context.action_space[0] if context.action_space else None, "caused_by_self": 0.7}

    def act(self, context, r_override=None):
        r = r_override or self.emit_r(context)
        w = {a: 3.0 if a == r.get("planned_next") else 1.0 for a in context.action_space}
        return {a: v / sum(w.values()) for a, v in w.items()}


def make_release(tmp: Path, *, sessions: int = 120, seed: int = 4) -> Path:
    """A smoke release of ``sessions`` simulated sessions, cut through the corpus toolkit."""
    from corpus import Corpus, ingest, init_corpus
    from corpus.release import cut_release
    from corpus.simulate import write_simulation

    tmp.mkdir(parents=True, exist_ok=True)
    write_simulation(tmp / "sim.jsonl", n_sessions=sessions, seed=seed, progress=False)
    c = Corpus(init_corpus(tmp / "corpus"))
    ingest(c, [tmp / "sim.jsonl"], progress=False)
    return Path(cut_release(c, "0.1.0", kind="smoke", progress=False).directory)


def save_tiny_gpt2(out: Path, texts: list[str], *, vocab_size: int = 4000, n_embd: int = 256, n_layer: int = 4,
                   n_head: int = 4, n_positions: int = 2048) -> Path:
    """A GPT-2 with random weights (seed 0) and a byte-level BPE tokenizer trained on ``texts``, both written to
    ``out`` with save_pretrained, to be loaded back through the real loading code."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainer=trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    fast.save_pretrained(out)
    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config(vocab_size=len(fast), n_embd=n_embd, n_layer=n_layer, n_head=n_head,
                               n_positions=n_positions, bos_token_id=fast.bos_token_id,
                               eos_token_id=fast.eos_token_id)).save_pretrained(out)
    return out


def make_tiny_lm(release: Path, out: Path) -> Path:
    """A 1-layer GPT-2 with a BPE tokenizer trained on the release's observations, saved with save_pretrained."""
    import duckdb

    texts = [r[0] for r in duckdb.connect().execute(
        f"SELECT observation FROM read_parquet('{release}/data/steps/*.parquet') LIMIT 2000").fetchall()]
    return save_tiny_gpt2(out, texts + ["Reasoning: goal=C3; planned_next=right; Action: right"], vocab_size=600,
                          n_embd=32, n_layer=1, n_head=2, n_positions=4096)


def make_reference(release: Path, out: Path, variant: str = "full") -> Path:
    """A native reference model trained for one epoch on the release's train split."""
    from trb.reference import train_reference

    train_reference(release, variant, out, seed=0, epochs=1, progress=False)
    return out


class GridSteerer:
    """A scripted native-tier rollout adapter that reads the grid in any language and on any context: its stimulus
    set is the part of the context id that names one; the first two cells the observation names are where it is
    and the goal it is shown. It acts toward r's goal (0.9, the rest uniform); its no-r_t ablation acts toward the
    goal it sees half the time (0.45, the rest uniform). On the contexts in ``ignores_r`` it acts as its ablation
    whatever r says (its r_t governs nothing there: Tracks 4 and 5 collapse to the ablation on them)."""

    tier = "native"

    def __init__(self, ignores_r=()):
        from trb.adapters.capabilities import BatchedAct, RAblation

        self.capabilities = (BatchedAct, RAblation)
        self.ignores_r = set(ignores_r)

    def spec(self):
        return {"kind": "grid-steerer", "ignores_r": sorted(self.ignores_r)}

    @staticmethod
    def _where(context):
        import re

        from simworld import STIMULUS_SETS
        from simworld.world import parse_cell

        stim = next(p for p in (context.context_id or "").split(".") if p in STIMULUS_SETS)
        cells = re.findall(r"\b([A-Z][0-9]{1,2})\b", context.observation or "")
        return STIMULUS_SETS[stim].layout, parse_cell(cells[0]), parse_cell(cells[1])

    @staticmethod
    def _headed(layout, pos, goal, space, follow):
        moves = (layout.improving_actions(pos, goal, "path") if goal is not None and layout.is_free(goal) else ()) \
            or ("wait",)
        return {a: (follow / len(moves) if a in moves else 0.0) + (1 - follow) / len(space) for a in space}

    def emit_r(self, context):
        from simworld.world import cell_name

        layout, pos, goal = self._where(context)
        moves = layout.improving_actions(pos, goal, "path") or ("wait",)
        return {"goal": cell_name(goal), "planned_next": moves[0], "caused_by_self": None, "confidence": 0.6}

    def act(self, context, r_override=None):
        return self.act_batch([context], [r_override])[0]

    def act_batch(self, contexts, r_overrides=None):
        from simworld.world import parse_cell

        out = []
        for c, r in zip(contexts, r_overrides or [None] * len(contexts)):
            if c.context_id in self.ignores_r:
                out.append(self.act_ablated(c))
                continue
            layout, pos, _ = self._where(c)
            out.append(self._headed(layout, pos, parse_cell((r or self.emit_r(c)).get("goal")), c.action_space, 0.9))
        return out

    def act_ablated(self, context):
        layout, pos, goal = self._where(context)
        return self._headed(layout, pos, goal, context.action_space, 0.45)

    def act_ablated_batch(self, contexts):
        return [self.act_ablated(c) for c in contexts]
