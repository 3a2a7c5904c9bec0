"""A lower bound on SMD's sum of completion times from the linear relaxation of smd_exact's MILP
(docs/smd.md, "Beyond the paper"), evaluated so that it holds whatever the LP solver's accuracy.

For  min c x + offset  s.t.  rl <= A x <= ru,  l <= x <= u  and any row multipliers y,

    L(y) = offset + sum_i y_i r_i + sum_j min(d_j l_j, d_j u_j),   d = c - A^T y,
    r_i = ru_i where y_i < 0, rl_i where y_i > 0,

is below every feasible x (each y_i (A_i x - r_i) >= 0 there), integer or not. At the LP's
optimal duals it equals the LP optimum; at the duals an LP solver reports, a little off, it is
still a valid bound, only a little lower. A multiplier whose side of the row is unbounded is
set to 0 (its term would be -inf).

The same multipliers bound how far any point that is better than a known objective can lie
from the LP's bounds (`reduced_cost_bounds`, "reduced-cost fixing"): for every feasible x,
c x + offset - L(y) >= sum_j |d_j| dist_j, dist_j = x_j - l_j where d_j > 0 and u_j - x_j where
d_j < 0, so x with objective <= U has dist_j <= (U - L(y)) / |d_j|, rounded down for integer
columns. smd_exact shrinks its MILP by this before the solver starts.

The relaxation keeps every machine's capacity rows, which the Lagrangian bound of
`schedopt.policies.smd.algorithm.lagrangian_bound` sums into cluster totals: where a task fits
only some machines (a NIC too small for it) or GPUs and the NIC bind on the same machines, the
LP's bound is the higher one (measured in docs/smd.md).

`configuration_relaxation` is stronger: the MILP with every job's configuration integer and only
the placement fractional, solved by SCIP, whose proven bound holds even when a time limit stops
it. On 40-job NIC-bound instances it lies 0.02-0.35% above the LP's bound, and smd_exact's
CP-SAT bound after 30 s is at most this value (docs/smd.md, "smd_exact").
"""

from __future__ import annotations

import dataclasses

import numpy as np

from schedopt.backends import LinearProgram, SolveOptions, Status
from schedopt.backends.session import Solver
from schedopt.errors import SolveError
from schedopt.policies.smd.milp import ExactProgram

SOLVER = "highs"  # an LP only: its answer is checked by `dual_bound`, not trusted
CONFIGURATION_SOLVER = "scip"  # a MILP with continuous columns: CP-SAT cannot take it


def dual_bound(lp: LinearProgram, y: np.ndarray) -> float:
    """L(y) of the module docstring (a minimization; objective units), -inf when no finite
    bound follows from y."""
    if lp.maximize:
        raise ValueError("dual_bound expects a minimization")
    y = _multipliers(lp, y)
    rhs = np.where(y < 0, lp.row_upper, np.where(y > 0, lp.row_lower, 0.0))
    d = lp.c - lp.A.T @ y
    with np.errstate(invalid="ignore"):
        low = np.where(d > 0, d * lp.col_lower, np.where(d < 0, d * lp.col_upper, 0.0))
    if not np.all(np.isfinite(low)):
        return -np.inf
    return float(lp.objective_offset + y @ rhs + low.sum())


def _multipliers(lp: LinearProgram, y: np.ndarray) -> np.ndarray:
    """y with the multipliers of rows unbounded on the side they press set to 0."""
    y = np.asarray(y, dtype=float).copy()
    y[(y < 0) & ~np.isfinite(lp.row_upper)] = 0.0
    y[(y > 0) & ~np.isfinite(lp.row_lower)] = 0.0
    return y


def reduced_cost_bounds(lp: LinearProgram, y: np.ndarray,
                        limit: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(col_lower, col_upper) that every feasible point of `lp` (a minimization) with objective
    <= `limit` satisfies, from multipliers y (module docstring); None when no point has an
    objective <= limit (limit below `dual_bound`). Integer columns get integer bounds."""
    bound = dual_bound(lp, y)
    if not np.isfinite(bound):
        return lp.col_lower.copy(), lp.col_upper.copy()
    slack = limit - bound + 1e-9 * max(1.0, abs(limit))  # the allowance only loosens bounds
    if slack < 0:
        return None
    d = lp.c - lp.A.T @ _multipliers(lp, y)
    with np.errstate(divide="ignore"):
        reach = np.where(d != 0, slack / np.abs(d), np.inf)
    if lp.integer is not None:
        reach = np.where(lp.integer, np.floor(reach + 1e-9), reach)
    lower = np.where(d < 0, np.maximum(lp.col_lower, lp.col_upper - reach), lp.col_lower)
    upper = np.where(d > 0, np.minimum(lp.col_upper, lp.col_lower + reach), lp.col_upper)
    return lower, upper


def solve_relaxation(lp: LinearProgram) -> tuple[float | None, np.ndarray | None,
                                                 np.ndarray | None]:
    """(`dual_bound` of lp without integrality at the duals HiGHS finds, objective units; the
    LP's column values; those duals), all None when HiGHS reports no optimal solution. No time
    limit: a wall-clock limit would make the bound depend on the machine's load."""
    lp = dataclasses.replace(lp, integer=None)
    try:
        result = Solver(SOLVER, SolveOptions(threads=1)).solve(lp)
    except SolveError:
        return None, None, None
    if result.row_duals is None:
        return None, None, None
    value = dual_bound(lp, result.row_duals)
    return (value if np.isfinite(value) else None), result.x, result.row_duals


def relaxation(program: ExactProgram) -> tuple[float | None, np.ndarray | None]:
    """(`dual_bound` of the program's LP relaxation at the duals HiGHS finds, seconds; the LP's
    column values), both None when HiGHS reports no optimal solution."""
    value, x, _ = solve_relaxation(program.lp)
    return value, x


def configuration_relaxation(program: ExactProgram,
                             time_limit: float | None = None) -> float | None:
    """A lower bound on the program's optimum (seconds) from its MILP with only the configuration
    columns integer and the placement fractional: SCIP's proven bound, valid also when the time
    limit (seconds) stops it; None when SCIP is not installed or proves nothing."""
    return configuration_choice(program, time_limit=time_limit)[0]


def configuration_choice(program: ExactProgram, lp: LinearProgram | None = None,
                         time_limit: float | None = None) -> tuple[float | None,
                                                                   np.ndarray | None]:
    """(`configuration_relaxation`'s bound, seconds; the configuration index of each job (n,) in
    SCIP's optimal solution of that relaxation, None unless SCIP proved it optimal), on the
    program's MILP or on `lp`, the same columns with tighter bounds (smd_exact's, shrunk by
    reduced costs: its relaxation bounds every solution those bounds keep)."""
    lp = program.lp if lp is None else lp
    integer = np.zeros(lp.num_cols, dtype=bool)
    integer[program.z.columns] = True
    try:
        result = Solver(CONFIGURATION_SOLVER, SolveOptions(time_limit=time_limit, threads=1,
                                                           mip_gap=0.0)).solve(
            dataclasses.replace(lp, integer=integer))
    except SolveError:
        return None, None
    bound = result.bound
    if bound is None or not np.isfinite(bound):
        return None, None
    choice = None
    if result.status is Status.OPTIMAL and result.x is not None:
        choice = np.argmax(result.x[program.z.columns].reshape(program.z.shape), axis=1)
    return float(bound), choice
