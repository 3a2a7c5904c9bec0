"""OR-Tools through MathOpt: Glop (simplex LP), PDLP (first-order LP), CP-SAT (pure integer programs).

The model goes to MathOpt as a `ModelProto` filled straight from the arrays and is solved by the
proto-level entry point (`ortools.math_opt.core.python.solver.solve`), so neither building nor
reading a result touches Python objects per variable.
"""

from __future__ import annotations

import numpy as np

from schedopt.backends.base import LinearProgram, SolveOptions, SolveResult, Status
from schedopt.errors import SolveError

_SOLVER_TYPES = {"glop": "SOLVER_TYPE_GLOP", "pdlp": "SOLVER_TYPE_PDLP", "cpsat": "SOLVER_TYPE_CP_SAT",
                 "scip": "SOLVER_TYPE_GSCIP"}

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
        return self._read(result_pb2, result, lp, seconds)

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

    def _read(self, result_pb2, result, lp: LinearProgram, seconds: float) -> SolveResult:
        """Map a SolveResultProto to a SolveResult; "infeasible or unbounded" counts as infeasible
        (as in the HiGHS backend) unless MathOpt says the primal is feasible."""
        termination = result.termination
        reason = termination.reason
        status = {
            result_pb2.TERMINATION_REASON_OPTIMAL: Status.OPTIMAL,
            result_pb2.TERMINATION_REASON_FEASIBLE: Status.FEASIBLE,
            result_pb2.TERMINATION_REASON_INFEASIBLE: Status.INFEASIBLE,
            result_pb2.TERMINATION_REASON_UNBOUNDED: Status.UNBOUNDED,
        }.get(reason, Status.ERROR)
        if reason == result_pb2.TERMINATION_REASON_INFEASIBLE_OR_UNBOUNDED:
            primal_feasible = (termination.problem_status.primal_status
                               == result_pb2.FEASIBILITY_STATUS_FEASIBLE)
            status = Status.UNBOUNDED if primal_feasible else Status.INFEASIBLE
        solution = result.solutions[0] if result.solutions else None
        if status.has_solution and (solution is None or not solution.HasField("primal_solution")):
            status = Status.ERROR
        x = objective = bound = duals = None
        if status.has_solution:
            x = _dense(solution.primal_solution.variable_values, lp.num_cols)
            objective = float(solution.primal_solution.objective_value)
            dual_bound = float(termination.objective_bounds.dual_bound)
            bound = objective if status is Status.OPTIMAL and not lp.is_mip else dual_bound
            bound = bound if np.isfinite(bound) else None
            if status is Status.OPTIMAL and not lp.is_mip and solution.HasField("dual_solution"):
                duals = _dense(solution.dual_solution.dual_values, lp.num_rows)
        detail = result_pb2.TerminationReasonProto.Name(reason)
        if termination.detail:
            detail += f": {termination.detail}"
        return SolveResult(status=status, objective=objective, bound=bound, x=x,
                           solve_seconds=seconds, backend=self.name, termination=detail, row_duals=duals)
