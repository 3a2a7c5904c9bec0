"""OR-Tools through MathOpt: Glop (simplex LP), PDLP (first-order LP), CP-SAT (pure integer programs).

The model goes to MathOpt as a `ModelProto` filled straight from the arrays and is solved by the
proto-level entry point (`ortools.math_opt.core.python.solver.solve`), so neither building nor
reading a result touches Python objects per variable.
"""

from __future__ import annotations

import numpy as np

from schedopt.backends.base import (LinearProgram, SolutionStatus, SolveOptions, SolveResult,
                                    Termination, read_status)
from schedopt.core.capabilities import Capability
from schedopt.errors import SolveError

_SOLVER_TYPES = {"glop": "SOLVER_TYPE_GLOP", "pdlp": "SOLVER_TYPE_PDLP", "cpsat": "SOLVER_TYPE_CP_SAT",
                 "scip": "SOLVER_TYPE_GSCIP"}

_CAPABILITIES = {
    "glop": Capability.LP | Capability.DUALS | Capability.PRESOLVE_OFF,
    "pdlp": Capability.LP | Capability.DUALS,
    "cpsat": (Capability.MILP | Capability.MIP_START | Capability.DETERMINISTIC_TIME  # integer only
              | Capability.PRESOLVE_OFF),
    "scip": Capability.LP | Capability.MILP | Capability.MIP_START | Capability.PRESOLVE_OFF,
}

# PDLP's own stopping tolerance (1e-6 on residuals and gap) left objectives up to 1.5e-6 (relative)
# off simplex on small random LPs; at 1e-8 they were within 1.5e-8, for a few more iterations.
PDLP_TOLERANCE = 1e-8


def _model_proto(model_pb2, lp: LinearProgram):
    """A MathOpt ModelProto of `lp`: variable and row ids are the column and row indices."""
    model = model_pb2.ModelProto()
    n, m = lp.num_cols, lp.num_rows
    integer = np.zeros(n, dtype=bool) if lp.integer is None else np.asarray(lp.integer, dtype=bool)
    model.variables.ids.extend(np.arange(n))
    model.variables.lower_bounds.extend(np.asarray(lp.col_lower, dtype=np.float64))
    model.variables.upper_bounds.extend(np.asarray(lp.col_upper, dtype=np.float64))
    model.variables.integers.extend(integer)
    c = np.asarray(lp.c, dtype=np.float64)
    nonzero = np.flatnonzero(c)
    model.objective.maximize = bool(lp.maximize)
    model.objective.offset = float(lp.objective_offset)
    model.objective.linear_coefficients.ids.extend(nonzero)
    model.objective.linear_coefficients.values.extend(c[nonzero])
    model.linear_constraints.ids.extend(np.arange(m))
    model.linear_constraints.lower_bounds.extend(np.asarray(lp.row_lower, dtype=np.float64))
    model.linear_constraints.upper_bounds.extend(np.asarray(lp.row_upper, dtype=np.float64))
    A = lp.A.tocsr(copy=True)  # MathOpt wants entries sorted by (row, column), no duplicates or zeros
    A.sum_duplicates()
    A.eliminate_zeros()
    matrix = model.linear_constraint_matrix
    matrix.row_ids.extend(np.repeat(np.arange(m), np.diff(A.indptr)))
    matrix.column_ids.extend(A.indices)
    matrix.coefficients.extend(A.data)
    return model


def _dense(sparse_vector, size: int) -> np.ndarray:
    """A MathOpt SparseDoubleVectorProto as a dense array (missing ids are 0)."""
    out = np.zeros(size)
    out[np.asarray(sparse_vector.ids, dtype=np.int64)] = np.asarray(sparse_vector.values)
    return out


def _seconds(result) -> float:
    """The solve time MathOpt measured (model loading included), in seconds."""
    return result.solve_stats.solve_time.ToTimedelta().total_seconds()


class MathOptBackend:
    """One of Glop, PDLP, CP-SAT or SCIP. CP-SAT takes continuous columns only through an
    experimental discretization, so it is refused for models with any continuous column."""

    def __init__(self, solver: str):
        if solver not in _SOLVER_TYPES:
            raise SolveError(f"unknown MathOpt solver {solver!r}; expected one of "
                             f"{', '.join(_SOLVER_TYPES)}")
        self.solver = solver
        self.name = solver
        self.capabilities = _CAPABILITIES[solver]

    def _check_supported(self, lp: LinearProgram) -> None:
        if self.solver == "cpsat":
            if lp.integer is None or not np.all(lp.integer):
                raise SolveError("cpsat solves only pure integer programs (every column integer); "
                                 "use highs, cbc, glop or pdlp for models with continuous columns")
        elif lp.is_mip and self.solver != "scip":
            raise SolveError(f"{self.solver} solves only LPs; use highs, cbc or cpsat for integer "
                             "columns")

    def _parameters(self, parameters_pb2, lp: LinearProgram, options: SolveOptions):
        params = parameters_pb2.SolveParametersProto(enable_output=bool(options.verbose))
        if options.time_limit is not None:
            params.time_limit.FromNanoseconds(int(options.time_limit * 1e9))
        if options.deterministic_time is not None:
            params.cp_sat.max_deterministic_time = float(options.deterministic_time)
        if not options.presolve:
            params.presolve = parameters_pb2.EMPHASIS_OFF
        if options.mip_gap is not None and lp.is_mip:
            params.relative_gap_tolerance = float(options.mip_gap)
        if options.threads is not None:
            params.threads = int(options.threads)
        if self.solver == "pdlp":
            criteria = params.pdlp.termination_criteria.simple_optimality_criteria
            criteria.eps_optimal_absolute = PDLP_TOLERANCE
            criteria.eps_optimal_relative = PDLP_TOLERANCE
        return params

    def solve(self, lp: LinearProgram, options: SolveOptions) -> SolveResult:
        """Solve `lp`; `options.deterministic_time` is read on cpsat only (DETERMINISTIC_TIME)."""
        self._check_supported(lp)
        from ortools.math_opt import model_pb2, parameters_pb2, result_pb2
        model = _model_proto(model_pb2, lp)
        params = self._parameters(parameters_pb2, lp, options)
        hints = self._model_parameters(lp, options)
        result = self._run(model, params, hints)
        seconds = _seconds(result)
        undecided = result.termination.reason == result_pb2.TERMINATION_REASON_INFEASIBLE_OR_UNBOUNDED
        if undecided and self.solver == "glop":
            # Glop's presolve cannot tell infeasible from unbounded; its simplex can.
            params.presolve = parameters_pb2.EMPHASIS_OFF
            result = self._run(model, params, hints)
            seconds += _seconds(result)
        timed = options.time_limit is not None or options.deterministic_time is not None
        return self._read(result_pb2, result, lp, seconds, timed=timed)

    def _model_parameters(self, lp: LinearProgram, options: SolveOptions):
        """ModelSolveParametersProto: `options.start` as a solution hint (MILPs on cpsat/scip)."""
        from ortools.math_opt.python import model_parameters

        proto = model_parameters.ModelSolveParameters().to_proto()
        if options.start is None or not lp.is_mip:
            return proto
        start = np.asarray(options.start, dtype=np.float64)
        if start.shape != (lp.num_cols,):
            raise SolveError(f"start has shape {start.shape}, expected ({lp.num_cols},)")
        if not np.all(np.isfinite(start)):
            raise SolveError("start must be finite")
        hint = proto.solution_hints.add()
        hint.variable_values.ids.extend(np.arange(lp.num_cols))
        hint.variable_values.values.extend(start)
        return proto

    def _run(self, model, params, model_params):
        from ortools.math_opt import parameters_pb2
        from ortools.math_opt.core.python import solver
        from ortools.math_opt.python import callback, init_arguments
        from pybind11_abseil.status import StatusNotOk

        try:
            return solver.solve(model, getattr(parameters_pb2, _SOLVER_TYPES[self.solver]),
                                init_arguments.StreamableSolverInitArguments().to_proto(), params,
                                model_params, None,
                                callback.CallbackRegistration().to_proto(), None, None)
        except StatusNotOk as exc:
            raise SolveError(f"{self.name} could not solve the model: {exc}") from exc

    def _read(self, result_pb2, result, lp: LinearProgram, seconds: float,
              timed: bool) -> SolveResult:
        """Map a SolveResultProto to a SolveResult through `_reasons`; "infeasible or
        unbounded" counts as infeasible (as in the HiGHS backend) unless MathOpt says the primal
        is feasible."""
        termination = result.termination
        solution = result.solutions[0] if result.solutions else None
        has_primal = solution is not None and solution.HasField("primal_solution")
        reasons = _reasons(result_pb2, termination, timed)
        reason, found = read_status(reasons, termination.reason, has_primal)
        x = objective = bound = duals = None
        if found is not SolutionStatus.NONE:
            x = _dense(solution.primal_solution.variable_values, lp.num_cols)
            objective = float(solution.primal_solution.objective_value)
            dual_bound = float(termination.objective_bounds.dual_bound)
            proven = found is SolutionStatus.OPTIMAL
            bound = objective if proven and not lp.is_mip else dual_bound
            bound = bound if np.isfinite(bound) else None
            if proven and not lp.is_mip and solution.HasField("dual_solution"):
                duals = _dense(solution.dual_solution.dual_values, lp.num_rows)
        detail = result_pb2.TerminationReasonProto.Name(termination.reason)
        if termination.detail:
            detail += f": {termination.detail}"
        return SolveResult(reason=reason, solution=found, objective=objective, bound=bound, x=x,
                           solve_seconds=seconds, backend=self.name, detail=detail, row_duals=duals)


def _reasons(result_pb2, termination, timed: bool) -> dict:
    """MathOpt termination reason -> (termination, solution when there is a primal solution).
    FEASIBLE and NO_SOLUTION_FOUND name the limit that stopped the solve in `termination.limit`;
    Glop and CP-SAT leave it undetermined, and as schedopt sets no limit but a time limit
    (wall-clock or CP-SAT's deterministic one), an undetermined limit under one (`timed`) is
    that one."""
    r, T, S = result_pb2, Termination, SolutionStatus
    limit = {r.LIMIT_TIME: T.TIME_LIMIT, r.LIMIT_ITERATION: T.ITERATION_LIMIT,
             r.LIMIT_NODE: T.ITERATION_LIMIT, r.LIMIT_SOLUTION: T.ITERATION_LIMIT,
             r.LIMIT_INTERRUPTED: T.INTERRUPTED,
             r.LIMIT_UNDETERMINED: T.TIME_LIMIT if timed else None,
             r.LIMIT_UNSPECIFIED: T.TIME_LIMIT if timed else None}.get(termination.limit)
    primal_feasible = termination.problem_status.primal_status == r.FEASIBILITY_STATUS_FEASIBLE
    return {
        r.TERMINATION_REASON_OPTIMAL: (T.OPTIMAL, S.OPTIMAL),
        r.TERMINATION_REASON_FEASIBLE: (limit or T.FEASIBLE, S.FEASIBLE),
        r.TERMINATION_REASON_NO_SOLUTION_FOUND: (limit or T.ERROR, S.NONE),
        r.TERMINATION_REASON_INFEASIBLE: (T.INFEASIBLE, S.NONE),
        r.TERMINATION_REASON_UNBOUNDED: (T.UNBOUNDED, S.NONE),
        r.TERMINATION_REASON_INFEASIBLE_OR_UNBOUNDED:
            (T.UNBOUNDED if primal_feasible else T.INFEASIBLE, S.NONE),
        r.TERMINATION_REASON_IMPRECISE: (T.NUMERICAL, S.NONE),
        r.TERMINATION_REASON_NUMERICAL_ERROR: (T.NUMERICAL, S.NONE),
        r.TERMINATION_REASON_OTHER_ERROR: (T.ERROR, S.NONE),
    }
