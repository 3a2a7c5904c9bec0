"""Clarabel (interior point, conic) called directly on the sparse LP: no modelling layer.

Rows and column bounds become one nonnegative cone (A x <= u, -A x <= -l) plus a zero cone
for equalities; fixed columns (l = u, e.g. X[m,j] = 0 where a job cannot run) are substituted
out before the solve. LPs only.
"""

from __future__ import annotations

import numpy as np

from schedopt.backends.base import (LinearProgram, SolutionStatus, SolveOptions, SolveResult,
                                    Termination, read_status)
from schedopt.core.capabilities import Capability
from schedopt.errors import SolveError
from schedopt.core.sparse_import import scipy_sparse

sp = scipy_sparse()


def _status_map(clarabel) -> dict:
    """Clarabel status -> (termination, solution). "Almost solved" is a solution short of the
    tolerances; a time or iteration limit leaves an iterate that is no solution."""
    s, T, S = clarabel.SolverStatus, Termination, SolutionStatus
    return {
        str(s.Solved): (T.OPTIMAL, S.OPTIMAL),
        str(s.AlmostSolved): (T.NUMERICAL, S.FEASIBLE),
        str(s.PrimalInfeasible): (T.INFEASIBLE, S.NONE),
        str(s.AlmostPrimalInfeasible): (T.INFEASIBLE, S.NONE),
        str(s.DualInfeasible): (T.UNBOUNDED, S.NONE),
        str(s.AlmostDualInfeasible): (T.UNBOUNDED, S.NONE),
        str(s.MaxTime): (T.TIME_LIMIT, S.NONE),
        str(s.MaxIterations): (T.ITERATION_LIMIT, S.NONE),
        str(s.NumericalError): (T.NUMERICAL, S.NONE),
        str(s.InsufficientProgress): (T.NUMERICAL, S.NONE),
    }


def conic_form(lp: LinearProgram):
    """(q, A, b, n_eq, n_ineq, free, x_fixed, row_index, row_sign) of the conic LP over the
    non-fixed columns: min q x  s.t.  A x + s = b, s in {0}^n_eq x R+^n_ineq."""
    fixed = lp.col_lower == lp.col_upper
    free = np.flatnonzero(~fixed)
    x_fixed = np.where(fixed, lp.col_lower, 0.0)
    A = lp.A.tocsc()
    shift = A @ x_fixed
    A_free = A[:, free]
    sign = -1.0 if lp.maximize else 1.0
    eq = np.isfinite(lp.row_upper) & (lp.row_lower == lp.row_upper)
    up = np.isfinite(lp.row_upper) & ~eq
    lo = np.isfinite(lp.row_lower) & ~eq
    n = free.size
    I = sp.identity(n, format="csr")
    cu, cl = np.isfinite(lp.col_upper[free]), np.isfinite(lp.col_lower[free])
    blocks = [A_free[eq], A_free[up], -A_free[lo], I[cu], -I[cl]]
    rhs = [lp.row_upper[eq] - shift[eq], lp.row_upper[up] - shift[up],
           -(lp.row_lower[lo] - shift[lo]), lp.col_upper[free][cu], -lp.col_lower[free][cl]]
    row_index = np.concatenate([np.flatnonzero(eq), np.flatnonzero(up), np.flatnonzero(lo)])
    row_sign = np.concatenate([np.ones(eq.sum()), np.ones(up.sum()), -np.ones(lo.sum())])
    return (sign * lp.c[free], sp.vstack(blocks, format="csc"), np.concatenate(rhs),
            int(eq.sum()), free, x_fixed, row_index, row_sign)


class ClarabelBackend:
    name = "clarabel"
    capabilities = Capability.LP | Capability.DUALS

    def solve(self, lp: LinearProgram, options: SolveOptions) -> SolveResult:
        import clarabel

        if lp.is_mip:
            raise SolveError("clarabel solves LPs only; use highs, cpsat or cbc for integer programs")
        q, A, b, n_eq, free, x_fixed, row_index, row_sign = conic_form(lp)
        settings = clarabel.DefaultSettings()
        settings.verbose = bool(options.verbose)
        if options.time_limit is not None:
            settings.time_limit = float(options.time_limit)
        if options.threads is not None:
            settings.max_threads = int(options.threads)
        cones = [clarabel.ZeroConeT(n_eq)] if n_eq else []
        cones.append(clarabel.NonnegativeConeT(A.shape[0] - n_eq))
        P = sp.csc_matrix((free.size, free.size))
        solution = clarabel.DefaultSolver(P, q, A, b, cones, settings).solve()
        reason, found = read_status(_status_map(clarabel), str(solution.status), True)
        offset_fixed = float(lp.c @ x_fixed) + lp.objective_offset
        if found is SolutionStatus.NONE:
            return SolveResult(reason=reason, solution=found, solve_seconds=solution.solve_time,
                               backend=self.name, detail=str(solution.status))
        x = x_fixed.copy()
        x[free] = np.asarray(solution.x)
        sign = -1.0 if lp.maximize else 1.0
        objective = float(lp.c @ x) + lp.objective_offset
        proven = found is SolutionStatus.OPTIMAL
        bound = sign * float(solution.obj_val_dual) + offset_fixed if proven else None
        z = np.asarray(solution.z)[: row_index.size]
        duals = np.zeros(lp.num_rows)
        np.add.at(duals, row_index, -sign * row_sign * z)
        return SolveResult(reason=reason, solution=found, objective=objective, bound=bound, x=x,
                           solve_seconds=solution.solve_time, backend=self.name,
                           detail=str(solution.status), row_duals=duals)
