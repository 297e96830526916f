"""The proxy adapter's cot_edit intervention against the templated one: `python bench/cot_edit.py [--repeats 5]
[--items 32] [--threads N] [--smollm2 [DIR]] [--smollm2-items 8]`.

One process, one tiny GPT-2 (2 layers, 64 wide, byte-level BPE, trained here for 300 steps on trace-template text
whose Reasoning line states goal/planned_next on "at" steps and nothing on "calm" steps: tests/trb/cot_models.py),
the same items (one step each, a random r' per item, a third of them "calm"), chat template off:

* ``template``: ``act_batch(contexts, r')``: r' written as the Reasoning line, one scoring call;
* ``cot_edit`` (cold): the same call with ``intervention="cot_edit"`` and the CoT cache emptied first: the model
  writes its own chain of thought (one batched greedy generation), the spans are edited and truncated, then one
  scoring call;
* ``cot_edit`` (warm): the same call again, the CoTs cached (what the further r' of a step cost: Track 1 scores
  several counterfactuals per step, and ``act(c)`` reuses the step's CoT).

Seconds per item are medians over ``--repeats``; the ratio is cot_edit / template. ``--smollm2`` adds the same
on SmolLM2-135M-Instruct (``trb models fetch smollm2``) on a few items with its chat template applied.
Nothing here asserts a speed: it prints a table.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "trb"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _items(n: int, seed: int = 7):
    from cot_models import GOALS, SPACES, context

    rng = random.Random(seed)
    out = []
    for i in range(n):
        space = rng.choice(SPACES)
        obs = f"{'calm at' if i % 3 == 2 else 'at'} C{rng.randint(1, 3)}"
        out.append((context(space, obs, t=0), {"goal": rng.choice(GOALS), "planned_next": rng.choice(space)}))
    return out


def _measure(template, edit, items, repeats: int) -> dict:
    """Median seconds per item of each way; the three are timed in turn within every repeat, so that a change of
    the machine's load between repeats hits them alike."""
    contexts, rs = [c for c, _ in items], [r for _, r in items]
    n = len(items)
    template.act_batch(contexts, rs)  # warm-up (allocations, first-call overheads)
    edit.act_batch(contexts, rs)
    times: dict[str, list[float]] = {"template": [], "cold": [], "warm": []}
    for _ in range(repeats):
        t0 = time.perf_counter()
        template.act_batch(contexts, rs)
        t1 = time.perf_counter()
        edit._own_cots.clear()  # cold: the model writes every chain of thought again
        edit.act_batch(contexts, rs)
        t2 = time.perf_counter()
        edit.act_batch(contexts, rs)  # warm: the chains of thought are cached
        t3 = time.perf_counter()
        times["template"].append(t1 - t0)
        times["cold"].append(t2 - t1)
        times["warm"].append(t3 - t2)
    return {**{k: statistics.median(v) / n for k, v in times.items()}, "stats": edit.cot_edit_stats(), "n": n}


def _print(name: str, m: dict) -> None:
    print(f"\n{name}: {m['n']} items, median s/item")
    print(f"  template            {m['template'] * 1e3:9.2f} ms")
    print(f"  cot_edit (cold)     {m['cold'] * 1e3:9.2f} ms   ratio {m['cold'] / m['template']:.1f}x")
    print(f"  cot_edit (warm)     {m['warm'] * 1e3:9.2f} ms   ratio {m['warm'] / m['template']:.1f}x")
    print(f"  cot_edit counters   {m['stats']}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--items", type=int, default=32)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--smollm2", nargs="?", const="", default=None,
                    help="also on SmolLM2-135M-Instruct (default directory: trb models' cache)")
    ap.add_argument("--smollm2-items", type=int, default=8)
    args = ap.parse_args(argv)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from cot_models import build_cot_gpt2

    from trb.adapters.proxy import ProxyAdapter

    print(f"torch threads: {torch.get_num_threads()}, cpu count: {os.cpu_count()}, "
          f"load average: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        d = build_cot_gpt2(Path(tmp) / "tiny")
        print(f"tiny GPT-2 trained in {time.perf_counter() - t0:.1f} s")
        template = ProxyAdapter.load(d, device="cpu", chat_template="off")
        edit = ProxyAdapter.load(d, device="cpu", chat_template="off", intervention="cot_edit")
        _print("tiny GPT-2 (2 layers, 64 wide)", _measure(template, edit, _items(args.items), args.repeats))
    if args.smollm2 is not None:
        from trb.models import model_dir

        path = Path(args.smollm2) if args.smollm2 else model_dir("smollm2")
        template = ProxyAdapter.load(path, device="cpu")
        edit = ProxyAdapter.load(path, device="cpu", intervention="cot_edit")
        print(f"\nSmolLM2: chat template applied: {template.chat_applied}")
        _print("SmolLM2-135M-Instruct", _measure(template, edit, _items(args.smollm2_items), args.repeats))


if __name__ == "__main__":
    main()
