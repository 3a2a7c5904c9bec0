"""Gavel's heterogeneity-aware throughput-matrix policies (docs/formulations.md §1; the LPs
stated with schedopt.modeling in `models.py`).

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

from schedopt.core.deadline import deadline_after, is_past, seconds_left
from schedopt.backends import Status
from schedopt.backends.session import Solver
from schedopt.errors import PolicyError
from schedopt.core.outcome import Outcome, Termination
from schedopt.policies.gavel.blocks import effective_throughput, fill_leftover, solve_allocation
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.gavel.cost import DIRECT_CLASSES as COST_DIRECT, max_priced, merge
from schedopt.policies.gavel.finish_time import FinishTimeJobs, minimize_max_ratio
from schedopt.policies.gavel.levels import LevelProblem, LevelSolution, max_level
from schedopt.policies.gavel.models import (best_type_fraction, max_min_model, need_model,
                                            normalized_throughput, row_max, shortfall_model,
                                            throughput_model)
from schedopt.policies.gavel.robust import robust_max_min_fairness, worst_case_levels
from schedopt.policies.gavel.solving import (DECOMPOSITION, Method, as_solver, choose_method,
                                             empty_outcome as _empty, lp_outcome as _outcome,
                                             lp_solver)


# ---------------------------------------------------------------- max-min fairness

def solve_levels(problem: ThroughputProblem, gain: np.ndarray, jobs: np.ndarray | None = None,
                 start: dict | None = None, solver: Solver | None = None):
    """`levels.max_level` for max t s.t. gain[m] @ X[m] >= t over `jobs` (default all) under
    the base constraints; returns (LevelSolution, (M, J) allocation with the others at 0 and
    the GPUs it leaves idle handed out by `fill_leftover`). `start`: a previous outcome's
    details (its "prices" and "level") to warm-start from; solver: the restricted LPs'
    (`levels.max_level`)."""
    jobs = np.arange(problem.num_jobs) if jobs is None else jobs
    solution = max_level(LevelProblem(gain[jobs], problem.scale_factor[jobs], problem.capacity),
                         start=start, solver=solver)
    X = np.zeros((problem.num_jobs, problem.num_types))
    X[jobs] = solution.allocation
    eligible = np.zeros(problem.num_jobs, bool)
    eligible[jobs] = True
    return solution, fill_leftover(problem, X, eligible)


def _level_outcome(solution: LevelSolution, X: np.ndarray, objective: float,
                   bound: float) -> Outcome:
    details = {"rounds": solution.details["rounds"], "gap": solution.gap,
               "prices": solution.prices.tolist(), "level": solution.level}
    stopped = Termination.TIME_LIMIT if solution.timed_out else None
    return Outcome.from_status(X, solution.status, objective, bound, solution.seconds,
                               DECOMPOSITION, details, termination=stopped)


def max_min_fairness(problem: ThroughputProblem, solver: Solver | str | None = None,
                     agnostic: bool = False, start: dict | None = None, robust: float = 0.0,
                     method: Method = "auto") -> Outcome:
    """Maximize min_m a[m] @ X[m] (see `normalized_throughput`); objective is that minimum.

    method "decomposition" (what "auto" picks when no solver is named) is `levels.max_level`:
    exact to a proven relative gap of 1e-6 at any scale; "lp" solves the whole LP on the
    solver's backend (highs when none is named). `start`: the previous solve's `details` (GPU
    prices and level) to warm-start the decomposition from. robust = r > 0: maximize the level
    guaranteed for every true matrix in the box [(1-r) T, (1+r) T] instead
    (`robust.robust_max_min_fairness`, always one LP)."""
    method, solver = choose_method(method, solver)
    if problem.num_jobs == 0:
        return _empty(problem, _name(method, solver))
    problem.require_runnable()
    if robust:
        if agnostic:
            raise PolicyError("robust applies to heterogeneity-aware max_min_fairness: the "
                              "agnostic objective does not depend on the throughputs")
        return robust_max_min_fairness(problem, robust, lp_solver(solver))
    a = normalized_throughput(problem, agnostic) * problem.runnable
    if method == DECOMPOSITION:
        solution, X = solve_levels(problem, a, start=start, solver=solver)
        return _level_outcome(solution, X, float(np.min(np.einsum("mj,mj->m", a, X))),
                              solution.bound)
    solver = lp_solver(solver)
    solution, X = solve_allocation(problem, *max_min_model(problem, agnostic), solver)
    result = solution.result
    objective = float(np.min(np.einsum("mj,mj->m", a, X))) if X is not None else None
    return _outcome(result, X, objective, result.bound, solver.name)


def _name(method: str, solver: Solver) -> str:
    """What Outcome.solver reports: the decomposition, or the LP's backend."""
    return DECOMPOSITION if method == DECOMPOSITION else lp_solver(solver).name


def max_min_objective(problem: ThroughputProblem, X: np.ndarray, agnostic: bool = False,
                      robust: float = 0.0) -> float:
    """min_m a[m] @ X[m], the max-min objective of any allocation X (dimensionless); with
    robust = r > 0 its worst case over the box (`robust.worst_case_levels`)."""
    if problem.num_jobs == 0:
        return 0.0
    if robust and not agnostic:
        return float(np.min(worst_case_levels(problem, X, robust)))
    a = normalized_throughput(problem, agnostic) * problem.runnable
    return float(np.min(np.einsum("mj,mj->m", a, X)))




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
        time_left = problem.remaining_steps[active] / np.maximum(thr, 1e-300)
        return float(np.max(np.where(thr > 0, time_left, np.inf)))


def _checked(status: Status, objective: float, bound: float | None, tolerance: float) -> Status:
    """Downgrade `optimal` to `feasible` when the allocation's own objective misses the bound."""
    if status is Status.OPTIMAL and (bound is None or not np.isfinite(objective) or
                                     abs(objective - bound) > tolerance * max(abs(bound), 1e-12)):
        return Status.FEASIBLE
    return status


def min_makespan(problem: ThroughputProblem, solver: Solver | str | None = None,
                 agnostic: bool = False, start: dict | None = None,
                 method: Method = "auto") -> Outcome:
    """Minimize the makespan max_m R_m / thr_m(X) (seconds) exactly, as one LP.

    With d_m = R_m / Tbest_m (job m's fastest possible time) and D = max d_m, the LP is
    max z  s.t.  sum_j (T[m,j] / Tbest_m) X[m,j] >= (d_m / D) z, and makespan = D / z;
    method "decomposition" ("auto" without a named solver) solves it with `levels.max_level`
    (`start`, `method`: as for `max_min_fairness`).
    Each job's columns are scaled by d_m / D (see `models.need_model`), so a job with one step left
    next to a week-long one still gets its share.
    """
    problem.require_remaining_steps("min_makespan")
    method, solver = choose_method(method, solver)
    if agnostic:
        problem = _uniform_throughput(problem)
    active = problem.remaining_steps > 0
    if not active.any():
        return _empty(problem, _name(method, solver), 0.0)
    problem.require_runnable()
    best = (problem.throughput * problem.runnable).max(axis=1)
    d = np.where(active, problem.remaining_steps / best, 0.0)
    D = d.max()
    if method == DECOMPOSITION:
        T = problem.throughput * problem.runnable
        gain = T / best[:, None] / np.where(active, d / D, 1.0)[:, None]
        solution, X = solve_levels(problem, gain, np.flatnonzero(active), start, solver)
        return _level_outcome(solution, X, makespan_of(problem, X), D / solution.bound)
    solver = lp_solver(solver)
    solution, X = solve_allocation(problem, *need_model(problem, active, d / D), solver,
                                   np.where(active, d / D, 1.0))
    result = solution.result
    if X is None:
        return _outcome(result, None, None, None, solver.name)
    bound = D / result.bound if result.bound and result.bound > 0 else None
    objective = makespan_of(problem, X)
    return _outcome(result, X, objective, bound, solver.name,
                    _checked(result.status, objective, bound, 1e-6))


# ---------------------------------------------------------------- finish-time fairness

def isolated_allocation(problem: ThroughputProblem) -> np.ndarray:
    """Gavel's isolated share: X[m,j] = (c_j / M) / s_m, each row scaled down to sum <= 1."""
    X = (problem.capacity[None, :] / problem.num_jobs) / problem.scale_factor[:, None]
    return X / np.maximum(X.sum(axis=1, keepdims=True), 1.0)


def isolated_throughput(problem: ThroughputProblem) -> np.ndarray:
    """(M,) steps/s of each job under Gavel's isolated share (`isolated_allocation`)."""
    return effective_throughput(problem, isolated_allocation(problem))


def isolated_finish_time(problem: ThroughputProblem,
                         throughput: np.ndarray | None = None) -> np.ndarray:
    """(M,) seconds, the ratio's denominator: t^iso_m + R_m / thr^iso_m, with thr^iso the
    given (M,) steps/s, else `isolated_throughput(problem)`."""
    iso = isolated_throughput(problem) if throughput is None else throughput
    return problem.isolated_time + problem.remaining_steps / iso


def finish_time_ratios(problem: ThroughputProblem, X: np.ndarray,
                       isolated: np.ndarray | None = None) -> np.ndarray:
    """(M,) Themis' rho_m(X) = (t_m + R_m / thr_m(X)) / (t^iso_m + R_m / thr^iso_m);
    `isolated` is `isolated_finish_time(problem)` when the caller has it already."""
    thr = effective_throughput(problem, X)
    R = problem.remaining_steps
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = problem.time_since_arrival + np.where(R > 0, R / thr, 0.0)
        return expected / (isolated_finish_time(problem) if isolated is None else isolated)


def _ftf_feasible(problem, rho, active, isolated, solver):
    """Can every active job reach finish-time ratio <= rho? Returns (feasible, X, result).
    isolated: `isolated_finish_time(problem)` (s)."""
    best = (problem.throughput * problem.runnable).max(axis=1)
    R = problem.remaining_steps
    denominator = rho * isolated - problem.time_since_arrival
    if np.any(denominator[active] <= 0):
        return False, None, None
    need = np.where(active, R / np.where(active, denominator, 1.0), 0.0) / best  # of best-type time
    if np.any(need[active] > 1.0 + 1e-12):
        return False, None, None
    solution, X = solve_allocation(problem, *need_model(problem, active, need, 1.0), solver,
                                   np.where(active, need, 1.0))
    result = solution.result
    if X is None:
        return False, None, result
    return result.objective >= 1.0 - 1e-7, X, result


def _ftf_by_prices(problem, active, isolated, lo, start_X, tolerance, max_iterations, solver,
                   start, deadline) -> Outcome:
    """`finish_time_fairness` by `finish_time.minimize_max_ratio` (method decomposition)."""
    T = problem.throughput * problem.runnable
    best = row_max(T)
    keep = np.flatnonzero(active)
    jobs = FinishTimeJobs(T[keep] / best[keep, None], best[keep], problem.scale_factor[keep],
                          problem.remaining_steps[keep], problem.time_since_arrival[keep],
                          isolated[keep], problem.capacity)
    initial = start_X[keep] if np.isfinite(finish_time_ratios(problem, start_X, isolated)[
        active]).all() else None
    found = minimize_max_ratio(jobs, lo, initial, tolerance, max_iterations, solver, deadline)
    details = {"lp_solves": found.lp_solves, "level_solves": found.level_solves}
    seconds = time.perf_counter() - start
    reason = Termination.TIME_LIMIT if found.timed_out else None
    if found.allocation is None:
        return Outcome.from_status(None, Status.ERROR, None, found.lower, seconds, DECOMPOSITION,
                                   details, termination=reason)
    X = np.zeros((problem.num_jobs, problem.num_types))
    X[keep] = found.allocation
    X = fill_leftover(problem, X, active)
    objective = float(np.max(finish_time_ratios(problem, X, isolated)[active]))
    lower = min(found.lower, objective)  # equal up to rounding when the start is optimal
    converged = objective - lower <= tolerance * objective
    details["gap"] = (objective - lower) / objective
    return Outcome.from_status(X, Status.OPTIMAL if converged else Status.FEASIBLE, objective,
                               lower, seconds, DECOMPOSITION, details,
                               termination=None if converged else reason)


def finish_time_fairness(problem: ThroughputProblem, solver: Solver | str | None = None,
                         agnostic: bool = False, tolerance: float = 1e-6,
                         max_iterations: int = 200, method: Method = "auto") -> Outcome:
    """Minimize max_m rho_m(X); stops when (hi - lo) <= tolerance * hi, `bound` = lo is the
    largest rho proven infeasible. Jobs with no remaining steps are left out of the max.

    For a fixed rho every constraint thr_m(X) >= R_m / (rho D_m - t_m) is linear.
    method "decomposition" ("auto" without a named solver; `finish_time.minimize_max_ratio`):
    a few price-decomposition solves of that level problem, each giving the allocation's own
    max rho and a lower bound certified by its GPU prices. "lp": bisection on rho, each step
    one LP max z s.t. thr_m(X) >= z * that need (z <= 1), feasible iff z reaches 1.
    The solver's time limit bounds the whole search: when it hits, the best allocation
    proven so far is returned (status feasible, termination time_limit, bound as above).
    """
    problem.require_remaining_steps("finish_time_fairness")
    method, solver = choose_method(method, solver)
    if method != DECOMPOSITION:
        solver = lp_solver(solver)
    name = _name(method, solver)
    if agnostic:
        problem = _uniform_throughput(problem)
    active = problem.remaining_steps > 0
    if not active.any():
        return _empty(problem, name)
    problem.require_runnable()
    start = time.perf_counter()
    T = problem.throughput * problem.runnable
    alone_on_best = np.eye(problem.num_types)[np.argmax(T, axis=1)]  # ignores capacity: a bound
    isolated = isolated_finish_time(problem)
    lo = float(np.max(finish_time_ratios(problem, alone_on_best, isolated)[active]))
    best_X = isolated_allocation(problem) * problem.runnable * active[:, None]
    hi = float(np.max(finish_time_ratios(problem, best_X, isolated)[active]))
    lp_count = 0
    deadline = deadline_after(solver.settings.time_limit, start)
    if method == DECOMPOSITION:
        return _ftf_by_prices(problem, active, isolated, lo, best_X, tolerance, max_iterations,
                              solver, start, deadline)

    def timed() -> Solver | None:
        """The solver with the time left as its limit; None once the time is up."""
        left = seconds_left(deadline)
        if left is None:
            return solver
        return solver.with_settings(time_limit=left) if left > 0 else None

    if not np.isfinite(hi):  # the isolated share gives some job nothing: search upwards
        hi, best_X = 2.0 * lo, None
        while best_X is None and lp_count < max_iterations and timed() is not None:
            ok, X, _ = _ftf_feasible(problem, hi, active, isolated, timed())
            lp_count += 1
            if ok:
                best_X = X
            else:
                lo, hi = hi, 2.0 * hi
    probe, stopped = lo, False
    while hi - lo > tolerance * hi and lp_count < max_iterations:
        step_solver = timed()
        if step_solver is None:
            stopped = True
            break
        ok, X, result = _ftf_feasible(problem, probe, active, isolated, step_solver)
        lp_count += 1
        if result is not None and not result.status.has_solution:
            if best_X is not None and timed() is None:
                stopped = True
                break
            return Outcome.from_status(None, result.status, None, None, time.perf_counter() - start, name,
                           {"lp_solves": lp_count, "termination": result.termination})
        if ok:
            hi, best_X = probe, X
        else:
            lo = probe
        probe = 0.5 * (lo + hi)
    stopped = stopped or is_past(deadline)
    reason = Termination.TIME_LIMIT if stopped else None
    if best_X is None:
        return Outcome.from_status(None, Status.ERROR, None, lo, time.perf_counter() - start, name,
                                   {"lp_solves": lp_count}, termination=reason)
    converged = hi - lo <= tolerance * hi
    objective = float(np.max(finish_time_ratios(problem, best_X, isolated)[active]))
    return Outcome.from_status(best_X, Status.OPTIMAL if converged else Status.FEASIBLE, objective,
                               lo, time.perf_counter() - start, name, {"lp_solves": lp_count},
                               termination=None if converged else reason)


# ---------------------------------------------------------------- throughput and cost

def max_total_throughput(problem: ThroughputProblem, solver: Solver | str | None = None) -> Outcome:
    """Maximize sum_m thr_m(X) in steps/s (Gavel's max_sum_throughput_perf)."""
    return _max_weighted_throughput(problem, problem.throughput, lp_solver(as_solver(solver)))


def min_cost(problem: ThroughputProblem, solver: Solver | str | None = None,
             slos: bool = True, method: Method = "auto") -> Outcome:
    """Maximize throughput per dollar, sum_m sum_j T[m,j] X[m,j] / cost_j ((steps/s) per $/h).

    With `slos`, every job with a deadline and known remaining steps must reach
    thr_m(X) >= R_m / (seconds to its deadline). If that is infeasible the result has status
    infeasible and lists the jobs whose SLO cannot be met (`infeasible_slos`; `slo_shortfall`
    in steps/s, None for a deadline already passed); its allocation first minimizes the total
    relative shortfall, then maximizes throughput per dollar among those allocations.

    method "decomposition" ("auto" without a named solver): the price decomposition of
    `cost.max_priced` to a proven gap of 1e-6 (`bound` and `details.gap`); whether the SLOs
    fit is decided first by one `levels.max_level` solve (max z with every SLO job at z times
    its need: they fit iff z >= 1, proven either way). SLOs that do not fit are handled by
    the whole LPs below. "lp": the whole LP on the solver's backend (highs-ipm by default).
    """
    cost = problem.cost_per_hour
    if np.any(~np.isfinite(cost) | (cost <= 0)):
        missing = [t for t, c in zip(problem.gpu_types, cost) if not np.isfinite(c) or c <= 0]
        raise PolicyError(problem.located(
            f"cluster.gpu_types.{missing[0]}.cost_per_hour", f"policy min_cost needs "
            f"cost_per_hour > 0 for every GPU type; missing or zero for {', '.join(missing)}"))
    weights = problem.throughput / cost[None, :]
    method, solver = choose_method(method, solver)
    decompose = method == DECOMPOSITION
    began = time.perf_counter()
    if not decompose:
        solver = lp_solver(solver, "highs-ipm")
    if problem.num_jobs == 0 or not slos:
        if decompose and problem.num_jobs:
            return _cost_by_prices(problem, weights, np.zeros(0, int), np.zeros(0), solver,
                                   began)
        return _max_weighted_throughput(problem, weights, solver if not decompose
                                        else lp_solver(solver, "highs-ipm"))
    best = (problem.throughput * problem.runnable).max(axis=1)
    has_slo = np.isfinite(problem.time_to_deadline) & (problem.remaining_steps > 0)
    passed = has_slo & (problem.time_to_deadline <= 0)
    hopeless = has_slo & ~passed & (best <= 0)  # can run nowhere: all of its need is short
    jobs = np.flatnonzero(has_slo & ~passed & ~hopeless)
    need = problem.remaining_steps[jobs] / problem.time_to_deadline[jobs]  # steps/s
    target = need / best[jobs]  # fraction of the job's best-type time
    if decompose:
        if not (passed | hopeless).any() and (problem.num_jobs <= COST_DIRECT or
                                              _slos_may_fit(problem, jobs, target, solver)):
            outcome = _cost_by_prices(problem, weights, jobs, target, solver, began)
            if outcome.allocation is not None or outcome.termination is Termination.TIME_LIMIT:
                return outcome
        solver = lp_solver(solver, "highs-ipm")
    outcome = _max_weighted_throughput(problem, weights, solver, jobs, target)
    if outcome.status is not Status.INFEASIBLE and not (passed | hopeless).any():
        return outcome
    short = _min_shortfall(problem, jobs, target, solver)
    if short is None:
        return Outcome.from_status(None, Status.ERROR, None, None, outcome.solve_seconds,
                                   solver.name)
    relaxed = np.maximum(target - short - 1e-9 * np.maximum(target, 1.0), 0.0)
    outcome = _max_weighted_throughput(problem, weights, solver, jobs, relaxed)
    ids = np.asarray(problem.job_ids, dtype=object)
    missed = short > 1e-6 * target
    shortfall = dict(zip(ids[jobs[missed]].tolist(), (short * best[jobs])[missed].tolist()))
    shortfall.update(zip(ids[hopeless].tolist(), (problem.remaining_steps[hopeless]
                                                  / problem.time_to_deadline[hopeless]).tolist()))
    shortfall.update(dict.fromkeys(ids[passed].tolist()))  # None: deadline already passed
    return Outcome.from_status(outcome.allocation, Status.INFEASIBLE, outcome.objective, None,
                   outcome.solve_seconds, solver.name,
                   {"infeasible_slos": sorted(shortfall), "slo_shortfall": shortfall})


def _slos_may_fit(problem: ThroughputProblem, jobs: np.ndarray, target: np.ndarray,
                  solver: Solver) -> bool:
    """False when the SLO jobs provably cannot all get their `target` fraction of their best
    type's throughput at once: the proven upper bound on max z s.t. f[m] @ X[m] >= z target_m
    (`levels.max_level`) is below 1. (Within its gap of 1, the restricted LPs settle it; up to
    COST_DIRECT jobs the one LP over all of them does, without this check.)"""
    if jobs.size == 0 or np.any(target > 1.0):
        return jobs.size == 0
    keep = target > 0
    if not keep.any():
        return True
    jobs, target = jobs[keep], target[keep]
    gain = best_type_fraction(problem)[jobs] / target[:, None]
    solution = max_level(LevelProblem(gain, problem.scale_factor[jobs], problem.capacity),
                         solver=solver)
    return solution.bound >= 1.0


def _cost_by_prices(problem: ThroughputProblem, weights: np.ndarray, jobs: np.ndarray,
                    target: np.ndarray, solver: Solver, began: float) -> Outcome:
    """`min_cost` by `cost.max_priced` (method decomposition), SLOs known to fit."""
    tau = np.zeros(problem.num_jobs)
    tau[jobs] = target
    runnable = problem.runnable
    classes, of_job = merge(weights * runnable, best_type_fraction(problem),
                            problem.scale_factor, tau, runnable, problem.capacity)
    solution = max_priced(classes, solver=solver,
                          deadline=deadline_after(solver.settings.time_limit, began))
    seconds = time.perf_counter() - began
    details = dict(solution.details)
    stopped = Termination.TIME_LIMIT if solution.timed_out else None
    if solution.allocation is None:
        return Outcome.from_status(None, solution.status, None, None, seconds, DECOMPOSITION,
                                   details, termination=stopped)
    X = solution.allocation[of_job]
    details.update(gap=solution.gap, prices=solution.prices.tolist())
    return Outcome.from_status(X, solution.status, float(np.sum(weights * runnable * X)),
                               solution.bound, seconds, DECOMPOSITION, details,
                               termination=stopped)


def _max_weighted_throughput(problem, weights, solver: Solver, slo_jobs=None, slo_target=None):
    """max sum(weights * X), with thr_m(X) >= slo_target * Tbest_m for `slo_jobs` if given."""
    if problem.num_jobs == 0:
        return _empty(problem, solver.name, 0.0)
    solution, X = solve_allocation(problem, *throughput_model(problem, weights, slo_jobs,
                                                              slo_target), solver)
    result = solution.result
    objective = float(np.sum(weights * X)) if X is not None else None
    return _outcome(result, X, objective, result.bound, solver.name)


def _min_shortfall(problem, jobs, target, solver: Solver) -> np.ndarray | None:
    """Per SLO job, the shortfall (fraction of best-type time) minimizing the total relative
    shortfall sum_k e_k / target_k; None if the solve fails."""
    if jobs.size == 0:
        return np.zeros(0)
    model, _, shortfall = shortfall_model(problem, jobs, target)
    found = model.solve(solver)[shortfall]
    return None if found is None else np.clip(found, 0.0, target)


# ---------------------------------------------------------------- objectives of any allocation

def makespan_objective(problem: ThroughputProblem, X: np.ndarray, agnostic: bool = False) -> float:
    """`min_makespan`'s objective (seconds) of any allocation X."""
    return makespan_of(_uniform_throughput(problem) if agnostic else problem, X)


def finish_time_objective(problem: ThroughputProblem, X: np.ndarray, agnostic: bool = False,
                          **_) -> float:
    """`finish_time_fairness`'s objective, max rho over jobs with work left, of any X."""
    view = _uniform_throughput(problem) if agnostic else problem
    active = view.remaining_steps > 0
    return float(np.max(finish_time_ratios(view, X)[active])) if active.any() else 0.0


def total_throughput_objective(problem: ThroughputProblem, X: np.ndarray) -> float:
    """`max_total_throughput`'s objective (steps/s) of any X."""
    return float(np.sum(problem.throughput * problem.runnable * X))


def cost_objective(problem: ThroughputProblem, X: np.ndarray, **_) -> float:
    """`min_cost`'s objective, sum of T[m,j] X[m,j] / cost_j ((steps/s) per $/h), of any X."""
    return float(np.sum(problem.throughput * problem.runnable * X / problem.cost_per_hour))
