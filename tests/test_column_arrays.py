"""`ColumnArrays`, a constraint matrix as plain compressed-column arrays: the same matrix as
scipy's where a backend needs one, read as it is by HiGHS, and what the max-min decomposition
builds its restricted LPs as (checked against the LP written out entry by entry)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from schedopt.backends import LinearProgram, Status
from schedopt.backends.base import ColumnArrays, compressed_columns
from schedopt.backends.session import Solver
from schedopt.policies.gavel import levels


def _random_matrix(rng, rows: int, cols: int) -> sp.csc_matrix:
    dense = np.where(rng.random((rows, cols)) < 0.4, rng.uniform(-3, 3, (rows, cols)), 0.0)
    return sp.csc_matrix(dense)


def _as_arrays(matrix: sp.csc_matrix) -> ColumnArrays:
    matrix = matrix.tocsc()
    matrix.sort_indices()
    return ColumnArrays(matrix.shape, matrix.indptr.copy(), matrix.indices.copy(),
                        matrix.data.copy())


@pytest.mark.parametrize("seed", range(5))
def test_column_arrays_are_the_scipy_matrix_they_hold(seed):
    rng = np.random.default_rng(seed)
    matrix = _random_matrix(rng, 7, 5)
    arrays = _as_arrays(matrix)
    dense = matrix.toarray()
    assert arrays.nnz == matrix.nnz
    np.testing.assert_array_equal(arrays.toarray(), dense)
    np.testing.assert_array_equal(arrays.tocsr().toarray(), dense)
    assert sp.issparse(arrays.tocsc()) and arrays.tocsc().format == "csc"
    x = rng.normal(size=5)
    np.testing.assert_allclose(arrays @ x, dense @ x, rtol=1e-14)
    copied = arrays.tocsc(copy=True)
    copied.data[:] = 0.0
    np.testing.assert_array_equal(arrays.toarray(), dense)  # a copy leaves the arrays alone


def test_compressed_columns_sorts_a_scipy_matrix_and_passes_arrays_through():
    # rows deliberately out of order within column 0
    matrix = sp.csc_matrix((np.array([2.0, 1.0, 5.0]), np.array([2, 0, 1]), np.array([0, 2, 3])),
                           shape=(3, 2))
    start, index, value = compressed_columns(matrix)
    assert start.tolist() == [0, 2, 3] and index.tolist() == [0, 2, 1]
    assert value.tolist() == [1.0, 2.0, 5.0]
    arrays = ColumnArrays((3, 2), start, index, value)
    assert all(a is b for a, b in zip(compressed_columns(arrays), (start, index, value)))


@pytest.mark.parametrize("backend", ["highs", "clarabel"])
def test_an_lp_given_as_column_arrays_solves_as_the_scipy_one(backend):
    # max x + 2y  s.t.  x + y <= 4,  x + 3y <= 6,  x, y >= 0: optimum at (3, 1), value 5,
    # duals 1/2 and 1/2 (each row's marginal value)
    matrix = sp.csc_matrix(np.array([[1.0, 1.0], [1.0, 3.0]]))
    common = dict(c=np.array([1.0, 2.0]), row_lower=np.full(2, -np.inf),
                  row_upper=np.array([4.0, 6.0]), col_lower=np.zeros(2),
                  col_upper=np.full(2, np.inf), maximize=True)
    solver = Solver(backend)
    results = [solver.solve(LinearProgram(A=A, **common)) for A in (matrix, _as_arrays(matrix))]
    for result in results:
        assert result.status is Status.OPTIMAL
        assert result.objective == pytest.approx(5.0, rel=1e-6)
        np.testing.assert_allclose(result.x, [3.0, 1.0], atol=1e-5)
        np.testing.assert_allclose(np.abs(result.row_duals), [0.5, 0.5], atol=1e-5)


def _restricted_lp_entry_by_entry(cls, capacity, free, fixed) -> np.ndarray:
    """The restricted LP's matrix as its docstring and the module's derivation state it, one
    entry at a time: a level row, a time row per free class, a capacity row per GPU type;
    a column per (free class, GPU type) it gains on, and t last."""
    idx = np.flatnonzero(free)
    F, J = len(idx), capacity.size
    cells = [(f, j) for f in range(F) for j in range(J) if cls.gain[idx[f], j] > 0]
    A = np.zeros((2 * F + J, len(cells) + 1))
    cap = np.where(capacity > 0, capacity, 1.0)
    for k, (f, j) in enumerate(cells):
        c = idx[f]
        A[f, k] = cls.gain[c, j] / cls.gain[c].max()
        A[F + f, k] = 1.0
        A[2 * F + j, k] = cls.count[c] * cls.gpus[c] / cap[j]
    for f in range(F):
        c = idx[f]
        A[f, -1] = -float(cls.rises[c]) / cls.gain[c].max()
    weight = cls.count * cls.gpus * fixed.mask
    for j in range(J):
        A[2 * F + j, -1] = sum(weight[c] * fixed.X1[c, j] for c in range(len(weight))) / cap[j]
    return A


@pytest.mark.parametrize("seed", range(6))
def test_the_restricted_lp_is_the_one_written_out_entry_by_entry(seed):
    rng = np.random.default_rng(seed)
    C, J = 6, 3
    gain = np.where(rng.random((C, J)) < 0.7, rng.uniform(0.2, 2.0, (C, J)), 0.0)
    gain[np.arange(C), rng.integers(0, J, C)] = rng.uniform(0.2, 2.0, C)  # each runs somewhere
    rises = rng.random(C) < 0.7
    cls = levels._Classes(gain=gain, gpus=rng.integers(1, 4, C).astype(float), rises=rises,
                          floor=np.zeros(C), count=rng.integers(1, 5, C).astype(float),
                          of_job=np.arange(C))
    free = rng.random(C) < 0.6
    free[0] = True
    X1 = np.where(~free[:, None] & rises[:, None], rng.uniform(0, 0.3, (C, J)), 0.0)
    fixed = levels._Fixed(mask=~free, X0=rng.uniform(0, 0.2, (C, J)) * ~free[:, None], X1=X1,
                          low=np.zeros(C), high=np.ones(C), t_low=0.0, t_high=np.inf)
    capacity = rng.integers(0, 20, J).astype(float) + (seed % 2) * 10
    solver = Solver("highs", keep_programs=True)
    levels._restricted_lp(cls, capacity, free, fixed, solver)
    program = solver.last_program
    assert isinstance(program.A, ColumnArrays)
    np.testing.assert_allclose(program.A.toarray(),
                               _restricted_lp_entry_by_entry(cls, capacity, free, fixed),
                               rtol=1e-14, atol=0.0)
