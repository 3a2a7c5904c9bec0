"""Finish-time fairness with space sharing (Gavel's `finish_time_fairness_packed`): minimize
the largest finish-time ratio over the solo and pair columns of `master.py`.

Job m's ratio is rho_m = (t_m + w_m R_m / steps_m) / D_m, with t_m the seconds since it
arrived, R_m its remaining steps, w_m its priority weight (Gavel's packed policy divides a
job's throughput by it), steps_m its steps/s solo plus paired, and D_m = t^iso_m + R_m / iso_m
its finish time under Gavel's isolated share (seconds; t^iso_m the isolated time credited so
far, iso_m its steps/s there, `gavel.lp.isolated_throughput`). rho_m <= rho holds iff

    steps_m >= need_m(rho) = w_m R_m / (rho D_m - t_m)     (rho D_m > t_m),

so a level rho is feasible iff the LP of `master.Target` with k_m = need_m(rho) / Tmax_m
reaches t* >= 1. Each probe rho gives two proven numbers:

  upper  max_m rho_m of the probe's own allocation (a feasible point);
  lower  min_m ((rho D_m - t_m) / t^ub + t_m) / D_m, t^ub a proven upper bound on t*: every
         rho' below it asks every job for more than t^ub need_m(rho), which no allocation
         gives. Also max_m t_m / D_m (no job finishes before now).

The first probe asks for steps/s in proportion to w_m R_m / D_m, which is exact when no job
has waited (need_m(rho) is then w_m R_m / (rho D_m)); the next probe is the upper bound (a
Newton-like step), or the midpoint when the interval did not halve. It stops when (upper - lower) / upper <= tolerance.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Literal

import numpy as np

from schedopt.backends import SolveOptions, Status
from schedopt.backends.session import Solver
from schedopt.core.outcome import Outcome
from schedopt.core.problem import ThroughputProblem
from schedopt.errors import PolicyError
from schedopt.policies.gavel.lp import isolated_throughput
from schedopt.policies.packed.decision import PairedAllocation
from schedopt.policies.packed.master import (PairTable, Target, empty, failed,
                                             paired_allocation, prepared, scaling, solve_stage)
from schedopt.policies.packed.policy import PackedPolicy, paired

MAX_PROBES = 60


def finish_time_ratios_packed(problem: ThroughputProblem, steps: np.ndarray) -> np.ndarray:
    """(M,) rho_m at these steps/s (module docstring); 0 for jobs without steps left."""
    R = problem.remaining_steps
    with np.errstate(divide="ignore", invalid="ignore"):
        finish = problem.time_since_arrival + np.where(R > 0, problem.weight * R / steps, 0.0)
        ratio = finish / isolated_finish(problem)
    return np.where(R > 0, ratio, 0.0)


def isolated_finish(problem: ThroughputProblem) -> np.ndarray:
    """(M,) D_m = t^iso_m + R_m / iso_m, seconds."""
    return problem.isolated_time + problem.remaining_steps / isolated_throughput(problem)


def finish_time_fairness_packed(problem: ThroughputProblem, table: PairTable,
                                solver: Solver | str = "highs",
                                options: SolveOptions = SolveOptions(), method: str = "columns",
                                prune: bool = True, seed: bool = True,
                                tolerance: float = 1e-6) -> Outcome:
    """min max_m rho_m with space sharing (module docstring). objective and bound: the largest
    ratio and a proven lower bound on it; details: probes, lower, gap, pairs,
    effective_throughput, gpus_in_use."""
    start = time.perf_counter()
    problem.require_remaining_steps("finish_time_fairness_packed")
    solver, cand = prepared(problem, table, solver, options, method, prune)
    if cand is None:
        return empty(problem, solver)
    R, waited = problem.remaining_steps, problem.time_since_arrival
    active = R > 0
    if not active.any():
        return empty_allocation(problem, solver.name, time.perf_counter() - start)
    D = isolated_finish(problem)
    Tmax = scaling(problem)[0]
    work = np.where(active, problem.weight * R, 0.0)
    lower = float(np.max(waited[active] / D[active]))
    upper, best, stage, pairs = np.inf, None, None, None
    rho = None  # the first probe asks for shares w_m R_m / D_m: exact when no job has waited
    probes = 0
    if method == "columns" and seed:
        from schedopt.policies.packed.seed import class_seed

        pairs = class_seed(problem, cand, table.job_type, solver)
    while probes < MAX_PROBES:
        probes += 1
        room = D if rho is None else np.where(active, rho * D - waited, 1.0)
        k = np.where(active, work / room, 0.0) / Tmax
        stage = solve_stage(problem, cand, solver, Target(k), method, pairs)
        if stage.x is None:
            return failed(stage, time.perf_counter() - start, solver.name)
        pairs = stage.pairs
        decision = paired_allocation(problem, cand, stage.x, *pairs)
        ratio = finish_time_ratios_packed(problem, decision.steps(problem))[active].max()
        if ratio < upper:
            upper, best = float(ratio), decision
        t_up = stage.bound if stage.bound is not None else stage.x[problem.num_jobs *
                                                                   problem.num_types]
        if t_up > 0:
            lower = max(lower, float(np.min(((room / t_up + waited) / D)[active])))
        if upper - lower <= tolerance * upper:
            break
        previous = rho
        rho = upper if previous is None or upper - lower < 0.5 * (previous - lower) \
            else 0.5 * (lower + upper)
        if previous is not None and rho == previous:
            rho = 0.5 * (lower + upper)
    gap = (upper - lower) / upper if upper > 0 else 0.0
    status = Status.OPTIMAL if gap <= tolerance else Status.FEASIBLE
    steps = best.steps(problem)
    details = dict(stage.details, probes=probes, lower=lower, gap=gap,
                   pairs=best.pairs(problem),
                   effective_throughput=dict(zip(problem.job_ids, steps.tolist())),
                   gpus_in_use=dict(zip(problem.gpu_types, best.gpus_in_use(problem).tolist())))
    return Outcome.from_status(best.total(), status, upper, lower, time.perf_counter() - start,
                               solver.name, details, decision=best)


def empty_allocation(problem: ThroughputProblem, solver_name: str, seconds: float) -> Outcome:
    """No job has steps left: nothing to allocate (ratio 0)."""
    decision = PairedAllocation.solo_only(np.zeros((problem.num_jobs, problem.num_types)))
    return Outcome.from_status(decision.total(), Status.OPTIMAL, 0.0, 0.0, seconds, solver_name,
                               {}, decision=decision)


@dataclasses.dataclass(frozen=True)
class FinishTimePackedOptions:
    """method, prune, seed: as max_min_fairness_packed's; tolerance: relative gap between the
    largest ratio found and the proven lower bound at which the probes stop."""

    method: Literal["columns", "dense"] = "columns"
    prune: bool = True
    seed: bool = True
    tolerance: float = 1e-6

    def __post_init__(self):
        if not 0 < self.tolerance < 1:
            raise PolicyError(f"tolerance must be in (0, 1), got {self.tolerance}")


class FinishTimeFairnessPacked(PackedPolicy):
    """Finish-time fairness with space sharing (needs remaining_steps; time_since_arrival and
    isolated_time in seconds count as in finish_time_fairness)."""

    name = "finish_time_fairness_packed"
    summary = ("Minimize the largest finish-time ratio with space sharing (co-location table), "
               "probes of the packed LP with proven bounds.")
    objective_doc = ("max over jobs of (waited + weight * remaining steps / steps/s) / isolated "
                     "finish time, pairs counted (dimensionless)")
    Options = FinishTimePackedOptions

    def solve_with_table(self, problem: ThroughputProblem, table: PairTable,
                         options: FinishTimePackedOptions, solver) -> Outcome:
        return finish_time_fairness_packed(problem, table, solver, method=options.method,
                                           prune=options.prune, seed=options.seed,
                                           tolerance=options.tolerance)

    def objective(self, problem: ThroughputProblem, allocation, options) -> float | None:
        if problem.num_jobs == 0 or not np.any(problem.remaining_steps > 0):
            return None
        steps = paired(allocation).steps(problem)
        return float(finish_time_ratios_packed(problem, steps).max())
