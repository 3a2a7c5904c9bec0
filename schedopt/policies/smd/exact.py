"""`smd_exact`: the exact reference for SMD, the MILP over configuration binaries with placement
of `schedopt.policies.smd.milp` (formulation, bounds, implied rows and symmetry breaking in its
docstring), solved whole, with a MIP start from `smd`.

Before the solver starts, the LP relaxation (HiGHS, its bound certified by
`schedopt.policies.smd.bound.dual_bound`) and smd's objective U shrink the MILP: every column is
bounded to what a solution of objective <= U allows at the LP's reduced costs
(`reduced_cost_bounds`; on 40-job NIC-bound instances this removes most configurations), and
when the LP's bound reaches U, smd's placement is returned as optimal without the solver.

Then the shrunk MILP with only the configuration columns integer (SCIP, `configuration_choice`)
gives a stronger bound and a configuration per job; where the tabu search of
`schedopt.policies.smd.repack` places exactly those configurations (PROOF_TRIES tries, from
scratch and from smd's placement in turn), that placement's sum of completion times equals the
bound, so it is returned as optimal without the solver. On NIC-bound clusters, where CP-SAT's
bound stops at that relaxation, this is what proves most instances (docs/smd.md). The reported
bound is the largest of the solver's, the LP's and that relaxation's.

Every column is integer, so CP-SAT takes it (the objective coefficients, seconds, stay floats:
CP-SAT scales them itself, and the objective reported here is recomputed from the placement).
HiGHS is refused for MILPs (highspy 1.14's MIP answers were wrong on these models); `cpsat` is the
default, chosen by measurement (benchmarks/README.md).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from schedopt.backends import SolveOptions, Status
from schedopt.backends.session import Solver
from schedopt.policies.smd.algorithm import SmdSolution, solution
from schedopt.policies.smd.bound import configuration_choice, reduced_cost_bounds, solve_relaxation
from schedopt.policies.smd.milp import ExactProgram, exact_program  # noqa: F401 (re-exported)
from schedopt.policies.smd.model import Placement, SmdProblem
from schedopt.policies.smd.repack import tabu_placement

DEFAULT_SOLVER = "cpsat"
OBJECTIVE_SCALE = 1e4  # seconds: smaller objectives are multiplied up to this for the solver
PROOF_ITERATIONS = 10_000  # tabu iterations per try to place the relaxation's configurations
PROOF_TRIES = 8  # tries to place them: from scratch and from the start's placement, in turn
PROOF_SHARE = 0.5  # of time_limit (wall-clock): the quick run, the relaxation and the tries
QUICK_WORK = 1.0  # CP-SAT deterministic time spent before the relaxation and the tries


def smd_exact(problem: SmdProblem, solver: Solver | str = DEFAULT_SOLVER,
              options: SolveOptions | None = None, warm_start: bool = True,
              symmetry: bool = True, reduced_cost: bool = True,
              canonical_start: bool = True, start: SmdSolution | None = None,
              place_relaxation: bool = True) -> SmdSolution:
    """The exact optimum (status optimal; with a time limit possibly feasible, `bound` the
    largest of the solver's proven lower bound, the LP relaxation's and, with
    place_relaxation, the relaxation with integer configurations', seconds). warm_start:
    run `smd` first and give its placement as the MIP start (unless `options.start` is set;
    cpsat and scip read it, other backends ignore it); symmetry: the symmetry-breaking rows;
    reduced_cost: bound the columns by the LP's reduced costs and smd's objective (module
    docstring); canonical_start: permute smd's placement to satisfy the symmetry rows before
    it becomes the hint (False and reduced_cost=False: the previous release, for comparisons).
    details: solver termination, gap, columns, rows, start_objective (smd's, None without a
    start), start_seconds, relaxation (the LP's bound, s; None when not solved),
    fixed_configurations (configuration columns the reduced costs set to 0), kept_start (True
    when a limit stopped the solver without a solution better than its start, which is then
    the answer: a time-limited smd_exact is never worse than smd). solver: a Solver session,
    or a backend name with `options` (its settings); start: an `smd` result to start from
    instead of running smd (with warm_start); place_relaxation: with reduced_cost, before the
    solver, place the configurations of the relaxation with integer configurations (module
    docstring; False: the previous release, for comparisons). details also: configurations
    (that relaxation's bound, s, when solved) and relaxation_placed (True when its
    configurations were placed, which proves the placement optimal without the solver),
    proof_seconds (wall-clock seconds of that step, taken off the solver's time limit)."""
    clock = time.perf_counter()
    if not isinstance(solver, Solver):
        solver = Solver(solver, options)
    options = solver.settings
    cfg = problem.configurations()
    program = exact_program(problem, cfg, symmetry=symmetry)
    lp = program.lp
    details = {"columns": lp.num_cols, "rows": lp.num_rows, "start_objective": None,
               "relaxation": None}
    if warm_start and options.start is None and problem.num_jobs:
        from schedopt.policies.smd.algorithm import smd

        started = time.perf_counter()
        seed = smd(problem) if start is None else start
        details["start_seconds"] = time.perf_counter() - started
        if seed.placement is not None:
            if not canonical_start:
                program = dataclasses.replace(program, machine_groups=(), job_groups=())
            vector = program.start(cfg, seed.placement)
            if vector is not None:
                options = dataclasses.replace(options, start=vector)
                details["start_objective"] = seed.objective
    relaxed = None
    if reduced_cost and details["start_objective"] is not None:
        relaxed, _, duals = solve_relaxation(lp)
        details["relaxation"] = relaxed
        if relaxed is not None and relaxed >= seed.objective * (1 - 1e-9):
            # the LP's certified bound reaches smd's objective: smd's placement is optimal
            out = solution(problem, seed.placement, solver.name, clock, status=Status.OPTIMAL,
                           bound=relaxed, details=details)
            out.details["gap"] = max(out.objective - relaxed, 0.0) / max(out.objective, 1e-12)
            return out
        tightened = None if relaxed is None else reduced_cost_bounds(lp, duals, seed.objective)
        hint = options.start
        if tightened is not None and np.all(hint >= tightened[0] - 1e-9) \
                and np.all(hint <= tightened[1] + 1e-9):  # always, up to rounding
            z = np.arange(lp.num_cols)[program.z.columns]
            details["fixed_configurations"] = int(((tightened[1][z] < 0.5)
                                                   & (lp.col_upper[z] > 0.5)).sum())
            lp = dataclasses.replace(lp, col_lower=tightened[0], col_upper=tightened[1])
    # CP-SAT stops at an absolute gap of 1e-4: objectives of a few seconds are scaled up
    least = float(np.where(cfg.valid, cfg.time, np.inf).min(axis=1, initial=np.inf).sum()) \
        if problem.num_jobs else 1.0
    factor = max(1.0, OBJECTIVE_SCALE / least) if least > 0 else 1.0
    scaled = dataclasses.replace(lp, c=lp.c * factor, objective_offset=lp.objective_offset * factor)
    result = quick = None
    if place_relaxation and relaxed is not None:
        began = time.perf_counter()
        share = None if options.time_limit is None else PROOF_SHARE * options.time_limit
        if solver.name == DEFAULT_SOLVER and QUICK_WORK > 0:
            # a short CP-SAT run first proves what is easy for it, before the costlier tries
            quick = solver.with_settings(start=options.start, time_limit=share,
                                         deterministic_time=min(
                                             QUICK_WORK, options.deterministic_time or np.inf)
                                         ).solve(scaled)
            result = quick if quick.status is Status.OPTIMAL else None
        if result is None:
            deadline = None if share is None else began + share
            proof = _placed_relaxation(problem, cfg, program, lp, deadline, details,
                                       seed.placement)
            details["proof_seconds"] = time.perf_counter() - began
            if proof is not None:
                out = solution(problem, proof, solver.name, clock, status=Status.OPTIMAL,
                               bound=max(details["configurations"], relaxed), details=details)
                out.details["gap"] = 0.0
                return out
            relaxed = max(relaxed, details.get("configurations") or -np.inf)
    if result is None:
        settings = {"start": options.start}
        if options.time_limit is not None and "proof_seconds" in details:
            settings["time_limit"] = max(options.time_limit - details["proof_seconds"], 1e-3)
        if options.deterministic_time is not None and quick is not None:
            settings["deterministic_time"] = max(options.deterministic_time - QUICK_WORK, 1e-3)
        result = solver.with_settings(**settings).solve(scaled)
    solver_bound = max((run.bound for run in (quick, result)
                        if run is not None and run.bound is not None), default=None)
    bounds = [b for b in (None if solver_bound is None else solver_bound / factor, relaxed)
              if b is not None]
    bound = max(bounds) if bounds else None
    details["termination"] = result.detail
    status, placement = result.status, None
    if status.has_solution:
        x = np.rint(result.x).astype(np.int64)
        placement = Placement(x[program.x.columns].reshape(program.x.shape),
                              x[program.y.columns].reshape(program.y.shape))
    if status is not Status.OPTIMAL and details["start_objective"] is not None and (
            placement is None or details["start_objective"] < problem.completion_time(
                placement.total_workers, placement.total_ps).sum()):
        # a time limit stopped the solver above its start (a hint it may drop): keep the start
        placement, status = seed.placement, Status.FEASIBLE
        details["kept_start"] = True
    if placement is None:
        return solution(problem, None, solver.name, clock, status=status, details=details)
    out = solution(problem, placement, solver.name, clock, status=status, bound=bound,
                   details=details)
    out.details["gap"] = None if out.bound is None else \
        max(out.objective - out.bound, 0.0) / max(abs(out.objective), 1e-12)
    return out


def _placed_relaxation(problem: SmdProblem, cfg, program: ExactProgram, lp,
                       deadline: float | None, details: dict,
                       near: Placement | None) -> Placement | None:
    """A placement of the configurations that the relaxation with integer configurations (SCIP,
    on `lp`) chooses, found by the tabu search (`tabu_placement`) in at most PROOF_TRIES tries
    of PROOF_ITERATIONS iterations, from scratch and from the placement `near` (smd's) in turn,
    whose sum of completion times reaches that relaxation's bound, which is then proven
    optimal; None otherwise. Nothing starts after `deadline` (a `time.perf_counter()` value;
    None: no limit), and SCIP is limited to it; sets details["configurations"] (the bound, None
    when not solved) and details["relaxation_placed"]."""
    details["configurations"], details["relaxation_placed"] = None, False
    left = (lambda: np.inf) if deadline is None else (lambda: deadline - time.perf_counter())
    if left() <= 0:
        return None
    bound, choice = configuration_choice(program, lp, None if deadline is None else left())
    details["configurations"] = bound
    if choice is None:
        return None
    rows = np.arange(problem.num_jobs)
    workers, ps = cfg.workers[rows, choice], cfg.ps[rows, choice]
    if problem.completion_time(workers, ps).sum() > bound * (1 + 1e-9):
        return None
    starts = [None, near] if near is not None else [None]
    for attempt in range(PROOF_TRIES):
        if left() <= 0:
            break
        placed = tabu_placement(problem, workers, ps, iterations=PROOF_ITERATIONS,
                                seed=attempt // len(starts), near=starts[attempt % len(starts)])
        if placed is not None:
            details["relaxation_placed"] = True
            return placed
    return None
