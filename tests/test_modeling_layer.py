"""The modelling layer compiles array expressions exactly as numpy would evaluate them, and its
programs solve to the optimum of the same LP written for scipy's linprog."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from schedopt.backends import SolveOptions
from schedopt.backends.session import Solver
from schedopt.modeling import Model


def values(expr, x):
    """The expression's value at column values x (via the compiled sparse matrix)."""
    return (expr.matrix(x.size) @ x).reshape(expr.shape) + expr.const


@pytest.mark.parametrize("seed", range(5))
def test_expressions_evaluate_like_numpy(seed):
    rng = np.random.default_rng(seed)
    M, J = rng.integers(1, 6), rng.integers(1, 5)
    m = Model()
    X = m.variable("X", (M, J))
    t = m.variable("t")
    y = m.variable("y", M)
    x = rng.normal(size=m.num_cols)
    Xv, tv, yv = x[:M * J].reshape(M, J), x[M * J], x[M * J + 1:]
    T, w, c = rng.random((M, J)), rng.random(M), rng.random(J)
    cases = [
        ((T * X).sum(axis=1) - w * t, (T * Xv).sum(axis=1) - w * tv),
        ((c * X).sum(axis=0) + 2.0, (c * Xv).sum(axis=0) + 2.0),
        (X.sum(), Xv.sum()),
        (X[:, 0] - y / 2 + 1, Xv[:, 0] - yv / 2 + 1),
        (3 - X * T, 3 - Xv * T),
        (t + y, tv + yv),
        (X.sum(axis=1)[::2] - y[::2], Xv.sum(axis=1)[::2] - yv[::2]),
    ]
    for expr, expected in cases:
        np.testing.assert_allclose(values(expr, x), expected, rtol=1e-12, atol=1e-12)


def test_constraints_move_constants_into_bounds():
    m = Model()
    x = m.variable("x", 3)
    con = m.add("c", x + np.array([1.0, 2.0, 3.0]) <= 5.0)
    np.testing.assert_array_equal(con.upper, [4.0, 3.0, 2.0])
    assert np.all(np.isneginf(con.lower))
    lp = m.compile()
    np.testing.assert_array_equal(lp.row_upper, [4.0, 3.0, 2.0])


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("scale_rows", [False, True])
def test_a_max_min_lp_matches_linprog(seed, scale_rows):
    rng = np.random.default_rng(seed)
    M, J = 6, 3
    T = rng.random((M, J)) * (rng.random((M, J)) > 0.2)
    w, s = rng.uniform(0.5, 2, M), rng.integers(1, 3, M).astype(float)
    cap = rng.integers(1, 4, J).astype(float)
    m = Model()
    X = m.variable("X", (M, J), upper=np.where(T > 0, np.inf, 0.0))
    t = m.variable("t")
    m.add("time", X.sum(axis=1) <= 1)
    m.add("gpus", (s[:, None] * X).sum(axis=0) <= cap)
    m.add("level", (T * X).sum(axis=1) >= w * t)
    m.maximize(t)
    solution = m.solve(Solver("highs", SolveOptions()), scale_rows=scale_rows)
    # the same LP for linprog: variables X (row-major) then t, minimize -t
    n = M * J + 1
    A, b = [], []
    for i in range(M):
        row = np.zeros(n); row[i * J:(i + 1) * J] = 1; A.append(row); b.append(1)
    for j in range(J):
        row = np.zeros(n); row[j:M * J:J] = s; A.append(row); b.append(cap[j])
    for i in range(M):
        row = np.zeros(n); row[i * J:(i + 1) * J] = -T[i]; row[-1] = w[i]; A.append(row); b.append(0)
    bounds = [(0, None if T.ravel()[k] > 0 else 0) for k in range(M * J)] + [(0, None)]
    c = np.zeros(n); c[-1] = -1
    reference = linprog(c, A_ub=np.array(A), b_ub=b, bounds=bounds, method="highs")
    assert solution.objective == pytest.approx(-reference.fun, rel=1e-7, abs=1e-9)
    Xv = solution[X]
    assert Xv.shape == (M, J)
    assert np.all(Xv.sum(axis=1) <= 1 + 1e-7)
    assert np.all((s[:, None] * Xv).sum(axis=0) <= cap + 1e-7)
    assert np.all((T * Xv).sum(axis=1) >= w * solution[t] - 1e-7)


def test_duals_come_back_per_constraint_block():
    # max 2x + y  s.t.  x <= 2, y <= 10 (one block), x + y <= 4: x = 2, y = 2, objective 6;
    # raising the total's bound adds 1 (more y), x's cap adds 2 - 1, y's cap is slack.
    m = Model()
    v = m.variable("v", 2)
    m.add("caps", v <= np.array([2.0, 10.0]))
    m.add("total", v.sum() <= 4.0)
    m.maximize(v * np.array([2.0, 1.0]))
    solution = m.solve(Solver("highs"))
    assert solution.objective == pytest.approx(6.0)
    np.testing.assert_allclose(solution[v], [2.0, 2.0], atol=1e-9)
    assert solution.dual("total").shape == ()
    assert float(solution.dual("total")) == pytest.approx(1.0)
    np.testing.assert_allclose(solution.dual("caps"), [1.0, 0.0], atol=1e-9)


def test_integer_blocks_compile_to_integer_columns():
    m = Model()
    z = m.variable("z", 3, upper=1, integer=True)
    x = m.variable("x", 2)
    m.add("link", x.sum() <= z.sum())
    m.maximize(x.sum() - 0.5 * z.sum())
    lp = m.compile()
    np.testing.assert_array_equal(lp.integer, [True, True, True, False, False])
    assert lp.maximize and lp.A.shape == (1, 5)


def test_products_of_expressions_are_refused():
    m = Model()
    x = m.variable("x", 2)
    with pytest.raises(TypeError, match="not linear"):
        x * x


@pytest.mark.parametrize("seed", range(6))
def test_broadcasts_selections_and_sums_over_several_terms_evaluate_like_numpy(seed):
    """Entries with several terms each (sums of blocks), broadcast along new and length-1 axes,
    selected by fancy indices, summed over several axes of a 3-d block."""
    rng = np.random.default_rng(seed)
    M, J, K = (int(n) for n in rng.integers(1, 5, 3))
    m = Model()
    X = m.variable("X", (M, J))
    Z = m.variable("Z", (M, J, K))
    t = m.variable("t")
    y = m.variable("y", (M, 1))
    x = rng.normal(size=m.num_cols)
    Xv = x[X.columns].reshape(M, J)
    Zv = x[Z.columns].reshape(M, J, K)
    tv = x[t.columns][0]
    yv = x[y.columns].reshape(M, 1)
    T = rng.random((M, J))
    pick = rng.integers(0, M, 2 * M)
    mixed = T * X + 2 * y - t + 1.5          # 3 terms per entry
    cases = [
        (mixed, T * Xv + 2 * yv - tv + 1.5),
        (mixed[pick], (T * Xv + 2 * yv - tv + 1.5)[pick]),
        (mixed[pick, ::-1].sum(axis=1), (T * Xv + 2 * yv - tv + 1.5)[pick, ::-1].sum(axis=1)),
        (Z.sum(axis=(0, 2)), Zv.sum(axis=(0, 2))),
        (Z.sum(axis=1) - X[:, :1] * 3, Zv.sum(axis=1) - Xv[:, :1] * 3),
        ((Z * 2.0).sum(axis=(1, 2)) + y[:, 0], (Zv * 2.0).sum(axis=(1, 2)) + yv[:, 0]),
        (t * np.ones((M, J)) + y, tv * np.ones((M, J)) + yv),
        ((T * X).sum(axis=0)[None, :] - t, (T * Xv).sum(axis=0)[None, :] - tv),
    ]
    for expr, expected in cases:
        np.testing.assert_allclose(values(expr, x), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_compiled_matrix_equals_the_rows_evaluated_densely(seed):
    """Whatever order an expression's terms come in (runs sorted by row, sums over the first
    axis, many interleaved pieces), the compiled rows are its linear part, with cancelled
    terms and zero coefficients left out."""
    rng = np.random.default_rng(seed)
    M, J = int(rng.integers(1, 7)), int(rng.integers(1, 7))
    m = Model()
    X = m.variable("X", (M, J))
    t = m.variable("t")
    T = rng.random((M, J)) * (rng.random((M, J)) > 0.3)
    blocks = [
        (T * X).sum(axis=1) - t,                              # two runs
        (T * X).sum(axis=0),                                  # interleaved rows
        X.sum(axis=1) + (T * X).sum(axis=1) - X.sum(axis=1),  # cancels to T
        sum((X[:, j] * float(j + 1) for j in range(J)), t * 0.0),  # many runs
    ]
    for k, expr in enumerate(blocks):
        m.add(f"b{k}", expr <= 1.0)
    lp = m.compile()
    dense = np.vstack([expr.matrix(m.num_cols).toarray() for expr in blocks])
    np.testing.assert_allclose(lp.A.toarray(), dense, rtol=1e-15, atol=1e-15)
    assert np.all(lp.A.data != 0.0)
