"""`schedopt compare TRACE` and `schedopt sweep`: policies side by side in simulation.

compare: one trace under several policies, a table of run metrics (and a JCT CDF with --plot).
sweep: synthetic traces at several arrival rates, average JCT per policy against load (and
that curve with --plot). Errors print one line and exit with code 2 (via the main group).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import click

from schedopt.cli import interrupts, render
from schedopt.cli.outputs import check_targets, save_figure
from schedopt.compare import (EXECUTORS, SOLVE_SECONDS, SOLVE_SECONDS_MAX, SOLVES, compare,
                              load_sweep, run_number, summary_row)
from schedopt.errors import SchedoptError
from schedopt.files import check_output
from schedopt.instance import load_instance
from schedopt.simulation import SimulationConfig

DEFAULT_POLICIES = "max_min_fairness,max_min_fairness_agnostic"


def _policies_option(f):
    return click.option("--policies", "-p", default=DEFAULT_POLICIES, show_default=True,
                        metavar="NAME,NAME,...",
                        help="Comma-separated policies from `schedopt policies` (any kind: "
                             "allocation, lease or queue), gavel:NAME or MODULE:NAME.")(f)


def _simulation_options(f):
    f = click.option("--resume", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Continue from this checkpoint of finished runs (same trace(s), "
                          "policies and options): those runs are not simulated again.")(f)
    f = click.option("--checkpoint", type=click.Path(dir_okay=False, path_type=Path),
                     default=None,
                     help="Save every finished simulation to this file as it ends (default "
                          "with --resume: the resumed file).")(f)
    f = click.option("--executor", type=click.Choice(list(EXECUTORS)), default="serial",
                     show_default=True,
                     help="How the independent simulations run: one after the other, in worker "
                          "processes (one per core), or on Ray (the cluster at RAY_ADDRESS, "
                          "else a local one). The results are the same.")(f)
    f = click.option("--progress/--no-progress", default=None,
                     help="Progress bar over the simulations on stderr (default: when stderr "
                          "is a terminal).")(f)
    f = click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")(f)
    f = click.option("--solver", "-s", default=None,
                     help="Solver backend (default: each policy's own).")(f)
    f = click.option("--round-seconds", default=360.0, show_default=True,
                     type=click.FloatRange(min=1), help="Round length in seconds.")(f)
    return click.option("--mode", type=click.Choice(["default", "gavel"]), default="default",
                        show_default=True,
                        help="default: schedopt's round mechanism; gavel: the conventions of "
                             "Gavel's simulator (re-solve at most every 1920 s, no "
                             "unconsolidated throughputs).")(f)


def _config(mode: str, round_seconds: float, seed: int, solver: str | None) -> SimulationConfig:
    make = SimulationConfig.gavel_compatible if mode == "gavel" else SimulationConfig
    return make(round_seconds=round_seconds, seed=seed, solver=solver)


def _check_checkpoint(checkpoint: Path | None, resume: Path | None, inputs: list[Path]) -> None:
    """Before any simulation: the resumed file exists, the checkpoint can be written (and is no
    input); an interrupt then says where the finished runs are."""
    if resume is not None and not resume.is_file():
        raise SchedoptError(f"{resume}: no such checkpoint file")
    target = checkpoint if checkpoint is not None else resume
    if target is not None:
        check_output(target, inputs, "checkpoint")
        interrupts.progress(f"finished simulations (if any) are saved in {target}; continue with "
                            f"--resume {target}")


def _names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise SchedoptError(f"--policies: expected NAME[,NAME...], got {text!r}")
    return names


def _rates(text: str) -> list[float]:
    try:
        rates = [float(r) for r in text.split(",") if r.strip()]
    except ValueError:
        rates = []
    if not rates or not all(math.isfinite(r) and r >= 0 for r in rates):
        raise SchedoptError(f"--rates: expected jobs/hour >= 0 as R[,R...], got {text!r}")
    if len(set(rates)) < len(rates):
        raise SchedoptError(f"--rates: a rate is listed more than once in {text!r}")
    return rates


def _window(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    start, sep, end = text.partition(":")
    if not (sep and start.strip().isdigit() and end.strip().isdigit()):
        raise SchedoptError(f"--window: expected START:END (job indices in arrival order), got {text!r}")
    return int(start), int(end)


def _progress(flag: bool | None) -> bool:
    return sys.stderr.isatty() if flag is None else flag


def _hours(seconds) -> str:
    return render.number(None if seconds is None else seconds / 3600.0, 4)


def _dumps(document) -> str:
    """JSON with NaN/inf written as null."""
    def clean(x):
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x
    return json.dumps(clean(document), indent=1, allow_nan=False)


@click.command("compare", short_help="Simulate a trace under several policies, side by side.")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@_policies_option
@_simulation_options
@click.option("--seed", default=0, show_default=True, type=int,
              help="Seed of gavel mode's GPU-type shuffle for agnostic policies.")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Draw the CDF of job completion times, one line per policy, to this image "
                   "(.png, .pdf, .svg; needs matplotlib).")
def compare_command(trace, policies, mode, round_seconds, solver, as_json, progress, executor,
                    checkpoint, resume, seed, plot):
    """Simulate the TRACE (an instance whose jobs have arrival_time and total_steps) under
    each policy and print one row of metrics per policy.

    Columns: average and 90th-percentile job completion time (JCT, hours), makespan (hours,
    first arrival to last completion), worst finish-time fairness rho (JCT / time under an
    isolated 1/n share), GPU utilization (busy GPU-time / (GPUs x makespan)), policy solves
    and solve seconds (mean / max). --json prints every metric in seconds.
    """
    names = _names(policies)
    check_targets([trace], figure=plot)
    _check_checkpoint(checkpoint, resume, [trace])
    instance = load_instance(trace)
    config = _config(mode, round_seconds, seed, solver)
    table, jobs, results = compare(instance, names, config, progress=_progress(progress),
                                   executor=executor, checkpoint=checkpoint, resume=resume)
    counts = {name: t.count for name, t in instance.cluster.gpu_types.items()}
    rows = [{"policy": p, **summary_row(r.summary, counts)} for p, r in results.items()]
    if plot is not None:
        from schedopt.plots import jct_cdf
        save_figure(jct_cdf(jobs), plot, [trace])
    if as_json:
        click.echo(_dumps({"trace": str(trace), "jobs": len(instance.jobs), "mode": mode,
                           "round_seconds": round_seconds, "policies": rows}))
        return
    click.echo(f"trace: {instance.name or trace} ({len(instance.jobs)} jobs; "
               + ", ".join(f"{n} {t}" for t, n in counts.items()) + f" GPUs), mode {mode}\n")
    click.echo(render.table(
        ["policy", "avg JCT (h)", "p90 JCT (h)", "makespan (h)", "rho max", "utilization",
         "solves", "solve s mean", "solve s max"],
        [[r["policy"], _hours(r["average_jct_s"]), _hours(r["p90_jct_s"]), _hours(r["makespan_s"]),
          render.number(r.get("rho_max"), 4), _percent(run_number(r, "utilization")),
          _fixed(run_number(r, *SOLVES), 0), _fixed(run_number(r, *SOLVE_SECONDS), 4),
          _fixed(run_number(r, *SOLVE_SECONDS_MAX), 4)] for r in rows]))


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _fixed(value: float | None, decimals: int) -> str:
    return "-" if value is None else f"{value:.{decimals}f}"


@click.command("sweep", short_help="Average JCT vs arrival rate per policy (synthetic traces).")
@click.option("--throughputs", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Gavel's simulation_throughputs.json (steps/s per job type and GPU type), or "
                   "a schedopt instance file holding a performance section.")
@click.option("--rates", required=True, metavar="R,R,...",
              help="Arrival rates to sweep, jobs per hour (Poisson arrivals).")
@click.option("--jobs", "num_jobs", default=200, show_default=True, type=click.IntRange(min=1),
              help="Jobs per synthetic trace.")
@_policies_option
@click.option("--cluster", default=None, metavar="TYPE=COUNT,...",
              help="GPUs of each type (default Gavel's physical cluster v100=8,p100=16,k80=24).")
@click.option("--gpus-per-node", default=None, metavar="TYPE=N,...",
              help="GPUs per server for each type (default v100=4,p100=4,k80=8).")
@click.option("--single-gpu", is_flag=True, help="Only single-GPU jobs (Gavel's single-GPU traces).")
@click.option("--window", default=None, metavar="START:END",
              help="Average JCT over jobs START..END-1 in arrival order only, to measure steady "
                   "state as Gavel's experiments do (default: all jobs).")
@click.option("--seed", default=0, show_default=True, type=int,
              help="Seed of the synthetic traces (the same at every rate) and of gavel mode.")
@_simulation_options
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Draw average JCT (hours) against input job rate (jobs/hour), one line per "
                   "policy, to this image (.png, .pdf, .svg; needs matplotlib).")
def sweep_command(throughputs, rates, num_jobs, policies, cluster, gpus_per_node, single_gpu,
                  window, seed, mode, round_seconds, solver, as_json, progress, executor,
                  checkpoint, resume, plot):
    """Average job completion time against load: for each arrival rate, draw one synthetic
    trace like Gavel's generator (the same trace for every policy) and simulate each policy.

    Prints a table of average JCT (hours), rates down, policies across; --json prints every
    (rate, policy) row in seconds.
    """
    from schedopt.traces import gavel_cluster, load_performance, parse_gpu_map

    names, rate_list, span = _names(policies), _rates(rates), _window(window)
    check_targets([throughputs], figure=plot)
    _check_checkpoint(checkpoint, resume, [throughputs])
    counts = parse_gpu_map(cluster, "--cluster") if cluster else None
    per_node = parse_gpu_map(gpus_per_node, "--gpus-per-node") if gpus_per_node else None
    spec = gavel_cluster(counts, per_node)
    performance = load_performance(throughputs, list(spec["gpu_types"]), colocation=False)
    frame = load_sweep(performance, spec, rate_list, names, num_jobs, seed,
                       _config(mode, round_seconds, seed, solver), window=span,
                       progress=_progress(progress), executor=executor, checkpoint=checkpoint,
                       resume=resume, single_gpu=single_gpu)
    if plot is not None:
        from schedopt.plots import jct_vs_load
        save_figure(jct_vs_load(frame), plot, [throughputs])
    gpus = {t: e["count"] for t, e in spec["gpu_types"].items()}
    if as_json:
        click.echo(_dumps({"throughputs": str(throughputs), "cluster": gpus, "jobs": num_jobs,
                           "seed": seed, "single_gpu": single_gpu, "mode": mode,
                           "round_seconds": round_seconds,
                           "window": list(span) if span else None,
                           "rows": frame.to_dict(orient="records")}))
        return
    measured = f"jobs {span[0]}..{span[1] - 1} by arrival" if span else "all jobs"
    click.echo(f"average JCT (hours) over {measured}; {num_jobs} jobs per trace, seed {seed}, "
               + ", ".join(f"{n} {t}" for t, n in gpus.items()) + f" GPUs, mode {mode}\n")
    pivot = frame.pivot(index="rate_jobs_per_hour", columns="policy", values="average_jct_h")
    click.echo(render.table(["rate (jobs/h)", *names],
                            [[f"{rate:g}", *(render.number(pivot.loc[rate, p], 4) for p in names)]
                             for rate in pivot.index]))

