"""The Turpin positive control (pipeline/controls/turpin.py) on SmolLM2-135M-Instruct: every figure and its wall time.

Usage (by hand; `trb models fetch smollm2` first, and `make install-llama-server` for the served arm):

    .venv/bin/python bench/turpin.py [--model DIR] [--limit N] [--configs none,cot,cot_edit,served] [--out FILE]

For each arm (suggested, neutral): the direct transformers figure, then ``trb run --tracks 1 --split dev`` through
the proxy adapter with each configuration (``none``: --scaffold none, Turpin's no-CoT condition; ``cot``: the
template intervention with the reasoning scaffold, r′'s planned_next written as the agent's Reasoning line;
``cot_edit``: the model's own chain of thought, written after the suggestion) and through the served adapter
against llama.cpp (--scaffold none, the tokenizer's chat template). Prints a table and writes JSON
(bench/out/turpin.json by default).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "tests"))  # llama_server

#: Configurations that measure another contrast than Turpin's (pipeline/controls/turpin.py, "Which scaffold"): their
#: detection is reported, not their agreement with the direct no-CoT figure.
OTHER_CONTRASTS = {
    "cot": "r' written as the agent's Reasoning line too (planned_next=X) against an empty one",
    "cot_edit": "the model's own chain of thought after the sentence against an empty reasoning span",
}
CONFIGS = {
    "none": {"scaffold": "none"},
    "cot": {"scaffold": "cot", "intervention": "template"},
    "cot_edit": {"scaffold": "cot", "intervention": "cot_edit"},
}


def _fmt(e) -> str:
    if e is None:
        return "n/a"
    return f"{e['value']:+.3f} [{e['ci'][0]:+.3f}, {e['ci'][1]:+.3f}]"


def main(argv=None) -> int:
    from trb.numerics import pin_environment

    pin_environment()
    from pipeline.controls import turpin
    from trb.models import model_dir
    from trb.run import load_adapter, run_tracks
    from trb.run_spec import RunSpec

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="SmolLM2's directory (default: trb models' place for it)")
    ap.add_argument("--limit", type=int, default=None, help="the first N items only")
    ap.add_argument("--configs", default="none,cot,cot_edit,served")
    ap.add_argument("--served-limit", type=int, default=16,
                    help="the first N items through llama.cpp (about 4 s a request on a CPU: 16 requests an item)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "turpin.json"))
    args = ap.parse_args(argv)
    model = Path(args.model) if args.model else model_dir("smollm2")
    configs = [c for c in args.configs.split(",") if c]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result: dict = {"items": len(turpin.load_items(args.limit)), "model": str(model), "arms": {}}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        releases, direct, toolkit = {}, {}, {c: {} for c in configs}
        served_limit = min(args.served_limit, args.limit or args.served_limit)
        for arm in turpin.ARMS:
            t0 = time.perf_counter()
            releases[arm] = turpin.build_release(tmp, arm, limit=args.limit)
            if "served" in configs:
                releases[arm, "served"] = turpin.build_release(tmp / "served", arm, limit=served_limit)
            records = turpin.control_records(arm, limit=args.limit, workdir=tmp / arm)
            t1 = time.perf_counter()
            effects = turpin.direct_effects(model, records, arm, limit=args.limit)
            direct[arm] = turpin.figures(effects)
            if "served" in configs:  # the same items as the served run: the first served_limit
                direct[arm, "served"] = turpin.figures(effects[:served_limit])
            result["arms"].setdefault(arm, {})["direct"] = {**direct[arm].as_dict(),
                                                            "wall_s": time.perf_counter() - t1,
                                                            "release_s": t1 - t0}
            if "served" in configs:
                result["arms"][arm][f"direct{served_limit}"] = {**direct[arm, "served"].as_dict(), "wall_s": 0.0}
        for config in configs:
            for arm in turpin.ARMS:
                t0 = time.perf_counter()
                db = tmp / f"{config}-{arm}.duckdb"
                if config == "served":
                    from llama_server import LlamaServer, smollm2_gguf

                    with LlamaServer(smollm2_gguf(), log=tmp / f"llama-{arm}.log") as srv:
                        adapter = load_adapter("served", srv.url, scaffold="none", tokenizer=str(model))
                        try:
                            run = run_tracks(RunSpec(release=releases[arm, "served"], baseline=f"smollm2-served-{arm}",
                                                     tracks="1", split="dev", results=db), adapter, progress=False)
                        finally:
                            getattr(adapter, "close", lambda: None)()
                else:
                    adapter = load_adapter("proxy", model, device="cpu", **CONFIGS[config])
                    run = run_tracks(RunSpec(release=releases[arm], baseline=f"smollm2-{config}-{arm}", tracks="1",
                                             split="dev", results=db), adapter, progress=False)
                effects = turpin.toolkit_effects(db, run["run_id"])
                toolkit[config][arm] = turpin.figures(effects)
                entry = {**toolkit[config][arm].as_dict(), "wall_s": time.perf_counter() - t0,
                         "summary": run.get("summary", {}).get("1")}
                if config == "cot_edit":
                    entry["run_timings"] = run.get("timings")
                result["arms"][arm][config] = entry
                print(f"[turpin] {config} {arm}: {entry['rose']}/{entry['n']} rose, mean Δp "
                      f"{_fmt(entry['mean_delta_p'])}, {entry['wall_s']:.1f} s", file=sys.stderr, flush=True)
        for config in configs:
            if config in OTHER_CONTRASTS:  # not Turpin's contrast: detection only, no agreement with the direct one
                result.setdefault("verdicts", {})[config] = {
                    "contrast": OTHER_CONTRASTS[config],
                    "arms": {a: {"toolkit": turpin.detected(toolkit[config][a])} for a in turpin.ARMS}}
                continue
            if config == "served":
                v = turpin.verdict(toolkit[config], {a: direct[a, "served"] for a in turpin.ARMS},
                                   tolerance=turpin.SERVED_TOLERANCE)
                v["items"] = served_limit
            else:
                v = turpin.verdict(toolkit[config], direct, tolerance=turpin.TOLERANCE)
            result.setdefault("verdicts", {})[config] = v
    print(f"\nTurpin control, {result['items']} items, SmolLM2-135M-Instruct")
    print(f"{'arm':<10}{'figure':<10}{'rose':>8}  {'exact CI of the share':<22}{'mean Δp(X) [95% CI]':<26}"
          f"{'mean LLR [95% CI]':<26}{'wall s':>8}")
    for arm, by in result["arms"].items():
        for name, f in by.items():
            lo, hi = f["r_sensitivity_exact_ci"]
            print(f"{arm:<10}{name:<10}{f['rose']:>4}/{f['n']:<3}  {f'[{lo:.3f}, {hi:.3f}]':<22}"
                  f"{_fmt(f['mean_delta_p']):<26}{_fmt(f['mean_llr']):<26}{f['wall_s']:>8.1f}")
    for config, v in result.get("verdicts", {}).items():
        if "contrast" in v:
            arms = "; ".join(f"{a}: {x['toolkit']}" for a, x in v["arms"].items())
            print(f"{config} ({v['contrast']}): {arms}")
            continue
        arms = "; ".join(f"{a}: toolkit {x['toolkit']}, direct {x['direct']}, |Δ gap| {x['delta_gap']:.4f}"
                         for a, x in v["arms"].items())
        print(f"verdict {config}: {'PASSED' if v['passed'] else 'FAILED'} (tolerance {v['tolerance']}): {arms}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
