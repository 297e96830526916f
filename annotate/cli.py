"""``trb-annotate``: Label Studio projects, annotations, agreement and adjudication (a thin CLI).

The server comes from ``LABEL_STUDIO_URL`` and the key from ``LABEL_STUDIO_API_KEY``; the key
is never printed. Every command calls one library function; errors are rendered once here,
as one line on stderr with a non-zero exit code. stdout carries data only.
"""

from __future__ import annotations

import json
import sys

import click

from schemas.versions import TOOLKIT_VERSION
from toolkit.errors import run_cli
from toolkit.locking import wait_seconds_callback

_CORPUS_HELP = "Corpus directory (default: $TRB_CORPUS, else the current directory)."


def _corpus(corpus_dir):
    from corpus.store import Corpus, resolve_corpus_dir

    return Corpus(resolve_corpus_dir(corpus_dir)).require()


def _corpus_option(f):
    return click.option("--corpus", "corpus_dir", type=click.Path(file_okay=False), default=None, help=_CORPUS_HELP)(f)


def _wait_option(f):
    return click.option("--wait", "wait_seconds", type=float, default=None, callback=wait_seconds_callback,
                        help="Seconds to wait for a corpus held by another process, ≥ 0 (0: do not wait; inf: no "
                             "limit; default $TRB_LOCK_WAIT or 120).")(f)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(TOOLKIT_VERSION, prog_name="trb-annotate")
def cli() -> None:
    """TRB annotation in Label Studio: push items, pull annotations, agreement, adjudication.

    The server is LABEL_STUDIO_URL; the key is LABEL_STUDIO_API_KEY (from the environment only).
    """


@cli.command()
@click.option("--kind", type=click.Choice(["attribution", "continuation"]), required=True,
              help="attribution: the caused_by_self project; continuation: the Φ(r') project.")
@_corpus_option
@click.option("--project", "title", default=None,
              help="Project title (default: 'TRB caused_by_self' or 'TRB continuation'); made when missing.")
@click.option("--overlap", type=int, default=3, show_default=True, help="Annotators asked per task (a new project).")
@click.option("--where", default=None, help="SQL filter on the item table (attribution or counterfactuals).")
@click.option("--batch-size", type=int, default=500, show_default=True, help="Tasks per import request.")
@click.option("--update", is_flag=True,
              help="Bring a project made by another version (or edited by hand) up to date in place first: its "
                   "labelling config, instructions and settings, and the data of its tasks; logged in "
                   "<corpus>/.trb-annotate/changes.jsonl.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@_wait_option
def push(kind, corpus_dir, title, overlap, where, batch_size, update, quiet, wait_seconds) -> None:
    """Import the corpus items not yet in the project (each task carries an opaque item key; re-runs add nothing).

    A new project gets the toolkit's labelling config and instructions (shown when labelling starts), and
    refuses empty submissions."""
    from annotate.client import connect
    from annotate.push import push as run

    report = run(_corpus(corpus_dir), connect(), kind, title=title, overlap=overlap, where=where,
                 batch_size=batch_size, progress=not quiet, wait_seconds=wait_seconds, update=update)
    click.echo(report.summary(), err=True)


@cli.command()
@_corpus_option
@click.option("--project", "title", default=None, help="Project title (default: every project made by push).")
@click.option("--full", is_flag=True,
              help="Read every task, not only those changed since the last pull (the result is the same).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@_wait_option
def pull(corpus_dir, title, full, quiet, wait_seconds) -> None:
    """Bring every annotation into the corpus (changed ones as new revisions; re-pulls add nothing).

    Incremental: only tasks changed since the last pull are read (a ledger in <corpus>/.trb-annotate/, checked
    against the server). Submissions that cannot be labels (empty, a note with no answer, malformed, skipped) are
    listed by project, task and annotator; notes beside an answer are kept as its rationale."""
    from annotate.client import connect
    from annotate.pull import pull as run

    report = run(_corpus(corpus_dir), connect(), title=title, progress=not quiet, wait_seconds=wait_seconds,
                 full=full)
    for line in report.lines():
        click.echo(line, err=True)


@cli.command()
@_corpus_option
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout.")
@click.option("--level", type=click.Choice(["nominal", "ordinal"]), default="nominal", show_default=True,
              help="Krippendorff's α level for caused_by_self: ordinal orders self < unsure < exogenous "
                   "(continuation is always nominal).")
@click.option("--unsure", type=click.Choice(["category", "missing"]), default="category", show_default=True,
              help="caused_by_self's 'unsure': a category, or missing (dropped before α and κ).")
@click.option("--bootstrap", "reps", type=int, default=1000, show_default=True,
              help="Bootstrap resamples (of sessions) for α's CI.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@_wait_option
def agreement(corpus_dir, as_json, level, unsure, reps, seed, wait_seconds) -> None:
    """Krippendorff's α (95% CI from a bootstrap of sessions) per project, Cohen's κ per annotator pair,
    disagreements."""
    from annotate.agreement import agreement as run

    result = run(_corpus(corpus_dir), level=level, unsure=unsure, reps=reps, seed=seed, wait_seconds=wait_seconds)
    if as_json:
        click.echo(json.dumps({k: v.as_dict() for k, v in result.items()}, indent=2))
        return
    if not result:
        click.echo("no annotator labels in the corpus (run trb-annotate pull)", err=True)
    f = lambda x: "—" if x is None else f"{x:.3f}"  # noqa: E731
    for name, a in result.items():
        how = a.level + (f" {' < '.join(a.order)}" if a.order else "")
        if a.unsure:
            how += f"; unsure as {'a category' if a.unsure == 'category' else 'missing'}"
            how += f" ({a.unsure_dropped} label(s) dropped)" if a.unsure == "missing" else ""
        ci = f"[{f(a.alpha_ci[0])}, {f(a.alpha_ci[1])}]" if a.alpha_ci else "—"
        click.echo(f"{name}: alpha ({how}) {f(a.alpha)} 95% CI {ci} from {a.resamples} resample(s) of "
                   f"{a.sessions} session(s), {a.undefined_resamples} undefined (left out); "
                   f"{a.items} item(s) ({a.pairable_items} with 2+ labels), {a.annotations} label(s), "
                   f"{len(a.annotators)} annotator(s), {len(a.disagreements)} disagreement(s)"
                   + (f"; {a.example_labels} example label(s) (source kind illustrative) left out"
                      if a.example_labels else ""))
        for k in a.kappa:
            click.echo(f"  kappa {k.a} / {k.b}: {f(k.kappa)} over {k.n} item(s)")
        for i in a.independence:
            click.echo(f"  independence {i.annotator}: {i.after_another} of {i.labels} label(s) given after "
                       "another annotator's label on the same item existed")
        for d in a.disagreements:
            votes = ", ".join(f"{v} {n}" for v, n in d["votes"].items())
            click.echo(f"  disagreement {d['target_id']}: {votes}")


@cli.command()
@_corpus_option
@click.option("--rule", type=click.Choice(["plurality-margin", "strict-majority"]), default="plurality-margin",
              show_default=True, help="plurality-margin: the top label wins when it leads the runner-up by --margin "
                                      "votes; strict-majority: a label wins only with more than half of the votes.")
@click.option("--margin", type=int, default=None,
              help="plurality-margin only: votes the top label must lead the runner-up by (default 1).")
@click.option("--min-votes", type=int, default=3, show_default=True, help="Labels an item needs before it is decided.")
@click.option("--json", "as_json", is_flag=True, help="Decisions and Φ(r') as JSON on stdout.")
@_wait_option
def adjudicate(corpus_dir, rule, margin, min_votes, as_json, wait_seconds) -> None:
    """Plurality with a margin (or strict majority) -> adjudicated labels; the rest -> the review queue; Φ(r')."""
    from annotate.adjudicate import adjudicate as run
    from annotate.adjudicate import phi_from_annotations

    corpus = _corpus(corpus_dir)
    report = run(corpus, rule=rule, margin=margin, min_votes=min_votes, wait_seconds=wait_seconds)
    click.echo(report.summary(), err=True)
    if as_json:
        click.echo(json.dumps({
            "method": report.method,
            "decisions": {t: {"label": d.label, "margin": d.margin, "votes": d.votes, "review": d.reason}
                          for t, d in report.decisions.items()},
            "phi": phi_from_annotations(corpus, wait_seconds=wait_seconds)}, indent=2))


@cli.command()
@click.option("--corpus", "corpus_dir", type=click.Path(file_okay=False), default=None,
              help="Corpus directory: also say how many of each project's labels it holds (pulled). Default: "
                   "$TRB_CORPUS when set, else none (status reads the server only).")
@click.option("--project", "title", default=None, help="Project title (default: every project made by push).")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout.")
@_wait_option
def status(corpus_dir, title, as_json, wait_seconds) -> None:
    """Per project: tasks, labels, completion, annotators, and every submission that is not a label."""
    import os
    from dataclasses import asdict

    from annotate.client import connect
    from annotate.status import status as run

    given = corpus_dir or os.environ.get("TRB_CORPUS")
    rows = run(connect(), title=title, corpus=_corpus(corpus_dir) if given else None, wait_seconds=wait_seconds)
    if as_json:
        click.echo(json.dumps([asdict(r) for r in rows], indent=2))
        return
    if not rows:
        click.echo("no trb-annotate projects on the server (run trb-annotate push)", err=True)
    for r in rows:
        done = "—" if r.completion is None else f"{100 * r.completion:.1f}%"
        bad = sum(r.not_taken.values())
        why = f" ({', '.join(f'{n} {k}' for k, n in sorted(r.not_taken.items()))})" if bad else ""
        click.echo(f"{r.title} (id {r.project_id}, {r.kind}, overlap {r.overlap}): {r.tasks} task(s), "
                   f"{r.annotations} label(s), {r.finished_tasks} complete ({done}), "
                   f"{len(r.annotators)} annotator(s), {bad} submission(s) that are not labels{why}"
                   + (f"; {len(r.incomplete)} label(s) incomplete" if r.incomplete else "")
                   + (f"; {r.pulled} pulled into the corpus" if r.pulled is not None else ""))
        for u in r.unusable + r.incomplete:
            click.echo(f"  {u.line()}")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; every error is rendered once, as lines on stderr with the API key removed."""
    from annotate.errors import redact
    from toolkit.interrupts import sigterm_as_interrupt

    with sigterm_as_interrupt():
        return run_cli(cli, argv, "trb-annotate", redact=redact,
                       interrupted="interrupted; what was imported or written so far is complete, re-run to finish")


if __name__ == "__main__":
    sys.exit(main())
