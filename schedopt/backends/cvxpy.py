"""Any solver cvxpy has installed (``cvxpy:CLARABEL``, ``cvxpy:SCS``, ``cvxpy:HIGHS``, ...).

The LP goes to cvxpy as one vector variable (continuous columns first, then integer ones) and at
most three vector constraints: equality rows, rows with a finite lower bound, rows with a finite
upper bound (a two-sided row is in the last two). Column bounds go in as identity rows below A,
not as the variable's `bounds`, which cvxpy 1.9's PDLP interface mishandles.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp

from schedopt.backends.base import LinearProgram, SolveOptions, SolveResult, Status
from schedopt.errors import SolveError

_STATUS = {
    "optimal": Status.OPTIMAL,
    "optimal_inaccurate": Status.FEASIBLE,  # a solution, but short of the solver's tolerances
    "user_limit": Status.FEASIBLE,  # demoted to ERROR below when there is no solution
    "infeasible": Status.INFEASIBLE,
    "infeasible_inaccurate": Status.INFEASIBLE,
    "unbounded": Status.UNBOUNDED,
    "unbounded_inaccurate": Status.UNBOUNDED,
    "infeasible_or_unbounded": Status.INFEASIBLE,
}

# cvxpy passes solver options through under each solver's own names; SCIPY takes them in one dict.
_TIME_LIMIT = {"CLARABEL": "time_limit", "HIGHS": "time_limit", "SCIPY": "time_limit",
               "OSQP": "time_limit", "SCS": "time_limit_secs", "GLOP": "time_limit_sec",
               "PDLP": "time_limit_sec"}
_MIP_GAP = {"HIGHS": "mip_rel_gap", "SCIPY": "mip_rel_gap"}
_THREADS = {"HIGHS": "threads"}


def _solver_options(solver: str, options: SolveOptions, is_mip: bool) -> dict:
    """cvxpy keyword arguments for `options`; mip_gap and threads are dropped where unsupported."""
    kwargs: dict = {}
    if options.time_limit is not None:
        if solver not in _TIME_LIMIT:
            raise SolveError(f"cvxpy:{solver}: schedopt cannot pass a time limit to it; "
                             f"use one of {', '.join(_TIME_LIMIT)} or no time limit")
        kwargs[_TIME_LIMIT[solver]] = float(options.time_limit)
    if options.mip_gap is not None and is_mip and solver in _MIP_GAP:
        kwargs[_MIP_GAP[solver]] = float(options.mip_gap)
    if options.threads is not None and solver in _THREADS:
        kwargs[_THREADS[solver]] = int(options.threads)
    return {"scipy_options": kwargs} if solver == "SCIPY" and kwargs else kwargs


def _rows(lower: np.ndarray, upper: np.ndarray):
    """(row mask, make constraint, bounds, sign) for equality, lower-bounded and upper-bounded rows;
    the sign turns cvxpy's multiplier of a minimization into d(objective)/d(row bound)."""
    equal = np.isfinite(lower) & (lower == upper)
    return [(mask, make, bound, sign) for mask, make, bound, sign in (
        (equal, lambda ax, b: ax == b, lower, -1.0),
        (np.isfinite(lower) & ~equal, lambda ax, b: ax >= b, lower, 1.0),
        (np.isfinite(upper) & ~equal, lambda ax, b: ax <= b, upper, -1.0)) if mask.any()]


def _build(cp, lp: LinearProgram):
    """The cvxpy problem, its variable (continuous columns first), that column order, and the
    (rows, constraints) blocks of [A; I] that carry the row and column bounds."""
    integer = np.zeros(lp.num_cols, bool) if lp.integer is None else np.asarray(lp.integer, bool)
    order = np.concatenate([np.flatnonzero(~integer), np.flatnonzero(integer)])
    num_continuous = lp.num_cols - int(integer.sum())
    parts = [cp.Variable(size, integer=flag) for size, flag in
             ((num_continuous, False), (lp.num_cols - num_continuous, True)) if size]
    x = cp.hstack(parts) if len(parts) > 1 else parts[0]
    A = sp.vstack([lp.A.tocsr()[:, order], sp.identity(lp.num_cols, format="csr")], format="csr")
    rows = _rows(np.concatenate([lp.row_lower, np.asarray(lp.col_lower, np.float64)[order]]),
                 np.concatenate([lp.row_upper, np.asarray(lp.col_upper, np.float64)[order]]))
    constraints = [make(A[mask] @ x, bound[mask]) for mask, make, bound, _ in rows]
    objective = np.asarray(lp.c, dtype=np.float64)[order] @ x + float(lp.objective_offset)
    sense = cp.Maximize if lp.maximize else cp.Minimize
    return cp.Problem(sense(objective), constraints), x, order, rows, constraints


class CvxpyBackend:
    """`solver` is a cvxpy solver name; None picks CLARABEL for LPs and SCIPY for MILPs (cvxpy's
    HIGHS is highspy, whose 1.14.0 MIP is wrong; see highs.py).
    Reports row duals for LPs; no MILP bound (cvxpy does not expose one). `solve_seconds` covers
    cvxpy's compilation of the problem as well as the solver."""

    def __init__(self, solver: str | None = None):
        self.solver = solver.upper() if solver else None
        self.name = f"cvxpy:{self.solver}" if self.solver else "cvxpy"

    def _solver_for(self, cp, lp: LinearProgram) -> str:
        from cvxpy.reductions.solvers.defines import MI_SOLVERS

        solver = self.solver or ("SCIPY" if lp.is_mip else "CLARABEL")
        installed = cp.installed_solvers()
        if solver not in installed:
            raise SolveError(f"cvxpy has no solver {solver!r}; installed: {', '.join(installed)}")
        if lp.is_mip and solver not in MI_SOLVERS:
            raise SolveError(f"cvxpy:{solver} cannot solve integer programs; use one of "
                             f"{', '.join(f'cvxpy:{name}' for name in installed if name in MI_SOLVERS)}")
        return solver

    def solve(self, lp: LinearProgram, options: SolveOptions) -> SolveResult:
        import cvxpy as cp

        solver = self._solver_for(cp, lp)
        problem, x, order, rows, constraints = _build(cp, lp)
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():  # cvxpy warns about statuses that our status reports
                warnings.filterwarnings("ignore", "Solution may be inaccurate", UserWarning)
                warnings.filterwarnings("ignore", r"\s*The problem is either infeasible or unbounded",
                                        UserWarning)
                problem.solve(solver=solver, verbose=bool(options.verbose),
                              **_solver_options(solver, options, lp.is_mip))
        except cp.error.SolverError as exc:
            return SolveResult(status=Status.ERROR, objective=None, bound=None, x=None,
                               solve_seconds=time.perf_counter() - start, backend=self.name,
                               termination=str(exc))
        result = SolveResult(status=_STATUS.get(problem.status, Status.ERROR), objective=None,
                             bound=None, x=None, solve_seconds=time.perf_counter() - start,
                             backend=self.name, termination=problem.status)
        if result.status.has_solution and x.value is None:
            result.status = Status.ERROR
        if not result.status.has_solution:
            return result
        result.x = np.empty(lp.num_cols)
        result.x[order] = x.value
        result.objective = float(problem.value)
        if result.status is Status.OPTIMAL and not lp.is_mip:
            result.bound = result.objective
            flip = -1.0 if lp.maximize else 1.0
            duals = np.zeros(lp.num_rows + lp.num_cols)
            for (mask, _, _, sign), constraint in zip(rows, constraints):  # at most three blocks
                duals[mask] += flip * sign * np.asarray(constraint.dual_value)
            result.row_duals = duals[:lp.num_rows]
        return result
