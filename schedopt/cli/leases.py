"""`schedopt leases`: `schedopt simulate` for lease policies, several side by side (default:
chronus, edf and srtf), comparing SLO misses, best-effort JCT and preemptions."""

from __future__ import annotations

import json
from pathlib import Path

import click

from schedopt.cli import render
from schedopt.cli.outputs import check_targets, write_csv
from schedopt.cli.simulate import check_taken, options_for, policy_options
from schedopt.core.decisions import DecisionKind
from schedopt.core.registry import resolve
from schedopt.errors import PolicyError, SchedoptError
from schedopt.instance import load_instance
from schedopt.simulation import SimulationConfig, simulate

DEFAULT_POLICIES = ("chronus", "edf", "srtf")


def parse_sigma(text: str | None) -> float | str | None:
    if text is None or text == "adaptive":
        return text
    if text in ("1", "+1", "-1"):
        return float(text)
    raise SchedoptError(f"--sigma expects +1, -1 or adaptive, got {text!r}")


def lease_policies(names: tuple[str, ...]) -> list[str]:
    """The policies to run (default: chronus, edf, srtf), each checked to decide leases."""
    chosen = list(dict.fromkeys(names)) or list(DEFAULT_POLICIES)
    for name in chosen:
        kind = resolve(name)[0].decision
        if kind != DecisionKind.LEASES:
            raise PolicyError(f"policy {name} decides {kind.value}; `schedopt leases` replays "
                              f"lease policies ({', '.join(DEFAULT_POLICIES)}); use "
                              f"`schedopt simulate` for the others")
    return chosen


@click.command("leases")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--policy", "-p", "policies", multiple=True, metavar="NAME",
              help="Lease policy: chronus (admission control + lease MILP + shortest remaining "
                   "service), edf (earliest deadline first), srtf (shortest remaining time "
                   "first), or MODULE:NAME. Repeatable; default: the three side by side.")
@click.option("--scheduler", "schedulers", multiple=True, hidden=True,
              help="Deprecated: --policy.")
@click.option("--option", "-o", "options", multiple=True, metavar="KEY=VALUE",
              help="Policy option, repeatable, given to each policy that takes it: "
                   "lease_seconds (s, default 1200), resume_overhead_s (s lost per start or "
                   "resume, default 30), gpu_type (the pool; default: the type with the most "
                   "GPUs), round_up (true/false); chronus also horizon_leases, horizon_seconds, "
                   "slots_per_doubling and sigma.")
@click.option("--solver", "-s", default=None,
              help="MILP backend for chronus's lease MILP (default: its own; cpsat, scip, cbc).")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=5.0,
              show_default=True, help="Seconds per lease MILP (its incumbent is used after).")
@click.option("--lease-seconds", type=click.FloatRange(min=0, min_open=True), default=None,
              hidden=True)
@click.option("--resume-overhead", type=click.FloatRange(min=0), default=None, hidden=True)
@click.option("--gpu-type", default=None, hidden=True)
@click.option("--horizon", type=click.IntRange(min=1), default=None, hidden=True)
@click.option("--sigma", default=None, hidden=True)
@click.option("--no-round-up", is_flag=True, default=None, hidden=True)
@click.option("--json", "as_json", is_flag=True, help="Print summaries and per-job rows as JSON.")
@click.option("--jobs-csv", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write one row per job and policy to CSV.")
@click.option("--progress/--no-progress", default=False, help="Progress bar over finished jobs.")
def leases_command(trace, policies, schedulers, options, solver, time_limit, lease_seconds,
                   resume_overhead, gpu_type, horizon, sigma, no_round_up, as_json, jobs_csv,
                   progress):
    """Replay TRACE (jobs with arrival_time, total_steps and, for SLO jobs, deadline or
    deadline_options) lease by lease on one GPU type, and report the SLO deadline-miss ratio,
    the value-weighted miss, best-effort average JCT (s) and preemptions per policy."""
    if schedulers:
        click.echo("warning: --scheduler is deprecated; use --policy (-p)", err=True)
    names = lease_policies(policies + schedulers)
    values = policy_options(options, {
        "--lease-seconds": ("lease_seconds", lease_seconds),
        "--resume-overhead": ("resume_overhead_s", resume_overhead),
        "--gpu-type": ("gpu_type", gpu_type), "--horizon": ("horizon_leases", horizon),
        "--sigma": ("sigma", parse_sigma(sigma)),
        "--no-round-up": ("round_up", False if no_round_up else None)})
    check_taken(names, values)
    check_targets([trace], csv=jobs_csv)
    instance = load_instance(trace)
    results = [simulate(instance, name, SimulationConfig(
        solver=solver, time_limit=time_limit, policy_options=options_for(name, values)), progress)
        for name in names]
    if jobs_csv is not None:
        import pandas as pd

        write_csv(pd.concat({r.policy: r.jobs for r in results}, names=["scheduler"]), jobs_csv,
                  [trace])
    if as_json:
        click.echo(json.dumps({
            "format": "schedopt-lease-simulation/1", "trace": str(trace),
            "results": [{"scheduler": r.policy, "summary": r.summary,
                         "jobs": json.loads(r.jobs.reset_index().to_json(orient="records"))}
                        for r in results]}, indent=1))
        return
    s = results[0].summary
    length = getattr(results[0].options, "lease_seconds", values.get("lease_seconds", 1200.0))
    click.echo(f"trace {trace}: {s['jobs']} jobs ({s['slo_jobs']} SLO, {s['best_effort_jobs']} "
               f"best effort) on {s['gpus']} {s['gpu_type']} GPUs, leases of {length:g} s\n")
    click.echo(render.table(["metric", *(r.policy for r in results)],
                            render.lease_run_rows([r.summary for r in results])))
