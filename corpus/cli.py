"""``trb-corpus``: a thin command line over the corpus library.

Every command calls one library function; library errors are rendered here, once,
as plain lines on stderr with an exit code from :class:`corpus.errors.ExitCode`.
stdout carries data only.
"""

from __future__ import annotations

import json
import sys

import click

from corpus.errors import CorpusError, ExitCode
from corpus.jsonl import DEFAULT_MAX_LINE_BYTES

_CORPUS_HELP = "Corpus directory (default: $TRB_CORPUS, else the current directory)."


def _corpus_option(f):
    return click.option("--corpus", "corpus_dir", type=click.Path(file_okay=False), default=None, help=_CORPUS_HELP)(f)


def _wait_option(f):
    return click.option("--wait", "wait_seconds", type=float, default=None,
                        help="Seconds to wait for a corpus held by another process (default $TRB_LOCK_WAIT or 120).")(f)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option("0.1.0", prog_name="trb-corpus")
def cli() -> None:
    """The TRB corpus: validate and ingest JSONL records, count them, simulate a task world."""


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False))
def init(directory: str) -> None:
    """Make a new, empty corpus in DIRECTORY."""
    from corpus.store import init_corpus

    path = init_corpus(directory)
    click.echo(f"initialised corpus {path}", err=True)


def _ingest_like(dry_run: bool, files, corpus_dir, max_line_bytes, wait_seconds, quiet) -> None:
    from corpus.ingest import ingest
    from corpus.store import Corpus, resolve_corpus_dir

    corpus = Corpus(resolve_corpus_dir(corpus_dir))
    if dry_run and not corpus.exists():
        if corpus_dir:
            corpus.require()
        corpus = None
    report = ingest(corpus, list(files), dry_run=dry_run, max_line_bytes=max_line_bytes,
                    progress=not quiet, wait_seconds=wait_seconds)
    click.echo(f"{report.summary()} in {report.seconds:.1f} s", err=True)


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_corpus_option
@click.option("--max-line-bytes", type=int, default=DEFAULT_MAX_LINE_BYTES, show_default=True,
              help="Longest accepted line.")
@_wait_option
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def validate(files, corpus_dir, max_line_bytes, wait_seconds, quiet) -> None:
    """Check FILES (JSONL or .jsonl.gz) without writing anything.

    References and conflicts are checked against the corpus when there is one.
    Exit 0 when valid; else exit 1 with every problem on stderr as
    FILE:LINE: /json/pointer: message.
    """
    _ingest_like(True, files, corpus_dir, max_line_bytes, wait_seconds, quiet)


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_corpus_option
@click.option("--max-line-bytes", type=int, default=DEFAULT_MAX_LINE_BYTES, show_default=True,
              help="Longest accepted line.")
@_wait_option
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def ingest(files, corpus_dir, max_line_bytes, wait_seconds, quiet) -> None:
    """Validate FILES completely, then write all their new records in one transaction, or none.

    Re-ingesting the same records is a no-op; an id that exists with different
    content is a conflict (exit 3) and nothing is written.
    """
    _ingest_like(False, files, corpus_dir, max_line_bytes, wait_seconds, quiet)


@cli.command()
@_corpus_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_wait_option
def stats(corpus_dir, as_json, wait_seconds) -> None:
    """Counts by record kind, source kind, counterfactual origin, label status; the synthetic:human ratio."""
    from corpus.stats import corpus_stats, render_stats
    from corpus.store import Corpus, resolve_corpus_dir

    s = corpus_stats(Corpus(resolve_corpus_dir(corpus_dir)), wait_seconds=wait_seconds)
    click.echo(json.dumps(s, indent=2) if as_json else render_stats(s))


@cli.command()
@click.option("--sessions", "n_sessions", type=click.IntRange(1, 1_000_000), required=True,
              help="How many sessions (1 to 1,000,000).")
@click.option("--seed", type=int, required=True, help="Seed: the same seed gives the same file.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="Output JSONL file (.jsonl.gz to compress).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def simulate(n_sessions, seed, output, quiet) -> None:
    """Write N simulated sessions of the TRB task world (with counterfactuals, attribution items, transfer contexts)."""
    from corpus.simulate import write_simulation

    summary = write_simulation(output, n_sessions=n_sessions, seed=seed, progress=not quiet)
    click.echo(summary, err=True)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; render every toolkit error once, as lines on stderr."""
    try:
        cli.main(args=argv, prog_name="trb-corpus", standalone_mode=False)
    except CorpusError as e:
        for line in e.lines():
            click.echo(line, err=True)
        return int(e.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as e:
        e.show()
        return int(ExitCode.USAGE)
    except KeyboardInterrupt:
        click.echo("interrupted; nothing half-written", err=True)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
