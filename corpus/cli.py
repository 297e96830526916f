"""``trb-corpus``: a thin command line over the corpus library.

Every command calls one library function; library errors are rendered here, once,
as plain lines on stderr with an exit code from :class:`toolkit.errors.ExitCode`.
stdout carries data only.
"""

from __future__ import annotations

import json
import os
import sys

import click

from corpus.jsonl import DEFAULT_MAX_LINE_BYTES
from schemas.release_format import MIN_ANNOTATORS
from schemas.versions import TOOLKIT_VERSION
from toolkit.errors import run_cli
from toolkit.locking import wait_seconds_callback
from toolkit.out_paths import check_output_path

_CORPUS_HELP = "Corpus directory (default: $TRB_CORPUS, else the current directory)."


def _corpus_option(f):
    return click.option("--corpus", "corpus_dir", type=click.Path(file_okay=False), default=None, help=_CORPUS_HELP)(f)


_WAIT_HELP = ("Seconds to wait for a corpus held by another process, ≥ 0 (0: do not wait; inf: no limit; default "
              "$TRB_LOCK_WAIT or 120).")


def _wait_option(f):
    return click.option("--wait", "wait_seconds", type=float, default=None, callback=wait_seconds_callback,
                        help=_WAIT_HELP)(f)


def _file_options(f):
    """FILES, --corpus, --max-line-bytes, --wait, -q: shared by validate and ingest."""
    f = click.option("-q", "--quiet", is_flag=True, help="No progress bar.")(f)
    f = _wait_option(f)
    f = click.option("--max-line-bytes", type=click.IntRange(min=1), default=DEFAULT_MAX_LINE_BYTES,
                     show_default=True, help="Longest accepted line, in bytes (≥ 1).")(f)
    f = _corpus_option(f)
    return click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))(f)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(TOOLKIT_VERSION, prog_name="trb-corpus")
def cli() -> None:
    """The TRB corpus: validate and ingest JSONL records, count them, simulate a task world."""


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False))
def init(directory: str) -> None:
    """Make a new, empty corpus in DIRECTORY."""
    from corpus.store import init_corpus

    path = init_corpus(check_output_path(directory, "DIRECTORY", directory=True))
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
    warning = report.cap_warning()
    if warning:
        click.echo(warning, err=True)


@cli.command()
@_file_options
def validate(files, corpus_dir, max_line_bytes, wait_seconds, quiet) -> None:
    """Check FILES (JSONL or .jsonl.gz) without writing anything.

    References and conflicts are checked against the corpus when there is one.
    Exit 0 when valid; else exit 1 with every problem on stderr as
    FILE:LINE: /json/pointer: message.
    """
    _ingest_like(True, files, corpus_dir, max_line_bytes, wait_seconds, quiet)


@cli.command()
@_file_options
def ingest(files, corpus_dir, max_line_bytes, wait_seconds, quiet) -> None:
    """Validate FILES completely, then write all their new records in one transaction, or none.

    Re-ingesting the same records is a no-op; an id that exists with different
    content is a conflict (exit 3) and nothing is written. When the corpus afterwards
    breaks the 3:1 synthetic:human cap a release enforces, a warning on stderr gives
    the figures (synthetic vs human-origin counterfactuals, the ratio, the limit, how
    many human-origin ones are needed).
    """
    _ingest_like(False, files, corpus_dir, max_line_bytes, wait_seconds, quiet)


@cli.command()
@_corpus_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_wait_option
def stats(corpus_dir, as_json, wait_seconds) -> None:
    """Counts by record kind, source kind, counterfactual origin, label status; the synthetic:human ratio.

    Steps with r_t count those where something was reported; an r_t recorded empty (an imported
    benchmark item's, every slot null) is counted on its own line.
    """
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
@click.option("--annotators", type=click.IntRange(1, 10_000), default=None,
              help="Φ(r') as the choices of N simulated annotators (phi_n = N) instead of the subject's exact policy "
                   "(the default: no annotator count, no annotator noise).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def simulate(n_sessions, seed, output, annotators, quiet) -> None:
    """Write N simulated sessions of the TRB task world (with counterfactuals, attribution items, transfer contexts)."""
    from corpus.simulate import write_simulation

    check_output_path(output, "--output", directory=False)
    summary = write_simulation(output, n_sessions=n_sessions, seed=seed, annotators=annotators, progress=not quiet)
    click.echo(summary, err=True)


@cli.command()
@_corpus_option
@click.option("--seed", type=int, required=True, help="Seed: the same seed generates the same values and ids.")
@click.option("--per-step", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Synthetic r' per step with r_t (before the cap).")
@click.option("--adversarial", is_flag=True, help="Include adversarial values (built to mislead).")
@click.option("--ood", is_flag=True, help="Include out-of-distribution values.")
@_wait_option
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def synth(corpus_dir, seed, per_step, adversarial, ood, wait_seconds, quiet) -> None:
    """Add synthetic counterfactuals r' for steps with r_t, never past the 3:1 synthetic:human cap."""
    from corpus.store import Corpus, resolve_corpus_dir
    from corpus.synth import synthesize

    report = synthesize(Corpus(resolve_corpus_dir(corpus_dir)), seed=seed, per_step=per_step,
                        adversarial=adversarial, ood=ood, progress=not quiet, wait_seconds=wait_seconds)
    click.echo(report.summary(), err=True)


@cli.command()
@_corpus_option
@click.option("--version", "version", required=True, help="Release version X.Y.Z.")
@click.option("--kind", type=click.Choice(["trb", "smoke"]), default="trb", show_default=True,
              help="trb: real data only; smoke: may hold simulated/illustrative data, labelled SMOKE TEST.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Release directory (default <corpus>/releases/X.Y.Z).")
@click.option("--trainer-org", "trainer_orgs", multiple=True,
              help="An organisation that trained the model under test (repeatable): it may not have collected a "
                   "transfer context.")
@click.option("--parent", type=click.Path(file_okay=False, exists=True), default=None,
              help="The previous release: its salt is reused and its held-out sessions stay held out.")
@click.option("--salt", default=None, help="Split salt (default: the parent's, else trb-split-v1).")
@click.option("--split-fractions", default=None,
              help="Shares of subjects per split, e.g. train=0.7,dev=0.1,eval=0.2 (the default; a parent's are "
                   "reused). A smoke test of a tiny corpus may use eval=1.")
@click.option("--redact-pii", is_flag=True, help="Release with PII hits redacted instead of refusing.")
@click.option("--public-field", "public_fields", multiple=True,
              help="A field whose value names a person but is public, e.g. collector (repeatable): its value is "
                   "kept in every file; other kinds of personal data in it are still found.")
@click.option("--datasheet", type=click.Path(dir_okay=False, exists=True), default=None,
              help="A curator-completed datasheet template (required for --kind trb).")
@click.option("--min-annotators", type=click.IntRange(min=1), default=MIN_ANNOTATORS, show_default=True,
              help="Least annotators behind each eval/transfer distribution Φ(r'); recorded in the manifest and "
                   "stated in the card.")
@click.option("--waive-synthetic-cap", is_flag=True,
              help="With --kind smoke only: record the 3:1 synthetic:human cap's figures but do not enforce them (a "
                   "control set of synthetic counterfactuals, e.g. the Turpin positive control); the manifest and "
                   "card mark the gate waived.")
@_wait_option
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def release(corpus_dir, version, kind, out, trainer_orgs, parent, salt, split_fractions, redact_pii, public_fields,
            datasheet, min_annotators, waive_synthetic_cap, wait_seconds, quiet) -> None:
    """Cut an immutable, SHA-pinned release (a Hugging Face dataset directory); print its SHA last.

    Nothing is written when any gate fails (exit 6): synthetic cap, transfer
    provenance, split discipline, completeness, annotators behind Φ (--min-annotators),
    PII scan, immutability. The card and manifest report, per split, the annotators
    behind Φ and the Track 1 annotator-noise ceiling.
    """
    from corpus.errors import UsageError
    from corpus.gates import WAIVED
    from corpus.release import cut_release
    from corpus.splits import parse_fractions
    from corpus.store import Corpus, resolve_corpus_dir

    try:
        fractions = parse_fractions(split_fractions) if split_fractions else None
    except ValueError as e:
        raise UsageError(f"--split-fractions: {e}") from None
    if out is not None:
        check_output_path(out, "--out", directory=True)
    if datasheet is not None:
        from corpus.card import check_datasheet_template

        check_datasheet_template(datasheet, "--datasheet")
    result = cut_release(Corpus(resolve_corpus_dir(corpus_dir)), version, kind=kind, out=out,
                         trainer_orgs=list(trainer_orgs), parent=parent, salt=salt, redact_pii=redact_pii,
                         datasheet=datasheet, split_fractions=fractions, progress=not quiet,
                         wait_seconds=wait_seconds, min_annotators=min_annotators, public_fields=public_fields,
                         waive_synthetic_cap=waive_synthetic_cap)
    m = result.manifest
    for g in m["gates"]:
        state = "waived" if str(g.get("bar") or "").startswith(WAIVED) else "passed" if g["passed"] else "FAILED"
        click.echo(f"gate {g['name']}: {state}: {g['figure']}", err=True)
    state = "written" if result.created else "already released with the same content"
    smoke = " (SMOKE TEST: no TRB score may be claimed from it)" if m["smoke_test"] else ""
    click.echo(f"release {m['version']} {state}: {result.directory}{smoke}", err=True)
    click.echo(m["release_sha"])


class _ImportGroup(click.Group):
    """``trb-corpus import KIND``: one subcommand per registered importer, built when asked for."""

    def list_commands(self, ctx) -> list[str]:
        from corpus.importers.registry import available_importers

        return sorted(available_importers())

    def get_command(self, ctx, name):
        from corpus.importers.registry import available_importers

        importer = available_importers().get(name)
        return None if importer is None else _import_command(importer)


def _import_command(importer) -> click.Command:
    def run(files, corpus_dir, output, fit_cap, wait_seconds, quiet, **options):
        from corpus.importers.run import import_files
        from corpus.store import Corpus, resolve_corpus_dir

        if output is not None:
            check_output_path(output, "--output", directory=False)
        corpus = Corpus(resolve_corpus_dir(corpus_dir))
        if output is not None and not corpus.exists():
            if corpus_dir:
                corpus.require()
            corpus = None
        report = import_files(corpus, importer.name, list(files), options=options, output=output, fit_cap=fit_cap,
                              progress=not quiet, wait_seconds=wait_seconds)
        for line in report.lines():
            click.echo(line, err=True)
        if report.output is None and report.ingest is not None and report.ingest.cap_warning():
            click.echo(report.ingest.cap_warning(), err=True)

    params: list[click.Parameter] = [
        click.Argument(["files"], nargs=-1, required=True, type=click.Path(dir_okay=False)),
        click.Option(["--corpus", "corpus_dir"], type=click.Path(file_okay=False), default=None, help=_CORPUS_HELP),
        click.Option(["-o", "--output"], type=click.Path(dir_okay=False), default=None,
                     help="Write the records to this JSONL file (validated, against the corpus when there is one) "
                          "instead of ingesting them; the 3:1 cap is not applied to it (it is checked where the "
                          "file is ingested) unless --fit-cap."),
        click.Option(["--fit-cap"], is_flag=True,
                     help="Keep only as many new synthetic counterfactuals as the 3:1 cap has room for, instead of "
                          "refusing the import; refused when that keeps none of them."),
    ]
    for opt in importer.options:
        if opt.type is bool:
            params.append(click.Option([opt.cli_flag, opt.name], is_flag=True, default=False, help=opt.help))
        else:
            params.append(click.Option([opt.cli_flag, opt.name], type=opt.type, default=None, help=opt.help
                                       + (f" [default: {opt.default}]" if opt.default not in (None, "") else "")))
    params += [
        click.Option(["--wait", "wait_seconds"], type=float, default=None, callback=wait_seconds_callback,
                     help=_WAIT_HELP),
        click.Option(["-q", "--quiet"], is_flag=True, help="No progress bar."),
    ]
    return click.Command(importer.name, callback=run, params=params, help=importer.help, short_help=importer.summary)


@cli.group("import", cls=_ImportGroup)
def import_() -> None:
    """Import outside data with a registered importer (KIND), then validate and ingest it like any records.

    Nothing reaches the corpus another way: the records go through the 3:1 cap check,
    every schema and reference check, and one all-or-nothing ingest (or, with -o, into a
    validated JSONL file, for annotators: the cap is checked where it is ingested). Built-in kinds: mcq (multiple-choice and yes/no benchmark
    items), inspect (inspect_ai evaluation logs); a package adds its own through the
    trb.importers entry-point group. Each kind's --help says how it assigns subjects.
    """


@cli.command()
@click.argument("name", required=False)
@click.option("--readme", is_flag=True, help="Print the example's README (what each record is for) instead of its path.")
def examples(name, readme) -> None:
    """The examples shipped in the package: every NAME and JSONL path; with NAME, only its path.

    Illustrative data, for smoke tests only. For instance:

    \b
    trb-corpus validate "$(trb-corpus examples 7f3a)"
    """
    from corpus.errors import UsageError
    from corpus.examples import example_names, example_path, example_readme

    if name is None:
        if readme:
            raise UsageError("--readme needs an example NAME")
        for n in example_names():
            click.echo(f"{n}\t{example_path(n)}")
    elif readme:
        click.echo(example_readme(name), nl=False)
    else:
        click.echo(str(example_path(name)))


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False))
def verify(directory) -> None:
    """Check DIRECTORY against its manifest: every file's hash, the release SHA and every claim recomputed from the
    rows, the claims digest; exit 13 naming what differs."""
    from corpus.verify import verify_release

    notes: list[str] = []
    m = verify_release(directory, notes)
    for note in notes:
        click.echo(f"note: {note}", err=True)
    click.echo(f"verified {directory}: release {m['version']} ({m['kind']}), SHA {m['release_sha']}", err=True)


@cli.command()
@_corpus_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def releases(corpus_dir, as_json) -> None:
    """Every release of the corpus: version, SHA, kind, counts per split, synthetic share.

    A directory under releases/ whose manifest is not a release manifest is named on stderr (exit 13); the
    others are listed all the same.
    """
    from corpus.errors import InvalidReleases
    from corpus.release import list_releases
    from corpus.store import Corpus, resolve_corpus_dir

    problems: list[str] = []
    rows = list_releases(Corpus(resolve_corpus_dir(corpus_dir)), problems)
    _print_releases(rows, as_json)
    if problems:
        raise InvalidReleases(problems)


def _print_releases(rows: list[dict], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("(no releases)")
    for r in rows:
        splits: dict[str, int] = {}
        for per_split in r["counts"].values():
            for split, n in per_split.items():
                splits[split] = splits.get(split, 0) + n
        share = "n/a" if r["synthetic_share"] is None else f"{r['synthetic_share']:.3f}"
        parts = ", ".join(f"{k} {v:,}" for k, v in splits.items())
        click.echo(f"{r['version']}  {r['release_sha']}  {r['kind']}{' (SMOKE TEST)' if r['smoke_test'] else ''}"
                   f"  rows by split: {parts}  synthetic share {share}")


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False, exists=True))
@click.option("--repo", required=True, help="Hugging Face dataset repository ORG/NAME.")
@click.option("--private", is_flag=True, help="Create the repository as private.")
def publish(directory, repo, private) -> None:
    """Upload a verified release to the Hugging Face Hub, tag its version, record the hub commit in hub.json."""
    from corpus.publish import publish_release

    record = publish_release(directory, repo, token=os.environ.get("HF_TOKEN"), private=private)
    click.echo(f"published {directory} to {repo} at {record['commit']} (tag {record['tag']})", err=True)
    click.echo(record["commit"])


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; every toolkit error is rendered once, as lines on stderr (:func:`toolkit.errors.run_cli`)."""
    from toolkit.interrupts import sigterm_as_interrupt

    with sigterm_as_interrupt():
        return run_cli(cli, argv, "trb-corpus", interrupted="interrupted; nothing half-written")


if __name__ == "__main__":
    sys.exit(main())
