"""`schedopt simulate` (replay a trace under a policy) and `schedopt place` (the round mechanism
on one instance)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import numpy as np

from schedopt.api import solve
from schedopt.cli import interrupts, render
from schedopt.cli.outputs import check_targets, save_figure, write_csv
from schedopt.instance import load_instance
from schedopt.mechanism.rounds import mechanism_error, run_rounds
from schedopt.core.registry import resolve
from schedopt.errors import PolicyError
from schedopt.files import check_output
from schedopt.simulation import CheckpointError, CheckpointPlan, SimulationConfig, simulate
from schedopt.mechanism.topology import Topology

def policy_options(texts: tuple[str, ...], aliases: dict[str, tuple[str, object]] = {}) -> dict:
    """The policy options of `-o KEY=VALUE` texts, plus those given through deprecated options:
    `aliases` {option flag: (policy option, value or None when not given)}; each one given
    prints one deprecation line on stderr."""
    from schedopt.cli.main import parse_option

    values = dict(parse_option(text) for text in texts)
    for flag, (key, value) in aliases.items():
        if value is not None:
            click.echo(f"warning: {flag} is deprecated; use -o {key}={value}", err=True)
            values.setdefault(key, value)
    return values


def options_for(policy, values: dict) -> dict:
    """The options in `values` that `policy` (a name or a Policy) takes."""
    chosen = resolve(policy)[0] if isinstance(policy, str) else policy
    return {key: value for key, value in values.items() if key in chosen.option_names}


def check_taken(policies: list[str], values: dict) -> None:
    """One line naming the options in `values` that none of `policies` takes."""
    taken = set().union(*(resolve(p)[0].option_names for p in policies))
    unknown = sorted(set(values) - taken)
    if unknown:
        raise PolicyError(f"no policy among {', '.join(policies)} takes option(s) "
                          f"{', '.join(unknown)}")


def result_document(result, trace: Path, mode: str) -> dict:
    """A run as the `schedopt-simulation/1` document: policy, mode, kind, summary, jobs (and
    `learning`, the learned throughputs' error at each re-solve, when they were learned)."""
    jobs = json.loads(result.jobs.reset_index().to_json(orient="records"))
    document = {"format": "schedopt-simulation/1", "policy": result.policy, "mode": mode,
                "kind": result.kind.value, "summary": result.summary, "jobs": jobs}
    if result.learning is not None:
        document["learning"] = json.loads(result.learning.to_json(orient="records"))
    return document


def checkpoint_plan(path: Path | None, every: int | None, seconds: float | None,
                    resume: Path | None, inputs: list[Path]) -> CheckpointPlan | None:
    """The checkpoint plan of --checkpoint/--checkpoint-every/--checkpoint-seconds (with --resume
    alone: the resumed file); its target is checked before any work, and each write is what an
    interrupt reports."""
    if path is None and resume is None:
        if every is not None or seconds is not None:
            raise CheckpointError("--checkpoint-every/--checkpoint-seconds need --checkpoint FILE")
        return None
    if resume is not None and not resume.is_file():
        raise CheckpointError(f"{resume}: no such checkpoint file")
    target = check_output(path or resume, inputs, "checkpoint")
    if resume is not None:
        interrupts.progress(f"checkpoint {resume} is as it was; continue with --resume {resume}")

    def written(where: Path, events: int) -> None:
        interrupts.progress(f"checkpoint {where} holds {events} rounds; continue with "
                            f"--resume {where}")
    return CheckpointPlan(target, every, seconds, on_write=written)


@click.command("simulate")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--policy", "-p", default="max_min_fairness", show_default=True,
              help="Policy name from `schedopt policies` (allocation, lease or queue policies), "
                   "gavel:NAME, or MODULE:NAME.")
@click.option("--mode", type=click.Choice(["default", "gavel"]), default="default", show_default=True,
              help="Allocation policies: 'gavel' reproduces the conventions of Gavel's reference "
                   "simulator (1920 s between re-solves, per-type queues, floored steps; "
                   "docs/gavel-simulator.md).")
@click.option("--round-seconds", type=click.FloatRange(min=1), default=360.0, show_default=True,
              help="Round length in seconds (allocation policies).")
@click.option("--max-rounds", type=click.IntRange(min=1), default=1_000_000, show_default=True,
              help="Allocation policies: stop with an error after this many rounds (checked "
                   "before the first round against each job's total_steps at its fastest "
                   "throughput).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of gavel mode's GPU-type shuffle for agnostic policies and of --perf-error.")
@click.option("--solver", "-s", default=None, help="Solver backend (default: the policy's own).")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds per solver call (default: none; chronus: 5 per lease MILP).")
@click.option("--json", "as_json", is_flag=True, help="Print summary and per-job rows as JSON.")
@click.option("--jobs-csv", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write one row per job (arrival, completion, JCT in seconds, ...) to CSV.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar over completed jobs (default: when stderr is a terminal).")
@click.option("--pop", "partitions", type=click.IntRange(min=1), default=None, metavar="K",
              help="Re-solve with POP in K parts (jobs keep their part between re-solves).")
@click.option("--executor", type=click.Choice(["serial", "process", "ray"]), default="serial",
              show_default=True, help="With --pop: how the parts run.")
@click.option("--perf-error", type=click.FloatRange(min=0, max=1, max_open=True), default=0.0,
              show_default=True, metavar="E",
              help="The policy sees every throughput times a seeded log-normal factor with mean "
                   "relative error E (0.1 = 10%); jobs still run at the true throughputs.")
@click.option("--learn-throughputs", is_flag=True,
              help="Packed policies: the policy sees co-location rates learned from what the "
                   "jobs ran at (EMA per pair of job types, re-completed at every re-solve), "
                   "starting from the trace's table with --hide-pairs of it hidden; the output "
                   "adds how the estimate's error fell.")
@click.option("--hide-pairs", type=click.FloatRange(min=0, max=1), default=1.0,
              show_default=True, metavar="F",
              help="With --learn-throughputs: the share of the trace's pair measurements hidden "
                   "at the start, drawn with --seed (1: start from isolated throughputs only).")
@click.option("--learning-plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --learn-throughputs: save the error of the estimate against simulated "
                   "time as an image (PNG, SVG, PDF; needs matplotlib).")
@click.option("--option", "-o", "options", multiple=True, metavar="KEY=VALUE",
              help="Policy option, repeatable (e.g. -o robust=0.2 for max_min_fairness, "
                   "-o lease_seconds=600 for chronus, -o alpha=0.5 for allox).")
@click.option("--checkpoint", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the run's state to this file periodically and when interrupted "
                   "(any policy), to continue it later with --resume.")
@click.option("--checkpoint-every", type=click.IntRange(min=1), default=None, metavar="N",
              help="With --checkpoint: write it every N rounds (queue policies: events; "
                   "lease policies: lease boundaries).")
@click.option("--checkpoint-seconds", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="S", help="With --checkpoint: write it every S wall seconds (default 60).")
@click.option("--resume", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Continue the run saved in this checkpoint (same trace and options); it "
                   "goes on writing checkpoints there unless --checkpoint names another file.")
def simulate_command(trace, policy, mode, round_seconds, max_rounds, seed, solver, time_limit,
                     as_json, jobs_csv, progress, partitions, executor, perf_error,
                     learn_throughputs, hide_pairs, learning_plot, options, checkpoint,
                     checkpoint_every, checkpoint_seconds, resume):
    """Replay TRACE (an instance whose jobs have arrival times and total_steps) under a policy
    of any kind and report its run metrics: for allocation policies JCT, makespan, finish-time
    fairness, deadline misses, utilization and cost; for lease policies SLO misses and
    preemptions; for queue policies per-user JCT and fairness. Times are seconds (tables:
    hours for allocation runs)."""
    if learning_plot is not None and not learn_throughputs:
        raise PolicyError("--learning-plot needs --learn-throughputs")
    check_targets([trace], csv=jobs_csv, figure=learning_plot)
    plan = checkpoint_plan(checkpoint, checkpoint_every, checkpoint_seconds, resume, [trace])
    instance = load_instance(trace)
    make = SimulationConfig.gavel_compatible if mode == "gavel" else SimulationConfig
    config = make(round_seconds=round_seconds, max_rounds=max_rounds, seed=seed, solver=solver,
                  time_limit=time_limit, partitions=partitions, executor=executor,
                  perf_error=perf_error, learn_throughputs=learn_throughputs, hide_pairs=hide_pairs,
                  policy_options=policy_options(options))
    show_bar = sys.stderr.isatty() if progress is None else progress
    result = simulate(instance, policy, config, progress=show_bar, checkpoint=plan,
                      resume=resume)
    if jobs_csv is not None:
        write_csv(result.jobs, jobs_csv, [trace])
    if learning_plot is not None:
        from schedopt.plots import learning_curve

        save_figure(learning_curve(result.learning), learning_plot, [trace])
    if as_json:
        document = result_document(result, trace, mode)
        document["policy"] = policy
        click.echo(json.dumps(document, indent=1))
        return
    click.echo(f"trace {trace} ({len(instance.jobs)} jobs), policy {policy}, mode {mode}\n")
    click.echo(render.table(["metric", "value"],
                            render.simulation_rows(result.kind.value, result.summary)))
    if result.learning is not None:
        rows = [[f"{row.time_s / 3600:.2f}", str(row.measured_cells), f"{row.pair_mre:.1%}",
                 f"{row.hidden_mre:.1%}", str(row.zeros_shared)]
                for row in result.learning.itertuples()]
        click.echo("\nlearned pair rates, error against the true table at each re-solve:\n"
                   + render.table(["time (h)", "cells measured", "error, all pairs",
                                   "error, hidden pairs", "cannot-share pairs let share"], rows))


@click.command("place")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--policy", "-p", default="max_min_fairness", show_default=True,
              help="Policy whose allocation X the rounds follow.")
@click.option("--rounds", "-n", type=click.IntRange(min=1), default=10, show_default=True,
              help="How many rounds to run (X stays fixed; jobs do not finish).")
@click.option("--round-seconds", type=click.FloatRange(min=1), default=360.0, show_default=True)
@click.option("--show", type=click.IntRange(min=0), default=5, show_default=True,
              help="Rounds whose placement is printed (the first ones).")
@click.option("--work-conserving/--strict", default=False, show_default=True,
              help="Give idle GPUs to waiting jobs (then received time can exceed X).")
@click.option("--json", "as_json", is_flag=True, help="Print placements and errors as JSON.")
def place_command(file, policy, rounds, round_seconds, show, work_conserving, as_json):
    """Run the round-based mechanism on FILE: which job runs on which GPUs each round, and the
    mechanism's error max |received fraction - X| after the rounds (it shrinks as rounds grow)."""
    instance = load_instance(file)
    result = solve(instance, policy)
    topology = Topology.from_cluster(instance.cluster)
    ids = result.job_ids
    scale = np.array([job.scale_factor for job in instance.jobs])
    shown, errors = [], {}
    for r, placement, fraction in run_rounds(result.X, scale, topology, rounds, round_seconds,
                                             work_conserving):
        if r < show:
            shown.append({ids[m]: [topology.gpu_label(g) for g in gpus]
                          for m, gpus in sorted(placement.gpus.items())})
        if (r + 1) in (1, 10, 100, 1000, 10000) or r + 1 == rounds:
            errors[r + 1] = mechanism_error(result.X, fraction)
    if as_json:
        click.echo(json.dumps({"policy": result.policy, "rounds": shown,
                               "error_after_rounds": errors}, indent=1))
        return
    for r, placement in enumerate(shown):
        click.echo(f"round {r}: " + "; ".join(f"{job} -> {','.join(g)}" for job, g in placement.items()))
    click.echo("\n" + render.table(["rounds", "max |received fraction - X|"],
                                   [[str(n), f"{e:.4f}"] for n, e in errors.items()]))
