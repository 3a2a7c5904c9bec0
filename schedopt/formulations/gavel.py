"""Gavel's heterogeneity-aware throughput-matrix LPs (formulations.md section 1).

Every policy shares Gavel's base constraints on the allocation X (M jobs x J GPU types):
    X >= 0,   sum_j X[m,j] <= 1,   sum_m s_m X[m,j] <= c_j,
plus X[m,j] = 0 where job m cannot run on type j (zero throughput, or s_m > c_j: a job never
gets a fraction of a type that has fewer GPUs than it needs; Gavel does not impose this).
thr_m(X) = sum_j T[m,j] X[m,j] is job m's effective throughput in steps/s.

    max_min_fairness     max  min_m  s_m thr_m(X) / (w_m thr^eq_m)         thr^eq: equal share
    min_makespan         min  max_m  R_m / thr_m(X)     as one LP: max z s.t. thr_m(X)/R_m >= z
    finish_time_fairness min  max_m  rho_m(X)           bisection on rho over LP feasibility
    max_total_throughput max  sum_m thr_m(X)                                 (steps/s)
    min_cost             max  sum_m sum_j T[m,j] X[m,j] / cost_j   s.t. optional SLO rows
                                                        thr_m(X) >= R_m / (time to deadline)
The *agnostic* variants solve the same LP as if every GPU type were alike: max-min with every
runnable T[m,j] = 1 (Gavel's LAS), makespan/FTF with every runnable T[m,j] = the job's best
throughput (Gavel hard-codes its V100 column there).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp

from schedopt.backends import SolveOptions, Status
from schedopt.backends.base import LinearProgram
from schedopt.errors import PolicyError
from schedopt.formulations.blocks import (Outcome, allocation_bounds, base_rows, column,
                                          effective_throughput, per_job_rows, scale_rows,
                                          solve_allocation_lp)
from schedopt.formulations.inputs import ThroughputProblem


def _empty(problem: ThroughputProblem, solver: str, objective: float | None = None) -> Outcome:
    return Outcome(np.zeros((problem.num_jobs, problem.num_types)), Status.OPTIMAL,
                   objective, objective, 0.0, solver)


def _lp_with_aux(problem: ThroughputProblem, rows: sp.csr_matrix, row_lower: np.ndarray,
                 row_upper: np.ndarray, aux_cost: np.ndarray, aux_upper: np.ndarray,
                 x_cost: np.ndarray | None = None, x_upper: np.ndarray | None = None,
                 maximize: bool = True) -> LinearProgram:
    """LP over [X, aux] with the base constraints plus `rows` (already built on M*J+k columns)."""
    k = aux_cost.shape[0]
    base, base_lo, base_hi = base_rows(problem, extra_cols=k)
    col_lo, col_hi = allocation_bounds(problem)
    if x_upper is not None:
        col_hi = np.minimum(col_hi, x_upper)
    MJ = problem.num_jobs * problem.num_types
    return LinearProgram(
        c=np.concatenate([np.zeros(MJ) if x_cost is None else x_cost, aux_cost]),
        A=sp.vstack([base, rows], format="csr"),
        row_lower=np.concatenate([base_lo, row_lower]),
        row_upper=np.concatenate([base_hi, row_upper]),
        col_lower=np.concatenate([col_lo, np.zeros(k)]),
        col_upper=np.concatenate([col_hi, aux_upper]),
        maximize=maximize,
    )


def _outcome(result, X, objective: float | None, bound: float | None, solver: str,
             **details) -> Outcome:
    status = result.status
    if X is None:
        objective = bound = None
    return Outcome(X, status, objective, bound, result.solve_seconds, solver, details)


# ---------------------------------------------------------------- max-min fairness

def normalized_throughput(problem: ThroughputProblem, agnostic: bool = False) -> np.ndarray:
    """(M, J) coefficients a with a[m] @ X[m] = job m's max-min objective term.

    Heterogeneity-aware: s_m T[m,j] / (w_m thr^eq_m). Agnostic: s_m / w_m on runnable types.
    """
    s_over_w = (problem.scale_factor / problem.weight)[:, None]
    if agnostic:
        return s_over_w * problem.runnable
    return s_over_w * problem.throughput / problem.equal_share_throughput[:, None]


def max_min_fairness(problem: ThroughputProblem, solver: str = "highs",
                     options: SolveOptions = SolveOptions(), agnostic: bool = False) -> Outcome:
    """Maximize min_m a[m] @ X[m] (see `normalized_throughput`); objective is that minimum."""
    if problem.num_jobs == 0:
        return _empty(problem, solver)
    problem.require_runnable()
    a = normalized_throughput(problem, agnostic) * problem.runnable
    M, J = a.shape
    rows = per_job_rows(a, 1) - column(np.ones(M), M * J, M * J + 1)
    rows, lo, hi = scale_rows(rows, np.zeros(M), np.full(M, np.inf))
    lp = _lp_with_aux(problem, rows, lo, hi, aux_cost=np.ones(1), aux_upper=np.full(1, np.inf))
    result, X = solve_allocation_lp(problem, lp, solver, options)
    objective = float(np.min(np.einsum("mj,mj->m", a, X))) if X is not None else None
    return _outcome(result, X, objective, result.bound, solver)


# ---------------------------------------------------------------- makespan

def _uniform_throughput(problem: ThroughputProblem) -> ThroughputProblem:
    """The agnostic view: every runnable type runs job m at its best throughput."""
    best = np.max(problem.throughput * problem.runnable, axis=1, keepdims=True)
    return dataclasses.replace(problem, throughput=best * problem.runnable)


def makespan_of(problem: ThroughputProblem, X: np.ndarray) -> float:
    """Seconds until the last job with work left finishes at its effective throughput."""
    active = problem.remaining_steps > 0
    if not active.any():
        return 0.0
    thr = effective_throughput(problem, X)[active]
    with np.errstate(divide="ignore"):
        return float(np.max(np.where(thr > 0, problem.remaining_steps[active] / np.maximum(thr, 1e-300), np.inf)))


def min_makespan(problem: ThroughputProblem, solver: str = "highs",
                 options: SolveOptions = SolveOptions(), agnostic: bool = False) -> Outcome:
    """Minimize the makespan max_m R_m / thr_m(X) (seconds) exactly, as one LP.

    With d_m = R_m / Tbest_m (job m's fastest possible time) and D = max d_m, the LP is
    max z  s.t.  sum_j (T[m,j] / Tbest_m) X[m,j] >= (d_m / D) z, and makespan = D / z.
    """
    problem.require_remaining_steps("min_makespan")
    if agnostic:
        problem = _uniform_throughput(problem)
    active = problem.remaining_steps > 0
    if not active.any():
        return _empty(problem, solver, 0.0)
    problem.require_runnable()
    T = problem.throughput * problem.runnable
    best = T.max(axis=1)
    M, J = T.shape
    d = np.where(active, problem.remaining_steps / best, 0.0)
    D = d.max()
    rows = per_job_rows(T / best[:, None], 1) - column(d / D, M * J, M * J + 1)
    keep = np.flatnonzero(active)
    lp = _lp_with_aux(problem, rows[keep], np.zeros(keep.size), np.full(keep.size, np.inf),
                      aux_cost=np.ones(1), aux_upper=np.full(1, np.inf),
                      x_upper=np.repeat(active.astype(float), J))
    result, X = solve_allocation_lp(problem, lp, solver, options)
    if X is None:
        return _outcome(result, None, None, None, solver)
    bound = D / result.bound if result.bound and result.bound > 0 else None
    return _outcome(result, X, makespan_of(problem, X), bound, solver)


# ---------------------------------------------------------------- finish-time fairness

def isolated_allocation(problem: ThroughputProblem) -> np.ndarray:
    """Gavel's isolated share: X[m,j] = (c_j / M) / s_m, each row scaled down to sum <= 1."""
    X = (problem.capacity[None, :] / problem.num_jobs) / problem.scale_factor[:, None]
    return X / np.maximum(X.sum(axis=1, keepdims=True), 1.0)


def finish_time_ratios(problem: ThroughputProblem, X: np.ndarray) -> np.ndarray:
    """(M,) Themis' rho_m(X) = (t_m + R_m / thr_m(X)) / (t^iso_m + R_m / thr^iso_m)."""
    iso = effective_throughput(problem, isolated_allocation(problem))
    thr = effective_throughput(problem, X)
    R = problem.remaining_steps
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = problem.time_since_arrival + np.where(R > 0, R / thr, 0.0)
        return expected / (problem.isolated_time + R / iso)


def _ftf_feasible(problem, rho, active, solver, options):
    """Can every active job reach finish-time ratio <= rho? Returns (feasible, X, result)."""
    T = problem.throughput * problem.runnable
    best = T.max(axis=1)
    iso = effective_throughput(problem, isolated_allocation(problem))
    R = problem.remaining_steps
    denominator = rho * (problem.isolated_time + R / iso) - problem.time_since_arrival
    if np.any(denominator[active] <= 0):
        return False, None, None
    need = np.where(active, R / np.where(active, denominator, 1.0), 0.0) / best  # of best-type time
    if np.any(need[active] > 1.0 + 1e-12):
        return False, None, None
    M, J = T.shape
    rows = per_job_rows(T / best[:, None], 1) - column(need, M * J, M * J + 1)
    keep = np.flatnonzero(active)
    lp = _lp_with_aux(problem, rows[keep], np.zeros(keep.size), np.full(keep.size, np.inf),
                      aux_cost=np.ones(1), aux_upper=np.ones(1),
                      x_upper=np.repeat(active.astype(float), J))
    result, X = solve_allocation_lp(problem, lp, solver, options)
    if X is None:
        return False, None, result
    return result.objective >= 1.0 - 1e-9, X, result


def finish_time_fairness(problem: ThroughputProblem, solver: str = "highs",
                         options: SolveOptions = SolveOptions(), agnostic: bool = False,
                         tolerance: float = 1e-6, max_iterations: int = 200) -> Outcome:
    """Minimize max_m rho_m(X) by bisection on rho; stops when (hi - lo) <= tolerance * hi.

    For a fixed rho every constraint thr_m(X) >= R_m / (rho D_m - t_m) is linear; each step
    solves max z s.t. thr_m(X) >= z * that need (z <= 1), feasible iff z reaches 1. `bound` is
    the largest rho proven infeasible. Jobs with no remaining steps are left out of the max.
    """
    problem.require_remaining_steps("finish_time_fairness")
    if agnostic:
        problem = _uniform_throughput(problem)
    active = problem.remaining_steps > 0
    if not active.any():
        return _empty(problem, solver)
    problem.require_runnable()
    start = time.perf_counter()
    T = problem.throughput * problem.runnable
    lo = float(np.max(finish_time_ratios(problem, np.eye(problem.num_types)[np.argmax(T, axis=1)])[active]))
    best_X = isolated_allocation(problem) * problem.runnable * active[:, None]
    hi = float(np.max(finish_time_ratios(problem, best_X)[active]))
    lp_count = 0
    if not np.isfinite(hi):  # the isolated share gives some job nothing: search upwards
        hi, best_X = 2.0 * lo, None
        while best_X is None and lp_count < max_iterations:
            ok, X, _ = _ftf_feasible(problem, hi, active, solver, options)
            lp_count += 1
            if ok:
                best_X = X
            else:
                lo, hi = hi, 2.0 * hi
    probe = lo
    while hi - lo > tolerance * hi and lp_count < max_iterations:
        ok, X, result = _ftf_feasible(problem, probe, active, solver, options)
        lp_count += 1
        if result is not None and not result.status.has_solution:
            return Outcome(None, result.status, None, None, time.perf_counter() - start, solver,
                           {"lp_solves": lp_count})
        if ok:
            hi, best_X = probe, X
        else:
            lo = probe
        probe = 0.5 * (lo + hi)
    if best_X is None:
        return Outcome(None, Status.ERROR, None, lo, time.perf_counter() - start, solver,
                       {"lp_solves": lp_count})
    converged = hi - lo <= tolerance * hi
    objective = float(np.max(finish_time_ratios(problem, best_X)[active]))
    return Outcome(best_X, Status.OPTIMAL if converged else Status.FEASIBLE, objective, lo,
                   time.perf_counter() - start, solver, {"lp_solves": lp_count})


# ---------------------------------------------------------------- throughput and cost

def max_total_throughput(problem: ThroughputProblem, solver: str = "highs",
                         options: SolveOptions = SolveOptions()) -> Outcome:
    """Maximize sum_m thr_m(X) in steps/s (Gavel's max_sum_throughput_perf)."""
    return _max_weighted_throughput(problem, problem.throughput, solver, options)


def min_cost(problem: ThroughputProblem, solver: str = "highs",
             options: SolveOptions = SolveOptions(), slos: bool = True) -> Outcome:
    """Maximize throughput per dollar, sum_m sum_j T[m,j] X[m,j] / cost_j ((steps/s) per $/h).

    With `slos`, every job with a deadline and known remaining steps must reach
    thr_m(X) >= R_m / (seconds to its deadline). If that is infeasible the result has status
    infeasible, lists the jobs whose SLO cannot be met (`infeasible_slos`, with the shortfall in
    steps/s) and carries the allocation minimizing the total relative shortfall.
    """
    cost = problem.cost_per_hour
    if np.any(~np.isfinite(cost) | (cost <= 0)):
        missing = [t for t, c in zip(problem.gpu_types, cost) if not np.isfinite(c) or c <= 0]
        raise PolicyError(f"policy min_cost needs cost_per_hour > 0 for every GPU type; "
                          f"missing or zero for {', '.join(missing)}")
    weights = problem.throughput / cost[None, :]
    if not slos:
        return _max_weighted_throughput(problem, weights, solver, options)
    need = problem.remaining_steps / problem.time_to_deadline  # steps/s; nan without a deadline
    has_slo = np.isfinite(problem.time_to_deadline) & (problem.remaining_steps > 0)
    passed = has_slo & (problem.time_to_deadline <= 0)
    rows_for = np.flatnonzero(has_slo & ~passed)
    outcome = _max_weighted_throughput(problem, weights, solver, options,
                                       slo_jobs=rows_for, slo_need=need)
    if outcome.status is Status.INFEASIBLE or passed.any():
        return _slo_shortfall(problem, rows_for, need, passed, solver, options)
    return outcome


def _slo_rows(problem, jobs, extra_cols):
    """Rows sum_j (T[m,j]/Tbest_m) X[m,j] for the given jobs, and Tbest_m (steps/s)."""
    T = problem.throughput * problem.runnable
    best = np.maximum(T.max(axis=1), 1e-300)
    return per_job_rows(T / best[:, None], extra_cols)[jobs], best[jobs]


def _max_weighted_throughput(problem, weights, solver, options, slo_jobs=None, slo_need=None):
    if problem.num_jobs == 0:
        return _empty(problem, solver, 0.0)
    M, J = problem.throughput.shape
    if slo_jobs is None or slo_jobs.size == 0:
        rows, lo = sp.csr_matrix((0, M * J)), np.zeros(0)
    else:
        rows, best = _slo_rows(problem, slo_jobs, 0)
        lo = slo_need[slo_jobs] / best
    lp = _lp_with_aux(problem, rows, lo, np.full(lo.size, np.inf), aux_cost=np.zeros(0),
                      aux_upper=np.zeros(0), x_cost=(weights * problem.runnable).ravel())
    result, X = solve_allocation_lp(problem, lp, solver, options)
    objective = float(np.sum(weights * X)) if X is not None else None
    return _outcome(result, X, objective, result.bound, solver)


def _slo_shortfall(problem, jobs, need, passed, solver, options) -> Outcome:
    """Minimize the total relative SLO shortfall; name the jobs that still fall short."""
    M, J = problem.throughput.shape
    k = jobs.size
    rows, best = _slo_rows(problem, jobs, k)
    target = need[jobs] / best  # fraction of best-type time each SLO needs
    rows = rows + sp.hstack([sp.csr_matrix((k, M * J)), sp.identity(k, format="csr")], format="csr")
    lp = _lp_with_aux(problem, rows, target, np.full(k, np.inf), aux_cost=1.0 / target,
                      aux_upper=target, maximize=False)
    result, X = solve_allocation_lp(problem, lp, solver, options)
    if X is None:
        return _outcome(result, None, None, None, solver)
    short = result.x[M * J:] > 1e-6 * target
    ids = np.asarray(problem.job_ids, dtype=object)
    steps_short = result.x[M * J:] * best
    shortfall = dict(zip(ids[jobs[short]].tolist(), steps_short[short].tolist()))
    shortfall.update(dict.fromkeys(ids[passed].tolist()))  # None: deadline already passed
    return Outcome(X, Status.INFEASIBLE, None, None, result.solve_seconds, solver,
                   {"infeasible_slos": sorted(shortfall), "slo_shortfall": shortfall})
