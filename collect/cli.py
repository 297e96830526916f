"""``trb-collect``: check a study, record subjects' sessions in a terminal or a browser, manage drafts.

A thin layer over :mod:`collect.study`, :mod:`collect.recorder`, :mod:`collect.app` and
:mod:`collect.serve`; errors are rendered once, as lines on stderr with an exit code.
"""

from __future__ import annotations

import sys

import click

from schemas.versions import TOOLKIT_VERSION

__all__ = ["cli", "main"]

_CORPUS_HELP = "Corpus directory (default: $TRB_CORPUS, else the current directory)."


def _corpus(corpus_dir):
    from corpus.store import Corpus, resolve_corpus_dir

    return Corpus(resolve_corpus_dir(corpus_dir)).require_readable(purpose="trb-collect (checking the store)")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(TOOLKIT_VERSION, prog_name="trb-collect")
def cli() -> None:
    """Record paired-counterfactual sessions from human subjects (a study file says what to record)."""


@cli.command()
@click.argument("study", type=click.Path(dir_okay=False))
def check(study) -> None:
    """Check a study file: every problem with its line, or what the study will record."""
    from collect.study import load_study

    s = load_study(study)
    revise = "every step" if s.revise_steps is None else "steps " + ", ".join(map(str, s.revise_steps))
    click.echo(f"study {s.id} ({s.title}): {s.pairs_per_subject} pair(s) per subject = "
               f"{2 * s.pairs_per_subject} session(s); environment {s.environment.name}, {len(s.tasks)} task(s); "
               f"{len(s.contexts)} context(s): {', '.join(f'{c.id} ({c.language})' for c in s.contexts)}; "
               f"revisions offered at {revise}; consent {s.consent_ref}")


def _subject_options(f):
    f = click.option("--subject", "subject_id", default=None,
                     help="The subject's pseudonymous id, entered by the experimenter (default: made at random).")(f)
    f = click.option("--context", "context_id", default=None, help="The study context (default: its first).")(f)
    return f


@cli.command()
@click.argument("study", type=click.Path(dir_okay=False))
@click.option("--corpus", "corpus_dir", type=click.Path(file_okay=False), default=None, help=_CORPUS_HELP)
@_subject_options
@click.option("--resume", "draft_id", default=None, help="Resume this draft (trb-collect drafts lists them).")
@click.option("--browser", default=None, hidden=True,
              help="(trb-collect serve) The browser's key: its unfinished run is offered back.")
def run(study, corpus_dir, subject_id, context_id, draft_id, browser) -> None:
    """Open the subject's app in this terminal."""
    from collect.app import run_app
    from collect.study import load_study

    run_app(load_study(study), _corpus(corpus_dir), subject_id=subject_id, context_id=context_id, resume=draft_id,
            browser=browser)


@cli.command()
@click.argument("study", type=click.Path(dir_okay=False))
@click.option("--corpus", "corpus_dir", type=click.Path(file_okay=False), default=None, help=_CORPUS_HELP)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=int, default=8000, show_default=True, help="Port to listen on.")
@click.option("--public-url", default=None, help="The URL subjects open, when it differs (a proxy).")
@click.option("--context", "context_id", default=None, help="The study context (default: its first).")
def serve(study, corpus_dir, host, port, public_url, context_id) -> None:
    """Serve the subject's app to browsers (textual-serve): one session per connection, each its own subject
    (a random pseudonymous id)."""
    from collect.serve import serve as run
    from collect.study import load_study

    load_study(study)  # refuse a bad study before anything listens
    run(study, _corpus(corpus_dir).dir, host=host, port=port, public_url=public_url, context_id=context_id)


@cli.group(invoke_without_command=True)
@click.option("--corpus", "corpus_dir", type=click.Path(file_okay=False), default=None, help=_CORPUS_HELP)
@click.pass_context
def drafts(ctx, corpus_dir) -> None:
    """List the drafts beside the corpus (runs closed or crashed half-way; never ingested half)."""
    ctx.obj = corpus_dir
    if ctx.invoked_subcommand is not None:
        return
    from collect.recorder import list_drafts

    found = list_drafts(_corpus(corpus_dir))
    if not found:
        click.echo("no drafts", err=True)
    for d in found:
        click.echo(f"{d.draft_id}\tstudy {d.study_id} ({d.study_path})\tsubject {d.subject_id}\t{d.progress}\t"
                   f"last saved {d.updated_at}")


@drafts.command("discard")
@click.argument("draft_id")
@click.pass_obj
def drafts_discard(corpus_dir, draft_id) -> None:
    """Delete a draft: what it held is not recorded."""
    from collect.recorder import discard_draft

    d = discard_draft(_corpus(corpus_dir), draft_id)
    click.echo(f"discarded draft {d.draft_id} (subject {d.subject_id}, {d.progress})", err=True)


@drafts.command("resume")
@click.argument("draft_id")
@click.pass_obj
def drafts_resume(corpus_dir, draft_id) -> None:
    """Open the app where the draft stopped (its study file must be unchanged)."""
    from collect.app import run_app
    from collect.recorder import Collection

    corpus = _corpus(corpus_dir)
    col = Collection.resume(corpus, draft_id)
    run_app(col.study, corpus, resume=draft_id)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; a toolkit error is rendered once on stderr with its exit code."""
    from toolkit.errors import run_cli
    from toolkit.interrupts import sigterm_as_interrupt

    with sigterm_as_interrupt():
        return run_cli(cli, argv, "trb-collect")


if __name__ == "__main__":
    sys.exit(main())
