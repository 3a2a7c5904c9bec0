"""Gavel's own convex programs, written as Gavel writes them in cvxpy and solved by ECOS.

Where a policy's LP has many optimal allocations, Gavel's simulator runs the one ECOS returns
for Gavel's expression tree: the same variables, constraints and objective scaling give ECOS
the same problem data, so the same interior point (docs/gavel-adapter.md, "Which optimum").
Each function returns ECOS's point clipped to [0, 1] as Gavel clips it, or None when ECOS
returns no point; callers keep it only when its objective is within a small tolerance of
schedopt's own optimum. Needs cvxpy and the `ecos` package (`ecos_installed` in cvxpy.py).
"""

from __future__ import annotations

import warnings

import numpy as np


def _solve_ecos(cp, problem, x) -> np.ndarray | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # cvxpy's "may be inaccurate"
            problem.solve(solver="ECOS")
    except cp.error.SolverError:
        return None
    if problem.status not in ("optimal", "optimal_inaccurate") or x.value is None:
        return None
    return np.clip(x.value, 0.0, 1.0)


def max_throughput_sum_ecos(value: np.ndarray, scale_factor: np.ndarray,
                            capacity: np.ndarray) -> np.ndarray | None:
    """Time fractions X (M, J) maximizing sum_mj value[m,j] X[m,j] with X >= 0,
    sum_m s_m X[m,j] <= capacity_j, sum_j X[m,j] <= 1, by ECOS.

    value: steps/s (Gavel's max_sum_throughput_perf) or steps/s per $/h
    (max_sum_throughput_normalized_by_cost_perf), rows in Gavel's order (sorted job ids);
    scale_factor: GPUs (M,); capacity: GPUs (J,)."""
    import cvxpy as cp

    x = cp.Variable(value.shape)
    S = np.repeat(np.asarray(scale_factor, float)[:, None], value.shape[1], axis=1)
    objective = cp.Maximize(cp.sum(cp.sum(cp.multiply(value, x), axis=1)))
    constraints = [x >= 0, cp.sum(cp.multiply(S, x), axis=0) <= list(capacity),
                   cp.sum(x, axis=1) <= 1]
    return _solve_ecos(cp, cp.Problem(objective, constraints), x)


def min_max_finish_time_ratio_packed_ecos(rates: np.ndarray, combinations: list,
                                          scale_factor: np.ndarray, capacity: np.ndarray,
                                          remaining: np.ndarray, waited: np.ndarray,
                                          isolated: np.ndarray) -> np.ndarray | None:
    """Time fractions X (K, J) of K job combinations (single jobs and pairs, Gavel's sorted
    keys) minimizing max_m (waited_m + remaining_m / (sum_k rates[m,k] . X[k])) / isolated_m,
    each job m's steps/s summed over the combinations holding it, with X >= 0,
    sum_k s_k X[k,j] <= capacity_j, each job's time over its combinations <= 1, and X[k] = 0
    where s_k = 0 (a pair of unequal scale factors), by ECOS.

    rates: (M, K, J) steps/s of job m in combination k on type j divided by its priority
    weight (Gavel's float32 table); combinations: for each job m, the indices k of the
    combinations holding it (its own first); scale_factor: GPUs (K,); capacity: GPUs (J,);
    remaining: steps (M,); waited: s (M,); isolated: expected isolated finish time, s (M,)."""
    import cvxpy as cp

    K, J = rates.shape[1:]
    x = cp.Variable((K, J))
    ratios = []
    for m, rows in enumerate(combinations):
        steps = cp.sum(cp.multiply(rates[m][rows], x[rows]))
        ratios.append((waited[m] + remaining[m] * cp.inv_pos(steps)) / isolated[m])
    objective = cp.Minimize(ratios[0] if len(ratios) == 1 else cp.maximum(*ratios))
    S = np.repeat(np.asarray(scale_factor, float)[:, None], J, axis=1)
    constraints = [x >= 0, cp.sum(cp.multiply(S, x), axis=0) <= list(capacity),
                   cp.vstack([cp.sum(x[rows]) for rows in combinations]) <= 1]
    constraints += [x[k, j] == 0 for k, j in zip(*np.nonzero(S == 0))]
    return _solve_ecos(cp, cp.Problem(objective, constraints), x)
