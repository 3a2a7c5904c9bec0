"""Finish-time fairness at scale: a few price-decomposition solves instead of a bisection over
whole LPs (docs/exact-max-min.md, "Finish-time fairness").

Job m's finish-time ratio is rho_m(X) = (t_m + R_m / thr_m(X)) / D_m (t_m: seconds since
arrival, R_m: remaining steps, D_m: its isolated finish time in seconds). rho_m <= rho holds iff
job m gets the fraction

    need_m(rho) = R_m / (Tbest_m (rho D_m - t_m))

of its best type's throughput (steps/s over steps/s), so rho is feasible iff the level problem
max z s.t. f[m] @ X[m] >= z need_m(rho) (f[m,j] = T[m,j] / Tbest_m) reaches z >= 1.

Each probe rho solves that level problem with `levels.max_level` (proven gap) and gives two
proven numbers:
  upper  the allocation's own max_m rho_m(X);
  lower  the GPU prices p >= 0 it returns certify every rho' with
         p @ c < sum_m h_m(need_m(rho'); p)   infeasible
         (h_m: job m's cheapest GPU cost of reaching a fraction, `level_hull`); the left side
         is fixed and the right side falls with rho', so the largest such rho' is found by a
         bisection on vectorized closed forms, no LP.
The next probe is that lower bound (a Newton-like step: exact in one probe when no job has
waited, since then need_m(rho) = need_m(1) / rho), or the midpoint when the interval did not
halve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedopt.core.deadline import is_past
from schedopt.backends.session import Solver
from schedopt.policies.gavel.level_hull import build_hulls, cost_on, segment_of
from schedopt.policies.gavel.levels import LevelProblem, max_level

ROOT_STEPS = 100  # bisection steps on rho for the price certificate (to float resolution)
LOOSE_WIDTH = 1e-2  # while (upper - lower) / upper is wider than this, probes are solved
LOOSE_GAP = 1e-3    # to this gap only (they only place the next probe)


@dataclass(frozen=True)
class FinishTimeJobs:
    """The active jobs (those with steps left) of a finish-time fairness problem.

    fraction: (A, J) f = T / Tbest on runnable types; best: (A,) Tbest in steps/s; gpus: (A,)
    GPUs per job; remaining: (A,) steps; waited: (A,) seconds since arrival t_m; isolated:
    (A,) seconds D_m; capacity: (J,) GPUs per type."""

    fraction: np.ndarray
    best: np.ndarray
    gpus: np.ndarray
    remaining: np.ndarray
    waited: np.ndarray
    isolated: np.ndarray
    capacity: np.ndarray

    def need(self, rho: float) -> np.ndarray:
        """(A,) fraction of the best type's throughput each job needs for ratio <= rho
        (inf where rho D_m <= t_m: no throughput is enough)."""
        slack = rho * self.isolated - self.waited
        with np.errstate(divide="ignore"):
            return np.where(slack > 0, self.remaining / (self.best * np.maximum(slack, 1e-300)),
                            np.inf)

    def ratios(self, X: np.ndarray) -> np.ndarray:
        """(A,) rho_m of an (A, J) allocation."""
        got = np.einsum("mj,mj->m", self.fraction, X) * self.best
        with np.errstate(divide="ignore"):
            return (self.waited + self.remaining / np.maximum(got, 1e-300)) / self.isolated


def price_lower_bound(jobs: FinishTimeJobs, prices: np.ndarray, lo: float, hi: float) -> float:
    """The largest rho in [lo, hi] that `prices` prove infeasible (module docstring); `lo`
    itself when they prove nothing above it."""
    prices = np.maximum(np.asarray(prices, dtype=float), 0.0)
    budget = float(prices @ jobs.capacity)
    hulls = build_hulls(jobs.fraction, jobs.gpus[:, None] * prices[None, :])
    top = hulls.top_level
    scale = max(budget, 1e-300)

    def infeasible(rho: float) -> bool:
        need = jobs.need(rho)
        if np.any(need > top * (1 + 1e-12)):
            return True
        if budget <= 0:
            return False
        cost = cost_on(hulls, segment_of(hulls, need), need)
        return float(cost.sum()) - budget > 1e-9 * scale

    if not np.isfinite(hi) or not infeasible(lo):
        return lo
    if infeasible(hi):
        return hi
    for _ in range(ROOT_STEPS):
        middle = 0.5 * (lo + hi)
        if middle <= lo or middle >= hi:
            break
        if infeasible(middle):
            lo = middle
        else:
            hi = middle
    return lo


@dataclass
class FinishTimeSolution:
    """allocation: (A, J) the best allocation found; upper: its max ratio; lower: the largest
    ratio proven infeasible; level_solves and lp_solves (the restricted LPs inside them);
    timed_out: the deadline stopped it."""

    allocation: np.ndarray | None
    upper: float
    lower: float
    level_solves: int
    lp_solves: int
    timed_out: bool


class _Rows:
    """The level problem's rows at a probe: jobs as they are, except jobs whose f row is a 0/1
    pattern (the agnostic view: every runnable type alike), merged exactly per pattern.

    Within a pattern only a job's total time counts, so the jobs of group k can reach level z
    iff their summed GPU-time z sum_m s_m need_m fits on the pattern's types, with z at most
    a_k = min_m 1 / need_m (each job's own time); one row with gain a_k on the pattern and
    gpus a_k sum_m s_m need_m states exactly that, and any of its allocations splits back
    over the members in proportion to s_m need_m (`expand`). Without the merge, jobs tied
    across all their types would all stay free in the decomposition's restricted LP."""

    def __init__(self, jobs: FinishTimeJobs):
        fraction = jobs.fraction
        binary = np.all((fraction == 0.0) | (fraction == 1.0), axis=1)
        self.single = np.flatnonzero(~binary)
        merged = np.flatnonzero(binary)
        codes = (fraction[merged] > 0) @ (1 << np.arange(fraction.shape[1]))
        patterns, self.group_of = np.unique(codes, return_inverse=True)
        self.merged = merged
        self.pattern = fraction[merged][np.unique(self.group_of, return_index=True)[1]]
        self.jobs = jobs

    def problem(self, need: np.ndarray) -> LevelProblem:
        jobs, groups = self.jobs, self.pattern.shape[0]
        single = self.single
        top = np.full(groups, np.inf)
        np.minimum.at(top, self.group_of, 1.0 / need[self.merged])
        load = np.bincount(self.group_of, jobs.gpus[self.merged] * need[self.merged], groups)
        self.top = top
        gain = np.vstack([jobs.fraction[single] / need[single, None],
                          top[:, None] * self.pattern])
        gpus = np.concatenate([jobs.gpus[single], top * load])
        return LevelProblem(gain, gpus, jobs.capacity)

    def expand(self, allocation: np.ndarray, need: np.ndarray) -> np.ndarray:
        """(A, J) job allocation of the rows' allocation (`problem`'s last call)."""
        X = np.empty((self.jobs.fraction.shape[0], allocation.shape[1]))
        X[self.single] = allocation[:self.single.size]
        grouped = allocation[self.single.size:]
        total = grouped.sum(axis=1)
        level = self.top * total                                  # each group's z
        split = grouped / np.where(total > 0, total, 1.0)[:, None]
        g = self.group_of
        X[self.merged] = (level[g] * need[self.merged])[:, None] * split[g]
        return X


def minimize_max_ratio(jobs: FinishTimeJobs, lower: float, start_X: np.ndarray | None,
                       tolerance: float, max_iterations: int, solver: Solver | None,
                       deadline: float | None) -> FinishTimeSolution:
    """min max_m rho_m(X) to (upper - lower) <= tolerance * upper, starting from a proven
    lower bound `lower` and an allocation `start_X` (or None); at most `max_iterations`
    level solves; stops at `deadline` (a time.perf_counter() value) with the best so far."""
    gap = min(1e-6, tolerance / 8)
    best_X = start_X
    upper = float(np.max(jobs.ratios(start_X))) if start_X is not None else np.inf
    probe, previous, solves, lps = lower, None, 0, 0
    timed_out = False
    rows = _Rows(jobs)
    while upper - lower > tolerance * upper and solves < max_iterations:
        if is_past(deadline):
            timed_out = True
            break
        need = jobs.need(probe)
        # far from converged only the prices matter: a loose gap saves restricted LPs
        loose = gap if upper - lower <= LOOSE_WIDTH * upper else LOOSE_GAP
        solution = max_level(rows.problem(need), start=previous, gap=loose, solver=solver,
                             deadline=deadline)
        solves += 1
        lps += int(solution.details.get("rounds", 0))
        timed_out = solution.timed_out
        width = upper - lower
        X = rows.expand(solution.allocation, need)
        found = float(np.max(jobs.ratios(X)))
        if found < upper:
            upper, best_X = found, X
        if solution.bound < 1.0:
            lower = max(lower, probe)
        lower = max(lower, price_lower_bound(jobs, solution.prices, lower, upper))
        if solution.level > 0:
            previous = solution
        if timed_out:
            break
        # Newton-like: probe the certified lower bound, nudged inside the tolerance so a
        # probe at the optimum proves it; bisect when the interval did not halve.
        nudged = lower * (1 + tolerance / 4)
        probe = nudged if upper - lower <= 0.5 * width and nudged < upper else \
            0.5 * (lower + upper)
    return FinishTimeSolution(best_X, upper, lower, solves, lps, timed_out)
