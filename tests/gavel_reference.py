"""Independent cvxpy reference implementations of the Gavel-family policies (test helper).

Written from the math in docs/formulations.md section 1 and the way Gavel's reference code states
each policy (cp.Maximize(cp.min(...)), inv_pos for finish times, the z = 1/T_end LP for the
makespan), NOT from schedopt's builders:
they read only the raw arrays of a problem (throughput, scale_factor, weight, capacity,
cost_per_hour, remaining_steps, time_since_arrival, isolated_time, time_to_deadline) and solve
with CLARABEL. Every reference uses the same base constraints as schedopt:

    X >= 0,  sum_j X[m,j] <= 1,  sum_m s_m X[m,j] <= c_j,
    X[m,j] = 0 where job m cannot run on type j (T[m,j] = 0 or s_m > c_j).

Each function returns a `Reference` with the optimum value (None when infeasible) and X.
"""

from __future__ import annotations

from dataclasses import dataclass

import cvxpy as cp
import numpy as np

SOLVER = "CLARABEL"


@dataclass
class Reference:
    status: str
    value: float | None
    X: np.ndarray | None


# ---------------------------------------------------------------- plain definitions

def runnable(p) -> np.ndarray:
    """(M, J) bool: T[m,j] > 0 and s_m <= c_j."""
    T = np.asarray(p.throughput, dtype=float)
    s = np.asarray(p.scale_factor, dtype=float)
    c = np.asarray(p.capacity, dtype=float)
    return (T > 0) & (s[:, None] <= c[None, :])


def equal_share_throughput(T: np.ndarray, c: np.ndarray) -> np.ndarray:
    """thr^eq_m = sum_j T[m,j] c_j / sum c."""
    M, J = T.shape
    X_eq = np.tile(c / c.sum(), (M, 1))
    return (T * X_eq).sum(axis=1)


def isolated_share(c: np.ndarray, s: np.ndarray) -> np.ndarray:
    """X^iso[m,j] = (c_j / M) / s_m, each row divided by max(row sum, 1)."""
    M = s.shape[0]
    X = np.empty((M, c.shape[0]))
    for m in range(M):
        row = (c / M) / s[m]
        X[m] = row / max(row.sum(), 1.0)
    return X


def agnostic_best_throughput(p) -> np.ndarray:
    """The agnostic view of makespan/FTF: every runnable type runs a job at its best speed."""
    ok = runnable(p)
    T = np.asarray(p.throughput, dtype=float) * ok
    return T.max(axis=1, keepdims=True) * ok


def thr(T: np.ndarray, X: np.ndarray) -> np.ndarray:
    return (T * X).sum(axis=1)


def finish_time_ratio(T, s, c, R, t, t_iso, X) -> np.ndarray:
    """rho_m = (t_m + R_m / thr_m(X)) / (t^iso_m + R_m / thr^iso_m)."""
    iso = thr(T, isolated_share(c, s))
    with np.errstate(divide="ignore"):
        return (t + R / thr(T, X)) / (t_iso + R / iso)


# ---------------------------------------------------------------- cvxpy model pieces

def _variables(p):
    T = np.asarray(p.throughput, dtype=float)
    s = np.asarray(p.scale_factor, dtype=float)
    c = np.asarray(p.capacity, dtype=float)
    M, J = T.shape
    X = cp.Variable((M, J), nonneg=True)
    forbidden = (~runnable(p)).astype(float)
    constraints = [
        cp.sum(X, axis=1) <= 1,
        s @ X <= c,
        cp.multiply(forbidden, X) == 0,
    ]
    return X, constraints


def _solve(problem: cp.Problem, X, value_transform=lambda v: v) -> Reference:
    problem.solve(solver=SOLVER)
    if problem.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        return Reference("infeasible", None, None)
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise RuntimeError(f"reference solve ended with status {problem.status}")
    return Reference("optimal", value_transform(problem.value), np.asarray(X.value))


# ---------------------------------------------------------------- policies

def max_min_fairness(p, agnostic: bool = False) -> Reference:
    """max_X min_m s_m thr_m(X) / (w_m thr^eq_m); agnostic: every T[m,j] replaced by 1."""
    T = np.asarray(p.throughput, dtype=float)
    if agnostic:
        T = np.ones_like(T)
    c = np.asarray(p.capacity, dtype=float)
    s = np.asarray(p.scale_factor, dtype=float)
    w = np.asarray(p.weight, dtype=float)
    X, constraints = _variables(p)
    coeff = (s / (w * equal_share_throughput(T, c)))[:, None] * T
    normalized = cp.sum(cp.multiply(coeff, X), axis=1)
    return _solve(cp.Problem(cp.Maximize(cp.min(normalized)), constraints), X)


def min_makespan(p, agnostic: bool = False) -> Reference:
    """min_X max_m R_m / thr_m(X) (seconds), as the docs' LP in z = 1 / T_end:

        maximize z  s.t.  thr_m(X) * D / R_m >= z     (makespan = D / z)

    with D = max_m R_m / Tbest_m only to bring z to O(1). (The conic form
    min max_m R_m * inv_pos(thr_m(X)) was tried first: CLARABEL returned values up to 98% above
    the optimum, often as "optimal_inaccurate", on instances of the property tests' size.)"""
    T = agnostic_best_throughput(p) if agnostic else np.asarray(p.throughput, dtype=float)
    R = np.asarray(p.remaining_steps, dtype=float)
    best = (T * runnable(p)).max(axis=1)
    D = float(np.max(R / best))
    X, constraints = _variables(p)
    z = cp.Variable()
    rows = cp.sum(cp.multiply(T * (D / R)[:, None], X), axis=1) >= z
    return _solve(cp.Problem(cp.Maximize(z), constraints + [rows]), X, lambda v: D / v)


def finish_time_fairness(p, agnostic: bool = False) -> Reference:
    """min_X max_m (t_m + R_m inv_pos(thr_m(X))) / (t^iso_m + R_m / thr^iso_m)."""
    T = agnostic_best_throughput(p) if agnostic else np.asarray(p.throughput, dtype=float)
    c = np.asarray(p.capacity, dtype=float)
    s = np.asarray(p.scale_factor, dtype=float)
    R = np.asarray(p.remaining_steps, dtype=float)
    t = np.asarray(p.time_since_arrival, dtype=float)
    t_iso = np.asarray(p.isolated_time, dtype=float)
    iso_thr = thr(T, isolated_share(c, s))
    denominator = t_iso + R / iso_thr
    X, constraints = _variables(p)
    throughput = cp.sum(cp.multiply(T, X), axis=1)
    rho = cp.multiply(1.0 / denominator, t + cp.multiply(R, cp.inv_pos(throughput)))
    return _solve(cp.Problem(cp.Minimize(cp.max(rho)), constraints), X)


def max_total_throughput(p) -> Reference:
    """max_X sum_m thr_m(X) (raw steps/s)."""
    T = np.asarray(p.throughput, dtype=float)
    X, constraints = _variables(p)
    return _solve(cp.Problem(cp.Maximize(cp.sum(cp.multiply(T, X))), constraints), X)


def slo_need(p) -> np.ndarray:
    """(M,) steps/s each SLO needs: R_m / time_to_deadline (nan without a usable deadline)."""
    R = np.asarray(p.remaining_steps, dtype=float)
    ttd = np.asarray(p.time_to_deadline, dtype=float)
    need = np.full(R.shape, np.nan)
    has = np.isfinite(ttd) & (ttd > 0) & (R > 0)
    need[has] = R[has] / ttd[has]
    return need


def min_cost(p, slos: bool = True) -> Reference:
    """max_X sum_{m,j} T[m,j] X[m,j] / cost_j, with SLO rows thr_m(X) >= R_m / time_to_deadline."""
    T = np.asarray(p.throughput, dtype=float)
    cost = np.asarray(p.cost_per_hour, dtype=float)
    X, constraints = _variables(p)
    if slos:
        need = slo_need(p)
        for m in np.flatnonzero(np.isfinite(need)):
            constraints.append(T[m] @ X[m] >= need[m])
    objective = cp.Maximize(cp.sum(cp.multiply(T / cost[None, :], X)))
    return _solve(cp.Problem(objective, constraints), X)


# ---------------------------------------------------------------- checks shared by the tests

def assert_base_constraints(p, X: np.ndarray, tol: float = 1e-6) -> None:
    """X >= -1e-9, row sums <= 1 + tol, sum_m s_m X[m,j] <= c_j (1 + tol), 0 where not runnable."""
    T = np.asarray(p.throughput, dtype=float)
    s = np.asarray(p.scale_factor, dtype=float)
    c = np.asarray(p.capacity, dtype=float)
    X = np.asarray(X, dtype=float)
    assert X.shape == T.shape, f"allocation shape {X.shape}, expected {T.shape}"
    assert np.all(np.isfinite(X)), "allocation has non-finite entries"
    assert X.min(initial=0.0) >= -1e-9, f"negative allocation {X.min()}"
    rows = X.sum(axis=1)
    assert np.all(rows <= 1 + tol), f"job time fractions exceed 1: {rows.max()}"
    used = s @ X
    assert np.all(used <= c * (1 + tol)), f"GPUs used {used} exceed capacity {c}"
    outside = np.abs(X[~runnable(p)])
    assert outside.max(initial=0.0) <= 1e-9, (
        f"allocation {outside.max()} on a type where the job cannot run")


def rel_diff(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


# ---------------------------------------------------------------- random instances (hypothesis)

def problems(max_jobs: int = 12, max_types: int = 4, deadlines: bool = False):
    """Hypothesis strategy of small ThroughputProblems in which every job can run somewhere.

    Throughputs in [0.1, 10] with some exact zeros, scale factors {1, 2, 4}, weights {1, 2, 3},
    capacities 1..8, remaining steps 1e3..1e6, time since arrival 0..1e4, costs 0.5..5 $/h.
    With `deadlines`, each job has no deadline or one needing a fraction f in [0.02, 1.5] of its
    best throughput (f > 1: its SLO cannot be met even alone)."""
    from hypothesis import strategies as st

    from schedopt.core.problem import ThroughputProblem

    @st.composite
    def build(draw):
        M = draw(st.integers(1, max_jobs))
        J = draw(st.integers(1, max_types))
        value = st.one_of(st.just(0.0), st.floats(0.1, 10.0), st.floats(0.1, 10.0))
        T = np.array(draw(st.lists(st.lists(value, min_size=J, max_size=J), min_size=M, max_size=M)))
        s = np.array(draw(st.lists(st.sampled_from([1.0, 2.0, 4.0]), min_size=M, max_size=M)))
        c = np.array(draw(st.lists(st.integers(1, 8), min_size=J, max_size=J)), dtype=float)
        w = np.array(draw(st.lists(st.sampled_from([1.0, 2.0, 3.0]), min_size=M, max_size=M)))
        R = np.array(draw(st.lists(st.floats(1e3, 1e6), min_size=M, max_size=M)))
        t = np.array(draw(st.lists(st.floats(0.0, 1e4), min_size=M, max_size=M)))
        t_iso = np.array(draw(st.lists(st.one_of(st.just(0.0), st.floats(0.0, 1e4)),
                                       min_size=M, max_size=M)))
        cost = np.array(draw(st.lists(st.floats(0.5, 5.0), min_size=J, max_size=J)))
        # make every job runnable somewhere: the largest type grows to fit it, and runs it
        for m in range(M):
            if not np.any((T[m] > 0) & (s[m] <= c)):
                j = int(np.argmax(c))
                c[j] = max(c[j], s[m])
                T[m, j] = T[m, j] if T[m, j] > 0 else 1.0
        ttd = np.full(M, np.nan)
        if deadlines:
            ok = (T > 0) & (s[:, None] <= c[None, :])
            best = (T * ok).max(axis=1)
            for m in range(M):
                f = draw(st.one_of(st.none(), st.floats(0.02, 1.5)))
                if f is not None:
                    ttd[m] = R[m] / (f * best[m])
        return ThroughputProblem.from_arrays(
            T, s, w, c, cost_per_hour=cost, remaining_steps=R, time_since_arrival=t,
            isolated_time=t_iso, time_to_deadline=ttd)

    return build()
