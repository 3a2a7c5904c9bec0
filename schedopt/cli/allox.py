"""`schedopt allox`: replay a trace on GPU and CPU machines under online AlloX or a baseline,
or sweep AlloX's fairness knob alpha."""

from __future__ import annotations

import json
from pathlib import Path

import click

from schedopt.cli import render
from schedopt.errors import SchedoptError
from schedopt.instance import load_instance
from schedopt.simulation.allox_sim import SCHEDULERS, alpha_sweep, simulate_allox


def parse_alphas(text: str) -> list[float]:
    """'0.25,0.5,1' -> [0.25, 0.5, 1.0], each in (0, 1]; SchedoptError otherwise."""
    try:
        alphas = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SchedoptError(f"--sweep expects comma-separated numbers in (0, 1], got {text!r}") from None
    bad = [a for a in alphas if not 0.0 < a <= 1.0]
    if not alphas or bad:
        raise SchedoptError(f"--sweep expects comma-separated numbers in (0, 1], got {text!r}")
    return alphas


def _metric_rows(summary: dict) -> list[list[str]]:
    rows = [["jobs", str(summary["jobs"])]]
    for key in ("average_jct_s", "p50_jct_s", "p90_jct_s", "p99_jct_s", "makespan_s",
                "max_user_average_jct_s"):
        rows.append([key, render.number(summary[key], 6)])
    rows += [[f"average_jct_s user {user}", f"{value:.6g}"]
             for user, value in summary["user_average_jct_s"].items()]
    for key in ("jain_share", "jain_user_jct", "utilization_gpu", "utilization_cpu"):
        rows.append([key, render.number(summary[key], 4)])
    rows += [["decisions", str(summary["decisions"])],
             ["solve_seconds_mean", render.number(summary["solve_seconds_mean"], 3)]]
    return rows


@click.command("allox")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--scheduler", type=click.Choice(SCHEDULERS), default="allox", show_default=True,
              help="allox: min-cost matching re-solved at each decision; sjf: shortest job first "
                   "on its faster device; fifo: arrival order, fastest free machine; drf: lowest "
                   "dominant share first (all non-preemptive).")
@click.option("--alpha", type=float, default=1.0, show_default=True,
              help="AlloX's fairness knob in (0, 1]: the share of users (lowest share first) "
                   "whose jobs enter each matching; 1 = pure average JCT.")
@click.option("--sweep", default=None, metavar="A1,A2,...",
              help="Run allox at each alpha and print average JCT and fairness per alpha.")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --sweep: write the average-JCT / fairness vs alpha figure here.")
@click.option("--json", "as_json", is_flag=True, help="Print the result (seconds) as JSON.")
@click.option("--jobs-csv", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write one row per job (arrival, start, completion, JCT, machine) to CSV.")
def allox_command(trace, scheduler, alpha, sweep, plot, as_json, jobs_csv):
    """Replay TRACE (jobs with arrival times, users, total_steps and GPU throughputs, and
    performance.cpu_time for the CPU machines) on every GPU and CPU machine without preemption,
    and report JCT (s), fairness and utilization. Times are seconds."""
    if plot is not None and sweep is None:
        raise SchedoptError("--plot draws the alpha sweep: give --sweep too")
    if not 0.0 < alpha <= 1.0:
        raise SchedoptError(f"--alpha must be in (0, 1], got {alpha:g}")
    alphas = parse_alphas(sweep) if sweep is not None else None
    if plot is not None:
        from schedopt.plots import require_matplotlib

        require_matplotlib()  # before the simulations
    instance = load_instance(trace)
    if alphas is not None:
        table = alpha_sweep(instance, alphas)
        if plot is not None:
            from schedopt.plots import allox_alpha_tradeoff

            allox_alpha_tradeoff(table).savefig(plot, dpi=120)
        if as_json:
            click.echo(json.dumps({"format": "schedopt-allox-sweep/1", "trace": str(trace),
                                   "rows": json.loads(table.to_json(orient="records"))}, indent=1))
            return
        click.echo(f"trace {trace} ({len(instance.jobs)} jobs), allox alpha sweep\n")
        rows = [[f"{r.alpha:g}", f"{r.average_jct_s:.0f}", f"{r.p90_jct_s:.0f}",
                 f"{r.makespan_s:.0f}", f"{r.jain_share:.4f}", f"{r.jain_user_jct:.4f}"]
                for r in table.itertuples()]
        click.echo(render.table(["alpha", "average JCT (s)", "p90 JCT (s)", "makespan (s)",
                                 "Jain (shares)", "Jain (users' avg JCT)"], rows))
        if plot is not None:
            click.echo(f"\nwrote {plot}")
        return
    result = simulate_allox(instance, scheduler, alpha)
    if jobs_csv is not None:
        result.jobs.to_csv(jobs_csv)
    if as_json:
        jobs = json.loads(result.jobs.reset_index().to_json(orient="records"))
        click.echo(json.dumps({"format": "schedopt-allox-simulation/1", "scheduler": scheduler,
                               "alpha": alpha, "summary": result.summary, "jobs": jobs}, indent=1))
        return
    name = f"allox (alpha={alpha:g})" if scheduler == "allox" else scheduler
    click.echo(f"trace {trace} ({len(instance.jobs)} jobs), scheduler {name}\n")
    click.echo(render.table(["metric", "value"], _metric_rows(result.summary)))
