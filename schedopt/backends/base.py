"""The contract between formulations and solver backends.

A formulation builds a `LinearProgram` (sparse, vectorized); a backend solves it and returns a
`SolveResult`. Modelling code never imports a solver; backends are imported only when used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:  # scipy.sparse is imported where a matrix is built, not by this contract
    import scipy.sparse as sp

from schedopt.core.capabilities import Capability
from schedopt.core.sparse_import import scipy_sparse
from schedopt.core.outcome import (SolutionStatus, Status, Termination,  # noqa: F401 (re-exported)
                                   relative_gap, split_status, status_of)
from schedopt.errors import SolveError


@dataclass(frozen=True)
class SolveOptions:
    """Options every backend understands.

    time_limit: seconds (None = no limit); mip_gap: relative gap at which a MILP may stop;
    threads: solver threads (None = solver default); verbose: print the solver's log.
    start: a MIP start, one value per column (None = none). A hint only: `cpsat` and `scip`
    pass it to the solver (a MathOpt solution hint), every other backend ignores it; a hint
    that is infeasible or not integral never changes what is proven, only where the search
    begins.
    deterministic_time: a limit in CP-SAT's deterministic time units (its
    `max_deterministic_time`, roughly seconds of one core, counted from the work done), which
    unlike time_limit does not depend on the machine's load: with threads=1 a solve gives the
    same answer whatever the load. Only backends with the DETERMINISTIC_TIME capability take
    it (`cpsat`); `Solver.solve` and `solve_lp` refuse it for the others (SolveError).
    presolve: False switches the solver's presolve off (backends with the PRESOLVE_OFF
    capability; the others refuse it, SolveError). On small models solved many times it can
    cost more than the solve: smd's neighbourhood steps (CP-SAT, about 200 integer columns)
    take a third of the CPU time without it, at the same optima.
    """

    time_limit: float | None = None
    mip_gap: float | None = None
    threads: int | None = None
    verbose: bool = False
    start: np.ndarray | None = None
    deterministic_time: float | None = None
    presolve: bool = True


def check_options(backend, options: SolveOptions) -> None:
    """SolveError when `options` ask `backend` for something it lacks the capability for (a
    deterministic limit, presolve off); `Solver.solve`, `Solver.incremental` and `solve_lp`
    call it once."""
    if (options.deterministic_time is not None
            and Capability.DETERMINISTIC_TIME not in backend.capabilities):
        raise SolveError(f"deterministic_time is a CP-SAT limit; {backend.name} does not take it")
    if not options.presolve and Capability.PRESOLVE_OFF not in backend.capabilities:
        raise SolveError(f"presolve=False: {backend.name} cannot switch its presolve off")


@dataclass(frozen=True)
class ColumnArrays:
    """A sparse matrix as its compressed columns in numpy arrays, for a formulation that builds
    them directly and a backend that takes them as they are (HiGHS), with no scipy on the way:
    column k's entries are in rows `index[start[k]:start[k + 1]]` (increasing, no repeats),
    with values `value[start[k]:start[k + 1]]`. `tocsc()` and `tocsr()` give scipy matrices,
    as `LinearProgram.A` is for every other backend."""

    shape: tuple[int, int]
    start: np.ndarray
    index: np.ndarray
    value: np.ndarray

    @property
    def nnz(self) -> int:
        return int(self.value.size)

    def tocsc(self, copy: bool = False) -> sp.csc_matrix:
        return scipy_sparse().csc_matrix((self.value, self.index, self.start), shape=self.shape,
                                         copy=copy)

    def tocsr(self, copy: bool = False) -> sp.csr_matrix:
        return self.tocsc().tocsr()

    def toarray(self) -> np.ndarray:
        return self.tocsc().toarray()

    def __matmul__(self, other):
        return self.tocsc() @ other


def compressed_columns(A) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, index, value) of `A`'s columns, rows increasing within each: a `ColumnArrays`'
    own arrays, or a scipy matrix's as CSC."""
    if isinstance(A, ColumnArrays):
        return A.start, A.index, A.value
    A = A.tocsc()
    A.sort_indices()
    return A.indptr, A.indices, A.data


@dataclass(frozen=True)
class LinearProgram:
    """min or max  c @ x  s.t.  row_lower <= A @ x <= row_upper,  col_lower <= x <= col_upper.

    Infinite bounds are +-np.inf. `integer` marks integer columns (None = pure LP). `A` is a
    scipy sparse matrix, or a `ColumnArrays` (HiGHS reads it without scipy; anything else
    calls its `tocsc()` or `tocsr()`).
    """

    c: np.ndarray
    A: sp.csr_matrix | ColumnArrays
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    maximize: bool = False
    integer: np.ndarray | None = None
    objective_offset: float = 0.0
    col_names: tuple[str, ...] | None = None
    row_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        n = self.c.shape[0]
        m = self.A.shape[0]
        if self.A.shape[1] != n:
            raise ValueError(f"A has {self.A.shape[1]} columns, c has {n}")
        for name, arr, size in (("row_lower", self.row_lower, m), ("row_upper", self.row_upper, m),
                                ("col_lower", self.col_lower, n), ("col_upper", self.col_upper, n)):
            if arr.shape != (size,):
                raise ValueError(f"{name} has shape {arr.shape}, expected ({size},)")

    @property
    def num_cols(self) -> int:
        return self.c.shape[0]

    @property
    def num_rows(self) -> int:
        return self.A.shape[0]

    @property
    def is_mip(self) -> bool:
        return self.integer is not None and bool(np.any(self.integer))


# What a native status means when the solve stopped with (or without) a primal solution.
NativeStatus = tuple[Termination, SolutionStatus]


def read_status(native_map: dict, native, has_solution: bool) -> NativeStatus:
    """(termination, solution) for the backend's `native` status through its explicit map;
    an unmapped status is an error, and a status that promises a solution it did not return
    has none."""
    termination, solution = native_map.get(native, (Termination.ERROR, SolutionStatus.NONE))
    return termination, solution if has_solution else SolutionStatus.NONE


@dataclass(init=False)
class SolveResult:
    """What a backend returns. `objective` and `bound` include `objective_offset`.

    reason: why the solver stopped; solution: what it has (`status` joins them, the one
    word of the result document); detail: the backend's own words for its status, kept for
    diagnostics. `x` is the primal solution (None without one); `row_duals` are the
    constraint duals in the sign convention d(objective)/d(row bound) when the backend reports
    them (LPs only).

    Backends construct it with `reason=` and `solution=` (and `detail=`); the older form
    `SolveResult(status, ..., termination="text")` still works: the pair then comes from
    `split_status(status)` and the text goes to `detail`.
    """

    reason: Termination
    solution: SolutionStatus
    objective: float | None
    bound: float | None
    x: np.ndarray | None
    solve_seconds: float
    backend: str
    detail: str
    row_duals: np.ndarray | None
    extra: dict

    def __init__(self, status: Status | None = None, objective: float | None = None,
                 bound: float | None = None, x: np.ndarray | None = None,
                 solve_seconds: float = 0.0, backend: str = "",
                 termination: str = "", row_duals: np.ndarray | None = None,
                 extra: dict | None = None, *, reason: Termination | None = None,
                 solution: SolutionStatus | None = None, detail: str = ""):
        if (reason is None) == (status is None) or (reason is None) != (solution is None):
            raise TypeError("SolveResult takes either status= or reason= with solution=")
        if reason is not None:
            self.reason, self.solution = Termination(reason), SolutionStatus(solution)
        else:
            self.reason, self.solution = split_status(status)
        detail = detail or termination
        self.objective, self.bound, self.x = objective, bound, x
        self.solve_seconds, self.backend, self.detail = solve_seconds, backend, detail
        self.row_duals, self.extra = row_duals, dict(extra or {})

    @property
    def status(self) -> Status:
        return status_of(self.reason, self.solution)

    @status.setter
    def status(self, value: Status) -> None:
        self.reason, self.solution = split_status(value)

    @property
    def termination(self) -> str:
        """The backend's own words (`detail`), for callers written before the typed
        `reason`; read `reason` for why the solve stopped, `detail` for the text."""
        return self.detail

    @property
    def gap(self) -> float | None:
        return relative_gap(self.objective, self.bound)



class IncrementalProgram(Protocol):
    """An LP loaded into a backend that has ADD_COLUMNS (`Solver.incremental(lp)`): column
    generation adds columns and re-solves from the last basis, never rebuilding the model.

    add_columns(cost, lower, upper, block): n new columns, `block` their (num_rows x n) sparse
    coefficients; set_column_bounds(columns, lower, upper); set_option(name, value): a
    backend's own option (e.g. HiGHS' "simplex_strategy"); solve(): a SolveResult whose
    `row_duals` are the duals when optimal; program: the LP as it stands (each `solve` records
    it in the Solver, for MPS export)."""

    num_cols: int
    num_rows: int

    def add_columns(self, cost, lower, upper, block: sp.spmatrix) -> None: ...

    def set_column_bounds(self, columns, lower, upper) -> None: ...

    def set_option(self, name: str, value) -> None: ...

    def solve(self) -> SolveResult: ...

    @property
    def program(self) -> LinearProgram: ...
