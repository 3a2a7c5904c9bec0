"""Gavel's own trace simulator, run once with Gavel's policies and once with schedopt's.

    python benchmarks/gavel_dropin.py GAVEL_DIR TRACE [--policy NAME ...] [--timeout S]

GAVEL_DIR (or the GAVEL_DIR environment variable) is a checkout of Gavel (its `scheduler/`
folder, or the folder holding it). For each policy the script starts two processes of Gavel's
simulator (as its `scripts/drivers/simulate_scheduler_with_trace.py` does): one as is, one with
Gavel's `utils.get_policy` replaced by `schedopt.gavel.get_policy`, the swap a Gavel user makes.
It prints average JCT (s), makespan (s) and wall time (s) side by side, with our/Gavel ratios.
Defaults are Gavel's physical-cluster set-up: 8 V100 + 16 P100 + 24 K80 GPUs, 4/4/8 per server,
360 s rounds, seed 0, its simulation_throughputs.json (override with --throughputs).

Gavel's side needs cvxpy's ECOS (package ecos) and, for its water filling, GLPK_MI (package
cvxopt): without GLPK_MI, Gavel's water filling catches the solver error of its bottleneck
search and returns the answer of its first LP, its max-min fairness; the script says so.
With the same packages importable, schedopt's side solves Gavel's own programs through ECOS
where their optima are many (docs/gavel-adapter.md, "Gavel's programs through ECOS").
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path

# Every name of Gavel's utils.get_policy that its simulator runs on the physical-cluster traces,
# the most used first. Not listed: allox (Gavel's asserts one-GPU jobs; the traces have jobs of
# 2 and 4 GPUs) and the two cost policies with SLOs (Gavel's scheduler reads SLOs from its
# state only when the trace gives some: KeyError 'SLOs' on these traces).
POLICIES = ["max_min_fairness", "max_min_fairness_perf", "max_min_fairness_packed",
            "finish_time_fairness", "finish_time_fairness_perf", "finish_time_fairness_packed",
            "min_total_duration", "min_total_duration_perf", "min_total_duration_packed",
            "max_sum_throughput_perf", "max_sum_throughput_normalized_by_cost_perf",
            "max_min_fairness_water_filling", "max_min_fairness_water_filling_perf",
            "max_min_fairness_water_filling_packed", "fifo", "fifo_perf", "fifo_packed",
            "gandiva", "isolated"]


class _StubModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Stands in for Gavel's gRPC stubs (`*_pb2`, `*_pb2_grpc`), which its Makefile generates
    with grpc_tools and which its simulator never calls: any attribute is a placeholder."""

    def find_spec(self, name, path=None, target=None):
        if name.endswith(("_pb2", "_pb2_grpc")) and importlib.machinery.PathFinder.find_spec(
                name, path) is None:
            return importlib.machinery.ModuleSpec(name, self)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__getattr__ = lambda attr: type(attr, (), {"__init__": lambda self, *a, **k: None})
        return module

    def exec_module(self, module):
        pass


def simulate(scheduler_dir: str, trace: str, policy: str, swap: bool, throughputs: str,
             cluster: str, per_server: str, seed: int, backend: str | None = None,
             center_slack: float | None = None) -> dict:
    """One simulation in this process (the worker): {'jct': s, 'makespan': s, 'wall': s}.
    center_slack: schedopt.gavel.CENTER_SLACK for the swapped run (None: its default)."""
    sys.path.insert(0, scheduler_dir)  # Gavel's modules import each other by bare name
    os.chdir(scheduler_dir)
    sys.meta_path.append(_StubModules())
    import scheduler
    import utils
    if swap:
        from schedopt import gavel
        if center_slack is not None:
            gavel.CENTER_SLACK = center_slack
        utils.get_policy = (gavel.get_policy if backend is None else
                            lambda name, **_: gavel.get_policy(name, solver=backend))
    jobs, arrival_times = utils.parse_trace(trace)
    start = time.perf_counter()
    sched = scheduler.Scheduler(utils.get_policy(policy, solver="ECOS", seed=seed),
                                throughputs_file=throughputs, simulate=True, seed=seed,
                                time_per_iteration=360)
    types = ("v100", "p100", "k80")
    sched.simulate(dict(zip(types, map(int, cluster.split(":")))), arrival_times, jobs,
                   num_gpus_per_server=dict(zip(types, map(int, per_server.split(":")))))
    jct = sched.get_average_jct(verbose=False)
    makespan = sched.get_current_timestamp()
    wall = time.perf_counter() - start
    sched.shutdown()
    return {"jct": float(jct), "makespan": float(makespan), "wall": wall}


def run_worker(args, policy: str, swap: bool) -> dict | str:
    """Run `simulate` in a fresh process bounded by args.timeout; a dict or why it failed."""
    command = [sys.executable, os.path.abspath(__file__), "--worker", args.gavel_dir, args.trace,
               "--policy", policy, "--throughputs", args.throughputs, "--cluster", args.cluster,
               "--per-server", args.per_server, "--seed", str(args.seed)]
    if swap:
        command += ["--swap"] + (["--backend", args.backend] if args.backend else [])
        if args.center_slack is not None:
            command += ["--center-slack", repr(args.center_slack)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return f"timeout {args.timeout:.0f} s"
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return (done.stderr.strip().splitlines() or ["no result"])[-1][:100]


def scheduler_dir(path: str) -> str:
    folder = Path(path).resolve()
    return str(folder / "scheduler" if (folder / "scheduler" / "scheduler.py").exists() else folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gavel_dir", nargs="?", default=os.environ.get("GAVEL_DIR"))
    parser.add_argument("trace")
    parser.add_argument("--policy", action="append", help="Gavel policy name (repeatable)")
    parser.add_argument("--throughputs", default=None,
                        help="throughputs JSON (default: the checkout's simulation_throughputs.json)")
    parser.add_argument("--cluster", default="8:16:24", help="#v100:#p100:#k80 GPUs")
    parser.add_argument("--per-server", default="4:4:8", help="GPUs per server, v100:p100:k80")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per simulation")
    parser.add_argument("--backend", default=None,
                        help="schedopt backend for its policies (default: each policy's own)")
    parser.add_argument("--center-slack", type=float, default=None,
                        help="relative slack on the optimum inside which schedopt's speed-blind "
                             "finish-time fairness takes the analytic center (and max-min "
                             "fairness and water filling, where their GPU-count split does not "
                             "fit) (default: schedopt.gavel.CENTER_SLACK, 1e-6)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--swap", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.gavel_dir:
        parser.error("give the path to Gavel's checkout (argument or GAVEL_DIR)")
    args.gavel_dir = scheduler_dir(args.gavel_dir)
    args.trace = str(Path(args.trace).resolve())
    args.throughputs = str(Path(args.throughputs or
                                Path(args.gavel_dir) / "simulation_throughputs.json").resolve())
    if args.worker:
        with open(os.devnull, "w") as quiet:  # Gavel prints every round
            stdout, sys.stdout = sys.stdout, quiet
            result = simulate(args.gavel_dir, args.trace, args.policy[0], args.swap,
                              args.throughputs, args.cluster, args.per_server, args.seed,
                              args.backend, args.center_slack)
            sys.stdout = stdout
        print("RESULT " + json.dumps(result))
        return
    print(f"trace {Path(args.trace).name}, cluster {args.cluster} (v100:p100:k80), seed {args.seed}")
    print("| policy | Gavel JCT (s) | schedopt JCT (s) | ratio | Gavel makespan (s) | "
          "schedopt makespan (s) | ratio | Gavel wall (s) | schedopt wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    import cvxpy

    if (any("water_filling" in policy for policy in args.policy or POLICIES)
            and "GLPK_MI" not in cvxpy.installed_solvers()):
        print("note: cvxpy has no GLPK_MI (package cvxopt), so Gavel's water filling stops "
              "after its first LP (its max-min fairness)", file=sys.stderr)
    for policy in args.policy or POLICIES:
        theirs, ours = run_worker(args, policy, False), run_worker(args, policy, True)
        if isinstance(theirs, str) or isinstance(ours, str):
            print(f"| {policy} | Gavel: {theirs} | schedopt: {ours} |", flush=True)
            continue
        print(f"| {policy} | {theirs['jct']:.0f} | {ours['jct']:.0f} | "
              f"{ours['jct'] / theirs['jct']:.4f} | {theirs['makespan']:.0f} | "
              f"{ours['makespan']:.0f} | {ours['makespan'] / theirs['makespan']:.4f} | "
              f"{theirs['wall']:.1f} | {ours['wall']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
