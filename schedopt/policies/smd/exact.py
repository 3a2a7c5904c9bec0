"""`smd_exact`: the exact reference for SMD, the MILP over configuration binaries with placement
of `schedopt.policies.smd.milp` (formulation, bounds, implied rows and symmetry breaking in its
docstring), solved whole, with a MIP start from `smd`.

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
from schedopt.policies.smd.milp import ExactProgram, exact_program  # noqa: F401 (re-exported)
from schedopt.policies.smd.model import Placement, SmdProblem

DEFAULT_SOLVER = "cpsat"
OBJECTIVE_SCALE = 1e4  # seconds: smaller objectives are multiplied up to this for the solver


def smd_exact(problem: SmdProblem, solver: Solver | str = DEFAULT_SOLVER,
              options: SolveOptions | None = None, warm_start: bool = True,
              symmetry: bool = True) -> SmdSolution:
    """The exact optimum (status optimal; with a time limit possibly feasible, `bound` the
    solver's proven lower bound, seconds). warm_start: run `smd` first and give its placement
    as the MIP start (unless `options.start` is set; cpsat and scip read it, other backends
    ignore it); symmetry: the symmetry-breaking rows. details: solver termination, gap,
    columns, rows, start_objective (smd's, None without a start), start_seconds, kept_start
    (True when a limit stopped the solver without a solution better than its start, which is
    then the answer: a time-limited smd_exact is never worse than smd). solver: a Solver
    session, or a backend name with `options` (its settings)."""
    clock = time.perf_counter()
    if not isinstance(solver, Solver):
        solver = Solver(solver, options)
    options = solver.settings
    cfg = problem.configurations()
    program = exact_program(problem, cfg, symmetry=symmetry)
    lp = program.lp
    details = {"columns": lp.num_cols, "rows": lp.num_rows, "start_objective": None}
    if warm_start and options.start is None and problem.num_jobs:
        from schedopt.policies.smd.algorithm import smd

        started = time.perf_counter()
        seed = smd(problem)
        details["start_seconds"] = time.perf_counter() - started
        if seed.placement is not None:
            start = program.start(cfg, seed.placement)
            if start is not None:
                options = dataclasses.replace(options, start=start)
                details["start_objective"] = seed.objective
    # CP-SAT stops at an absolute gap of 1e-4: objectives of a few seconds are scaled up
    least = float(np.where(cfg.valid, cfg.time, np.inf).min(axis=1, initial=np.inf).sum()) \
        if problem.num_jobs else 1.0
    factor = max(1.0, OBJECTIVE_SCALE / least) if least > 0 else 1.0
    result = solver.with_settings(start=options.start).solve(
        dataclasses.replace(lp, c=lp.c * factor, objective_offset=lp.objective_offset * factor))
    bound = None if result.bound is None else result.bound / factor
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
