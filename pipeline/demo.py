"""`trb-demo`: the whole pipeline on the simulated world, end to end (a SMOKE TEST).

simulate → ingest → smoke release → train both native references and the two LM
baselines on the train split, and learn every model's Track 2 concept directions there →
Tracks 1–5 on all five spec baselines (§4: instruct base, CoT-prompted base and
CoT-supervised finetune through the proxy adapter, where Track 2 is proxy-tier grounding; the
Trace-AI ablation and full model through the native adapter) on the eval split, and Tracks 1–5
on the transfer split (Track 6, with the demo's trainer recorded) → the report and its plots. Deterministic for a seed; leaves the
corpus, the release, the checkpoints and ``results.duckdb`` in the work directory
for ``trb report`` and ``trb query``.

The demo drives the corpus toolkit through its public API (``corpus``) and the eval
engine through its own (``trb``): it is the one place where the pipeline's two halves
meet, and it lives outside both. The eval engine itself reads only the release directory.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from trb.errors import UsageError

__all__ = ["DEMO_SESSIONS", "demo_baseline_settings", "run_demo"]

#: Sessions the demo simulates: 500 kept `make demo` under 8 minutes with Tracks 1-5 on the eval and the transfer
#: split for all five baselines; on the pinned numerics (one thread, AVX2) it took 8 min 0 s in one process and takes
#: 6 min 31 s with the two LM baselines trained side by side (:class:`_TrainBeside`; measured 2026-12-04, seed 1:
#: bench/README.md "make demo").
DEMO_SESSIONS = 500
#: The tracks the demo runs on every baseline: 1, 2 and 3 on the release, 4 and 5 as closed-loop rollouts on the
#: built-in task set (environments/tasksets/grid-rollouts-v2.toml).
DEMO_TRACKS = ("1", "2", "3", "4", "5")
#: The tracks of the demo's transfer-split runs (Track 6): 1–3 on the release's transfer sessions, 4 and 5 as
#: rollouts on the task set's transfer tasks of the release's transfer contexts (one seed each, as on eval), with
#: Track 4 also acting the transfer split's interventions through.
DEMO_TRANSFER_TRACKS = ("1", "2", "3", "4", "5")
#: Track 2's trial budget in the demo, the same for every baseline (a fixed hash sample, recorded with each
#: run): 6 contexts of each split and every concept injected into each, so every concept has 6 injected trials,
#: over Track 2's minimum of 5 (trb.tracks.track2.MIN_TRIALS; at 10 contexts × 3 of ~17 concepts each had 1–2 and
#: every concept fell out of the headline). A proxy model scores every value of the slot for every trial: at 8
#: contexts Track 2 took 20-28 s of each proxy run, 2 min 10 s of the demo's 8 min 6 s.
DEMO_GROUNDING = {"max_contexts": 6}
#: Track 4's interventions in the demo (Track 4's max_interventions, a fixed hash sample by cf_id): 20 of each
#: split's, two episodes each (the default, 40, took 8-12 s of each proxy run's Track 4).
DEMO_INTERVENTIONS = 20
#: Who trained the demo's models, recorded with every run: the simulated transfer contexts were collected by
#: other (simulated) labs, so the transfer-provenance rule (spec §5) lets the demo run them.
DEMO_TRAINER = "TRB demo (local training)"
#: Held-out episodes per task in the demo's rollouts: the built-in task set with one eval seed per task
#: (TaskSet.with_seeds: its own content SHA, recorded with the SHA it derives from). The set itself defines
#: 4; with 4 the demo took 6 min 12 s here (the proxy baselines' rollouts grow with the episodes).
DEMO_ROLLOUT_SEEDS = 1


def demo_baseline_settings(max_pairs: int | None = None):
    """The LM baselines' settings in the demo: the library defaults, on at most ``max_pairs`` train steps."""
    from trb.baselines import BaselineSettings

    return BaselineSettings(max_pairs=max_pairs)


#: The packaged example the demo ingests with the simulated sessions (:func:`corpus.examples.example_path`).
_EXAMPLE = "7f3a"


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _train_lm(release_dir: str, variant: str, out: str, seed: int, settings) -> float:
    """A spawned process's work: train one LM baseline on the pinned numerics, one thread (as the demo's own)."""
    from trb.numerics import check_pinned, pin_environment, pinned_threads

    pin_environment()  # inherited already; set again before torch computes
    check_pinned("the demo's LM baseline training")
    from trb.baselines import train_baseline

    t = time.perf_counter()
    with pinned_threads():
        train_baseline(release_dir, variant, out, seed=seed, settings=settings, progress=False)
    return time.perf_counter() - t


class _TrainBeside:
    """One LM baseline trained in a second process while this one trains the other: each on one thread with the
    pinned kernels, so each model is bit for bit the one a single process trains (the demo's test compares
    them), in about half the wall time on two cores. With one CPU it is not started (``running`` False)."""

    def __init__(self, variant: str, release_dir, out: Path, seed: int, settings) -> None:
        self.out, self.seconds, self.future, self.pool = out, 0.0, None, None
        if (os.cpu_count() or 1) < 2:
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        self.future = self.pool.submit(_train_lm, str(release_dir), variant, str(out), seed, settings)

    @property
    def running(self) -> bool:
        return self.future is not None

    def stop(self) -> None:
        """This process failed: end the other one too (nothing it writes is kept: the demo's directory is spent)."""
        if self.pool is not None:
            for proc in list(getattr(self.pool, "_processes", {}).values()):
                proc.terminate()
            self.pool.shutdown(wait=True, cancel_futures=True)

    def wait(self) -> Path:
        try:
            self.seconds = self.future.result()
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)
        return self.out


def run_demo(workdir: str | os.PathLike, *, seed: int = 1, sessions: int = DEMO_SESSIONS, progress: bool = True,
             baseline_settings=None, rollout_seeds: int = DEMO_ROLLOUT_SEEDS) -> dict:
    """Run the pipeline into ``workdir`` (which must be empty or absent); return paths and the report dict.

    ``baseline_settings`` (a :class:`trb.baselines.BaselineSettings`) sizes the LM baselines'
    training; the default is the library defaults on every train step.
    """
    from trb.numerics import check_pinned, describe, pinned_threads

    check_pinned("the demo")  # its figures are quoted in the docs: the same kernels on every machine
    work = Path(workdir)
    if work.exists() and any(work.iterdir()):
        raise UsageError(f"{work} is not empty; give an empty or new --workdir (the demo never overwrites)")
    work.mkdir(parents=True, exist_ok=True)
    with pinned_threads():  # MKL's results are the same for the same thread count only
        result = _run(work, seed=seed, sessions=sessions, progress=progress, baseline_settings=baseline_settings,
                      rollout_seeds=rollout_seeds)
        result["conclusions"]["numerics"] = describe()
    (work / "conclusions.json").write_text(json.dumps(result["conclusions"], indent=2, ensure_ascii=False) + "\n",
                                           encoding="utf-8")
    return result


def _run(work: Path, *, seed: int, sessions: int, progress: bool, baseline_settings, rollout_seeds: int) -> dict:
    """:func:`run_demo`'s stages, in ``work`` (empty), on the pinned numerics."""
    from corpus import Corpus, ingest, init_corpus
    from corpus.examples import example_path
    from corpus.release import cut_release
    from corpus.simulate import write_simulation
    from trb.adapters.native import NativeAdapter
    from trb.adapters.proxy import ProxyAdapter
    from trb.baselines import BASELINE_RUNS, TRAINED_VARIANTS, train_baseline
    from trb.grounding import write_concepts
    from trb.reference.train import train_reference
    from trb.report import build_report, plot_profiles, plot_tracks, render_markdown
    from trb.report.conclusions import conclusions, render_conclusions
    from trb.results import ResultsStore
    from trb.run import RunSpec, run_tracks

    t0 = time.perf_counter()
    timings = {}

    def step(name: str, t: float) -> None:
        timings[name] = time.perf_counter() - t
        _say(f"[demo] {name}: {timings[name]:.1f} s")

    t = time.perf_counter()
    sim = work / "simulated.jsonl.gz"
    _say(f"[demo] simulating {sessions} sessions (seed {seed}) -> {sim}")
    write_simulation(sim, n_sessions=sessions, seed=seed, progress=progress)
    corpus = Corpus(init_corpus(work / "corpus"))
    files = [sim, example_path(_EXAMPLE)]
    ingest(corpus, files, progress=progress)
    step("simulate + ingest", t)

    t = time.perf_counter()
    release = cut_release(corpus, "0.1.0", kind="smoke", progress=progress)
    _say(f"[demo] smoke release {release.directory} SHA {release.manifest['release_sha']}")
    step("release", t)

    models, runs = {}, {}
    for variant in ("ablation", "full"):
        t = time.perf_counter()
        out = work / "models" / f"trace-{variant}"
        train_reference(release.directory, variant, out, seed=seed, progress=progress and sys.stderr.isatty())
        models[variant] = out
        step(f"train trace-{variant}", t)
    lm_settings = baseline_settings or demo_baseline_settings()
    t = time.perf_counter()
    beside = _TrainBeside(TRAINED_VARIANTS[0], release.directory, work / "models" / TRAINED_VARIANTS[0], seed,
                          lm_settings)
    try:
        for variant in TRAINED_VARIANTS[1 if beside.running else 0:]:
            tv = time.perf_counter()
            out = work / "models" / variant
            train_baseline(release.directory, variant, out, seed=seed, settings=lm_settings,
                           progress=progress and sys.stderr.isatty())
            models[variant] = out
            step(f"train {variant}", tv)
    except BaseException:
        beside.stop()
        raise
    if beside.running:
        models[TRAINED_VARIANTS[0]] = beside.wait()
        _say(f"[demo] train {TRAINED_VARIANTS[0]}: {beside.seconds:.1f} s (in a second process, beside)")
        step(f"train {' and '.join(TRAINED_VARIANTS)}", t)
    t = time.perf_counter()
    for variant in TRAINED_VARIANTS:  # the native references wrote theirs while training
        write_concepts(models[variant], release.directory, adapter="proxy")
    step("concept directions (LM baselines)", t)
    from environments.tasksets import default_taskset

    tasks = default_taskset().with_seeds(eval=rollout_seeds, transfer=rollout_seeds)
    results = work / "results.duckdb"
    options = {"2": dict(DEMO_GROUNDING), "4": {"max_interventions": DEMO_INTERVENTIONS}}
    transfer = "transfer" in (release.manifest.get("counts", {}).get("sessions") or {})
    adapters = [(baseline, f"proxy, scaffold {scaffold}",
                 lambda w=weights, s=scaffold: ProxyAdapter.load(models[w], scaffold=s))
                for baseline, (weights, scaffold) in BASELINE_RUNS.items()]
    adapters += [(f"trace-{v}", "native", lambda v=v: NativeAdapter.load(models[v])) for v in ("ablation", "full")]
    for baseline, how, load in adapters:
        t = time.perf_counter()
        adapter = load()
        spec = RunSpec(release.directory, baseline=baseline, results=results, seed=seed, tracks=DEMO_TRACKS,
                       tasks=tasks, track_options=options, trained_by=DEMO_TRAINER)
        runs[baseline] = run_tracks(spec, adapter, progress=progress)["run_id"]
        if transfer:  # Track 6: the same model on the held-out contexts
            on_transfer = spec.with_(tracks=DEMO_TRANSFER_TRACKS, split="transfer")
            runs[f"{baseline} (transfer)"] = run_tracks(on_transfer, adapter, progress=progress)["run_id"]
        step(f"run {baseline} ({how})", t)

    report = build_report(ResultsStore(results), release_sha=release.manifest["release_sha"], seed=seed)
    plot = plot_tracks(report, work / "report.png")
    profiles = plot_profiles(report, work / "report-profiles.png")
    md = render_markdown(report, Path(plot.name), Path(profiles.name))
    (work / "report.md").write_text(md, encoding="utf-8")
    found = conclusions(report)  # every verdict with its figures: what the README and the docs quote
    (work / "conclusions.md").write_text(render_conclusions(found), encoding="utf-8")
    timings["total"] = time.perf_counter() - t0
    _say(f"[demo] done in {timings['total']:.1f} s; report: {work / 'report.md'}")
    return {"workdir": str(work), "release": str(release.directory), "results": str(results), "runs": runs,
            "report": report, "markdown": md, "conclusions": found, "timings": timings}
