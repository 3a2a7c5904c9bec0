"""Every Gavel LP stated with schedopt.modeling (`schedopt/policies/gavel/models.py`) has the
optimum of an independent scipy.optimize.linprog model written here from the math, unscaled,
on random small instances and on a binding, degenerate regime (tied jobs, scarce GPUs, jobs
as large as a type, types a job cannot use)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from schedopt.backends.session import Solver
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.gavel import models
from schedopt.policies.gavel.robust import worst_case_levels

SEEDS = range(12)
REGIMES = ["random", "binding"]


def instance(seed: int, regime: str) -> ThroughputProblem:
    rng = np.random.default_rng(seed)
    if regime == "random":
        M, J = int(rng.integers(2, 9)), int(rng.integers(1, 4))
        T = rng.uniform(0.2, 6.0, (M, J)) * (rng.random((M, J)) > 0.25)
        s = rng.choice([1.0, 2.0, 4.0], M)
        c = rng.integers(2, 9, J).astype(float)
    else:  # scarce GPUs, tied rows, a job as large as its type
        M, J = int(rng.integers(4, 9)), int(rng.integers(2, 4))
        base = rng.uniform(0.5, 3.0, (2, J)) * (rng.random((2, J)) > 0.3)
        T = base[rng.integers(0, 2, M)]
        s = np.ones(M)
        s[0] = 2.0
        c = np.full(J, 2.0)
    T[:, 0] = np.maximum(T[:, 0], 0.3)  # every job can run somewhere
    c[0] = max(c[0], s.max())
    return ThroughputProblem.from_arrays(
        T, scale_factor=s, weight=rng.uniform(0.5, 2.0, M), capacity=c,
        cost_per_hour=rng.uniform(0.5, 4.0, J))


def base_rows(p: ThroughputProblem, extra: int):
    """A_ub, b_ub of sum_j X[m,j] <= 1 and sum_m s_m X[m,j] <= c_j over [X (M*J), extra]."""
    M, J = p.num_jobs, p.num_types
    A = np.zeros((M + J, M * J + extra))
    for m in range(M):
        A[m, m * J:(m + 1) * J] = 1.0
        for j in range(J):
            A[M + j, m * J + j] = p.scale_factor[m]
    return A, np.r_[np.ones(M), p.capacity]


def x_bounds(p: ThroughputProblem, jobs=None):
    ok = p.runnable if jobs is None else p.runnable & jobs[:, None]
    return [(0.0, None if free else 0.0) for free in ok.ravel()]


def solve_model(model) -> float:
    solution = model.solve(Solver("highs"))
    assert solution.status.value == "optimal"
    return solution.objective


def reference(c, A_ub, b_ub, bounds, maximize=True) -> float:
    done = linprog(-c if maximize else c, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs")
    assert done.status == 0, done.message
    return -done.fun if maximize else done.fun


def level_rows(a: np.ndarray, extra: int) -> np.ndarray:
    """Row m: -(a[m] @ X[m]) over [X, extra columns] (for a[m] @ X[m] >= ... as <= rows)."""
    M, J = a.shape
    rows = np.zeros((M, M * J + extra))
    for m in range(M):
        rows[m, m * J:(m + 1) * J] = -a[m]
    return rows


@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("agnostic", [False, True])
def test_max_min_model_matches_linprog(seed, regime, agnostic):
    p = instance(seed, regime)
    M, J = p.num_jobs, p.num_types
    T = p.throughput * p.runnable
    if agnostic:
        a = (p.scale_factor / p.weight)[:, None] * p.runnable
    else:
        equal = p.throughput @ (p.capacity / p.capacity.sum())  # Gavel's: every type counts
        a = p.scale_factor[:, None] * T / (p.weight * equal)[:, None]
    base, b = base_rows(p, 1)
    level = level_rows(a, 1)
    level[:, -1] = 1.0  # t - a[m] @ X[m] <= 0
    expected = reference(np.r_[np.zeros(M * J), 1.0], np.vstack([base, level]),
                         np.r_[b, np.zeros(M)], x_bounds(p) + [(0, None)])
    model, _ = models.max_min_model(p, agnostic)
    assert solve_model(model) == pytest.approx(expected, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("z_upper", [np.inf, 1.0])
def test_need_model_matches_linprog(seed, regime, z_upper):
    """Makespan (z free) and finish-time fairness' feasibility LP (z <= 1): every active job
    gets need_m of its best type's throughput times z; X = 0 for the others."""
    p = instance(seed, regime)
    rng = np.random.default_rng(100 + seed)
    M, J = p.num_jobs, p.num_types
    active = rng.random(M) < 0.8
    active[0] = True
    need = np.where(active, rng.uniform(0.01, 0.6, M), 0.0)
    T = p.throughput * p.runnable
    best = T.max(axis=1)
    base, b = base_rows(p, 1)
    rows = level_rows(T / best[:, None] / np.where(active, need, 1.0)[:, None], 1)[active]
    rows[:, -1] = 1.0  # z - f[m] @ X[m] / need_m <= 0
    expected = reference(np.r_[np.zeros(M * J), 1.0], np.vstack([base, rows]),
                         np.r_[b, np.zeros(active.sum())],
                         x_bounds(p, active) + [(0, None if np.isinf(z_upper) else z_upper)])
    model, _ = models.need_model(p, active, need, z_upper)
    assert solve_model(model) == pytest.approx(expected, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("objective", ["throughput", "cost"])
def test_throughput_model_with_slo_rows_matches_linprog(seed, regime, objective):
    p = instance(seed, regime)
    rng = np.random.default_rng(200 + seed)
    M, J = p.num_jobs, p.num_types
    weight = p.throughput if objective == "throughput" else p.throughput / p.cost_per_hour
    T = p.throughput * p.runnable
    f = T / T.max(axis=1, keepdims=True)
    slo = np.flatnonzero(rng.random(M) < 0.5)
    target = rng.uniform(0.0, 0.3, slo.size)
    base, b = base_rows(p, 0)
    rows = level_rows(f, 0)[slo]
    A = np.vstack([base, rows])
    feasible = linprog(np.zeros(M * J), A_ub=A, b_ub=np.r_[b, -target], bounds=x_bounds(p),
                       method="highs").status == 0
    model, _ = models.throughput_model(p, weight, slo, target)
    solution = model.solve(Solver("highs"))
    if not feasible:
        assert solution.status.value == "infeasible"
        return
    expected = reference((weight * p.runnable).ravel(), A, np.r_[b, -target], x_bounds(p))
    assert solution.objective == pytest.approx(expected, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("seed", SEEDS)
def test_shortfall_model_matches_linprog(seed, regime):
    p = instance(seed, regime)
    rng = np.random.default_rng(300 + seed)
    M, J = p.num_jobs, p.num_types
    jobs = np.flatnonzero(rng.random(M) < 0.7)
    if jobs.size == 0:
        jobs = np.array([0])
    target = rng.uniform(0.2, 1.0, jobs.size)  # often more than the GPUs allow
    T = p.throughput * p.runnable
    f = T / T.max(axis=1, keepdims=True)
    k = jobs.size
    base, b = base_rows(p, k)
    rows = level_rows(f, k)[jobs]
    rows[:, M * J:] = -np.eye(k)  # -(f[m] @ X[m]) - e_m <= -target_m
    expected = reference(np.r_[np.zeros(M * J), 1.0 / target], np.vstack([base, rows]),
                         np.r_[b, -target], x_bounds(p) + [(0, t) for t in target],
                         maximize=False)
    model, _, _ = models.shortfall_model(p, jobs, target)
    assert solve_model(model) == pytest.approx(expected, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("r", [0.0, 0.15, 0.5])
def test_robust_model_matches_linprog_and_its_guarantee_holds(seed, regime, r):
    """Unscaled: job m's level is >= t for every T' in the box iff
    sum_j min over (1 -+ r) of T'[m,j] (X[m,j] - t g_m q_j) >= 0, g_m = w_m / s_m,
    q = c / sum(c): one v[m,j] below both corners per entry."""
    p = instance(seed, regime)
    M, J = p.num_jobs, p.num_types
    K = M * J
    T = p.throughput  # raw: the equal-share normalizer counts every type, as Gavel's does
    q = p.capacity / p.capacity.sum()
    g = p.weight / p.scale_factor
    n = 2 * K + 1  # [X, v, t]
    rows = []
    for m in range(M):
        for j in range(J):
            for factor in (1 - r, 1 + r):  # v - factor T (X - t g q) <= 0
                row = np.zeros(n)
                row[K + m * J + j] = 1.0
                row[m * J + j] = -factor * T[m, j]
                row[-1] = factor * T[m, j] * g[m] * q[j]
                rows.append(row)
    sums = np.zeros((M, n))
    for m in range(M):
        sums[m, K + m * J:K + (m + 1) * J] = -1.0  # -sum_j v[m,j] <= 0
    base, b = base_rows(p, K + 1)
    expected = reference(np.r_[np.zeros(2 * K), 1.0], np.vstack([base, np.array(rows), sums]),
                         np.r_[b, np.zeros(2 * K + M)],
                         x_bounds(p) + [(None, None)] * K + [(0, None)])
    model, X = models.robust_model(p, r)
    solution = model.solve(Solver("highs"))
    assert solution.objective == pytest.approx(expected, rel=1e-6, abs=1e-9)
    worst = worst_case_levels(p, np.clip(solution[X], 0.0, None), r)
    assert worst.min() >= expected * (1 - 1e-6) - 1e-9


@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("seed", SEEDS)
def test_stage_model_matches_linprog(seed, regime):
    """A water-filling stage: rising jobs at base + rate C, frozen ones (slope 0) at a floor
    they can reach."""
    p = instance(seed, regime)
    rng = np.random.default_rng(400 + seed)
    M, J = p.num_jobs, p.num_types
    a = models.normalized_throughput(p) * p.runnable
    rising = rng.random(M) < 0.7
    rising[0] = True
    # Frozen jobs keep half of what an even split gives them (a feasible X: each type's
    # GPUs in shares c_j / sum(c), divided among the M jobs).
    even = (p.capacity / p.capacity.sum())[None, :] / p.scale_factor[:, None] / M
    slope = np.where(rising, rng.uniform(0.5, 2.0, M), 0.0)
    lower = np.where(rising, rng.uniform(-0.2, 0.0, M), 0.5 * np.einsum("mj,mj->m", a, even))
    base, b = base_rows(p, 1)
    rows = level_rows(a, 1)
    rows[:, -1] = slope  # slope C - a[m] @ X[m] <= -lower
    expected = reference(np.r_[np.zeros(M * J), 1.0], np.vstack([base, rows]),
                         np.r_[b, -lower], x_bounds(p) + [(0, None)])
    model, _ = models.stage_model(p, a, slope, lower)
    assert solve_model(model) == pytest.approx(expected, rel=1e-7, abs=1e-9)
