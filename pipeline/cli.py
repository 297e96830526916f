"""``trb-demo``: the whole pipeline on the simulated world (a SMOKE TEST), what ``make demo`` runs."""

from __future__ import annotations

import sys

import click

from pipeline.demo import DEMO_ROLLOUT_SEEDS, DEMO_SESSIONS
from trb.numerics import pin_environment

# The demo's figures are quoted in the docs: the same CPU kernels on every machine, chosen before torch is imported.
pin_environment()

__all__ = ["cli", "main"]


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--workdir", type=click.Path(file_okay=False), default="demo-work", show_default=True,
              help="An empty or new directory; the corpus, release, checkpoints and results stay there.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--sessions", type=click.IntRange(50, 100_000), default=DEMO_SESSIONS, show_default=True,
              help="Simulated sessions.")
@click.option("--baseline-pairs", type=click.IntRange(10, None), default=None,
              help="Train each LM baseline on at most this many train steps (a seeded subset; default: all).")
@click.option("--rollout-seeds", type=click.IntRange(1, 1000), default=DEMO_ROLLOUT_SEEDS, show_default=True,
              help="Tracks 4 and 5: held-out episodes per task of the built-in task set (it defines 4).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
def cli(workdir, seed, sessions, baseline_pairs, rollout_seeds, quiet) -> None:
    """The whole pipeline on the simulated world (a SMOKE TEST): simulate, ingest, release, train the five
    baselines, run Tracks 1, 3, 4 and 5 on each, report."""
    from pipeline.demo import demo_baseline_settings, run_demo
    from toolkit.out_paths import check_output_path

    check_output_path(workdir, "--workdir", directory=True)

    result = run_demo(workdir, seed=seed, sessions=sessions, progress=not quiet,
                      baseline_settings=demo_baseline_settings(max_pairs=baseline_pairs), rollout_seeds=rollout_seeds)
    click.echo(result["markdown"])


def main(argv: list[str] | None = None) -> int:
    """Run the demo; any toolkit error (corpus or engine) is rendered once, as lines on stderr."""
    from toolkit.errors import run_cli
    from toolkit.interrupts import sigterm_as_interrupt

    with sigterm_as_interrupt():
        return run_cli(cli, argv, "trb-demo")


if __name__ == "__main__":
    sys.exit(main())
