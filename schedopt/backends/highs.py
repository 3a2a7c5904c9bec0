"""HiGHS through highspy: the default backend for LPs and MILPs, and the one whose loaded LP
takes new columns and re-solves from its last basis (`HighsBackend.incremental`)."""

from __future__ import annotations

import time

import numpy as np

from schedopt.backends.base import (LinearProgram, SolutionStatus, SolveOptions, SolveResult,
                                    Termination, compressed_columns, read_status)
from schedopt.core.sparse_import import scipy_sparse
from schedopt.core.capabilities import Capability
from schedopt.errors import SolveError

# highspy 1.14.0 (the release that coexists with ortools 9.15 and that cvxpy 1.9.3 needs) returns
# wrong "optimal" MILP answers on ~1.6% of tiny random MILPs (e.g. min y + 1.5z, 2y + z >= 7,
# y in [0, 2], z integer: 10.5 instead of 6.5); 1.13.1 and 1.15.1 are right. LPs are unaffected.
BROKEN_MIP_VERSIONS = ("1.14.0",)


def mip_is_broken() -> bool:
    """Whether the installed highspy is a release whose MIP solver returns wrong optima (read
    from the package metadata, without importing highspy)."""
    from importlib.metadata import version

    return version("highspy") in BROKEN_MIP_VERSIONS


def _status_map(highspy) -> dict:
    """HiGHS model status -> (termination, solution when HiGHS has a primal solution)."""
    s, T, S = highspy.HighsModelStatus, Termination, SolutionStatus
    return {
        s.kOptimal: (T.OPTIMAL, S.OPTIMAL),
        s.kModelEmpty: (T.OPTIMAL, S.OPTIMAL),
        s.kInfeasible: (T.INFEASIBLE, S.NONE),
        s.kUnboundedOrInfeasible: (T.INFEASIBLE, S.NONE),
        s.kUnbounded: (T.UNBOUNDED, S.NONE),
        s.kTimeLimit: (T.TIME_LIMIT, S.FEASIBLE),
        s.kIterationLimit: (T.ITERATION_LIMIT, S.FEASIBLE),
        s.kSolutionLimit: (T.ITERATION_LIMIT, S.FEASIBLE),
        s.kInterrupt: (T.INTERRUPTED, S.FEASIBLE),
        s.kObjectiveBound: (T.FEASIBLE, S.FEASIBLE),
        s.kObjectiveTarget: (T.FEASIBLE, S.FEASIBLE),
    }


def _to_highs_lp(highspy, lp: LinearProgram):
    start, index, value = compressed_columns(lp.A)
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
    model.a_matrix_.start_ = start.astype(np.int32)
    model.a_matrix_.index_ = index.astype(np.int32)
    model.a_matrix_.value_ = value.astype(np.float64)
    if lp.is_mip:
        model.integrality_ = [highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous
                              for flag in lp.integer]
    return model


class HighsBackend:
    """HiGHS; `method` None lets HiGHS choose (dual simplex for LPs), "ipm" forces interior point
    (LPs only: no warm start, no added columns)."""

    def __init__(self, method: str | None = None):
        self.method = method
        self.name = "highs" if method is None else f"highs-{method}"

    @property
    def capabilities(self) -> Capability:
        if self.method is not None:
            return Capability.LP | Capability.DUALS | Capability.PRESOLVE_OFF
        simplex = (Capability.LP | Capability.DUALS | Capability.WARM_START
                   | Capability.ADD_COLUMNS | Capability.PRESOLVE_OFF)
        return simplex if mip_is_broken() else simplex | Capability.MILP

    def make_solver(self, lp: LinearProgram, options: SolveOptions):
        """A highspy.Highs holding `lp` with `options` applied."""
        import highspy

        h = highspy.Highs()
        h.setOptionValue("output_flag", bool(options.verbose))
        if options.time_limit is not None:
            h.setOptionValue("time_limit", float(options.time_limit))
        if options.mip_gap is not None:
            h.setOptionValue("mip_rel_gap", float(options.mip_gap))
        if options.threads is not None:
            h.setOptionValue("threads", int(options.threads))
        if not options.presolve:
            h.setOptionValue("presolve", "off")
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
        info = h.getInfo()
        has_primal = info.primal_solution_status == 2  # kSolutionStatusFeasible
        reason, solution = read_status(_status_map(highspy), model_status,
                                       has_primal or model_status == highspy.HighsModelStatus.kOptimal
                                       or model_status == highspy.HighsModelStatus.kModelEmpty)
        found = solution is not SolutionStatus.NONE
        proven = solution is SolutionStatus.OPTIMAL
        x = np.array(h.getSolution().col_value) if found else None
        objective = float(info.objective_function_value) if found else None
        if lp.is_mip:
            bound = float(info.mip_dual_bound) if found else None
            duals = None
        else:
            bound = objective if proven else None
            duals = np.array(h.getSolution().row_dual) if proven else None
        return SolveResult(reason=reason, solution=solution, objective=objective, bound=bound, x=x,
                           solve_seconds=seconds, backend=self.name,
                           detail=h.modelStatusToString(model_status), row_duals=duals,
                           extra={"simplex_iterations": int(info.simplex_iteration_count)})

    def _check_supported(self, lp: LinearProgram) -> None:
        if not lp.is_mip:
            return
        if self.method is not None:
            raise SolveError(f"{self.name} solves only LPs; use highs, scip, cbc or cpsat for "
                             "integer columns")
        if mip_is_broken():
            from importlib.metadata import version

            raise SolveError(f"highspy {version('highspy')}'s MIP solver returns wrong optima; "
                             "solve integer programs with --solver scip, cbc or cpsat")

    def solve(self, lp: LinearProgram, options: SolveOptions) -> SolveResult:
        self._check_supported(lp)
        return self.run(self.make_solver(lp, options), lp)

    def incremental(self, lp: LinearProgram, settings: SolveOptions,
                    solver=None) -> "HighsIncremental":
        """`lp` loaded into HiGHS' simplex, to take columns and re-solve warm (module docstring
        of `schedopt.backends.base`, `IncrementalProgram`). `solver` (a `Solver`) records the
        program at each solve."""
        if self.method is not None:
            raise SolveError(f"{self.name} cannot re-solve warm; use highs")
        if lp.is_mip:
            raise SolveError("an incremental program is an LP; it has integer columns")
        return HighsIncremental(self, lp, settings, solver)


class HighsIncremental:
    """An LP loaded into one highspy.Highs object: new columns go in with `addCols`, and `solve`
    restarts the simplex from the last basis. `program` is the LP as it stands."""

    def __init__(self, backend: HighsBackend, lp: LinearProgram, settings: SolveOptions, solver):
        self._backend, self._solver, self._first = backend, solver, lp
        self._h = backend.make_solver(lp, settings)
        self._A = lp.A.tocsc()
        self._c, self._lower, self._upper = (np.asarray(v, dtype=np.float64)
                                             for v in (lp.c, lp.col_lower, lp.col_upper))
        self._program: LinearProgram | None = lp

    @property
    def num_cols(self) -> int:
        return self._c.size

    @property
    def num_rows(self) -> int:
        return self._first.num_rows

    def add_columns(self, cost, lower, upper, block) -> None:
        """Append n columns: `cost`, `lower`, `upper` (n values each, or one for all) and their
        coefficients in every row, `block` (num_rows x n, sparse)."""
        import highspy

        sp = scipy_sparse()
        block = sp.csc_matrix(block, dtype=np.float64)
        block.sum_duplicates()
        block.sort_indices()
        n = block.shape[1]
        if block.shape[0] != self.num_rows:
            raise SolveError(f"new columns have {block.shape[0]} rows, the program has "
                             f"{self.num_rows}")
        cost, lower, upper = (np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)).copy()
                              for v in (cost, lower, upper))
        status = self._h.addCols(n, cost, lower, upper, block.nnz, block.indptr[:-1].astype(np.int32),
                                 block.indices.astype(np.int32), block.data)
        if status != highspy.HighsStatus.kOk:
            raise SolveError(f"highs refused {n} new columns ({self._h.statusToString(status)})")
        self._A = sp.hstack([self._A, block], format="csc")
        self._c, self._lower, self._upper = (np.concatenate([a, b]) for a, b in
                                             ((self._c, cost), (self._lower, lower),
                                              (self._upper, upper)))
        self._program = None

    def set_column_bounds(self, columns, lower, upper) -> None:
        """Change the bounds of the columns `columns` (indices) to `lower`/`upper`."""
        import highspy

        columns = np.asarray(columns, dtype=np.int32).reshape(-1)
        n = columns.size
        if n and (columns.min() < 0 or columns.max() >= self.num_cols):
            raise SolveError(f"column index out of range [0, {self.num_cols})")
        lower, upper = (np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)).copy()
                        for v in (lower, upper))
        status = self._h.changeColsBounds(n, columns, lower, upper)
        if status != highspy.HighsStatus.kOk:
            raise SolveError(f"highs refused the new column bounds ({self._h.statusToString(status)})")
        self._lower, self._upper = self._lower.copy(), self._upper.copy()
        self._lower[columns], self._upper[columns] = lower, upper
        self._program = None

    def set_option(self, name: str, value) -> None:
        """Set the HiGHS option `name` (e.g. "simplex_strategy"); SolveError if HiGHS refuses."""
        import highspy

        if self._h.setOptionValue(name, value) != highspy.HighsStatus.kOk:
            raise SolveError(f"highs has no option {name!r} that takes {value!r}")

    @property
    def program(self) -> LinearProgram:
        """The LP as loaded now: the first program with its added columns and new bounds."""
        if self._program is None:
            lp = self._first
            self._program = LinearProgram(self._c, self._A.tocsr(), lp.row_lower, lp.row_upper,
                                          self._lower, self._upper, maximize=lp.maximize,
                                          objective_offset=lp.objective_offset,
                                          row_names=lp.row_names)
        return self._program

    def solve(self) -> SolveResult:
        """Re-solve from the last basis (recording the program in the Solver, if any);
        `row_duals` of an optimal result are the row duals."""
        lp = self.program
        if self._solver is not None:
            self._solver.record(lp)
        return self._backend.run(self._h, lp)
