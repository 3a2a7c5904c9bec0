"""`Model`: named variable blocks and array-level constraints, compiled in one pass into the
sparse `LinearProgram` every backend solves.

    m = Model()
    X = m.variable("X", (M, J), upper=np.where(runnable, np.inf, 0))
    t = m.variable("t")
    m.add("time", X.sum(axis=1) <= 1)
    m.add("level", (T * X).sum(axis=1) >= w * t)
    m.maximize(t)
    solution = m.solve(solver)        # solution[X] is an (M, J) array, solution.dual("level")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from schedopt.backends.base import LinearProgram, SolveResult
from schedopt.core.outcome import Status
from schedopt.core.sparse_import import scipy_sparse
from schedopt.modeling.expressions import Constraint, Expr, Variable, as_expr

if TYPE_CHECKING:
    import scipy.sparse as sp


@dataclass(frozen=True)
class _Block:
    variable: Variable
    lower: np.ndarray
    upper: np.ndarray
    integer: bool


class Model:
    """A linear (or mixed-integer) program built from whole arrays."""

    def __init__(self) -> None:
        self._blocks: dict[str, _Block] = {}
        self._constraints: dict[str, Constraint] = {}
        self._objective: Expr = Expr.constant(0.0)
        self._maximize = False
        self._columns = 0

    @property
    def num_cols(self) -> int:
        return self._columns

    def variable(self, name: str, shape: int | tuple[int, ...] = (), lower=0.0, upper=np.inf,
                 integer: bool = False) -> Variable:
        """A block of `shape` columns with elementwise bounds (broadcast to `shape`)."""
        if name in self._blocks:
            raise ValueError(f"variable {name!r} already exists")
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        var = Variable(name, shape, self._columns)
        self._columns += var.size
        self._blocks[name] = _Block(var, np.broadcast_to(np.asarray(lower, float), shape).ravel(),
                                    np.broadcast_to(np.asarray(upper, float), shape).ravel(),
                                    integer)
        return var

    def add(self, name: str, constraint: Constraint) -> Constraint:
        """Add `constraint` (a whole block of rows) under `name`."""
        if name in self._constraints:
            raise ValueError(f"constraint {name!r} already exists")
        if not isinstance(constraint, Constraint):
            raise TypeError(f"constraint {name!r}: expected a comparison of expressions, "
                            f"got {type(constraint).__name__}")
        self._constraints[name] = constraint
        return constraint

    def maximize(self, expr) -> None:
        self._objective, self._maximize = as_expr(expr).sum(), True

    def minimize(self, expr) -> None:
        self._objective, self._maximize = as_expr(expr).sum(), False

    def row_slices(self) -> dict[str, slice]:
        """Rows of each named constraint block in the compiled program."""
        slices, start = {}, 0
        for name, con in self._constraints.items():
            slices[name] = slice(start, start + con.expr.size)
            start += con.expr.size
        return slices

    def compile(self, scale_rows: bool = False) -> LinearProgram:
        """One sparse LinearProgram: blocks' columns in creation order, constraint blocks' rows
        in the order added. scale_rows divides each row and its bounds by its largest
        |coefficient| (O(1) coefficients for interior-point solvers)."""
        sp = scipy_sparse()
        n = self._columns
        cons = list(self._constraints.values())
        A = (sp.vstack([_block_matrix(c.expr, n) for c in cons], format="csr") if cons
             else sp.csr_matrix((0, n)))
        A.sum_duplicates()
        A.eliminate_zeros()  # coefficients that cancelled, or were 0 in a data array
        lower = np.concatenate([c.lower.ravel() for c in cons] or [np.zeros(0)])
        upper = np.concatenate([c.upper.ravel() for c in cons] or [np.zeros(0)])
        if scale_rows:
            A, lower, upper = _scaled(A, lower, upper)
        c = np.bincount(self._objective.cols, weights=self._objective.coefs, minlength=n)
        blocks = list(self._blocks.values())
        integer = (np.concatenate([np.full(b.variable.size, b.integer) for b in blocks])
                   if any(b.integer for b in blocks) else np.zeros(0, bool))
        return LinearProgram(
            c=c, A=A, row_lower=lower, row_upper=upper,
            col_lower=np.concatenate([b.lower for b in blocks] or [np.zeros(0)]),
            col_upper=np.concatenate([b.upper for b in blocks] or [np.zeros(0)]),
            maximize=self._maximize, integer=integer if integer.any() else None,
            objective_offset=float(self._objective.const.sum()))

    def solve(self, solver, scale_rows: bool = False) -> "Solution":
        """Compile and solve with `solver` (a `schedopt.backends.session.Solver`)."""
        lp = self.compile(scale_rows)
        return Solution(self, solver.solve(lp), lp)


class Solution:
    """A solve of a Model: `solution[var]` is the variable's values in its shape (None without
    a solution), `dual(name)` a constraint block's duals (d objective / d bound, when the
    backend reports them), plus the backend's status, objective, bound and timing."""

    def __init__(self, model: Model, result: SolveResult, program: LinearProgram):
        self.model = model
        self.result = result
        self.program = program

    @property
    def status(self) -> Status:
        return self.result.status

    @property
    def objective(self) -> float | None:
        return self.result.objective

    @property
    def bound(self) -> float | None:
        return self.result.bound

    def __getitem__(self, var: Variable) -> np.ndarray | None:
        if self.result.x is None:
            return None
        return self.result.x[var.columns].reshape(var.shape)

    def dual(self, name: str) -> np.ndarray | None:
        if self.result.row_duals is None:
            return None
        con = self.model._constraints[name]
        return self.result.row_duals[self.model.row_slices()[name]].reshape(con.expr.shape)


def _block_matrix(expr: Expr, num_cols: int) -> sp.csr_matrix:
    """The (expr.size, num_cols) CSR matrix of a constraint block's linear part.

    An expression is mostly a few concatenated runs of terms, each sorted by row (a sum over
    the last axis, a broadcast scalar): each run becomes a CSR matrix directly (its row
    pointer counted, no sort) and the runs are added. Other term orders go through COO."""
    sp = scipy_sparse()
    rows = expr.rows
    shape = (expr.size, num_cols)
    starts = np.flatnonzero(rows[1:] < rows[:-1]) + 1
    if starts.size > 3:
        return sp.coo_matrix((expr.coefs, (rows, expr.cols)), shape=shape).tocsr()
    edges = np.concatenate([[0], starts, [rows.size]])
    index = np.int32 if max(rows.size, num_cols) < 2**31 else np.int64
    total = None
    for first, end in zip(edges[:-1], edges[1:]):
        indptr = np.zeros(expr.size + 1, dtype=index)
        np.cumsum(np.bincount(rows[first:end], minlength=expr.size), out=indptr[1:])
        run = sp.csr_matrix((expr.coefs[first:end], expr.cols[first:end].astype(index, copy=False),
                             indptr), shape=shape)
        total = run if total is None else total + run
    return total


def _scaled(A: sp.csr_matrix, lower: np.ndarray, upper: np.ndarray):
    row_max = np.zeros(A.shape[0])
    nonempty = np.diff(A.indptr) > 0
    if A.nnz:
        row_max[nonempty] = np.maximum.reduceat(np.abs(A.data), A.indptr[:-1][nonempty])
    factor = np.where(row_max > 0, 1.0 / np.where(row_max > 0, row_max, 1.0), 1.0)
    return scipy_sparse().diags(factor) @ A, lower * factor, upper * factor
