"""`schedopt leases`: replay a trace lease by lease under Chronus, EDF or SRTF and compare
SLO misses, best-effort JCT and preemptions."""

from __future__ import annotations

import json
from pathlib import Path

import click

from schedopt.cli import render
from schedopt.errors import SchedoptError
from schedopt.policies.chronus.lease_milp import DEFAULT_SOLVER
from schedopt.policies.chronus.boundary import LeaseSettings
from schedopt.instance import load_instance
from schedopt.simulation.lease_sim import SCHEDULERS, LeaseSimulationConfig, simulate_leases

METRICS = (("slo_miss_ratio", "SLO miss ratio", 4), ("value_weighted_miss", "value-weighted miss", 4),
           ("best_effort_average_jct_s", "best-effort avg JCT (s)", 6),
           ("average_jct_s", "avg JCT (s)", 6), ("makespan_s", "makespan (s)", 6),
           ("preemptions", "preemptions", 6), ("admitted", "admitted", 6),
           ("utilization", "utilization", 4), ("milp_gap_max", "max MILP gap", 3),
           ("decide_seconds_mean", "decide s (mean)", 3))


def parse_sigma(text: str) -> float | str:
    if text == "adaptive":
        return text
    if text in ("1", "+1", "-1"):
        return float(text)
    raise SchedoptError(f"--sigma expects +1, -1 or adaptive, got {text!r}")


@click.command("leases")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--scheduler", "-s", "schedulers", multiple=True, type=click.Choice(SCHEDULERS),
              help="chronus: admission control + lease MILP + shortest remaining service; edf: "
                   "earliest deadline first; srtf: shortest remaining time first. Repeatable; "
                   "default: all three, side by side.")
@click.option("--lease-seconds", type=click.FloatRange(min=0, min_open=True), default=1200.0,
              show_default=True, help="Lease length (s); decisions happen only at lease ends.")
@click.option("--resume-overhead", type=click.FloatRange(min=0), default=30.0, show_default=True,
              help="Seconds a job loses each time it starts or resumes from a checkpoint.")
@click.option("--gpu-type", default=None, help="The GPU type of the pool (default: the type with "
                                                "the most GPUs; other types are not used).")
@click.option("--horizon", type=click.IntRange(min=1), default=96, show_default=True,
              help="Chronus's planning window, in leases.")
@click.option("--sigma", default="adaptive", show_default=True,
              help="+1: guaranteed jobs run early; -1: late; adaptive: late while other jobs wait.")
@click.option("--solver", default=DEFAULT_SOLVER, show_default=True,
              help="MILP backend for the lease MILP (cpsat, scip, cbc).")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=5.0,
              show_default=True, help="Seconds per lease MILP (its incumbent is used after).")
@click.option("--no-round-up", is_flag=True,
              help="Do not round GPU counts up to 1, 2, 4, 8n for consolidation.")
@click.option("--json", "as_json", is_flag=True, help="Print summaries and per-job rows as JSON.")
@click.option("--jobs-csv", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write one row per job and scheduler to CSV.")
@click.option("--progress/--no-progress", default=False, help="Progress bar over finished jobs.")
def leases_command(trace, schedulers, lease_seconds, resume_overhead, gpu_type, horizon, sigma,
                   solver, time_limit, no_round_up, as_json, jobs_csv, progress):
    """Replay TRACE (jobs with arrival_time, total_steps and, for SLO jobs, deadline or
    deadline_options) lease by lease on one GPU type, and report the SLO deadline-miss ratio,
    the value-weighted miss, best-effort average JCT (s) and preemptions per scheduler."""
    settings = LeaseSettings(lease_seconds, resume_overhead, horizon, parse_sigma(sigma), solver,
                             time_limit)
    config = LeaseSimulationConfig(settings, gpu_type, not no_round_up)
    instance = load_instance(trace)
    results = [simulate_leases(instance, name, config, progress)
               for name in (schedulers or SCHEDULERS)]
    if jobs_csv is not None:
        import pandas as pd

        pd.concat({r.scheduler: r.jobs for r in results}, names=["scheduler"]).to_csv(jobs_csv)
    if as_json:
        click.echo(json.dumps({
            "format": "schedopt-lease-simulation/1", "trace": str(trace),
            "results": [{"scheduler": r.scheduler, "summary": r.summary,
                         "jobs": json.loads(r.jobs.reset_index().to_json(orient="records"))}
                        for r in results]}, indent=1))
        return
    s = results[0].summary
    click.echo(f"trace {trace}: {s['jobs']} jobs ({s['slo_jobs']} SLO, {s['best_effort_jobs']} "
               f"best effort) on {s['gpus']} {s['gpu_type']} GPUs, leases of {lease_seconds:g} s\n")
    rows = [[label, *(render.number(r.summary[key], digits) for r in results)]
            for key, label, digits in METRICS]
    click.echo(render.table(["metric", *(r.scheduler for r in results)], rows))
