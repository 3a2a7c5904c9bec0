"""`schedopt allox`: `schedopt simulate` for queue policies (online AlloX or a baseline) on GPU
and CPU machines, or a sweep of AlloX's fairness knob alpha."""

from __future__ import annotations

import json
from pathlib import Path

import click

from schedopt.cli import render
from schedopt.cli.outputs import check_targets, save_figure, write_csv
from schedopt.cli.simulate import policy_options
from schedopt.core.decisions import DecisionKind
from schedopt.core.registry import resolve
from schedopt.errors import PolicyError, SchedoptError
from schedopt.instance import load_instance
from schedopt.simulation import SimulationConfig, simulate
from schedopt.simulation.allox_sim import RENAMED, SCHEDULERS, alpha_sweep


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


def queue_policy_name(policy: str | None, scheduler: str | None) -> str:
    """The queue policy to run: --policy, or the deprecated --scheduler (whose `fifo` is now
    `fifo_queue`); one line when it is not a queue policy."""
    if scheduler is not None:
        click.echo("warning: --scheduler is deprecated; use --policy (-p)", err=True)
        name = RENAMED.get(scheduler, scheduler)
        if name != scheduler:
            click.echo(f"warning: the AlloX scheduler {scheduler!r} is now the policy {name!r}",
                       err=True)
    else:
        name = policy or "allox"
    kind = resolve(name)[0].decision
    if kind != DecisionKind.QUEUES:
        hint = " (the AlloX queue baseline in arrival order is fifo_queue)" if name == "fifo" else ""
        raise PolicyError(f"policy {name} decides {kind.value}; `schedopt allox` replays queue "
                          f"policies ({', '.join(SCHEDULERS)}){hint}")
    return name


@click.command("allox")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--policy", "-p", default=None, metavar="NAME",
              help="Queue policy (default allox): allox (min-cost matching re-solved at each "
                   "decision), sjf (shortest job first on its faster device), fifo_queue "
                   "(arrival order, fastest free machine), drf (lowest dominant share first); "
                   "all non-preemptive. Or MODULE:NAME.")
@click.option("--scheduler", default=None, hidden=True, help="Deprecated: --policy.")
@click.option("--option", "-o", "options", multiple=True, metavar="KEY=VALUE",
              help="Policy option, repeatable: alpha, AlloX's fairness knob in (0, 1] (the share "
                   "of users, lowest share first, whose jobs enter each matching; 1 = pure "
                   "average JCT).")
@click.option("--solver", "-s", default=None,
              help="Solver backend, for policies that call one (default: the policy's own).")
@click.option("--alpha", type=float, default=None, hidden=True)
@click.option("--sweep", default=None, metavar="A1,A2,...",
              help="Run allox at each alpha and print average JCT and fairness per alpha.")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --sweep: write the average-JCT / fairness vs alpha figure here.")
@click.option("--json", "as_json", is_flag=True, help="Print the result (seconds) as JSON.")
@click.option("--jobs-csv", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write one row per job (arrival, start, completion, JCT, machine) to CSV.")
def allox_command(trace, policy, scheduler, options, solver, alpha, sweep, plot, as_json,
                  jobs_csv):
    """Replay TRACE (jobs with arrival times, users, total_steps and GPU throughputs, and
    performance.cpu_time for the CPU machines) on every GPU and CPU machine without preemption,
    and report JCT (s), fairness and utilization: `schedopt simulate` for queue policies.
    Times are seconds."""
    if plot is not None and sweep is None:
        raise SchedoptError("--plot draws the alpha sweep: give --sweep too")
    if alpha is not None and not 0.0 < alpha <= 1.0:
        raise SchedoptError(f"--alpha must be in (0, 1], got {alpha:g}")
    alphas = parse_alphas(sweep) if sweep is not None else None
    name = queue_policy_name(policy, scheduler)
    values = policy_options(options, {"--alpha": ("alpha", alpha)})
    check_targets([trace], csv=jobs_csv, figure=plot)  # before the simulations
    instance = load_instance(trace)
    if alphas is not None:
        table = alpha_sweep(instance, alphas)
        if plot is not None:
            from schedopt.plots import allox_alpha_tradeoff

            save_figure(allox_alpha_tradeoff(table), plot, [trace], announce=False)
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
    result = simulate(instance, name, SimulationConfig(solver=solver, policy_options=values))
    run_alpha = float(values.get("alpha", 1.0))
    if jobs_csv is not None:
        write_csv(result.jobs, jobs_csv, [trace])
    if as_json:
        jobs = json.loads(result.jobs.reset_index().to_json(orient="records"))
        click.echo(json.dumps({"format": "schedopt-allox-simulation/1", "scheduler": name,
                               "alpha": run_alpha, "summary": result.summary, "jobs": jobs},
                              indent=1))
        return
    shown = f"allox (alpha={run_alpha:g})" if name == "allox" else name
    click.echo(f"trace {trace} ({len(instance.jobs)} jobs), scheduler {shown}\n")
    click.echo(render.table(["metric", "value"], render.queue_run_rows(result.summary)))
