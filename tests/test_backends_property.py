"""Every backend agrees with HiGHS on random small LPs that are feasible and bounded by construction;
MILP backends agree with each other and with enumeration on random small MILPs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from schedopt.backends import LinearProgram, SolveOptions, Status, solve_lp

# Relative objective tolerance per backend. Seen over 200 random LPs: simplex and IPM ~1e-15, CBC
# ~3e-13, Clarabel ~1e-8, PDLP (run at eps 1e-8 by our adapter) ~6e-8; SCS keeps cvxpy's default
# eps 1e-5 and was up to 2e-5 off, so it is held to 1e-3 (and may stop "optimal_inaccurate").
TOLERANCE = {"highs-ipm": 1e-6, "glop": 1e-6, "pdlp": 1e-6, "cbc": 1e-6,
             "cvxpy:CLARABEL": 1e-6, "cvxpy:HIGHS": 1e-6, "cvxpy:SCS": 1e-3}


def random_lp(seed: int, num_cols: int, num_rows: int, maximize: bool,
              integer_share: float = 0.0) -> LinearProgram:
    """A feasible, bounded LP: finite column bounds around an integer point x0, rows of every kind
    (<=, >=, two-sided, equality, free) that x0 satisfies, ~30% zeros in A, an objective offset;
    about `integer_share` of the columns are integer."""
    rng = np.random.default_rng(seed)
    A = rng.integers(-5, 6, size=(num_rows, num_cols)) * (rng.random((num_rows, num_cols)) < 0.7)
    col_lower = rng.choice([0.0, -2.0, 1.0], size=num_cols)
    col_upper = col_lower + rng.choice([0.0, 1.0, 3.5, 10.0], size=num_cols)  # some fixed columns
    width = col_upper - col_lower
    x0 = col_lower + np.floor(rng.random(num_cols) * (width + 1)).clip(max=np.floor(width))
    activity = A @ x0
    kind = rng.integers(0, 5, size=num_rows)  # 0: <=, 1: >=, 2: two-sided, 3: equality, 4: free
    slack_low, slack_up = rng.integers(0, 4, size=num_rows), rng.integers(0, 4, size=num_rows)
    row_lower = np.where(np.isin(kind, (1, 2)), activity - slack_low, -np.inf)
    row_upper = np.where(np.isin(kind, (0, 2)), activity + slack_up, np.inf)
    row_lower = np.where(kind == 3, activity, row_lower)
    row_upper = np.where(kind == 3, activity, row_upper)
    return LinearProgram(c=rng.integers(-9, 10, size=num_cols) / 4.0, A=sp.csr_matrix(A.astype(float)),
                         row_lower=row_lower, row_upper=row_upper, col_lower=col_lower, col_upper=col_upper,
                         maximize=maximize,
                         integer=(rng.random(num_cols) < integer_share) if integer_share else None,
                         objective_offset=float(rng.integers(-3, 4)))


lp_shapes = dict(seed=st.integers(0, 2**32 - 1), num_cols=st.integers(1, 7),
                 num_rows=st.integers(1, 6), maximize=st.booleans())


def assert_close(value, reference, tolerance):
    assert value == pytest.approx(reference, rel=tolerance, abs=tolerance)


def brute_force_optimum(lp: LinearProgram) -> float:
    """Optimum of a feasible pure integer program, by enumerating every integer point in its column box."""
    axes = [np.arange(np.ceil(lo), np.floor(up) + 1) for lo, up in zip(lp.col_lower, lp.col_upper)]
    points = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, lp.num_cols)
    activity = (lp.A @ points.T).T
    fits = np.all((activity >= lp.row_lower - 1e-9) & (activity <= lp.row_upper + 1e-9), axis=1)
    values = points[fits] @ lp.c + lp.objective_offset
    return float(values.max() if lp.maximize else values.min())


def assert_feasible(lp: LinearProgram, x: np.ndarray, name: str, tolerance: float = 1e-6) -> None:
    activity = lp.A @ x
    assert np.all(x >= lp.col_lower - tolerance) and np.all(x <= lp.col_upper + tolerance), name
    assert np.all(activity >= lp.row_lower - tolerance) and np.all(activity <= lp.row_upper + tolerance), name
    if lp.integer is not None:
        assert np.allclose(x[lp.integer], np.round(x[lp.integer]), atol=tolerance), name


@settings(max_examples=25, deadline=None)
@given(**lp_shapes)
def test_every_backend_matches_highs_on_random_feasible_lps(seed, num_cols, num_rows, maximize):
    lp = random_lp(seed, num_cols, num_rows, maximize)
    reference = solve_lp(lp, "highs")
    assert reference.status is Status.OPTIMAL
    for name, tolerance in TOLERANCE.items():
        result = solve_lp(lp, name)
        assert result.status in (Status.OPTIMAL, Status.FEASIBLE) if name == "cvxpy:SCS" else \
            result.status is Status.OPTIMAL, (name, result.termination)
        assert_close(result.objective, reference.objective, tolerance)
        assert_close(float(lp.c @ result.x) + lp.objective_offset, reference.objective, tolerance)
        assert_feasible(lp, result.x, name, max(tolerance, 1e-6))


# highs and cvxpy:HIGHS are left out: highspy 1.14.0's MIP solver claims wrong optima on ~1.6% of
# these programs (schedopt's highs backend refuses MILPs on that release; see backends/highs.py).
@settings(max_examples=25, deadline=None)
@given(seed=lp_shapes["seed"], num_cols=st.integers(1, 5), num_rows=lp_shapes["num_rows"],
       maximize=st.booleans(), integer_share=st.sampled_from([0.5, 1.0]))
def test_milp_backends_agree_and_match_brute_force(seed, num_cols, num_rows, maximize, integer_share):
    """Every backend proves optimal a feasible point no other backend beats; pure integer programs
    also match enumeration."""
    lp = random_lp(seed, num_cols, num_rows, maximize, integer_share)
    names = ["scip", "cbc", "cvxpy:SCIPY"] + (["cpsat"] if lp.integer.all() else [])
    results = {name: solve_lp(lp, name, SolveOptions(mip_gap=0.0)) for name in names}
    for name, result in results.items():
        assert result.status is Status.OPTIMAL, (name, result.termination)
        assert_feasible(lp, result.x, name)
        assert_close(float(lp.c @ result.x) + lp.objective_offset, result.objective, 1e-9)
    objectives = [result.objective for result in results.values()]
    best = max(objectives) if maximize else min(objectives)
    for name, result in results.items():
        assert_close(result.objective, best, 1e-7)
    if lp.integer.all():
        assert_close(best, brute_force_optimum(lp), 1e-9)
