"""Array-level linear expressions over named variable blocks.

An `Expr` of shape S is a stack of prod(S) linear forms held as sparse triplets (row, column,
coefficient) plus a constant array of shape S. Arithmetic broadcasts like numpy; `sum(axis)`
remaps row indices. Nothing here loops over elements in Python.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


class Expr:
    """Linear expressions: entry i (in C order over `shape`) is
    sum_k coef[k] x[col[k]] over the k with row[k] == i, plus const.ravel()[i]."""

    __array_priority__ = 100  # numpy arrays defer to our operators

    def __init__(self, rows, cols, coefs, const, shape: tuple[int, ...]):
        self.rows = np.asarray(rows, dtype=np.int64)
        self.cols = np.asarray(cols, dtype=np.int64)
        self.coefs = np.asarray(coefs, dtype=float)
        self.shape = tuple(int(n) for n in shape)
        self.const = np.broadcast_to(np.asarray(const, dtype=float), self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @staticmethod
    def constant(values) -> "Expr":
        values = np.asarray(values, dtype=float)
        empty = np.zeros(0)
        return Expr(empty, empty, empty, values, values.shape)

    def broadcast_to(self, shape: tuple[int, ...]) -> "Expr":
        """The expression repeated along new or length-1 axes, as numpy broadcasts."""
        shape = tuple(shape)
        if shape == self.shape:
            return self
        source = np.broadcast_to(np.arange(self.size).reshape(self.shape), shape).ravel()
        matrix = self.matrix(int(self.cols.max()) + 1 if self.cols.size else 0)
        picked = matrix[source].tocoo()
        return Expr(picked.row, picked.col, picked.data, np.broadcast_to(self.const, shape), shape)

    def matrix(self, num_cols: int) -> sp.csr_matrix:
        """(size, num_cols) CSR matrix of the linear part (duplicates summed)."""
        return sp.csr_matrix((self.coefs, (self.rows, self.cols)), shape=(self.size, num_cols))

    # arithmetic ---------------------------------------------------------------------------------
    def __mul__(self, other) -> "Expr":
        if isinstance(other, Expr):
            raise TypeError("the product of two expressions is not linear")
        factor = np.asarray(other, dtype=float)
        shape = np.broadcast_shapes(self.shape, factor.shape)
        me = self.broadcast_to(shape)
        flat = np.broadcast_to(factor, shape).ravel()
        return Expr(me.rows, me.cols, me.coefs * flat[me.rows], me.const * factor, shape)

    __rmul__ = __mul__

    def __truediv__(self, other) -> "Expr":
        return self * (1.0 / np.asarray(other, dtype=float))

    def __neg__(self) -> "Expr":
        return Expr(self.rows, self.cols, -self.coefs, -self.const, self.shape)

    def __add__(self, other) -> "Expr":
        other = as_expr(other)
        shape = np.broadcast_shapes(self.shape, other.shape)
        a, b = self.broadcast_to(shape), other.broadcast_to(shape)
        return Expr(np.concatenate([a.rows, b.rows]), np.concatenate([a.cols, b.cols]),
                    np.concatenate([a.coefs, b.coefs]), a.const + b.const, shape)

    __radd__ = __add__

    def __sub__(self, other) -> "Expr":
        return self + (-as_expr(other))

    def __rsub__(self, other) -> "Expr":
        return as_expr(other) + (-self)

    def sum(self, axis: int | tuple[int, ...] | None = None) -> "Expr":
        """Sum over `axis` (all axes when None), as numpy's sum."""
        axes = tuple(range(len(self.shape))) if axis is None else (
            (axis,) if isinstance(axis, int) else tuple(axis))
        axes = tuple(a % len(self.shape) for a in axes)
        if not axes:
            return self
        keep = [d for d in range(len(self.shape)) if d not in axes]
        shape = tuple(self.shape[d] for d in keep)
        index = np.unravel_index(self.rows, self.shape)
        rows = (np.ravel_multi_index(tuple(index[d] for d in keep), shape) if keep
                else np.zeros_like(self.rows))
        return Expr(rows, self.cols, self.coefs, self.const.sum(axis=axes), shape)

    def __getitem__(self, key) -> "Expr":
        """Entries selected as numpy would select them from an array of this shape."""
        picked = np.arange(self.size).reshape(self.shape)[key]
        shape = np.shape(picked)
        matrix = self.matrix(int(self.cols.max()) + 1 if self.cols.size else 0)
        sub = matrix[np.ravel(picked)].tocoo()
        return Expr(sub.row, sub.col, sub.data, self.const[key], shape)

    # constraints --------------------------------------------------------------------------------
    def __le__(self, other) -> "Constraint":
        return Constraint(self - as_expr(other), -np.inf, 0.0)

    def __ge__(self, other) -> "Constraint":
        return Constraint(self - as_expr(other), 0.0, np.inf)

    def __eq__(self, other) -> "Constraint":  # type: ignore[override]
        return Constraint(self - as_expr(other), 0.0, 0.0)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Expr shape={self.shape} terms={self.coefs.size}>"


def as_expr(value) -> Expr:
    return value if isinstance(value, Expr) else Expr.constant(value)


class Variable(Expr):
    """A named block of model columns `offset .. offset + size - 1`, in C order over `shape`."""

    def __init__(self, name: str, shape: tuple[int, ...], offset: int):
        size = int(np.prod(shape, dtype=np.int64))
        index = np.arange(size, dtype=np.int64)
        super().__init__(index, offset + index, np.ones(size), 0.0, shape)
        self.name = name
        self.offset = offset

    @property
    def columns(self) -> slice:
        return slice(self.offset, self.offset + self.size)

    def __repr__(self) -> str:
        return f"<Variable {self.name} shape={self.shape}>"


class Constraint:
    """lower <= expr <= upper, entry by entry (the expression's constant moved to the bounds)."""

    def __init__(self, expr: Expr, lower, upper):
        self.expr = expr
        self.lower = np.broadcast_to(np.asarray(lower, dtype=float), expr.shape) - expr.const
        self.upper = np.broadcast_to(np.asarray(upper, dtype=float), expr.shape) - expr.const

    def __repr__(self) -> str:
        return f"<Constraint shape={self.expr.shape}>"
