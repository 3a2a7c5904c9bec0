"""Column generation for space-sharing max-min fairness (`master.py` has the LP).

The master LP holds every solo column and a working set of pair columns (at first those of
`seed.class_seed`, if any), loaded once into the backend (`Solver.incremental`, a backend with
ADD_COLUMNS): new columns go in with `add_columns`, so the primal simplex restarts from the
last basis, which stays feasible. From the master's row duals (u: time rows, v: GPU rows,
y <= 0: fairness rows; reduced cost = cost - column . duals) the pair p = (m, m', j) has the
reduced cost

    rc_p = b_m + b_m' - y_m Q_j[m,m'] / Tmax_m - y_m' Q_j[m',m] / Tmax_m',
    b_m = -(u_m + v_j s / (2 c_j))           (s = s_m = s_m', so the GPU term splits in two)

priced for all (m, m') of a GPU type at once as (M, M) arrays. Each round adds, for every job
and type, its best partner when that pair's rc > tolerance, at most `batch` columns, largest
first.

Bound, every round: the duals are feasible for every column in the master; raising u_m by
delta_m = max(0, max_j rc_solo[m,j], max_{p ∋ m} rc_p / 2) makes them feasible for every solo
and pair column too (a pair gets delta_m + delta_m' >= rc_p). Every column except t has zero
cost, so the duals may be rescaled to make t's reduced cost zero: divide by
S = sum_m |y_m| k_m. Weak duality: optimum <= (sum_m u_m + sum_j v_j + sum_m delta_m) / S
(the time and GPU rows have right-hand side 1, the fairness rows 0). The loop stops when no
pair prices positive or the best bound is within `gap_tolerance` of the master's value.
"""

from __future__ import annotations

import time

import numpy as np

from schedopt.backends import Status
from schedopt.backends.session import Solver
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.packed.master import (Candidates, Stage, Target, fairness_duals, master_lp,
                                             pair_columns, scaling)
from schedopt.core.sparse_import import scipy_sparse

sp = scipy_sparse()

# HiGHS options of the master (`IncrementalProgram.set_option`): primal simplex, because after
# new columns the basis is still primal feasible; tight tolerances, as the bound is proven.
MASTER_OPTIONS = (("simplex_strategy", 4), ("primal_feasibility_tolerance", 1e-9),
                  ("dual_feasibility_tolerance", 1e-9))


def column_generation(problem: ThroughputProblem, cand: Candidates, solver: Solver,
                      target: Target | None = None, start: tuple | None = None,
                      **options) -> Stage:
    """Solve the space-sharing LP of `target` (default: max-min fairness) by pricing pair
    columns in from the master's duals (`Master`; options: batch, max_iterations, tolerance,
    gap_tolerance)."""
    return Master(problem, cand, solver, target, start, **options).run()


class Master:
    """The master LP, loaded once into the backend, and the pricing loop over it.

    solver: a backend with ADD_COLUMNS and DUALS; start: (j, m, m') pair columns to begin
    with; batch: most columns added per round (default max(200, M / 4)); tolerance: smallest
    reduced cost worth a column (rows are O(1)); gap_tolerance: stop once the bound is this
    close (relative; 0: only when no column prices positive, so the duals are optimal for
    the LP with every column); solver.settings.time_limit bounds each `run`, not each master
    solve. floors=True makes the master ready for `retarget` (water filling): one column z_m
    per job, -1 in its fairness row, fixed at the row's floor by its bounds."""

    def __init__(self, problem: ThroughputProblem, cand: Candidates, solver: Solver,
                 target: Target | None = None, start: tuple | None = None,
                 batch: int | None = None, max_iterations: int = 1000, tolerance: float = 1e-9,
                 gap_tolerance: float = 1e-9, floors: bool = False):
        M, J = problem.num_jobs, problem.num_types
        self.problem, self.cand, self.solver = problem, cand, solver
        self.batch = batch or max(200, M // 4)
        self.max_iterations, self.tolerance = max_iterations, tolerance
        self.gap_tolerance = gap_tolerance
        self.target = target or Target.max_min(problem)
        self.pricer = _Pricer(cand)
        self.master = solver.with_settings(time_limit=None).incremental(
            master_lp(problem, self.target.k, self.target.floor))
        for name, value in MASTER_OPTIONS:
            self.master.set_option(name, value)
        self.t_col, self.num_cols = M * J, M * J + 1
        self.pair_cols = np.zeros(0, dtype=np.int64)
        self.added = [np.zeros(0, dtype=np.int64)] * 3  # (j, m, m') of the pair columns
        self.new = start if start is not None and start[0].size else None
        self.seeded = 0 if self.new is None else self.new[0].size
        self.z_cols = None
        if floors:
            rows = M + J + np.arange(M)
            self._add(sp.csc_matrix((-np.ones(M), (rows, np.arange(M))), shape=(2 * M + J, M)),
                      0.0, 0.0)
            self.z_cols = np.arange(self.num_cols - M, self.num_cols)

    def _add(self, block: sp.csc_matrix, cost: float, upper: float) -> None:
        self.master.add_columns(cost, 0.0, upper, block)
        self.num_cols += block.shape[1]

    def retarget(self, target: Target) -> None:
        """Solve for `target` next (new t coefficients and floors; the pair columns and the
        basis stay): the old t column is fixed at 0, a new one added, z fixed at the floors."""
        M, J = self.problem.num_jobs, self.problem.num_types
        self.master.set_column_bounds([self.t_col], 0.0, 0.0)
        rising = np.flatnonzero(target.k)
        self._add(sp.csc_matrix((-target.k[rising], (M + J + rising, np.zeros_like(rising))),
                                shape=(2 * M + J, 1)), 1.0, np.inf)
        self.t_col = self.num_cols - 1
        floor = np.zeros(M) if target.floor is None else target.floor
        self.master.set_column_bounds(self.z_cols, floor, floor)
        self.target = target

    def run(self) -> Stage:
        """Price pair columns in until none helps or the bound is within gap_tolerance."""
        problem, cand, solver, master = self.problem, self.cand, self.solver, self.master
        began = time.perf_counter()
        time_limit = solver.settings.time_limit
        M, J = problem.num_jobs, problem.num_types
        Tmax, k = scaling(problem)[0], self.target.k
        floor = np.zeros(M) if self.target.floor is None else self.target.floor
        share = problem.scale_factor[:, None] / problem.capacity[None, :]  # GPU-row coefficients
        solo = np.where(problem.runnable, problem.throughput / Tmax[:, None], np.nan)
        new, added = self.new, self.added
        bound, iterations, lp_seconds, price_seconds = np.inf, 0, 0.0, 0.0
        converged = False
        while True:
            if new is not None:
                self._add(pair_columns(problem, cand, *new), 0.0, np.inf)
                self.pair_cols = np.concatenate([
                    self.pair_cols, np.arange(self.num_cols - new[0].size, self.num_cols)])
                added = [np.concatenate([a, b]) for a, b in zip(added, new)]
            iterations += 1
            result = master.solve()  # recorded in `solver`: the last one is the final master LP
            lp_seconds += result.solve_seconds
            if result.status is not Status.OPTIMAL:
                self.added, self.new = added, None
                return Stage(None, tuple(added), None, False, None, result, {"method": "columns"})
            tic = time.perf_counter()
            pi = result.row_duals
            u, v, y = np.maximum(pi[:M], 0), np.maximum(pi[M:M + J], 0), np.minimum(pi[M + J:], 0)
            rc_solo = -(u[:, None] + v[None, :] * share + y[:, None] * solo)
            delta = np.maximum(np.nanmax(rc_solo, axis=1, initial=0.0), 0.0)
            best, partner = np.full((J, M), -np.inf), np.zeros((J, M), dtype=np.int64)
            for j in range(J):  # GPU types; each an (M, M) numpy step
                here = added[0] == j
                top, partner[j], best[j] = self.pricer.price(
                    j, -(u + 0.5 * v[j] * share[:, j]), y / Tmax, added[1][here], added[2][here])
                delta = np.maximum(delta, 0.5 * top)
            S = float(-(y @ k))
            if S > 0:
                bound = min(bound, (u.sum() + v.sum() + delta.sum() + y @ floor) / S)
            new = _pick(best, partner, self.tolerance, self.batch)
            price_seconds += time.perf_counter() - tic
            if new[0].size == 0 or bound - result.objective <= self.gap_tolerance * abs(bound):
                converged, new = True, None
                break
            if iterations >= self.max_iterations or (time_limit is not None and
                                                      time.perf_counter() - began > time_limit):
                new = None
                break
        self.added, self.new = added, new
        details = {"method": "columns", "iterations": iterations,
                   "columns_generated": added[0].size, "seed_columns": self.seeded,
                   "candidate_pairs": cand.pairs - cand.pruned, "pruned_pairs": cand.pruned,
                   "lp_seconds": lp_seconds, "pricing_seconds": price_seconds}
        x = np.concatenate([result.x[:M * J], result.x[[self.t_col]], result.x[self.pair_cols]])
        return Stage(x, tuple(added), float(bound) if np.isfinite(bound) else None, converged,
                     fairness_duals(result.row_duals, problem, k), result, details)


class _Pricer:
    """Reduced costs of every candidate pair of one GPU type, in reused (M, M) buffers."""

    def __init__(self, cand: Candidates):
        self.Q = cand.Q
        self.QT = np.ascontiguousarray(cand.Q.transpose(0, 2, 1))
        self.outside = ~cand.mask
        M = cand.Q.shape[1]
        self.rc, self.tmp, self.rows = np.empty((M, M)), np.empty((M, M)), np.arange(M)

    def price(self, j: int, b: np.ndarray, y_scaled: np.ndarray, am: np.ndarray, aq: np.ndarray):
        """(max over all partners, best partner not yet in the master, its rc) per job.
        b: b_m (module docstring); y_scaled: y_m / Tmax_m; (am, aq): pairs already in."""
        rc, tmp = self.rc, self.tmp  # rc without b_m, which is constant along a row
        np.multiply(self.QT[j], -y_scaled[None, :], out=rc)
        rc += b[None, :]
        np.multiply(self.Q[j], -y_scaled[:, None], out=tmp)
        rc += tmp
        np.copyto(rc, -np.inf, where=self.outside[j])
        top = rc.max(axis=1) + b
        rc[am, aq] = rc[aq, am] = -np.inf
        partner = rc.argmax(axis=1)
        return np.maximum(top, 0.0), partner, rc[self.rows, partner] + b


def _pick(best: np.ndarray, partner: np.ndarray, tolerance: float, batch: int):
    """(j, m, m') with m < m' of the best pairs: each job's best partner on each type whose
    reduced cost exceeds `tolerance`, duplicates dropped, the `batch` largest."""
    J, M = best.shape
    j, m = np.nonzero(best > tolerance)
    q = partner[j, m]
    lo, hi = np.minimum(m, q), np.maximum(m, q)
    _, first = np.unique((j * M + lo) * M + hi, return_index=True)
    order = first[np.argsort(-best[j[first], m[first]], kind="stable")][:batch]
    return j[order], lo[order], hi[order]
