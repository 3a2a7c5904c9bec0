"""The contract between formulations and solver backends.

A formulation builds a `LinearProgram` (sparse, vectorized); a backend solves it and returns a
`SolveResult`. Modelling code never imports a solver; backends are imported only when used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from schedopt.core.outcome import Status, relative_gap  # noqa: F401 (re-exported)


@dataclass(frozen=True)
class SolveOptions:
    """Options every backend understands.

    time_limit: seconds (None = no limit); mip_gap: relative gap at which a MILP may stop;
    threads: solver threads (None = solver default); verbose: print the solver's log.
    start: a MIP start, one value per column (None = none). A hint only: `cpsat` and `scip`
    pass it to the solver (a MathOpt solution hint), every other backend ignores it; a hint
    that is infeasible or not integral never changes what is proven, only where the search
    begins.
    """

    time_limit: float | None = None
    mip_gap: float | None = None
    threads: int | None = None
    verbose: bool = False
    start: np.ndarray | None = None


@dataclass(frozen=True)
class LinearProgram:
    """min or max  c @ x  s.t.  row_lower <= A @ x <= row_upper,  col_lower <= x <= col_upper.

    Infinite bounds are +-np.inf. `integer` marks integer columns (None = pure LP).
    """

    c: np.ndarray
    A: sp.csr_matrix
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


@dataclass
class SolveResult:
    """What a backend returns. `objective` and `bound` include `objective_offset`.

    `x` is the primal solution (None without one); `row_duals` are the constraint duals in the
    sign convention d(objective)/d(row bound) when the backend reports them (LPs only).
    `termination` is the backend's own reason for stopping, kept for diagnostics.
    """

    status: Status
    objective: float | None
    bound: float | None
    x: np.ndarray | None
    solve_seconds: float
    backend: str
    termination: str = ""
    row_duals: np.ndarray | None = None
    extra: dict = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        return relative_gap(self.objective, self.bound)
