"""What the throughput-matrix LPs share: solving one for its allocation (the LPs themselves are
stated with `schedopt.modeling` in `models.py`), effective throughput, handing out idle GPUs."""

from __future__ import annotations

import numpy as np

from schedopt.backends.session import Solver
from schedopt.modeling import Model, Variable
from schedopt.modeling.model import Solution
from schedopt.core.problem import ThroughputProblem


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
