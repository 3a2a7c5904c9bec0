"""Water filling and makespan with space sharing, on the LP of `master.py` with other fairness
rows (docs/space-sharing.md, "Water filling" and "Makespan").

Both keep the columns, time and GPU rows of max-min fairness with space sharing and change
only the fairness rows steps_m / Tmax_m - k_m t >= floor_m (`master.Target`):

- makespan: with R_m the steps left, d_m = R_m / Tmax_m (job m's fastest time alone) and
  D = max d_m, k_m = d_m / D for jobs with work left (0 otherwise), floor 0. Then
  t = min_m steps_m D / R_m, and the makespan max_m R_m / steps_m is D / t: maximizing t
  minimizes it exactly, and an upper bound on t is a lower bound D / t on the makespan.
- water filling (lexicographic max-min of the levels s_m steps_m / (w_m thr^eq_m)):
  progressive filling. Each stage maximizes t with max-min's k_m for the rising jobs and
  floor_m = k_m l_m (k_m = 0) for every job frozen at level l_m, then freezes every rising
  job whose fairness row has a positive dual: by complementary slackness that row is tight
  in every optimum of the stage, so the job cannot rise above t without lowering another.
  A stuck job whose dual is 0 freezes at the next stage, at the same t. Each stage freezes at
  least one job (the scaled duals sum to 1 over the rising jobs), so there are at most M.
  Column generation stops a stage only when no pair column prices positive (gap tolerance 0):
  its duals are then optimal for the LP with every pair column, not only for the master.
  All stages share one master LP (`columns.Master.retarget`): a stage fixes the previous t
  column at 0, adds a new one with its k, and fixes per-job columns z_m (-1 in fairness row m)
  at the floors, so the pair columns and the simplex basis carry over and the previous
  solution (with t = 0) is feasible for the new stage (each floor is lowered by 1e-9 relative
  against round-off).
"""

from __future__ import annotations

import time

import numpy as np

from schedopt.backends import SolveOptions, Status, backends_with
from schedopt.core.capabilities import Capability
from schedopt.errors import PolicyError
from schedopt.backends.session import Solver
from schedopt.core.outcome import Outcome
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.packed.master import (PairTable, Target, empty, failed,
                                             outcome_of, paired_allocation, prepared, scaling,
                                             solve_stage, solve_target)

# A rising job freezes when its share of the scaled duals (sum 1) is above this.
FREEZE = 1e-7
FLOOR_SLACK = 1e-9


def makespan_target(problem: ThroughputProblem) -> Target:
    """The rows of the makespan LP (module docstring); report(t) = D / t seconds."""
    problem.require_remaining_steps("min_makespan_packed")
    Tmax = scaling(problem)[0]
    active = problem.remaining_steps > 0
    d = np.where(active, problem.remaining_steps / Tmax, 0.0)
    D = float(d.max(initial=0.0))
    return Target(d / D if D > 0 else d, None, inverse=True, scale=D)


def min_makespan_packed(problem: ThroughputProblem, table: PairTable,
                        solver: Solver | str = "highs", options: SolveOptions = SolveOptions(),
                        method: str = "columns", prune: bool = True, seed: bool = True,
                        **column_options) -> Outcome:
    """Minimize the makespan max_m R_m / steps_m (seconds) with space sharing, exactly
    (module docstring). Arguments as for `master.max_min_fairness_packed`."""
    problem.require_remaining_steps("min_makespan_packed")
    if problem.num_jobs and not (problem.remaining_steps > 0).any():
        solver = solver if isinstance(solver, Solver) else Solver(solver, options)
        return Outcome.from_status(np.zeros(problem.throughput.shape), Status.OPTIMAL, 0.0, 0.0,
                                   0.0, solver.name)
    return solve_target(problem, table, makespan_target, solver, options, method, prune, seed,
                        **column_options)


def water_filling_packed(problem: ThroughputProblem, table: PairTable,
                         solver: Solver | str = "highs", options: SolveOptions = SolveOptions(),
                         method: str = "columns", prune: bool = True, seed: bool = True,
                         **column_options) -> Outcome:
    """Lexicographic max-min fairness with space sharing by progressive filling (module
    docstring). Objective: the smallest level (max-min fairness' optimum), bound: the first
    stage's; details as max_min_fairness_packed's (the method's statistics: the last stage's)
    plus job_levels (each job's level, the leximin vector), levels (the distinct stage levels)
    and stages. solver.settings.time_limit bounds the whole filling: past it, the stages done
    so far are kept and the status is feasible."""
    began = time.perf_counter()
    solver, cand = prepared(problem, table, solver, options, method, prune)
    if not solver.supports(Capability.DUALS):
        raise PolicyError(f"water_filling_packed freezes jobs by the LP's dual values and needs "
                          f"a solver that gives them ({', '.join(backends_with(Capability.DUALS))}"
                          f"), not {solver.name!r}")
    if cand is None:
        return empty(problem, solver)
    M = problem.num_jobs
    k0 = scaling(problem)[1]
    rising, level = np.ones(M, dtype=bool), np.zeros(M)
    start = None
    if method == "columns" and seed:
        from schedopt.policies.packed.seed import class_seed

        start = class_seed(problem, cand, table.job_type, solver)
    column_options.setdefault("gap_tolerance", 0.0)
    master = None
    if method == "columns":
        from schedopt.policies.packed.columns import Master

        master = Master(problem, cand, solver, Target(k0), start, floors=True, **column_options)
    first_bound, converged, stages, levels = None, True, 0, []
    while rising.any():
        target = Target(np.where(rising, k0, 0.0),
                        np.where(rising, 0.0, k0 * level * (1 - FLOOR_SLACK)))
        if master is None:
            stage = solve_stage(problem, cand, solver, target, method, None)
        else:
            if stages:
                master.retarget(target)
            stage = master.run()
        stages += 1
        if stage.x is None:
            return failed(stage, time.perf_counter() - began, solver.name)
        t = float(stage.x[M * problem.num_types])
        if first_bound is None:
            first_bound = stage.bound
        converged &= stage.converged
        weight = np.zeros(M) if stage.y is None else -stage.y * target.k
        frozen = rising & (weight > FREEZE)
        if not frozen.any():  # no dual above the threshold: the most binding job
            frozen[np.flatnonzero(rising)[np.argmax(weight[rising])]] = True
        level[frozen] = t
        rising &= ~frozen
        levels.append(t)
        limit = solver.settings.time_limit
        if limit is not None and rising.any() and time.perf_counter() - began > limit:
            converged = False
        if not converged:  # a time or iteration limit: stop with what is proven
            break
    decision = paired_allocation(problem, cand, stage.x, *stage.pairs)
    details = dict(stage.details, stages=stages, levels=levels,
                   columns_generated=int(stage.pairs[0].size))
    outcome = outcome_of(problem, decision, Target(k0), first_bound, converged,
                         time.perf_counter() - began, solver.name, details)
    steps = decision.steps(problem)
    outcome.details["job_levels"] = dict(zip(
        problem.job_ids, (problem.scale_factor * steps
                          / (problem.weight * problem.equal_share_throughput)).tolist()))
    return outcome

