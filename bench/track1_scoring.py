"""Track 1 scoring throughput: `python bench/track1_scoring.py [--repeats 3] [--threads N]`.

The same (context, continuation) requests, scored three ways in one process, and a floor:

(a) naive: one ``context + continuation`` forward pass per pair, plain transformers
    (``trb.adapters.lm_scoring.score_naive``);
(b) lm-evaluation-harness ``HFLM(pretrained=model, tokenizer=tok, batch_size=B).loglikelihood``
    at several batch sizes; the best is reported (``lm-eval[hf]``, ``pip install -e '.[bench]'``);
(c) this toolkit's ``score_continuations`` (the proxy adapter's scorer: a context run once,
    its continuations packed behind it in the same row, contexts batched across requests);
(d) the floor: bare forward passes over the unique tokens only, i.e. each context once and,
    behind it in the same row, each continuation's ids but its last (the ids whose next-token
    logits score something; a continuation's last id predicts nothing), attending causally
    (continuations see each other here: no custom mask), no log-softmax, logits kept at one
    position per row, no KV cache. Several layouts are tried once each (one row per pass without any mask; rows
    sorted by length in right-padded batches of several token budgets, with a padding mask or
    with none: causal attention alone, a real token never sees the pads behind it) and the
    fastest is timed.
    It is what (c) would cost if scoring were free: (c)/(d) measures the scorer's overhead.

On two models: a tiny GPT-2 (byte-level BPE trained here, about 3.4M parameters, random
weights: throughput only) and SmolLM2-135M-Instruct (``trb models fetch smollm2``).
Contexts are real proxy prompts (``ProxyAdapter.prompt``) of Track 1 items of a simulated
smoke release; each gets at least 8 continuations (its actions, one token or more, and
longer texts). Requests/s are medians of ``--repeats`` runs, timed by the wall clock or
(``--clock cpu``) by the process's CPU time; max |Δ log-likelihood| is
taken against (a), pair by pair; (d) computes no log-likelihood. Nothing here asserts a
speed: it prints a table.
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


def _release(work: Path, sessions: int, seed: int) -> Path:
    from corpus import Corpus, ingest, init_corpus
    from corpus.release import cut_release
    from corpus.simulate import write_simulation

    write_simulation(work / "sim.jsonl", n_sessions=sessions, seed=seed, progress=False)
    c = Corpus(init_corpus(work / "corpus"))
    ingest(c, [work / "sim.jsonl"], progress=False)
    return cut_release(c, "0.1.0", kind="smoke", split_fractions={"train": 0, "dev": 0, "eval": 1},
                       progress=False).directory


def _prompts(release_dir: Path) -> list[tuple[str, tuple[str, ...], dict]]:
    """(prompt, action space, r') of every discrete Track 1 item: the proxy adapter's act prompts."""
    from trb.adapters.proxy import ProxyAdapter
    from trb.releases import Release
    from trb.tracks.track1 import track1_items

    rel = Release(release_dir)
    try:
        items = [i for i in track1_items(rel, "eval") if i.context.action_space]
    finally:
        rel.close()
    return [(ProxyAdapter.prompt(i.context, i.r_prime), tuple(i.context.action_space), i.r_prime) for i in items]


def _continuations(space: tuple[str, ...], r: dict, rng: random.Random) -> list[str]:
    """At least 8: every action, then longer texts (several tokens each)."""
    conts = [" " + a for a in space]
    a, b = rng.choice(space), rng.choice(space)
    conts += [f" {a}, then {b}", f" {a}\nOutcome: moved", f" {b} because the plan says {r.get('planned_next') or a}",
              " wait and look again", f" {a}; confidence=0.80", " ask the user what to do next"]
    return conts[: max(8, len(space) + 3)]  # the actions and at least three longer texts


def _requests(prompts, tokenizer, n_contexts: int, max_tokens: int, seed: int) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    fit = [p for p in prompts if len(tokenizer(p[0], add_special_tokens=False)["input_ids"]) <= max_tokens]
    rng.shuffle(fit)
    return [(p, _continuations(space, r, rng)) for p, space, r in fit[:n_contexts]]


def _tiny_gpt2(d: Path, texts: list[str]):
    import torch
    from engine_helpers import save_tiny_gpt2
    from transformers import AutoModelForCausalLM, AutoTokenizer

    save_tiny_gpt2(d, texts)
    return (AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, local_files_only=True).eval(),
            AutoTokenizer.from_pretrained(d, local_files_only=True))


def _smollm2(path: str | None):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trb.models import fetch_model

    path = fetch_model("smollm2", path).path
    return (AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, local_files_only=True).eval(),
            AutoTokenizer.from_pretrained(path, local_files_only=True))


_clock = time.perf_counter  # --clock cpu: time.process_time (this process's CPU time, all its threads)


def _timed(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = _clock()
        out = fn()
        times.append(_clock() - t0)
    return statistics.median(times), out


def _flat(scores) -> list[float]:
    return [s for row in scores for s in row]


def _max_delta(a: list[float], b: list[float]) -> float:
    return max(abs(x - y) for x, y in zip(a, b))


def _lm_eval_runner(model, tok, requests, batch_sizes: list[int]):
    """HFLM.loglikelihood: each batch size timed once; returns a runner at the fastest one."""
    import logging

    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    logging.getLogger("lm_eval").setLevel(logging.ERROR)
    inst = [Instance(request_type="loglikelihood", doc={}, arguments=(ctx, c), idx=k)
            for k, (ctx, c) in enumerate((ctx, c) for ctx, conts in requests for c in conts)]
    tried = {}
    for bs in batch_sizes:
        lm = HFLM(pretrained=model, tokenizer=tok, batch_size=bs, device="cpu", add_bos_token=False)
        t0 = _clock()
        lm.loglikelihood(inst, disable_tqdm=True)
        tried[bs] = _clock() - t0
    best = min(tried, key=tried.get)
    lm = HFLM(pretrained=model, tokenizer=tok, batch_size=best, device="cpu", add_bos_token=False)
    return (lambda: [[float(lp) for lp, _ in lm.loglikelihood(inst, disable_tqdm=True)]]), best, tried


def _floor_rows(tok, requests) -> list[list[int]]:
    """Each context's ids (lm_scoring's tokenisation rule), then every continuation's ids but its last."""
    from trb.adapters.lm_scoring import encode_request

    rows = []
    for ctx, conts in requests:
        ids, cont_ids = encode_request(tok, ctx, conts)
        rows.append(ids + [t for c in cont_ids for t in c[:-1]])
    return rows


def _floor_pass(model, rows: list[list[int]], layout: tuple[int, bool] | None) -> None:
    """Forward passes over ``rows``: one row per pass with no mask (``layout`` None), else ``(budget, masked)``:
    rows sorted by length (longest first) in right-padded batches of at most ``budget`` padded tokens, with a
    padding mask or with none (causal attention alone: a real token never sees the pads behind it)."""
    import torch

    with torch.inference_mode():
        if layout is None:
            for r in rows:
                model(input_ids=torch.tensor([r]), use_cache=False, logits_to_keep=1)
            return
        budget, masked = layout
        order = sorted(rows, key=len, reverse=True)
        k = 0
        while k < len(order):
            width, n = len(order[k]), 1
            while k + n < len(order) and (n + 1) * width <= budget:
                n += 1
            batch = order[k:k + n]
            inp = torch.zeros((n, width), dtype=torch.long)
            mask = torch.zeros((n, width), dtype=torch.long)
            for b, r in enumerate(batch):
                inp[b, :len(r)] = torch.tensor(r)
                mask[b, :len(r)] = 1
            model(input_ids=inp, attention_mask=mask if masked else None, use_cache=False, logits_to_keep=1)
            k += n


def _layout_name(layout: tuple[int, bool] | None) -> str:
    return "1 row" if layout is None else f"{layout[0]}{'' if layout[1] else ', causal'}"


def _floor_runner(model, tok, requests, budgets: list[int]):
    """The unique-token floor: each layout tried once; returns a runner at the fastest one."""
    rows = _floor_rows(tok, requests)
    tried = {}
    for layout in [None, *((b, m) for b in budgets for m in (True, False))]:
        t0 = _clock()
        _floor_pass(model, rows, layout)
        tried[layout] = _clock() - t0
    best = min(tried, key=tried.get)
    return (lambda: _floor_pass(model, rows, best)), best, tried, sum(map(len, rows))


def _bench(name: str, model, tok, requests, args) -> dict:
    """The three methods, interleaved (a, b, c, a, b, c, ...) so that a change of machine load hits all three."""
    from trb.adapters.lm_scoring import score_continuations, score_naive

    n = sum(len(c) for _, c in requests)
    ctx_len = statistics.mean(len(tok(c, add_special_tokens=False)["input_ids"]) for c, _ in requests)
    cont_len = statistics.mean(len(tok(x, add_special_tokens=False)["input_ids"]) for _, cs in requests for x in cs)
    print(f"{name}: {len(requests)} contexts × ≥8 continuations = {n} pairs; mean context {ctx_len:.0f} tokens, "
          f"mean continuation {cont_len:.1f} tokens", file=sys.stderr, flush=True)
    run_b, best, tried = _lm_eval_runner(model, tok, requests, args.lm_eval_batch_sizes)
    print(f"  lm-eval batch sizes, one pass each (req/s): {', '.join(f'{k}: {n / v:.1f}' for k, v in tried.items())}",
          file=sys.stderr, flush=True)
    run_d, layout, tried_d, n_tokens = _floor_runner(model, tok, requests, args.floor_budgets)
    print(f"  floor layouts, one pass each ({n_tokens} unique tokens; s): "
          + ", ".join(f"{_layout_name(k)}: {v:.2f}" for k, v in tried_d.items()),
          file=sys.stderr, flush=True)
    methods = {"a": lambda: score_naive(model, tok, requests), "b": run_b,
               "c": lambda: score_continuations(model, tok, requests), "d": run_d}
    times: dict[str, list[float]] = {k: [] for k in methods}
    out: dict[str, list[float]] = {}
    for rep in range(args.repeats):
        for k, fn in methods.items():
            t, res = _timed(fn, 1)
            times[k].append(t)
            if k != "d":
                out[k] = _flat(res)
        print(f"  repeat {rep + 1}: " + ", ".join(f"({k}) {n / times[k][-1]:.1f} req/s" for k in methods),
              file=sys.stderr, flush=True)
    rate = {k: n / statistics.median(v) for k, v in times.items()}
    return {"model": name, "pairs": n, "contexts": len(requests), "ctx_tokens": ctx_len, "cont_tokens": cont_len,
            **rate, "b_batch": best, "d_layout": _layout_name(layout),
            "d_ba": _max_delta(out["b"], out["a"]), "d_ca": _max_delta(out["c"], out["a"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own choice)")
    ap.add_argument("--sessions", type=int, default=40, help="simulated sessions for the prompts")
    ap.add_argument("--tiny-contexts", type=int, default=250)
    ap.add_argument("--smollm2-contexts", type=int, default=12)
    ap.add_argument("--max-context-tokens", type=int, default=400,
                    help="SmolLM2 contexts at most this long (naive scoring of long prompts takes minutes)")
    ap.add_argument("--lm-eval-batch-sizes", type=lambda s: [int(x) for x in s.split(",")], default=[4, 16, 64])
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="wall: elapsed time; cpu: the process's CPU time (steadier on a loaded machine with --threads 1)")
    ap.add_argument("--floor-budgets", type=lambda s: [int(x) for x in s.split(",")], default=[1024, 4096, 16384],
                    help="padded tokens per batch tried for the floor (d), besides one row per pass")
    ap.add_argument("--smollm2-dir", default=None,
                    help="SmolLM2 directory (default: where trb models fetch puts it; fetched if missing)")
    ap.add_argument("--skip-smollm2", action="store_true")
    ap.add_argument("--skip-tiny", action="store_true")
    args = ap.parse_args()

    import torch

    global _clock
    _clock = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.threads:
        torch.set_num_threads(args.threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs, "
          f"load average {load:.1f}; {args.clock} clock", file=sys.stderr, flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="trb-bench-t1-") as tmp:
        work = Path(tmp)
        prompts = _prompts(_release(work, args.sessions, seed=1))
        if not args.skip_tiny:
            model, tok = _tiny_gpt2(work / "tiny", [p for p, _, _ in prompts])
            rows.append(_bench("tiny GPT-2 (3.4M)", model, tok,
                               _requests(prompts, tok, args.tiny_contexts, 10**9, seed=2), args))
        if not args.skip_smollm2:
            model, tok = _smollm2(args.smollm2_dir)
            rows.append(_bench("SmolLM2-135M-Instruct", model, tok,
                               _requests(prompts, tok, args.smollm2_contexts, args.max_context_tokens, seed=3), args))
    print("| model | pairs (contexts × conts) | mean ctx / cont tokens | (a) naive req/s | (b) lm-eval req/s [batch] "
          "| (c) score_continuations req/s | (d) floor req/s [layout] | (c)/(b) | (c)/(a) | time (c)/(d) | max abs Δ (b−a) "
          "| max abs Δ (c−a) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['model']} | {r['pairs']} ({r['contexts']} × {r['pairs'] / r['contexts']:.0f}) "
              f"| {r['ctx_tokens']:.0f} / {r['cont_tokens']:.1f} | {r['a']:.1f} | {r['b']:.1f} [{r['b_batch']}] "
              f"| {r['c']:.1f} | {r['d']:.1f} [{r['d_layout']}] | {r['c'] / r['b']:.2f}× | {r['c'] / r['a']:.2f}× "
              f"| {r['d'] / r['c']:.2f}× | {r['d_ba']:.1e} | {r['d_ca']:.1e} |")


if __name__ == "__main__":
    main()
