"""What the throughput-matrix LPs share: solving one for its allocation, effective throughput,
handing out idle GPUs, and the sparse base-constraint blocks of LPs not yet stated with
`schedopt.modeling` (the packed policy's master LP).

Columns 0..M*J-1 hold X row-major (column m*J + j is X[m,j]); auxiliary columns follow.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from schedopt.backends.session import Solver
from schedopt.modeling import Model, Variable
from schedopt.modeling.model import Solution
from schedopt.core.problem import ThroughputProblem


def per_job_rows(coeffs: np.ndarray, extra_cols: int = 0) -> sp.csr_matrix:
    """(M, M*J + extra_cols) matrix whose row m is sum_j coeffs[m, j] X[m, j]."""
    M, J = coeffs.shape
    indptr = np.arange(0, M * J + 1, J)
    return sp.csr_matrix((coeffs.ravel(), np.arange(M * J), indptr), shape=(M, M * J + extra_cols))


def per_type_rows(coeffs: np.ndarray, extra_cols: int = 0) -> sp.csr_matrix:
    """(J, M*J + extra_cols) matrix whose row j is sum_m coeffs[m, j] X[m, j]."""
    M, J = coeffs.shape
    rows = np.tile(np.arange(J), M)
    return sp.csr_matrix((coeffs.ravel(), (rows, np.arange(M * J))), shape=(J, M * J + extra_cols))


def column(values: np.ndarray, col: int, num_cols: int) -> sp.csr_matrix:
    """(len(values), num_cols) matrix with `values` in column `col` and zeros elsewhere."""
    n = values.shape[0]
    return sp.csr_matrix((values, (np.arange(n), np.full(n, col))), shape=(n, num_cols))


def base_rows(problem: ThroughputProblem, extra_cols: int = 0, job_scale: np.ndarray | None = None):
    """Gavel's base constraints as (A, lower, upper), rows scaled to O(1) coefficients.

    Per job: sum_j X[m,j] <= 1.  Per type: sum_m (s_m / c_j) X[m,j] <= 1 (capacity / c_j).
    With `job_scale` the columns hold Y = X / job_scale[m] (see `solve_allocation`).
    """
    M, J = problem.num_jobs, problem.num_types
    scale = np.ones(M) if job_scale is None else job_scale
    time_rows = per_job_rows(np.repeat(scale[:, None], J, axis=1), extra_cols)
    share = (problem.scale_factor * scale)[:, None] / np.maximum(problem.capacity, 1e-300)[None, :]
    capacity_rows = per_type_rows(share, extra_cols)
    A = sp.vstack([time_rows, capacity_rows], format="csr")
    return A, np.full(M + J, -np.inf), np.ones(M + J)


def allocation_bounds(problem: ThroughputProblem) -> tuple[np.ndarray, np.ndarray]:
    """Column bounds of X: X[m,j] >= 0, and X[m,j] = 0 where job m cannot run on type j.

    X[m,j] <= 1 is implied by sum_j X[m,j] <= 1, so it is not stated (fewer rows for IPMs).
    """
    upper = np.where(problem.runnable, np.inf, 0.0).ravel()
    return np.zeros_like(upper), upper


def solve_allocation(problem: ThroughputProblem, model: Model, X: Variable, solver: Solver,
                     job_scale: np.ndarray | None = None) -> tuple[Solution, np.ndarray | None]:
    """Solve `model` and return (solution, X) with X the (M, J) allocation clipped to [0, 1].

    `job_scale` undoes a per-job column scaling X[m,j] = job_scale[m] * Y[m,j]: a job whose
    need is tiny compared with others keeps O(1) coefficients in its own rows, so solver
    tolerances cannot round its need to zero (the error moves to capacity rows, where it is
    harmless).
    """
    solution = model.solve(solver)
    values = solution[X]
    if values is None:
        return solution, None
    if job_scale is not None:
        values = values * job_scale[:, None]
    values = np.clip(values, 0.0, 1.0)
    # Interior-point dust (and -0.0), relative to each job's largest share; lowering X keeps
    # every row feasible.
    values[values < 1e-9 * values.max(axis=1, keepdims=True)] = 0.0
    return solution, values


def effective_throughput(problem: ThroughputProblem, X: np.ndarray) -> np.ndarray:
    """(M,) steps/s: thr_m(X) = sum_j T[m,j] X[m,j]."""
    return np.einsum("mj,mj->m", problem.throughput, X)


def fill_leftover(problem: ThroughputProblem, X: np.ndarray,
                  eligible: np.ndarray | None = None) -> np.ndarray:
    """X plus the GPUs it leaves idle, never lowering any entry (only `eligible` jobs gain).

    Type by type, the idle GPUs of a type go to the jobs that can run there and have time to
    spare, in proportion to that spare time (capped by it). An exact max-min or makespan
    solution that holds every job exactly at the optimal level leaves GPUs idle; this keeps
    its objective (no job loses) while a job that could use them is not starved for nothing.
    """
    X = X.copy()
    runnable = problem.runnable if eligible is None else problem.runnable & eligible[:, None]
    s = problem.scale_factor
    for j in range(problem.num_types):
        idle = problem.capacity[j] - s @ X[:, j]
        spare = np.where(runnable[:, j], np.maximum(1.0 - X.sum(axis=1), 0.0), 0.0)
        demand = s @ spare
        if idle <= 1e-12 * problem.capacity[j] or demand <= 0:
            continue
        X[:, j] += spare * min(1.0, idle / demand) * (1 - 1e-12)
    return X
