"""`smd_exact`: the exact reference for SMD, a MILP over configuration binaries with placement.

With each job's (w, p) configurations enumerated (`SmdProblem.configurations`, dominated ones
left out), T_ik = T_i(w_k, p_k) is a constant, so the objective is linear:

    min  sum_{i,k} T_ik z_ik
    s.t. sum_k z_ik = 1                                    every job one configuration
         sum_h x_ih = sum_k w_k z_ik,  sum_h y_ih = sum_k p_k z_ik     its tasks all placed
         sum_i a_ir x_ih + b_ir y_ih <= C_hr               every machine h, resource r
         z binary; x_ih, y_ih integer >= 0 (workers / PSs of job i on machine h)

Capacity rows are written only for resources some task asks for on machines with a finite
capacity; x_ih is bounded by max_workers_i and by what machine h holds of job i's workers
alone (y likewise). Every column is integer, so CP-SAT takes it (the objective coefficients,
seconds, stay floats: CP-SAT scales them itself, and the objective reported here is recomputed
from the placement). HiGHS is refused for MILPs (issue 6: highspy 1.14's MIP answers are
wrong); `cpsat` is the default, chosen by measurement (benchmarks/README.md).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from schedopt.backends import LinearProgram, SolveOptions, solve_lp
from schedopt.policies.smd.algorithm import SmdSolution, solution
from schedopt.policies.smd.model import Configurations, Placement, SmdProblem

DEFAULT_SOLVER = "cpsat"


def exact_program(problem: SmdProblem, cfg: Configurations) -> tuple[LinearProgram, np.ndarray,
                                                                        np.ndarray]:
    """(the MILP, job index and configuration index of each z column). Columns: z (one per
    valid configuration, job-major), then x[i, h] (n H, job-major), then y[i, h]."""
    n, H = problem.num_jobs, problem.num_machines
    zi, zk = np.nonzero(cfg.valid)
    nz, nx = zi.size, n * H
    cols = nz + 2 * nx
    z_col = np.arange(nz)
    x_col = nz + np.arange(nx).reshape(n, H)
    y_col = x_col + nx
    one = sp.csr_matrix((np.ones(nz), (zi, z_col)), shape=(n, cols))
    jobs = np.repeat(np.arange(n), H)
    link_w = sp.csr_matrix((np.r_[np.ones(nx), -cfg.workers[zi, zk]],
                            (np.r_[jobs, zi], np.r_[x_col.ravel(), z_col])), shape=(n, cols))
    link_p = sp.csr_matrix((np.r_[np.ones(nx), -cfg.ps[zi, zk]],
                            (np.r_[jobs, zi], np.r_[y_col.ravel(), z_col])), shape=(n, cols))
    a, b, C = problem.worker_demand, problem.ps_demand, problem.capacity
    asked = (a > 0).any(axis=0) | (b > 0).any(axis=0)
    rows = [(h, r) for h in range(H) for r in range(C.shape[1]) if asked[r] and np.isfinite(C[h, r])]
    data, row_idx, col_idx = [], [], []
    for row, (h, r) in enumerate(rows):
        data += [a[:, r], b[:, r]]
        col_idx += [x_col[:, h], y_col[:, h]]
        row_idx.append(np.full(2 * n, row))
    capacity = sp.csr_matrix((np.concatenate(data) if data else [],
                              (np.concatenate(row_idx) if rows else [],
                               np.concatenate(col_idx) if data else [])), shape=(len(rows), cols))
    A = sp.vstack([one, link_w, link_p, capacity]).tocsr()
    A.eliminate_zeros()
    cap = np.array([C[h, r] for h, r in rows])
    with np.errstate(divide="ignore", invalid="ignore"):
        fit_w = np.where(a[:, None, :] > 0, C[None, :, :] / a[:, None, :], np.inf).min(axis=2)
        fit_p = np.where(b[:, None, :] > 0, C[None, :, :] / b[:, None, :], np.inf).min(axis=2)
    upper_x = np.minimum(np.floor(fit_w + 1e-9), problem.max_workers[:, None])
    upper_y = np.minimum(np.floor(fit_p + 1e-9), problem.max_ps[:, None])
    lp = LinearProgram(
        c=np.r_[cfg.time[zi, zk], np.zeros(2 * nx)], A=A,
        row_lower=np.r_[np.ones(n), np.zeros(2 * n), np.full(len(rows), -np.inf)],
        row_upper=np.r_[np.ones(n), np.zeros(2 * n), cap],
        col_lower=np.zeros(cols), col_upper=np.r_[np.ones(nz), upper_x.ravel(), upper_y.ravel()],
        integer=np.ones(cols, dtype=bool),
    )
    return lp, zi, zk


def smd_exact(problem: SmdProblem, solver: str = DEFAULT_SOLVER,
              options: SolveOptions | None = None) -> SmdSolution:
    """The exact optimum (status optimal; with a time limit possibly feasible, `bound` the
    solver's proven lower bound, seconds). details: solver termination, gap, columns, rows."""
    clock = time.perf_counter()
    cfg = problem.configurations()
    lp, zi, zk = exact_program(problem, cfg)
    result = solve_lp(lp, solver, options or SolveOptions())
    details = {"termination": result.termination, "columns": lp.num_cols, "rows": lp.num_rows}
    if not result.status.has_solution:
        return solution(problem, None, solver, clock, status=result.status, details=details)
    n, H, nz = problem.num_jobs, problem.num_machines, zi.size
    x = np.rint(result.x).astype(np.int64)
    placement = Placement(x[nz:nz + n * H].reshape(n, H), x[nz + n * H:].reshape(n, H))
    out = solution(problem, placement, solver, clock, status=result.status, bound=result.bound,
                   details=details)
    out.details["gap"] = None if out.bound is None else \
        max(out.objective - out.bound, 0.0) / max(abs(out.objective), 1e-12)
    return out
