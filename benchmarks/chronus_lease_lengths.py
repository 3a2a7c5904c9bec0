"""Chronus vs EDF vs SRTF at lease lengths of 60 s, 300 s and 1,200 s on Philly-derived bursts.

Traces (generated at run time, nothing is stored): for seed s, the jobs of Pollux's
`philly-first1000.csv` (under 6 h each, at most --gpus GPUs) from position s x --stride on,
--jobs of them in arrival order, with arrivals compressed --burst times (a burst: the same
work arrives --burst times faster), on one pool of --gpus GPUs (8 per node); a share
--slo-fraction of them (drawn with seed s) gets deadline = factor x its duration
(`schedopt.traces.read_philly_deadlines`), the rest are best effort.

Each trace is replayed with `schedopt.simulation.lease_sim.simulate_leases` under chronus
(default options: a 32 h window, leases planned one by one near now and in coarser slots
farther, the resume overhead counted once per run of consecutive leases; --overhead-per lease
counts it in every lease, as Chronus's artifact does; the lease MILP's LP relaxation and its
roundings, so the results do not depend on the machine's load; lazy guarantees while the
admitted jobs have slack, crediting admitted jobs with GPUs that jobs finishing mid-lease free),
edf and srtf, resume overhead 30 s, lease MILP limit --time-limit s
(it binds only with --chronus search=true); GPUs idle between boundaries go to waiting jobs at once
(--work-conserving off: they wait for the next boundary). Columns: SLO
miss ratio of each scheduler; `adm` SLO jobs Chronus admitted (at any time) and `adm miss`
how many of them missed their deadline; `milp s` mean and max seconds of a Chronus decision
at a boundary (admission + lease MILP + fill); `ok` whether chronus <= min(edf, srtf).
--chronus NAME=VALUE (repeatable) passes one more option to chronus only, e.g. repack=true,
readmit=true, sigma=1, others=plan, tails=false, lazy=true, search=true
(`schedopt.policies.chronus.policy.ChronusOptions`).

    python benchmarks/chronus_lease_lengths.py [--csv PATH] [--seeds 0,1] [--factors 1.3,2,3]
        [--leases 60,300,1200] [--jobs 200] [--gpus 32] [--burst 4] [--time-limit 1]
        [--overhead-per run|lease] [--work-conserving on|off] [--chronus NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from schedopt.policies.chronus.boundary import LeaseSettings
from schedopt.policies.chronus.policy import ChronusOptions
from schedopt.simulation import simulate
from schedopt.simulation.lease_sim import LeaseSimulationConfig, simulate_leases
from schedopt.traces import read_philly_deadlines

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT.parent / "shared" / "trace-samples" / "pollux" / "philly-first1000.csv"
MAX_DURATION = 6 * 3600.0  # s: Philly's multi-day jobs are dropped
OVERHEAD = 30.0  # s lost at each start or resume


def burst_csv(csv: Path, seed: int, jobs: int, stride: int, burst: float, gpus: int,
              folder: Path) -> Path:
    """The rows of one burst as a Philly CSV (timestamps in seconds)."""
    df = pd.read_csv(csv)
    stamp = pd.to_datetime(df["timestamp"], errors="coerce")
    seconds = ((stamp - stamp.min()).dt.total_seconds() if stamp.notna().all()
               else df["timestamp"].astype(float))
    keep = (df["num_gpus"] <= gpus) & (df["duration"] > 0) & (df["duration"] <= MAX_DURATION)
    rows = df.assign(timestamp=seconds)[keep].sort_values("timestamp", kind="stable")
    rows = rows.iloc[seed * stride: seed * stride + jobs].copy()
    rows["timestamp"] = (rows["timestamp"] - rows["timestamp"].min()) / burst
    path = folder / f"burst-{seed}.csv"
    rows[["timestamp", "duration", "num_gpus"]].to_csv(path, index=False)
    return path


def run(trace, lease: float, time_limit: float, overhead_per: str = "run",
        conserving: bool = True, chronus: dict | None = None) -> dict:
    """One row: the three schedulers on `trace`; `chronus` extra options for chronus only."""
    settings = LeaseSettings(lease_seconds=lease, resume_overhead_s=OVERHEAD,
                             time_limit=time_limit, resume_overhead_per=overhead_per,
                             work_conserving=conserving)
    config = LeaseSimulationConfig(settings)
    base = config.simulation_config(tuple(f.name for f in dataclasses.fields(ChronusOptions)))
    own = dataclasses.replace(base, policy_options={**base.policy_options, **(chronus or {})})
    row = {}
    for scheduler in ("chronus", "edf", "srtf"):
        result = (simulate(trace, scheduler, own) if scheduler == "chronus"
                  else simulate_leases(trace, scheduler, config))
        row[scheduler] = result.summary["slo_miss_ratio"]
        if scheduler == "chronus":
            jobs = result.jobs
            ever = jobs["slo"] & (jobs["admitted"] | jobs["demoted"])
            row["adm"] = int(ever.sum())
            row["adm miss"] = int((ever & ~jobs["met_deadline"].fillna(False)).sum())
            row["milp s"] = (result.summary["decide_seconds_mean"],
                             result.summary["decide_seconds_max"])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=CSV)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--factors", default="1.3,2,3")
    parser.add_argument("--leases", default="60,300,1200")
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--stride", type=int, default=150)
    parser.add_argument("--burst", type=float, default=4.0)
    parser.add_argument("--gpus", type=int, default=32)
    parser.add_argument("--slo-fraction", type=float, default=0.7)
    parser.add_argument("--time-limit", type=float, default=1.0)
    parser.add_argument("--overhead-per", choices=("run", "lease"), default="run")
    parser.add_argument("--work-conserving", choices=("on", "off"), default="on")
    parser.add_argument("--chronus", action="append", default=[], metavar="NAME=VALUE",
                        help="one more chronus option (VALUE as JSON, else a string: "
                             "repack=true, sigma=1, fill=service, others=plan, tails=false, "
                             "lazy=true, search=true)")
    args = parser.parse_args()
    chronus = {}
    for item in args.chronus:
        name, _, value = item.partition("=")
        try:
            chronus[name] = json.loads(value)
        except json.JSONDecodeError:
            chronus[name] = value
    seeds = [int(s) for s in args.seeds.split(",")]
    factors = [float(f) for f in args.factors.split(",")]
    leases = [float(x) for x in args.leases.split(",")]
    start = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            csv = burst_csv(args.csv, seed, args.jobs, args.stride, args.burst, args.gpus,
                            Path(tmp))
            for factor in factors:
                trace = read_philly_deadlines(csv, args.gpus, deadline_factor=factor,
                                              slo_fraction=args.slo_fraction,
                                              seed=seed).instance
                for lease in leases:
                    row = run(trace, lease, args.time_limit, args.overhead_per,
                              args.work_conserving == "on", chronus)
                    rows.append({"seed": seed, "factor": factor, "lease s": lease, **row})
                    print(_line(rows[-1]), flush=True)
    table = pd.DataFrame(rows)
    table["ok"] = table["chronus"] <= np.minimum(table["edf"], table["srtf"]) + 1e-12
    print()
    print(_markdown(table))
    means = table.groupby("lease s")[["chronus", "edf", "srtf", "adm", "adm miss"]].mean()
    print()
    print("mean over seeds and factors:")
    print(means.round(3).to_string())
    print(f"\n{len(table)} rows in {time.perf_counter() - start:.0f} s")


def _line(row: dict) -> str:
    mean, worst = row["milp s"]
    return (f"seed {row['seed']} factor {row['factor']:g} lease {row['lease s']:g} s: chronus "
            f"{row['chronus']:.3f} edf {row['edf']:.3f} srtf {row['srtf']:.3f} admitted "
            f"{row['adm']} (missed {row['adm miss']}) decision {mean:.3f}/{worst:.2f} s")


def _markdown(table: pd.DataFrame) -> str:
    head = ("| seed | factor | lease (s) | chronus | edf | srtf | admitted | admitted missed "
            "| decision s (mean / max) | chronus <= both |")
    lines = [head, "|" + "---:|" * 9 + ":---:|"]
    for r in table.to_dict("records"):
        mean, worst = r["milp s"]
        lines.append(f"| {r['seed']} | {r['factor']:g} | {r['lease s']:g} | {r['chronus']:.3f} | "
                     f"{r['edf']:.3f} | {r['srtf']:.3f} | {r['adm']} | {r['adm miss']} | "
                     f"{mean:.3f} / {worst:.2f} | {'yes' if r['ok'] else 'NO'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
