"""`make demo-conclusions`: the demo at several seeds, the stability of its verdicts, and the blocks the docs quote.

Runs ``trb-demo`` at each seed (default 1, 2 and 3; seed 1 is what ``make demo`` runs; a seed whose run is already
in the work directory has its report rebuilt from its results store, with the report code of now), compares the conclusions
of the seeds (:func:`trb.report.conclusions.stability`), writes the comparison to
``docs/data/demo-stability.json``, and rewrites the quoted blocks from seed 1's conclusions with each verdict's
stability beside it: the README's (Δgov and the pass bars) and ``docs/demo-conclusions.md``'s (every verdict).
The demo's end-to-end test (tests/trb/test_run.py) runs ``make demo``'s configuration afresh and fails when
either block differs from what that run renders. Figures are never typed into the docs by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from schemas.release_format import read_manifest
from trb.numerics import pin_environment

# The demo at each seed on the pinned CPU kernels, as `trb-demo` runs it (chosen before torch is imported).
pin_environment()

__all__ = ["ROOT", "STABILITY", "README", "DOCS_PAGE", "SHORT", "render_blocks", "main"]

ROOT = Path(__file__).resolve().parents[1]
STABILITY = ROOT / "docs" / "data" / "demo-stability.json"
README = ROOT / "README.md"
DOCS_PAGE = ROOT / "docs" / "demo-conclusions.md"
#: The README's short block: the conclusions whose id starts with these.
SHORT = ("delta_gov", "pass:")


def render_blocks(found: dict, stable: dict | None) -> dict[Path, str]:
    """The quoted blocks (file -> block) of one seed's conclusions, with the seeds' stability beside them."""
    from trb.report.conclusions import render_conclusions

    return {README: render_conclusions(found, stable, only=SHORT), DOCS_PAGE: render_conclusions(found, stable)}


def _rebuilt(workdir: Path, seed: int) -> dict:
    """The conclusions of a finished demo run, from its results store and release as ``trb-demo`` reports them
    (the report code of now: a change to a verdict rule needs no new run), written beside it again."""
    from trb.report import build_report
    from trb.report.conclusions import conclusions, render_conclusions
    from trb.results import ResultsStore

    manifest = read_manifest(next((workdir / "corpus" / "releases").glob("*/manifest.json")).parent)
    report = build_report(ResultsStore(workdir / "results.duckdb"), release_sha=manifest["release_sha"], seed=seed)
    found = conclusions(report)
    before = workdir / "conclusions.json"
    if before.is_file() and "numerics" in (was := json.loads(before.read_text(encoding="utf-8"))):
        found["numerics"] = was["numerics"]  # what the run's models were trained and scored on
    (workdir / "conclusions.json").write_text(json.dumps(found, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (workdir / "conclusions.md").write_text(render_conclusions(found), encoding="utf-8")
    return found


def main(argv: list[str] | None = None) -> int:
    from pipeline.demo import run_demo
    from trb.report.conclusions import replace_block, stability

    ap = argparse.ArgumentParser(prog="python -m pipeline.conclusions", description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default="demo-seeds", help="one demo-work directory per seed goes under it")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = ap.parse_args(argv)
    work = Path(args.workdir)
    by_seed = {}
    for seed in args.seeds:
        d = work / f"seed-{seed}"
        if (d / "results.duckdb").exists():  # a finished run of this seed: its report rebuilt from its item scores
            by_seed[seed] = _rebuilt(d, seed)
        elif (d / "conclusions.json").exists():  # only its conclusions kept: read as they are
            # not strict_json: conclusions.json is what _rebuilt / the demo wrote here itself
            by_seed[seed] = json.loads((d / "conclusions.json").read_text(encoding="utf-8"))
        else:
            by_seed[seed] = run_demo(d, seed=seed, progress=False)["conclusions"]
    stable = stability(by_seed)
    STABILITY.parent.mkdir(parents=True, exist_ok=True)
    STABILITY.write_text(json.dumps(stable, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    first = by_seed[min(by_seed)]
    for path, block in render_blocks(first, stable).items():
        changed = replace_block(path, block)
        print(f"{path.relative_to(ROOT)}: {'updated' if changed else 'unchanged'}", file=sys.stderr)
    print(f"{stable['n_stable']} conclusions agree across seeds {stable['seeds']}, {stable['n_unstable']} differ",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
