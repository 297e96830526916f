"""Track 2 trial throughput: `python bench/grounding.py [--repeats 3] [--threads 1] [--skip-smollm2]`.

Track 2 (grounding by concept injection, ``trb/tracks/track2.py``) adds a concept direction to a
model's state z and reads the probability the report's slot gives the concept: one *trial* per
(step context, site, concept, condition, strength). Two tiers, each against a named peer run
in the same process:

1. **Native** (a reference model, ``trb.reference.train_reference(release, "full", ..., epochs=1)``
   on a simulated smoke release, ``tests/trb/engine_helpers.make_release(sessions=120, seed=7)``):
   ``score_track2`` on every step context of the eval and dev splits (trials = rows it returns),
   and ``run_tracks(tracks=("2",))``, the whole ``trb run`` of Track 2 into a fresh results store.
   Peer: the bare adapter calls Track 2 makes, every ``slot_probs_injected`` call of one recorded
   ``score_track2``, replayed alone on the same contexts and vectors. Each repeat times
   ``score_track2``, then its peer, then ``run_tracks``, each after a full collection with the heap
   frozen (as ``trb run`` scores); medians of ``--native-repeats`` (5: they take seconds).
2. **Proxy** (``ProxyAdapter.load``: a tiny GPT-2 made here, and SmolLM2-135M-Instruct from
   ``trb models fetch smollm2``): the trials of one ``slot_probs_injected`` call, built as the proxy
   builds them: emit_r's base prompt of real step contexts (``ProxyAdapter._z_prompt``), the suffix
   ``" goal="`` or ``" planned_next="``, the slot's values followed by ``";"`` as candidates (goal:
   the release's most frequent goal values, ``--goal-values``; planned_next: the step's actions),
   one trial per (context, concept), context by context as ``score_track2`` orders them (a context's
   trials together), the concept's vector times strength 4 added at the adapter's default site (its
   middle layer). Scored by

   (a) the peer, "recompute each prompt": a plain forward pass over prompt + suffix + candidate,
       one per candidate, with the same addition at the prompt's last position (``_plain`` of
       ``tests/trb/test_steering.py``, which the tests hold ``score_injected`` to);
   (b) ``score_injected(..., chunk=1)``: one trial per chunk, so no prompt is shared between trials;
   (c) ``score_injected`` as ``slot_probs_injected`` calls it (its defaults: chunks cut at prompt
       boundaries, at most 16 prompts and 1,024 rows), rows in Track 2's order: a prompt's ids but
       the last are run once and shared by all its trials;
   (d) the call before this order was fixed: the same rows concept-major (a concept across every
       context, then the next) in chunks of 32 rows, so a prompt is run again in every chunk it
       appears in (not run when it is the same work as (c), fewer contexts than a chunk: "= (c)").

   (a) and (b) cost the same for every trial, so they are timed on the first ``--naive-trials`` trials
   (one concept across the first contexts); (c) and (d) on all of them. Methods run interleaved
   (a, b, c, d, a, …) so a change of load hits all four; trials/s are medians of ``--repeats``; max |Δ|
   is over the trials (a) scored, every candidate's log-likelihood, in nats, against (a). "prompt
   passes / trial" counts the prompts a method runs forward (once per chunk they appear in) per trial.

Nothing here asserts a speed: it prints tables (stdout) and progress (stderr).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "trb"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

STRENGTH = 4.0  # trb.tracks.track2.DEFAULT_STRENGTH


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _timed(fn) -> tuple[float, float, object]:
    """(wall s, CPU s, result) of ``fn()``, after a full collection, with the heap so far frozen (as trb run scores)."""
    gc.collect()
    gc.freeze()
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, time.process_time() - c0, out
    finally:
        gc.unfreeze()


# -- native --------------------------------------------------------------------------------------------------


class _Recording:
    """Records every ``slot_probs_injected`` call made on ``adapter`` (and answers through it)."""

    def __init__(self, adapter):
        self.adapter = adapter
        self.calls: list[tuple] = []
        self._orig = adapter.slot_probs_injected

    def __enter__(self):
        def record(contexts, slot, site, vectors, strength):
            self.calls.append((list(contexts), slot, site, vectors.copy() if hasattr(vectors, "copy") else vectors,
                               strength))
            return self._orig(contexts, slot, site, vectors, strength)

        self.adapter.slot_probs_injected = record
        return self

    def __exit__(self, *exc):
        del self.adapter.slot_probs_injected  # the class's method again


def native(args, work: Path) -> dict:
    from engine_helpers import make_release

    from trb.adapters.native import NativeAdapter
    from trb.reference import train_reference
    from trb.releases import Release
    from trb.run import RunSpec, run_tracks
    from trb.tracks.track2 import score_track2, track2_items

    t0 = time.perf_counter()
    release = make_release(work / "release", sessions=args.sessions, seed=7)
    model_dir = work / "trace-full"
    train_reference(release, "full", model_dir, seed=0, epochs=1, progress=False)
    adapter = NativeAdapter.load(model_dir)
    rel = Release(release)
    try:
        items = list(track2_items(rel, "eval"))
    finally:
        rel.close()
    _log(f"native: release of {args.sessions} sessions and a trace-full model in {time.perf_counter() - t0:.1f} s; "
         f"{len(items)} step contexts (eval + dev)")
    with _Recording(adapter) as rec:
        rows, _ = score_track2(adapter, items)  # also warms caches
    calls = rec.calls

    def bare():
        for contexts, slot, site, vectors, strength in calls:
            adapter.slot_probs_injected(contexts, slot, site, vectors, strength)

    stores = itertools.count()

    def run():  # the whole `trb run --tracks 2`, into a fresh results store each time
        return run_tracks(RunSpec(release, baseline="trace-full", tracks=("2",),
                                  results=work / f"results-{next(stores)}.duckdb"), adapter, progress=False)

    t: dict[str, list] = {k: [] for k in ("score", "bare", "run", "score_cpu", "bare_cpu", "ratio", "ratio_cpu")}
    for rep in range(args.native_repeats):
        ws, cs, out = _timed(lambda: score_track2(adapter, items))
        wb, cb, _ = _timed(bare)
        wr, _, run_row = _timed(run)
        t["score"].append(ws), t["bare"].append(wb), t["run"].append(wr)
        t["ratio"].append(ws / wb), t["ratio_cpu"].append(cs / cb)
        _log(f"  repeat {rep + 1}: score_track2 {ws:.2f} s, bare calls {wb:.2f} s, run_tracks {wr:.2f} s")
    n = len(out[0])
    if not n == len(rows) == run_row["n_items"]:
        _log(f"  (trial counts differ: {n}, {len(rows)}, {run_row['n_items']})")
    med = statistics.median
    return {"contexts": len(items), "trials": n, "calls": len(calls), "score_s": med(t["score"]),
            "bare_s": med(t["bare"]), "run_s": med(t["run"]), "ratio": med(t["ratio"]),
            "ratio_cpu": med(t["ratio_cpu"])}


# -- proxy ---------------------------------------------------------------------------------------------------


def _goal_values(release: Path, n: int) -> list[str]:
    """The ``n`` goal values most often recorded in the train split (the concepts a proxy's directions would have)."""
    from trb.releases import Release

    rel = Release(release)
    try:
        counts = Counter(r["goal"] for s in rel.sessions(split="train") for t in range(len(s.steps))
                         for r in [s.recorded_r(t) or {}] if r.get("goal"))
    finally:
        rel.close()
    return [v for v, _ in counts.most_common(n)]


def _contexts(release: Path):
    from trb.releases import Release
    from trb.tracks.track2 import track2_items

    rel = Release(release)
    try:
        return [i.context for i in track2_items(rel, "eval") if i.context.action_space]
    finally:
        rel.close()


def _pick(adapter, contexts, n: int):
    """``n`` contexts at evenly spaced quantiles of their prompt length (short to long)."""
    tok = adapter.tokenizer
    by_len = sorted(contexts, key=lambda c: len(tok(adapter._z_prompt(c), add_special_tokens=False)["input_ids"]))
    return [by_len[min(len(by_len) - 1, int((k + 0.5) * len(by_len) / n))] for k in range(n)] if n <= len(by_len) \
        else [by_len[k % len(by_len)] for k in range(n)]


def _workload(adapter, contexts, slot: str, goals: list[str], seed: int):
    """Track 2's trials of one ``slot_probs_injected`` call: rows (prompt, suffix, candidates) and vectors,
    context by context as ``score_track2`` orders them; and the concept-major order of the same rows."""
    import numpy as np

    from trb.adapters.proxy import _delim
    from trb.adapters.steering import last_states

    layer = int(adapter.activation_sites()[0].split(".", 1)[1])
    prompts = [adapter._z_prompt(c) for c in contexts]
    z = last_states(adapter.model, adapter.tokenizer, prompts, layer)
    scale = float(np.mean(np.linalg.norm(z, axis=1))) / 4  # a class gap of a quarter of |z|
    concepts = goals if slot == "goal" else sorted({a for c in contexts for a in c.action_space})
    rng = np.random.default_rng(seed)
    dirs = rng.standard_normal((len(concepts), z.shape[1]))
    dirs *= scale / np.linalg.norm(dirs, axis=1, keepdims=True)
    rows, vecs, keys = [], [], []
    for i, (c, p) in enumerate(zip(contexts, prompts)):
        values = goals if slot == "goal" else list(c.action_space)
        for j, v in enumerate(concepts):
            if v in values:
                rows.append((p, f" {slot}=", [x + _delim(slot) for x in values]))
                vecs.append(STRENGTH * dirs[j])
                keys.append((j, i))
    concept_major = sorted(range(len(rows)), key=lambda r: keys[r])
    return layer, rows, np.stack(vecs), concept_major


#: (d)'s chunking: 32 rows a chunk, any number of prompts (score_injected before prompt-boundary chunks)
OLD_CHUNK = {"chunk": 32, "prompts": 32}


def _prompt_passes(rows, chunk: int = 1024, prompts: int = 16) -> int:
    """Prompts run forward by score_injected over ``rows``: each chunk's distinct prompts, once per chunk."""
    from trb.adapters.steering import _chunks

    return sum(len({p for p, _, _ in rows[a:b]}) for a, b in _chunks([p for p, _, _ in rows], chunk, prompts))


def proxy_row(name: str, adapter, contexts, slot: str, goals: list[str], naive_trials: int, args) -> dict:
    import numpy as np

    from tests.trb.test_steering import _plain  # the peer the steering tests hold score_injected to
    from trb.adapters.steering import score_injected

    model, tok = adapter.model, adapter.tokenizer
    layer, rows, vecs, order = _workload(adapter, contexts, slot, goals, args.seed)
    k = min(naive_trials, len(rows))
    o_rows, o_vecs = [rows[i] for i in order], vecs[order]  # concept-major: the order before the fix
    methods = {
        "a": (k, lambda: [_plain(model, tok, p, s, c, layer, v) for (p, s, c), v in zip(rows[:k], vecs[:k])]),
        "b": (k, lambda: score_injected(model, tok, rows[:k], layer, vecs[:k], chunk=1)),
        "c": (len(rows), lambda: score_injected(model, tok, rows, layer, vecs)),
        "d": (len(rows), lambda: score_injected(model, tok, o_rows, layer, o_vecs, **OLD_CHUNK)),
    }
    same = _prompt_passes(rows) == _prompt_passes(o_rows, **OLD_CHUNK)
    if same:  # every chunk holds the same prompts either way (fewer contexts than a chunk): (d) is (c)'s work
        del methods["d"]
    n_tok = [len(tok(p, add_special_tokens=False)["input_ids"]) for p in dict.fromkeys(p for p, _, _ in rows)]
    _log(f"{name}, slot {slot}: {len(contexts)} contexts, {len(rows)} trials, {len(rows[0][2])} candidates each, "
         f"prompts of {statistics.mean(n_tok):.0f} tokens on average; layer {layer}")
    times: dict[str, list[float]] = {m: [] for m in methods}
    out: dict[str, list] = {}
    for rep in range(args.repeats):
        for m, (_, fn) in methods.items():
            wall, _, res = _timed(fn)
            times[m].append(wall)
            out[m] = res
        _log(f"  repeat {rep + 1}: " + ", ".join(f"({m}) {methods[m][0] / times[m][-1]:.1f} trials/s" for m in methods))
    rate = {m: methods[m][0] / statistics.median(times[m]) for m in methods}
    ref = np.asarray([x for r in out["a"] for x in r])

    def delta(m):
        return float(np.max(np.abs(np.asarray([x for r in out[m][:k] for x in r]) - ref)))

    if same:
        rate["d"] = rate["c"]
    return {"model": name, "slot": slot, "contexts": len(contexts), "trials": len(rows), "naive": k,
            "candidates": len(rows[0][2]), "tokens": statistics.mean(n_tok), **rate,
            "passes_c": _prompt_passes(rows) / len(rows), "passes_d": _prompt_passes(o_rows, **OLD_CHUNK) / len(rows),
            "d_ca": delta("c"), "d_ba": delta("b"), "same": same}


def _smollm2_dir(path: str | None) -> Path:
    from trb.models import fetch_model

    return Path(fetch_model("smollm2", path).path)


def proxy(args, work: Path) -> list[dict]:
    from engine_helpers import save_tiny_gpt2

    from trb.adapters.proxy import ProxyAdapter

    release = work / "release" / "corpus" / "releases" / "0.1.0"
    contexts = _contexts(release)
    goals = _goal_values(release, args.goal_values)
    history = None if args.history == "all" else int(args.history)
    out = []
    models = [] if args.skip_tiny else [("tiny GPT-2 (4 × 256)", lambda: save_tiny_gpt2(work / "tiny-gpt2", [
        ProxyAdapter.prompt(c, None) for c in contexts]), args.tiny_contexts, args.tiny_naive_trials)]
    if not args.skip_smollm2:
        models.append(("SmolLM2-135M-Instruct", lambda: _smollm2_dir(args.smollm2_dir), args.smollm2_contexts,
                       args.naive_trials))
    for name, make, n_ctx, naive_trials in models:
        t0 = time.perf_counter()
        adapter = ProxyAdapter.load(make(), device="cpu", history=history)
        _log(f"{name}: loaded through ProxyAdapter.load in {time.perf_counter() - t0:.1f} s "
             f"(emit window: {adapter.emit_history if adapter.emit_history is not None else 'all'} earlier steps)")
        picked = _pick(adapter, contexts, n_ctx)
        for slot in ("goal", "planned_next"):
            out.append(proxy_row(name, adapter, picked, slot, goals, naive_trials, args))
        del adapter
        gc.collect()
    return out


def _release_passes(n_contexts: int, concepts: int) -> tuple[float, float]:
    """Prompt passes per trial of ``score_injected`` on one Track 2 call over ``n_contexts`` contexts: in
    Track 2's order (context by context) and in the old one (concept-major, chunks of 32)."""
    now = [(str(i), "", ()) for i in range(n_contexts) for _ in range(concepts)]
    old = [(str(i), "", ()) for _ in range(concepts) for i in range(n_contexts)]
    return _prompt_passes(now) / len(now), _prompt_passes(old, **OLD_CHUNK) / len(old)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--native-repeats", type=int, default=5, help="repeats of the native part (default 5: seconds each)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1: the machine is shared)")
    ap.add_argument("--sessions", type=int, default=120, help="simulated sessions of the release (default 120)")
    ap.add_argument("--goal-values", type=int, default=12, help="goal concepts (candidates) of the proxy (default 12)")
    ap.add_argument("--history", default="1",
                    help="earlier steps in the proxy's prompts: a number or 'all' (default 1: the trained proxy "
                         "baselines' emit_r window; 'all' is SmolLM2 as fetched, prompts about 3.5x longer)")
    ap.add_argument("--tiny-contexts", type=int, default=36,
                    help="contexts of the tiny GPT-2 (default 36: more than a chunk of 32, as in a real Track 2 run)")
    ap.add_argument("--smollm2-contexts", type=int, default=2, help="contexts of SmolLM2 (default 2)")
    ap.add_argument("--naive-trials", type=int, default=1, help="SmolLM2 trials timed for (a) and (b) (default 1)")
    ap.add_argument("--tiny-naive-trials", type=int, default=8,
                    help="tiny GPT-2 trials timed for (a) and (b) (default 8)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smollm2-dir", default=None,
                    help="SmolLM2 directory (default: where trb models fetch puts it; fetched if missing)")
    ap.add_argument("--skip-smollm2", action="store_true")
    ap.add_argument("--skip-native", action="store_true")
    ap.add_argument("--skip-tiny", action="store_true")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    _log(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {os.cpu_count()} CPUs, load average "
         f"{load:.1f}; median of {args.repeats}")
    work = Path(tempfile.mkdtemp(prefix="trb-bench-grounding-"))
    try:
        nat = None if args.skip_native else native(args, work)
        if args.skip_native:
            from engine_helpers import make_release

            make_release(work / "release", sessions=args.sessions, seed=7)
        rows = proxy(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if nat is not None:
        print(f"Native tier: trace-full reference model, {nat['contexts']} step contexts (eval + dev), "
              f"{nat['calls']} slot_probs_injected calls; median of {args.native_repeats}")
        print()
        print("| trials | score_track2 s | trials/s | bare slot_probs_injected calls s | trials/s (bare) "
              "| score_track2 / bare | (CPU) | run_tracks(tracks=2) s | trials/s (run) |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        print(f"| {nat['trials']:,} | {nat['score_s']:.2f} | {nat['trials'] / nat['score_s']:,.0f} | {nat['bare_s']:.2f} "
              f"| {nat['trials'] / nat['bare_s']:,.0f} | {nat['ratio']:.2f}x | {nat['ratio_cpu']:.2f}x "
              f"| {nat['run_s']:.2f} | {nat['trials'] / nat['run_s']:,.0f} |")
        print()
    print(f"Proxy tier: one slot_probs_injected call's trials (strength {STRENGTH:g}, history {args.history}); "
          f"trials/s, median of {args.repeats}")
    print()
    print("| model | slot | contexts × concepts = trials | candidates | prompt tokens (mean) "
          "| (a) naive | (b) chunk=1 | (c) score_injected | (d) concept-major, chunks of 32 | (c)/(a) | (c)/(b) "
          "| prompt passes / trial (c), (d) | max abs Δ (c−a) | max abs Δ (b−a) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        d = "= (c)" if r["same"] else f"{r['d']:.2f}"
        print(f"| {r['model']} | {r['slot']} | {r['contexts']} × {r['trials'] // r['contexts']} = {r['trials']} "
              f"| {r['candidates']} | {r['tokens']:.0f} | {r['a']:.2f} [{r['naive']}] | {r['b']:.2f} [{r['naive']}] "
              f"| {r['c']:.2f} | {d} | {r['c'] / r['a']:.1f}x | {r['c'] / r['b']:.1f}x "
              f"| {r['passes_c']:.2f}, {r['passes_d']:.2f} | {r['d_ca']:.1e} | {r['d_ba']:.1e} |")
    if nat is not None:
        now, old = _release_passes(nat["contexts"], args.goal_values)
        print(f"\nIn a Track 2 run on this release ({nat['contexts']} contexts), a goal call of {args.goal_values} "
              f"concepts gives score_injected {now:.3f} prompt passes per trial in Track 2's order, {old:.3f} in the "
              "old one (concept-major rows, chunks of 32).")


if __name__ == "__main__":
    main()
