"""Water filling written plainly, the way Gavel's reference code does it, for tests and the
benchmark: one LP for the next water level, then one LP per rising job asking whether it can
still rise while every other job keeps its level (Gavel asks with one MILP over all jobs; the
set of jobs that can rise is the same). O(M) LPs per stage: small instances only.

Every LP is written out directly (scipy.sparse + HiGHS), sharing nothing with
schedopt.policies.gavel.water_filling.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from schedopt.backends import solve_lp
from schedopt.backends.base import LinearProgram
from schedopt.core.problem import ThroughputProblem

RISE_TOL = 1e-7  # a job "can rise" when it can gain more than this (relative)


@dataclass
class Reference:
    allocation: np.ndarray
    levels: np.ndarray      # each job's level a[m] @ X[m] when it froze
    frozen_at: np.ndarray   # the water level C at which each job froze
    first_level: float      # the first stage's C (the max-min value)
    lps: int


def coefficients(problem: ThroughputProblem, agnostic: bool = False, weighted: bool = True):
    """a[m, j]: s_m T[m,j] / (w_m thr^eq_m) (agnostic: s_m / w_m) on runnable types; without
    the job weight when `weighted` is False."""
    runnable = problem.runnable
    thr_eq = problem.throughput @ (problem.capacity / problem.capacity.sum())
    per_unit = np.ones_like(problem.throughput) if agnostic else problem.throughput / thr_eq[:, None]
    weight = problem.weight if weighted else np.ones(problem.num_jobs)
    return np.where(runnable, problem.scale_factor[:, None] / weight[:, None] * per_unit, 0.0)


def _solve(problem, a, lower, slope, objective):
    """max objective @ [X, C] s.t. a[m] @ X[m] - slope[m] C >= lower[m], base constraints."""
    M, J = a.shape
    n = M * J
    job = np.repeat(np.arange(M), J)
    typ = np.tile(np.arange(J), M)
    level = sp.csr_matrix((np.r_[a.ravel(), -slope], (np.r_[job, np.arange(M)],
                                                     np.r_[np.arange(n), np.full(M, n)])),
                          shape=(M, n + 1))
    time_rows = sp.csr_matrix((np.ones(n), (job, np.arange(n))), shape=(M, n + 1))
    capacity = sp.csr_matrix((problem.scale_factor[job], (typ, np.arange(n))), shape=(J, n + 1))
    lp = LinearProgram(
        c=objective, A=sp.vstack([level, time_rows, capacity], format="csr"),
        row_lower=np.r_[lower, np.full(M + J, -np.inf)],
        row_upper=np.r_[np.full(M, np.inf), np.ones(M), problem.capacity],
        col_lower=np.zeros(n + 1),
        col_upper=np.r_[np.where(problem.runnable.ravel(), np.inf, 0.0), np.inf],
        maximize=True)
    result = solve_lp(lp, "highs")
    assert result.status.value == "optimal", result.termination
    return result.x[:n].reshape(M, J), float(result.objective)


def reference_filling(problem: ThroughputProblem, a: np.ndarray, rates) -> Reference:
    """Progressive filling over `a` with rates(rising) -> each rising job's rate."""
    M, J = a.shape
    rising = np.ones(M, bool)
    level = np.zeros(M)
    frozen_at = np.full(M, np.nan)
    C, lps, first, X = 0.0, 0, None, None
    while rising.any():
        rate = np.where(rising, rates(rising), 0.0)
        base = np.where(rising, level - rate * C, level)
        objective = np.r_[np.zeros(M * J), 1.0]
        X, C = _solve(problem, a, base, rate, objective)
        lps += 1
        first = C if first is None else first
        need = np.where(rising, base + rate * C, level)
        gain = np.full(M, np.inf)
        for m in np.flatnonzero(rising):
            objective = np.zeros(M * J + 1)
            objective[m * J:(m + 1) * J] = a[m]
            _, best = _solve(problem, a, need, np.zeros(M), objective)
            lps += 1
            gain[m] = best - need[m]
        stuck = rising & (gain <= RISE_TOL * np.maximum(need, 1.0))
        if not stuck.any():
            stuck[np.argmin(gain)] = True
        level[rising] = need[rising]
        frozen_at[stuck] = C
        rising &= ~stuck
    return Reference(X, level, frozen_at, first, lps)


def reference_water_filling(problem: ThroughputProblem, agnostic: bool = False) -> Reference:
    """Gavel's max_min_fairness_water_filling(_perf): every job at rate 1 over the weighted a."""
    return reference_filling(problem, coefficients(problem, agnostic),
                             lambda rising: np.ones(rising.size))


def reference_hierarchical(problem: ThroughputProblem, users, user_weight: dict,
                           agnostic: bool = False) -> Reference:
    """Gavel's water filling with the 'fairness' reweighting: job m of user u rises at rate
    W_u w_m / (sum of w over u's rising jobs). users: each job's user (None: its own user,
    weighing its job weight); user_weight: {user: W_u} (default 1)."""
    M = problem.num_jobs
    key = [("job", m) if u is None else ("user", u) for m, u in enumerate(users)]
    W = np.array([problem.weight[m] if u is None else user_weight.get(u, 1.0)
                  for m, u in enumerate(users)])
    w = problem.weight

    def rates(rising):
        total = {}
        for m in range(M):
            if rising[m]:
                total[key[m]] = total.get(key[m], 0.0) + w[m]
        return np.array([W[m] * w[m] / total[key[m]] if rising[m] else 0.0 for m in range(M)])

    return reference_filling(problem, coefficients(problem, agnostic, weighted=False), rates)
