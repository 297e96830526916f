"""``trb-review [CORPUS_DIR | --corpus DIR] [--results FILE] [--reviewer ID]``: open the review app."""

from __future__ import annotations

import sys

import click

from schemas.versions import TOOLKIT_VERSION

__all__ = ["cli", "main"]


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(TOOLKIT_VERSION, prog_name="trb-review")
@click.argument("corpus_dir", required=False, type=click.Path(file_okay=False))
@click.option("--corpus", "corpus_opt", type=click.Path(file_okay=False), default=None,
              help="The corpus directory (the same as CORPUS_DIR, as the other trb commands take it).")
@click.option("--results", "results", type=click.Path(dir_okay=False, exists=True),
              help="A results store (results.duckdb from `trb run`): runs, per-track scores, worst items.")
@click.option("--reviewer", help="Your reviewer id, recorded on every label (default: $TRB_REVIEWER, else the OS user).")
def cli(corpus_dir: str | None, corpus_opt: str | None, results: str | None, reviewer: str | None) -> None:
    """Review a corpus: browse sessions, read traces, label attribution items, adjudicate, read results.

    The corpus is CORPUS_DIR or --corpus DIR (not both), else $TRB_CORPUS, else the current directory.
    """
    from corpus.errors import UsageError
    from corpus.review import reviewer_id
    from corpus.store import Corpus, resolve_corpus_dir

    if corpus_dir is not None and corpus_opt is not None:
        raise UsageError(f"give the corpus once: CORPUS_DIR {corpus_dir} or --corpus {corpus_opt}, not both")
    corpus = Corpus(resolve_corpus_dir(corpus_opt if corpus_opt is not None else corpus_dir)).require_readable(
        purpose="trb-review (checking the store)")
    if results is not None:
        from trb.results import ResultsError, ResultsStore

        try:
            ResultsStore(results, wait_seconds=10, create=False).require()  # a reader: never made here
        except ResultsError as e:  # the same code as `trb report --results` (RESULTS, or BUSY), naming the option
            raise type(e)(f"--results {results}: {e.message}") from None
    from tui.app import ReviewApp

    ReviewApp(corpus.dir, results=results, reviewer=reviewer_id(reviewer)).run()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; a toolkit error is one line on stderr and an exit code (:func:`toolkit.errors.run_cli`)."""
    from toolkit.errors import run_cli
    from toolkit.interrupts import sigterm_as_interrupt

    with sigterm_as_interrupt():
        return run_cli(cli, argv, "trb-review")


if __name__ == "__main__":
    sys.exit(main())
