"""The report at scale: `python bench/report_scale.py [--items 1000000] [--peer-items 100000] [--repeats 3]`.

Builds a real results store (``trb.results.ResultsStore.record_run``) whose runs cover the six
tracks as ``trb run`` writes them, then times ``trb.report.build_report`` on it and renders
the report (Markdown, HTML, JSON). Nothing runs a model: item rows are drawn from a seeded
numpy generator, column for column as the tracks write them (``trb/tracks/track1.py`` …
``track5.py``, the Track 2 trials of ``score_track2``, the rollout episodes of
``trb/tracks/rollouts.py`` on the built-in task set), and run rows as ``trb/run.py:run_tracks``
writes them (timings, per-track summaries, capabilities, the not-applicable reasons).

What is in the store (one release, five baselines):

* the spec's five baselines, three proxy (instruct-base, cot-prompted, cot-sft) and two native
  (trace-ablation, trace-full); each has an **eval** run (Tracks 1–5) and a **transfer** run
  (Tracks 1–5: Tracks 4 and 5 roll the task set's transfer tasks of the release's three transfer contexts, as
  ``run_tracks`` does since task sets have transfer tasks, their rows carrying the context id), so Track 6 (the
  transfer figures of the profile vector) has eval and transfer runs of every track it ran for every baseline
  (Track 2 on the native ones only: a proxy's ``trans`` entry names it as not applicable);
* Track 2 runs on the native baselines only (the proxies record "no concept directions"); its
  rows are every trial the engine makes: each step context of the split and of the dev split,
  each site (h, embed), each concept (29 goal values and 5 actions, the reference model's), 9
  trials (the zero null; injected and random at four strengths);
* the release is shaped like a simulated one: 10 steps a session, 0.86 counterfactuals a step
  (Track 1), 0.5 attribution items a session (Track 3); dev holds a quarter as many sessions as
  eval; transfer as many as eval, over three transfer contexts. Tracks 4 and 5 are the task set's
  episodes (on eval 96 and 162 rows a run, whatever the release; on transfer its transfer tasks' episodes).

``--items`` picks the number of eval sessions that makes about that many rows. Track 2 is then
almost all of them: it writes 612 rows a step context against Track 1's 0.86, as a real run does.

Timed in a fresh process per store (``--repeats`` times, medians): ``build_report`` with
``--resamples`` session-bootstrap resamples per figure, then ``render_markdown``,
``render_html`` (with its plot) and ``render_json``; the peak RSS of each repeat (Linux VmHWM,
reset before it). Where the report's time goes: each track's ``aggregate``/``describe`` and
Track 6's ``transfer_estimate`` are wrapped with timers (time of the innermost wrapper only).
Peers, in the same process: a plain DuckDB ``SELECT run_id, track, metric, avg(score), count(*)
... GROUP BY`` over the same table, and the same report on a store of ``--peer-items`` rows
(the same shape, fewer sessions) to show how it scales.

**Resamples.** ``trb report`` draws 2,000 per figure; this bench defaults to 200. Before Track 6's
figure for Track 2 had a vectorised bootstrap (``Track2.weighted_figure``), every resample ran
Track 2's own ``aggregate`` on the resampled rows, and the 1M report at 2,000 resamples was
estimated at about 40 minutes on a 2-core machine (bench/README.md); it has not been measured at
2,000 since. ``--resamples 2000`` measures it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BASELINES = (("instruct-base", "proxy"), ("cot-prompted", "proxy"), ("cot-sft", "proxy"),
             ("trace-ablation", "native"), ("trace-full", "native"))
CAPABILITIES = {"proxy": ["activation_access", "batched_act", "batched_emit", "continuation_scoring", "emit_counters",
                          "r_ablation"],
                "native": ["activation_access", "batched_act", "batched_emit", "r_ablation"]}
#: How well each baseline does, as the generator draws it (a mean G, a BA, a grounding slope, a completion rate).
SKILL = {"instruct-base": 0.55, "cot-prompted": 0.6, "cot-sft": 0.68, "trace-ablation": 0.62, "trace-full": 0.8}
EVAL_CONTEXTS = ("open-7x7-breeze.careful.de", "open-8x8-windy.overclaiming.fr", "walls-8x8-breeze.careful.en",
                 "open-7x7-breeze.impulsive.es")
DEV_CONTEXTS = ("open-7x7-breeze.overclaiming.es", "walls-8x8-breeze.careful.fr")
TRANSFER_CONTEXTS = ("xfer-lab-b.maze-9x9-gusty.careful.it", "xfer-lab-c.open-8x8-windy.novice.de",
                     "xfer-lab-d.walls-10x6-breeze.overclaiming.es")
ACTIONS = ("up", "down", "left", "right", "wait")
GOALS = tuple(f"{c}{r}" for c in "BCDEFG" for r in range(2, 8))[:29]  # 29 goal values, as the reference model's
SITES = ("h", "embed")
ORIGINS = ("synthetic", "paired_session", "same_session_revision")
STEPS_PER_SESSION = 10
CF_PER_STEP = 0.86
ATTR_PER_SESSION = 0.5
#: Track 2 rows per step context: sites × (goal values + actions) × (zero + injected and random at 4 strengths).
T2_PER_CONTEXT = len(SITES) * (len(GOALS) + len(ACTIONS)) * 9
RELEASE_SHA = "5eed" + "0" * 60
TRAINED_BY = ["Lab A"]


# -- the store ----------------------------------------------------------------------------------------------


def _sessions(rng, split: str, n: int, contexts: tuple[str, ...], start: int) -> list[tuple[str, str, str, int]]:
    """(session_id, split, context_id, n_steps) for ``n`` sessions of ``split``."""
    steps = rng.integers(STEPS_PER_SESSION - 4, STEPS_PER_SESSION + 5, size=n)
    ctx = rng.integers(0, len(contexts), size=n)
    return [(f"sim-1-{start + i:07d}", split, contexts[ctx[i]], int(steps[i])) for i in range(n)]


def _dists(rng, n: int):
    """n random distributions over the five actions (rows sum to 1)."""
    x = rng.gamma(0.6, size=(n, len(ACTIONS)))
    return x / x.sum(1, keepdims=True)


def _dist_json(p) -> str:
    return "{" + ",".join(f'"{a}":{v!r}' for a, v in zip(ACTIONS, p.tolist())) + "}"


def _track1(rng, sessions, skill: float) -> dict:
    """Track 1 rows (metric tv) as ``score_track1`` writes them: one per counterfactual with Φ."""
    ids, sids, ts, splits, cxs = [], [], [], [], []
    for sid, split, cx, n in sessions:
        counts = rng.poisson(CF_PER_STEP, size=n)
        for t in range(n):
            for k in range(int(counts[t])):
                ids.append(f"{sid}.t{t}.cf{k}")
                sids.append(sid)
                ts.append(t)
                splits.append(split)
                cxs.append(cx)
    m = len(ids)
    tv = rng.beta(2 * (1 - skill) + 0.5, 2 * skill + 0.5, size=m)
    tv_own = rng.beta(2.0, 2.0, size=m)
    tv_uni = rng.beta(3.0, 2.0, size=m)
    sens = rng.random(m)
    has_sens = rng.random(m) < 0.6
    p, p_rt, p_own, phi = _dists(rng, m), _dists(rng, m), _dists(rng, m), _dists(rng, m)
    detail = [f'{{"p":{_dist_json(p[i])},"p_do_r_t":{_dist_json(p_rt[i])},"p_own":{_dist_json(p_own[i])},'
              f'"phi":{_dist_json(phi[i])},"tv":{tv[i]!r}}}' for i in range(m)]
    flags = rng.random(m)
    return {"track": ["1"] * m, "metric": ["tv"] * m, "item_id": ids, "session_id": sids, "t": ts, "split": splits,
            "context_id": cxs, "score": (1.0 - tv).tolist(),
            "origin": [ORIGINS[i] for i in rng.integers(0, 3, size=m)],
            "adversarial": (flags < 0.05).tolist(), "ood": ((flags >= 0.05) & (flags < 0.12)).tolist(),
            "g_own": (1.0 - tv_own).tolist(), "g_uniform": (1.0 - tv_uni).tolist(),
            "r_sensitive": [float(s < skill) if h else None for s, h in zip(sens.tolist(), has_sens.tolist())],
            "phi_n": [None] * m, "g_ceiling": [None] * m, "detail": detail}


def _track2(rng, sessions, dev_sessions, slope: float, cos: dict) -> dict:
    """Track 2 rows as ``score_track2`` writes them: per site, per slot, the zero null of every (context, concept)
    pair, then injected and random at each strength; concept-major within a call."""
    from trb.tracks.track2 import STRENGTHS

    ctx = [(sid, split, cx, t) for sid, split, cx, n in list(sessions) + list(dev_sessions) for t in range(n)]
    n = len(ctx)
    cols: dict[str, list] = {k: [] for k in ("item_id", "session_id", "t", "split", "context_id", "score", "condition",
                                             "concept", "site", "site_rank", "strength", "cos_max")}
    base_ids = [f"{sid}/{t}" for sid, _, _, t in ctx]
    sids = [c[0] for c in ctx]
    ts = [c[3] for c in ctx]
    splits = [c[1] for c in ctx]
    cxs = [c[2] for c in ctx]
    for rank, site in enumerate(SITES):
        for slot, values in (("goal", GOALS), ("planned_next", ACTIONS)):
            base = rng.beta(1.0, len(values) - 1.0, size=(len(values), n))  # p(concept) with nothing injected
            trials = [("zero", 0.0)] + [(c, s) for s in STRENGTHS for c in ("injected", "random")]
            for cond, s in trials:
                lift = slope * s if cond == "injected" else 0.0
                noise = rng.normal(0.0, 0.3, size=(len(values), n)) if cond != "zero" else 0.0
                logit = np.log(base / (1 - base)) + lift + noise
                p = 1.0 / (1.0 + np.exp(-logit))
                for j, v in enumerate(values):
                    name = f"{slot}={v}"
                    cols["item_id"] += [f"{b}|{site}|{name}|{cond}|{s:g}" for b in base_ids]
                    cols["session_id"] += sids
                    cols["t"] += ts
                    cols["split"] += splits
                    cols["context_id"] += cxs
                    cols["score"] += p[j].tolist()
                    cols["condition"] += [cond] * n
                    cols["concept"] += [name] * n
                    cols["site"] += [site] * n
                    cols["site_rank"] += [rank] * n
                    cols["strength"] += [s] * n
                    cols["cos_max"] += [cos[(site, name)]] * n
    m = len(cols["item_id"])
    return {"track": ["2"] * m, "metric": ["grounding"] * m, **cols}


def _track3(rng, sessions, skill: float) -> dict:
    ids, sids, ts, splits, cxs = [], [], [], [], []
    for sid, split, cx, n in sessions:
        for k in range(int(rng.poisson(ATTR_PER_SESSION))):
            t = int(rng.integers(0, n))
            ids.append(f"{sid}.t{t}.attr{k}")
            sids.append(sid)
            ts.append(t)
            splits.append(split)
            cxs.append(cx)
    m = len(ids)
    label = np.where(rng.random(m) < 0.5, "self", "exogenous")
    belief = np.clip(np.where(label == "self", skill, 1 - skill) + rng.normal(0, 0.25, size=m), 0.0, 1.0)
    predicted = np.where(belief >= 0.5, "self", "exogenous")
    conf = rng.random(m)
    goals = rng.integers(0, len(GOALS), size=m)
    acts = rng.integers(0, len(ACTIONS), size=m)
    detail = [f'{{"r":{{"caused_by_self":{b!r},"confidence":{c!r},"goal":"{GOALS[g]}","planned_next":"{ACTIONS[a]}"}}}}'
              for b, c, g, a in zip(belief.tolist(), conf.tolist(), goals.tolist(), acts.tolist())]
    return {"track": ["3"] * m, "metric": ["attribution"] * m, "item_id": ids, "session_id": sids, "t": ts,
            "split": splits, "context_id": cxs, "score": (label == predicted).astype(float).tolist(),
            "label": label.tolist(), "predicted": predicted.tolist(), "belief": belief.tolist(), "detail": detail}


def _episode(rng, track: str, metric: str, spec, condition: str, p_reach: float, split: str, cx: str) -> dict:
    steps = int(rng.integers(3, 25))
    reached = 1.0 if rng.random() < p_reach else 0.0
    confs = np.round(rng.random(steps), 3).tolist()
    actions = [ACTIONS[i] for i in rng.integers(0, 5, size=steps)]
    detail = json.dumps({"task": spec.task.id, "seed": spec.seed.text, "condition": condition,
                         "actions": actions, "causes": ["self"] * steps, "reached": bool(reached)}, sort_keys=True)
    return {"track": track, "metric": metric, "item_id": f"{spec.pair_id}/{condition}", "session_id": spec.pair_id,
            "t": None, "split": split, "context_id": cx, "score": reached, "condition": condition, "steps": steps,
            "brier_sum": float(sum((c - reached) ** 2 for c in confs)), "n_conf": steps,
            "confidences": json.dumps(confs), "detail": detail}


def _rollouts(rng, tasks, skill: float, split: str = "eval") -> tuple[list[dict], list[dict]]:
    """Track 4 and 5 rows as ``episode_row`` and Track 5's loop rows write them, on the task set's episodes of
    ``split`` (transfer: the set restricted to the release's transfer contexts, :meth:`TaskSet.for_release`)."""
    from trb.tracks.rollouts import context_id
    from trb.tracks.track4 import track4_items
    from trb.tracks.track5 import track5_items

    cx = context_id(tasks)
    t4 = [_episode(rng, "4", "completion", s, {"own": "full", "ablated": "ablated"}[s.condition],
                   skill if s.condition == "own" else skill - 0.1, split, cx(s.task))
          for s in track4_items(tasks, split)]
    t5, loops = [], {}
    for s in track5_items(tasks, split):
        if s.condition == "forced":
            loops.setdefault(s.task.id, s)
            continue
        t5.append(_episode(rng, "5", "reach", s, s.condition, skill if s.condition != "ablated" else 0.3, split,
                           cx(s.task)))
    for loop_id, s in sorted(loops.items()):
        for kind in ("route", "goal"):
            t5.append({"track": "5", "metric": "holonomy", "item_id": f"{loop_id}/{kind}", "session_id": loop_id,
                       "t": len(s.forced), "split": split, "context_id": cx(s.task),
                       "score": float(rng.random() * 0.02), "condition": kind, "steps": len(s.forced),
                       "r_change": float(rng.random() * 0.05),
                       "detail": json.dumps({"reference": {"actions": list(s.forced)}, "loop": {"kind": kind}})})
    return t4, t5


def _table(parts: list[dict]):
    """One Arrow table of item rows from column dicts (a missing column is null)."""
    import pyarrow as pa

    from trb.results import ITEM_SCHEMA

    n = [len(p["track"]) for p in parts]
    arrays = []
    names = []
    for field in ITEM_SCHEMA:
        if field.name == "run_id":
            continue
        chunks = []
        for p, k in zip(parts, n):
            chunks.append(pa.array(p[field.name], type=field.type) if field.name in p else pa.nulls(k, field.type))
        arrays.append(pa.chunked_array(chunks, type=field.type))
        names.append(field.name)
    return pa.Table.from_arrays(arrays, names=names)


def _rows_to_cols(rows: list[dict]) -> dict:
    keys = dict.fromkeys(k for r in rows for k in r)
    return {k: [r.get(k) for r in rows] for k in keys}


def plan_sessions(items: int) -> int:
    """The number of eval sessions that makes about ``items`` rows in the store (see the module docstring)."""
    steps_per = STEPS_PER_SESSION
    # per eval session: eval + transfer sessions (1 each), dev 1/4 counted in both native runs' Track 2
    native = 2 * T2_PER_CONTEXT * steps_per * (1 + 1 + 2 * 0.25)
    per = native + len(BASELINES) * (CF_PER_STEP * steps_per + ATTR_PER_SESSION) * 2
    fixed = len(BASELINES) * (96 + 162)
    return max(4, round((items - fixed) / per))


def build_store(path: Path, eval_sessions: int, seed: int) -> dict:
    """Write the store (see the module docstring); returns its composition (rows by track and split, sessions)."""
    from environments.tasksets import default_taskset
    from trb.results import ResultsStore

    rng = np.random.default_rng(seed)
    tasks = default_taskset()
    transfer_tasks = tasks.for_release(TRANSFER_CONTEXTS)  # what a transfer run rolls (run_tracks)
    ev = _sessions(rng, "eval", eval_sessions, EVAL_CONTEXTS, 0)
    dev = _sessions(rng, "dev", max(1, eval_sessions // 4), DEV_CONTEXTS, eval_sessions)
    tr = _sessions(rng, "transfer", eval_sessions, TRANSFER_CONTEXTS, eval_sessions + len(dev))
    cos = {(site, f"{slot}={v}"): float(rng.uniform(0.2, 0.95))
           for site in SITES for slot, vals in (("goal", GOALS), ("planned_next", ACTIONS)) for v in vals}
    store = ResultsStore(path, create=False)
    composition: dict = {"sessions": {"eval": len(ev), "dev": len(dev), "transfer": len(tr)}, "rows": {}}
    created = 0
    for name, tier in BASELINES:
        skill = SKILL[name]
        for split, sessions in (("eval", ev), ("transfer", tr)):
            parts = [_track1(rng, sessions, skill)]
            summary: dict = {"1": {"scored": len(parts[0]["track"]), "skipped": {
                "llr_without_recorded_r": 0, "open_ended_step": 0, "text_phi_without_score_continuation": 0}}}
            if tier == "native":
                parts.append(_track2(rng, sessions, dev, 1.0 if name == "trace-full" else 0.25, cos))
                summary["2"] = {"scored": len(parts[-1]["track"]), "sites": list(SITES), "strengths": [1, 2, 4, 8],
                                "concepts": len(GOALS) + len(ACTIONS),
                                "contexts": {split: sum(s[3] for s in sessions), "dev": sum(s[3] for s in dev)}}
            else:
                summary["2"] = {"status": "not_applicable", "needs": [], "reason": "no concept directions: make them "
                                "from the train split with `trb concepts MODEL --release DIR`"}
            parts.append(_track3(rng, sessions, skill))
            summary["3"] = {"scored": len(parts[-1]["track"]), "missing_belief": 0}
            t4, t5 = _rollouts(rng, tasks if split == "eval" else transfer_tasks, skill, split)
            parts += [_rows_to_cols(t4), _rows_to_cols(t5)]
            summary["4"] = {"scored": len(t4), "episodes": len(t4)}
            summary["5"] = {"scored": len(t5), "episodes": len(t5)}
            table = _table(parts)
            for p in parts:
                for track, sp in zip(p["track"], p["split"]):
                    key = f"{track}/{sp}"
                    composition["rows"][key] = composition["rows"].get(key, 0) + 1
            timings = {"wall_s": 0.0, "adapter_s": 0.0, "adapter_calls": 0, "per_track_s": {}, "summary": summary,
                       "capabilities": CAPABILITIES[tier],
                       "split_check": {"checked": True, "n_evaluated_subjects": len(sessions)}}
            if split == "transfer":
                timings["transfer_check"] = {"checked": True, "trained_by": TRAINED_BY}
            if tier == "proxy":
                timings["emit_r"] = {"calls": len(sessions) * 10, "missing": {"goal": 0, "planned_next": 0}}
            created += 1
            store.record_run({
                "run_id": f"{seed:04d}{created:028d}", "created_at": f"2026-12-01T00:00:{created:02d}+00:00",
                "trb_version": "0.1", "release_sha": RELEASE_SHA, "release_version": "0.1.0", "release_kind": "smoke",
                "smoke_test": True, "baseline": name, "adapter_tier": tier,
                "adapter_spec": {"kind": tier, "n_parameters": 634691 if tier == "native" else 134515008},
                "seed": 0, "tracks": ["1", "2", "3", "4", "5"], "split": split, "synthetic_share": 0.5,
                "timings": timings, "n_items": table.num_rows, "release_dir": "/nonexistent/release",
                "taskset_sha": tasks.sha,
                "taskset": {**(tasks if split == "eval" else transfer_tasks).describe(), "greedy": False},
                "trained_by": TRAINED_BY}, table)
            del table, parts
    composition["n_items"] = sum(composition["rows"].values())
    return composition


# -- the timed part (a fresh process per store) ---------------------------------------------------------------


TRACK6 = "track 6 (transfer_estimate, with the track aggregates it calls)"


class _Timers:
    """Exclusive time by label: a wrapped call's time minus that of the wrapped calls inside it."""

    def __init__(self):
        self.total: dict[str, float] = {}
        self.stack: list[list] = []

    def wrap(self, label: str, fn, *, inside: str | None = None):
        """``fn`` timed under ``label``; called inside a call timed under ``inside``, it counts as that call's."""
        def timed(*args, **kwargs):
            if inside is not None and any(frame[0] == inside for frame in self.stack):
                return fn(*args, **kwargs)
            self.stack.append([label, time.perf_counter(), 0.0])
            try:
                return fn(*args, **kwargs)
            finally:
                lab, t0, inner = self.stack.pop()
                dt = time.perf_counter() - t0
                self.total[lab] = self.total.get(lab, 0.0) + dt - inner
                if self.stack:
                    self.stack[-1][2] += dt
        return timed


def _instrument() -> _Timers:
    import trb.tracks.track6_report as track6
    from trb.results import ResultsStore
    from trb.tracks.base import registered_tracks

    timers = _Timers()
    for tid, track in registered_tracks().items():
        if getattr(track, "derived", False):  # Track 6: timed as transfer_estimate below
            continue
        label = f"track {tid} (aggregate, describe)"
        track.aggregate = timers.wrap(label, track.aggregate, inside=TRACK6)
        if hasattr(track, "describe"):
            track.describe = timers.wrap(label, track.describe, inside=TRACK6)
    track6.transfer_estimate = timers.wrap(TRACK6, track6.transfer_estimate)
    ResultsStore.items = timers.wrap("reading items (ResultsStore.items)", ResultsStore.items)
    return timers


def _vm(field: str) -> float:
    """A /proc/self/status memory figure in MB (nan off Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def child(args) -> None:
    """Time the report on one store; print one JSON line."""
    import duckdb

    from trb.report import build_report, render_html, render_json, render_markdown
    from trb.results import ResultsStore

    timers = _instrument()
    store = ResultsStore(args.child)
    out: dict = {"report_s": [], "markdown_s": [], "html_s": [], "json_s": [], "peak_rss_mb": [], "rss_before_mb": [],
                 "peer_s": [], "parts": []}
    for _ in range(args.repeats):
        con = duckdb.connect(str(args.child), read_only=True)
        t0 = time.perf_counter()
        rows = con.execute("SELECT run_id, track, metric, avg(score), count(*) FROM item_scores GROUP BY ALL").fetchall()
        out["peer_s"].append(time.perf_counter() - t0)
        con.close()
        out["peer_groups"] = len(rows)
        gc.collect()
        timers.total.clear()
        out["rss_before_mb"].append(_vm("VmRSS"))
        _reset_peak()
        t0 = time.perf_counter()
        rep = build_report(store, release_sha=RELEASE_SHA, n_resamples=args.resamples, seed=0)
        out["report_s"].append(time.perf_counter() - t0)
        out["parts"].append(dict(timers.total))
        for key, fn in (("markdown_s", render_markdown), ("html_s", render_html), ("json_s", render_json)):
            t0 = time.perf_counter()
            fn(rep)
            out[key].append(time.perf_counter() - t0)
        out["peak_rss_mb"].append(_vm("VmHWM"))
        out["vector"] = {p["name"]: {k: v.get("status") for k, v in p["vector"].items()}
                         for p in rep["profile_vectors"]}
        out["ground_contexts"] = sorted({c["context_id"] for p in rep["profile_vectors"]
                                         for f in [p["vector"]["trans"]["figures"].get("ground") or {}]
                                         for c in f.get("contexts") or ()})
        del rep
    print(json.dumps(out))


def _run_child(path: Path, args) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(path), "--repeats", str(args.repeats),
           "--resamples", str(args.resamples)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        sys.stderr.write(res.stderr)
        raise SystemExit(f"the timing process failed on {path}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=1_000_000, help="item rows in the store, about (default 1,000,000)")
    ap.add_argument("--peer-items", type=int, default=100_000,
                    help="item rows in the scaling peer's store (0: no scaling peer; default 100,000)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--resamples", type=int, default=200,
                    help="bootstrap resamples per figure (default 200; `trb report` uses 2,000: see the module docstring)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", type=Path, default=None, help="keep the stores here (default: a temporary folder)")
    ap.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(args)
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="trb-bench-report-"))
    work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# report at scale: {os.cpu_count()} cores, python {sys.version.split()[0]}, load average {load:.1f}; "
          f"{args.resamples:,} resamples; median of {args.repeats}", file=sys.stderr, flush=True)
    results = []
    sizes = [args.items] + ([args.peer_items] if args.peer_items else [])
    try:
        for items in sizes:
            path = work / f"results-{items}.duckdb"
            sessions = plan_sessions(items)
            t0 = time.perf_counter()
            if not path.exists():
                comp = build_store(path, sessions, args.seed)
                (work / f"results-{items}.json").write_text(json.dumps(comp))
            comp = json.loads((work / f"results-{items}.json").read_text())
            build_s = time.perf_counter() - t0
            print(f"store of {comp['n_items']:,} rows ({sessions} eval sessions) made in {build_s:.1f} s: "
                  f"{json.dumps(comp['rows'], sort_keys=True)}", file=sys.stderr, flush=True)
            r = _run_child(path, args)
            r.update(items=comp["n_items"], sessions=sessions, build_s=build_s, comp=comp,
                     size_mb=path.stat().st_size / 1e6)
            print(f"  report {statistics.median(r['report_s']):.1f} s (repeats: "
                  f"{', '.join(f'{x:.1f}' for x in r['report_s'])}); peer GROUP BY {statistics.median(r['peer_s']):.3f} s",
                  file=sys.stderr, flush=True)
            results.append(r)
    finally:
        if args.work is None:
            for p in work.glob("*"):
                p.unlink()
            work.rmdir()
    _print(results, args)


def _print(results: list[dict], args) -> None:
    med = statistics.median
    print("| item rows | eval sessions | Track 1 / 2 / 3 / 4+5 rows | store MB | build_report s | markdown s | html s "
          "| json s | peak RSS MB (before) | peer GROUP BY s | report / peer |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        rows = r["comp"]["rows"]
        by = {t: sum(v for k, v in rows.items() if k.split("/")[0] in t) for t in ("1", "2", "3", "45")}
        print(f"| {r['items']:,} | {r['sessions']} | {by['1']:,} / {by['2']:,} / {by['3']:,} / {by['45']:,} "
              f"| {r['size_mb']:.0f} | {med(r['report_s']):.1f} | {med(r['markdown_s']):.3f} | {med(r['html_s']):.2f} "
              f"| {med(r['json_s']):.3f} | {med(r['peak_rss_mb']):.0f} ({med(r['rss_before_mb']):.0f}) "
              f"| {med(r['peer_s']):.3f} | {med(r['report_s']) / med(r['peer_s']):,.0f}x |")
    if len(results) == 2:
        a, b = results
        print(f"\nscaling: {a['items'] / b['items']:.1f}x the rows, {med(a['report_s']) / med(b['report_s']):.1f}x "
              "the report's time")
    print("\nwhere build_report's time goes (median s; exclusive time of each wrapped call):")
    labels = sorted({k for r in results for p in r["parts"] for k in p})
    print("| part | " + " | ".join(f"{r['items']:,} rows" for r in results) + " |")
    print("|---|" + "---:|" * len(results))
    for label in labels:
        print(f"| {label} | " + " | ".join(f"{med([p.get(label, 0.0) for p in r['parts']]):.2f}" for r in results)
              + " |")
    print("| (the rest of build_report) | " + " | ".join(
        f"{med([rep - sum(p.values()) for rep, p in zip(r['report_s'], r['parts'])]):.2f}" for r in results) + " |")
    for r in results:
        print(f"\n{r['items']:,} rows: profile vector entries: {json.dumps(r['vector'])}")
        print(f"Track 6 ground figure's contexts: {r['ground_contexts']}")


if __name__ == "__main__":
    main()
