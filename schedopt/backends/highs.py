"""HiGHS through highspy: the default backend for LPs and MILPs."""

from __future__ import annotations

import time

import numpy as np

from schedopt.backends.base import LinearProgram, SolveOptions, SolveResult, Status
from schedopt.errors import SolveError

# highspy 1.14.0 (the release that coexists with ortools 9.15 and that cvxpy 1.9.3 needs) returns
# wrong "optimal" MILP answers on ~1.6% of tiny random MILPs (e.g. min y + 1.5z, 2y + z >= 7,
# y in [0, 2], z integer: 10.5 instead of 6.5); 1.13.1 and 1.15.1 are right. LPs are unaffected.
BROKEN_MIP_VERSIONS = ("1.14.0",)


def _status_map(highspy) -> dict:
    s = highspy.HighsModelStatus
    return {
        s.kOptimal: Status.OPTIMAL,
        s.kInfeasible: Status.INFEASIBLE,
        s.kUnbounded: Status.UNBOUNDED,
        s.kUnboundedOrInfeasible: Status.INFEASIBLE,
        s.kModelEmpty: Status.OPTIMAL,
        s.kTimeLimit: Status.FEASIBLE,
        s.kIterationLimit: Status.FEASIBLE,
        s.kSolutionLimit: Status.FEASIBLE,
        s.kInterrupt: Status.FEASIBLE,
        s.kObjectiveBound: Status.FEASIBLE,
        s.kObjectiveTarget: Status.FEASIBLE,
    }


def _to_highs_lp(highspy, lp: LinearProgram):
    A = lp.A.tocsc()
    A.sort_indices()
    model = highspy.HighsLp()
    model.num_col_ = lp.num_cols
    model.num_row_ = lp.num_rows
    model.col_cost_ = np.asarray(lp.c, dtype=np.float64)
    model.col_lower_ = np.asarray(lp.col_lower, dtype=np.float64)
    model.col_upper_ = np.asarray(lp.col_upper, dtype=np.float64)
    model.row_lower_ = np.asarray(lp.row_lower, dtype=np.float64)
    model.row_upper_ = np.asarray(lp.row_upper, dtype=np.float64)
    model.offset_ = float(lp.objective_offset)
    model.sense_ = highspy.ObjSense.kMaximize if lp.maximize else highspy.ObjSense.kMinimize
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.num_col_ = lp.num_cols
    model.a_matrix_.num_row_ = lp.num_rows
    model.a_matrix_.start_ = A.indptr.astype(np.int32)
    model.a_matrix_.index_ = A.indices.astype(np.int32)
    model.a_matrix_.value_ = A.data.astype(np.float64)
    if lp.is_mip:
        model.integrality_ = [highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous
                              for flag in lp.integer]
    return model


class HighsBackend:
    """HiGHS; `method` None lets HiGHS choose (dual simplex for LPs), "ipm" forces interior point."""

    def __init__(self, method: str | None = None):
        self.method = method
        self.name = "highs" if method is None else f"highs-{method}"

    def make_solver(self, lp: LinearProgram, options: SolveOptions):
        """A highspy.Highs holding `lp` with `options` applied, for callers that re-solve it."""
        import highspy

        h = highspy.Highs()
        h.setOptionValue("output_flag", bool(options.verbose))
        if options.time_limit is not None:
            h.setOptionValue("time_limit", float(options.time_limit))
        if options.mip_gap is not None:
            h.setOptionValue("mip_rel_gap", float(options.mip_gap))
        if options.threads is not None:
            h.setOptionValue("threads", int(options.threads))
        if self.method == "ipm":
            h.setOptionValue("solver", "ipm")
        h.passModel(_to_highs_lp(highspy, lp))
        return h

    def run(self, h, lp: LinearProgram) -> SolveResult:
        """Run a solver made by `make_solver` (possibly modified since) and read its result."""
        import highspy

        start = time.perf_counter()
        h.run()
        seconds = time.perf_counter() - start
        model_status = h.getModelStatus()
        status = _status_map(highspy).get(model_status, Status.ERROR)
        info = h.getInfo()
        has_primal = info.primal_solution_status == 2  # kSolutionStatusFeasible
        if status is Status.FEASIBLE and not has_primal:
            status = Status.ERROR
        x = np.array(h.getSolution().col_value) if status.has_solution else None
        objective = float(info.objective_function_value) if status.has_solution else None
        if lp.is_mip:
            bound = float(info.mip_dual_bound) if status.has_solution else None
            duals = None
        else:
            bound = objective if status is Status.OPTIMAL else None
            duals = np.array(h.getSolution().row_dual) if status is Status.OPTIMAL else None
        return SolveResult(status=status, objective=objective, bound=bound, x=x,
                           solve_seconds=seconds, backend=self.name,
                           termination=h.modelStatusToString(model_status), row_duals=duals)

    def solve(self, lp: LinearProgram, options: SolveOptions) -> SolveResult:
        if lp.is_mip:
            from importlib.metadata import version

            if version("highspy") in BROKEN_MIP_VERSIONS:
                raise SolveError(f"highspy {version('highspy')}'s MIP solver returns wrong optima; "
                                 "solve integer programs with --solver scip, cbc or cpsat")
        return self.run(self.make_solver(lp, options), lp)
