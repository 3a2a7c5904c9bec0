"""A lower bound on SMD's sum of completion times from the linear relaxation of smd_exact's MILP
(docs/smd.md, "Beyond the paper"), evaluated so that it holds whatever the LP solver's accuracy.

For  min c x + offset  s.t.  rl <= A x <= ru,  l <= x <= u  and any row multipliers y,

    L(y) = offset + sum_i y_i r_i + sum_j min(d_j l_j, d_j u_j),   d = c - A^T y,
    r_i = ru_i where y_i < 0, rl_i where y_i > 0,

is below every feasible x (each y_i (A_i x - r_i) >= 0 there), integer or not. At the LP's
optimal duals it equals the LP optimum; at the duals an LP solver reports, a little off, it is
still a valid bound, only a little lower. A multiplier whose side of the row is unbounded is
set to 0 (its term would be -inf).

The relaxation keeps every machine's capacity rows, which the Lagrangian bound of
`schedopt.policies.smd.algorithm.lagrangian_bound` sums into cluster totals: where a task fits
only some machines (a NIC too small for it) or GPUs and the NIC bind on the same machines, the
LP's bound is the higher one (measured in docs/smd.md).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from schedopt.backends import LinearProgram, SolveOptions
from schedopt.backends.session import Solver
from schedopt.errors import SolveError
from schedopt.policies.smd.milp import ExactProgram

SOLVER = "highs"  # an LP only: its answer is checked by `dual_bound`, not trusted


def dual_bound(lp: LinearProgram, y: np.ndarray) -> float:
    """L(y) of the module docstring (a minimization; objective units), -inf when no finite
    bound follows from y."""
    if lp.maximize:
        raise ValueError("dual_bound expects a minimization")
    y = np.asarray(y, dtype=float).copy()
    y[(y < 0) & ~np.isfinite(lp.row_upper)] = 0.0
    y[(y > 0) & ~np.isfinite(lp.row_lower)] = 0.0
    rhs = np.where(y < 0, lp.row_upper, np.where(y > 0, lp.row_lower, 0.0))
    d = lp.c - lp.A.T @ y
    with np.errstate(invalid="ignore"):
        low = np.where(d > 0, d * lp.col_lower, np.where(d < 0, d * lp.col_upper, 0.0))
    if not np.all(np.isfinite(low)):
        return -np.inf
    return float(lp.objective_offset + y @ rhs + low.sum())


def relaxation(program: ExactProgram) -> tuple[float | None, np.ndarray | None]:
    """(`dual_bound` of the program's LP relaxation at the duals HiGHS finds, seconds; the LP's
    column values), both None when HiGHS reports no optimal solution. No time limit: a
    wall-clock limit would make the bound depend on the machine's load."""
    lp = dataclasses.replace(program.lp, integer=None)
    try:
        result = Solver(SOLVER, SolveOptions(threads=1)).solve(lp)
    except SolveError:
        return None, None
    if result.row_duals is None:
        return None, None
    value = dual_bound(lp, result.row_duals)
    return (value if np.isfinite(value) else None), result.x

