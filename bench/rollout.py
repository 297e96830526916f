"""Rollout cost: `python bench/rollout.py [--repeats 3] [--sessions-mem 1000,10000] [--quick]`.

1. Rollout overhead. Tracks 4 and 5 drive a model through `trb.rollout.run_episodes`. For the
   native adapter (a trace-full reference model, one epoch on a 200-session smoke release)
   and the proxy adapter (a tiny local GPT-2, `tests/trb/engine_helpers.make_tiny_lm`, its
   prompts windowed to the last 2 steps), at batch 1 and batch 64 (`max_batch`: the
   episodes advanced in lockstep), `run_episodes` rolls own-condition viability episodes
   of the built-in task set (its eval (task, seed) pairs, cycled to `--episodes`; for the
   proxy the task budgets are cut to `--proxy-steps`, its model being ~100× slower), and is
   compared with its named peer: the bare adapter calls that rollout makes. One rollout is
   run first with its bound adapter wrapped so that every `emit_many` / `act_many` /
   `act_ablated_many` call is recorded (contexts and overrides); the peer replays exactly
   those calls on the bare adapter (`emit_r_batch` / `act_batch` / `act_ablated_batch`
   where the adapter declares the batched capability, else one `emit_r` / `act` per
   context, as the bound adapter does). Each repeat times one rollout (with an
   `AdapterTimer`, as a track passes one) and its peer, side by side in this process, in
   alternating order, each after a full garbage collection; the table gives medians of
   the times and of the per-repeat ratios, in wall and in this process's CPU time, and
   the rollout against the time its own adapter calls took inside it (the timer), and the
   engine's time per episode-step outside those calls (rollout − the timer's time).
   Goal: rollout / peer ≤ 1.2×.
2. Where the time goes: the recording rollout of each row runs under cProfile; printed are
   the top functions of this repository outside the adapters (`trb/adapters`,
   `trb/reference`): the driver, the environment, the checks.
3. Memory at N concurrent sessions: N native-adapter episodes started at once and advanced
   in lockstep (`max_batch = N`) through the built-in viability tasks with their budget
   cut to `--mem-budget` (3) steps, each N in a fresh subprocess: the peak RSS increase
   over the RSS just before the rollout (Linux `VmHWM`, reset through `clear_refs`), and
   the Python heap's peak (tracemalloc, a second rollout in the same process).

Torch runs on one thread (`--torch-threads`), so neither side changes speed with the load
on the machine's other cores.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "trb"))  # engine_helpers: make_release, make_tiny_lm, make_reference

SPLIT = "eval"


# -- the episodes ----------------------------------------------------------------------------


def _specs(tasks, n: int):
    """``n`` own-condition viability episodes: the task set's eval (task, seed) pairs, cycled."""
    from trb.rollout import EpisodeSpec

    pairs = [(t, s) for t in tasks.of_kind("viability") for s in tasks.seeds_for(t, SPLIT)]
    out = []
    for i in range(n):
        task, seed = pairs[i % len(pairs)]
        pair = f"{task.id}/{seed.k}"
        out.append(EpisodeSpec(f"{pair}/own/{i}", pair, task, seed, "own"))
    return out


def _rollout(bound, tasks, specs, batch: int, timer=None):
    from trb.rollout import run_episodes
    from trb.tracks.rollouts import context_id

    return run_episodes(bound, tasks.env(), specs, language=tasks.language, split=SPLIT,
                        context_id=context_id(tasks), max_batch=batch, timer=timer)


def _release(args, work: Path) -> Path:
    """The smoke release the models learn from (cut once under ``work``, reused after)."""
    from engine_helpers import make_release

    done = work / "release" / "corpus" / "releases" / "0.1.0"
    if (done / "manifest.json").is_file():
        return done
    shutil.rmtree(work / "release", ignore_errors=True)
    return make_release(work / "release", sessions=args.release_sessions, seed=args.seed)


def _native_model(args, work: Path) -> Path:
    """A trace-full reference model, one epoch on the release (trained once under ``work``)."""
    from engine_helpers import make_reference

    model = work / "trace-full"
    if not (model / "config.json").is_file():
        make_reference(_release(args, work), model, "full")
    return model


def _recording(bound):
    """The bound adapter, recording every batched call the driver makes to it (and answering through it)."""
    from trb.adapters.capabilities import BoundAdapter

    class Recording(BoundAdapter):
        def __init__(self):
            super().__init__(bound.adapter, bound.capabilities)
            self.calls: list[tuple[str, list, list | None]] = []

        def emit_many(self, contexts):
            self.calls.append(("emit", list(contexts), None))
            return super().emit_many(contexts)

        def act_many(self, contexts, r_overrides):
            self.calls.append(("act", list(contexts), [dict(r) if r is not None else None for r in r_overrides]))
            return super().act_many(contexts, r_overrides)

        def act_ablated_many(self, contexts):
            self.calls.append(("ablated", list(contexts), None))
            return super().act_ablated_many(contexts)

    return Recording()


def _replay(bound, calls: list) -> tuple[float, float]:
    """The peer: the recorded calls, replayed alone on the bare adapter: (wall s, CPU s)."""
    from trb.adapters.capabilities import BatchedAct, BatchedEmit

    a = bound.adapter
    emit_b, act_b = bound.has(BatchedEmit), bound.has(BatchedAct)
    _collect()
    c0, t0 = time.process_time(), time.perf_counter()
    try:
        _replay_calls(a, calls, emit_b, act_b)
    finally:
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        gc.unfreeze()
    return wall, cpu


def _replay_calls(a, calls: list, emit_b: bool, act_b: bool) -> None:
    for kind, contexts, overrides in calls:
        if kind == "emit":
            if emit_b:
                a.emit_r_batch(contexts)
            else:
                for c in contexts:
                    a.emit_r(c)
        elif kind == "act":
            if act_b:
                a.act_batch(contexts, overrides)
            else:
                for c, r in zip(contexts, overrides):
                    a.act(c, r_override=r)
        else:
            a.act_ablated_batch(contexts)


FREEZE = True


def _collect() -> None:
    """A full collection, then (as `trb run` does around scoring) the heap so far frozen out of later ones."""
    gc.collect()
    if FREEZE:
        gc.freeze()


def _timed_rollout(bound, tasks, specs, batch: int) -> tuple[float, float, int, float]:
    """One rollout, as a track runs it (with an AdapterTimer): (wall s, CPU s, episode-steps, s inside adapter calls)."""
    from trb.tracks.timing import AdapterTimer

    timer = AdapterTimer()
    _collect()
    c0, t0 = time.process_time(), time.perf_counter()
    try:
        traces = _rollout(bound, tasks, specs, batch, timer)
    finally:
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        gc.unfreeze()
    return wall, cpu, sum(len(tr.steps) for tr in traces), timer.seconds


_ADAPTER_FILES = (os.sep + os.path.join("trb", "adapters") + os.sep, os.sep + os.path.join("trb", "reference") + os.sep)


def _top(prof: cProfile.Profile, top: int) -> list[str]:
    """The top functions of this repository outside the adapters (driver, environment, checks), by own time."""
    st = pstats.Stats(prof, stream=io.StringIO())
    total = st.total_tt
    rows = []
    for (fn, line, name), (_cc, nc, tt, ct, _callers) in st.stats.items():
        if not fn.startswith(str(ROOT)) or any(s in fn for s in _ADAPTER_FILES) or "/bench/" in fn:
            continue
        rows.append((tt, ct, nc, f"{os.path.relpath(fn, ROOT)}:{line}({name})"))
    rows.sort(reverse=True)
    engine = sum(r[0] for r in rows)
    out = [f"  profiled total {total:.2f} s; own time in the repository outside trb/adapters and trb/reference: "
           f"{engine:.3f} s ({engine / total:.1%})"]
    out += [f"    {tt * 1e3:8.1f} ms own {ct * 1e3:8.1f} ms cum {nc:8d} calls  {where}" for tt, ct, nc, where in rows[:top]]
    return out


def _overhead(args, work: Path) -> None:
    import torch
    from engine_helpers import make_tiny_lm

    from environments.tasksets import default_taskset
    from trb.adapters.capabilities import bind
    from trb.adapters.native import NativeAdapter
    from trb.adapters.proxy import ProxyAdapter

    torch.set_num_threads(args.torch_threads)
    t0 = time.perf_counter()
    adapters = {}
    if "native" in args.adapters:
        adapters["native"] = NativeAdapter.load(_native_model(args, work))
    if "proxy" in args.adapters:
        lm = work / "tiny-lm"
        if not (lm / "config.json").is_file():
            make_tiny_lm(_release(args, work), lm)
        adapters["proxy"] = ProxyAdapter.load(lm, device="cpu", history=args.proxy_history)
    print(f"# setup (release of {args.release_sessions} sessions, models): {time.perf_counter() - t0:.1f} s")
    default = default_taskset()
    short = _budget_taskset(args.proxy_steps, default.seeds[SPLIT]) if args.proxy_steps else default
    print(f"# rollout overhead: {os.cpu_count()} cores, python {sys.version.split()[0]}, torch {torch.__version__} "
          f"on {args.torch_threads} thread(s); own-condition viability episodes of the built-in task set "
          f"(proxy: budgets cut to {args.proxy_steps or 'their own'} steps); median of {args.repeats}")
    print("| adapter | batch | episodes | steps | adapter calls | rollout s | peer s | rollout steps/s | "
          "peer steps/s | rollout / peer | rollout / peer (CPU) | rollout / its adapter calls | engine µs/step |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    profiles = []
    warm = True
    for name, adapter in adapters.items():
        bound = bind(adapter)
        tasks = short if name == "proxy" else default
        for batch in args.batches:
            n = args.episodes if name == "native" or batch > 1 else args.proxy_batch1_episodes
            specs = _specs(tasks, n)
            if warm:  # first calls: lazy imports, caches, allocator
                _rollout(bound, tasks, specs[:2], batch)
                warm = False
            rec = _recording(bound)
            prof = cProfile.Profile() if args.profile else None
            _collect()
            if prof:
                prof.enable()
            _rollout(rec, tasks, specs, batch)  # the recording run: also warms the model at this batch size
            if prof:
                prof.disable()
                profiles.append((f"{name}, batch {batch} ({n} episodes)", _top(prof, args.profile_top)))
            gc.unfreeze()
            _replay(bound, rec.calls)
            walls, peers, ratios, cpu_ratios, inner, outside = [], [], [], [], [], []
            steps = 0
            for i in range(args.repeats):  # rollout then peer, then peer then rollout, ...: a drift hits both
                if i % 2:
                    p_wall, p_cpu = _replay(bound, rec.calls)
                wall, cpu, steps, in_adapter = _timed_rollout(bound, tasks, specs, batch)
                if not i % 2:
                    p_wall, p_cpu = _replay(bound, rec.calls)
                walls.append(wall)
                peers.append(p_wall)
                ratios.append(wall / p_wall)
                cpu_ratios.append(cpu / p_cpu)
                inner.append(wall / in_adapter)
                outside.append(wall - in_adapter)
            wall, peer = statistics.median(walls), statistics.median(peers)
            print(f"| {name} | {batch} | {n} | {steps:,} | {len(rec.calls):,} | {wall:.2f} | {peer:.2f} | "
                  f"{steps / wall:,.0f} | {steps / peer:,.0f} | {statistics.median(ratios):.2f}x | "
                  f"{statistics.median(cpu_ratios):.2f}x | {statistics.median(inner):.2f}x | "
                  f"{statistics.median(outside) / steps * 1e6:.0f} |", flush=True)
    for what, lines in profiles:
        print(f"\n# profile of the recording rollout: {what}")
        print("\n".join(lines))


# -- memory at N concurrent sessions -----------------------------------------------------------


def _budget_taskset(budget: int, seeds: int):
    """The built-in viability tasks with their budget cut to ``budget`` steps, ``seeds`` eval seeds each."""
    from environments.tasksets import default_taskset, parse_taskset

    base = default_taskset()
    tasks = base.of_kind("viability")
    lines = ["[taskset]", f'name = "bench-rollout-budget-{budget}"', 'version = "1"', f'environment = "{base.environment}"',
             f'language = "{base.language}"', "", "[seeds]", f"eval = {seeds}", ""]
    for t in tasks:
        lines += ["[[viability]]", f'id = "{t.id}"']
        lines += [f"{k} = {json.dumps(v)}" for k, v in t.table.items() if k not in ("id", "budget")]
        lines += [f"budget = {min(budget, t.table['budget'])}", ""]
    return parse_taskset("\n".join(lines).encode(), f"bench-rollout-budget-{budget}")


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def _mem_child(model: str, n: int, budget: int, threads: int) -> dict:
    """In a fresh process: one rollout of ``n`` concurrent sessions; RSS then (a second rollout) tracemalloc."""
    import tracemalloc

    import torch

    from environments.tasksets import default_taskset
    from trb.adapters.capabilities import bind
    from trb.adapters.native import NativeAdapter

    torch.set_num_threads(threads)
    bound = bind(NativeAdapter.load(model))
    tasks = _budget_taskset(budget, -(-n // len(default_taskset().of_kind("viability"))))
    specs = _specs(tasks, n)
    _rollout(bound, tasks, _specs(tasks, 12), 12)  # warm: imports, caches
    gc.collect()
    rss0 = _status_kb("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:  # reset VmHWM to the current RSS
        f.write("5")
    hwm0 = _status_kb("VmHWM")
    t0 = time.perf_counter()
    traces = _rollout(bound, tasks, specs, n)
    wall = time.perf_counter() - t0
    hwm = _status_kb("VmHWM")
    rss_after = _status_kb("VmRSS")
    steps = sum(len(tr.steps) for tr in traces)
    del traces
    gc.collect()
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    traces = _rollout(bound, tasks, specs, n)
    cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"n": n, "steps": steps, "wall_s": wall, "rss0_kb": rss0, "hwm0_kb": hwm0, "hwm_kb": hwm,
            "rss_after_kb": rss_after, "py_peak_b": peak - base, "py_kept_b": cur - base,
            "episodes": len(traces)}


def _memory(args, work: Path) -> None:
    model = _native_model(args, work)
    print(f"\n# memory at N concurrent sessions: native trace-full, max_batch = N, budget = {args.mem_budget} steps; "
          "each N in a fresh process")
    print("| sessions | episode-steps | rollout s | RSS before MB | peak RSS increase MB | bytes/session (RSS) | "
          "Python heap peak MB | bytes/session (heap peak) | heap kept by the traces MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sessions_mem:
        out = subprocess.run([sys.executable, __file__, "--_mem-child", str(model), str(n), str(args.mem_budget),
                              str(args.torch_threads)], capture_output=True, text=True, check=False)
        if out.returncode != 0:
            print(f"| {n:,} | failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode} |")
            continue
        m = json.loads(out.stdout.strip().splitlines()[-1])
        inc = (m["hwm_kb"] - m["rss0_kb"]) * 1024
        print(f"| {n:,} | {m['steps']:,} | {m['wall_s']:.2f} | {m['rss0_kb'] / 1024:.0f} | {inc / 2**20:.1f} | "
              f"{inc / n:,.0f} | {m['py_peak_b'] / 2**20:.1f} | {m['py_peak_b'] / n:,.0f} | "
              f"{m['py_kept_b'] / 2**20:.1f} |", flush=True)


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "--_mem-child":
        _, _, model, n, budget, threads = sys.argv
        print(json.dumps(_mem_child(model, int(n), int(budget), int(threads))))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sessions-mem", default="1000,10000",
                    help="concurrent sessions for the memory part, comma-separated (default 1000,10000; 0: skip)")
    ap.add_argument("--quick", action="store_true", help="a fast smoke: 1 repeat, 16 episodes, memory at 100 and 1000")
    ap.add_argument("--adapters", default="native,proxy")
    ap.add_argument("--batches", default="1,64", help="episodes advanced in lockstep, comma-separated")
    ap.add_argument("--episodes", type=int, default=64, help="episodes per rollout (default 64)")
    ap.add_argument("--proxy-batch1-episodes", type=int, default=16,
                    help="episodes of the proxy's batch-1 rollout (default 16: one at a time is slow)")
    ap.add_argument("--proxy-history", type=int, default=2, help="earlier steps the proxy's prompts show")
    ap.add_argument("--proxy-steps", type=int, default=3,
                    help="the proxy's episodes: the task budgets cut to this many steps (default 3; 0: the task set's)")
    ap.add_argument("--release-sessions", type=int, default=200)
    ap.add_argument("--mem-budget", type=int, default=3, help="steps per episode in the memory part")
    ap.add_argument("--no-profile", dest="profile", action="store_false")
    ap.add_argument("--profile-top", type=int, default=8)
    ap.add_argument("--no-freeze", action="store_true",
                    help="do not gc.freeze() the heap around the timed rollouts and replays (trb run freezes it)")
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", type=Path, default=None, help="keep the release and models here (default: a temp dir)")
    args = ap.parse_args()
    global FREEZE
    FREEZE = not args.no_freeze
    if args.quick:
        args.repeats, args.episodes, args.proxy_batch1_episodes = 1, 16, 4
        args.batches, args.sessions_mem = "1,16", "100,1000"
    args.adapters = [a for a in args.adapters.split(",") if a]
    args.batches = [int(b) for b in args.batches.split(",")]
    args.sessions_mem = [int(n) for n in args.sessions_mem.split(",") if int(n) > 0]
    work = args.work or Path(tempfile.mkdtemp(prefix="trb-bench-rollout-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if args.adapters:
            _overhead(args, work)
        if args.sessions_mem:
            _memory(args, work)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
