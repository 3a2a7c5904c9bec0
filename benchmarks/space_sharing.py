"""Space-sharing max-min fairness (max_min_fairness_packed) at Gavel's scale, and against the
plain LP with every pair column.

Run: python benchmarks/space_sharing.py [--jobs 2048] [--gpus 1536] [--small 256]
                                        [--measured PATH] [--no-cvxpy] [--skip-large]

(a) `--jobs` single-GPU jobs, each of one of 26 job types, on `--gpus` GPUs split evenly over
    v100/p100/k80, with the full co-location table (every pair of types on every GPU type).
    Each configuration runs in a fresh process: wall seconds of `schedopt.solve` on the
    Instance (pair table and candidates included), the process' peak resident memory, columns
    generated and the proven gap. Rows: seeded from the class LP (the default), from no pair
    at all, and with every job's solo row perturbed by +-10% (no two jobs interchangeable, so
    the seed comes from coarse classes: same type, rows averaged).
(b) `--small` jobs: column generation vs one HiGHS LP holding every pair column (pruned, and
    unpruned as Gavel's LP has them) and, unless --no-cvxpy, the unpruned LP written in cvxpy as
    Gavel's `max_min_fairness_packed` writes it; all in this one process, best of 3 for ours.

The table is synthetic (seed 0): solo steps/s per type 0.5-2 x a GPU speed (1 / 2.2 / 3.5 for
k80 / p100 / v100) x 0.7-1.3, and each job of a pair makes 0.3-0.9 of its solo rate (drawn per
job in the pair and GPU type). `--measured simulation_throughputs.json` uses Gavel's measured
table instead (its 26 single-GPU job types; ../shared/trace-samples/gavel/ has one).
"""

from __future__ import annotations

import argparse
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import cvxpy as cp
import numpy as np

from common import best_of
from schedopt.api import solve
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.packed.master import Candidates, PairTable
from schedopt.instance import parse_instance

GPUS = ("v100", "p100", "k80")


def synthetic_performance(job_types: int = 26, seed: int = 0) -> dict:
    """The `performance` section: solo throughputs and every co-located pair (see docstring)."""
    rng = np.random.default_rng(seed)
    speed = np.array([3.5, 2.2, 1.0])
    solo = rng.uniform(0.5, 2.0, (job_types, 1)) * speed * rng.uniform(0.7, 1.3, (job_types, 3))
    labels = [f"model-{k:02d}" for k in range(job_types)]
    fraction = rng.uniform(0.3, 0.9, (3, job_types, job_types))
    pairs = [{"types": [labels[a], labels[b]], "gpu_type": g,
              "throughput": [fraction[j, a, b] * solo[a, j], fraction[j, b, a] * solo[b, j]]}
             for j, g in enumerate(GPUS) for a in range(job_types) for b in range(a, job_types)]
    for p in pairs:  # a same-type pair: both jobs at the same rate
        if p["types"][0] == p["types"][1]:
            p["throughput"][1] = p["throughput"][0]
    return {"throughput": {name: dict(zip(GPUS, row.tolist())) for name, row in zip(labels, solo)},
            "colocated": pairs}


def measured_performance(path: str) -> dict:
    """Gavel's measured table: its single-GPU job types and their co-located pairs."""
    from schedopt.traces.performance import (gavel_performance, label, read_gavel_throughputs,
                                             single_gpu_models)

    table = read_gavel_throughputs(path)
    labels = [label(model, 1) for model in single_gpu_models(table, GPUS)]
    return gavel_performance(table, list(GPUS), labels=labels)


def instance(jobs: int, gpus: int, measured: str | None = None, noise: float = 0.0,
             seed: int = 1):
    """`jobs` jobs of random types; with `noise`, each job's own solo row is its type's times
    1 +- noise (so no two jobs are interchangeable)."""
    performance = measured_performance(measured) if measured else synthetic_performance()
    types = sorted(performance["throughput"])
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, len(types), jobs)
    job_rows = [{"id": f"j{m:05d}", "type": types[k]} for m, k in enumerate(drawn.tolist())]
    if noise:
        factor = rng.uniform(1 - noise, 1 + noise, (jobs, len(GPUS)))
        for row, f in zip(job_rows, factor.tolist()):
            base = performance["throughput"][row["type"]]
            row["throughput"] = {g: base[g] * x for g, x in zip(GPUS, f)}
    return parse_instance({
        "format": "schedopt-instance/1",
        "cluster": {"gpu_types": {g: {"count": gpus // 3, "gpus_per_node": 4} for g in GPUS}},
        "jobs": job_rows, "performance": performance})


def run_case(jobs: int, gpus: int, measured: str | None, noise: float, options: dict) -> dict:
    """One solve in this (fresh) process: seconds, result details, peak memory."""
    inst = instance(jobs, gpus, measured, noise)
    start = time.perf_counter()
    result = solve(inst, "max_min_fairness_packed", **options)
    seconds = time.perf_counter() - start
    d = result.details
    return {"seconds": seconds, "status": result.status.value, "objective": result.objective,
            "gap": d.get("gap"), "iterations": d.get("iterations", 1),
            "columns": d["columns_generated"], "seed": d.get("seed_columns", 0),
            "candidates": d["candidate_pairs"], "pruned": d["pruned_pairs"],
            "lp_seconds": d.get("lp_seconds"), "pricing_seconds": d.get("pricing_seconds"),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def in_fresh_process(*args) -> dict:
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        return pool.submit(run_case, *args).result()


def gavel_style_cvxpy(problem: ThroughputProblem, table: PairTable) -> float:
    """The unpruned LP as Gavel's max_min_fairness_packed writes it: one row of x per single
    job and per pair of jobs (every GPU type), cp.minimum of per-job sums; our normalizer."""
    M, J = problem.num_jobs, problem.num_types
    m1, m2 = np.triu_indices(M, k=1)
    rates = np.stack([table.pair_rates(j) for j in range(J)], axis=2)  # (M, M, J)
    ok = np.isfinite(rates[m1, m2]) & np.isfinite(rates[m2, m1])
    keep = ok.any(axis=1)
    m1, m2 = m1[keep], m2[keep]
    rate1, rate2 = np.where(ok[keep], rates[m1, m2], 0), np.where(ok[keep], rates[m2, m1], 0)
    g = problem.scale_factor / (problem.weight * problem.equal_share_throughput)
    x = cp.Variable((M + m1.size, J))
    terms = []
    for m in range(M):  # Gavel's loop over single jobs
        first, second = np.flatnonzero(m1 == m), np.flatnonzero(m2 == m)
        rows = np.concatenate([[m], M + first, M + second])
        coeff = np.vstack([problem.throughput[m], rate1[first], rate2[second]]) * g[m]
        terms.append(cp.sum(cp.multiply(coeff, x[rows])))
    per_job = [cp.sum(x[np.concatenate([[m], M + np.flatnonzero(m1 == m),
                                        M + np.flatnonzero(m2 == m)])]) for m in range(M)]
    constraints = [x >= 0, cp.sum(x, axis=0) <= problem.capacity, cp.hstack(per_job) <= 1]
    return cp.Problem(cp.Maximize(cp.minimum(*terms)), constraints).solve(solver="HIGHS")


def large(args) -> None:
    print(f"(a) {args.jobs} jobs, {args.gpus} GPUs, "
          f"{'Gavel measured' if args.measured else 'synthetic'} co-location table")
    print(f"{'method':<24} {'seconds':>8} {'peak MB':>8} {'rounds':>6} {'columns':>8} {'seed':>6} "
          f"{'candidates':>10} {'pruned':>9} {'gap':>8}  objective")
    for name, noise, options in (("columns (class seed)", 0.0, {}),
                                 ("columns (no seed)", 0.0, {"seed": False}),
                                 ("rows +-10%, coarse seed", 0.1, {})):
        r = in_fresh_process(args.jobs, args.gpus, args.measured, noise, options)
        print(f"{name:<24} {r['seconds']:>8.2f} {r['peak_mb']:>8.0f} {r['iterations']:>6} "
              f"{r['columns']:>8} {r['seed']:>6} {r['candidates']:>10} {r['pruned']:>9} "
              f"{r['gap']:>8.1e}  {r['objective']:.10f} ({r['status']})")


def small(args) -> None:
    inst = instance(args.small, args.small * 3 // 4, args.measured)
    problem, table = ThroughputProblem.from_instance(inst), PairTable.from_instance(inst)
    cand = Candidates.build(problem, table, prune=False)
    print(f"\n(b) {args.small} jobs, {args.small * 3 // 4} GPUs: {cand.pairs} pair columns "
          f"({cand.pairs + args.small * 3} columns unpruned)")
    print(f"{'method':<34} {'seconds':>8}  {'objective':>16}  {'difference':>10}")
    ours_s, ours = best_of(3, lambda: solve(inst, "max_min_fairness_packed"))
    rows = [("columns (class seed)", ours_s, ours.objective)]
    noseed_s, noseed = best_of(3, lambda: solve(inst, "max_min_fairness_packed", seed=False))
    rows.append(("columns (no seed)", noseed_s, noseed.objective))
    for name, prune in (("dense HiGHS LP, pruned", True), ("dense HiGHS LP, every pair", False)):
        secs, dense = best_of(1, lambda: solve(inst, "max_min_fairness_packed", method="dense",
                                               prune=prune))
        rows.append((name, secs, dense.objective))
    if not args.no_cvxpy:
        secs, value = best_of(1, lambda: gavel_style_cvxpy(problem, table))
        rows.append(("cvxpy + HIGHS, Gavel's form", secs, value))
    for name, secs, value in rows:
        print(f"{name:<34} {secs:>8.3f}  {value:>16.12f}  {abs(value - ours.objective):>10.1e}")
    print(f"ratio every-pair HiGHS LP / column generation: {rows[3][1] / ours_s:.1f}x "
          f"(no seed: {rows[3][1] / noseed_s:.1f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2048)
    parser.add_argument("--gpus", type=int, default=1536)
    parser.add_argument("--small", type=int, default=256)
    parser.add_argument("--measured", default=None, help="Gavel's simulation_throughputs.json")
    parser.add_argument("--no-cvxpy", action="store_true")
    parser.add_argument("--skip-large", action="store_true")
    args = parser.parse_args()
    if not args.skip_large:
        large(args)
    small(args)


if __name__ == "__main__":
    main()
