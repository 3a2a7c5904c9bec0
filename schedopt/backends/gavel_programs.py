"""Gavel's own convex programs, written as Gavel writes them in cvxpy and solved by ECOS.

Where a policy's LP has many optimal allocations, Gavel's simulator runs the one ECOS returns
for Gavel's expression tree: the same variables, constraints and objective scaling give ECOS
the same problem data, so the same interior point (docs/gavel-adapter.md, "Which optimum").
Each function returns ECOS's point clipped to [0, 1] as Gavel clips it, or None when ECOS
returns no point; callers keep it only when its objective is within a small tolerance of
schedopt's own optimum. Needs cvxpy and the `ecos` package (`ecos_installed`).
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


def ecos_installed() -> bool:
    """Whether cvxpy can call ECOS (the package `ecos`), without importing either."""
    import importlib.util
    return all(importlib.util.find_spec(name) is not None for name in ("cvxpy", "ecos"))


def min_max_finish_time_ratio_ecos(throughput: np.ndarray, scale_factor: np.ndarray,
                                   capacity: np.ndarray, remaining: np.ndarray,
                                   waited: np.ndarray, isolated: np.ndarray) -> np.ndarray | None:
    """Time fractions X (M, J) minimizing max_m (waited_m + remaining_m / (T_m . X_m)) /
    isolated_m, with sum_m s_m X_mj <= capacity_j, sum_j X_mj <= 1, X >= 0, written as one
    expression per job (inv_pos of its steps/s) under cvxpy's elementwise maximum and solved
    by ECOS; None when ECOS returns no point (a point short of ECOS's tolerances is returned,
    as Gavel takes it; the caller checks its ratio).

    throughput: steps/s (M, J); waited, isolated: seconds (M,); remaining: steps (M,). This is
    the program Gavel's speed-blind finish-time fairness hands to ECOS; ECOS's interior point
    inside the optimal face is the allocation Gavel's simulator then runs, and the same
    expression tree gives ECOS the same problem data (docs/gavel-adapter.md)."""
    import cvxpy as cp

    M, J = throughput.shape
    x = cp.Variable((M, J))
    ratios = [(waited[m] + remaining[m] * cp.inv_pos(cp.sum(cp.multiply(throughput[m], x[m]))))
              / isolated[m] for m in range(M)]
    objective = cp.Minimize(ratios[0] if M == 1 else cp.maximum(*ratios))
    constraints = [x >= 0,
                   cp.sum(cp.multiply(np.tile(scale_factor[:, None], (1, J)), x), axis=0)
                   <= capacity,
                   cp.sum(x, axis=1) <= 1]
    return _solve_ecos(cp, cp.Problem(objective, constraints), x)


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


def glpk_mi_installed() -> bool:
    """Whether cvxpy can call GLPK_MI (the package `cvxopt`), without importing either."""
    import importlib.util
    return all(importlib.util.find_spec(name) is not None for name in ("cvxpy", "cvxopt"))


def water_filling_ecos_glpk(throughput: np.ndarray, scale_factor: np.ndarray,
                            weight: np.ndarray, capacity: np.ndarray) -> np.ndarray | None:
    """Time fractions X (M, J) of Gavel's water filling, iterated as Gavel iterates it: an LP
    (ECOS) raises the lowest weighted level s_m / w_m (thr_m(X) / thr^prop_m - so_far_m) of
    the jobs not yet fixed, every level kept at least where it was; a MILP (GLPK_MI) then
    finds the jobs whose level can still rise (by a relative 1e-4 and an absolute 1e-5), and
    the others are fixed at their level; until no job is fixed or all are. X is the last
    LP's point; None when the first LP returns none.

    throughput: steps/s (M, J) (all 1 for Gavel's speed-blind policy, every type included);
    thr^prop_m: job m's steps/s under Gavel's proportional share (c_j / M of every type, all
    rows scaled by the largest row sum); scale_factor: GPUs (M,); weight: priority (M,),
    0 leaves a job out; capacity: GPUs (J,)."""
    import cvxpy as cp

    M, J = throughput.shape
    share = np.tile(np.asarray(capacity, float) / M, (M, 1))
    share = share / share.sum(axis=1).max()
    proportional = (throughput * share).sum(axis=1)
    S = np.repeat(np.asarray(scale_factor, float)[:, None], J, axis=1)
    big = np.max(throughput * (1.0 / proportional)[:, None] * S)

    def base(x):
        return [x >= 0, cp.sum(cp.multiply(S, x), axis=0) <= list(capacity),
                cp.sum(x, axis=1) <= 1]

    def level(x):
        return cp.multiply(cp.sum(cp.multiply(throughput, x), axis=1), 1.0 / proportional)

    x, so_far, lower = cp.Variable((M, J)), cp.Parameter(M), cp.Parameter(M)
    factor, offset = cp.Parameter(M), cp.Parameter(M)
    lp = cp.Problem(cp.Maximize(cp.min(cp.multiply(level(x) - so_far, factor) + offset)),
                    base(x) + [level(x) >= lower])
    y, z = cp.Variable((M, J)), cp.Variable(M, boolean=True)
    so_far_mi, lower_mi, fixed = cp.Parameter(M), cp.Parameter(M), cp.Parameter(M)
    slack, epsilon = 1.0001, 1e-5
    milp = cp.Problem(cp.Maximize(cp.sum(z)), base(y) + [
        big * z >= level(y) - so_far_mi * slack + epsilon,
        big * (1 - z) >= so_far_mi * slack - level(y),
        level(y) >= lower_mi, cp.multiply(fixed, z) == 0])

    inverse = np.array([1.0 / w if w > 0 else 0.0 for w in weight])
    final: dict[int, float] = {}
    levels, answer = np.zeros(M), None
    while True:
        free = np.array([m not in final for m in range(M)])
        rising = free & (inverse > 0)
        factor.value = np.where(rising, inverse * S[:, 0], 0.0)
        offset.value = np.where(rising, 0.0, big)
        so_far.value = levels
        floor = np.array([final.get(m, levels[m]) for m in range(M)])
        lower.value = floor
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            try:
                lp.solve(solver="ECOS")
                found = x.value
            except cp.error.SolverError:
                found = None
            if found is None:
                break
            answer = found.copy()
            levels = levels + np.where(rising, 1.0 / np.where(rising, factor.value, 1.0), 0.0) \
                * lp.value
            so_far_mi.value = levels
            lower_mi.value = np.array([final.get(m, levels[m]) for m in range(M)])
            fixed.value = np.where(free & (inverse > 0), 0.0, 1.0)
            try:
                milp.solve(solver="GLPK_MI")
                up = z.value if milp.status == "optimal" else None
            except cp.error.SolverError:
                up = None
        up = np.zeros(M) if up is None else up
        before = len(final)
        for m in range(M):
            if free[m] and not up[m] and inverse[m] > 0:
                final[m] = levels[m]
        if len(final) == before or len(final) == M:
            break
    return None if answer is None else np.clip(answer, 0.0, 1.0)
