"""The Gavel family's LPs, stated with `schedopt.modeling` (the math: docs/formulations.md §1,
docs/exact-max-min.md, docs/water-filling.md, docs/perf-error.md).

Every LP holds the allocation X (M jobs x J GPU types, time fractions) under Gavel's base
constraints, each row scaled to O(1) coefficients:

    time   sum_j X[m,j] <= 1                         (a job's time)
    gpus   sum_m (s_m / c_j) X[m,j] <= 1             (type j's c_j GPUs)
    X >= 0, and X[m,j] = 0 where job m cannot run on type j,

and then, with a[m,j] the max-min coefficients (`normalized_throughput`) and
f[m,j] = T[m,j] / max_j T[m,j] (the fraction of the job's best-type throughput):

    max_min_model        max t   s.t. level   a[m] @ X[m] >= t
    need_model           max z   s.t. need    f[m] @ Y[m] >= z   (active jobs; X = need_m Y,
                                                                   z <= z_upper)
    throughput_model     max sum(weight * X)   s.t. slo   f[m] @ X[m] >= target_m  (SLO jobs)
    shortfall_model      min sum_k e_k / target_k   s.t. slo   f[m] @ X[m] + e_m >= target_m
    robust_model         max t   s.t. u[m,j] <= (1 -+ r) (a[m,j] X[m,j] - p[m,j] t),
                                      sum_j u[m,j] >= 0
    stage_model          max C   s.t. level   a[m] @ X[m] - slope_m C >= lower_m
    priced_model         max sum(weight * X)  s.t. slo f[m] @ X[m] >= target_m (target > 0),
                                              capacity left after fixed jobs (`cost.py`)

Each builder returns (Model, X); X is the model's first block, so an LP's first M*J columns
are X in row-major order.
"""

from __future__ import annotations

from functools import reduce

import numpy as np

from schedopt.core.problem import ThroughputProblem
from schedopt.modeling import Model, Variable


def row_max(values: np.ndarray) -> np.ndarray:
    """(M,) the largest entry of each row of an (M, J) array: one vectorized pass per column
    (numpy's max(axis=1) over a few columns loops per row, several times slower)."""
    return reduce(np.maximum, values.T)


def normalized_throughput(problem: ThroughputProblem, agnostic: bool = False) -> np.ndarray:
    """(M, J) coefficients a with a[m] @ X[m] = job m's max-min objective term.

    Heterogeneity-aware: s_m T[m,j] / (w_m thr^eq_m). Agnostic: s_m / w_m on runnable types.
    """
    s_over_w = (problem.scale_factor / problem.weight)[:, None]
    if agnostic:
        return s_over_w * problem.runnable
    return s_over_w * problem.throughput / problem.equal_share_throughput[:, None]


def best_type_fraction(problem: ThroughputProblem) -> np.ndarray:
    """(M, J) f[m,j] = T[m,j] / max_j T[m,j] on runnable types: f[m] @ X[m] is the fraction
    of its best type's throughput that job m gets."""
    T = problem.throughput * problem.runnable
    return T / np.maximum(row_max(T), 1e-300)[:, None]


def allocation_model(problem: ThroughputProblem, job_scale: np.ndarray | None = None,
                     jobs: np.ndarray | None = None) -> tuple[Model, Variable]:
    """A Model with X and the base constraints (module docstring).

    job_scale: the columns hold Y = X / job_scale[m] instead (`blocks.solve_allocation`
    undoes it), so a job whose share is tiny next to others keeps O(1) coefficients in its
    own rows. jobs: (M,) bool, the only jobs that may get time (default all)."""
    M, J = problem.num_jobs, problem.num_types
    runnable = problem.runnable if jobs is None else problem.runnable & jobs[:, None]
    model = Model()
    X = model.variable("X", (M, J), lower=0.0, upper=np.where(runnable, np.inf, 0.0))
    gpus = problem.scale_factor
    if job_scale is None:
        model.add("time", X.sum(axis=1) <= 1.0)
    else:
        model.add("time", (job_scale[:, None] * X).sum(axis=1) <= 1.0)
        gpus = gpus * job_scale
    share = gpus[:, None] / np.maximum(problem.capacity, 1e-300)[None, :]
    model.add("gpus", (share * X).sum(axis=0) <= 1.0)
    return model, X


def max_min_model(problem: ThroughputProblem, agnostic: bool = False) -> tuple[Model, Variable]:
    """max t s.t. a[m] @ X[m] >= t for every job (rows divided by max(max_j a[m,j], 1))."""
    a = normalized_throughput(problem, agnostic) * problem.runnable
    model, X = allocation_model(problem)
    t = model.variable("t")
    row = 1.0 / np.maximum(row_max(a), 1.0)
    model.add("level", ((a * row[:, None]) * X).sum(axis=1) - row * t >= 0.0)
    model.maximize(t)
    return model, X


def need_model(problem: ThroughputProblem, active: np.ndarray, need: np.ndarray,
               z_upper: float = np.inf) -> tuple[Model, Variable]:
    """max z s.t. every active job gets `need[m]` of its best type's time, times z:
    f[m] @ X[m] >= need[m] z, stated on Y = X / need[m] (X = 0 for inactive jobs)."""
    model, Y = allocation_model(problem, np.where(active, need, 1.0), active)
    z = model.variable("z", upper=z_upper)
    keep = np.flatnonzero(active)
    model.add("need", (best_type_fraction(problem)[keep] * Y[keep]).sum(axis=1) - z >= 0.0)
    model.maximize(z)
    return model, Y


def throughput_model(problem: ThroughputProblem, weight: np.ndarray,
                     slo_jobs: np.ndarray | None = None,
                     slo_target: np.ndarray | None = None) -> tuple[Model, Variable]:
    """max sum(weight * X) (e.g. steps/s), with f[m] @ X[m] >= slo_target for `slo_jobs`."""
    model, X = allocation_model(problem)
    if slo_jobs is not None and slo_jobs.size:
        model.add("slo", (best_type_fraction(problem)[slo_jobs] * X[slo_jobs]).sum(axis=1)
                  >= slo_target)
    model.maximize(weight * problem.runnable * X)
    return model, X


def shortfall_model(problem: ThroughputProblem, jobs: np.ndarray,
                    target: np.ndarray) -> tuple[Model, Variable, Variable]:
    """min sum_k e_k / target_k s.t. f[m] @ X[m] + e_m >= target_m for the SLO `jobs`,
    0 <= e <= target (fractions of the best type's time). Returns (model, X, e)."""
    model, X = allocation_model(problem)
    e = model.variable("shortfall", jobs.size, upper=target)
    model.add("slo", (best_type_fraction(problem)[jobs] * X[jobs]).sum(axis=1) + e >= target)
    model.minimize(e / target)
    return model, X, e


def robust_model(problem: ThroughputProblem, robust: float) -> tuple[Model, Variable]:
    """The robust max-min LP (`robust.robust_max_min_fairness`): with p[m,j] = T[m,j] q_j /
    thr^eq_m, q_j = c_j / sum(c), one free u[m,j] per entry,

        max t  s.t.  u[m,j] <= (1 -+ r) (a[m,j] X[m,j] - p[m,j] t),   sum_j u[m,j] >= 0."""
    a = normalized_throughput(problem) * problem.runnable
    p = problem.throughput * (problem.capacity / problem.capacity.sum())[None, :]
    p = p / p.sum(axis=1, keepdims=True)
    model, X = allocation_model(problem)
    u = model.variable("u", X.shape, lower=-np.inf)
    t = model.variable("t")
    for corner, factor in (("low", 1.0 - robust), ("high", 1.0 + robust)):
        model.add(f"corner_{corner}", u - factor * (a * X - p * t) <= 0.0)
    model.add("worst_case", u.sum(axis=1) >= 0.0)
    model.maximize(t)
    return model, X


def stage_model(problem: ThroughputProblem, a: np.ndarray, slope: np.ndarray,
                lower: np.ndarray) -> tuple[Model, Variable]:
    """One water-filling stage: max C s.t. a[m] @ X[m] - slope[m] C >= lower[m] (rows divided
    by max(max_j a[m,j], slope[m]); frozen jobs have slope 0 and their level as `lower`)."""
    row = 1.0 / np.maximum(row_max(a), slope)
    model, X = allocation_model(problem)
    C = model.variable("C")
    model.add("level", ((a * row[:, None]) * X).sum(axis=1) - (slope * row) * C
              >= lower * row)
    model.maximize(C)
    return model, X


def priced_model(weight: np.ndarray, gpus: np.ndarray, capacity_left: np.ndarray,
                 capacity: np.ndarray, fraction: np.ndarray, target: np.ndarray,
                 allowed: np.ndarray, overflow_price: np.ndarray | None = None
                 ) -> tuple[Model, Variable, Variable | None]:
    """The restricted LP of `cost.max_priced` over some jobs (or classes):

        max sum(weight * X)  s.t.  sum_j X[m,j] <= 1,
                                   gpus   sum_m gpus[m] X[m,j] <= capacity_left_j,
                                   slo    fraction[m] @ X[m] >= target[m]   (target > 0),
                                   X >= 0, X = 0 where not allowed,

    GPU rows divided by the type's whole `capacity` (its dual / capacity = price per GPU).
    overflow_price: (J,) per GPU; the GPU rows become elastic, `overflow` GPUs beyond
    capacity_left at that price each (an LP that is always feasible, with prices capped).
    Returns (model, X, overflow or None)."""
    model = Model()
    X = model.variable("X", weight.shape, lower=0.0, upper=np.where(allowed, np.inf, 0.0))
    model.add("time", X.sum(axis=1) <= 1.0)
    scale = 1.0 / np.maximum(capacity, 1e-300)
    used = ((gpus[:, None] * scale[None, :]) * X).sum(axis=0)
    overflow = None
    if overflow_price is not None:
        overflow = model.variable("overflow", capacity.size)
        used = used - scale * overflow
    model.add("gpus", used <= capacity_left * scale)
    slo = np.flatnonzero(target > 0)
    if slo.size:
        model.add("slo", (fraction[slo] * X[slo]).sum(axis=1) >= target[slo])
    if overflow_price is not None:
        model.maximize((weight * X).sum() - (overflow_price * overflow).sum())
    else:
        model.maximize(weight * X)
    return model, X, overflow
