"""Our max_min_fairness vs the same LP written plainly in cvxpy, as Gavel's reference code does.

Run: python benchmarks/max_min_vs_cvxpy.py [--jobs 1000 10000] [--repeats 3]
Prints wall seconds (model building included on both sides), objectives and the speed ratio
best-cvxpy / ours, all measured in this one process.
"""

from __future__ import annotations

import argparse

import cvxpy as cp
import numpy as np

from common import best_of, random_problem
from schedopt.api import solve


def gavel_style_cvxpy(problem, solver: str) -> float:
    """Gavel's max_min_fairness_perf LP as its code writes it (cp.min of per-job sums)."""
    T, s, w, c = problem.throughput, problem.scale_factor, problem.weight, problem.capacity
    M, J = T.shape
    equal_share = T @ (c / c.sum())
    coeff = T * (s / (w * equal_share))[:, None] * problem.runnable
    x = cp.Variable((M, J))
    constraints = [x >= 0, cp.sum(x, axis=1) <= 1,
                   cp.sum(cp.multiply(np.tile(s[:, None], (1, J)), x), axis=0) <= c]
    if (~problem.runnable).any():
        constraints.append(x[~problem.runnable] == 0)
    objective = cp.Maximize(cp.min(cp.sum(cp.multiply(coeff, x), axis=1)))
    return cp.Problem(objective, constraints).solve(solver=solver)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    references = [s for s in ("CLARABEL", "ECOS", "SCS", "HIGHS") if s in cp.installed_solvers()]
    print(f"{'jobs':>6}  {'method':<22} {'seconds':>8}  {'objective':>14}  {'rel. diff':>9}")
    for M in args.jobs:
        problem = random_problem(M)
        ours_s, ours = best_of(args.repeats, lambda: solve(problem, "max_min_fairness"))
        print(f"{M:>6}  {'schedopt (' + ours.solver + ')':<22} {ours_s:>8.3f}  {ours.objective:>14.9f}")
        best_ref = float("inf")
        for solver in references:
            if solver in ("HIGHS", "SCS") and M > 2000:
                continue  # minutes per solve at this size (simplex / first-order); see README
            ref_s, ref = best_of(args.repeats, lambda: gavel_style_cvxpy(problem, solver))
            best_ref = min(best_ref, ref_s)
            diff = abs(ref - ours.objective) / abs(ref)
            print(f"{M:>6}  {'cvxpy + ' + solver:<22} {ref_s:>8.3f}  {ref:>14.9f}  {diff:>9.1e}")
        print(f"{M:>6}  ratio best cvxpy / schedopt = {best_ref / ours_s:.2f}x\n")


if __name__ == "__main__":
    main()
