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

from schedopt.backends.base import (LinearProgram, SolutionStatus, SolveOptions, SolveResult,
                                    Termination, read_status)
from schedopt.core.capabilities import Capability
from schedopt.errors import SolveError
from schedopt.core.sparse_import import scipy_sparse

sp = scipy_sparse()

_T, _S = Termination, SolutionStatus
# cvxpy status -> (termination, solution when cvxpy returns values); a limit is read apart
# (`_stopped_by_a_limit`).
_STATUS = {
    "optimal": (_T.OPTIMAL, _S.OPTIMAL),
    "optimal_inaccurate": (_T.NUMERICAL, _S.FEASIBLE),  # short of the solver's tolerances
    "user_limit": (_T.ITERATION_LIMIT, _S.FEASIBLE),
    "infeasible": (_T.INFEASIBLE, _S.NONE),
    "infeasible_inaccurate": (_T.INFEASIBLE, _S.NONE),
    "unbounded": (_T.UNBOUNDED, _S.NONE),
    "unbounded_inaccurate": (_T.UNBOUNDED, _S.NONE),
    "infeasible_or_unbounded": (_T.INFEASIBLE, _S.NONE),
    "solver_error": (_T.ERROR, _S.NONE),
}
# cvxpy 1.9's MI_SOLVERS, written out so that reading capabilities imports no cvxpy; without
# ECOS_BB (cvxpy itself never picks it: its branch and bound is unreliable). HIGHS is highspy,
# whose MIP is wrong on some releases (highs.py).
_MILP_SOLVERS = frozenset({"MOSEK", "CPLEX", "GUROBI", "COPT", "GLPK_MI", "CBC", "XPRESS", "SCIP",
                           "SCIPY", "HIGHS", "CUOPT", "KNITRO"})

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


def _stopped_by_a_limit(problem, solver: str) -> bool:
    """Whether a limit stopped the solver: cvxpy says "user_limit", or for SCIPY
    "optimal_inaccurate", its name for scipy's status 1 (iteration or time limit). Neither says
    which limit; schedopt sets only a time limit, so under one it is that."""
    return problem.status == "user_limit" or (solver == "SCIPY"
                                              and problem.status == "optimal_inaccurate")


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

    @property
    def capabilities(self) -> Capability:
        """LPs with duals on any solver (CLARABEL by default); MILPs on SCIPY (the default) and
        cvxpy's other integer solvers, HIGHS only where highspy's MIP is right."""
        milp = self.solver is None or self.solver in _MILP_SOLVERS
        if self.solver == "HIGHS":
            from schedopt.backends.highs import mip_is_broken

            milp = not mip_is_broken()
        return Capability.LP | Capability.DUALS | (Capability.MILP if milp else Capability.none())

    def _solver_for(self, cp, lp: LinearProgram) -> str:
        solver = self.solver or ("SCIPY" if lp.is_mip else "CLARABEL")
        installed = cp.installed_solvers()
        if solver not in installed:
            raise SolveError(f"cvxpy has no solver {solver!r}; installed: {', '.join(installed)}")
        if lp.is_mip and Capability.MILP not in self.capabilities:
            able = [name for name in installed
                    if Capability.MILP in CvxpyBackend(name).capabilities]
            raise SolveError(f"cvxpy:{solver} cannot solve integer programs; use one of "
                             f"{', '.join(f'cvxpy:{name}' for name in able)}")
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
            return SolveResult(reason=Termination.ERROR, solution=SolutionStatus.NONE,
                               solve_seconds=time.perf_counter() - start, backend=self.name,
                               detail=str(exc))
        reason, found = read_status(_STATUS, problem.status, x.value is not None)
        if _stopped_by_a_limit(problem, solver):
            reason = Termination.ITERATION_LIMIT if options.time_limit is None else \
                Termination.TIME_LIMIT
        result = SolveResult(reason=reason, solution=found,
                             solve_seconds=time.perf_counter() - start, backend=self.name,
                             detail=problem.status)
        if found is SolutionStatus.NONE:
            return result
        result.x = np.empty(lp.num_cols)
        result.x[order] = x.value
        result.objective = float(problem.value)
        if found is SolutionStatus.OPTIMAL and not lp.is_mip:
            result.bound = result.objective
            flip = -1.0 if lp.maximize else 1.0
            duals = np.zeros(lp.num_rows + lp.num_cols)
            for (mask, _, _, sign), constraint in zip(rows, constraints):  # at most three blocks
                duals[mask] += flip * sign * np.asarray(constraint.dual_value)
            result.row_duals = duals[:lp.num_rows]
        return result
