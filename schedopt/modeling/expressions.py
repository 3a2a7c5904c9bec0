"""Array-level linear expressions over named variable blocks.

An `Expr` of shape S is a stack of prod(S) linear forms held as sparse triplets (row, column,
coefficient) plus a constant array of shape S. Arithmetic broadcasts like numpy; `sum(axis)`
remaps row indices. Nothing here loops over elements in Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from schedopt.core.sparse_import import scipy_sparse

if TYPE_CHECKING:
    import scipy.sparse as sp


class Expr:
    """Linear expressions: entry i (in C order over `shape`) is
    sum_k coef[k] x[col[k]] over the k with row[k] == i, plus const.ravel()[i]."""

    __array_priority__ = 100  # numpy arrays defer to our operators

    def __init__(self, rows, cols, coefs, const, shape: tuple[int, ...],
                 diagonal: bool = False):
        self.rows = _indices(rows)
        self.cols = _indices(cols)
        self.coefs = np.asarray(coefs, dtype=float)
        self.shape = tuple(int(n) for n in shape)
        self.const = np.broadcast_to(np.asarray(const, dtype=float), self.shape)
        self.diagonal = diagonal  # one term per entry, entry i's in position i (rows = arange)

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
        const = np.broadcast_to(self.const, shape)
        if not self.coefs.size:
            return Expr(self.rows, self.cols, self.coefs, const, shape)
        source = np.broadcast_to(np.arange(self.size).reshape(self.shape), shape).ravel()
        return self._take(source, const, shape)

    def _take(self, source: np.ndarray, const: np.ndarray, shape: tuple[int, ...]) -> "Expr":
        """Entry i of the result is entry source[i] of this expression (terms copied)."""
        if self.size == 1:  # a scalar: every entry gets all of its terms
            n = self.coefs.size
            return Expr(np.repeat(np.arange(source.size, dtype=_index_type(source.size)), n),
                        np.tile(self.cols, source.size),
                        np.tile(self.coefs, source.size), const, shape)
        order = np.argsort(self.rows, kind="stable")
        count = np.bincount(self.rows, minlength=self.size)
        first = np.concatenate([[0], np.cumsum(count)[:-1]])
        taken = count[source]
        total = int(taken.sum())
        starts = np.repeat(first[source] - np.concatenate([[0], np.cumsum(taken)[:-1]]), taken)
        terms = order[starts + np.arange(total)]
        return Expr(np.repeat(np.arange(source.size, dtype=_index_type(source.size)), taken),
                    self.cols[terms],
                    self.coefs[terms], const, shape)

    def matrix(self, num_cols: int) -> sp.csr_matrix:
        """(size, num_cols) CSR matrix of the linear part (duplicates summed)."""
        return scipy_sparse().csr_matrix((self.coefs, (self.rows, self.cols)),
                                         shape=(self.size, num_cols))

    # arithmetic ---------------------------------------------------------------------------------
    def __mul__(self, other) -> "Expr":
        if isinstance(other, Expr):
            raise TypeError("the product of two expressions is not linear")
        factor = np.asarray(other, dtype=float)
        shape = np.broadcast_shapes(self.shape, factor.shape)
        me = self.broadcast_to(shape)
        flat = np.broadcast_to(factor, shape).ravel()
        const = (me.const if _uniform(me.const) == 0.0 and np.isfinite(factor).all()
                 else me.const * factor)
        if me.diagonal:  # a variable block scaled entry by entry: no gather
            return Expr(me.rows, me.cols, me.coefs * flat, const, shape, diagonal=True)
        return Expr(me.rows, me.cols, me.coefs * flat[me.rows], const, shape)

    __rmul__ = __mul__

    def __truediv__(self, other) -> "Expr":
        return self * (1.0 / np.asarray(other, dtype=float))

    def __neg__(self) -> "Expr":
        const = self.const if _uniform(self.const) == 0.0 else -self.const
        return Expr(self.rows, self.cols, -self.coefs, const, self.shape, self.diagonal)

    def __add__(self, other) -> "Expr":
        other = as_expr(other)
        shape = np.broadcast_shapes(self.shape, other.shape)
        a, b = self.broadcast_to(shape), other.broadcast_to(shape)
        const = _sum_of(a.const, b.const)
        if not b.coefs.size:  # adding a constant: the terms stay as they are
            return Expr(a.rows, a.cols, a.coefs, const, shape, a.diagonal)
        if not a.coefs.size:
            return Expr(b.rows, b.cols, b.coefs, const, shape, b.diagonal)
        return Expr(np.concatenate([a.rows, b.rows]), np.concatenate([a.cols, b.cols]),
                    np.concatenate([a.coefs, b.coefs]), const, shape)

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
        rows, current = self.rows, list(self.shape)
        for axis in sorted(axes, reverse=True):  # drop one axis at a time, C order
            inner = int(np.prod(current[axis + 1:], dtype=np.int64))
            if inner == 1:
                rows = rows // current[axis]
            else:
                rows = (rows // (current[axis] * inner)) * inner + rows % inner
            del current[axis]
        value = _uniform(self.const)
        summed = int(np.prod([self.shape[a] for a in axes], dtype=np.int64))
        const = self.const.sum(axis=axes) if value is None else value * summed
        return Expr(rows, self.cols, self.coefs, const, shape)

    def __getitem__(self, key) -> "Expr":
        """Entries selected as numpy would select them from an array of this shape."""
        picked = np.arange(self.size).reshape(self.shape)[key]
        shape = np.shape(picked)
        if not self.coefs.size:
            return Expr(self.rows, self.cols, self.coefs, self.const[key], shape)
        return self._take(np.ravel(picked), self.const[key], shape)

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


def _index_type(limit: int):
    """int32 for indices below `limit` when they fit (sparse matrices then take them as they
    are), int64 otherwise."""
    return np.int32 if limit < 2**31 else np.int64


def _indices(values) -> np.ndarray:
    """Integer index arrays as given (int32 ones stay int32: half the memory traffic and
    no conversion when scipy builds a sparse matrix), anything else as int64."""
    values = np.asarray(values)
    return values if values.dtype in (np.int32, np.int64) else values.astype(np.int64)


def _uniform(values: np.ndarray) -> float | None:
    """The single value of an array broadcast from one number (None for any other array;
    checked by strides, in O(ndim))."""
    if values.size and all(stride == 0 for stride in values.strides):
        return float(values[(0,) * values.ndim])
    return None if values.size else 0.0


def _sum_of(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b for two constants of one shape, without materializing a zero."""
    if _uniform(b) == 0.0:
        return a
    if _uniform(a) == 0.0:
        return b
    return a + b


def as_expr(value) -> Expr:
    return value if isinstance(value, Expr) else Expr.constant(value)


class Variable(Expr):
    """A named block of model columns `offset .. offset + size - 1`, in C order over `shape`."""

    def __init__(self, name: str, shape: tuple[int, ...], offset: int):
        size = int(np.prod(shape, dtype=np.int64))
        index = np.arange(size, dtype=_index_type(offset + size))
        super().__init__(index, offset + index, np.ones(size), 0.0, shape, diagonal=True)
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
