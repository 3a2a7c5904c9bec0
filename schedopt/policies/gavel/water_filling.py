"""Lexicographic max-min fairness by water filling, flat and per user (docs/formulations.md §1).

Both policies are *progressive filling*. A water level C rises from 0; every rising job's level
a[m] @ X[m] must keep up with it at its own rate; a job is frozen at its level once it cannot
rise further without lowering a job that is no better off. Each stage solves one LP,

    max C  s.t.  a[m] @ X[m] >= base[m] + rate[m] C     rising jobs
                 a[m] @ X[m] >= floor[m]                frozen jobs (their final level)
                 sum_j X[m,j] <= 1,   sum_m s_m X[m,j] <= c_j,   X >= 0,

and freezes (1) every rising job whose row has a positive dual y_m: by complementary slackness
it sits exactly at base + rate C in *every* optimum, so it is bottlenecked (a job whose dual is
0 although it is stuck freezes at the next stage, at the same C), and (2) every rising job that
reaches its own top level top_m = max_j a[m,j] (all of its time on its best type) first.
Caps are batched: with cap_m = (top_m - base_m) / rate_m the water level where job m tops
out, the stage ends at the largest tau where "jobs with cap_m < tau at their top, the others
at base + rate tau" is feasible. Any GPU prices bound that tau from above in closed form (weak
duality over the jobs' cheapest-cost hulls, `price_bound_of`), tightly at an LP's own prices,
so the stage re-solves its LP with the jobs whose caps lie under the bound pinned at their
top: reaching the largest pinned cap proves the count. Probes (pinned jobs' rates lowered to
(top - base) / theta, so the LP reaches theta iff it is feasible) settle the other cases. A
stage takes a few LPs however many distinct caps bind, never one per cap.

water_filling: a = models.normalized_throughput (s_m T[m,j] / (w_m thr^eq_m); agnostic: s_m /
w_m on runnable types), rate 1, base 0. The result is the leximin allocation of the vector
(a[m] @ X[m])_m, Gavel's max_min_fairness_water_filling(_perf): its smallest level is
max_min_fairness's optimum, the next smallest is as large as possible given that, and so on.
With method "decomposition" (what "auto" picks when no solver is named) each stage is
`levels.max_level` (warm-started from the previous stage's prices, proven gap `gap`); method
"lp" (or "auto" with a named backend) solves each stage as one LP on that backend.

hierarchical_water_filling (Gavel's water filling with priority_reweighting_policies =
'fairness' for every entity): a[m,j] = s_m T[m,j] / thr^eq_m (agnostic: s_m on runnable
types), no job weight inside. Users u have weights W_u (instance `users`, default 1); a job
without a user is a user of its own weighing its job weight. A rising job m of user u rises at
rate W_u w_m / (sum of w_k over u's rising jobs), recomputed whenever one of u's jobs freezes.
Hence, at every water level C:
  - every user with a rising job has the same share  (sum_{m in u} a[m] @ X[m]) / W_u = C;
  - inside a user, its rising jobs have equal a[m] @ X[m] / w_m;
  - a frozen job's weight passes to its own user's rising jobs, never to other users.
A user's share is therefore filled first (users compared by share per unit weight), then split
among its jobs by job weight. With no users at all it equals water_filling. Inside a stage a
user's rising jobs sit at w_m lambda_u with sum_m min(top_m, w_m lambda_u) growing by W_u per
unit of C (`user_paths`), so jobs topping out (and their siblings' faster rates) are batched
like flat caps. Its objective is the first stage's C: max over X of min_m a[m] @ X[m] / rate_m
at the starting rates (max-min fairness with job weights W_u w_m / sum_{k in u} w_k). Its
stages have per-job offsets (base != 0, possibly negative), which `levels.max_level` takes as
each rising job's floor, so the decomposition solves them too (`method` as for water_filling).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from schedopt.core.deadline import deadline_after, is_past, seconds_left
from schedopt.backends import Status
from schedopt.backends.session import Solver
from schedopt.errors import PolicyError
from schedopt.policies.gavel import lp as gavel
from schedopt.core.outcome import Outcome, Termination
from schedopt.policies.gavel.blocks import solve_allocation
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.gavel.level_hull import build_hulls, cost_on, segment_of
from schedopt.policies.gavel.levels import LevelProblem, max_level
from schedopt.policies.gavel.models import normalized_throughput, stage_model
from schedopt.policies.gavel.solving import DECOMPOSITION, Method, choose_method, lp_solver
GAP = 1e-7             # proven relative gap of every max_level stage
DUAL_SHARE = 1e-6      # a job is bottlenecked when its dual share y_m rate_m (they sum to 1)
DUAL_FLOOR = 1e-9      # exceeds both this fraction of the largest share and this value
CAP_TOL = 1e-7         # a rising job within this relative distance of its top is frozen there
FAST_PROBES = 8        # cap probes per stage before plain bisection


@dataclass
class _Stage:
    """One LP of a stage: C reached (proven feasible by `allocation`), its upper bound, each
    job's dual share y_m rate_m (>= 0; the rising jobs' sum to 1), the GPU prices (duals of
    the capacity rows, per GPU) and the warm start."""

    level: float
    bound: float
    allocation: np.ndarray
    share: np.ndarray
    optimal: bool
    prices: np.ndarray | None = None
    warm: object = None


# A stage solver: (rising, base, rate, floor, warm, hint) -> _Stage, or None without a
# solution; warm: a previous _Stage.warm, hint: the level expected (None: unknown).
StageSolver = Callable[..., "_Stage | None"]


def _levels(a: np.ndarray, X: np.ndarray) -> np.ndarray:
    return np.einsum("mj,mj->m", a, X)


def _reached(a, X, rising, base, rate) -> float:
    """The water level X proves: min over rising jobs of (a[m] @ X[m] - base[m]) / rate[m]."""
    return float(np.min((_levels(a, X)[rising] - base[rising]) / rate[rising]))


def decomposition_stages(problem: ThroughputProblem, a: np.ndarray, gap: float = GAP,
                         solver: Solver | None = None,
                         deadline: float | None = None) -> StageSolver:
    """Stages solved by `levels.max_level`: a rising job's gain is a / rate and its offset
    base / rate (a[m] @ X[m] >= base + rate C); solver: the restricted LPs' (`max_level`);
    deadline: time.perf_counter() value at which every stage stops with what it has.

    A frozen job held at its top level with a single best type has one allocation (all of its
    time there): it leaves the level problem, its GPUs leave the capacity, unless that would
    leave some other job fewer GPUs of a type than it needs (max_level would then forbid it
    the type)."""
    s, capacity = problem.scale_factor, problem.capacity
    top = a.max(axis=1)
    best = np.argmax(a, axis=1)
    single = (a >= top[:, None] * (1 - 1e-12)).sum(axis=1) == 1
    J = a.shape[1]

    def solve(rising, base, rate, floor, warm, hint):
        if is_past(deadline):
            return None
        fixed = ~rising & single & (floor >= top * (1 - 1e-12))
        left = capacity - np.bincount(best[fixed], weights=s[fixed], minlength=J)
        needs = np.max(np.where(a[~fixed] > 0, s[~fixed, None], 0.0), axis=0, initial=0.0)
        if not fixed.any() or np.any(left < np.maximum(needs, 1e-9 * capacity)):
            fixed, left = np.zeros_like(fixed), capacity
        keep = ~fixed
        divisor = np.where(rising, rate, 1.0)  # rising: a @ X >= base + rate C, over rate
        gain = (a / divisor[:, None])[keep]
        if warm is not None and hint is not None and np.isfinite(hint):
            warm = dataclasses.replace(warm, level=float(hint))  # its prices, at this level
        try:
            solution = max_level(LevelProblem(gain, s[keep], left, rising[keep],
                                              np.where(rising, base / divisor, floor)[keep]),
                                 start=warm, gap=gap, solver=solver, deadline=deadline)
        except PolicyError:  # no solution: floors that cannot all be met
            return None
        X = np.zeros_like(a)
        X[keep] = solution.allocation
        X[np.flatnonzero(fixed), best[fixed]] = 1.0
        marginal = np.zeros(a.shape[0])
        marginal[keep] = solution.marginal
        return _Stage(solution.level, solution.bound, X, np.where(rising, marginal, 0.0),
                      solution.status is Status.OPTIMAL, solution.prices, solution)
    return solve


def lp_stages(problem: ThroughputProblem, a: np.ndarray, solver: Solver,
              deadline: float | None = None) -> StageSolver:
    """Stages solved as one LP each on a backend (`models.stage_model`), each with the time
    left before `deadline` (a time.perf_counter() value) as its limit."""
    top = a.max(axis=1)

    def solve(rising, base, rate, floor, warm, hint):
        if is_past(deadline):
            return None
        slope = np.where(rising, rate, 0.0)
        timed = solver if deadline is None else solver.with_settings(
            time_limit=max(seconds_left(deadline), 1e-3))
        solution, X = solve_allocation(
            problem, *stage_model(problem, a, slope, np.where(rising, base, floor)), timed)
        levels, gpus = solution.dual("level"), solution.dual("gpus")
        if X is None or levels is None:
            return None
        y = np.maximum(-levels * (1.0 / np.maximum(top, slope)), 0.0)
        prices = np.maximum(gpus, 0.0) / problem.capacity
        result = solution.result
        return _Stage(_reached(a, X, rising, base, rate), result.bound, X,
                      np.where(rising, y * rate, 0.0), result.status is Status.OPTIMAL, prices)
    return solve


@dataclass
class Filling:
    """What progressive filling found: the allocation, every job's final level a[m] @ X[m]
    as frozen, the water level C at which each job froze, the first stage's proven bound on C,
    LPs solved, stages, freezes without a dual signal, whether every LP was optimal, and
    whether the time limit stopped the filling (jobs still rising keep the last stage's level)."""

    allocation: np.ndarray
    level: np.ndarray
    frozen_at: np.ndarray
    first_bound: float
    solves: int
    stages: int
    forced: int
    optimal: bool
    timed_out: bool = False


@dataclass(frozen=True)
class Paths:
    """How rising jobs' required levels grow with the water level C during a stage.

    caps(rising, level, C) -> (M,) the water level at which each rising job tops out (inf for
    the others); piece(rising, level, C, pinned) -> (base, rate), (M,) each: with the rising
    jobs `pinned` at their top, every other rising job must reach base + rate C (0 elsewhere).
    `level` holds the rising jobs' levels at the stage's start C."""

    caps: Callable[..., np.ndarray]
    piece: Callable[..., tuple[np.ndarray, np.ndarray]]


def flat_paths(top: np.ndarray) -> Paths:
    """Every job rises at rate 1 from 0: its level is C until it tops out at C = top."""
    def caps(rising, level, C):
        return np.where(rising, top, np.inf)

    def piece(rising, level, C, pinned):
        free = rising & ~pinned
        return np.zeros(top.size), free.astype(float)
    return Paths(caps, piece)


def user_paths(problem: ThroughputProblem, top: np.ndarray) -> Paths:
    """Gavel's 'fairness' reweighting: the rising jobs of user u share W_u per unit of C,
    split by job weight; a job that tops out keeps its top and leaves the split. So all of
    u's rising jobs sit at w_m lambda_u, with sum_m min(top_m, w_m lambda_u) growing by W_u
    per unit of C; job m tops out when lambda_u reaches top_m / w_m."""
    M = problem.num_jobs
    if problem.user is None:  # every job a user of its own, weighing its job weight
        user, W = np.arange(M), problem.weight
    else:
        user, W = problem.user, problem.user_weight
    w = problem.weight
    U = W.size

    def piece(rising, level, C, pinned):
        free = rising & ~pinned
        share = np.bincount(user, weights=w * free, minlength=U)[user]
        held = np.bincount(user, weights=level * rising - top * (rising & pinned),
                           minlength=U)[user]  # u's rising level at C less its pinned tops
        safe = np.where(free, share, 1.0)
        rate = np.where(free, w * W[user] / safe, 0.0)
        return np.where(free, w * held / safe, 0.0) - rate * C, rate

    def caps(rising, level, C):
        jobs = np.flatnonzero(rising)
        ratio = top[jobs] / w[jobs]
        order = jobs[np.lexsort((ratio, user[jobs]))]  # by user, then by top / w
        u, r = user[order], top[order] / w[order]
        first = np.r_[True, u[1:] != u[:-1]]
        group = np.cumsum(first) - 1
        starts = np.flatnonzero(first)
        ends = np.r_[starts[1:], u.size]
        top_sum, w_sum = np.cumsum(top[order]), np.cumsum(w[order])
        top_to_here = top_sum - (top_sum[starts] - top[order][starts])[group]
        w_after_here = w_sum[ends - 1][group] - w_sum
        # u's sum of min(top_k, w_k lambda) when lambda reaches this job's top / w
        filled = top_to_here + r * w_after_here
        now = np.bincount(user, weights=level * rising, minlength=U)[u]
        cap = np.full(M, np.inf)
        cap[order] = C + (filled - now) / W[u]
        return cap
    return Paths(caps, piece)


def progressive_filling(a: np.ndarray, gpus: np.ndarray, capacity: np.ndarray, paths: Paths,
                        solve: StageSolver, deadline: float | None = None) -> Filling | None:
    """Water filling over the (M, J) level coefficients `a` (runnable types only), jobs using
    `gpus` GPUs of (J,) `capacity`, levels growing along `paths`. None when a stage LP has no
    solution. At `deadline` (a time.perf_counter() value) it stops after the stage at hand
    with the allocation of the last stage that has one (all zeros before the first)."""
    M = a.shape[0]
    top = a.max(axis=1)
    rising = np.ones(M, bool)
    level = np.zeros(M)               # rising: level at C; frozen: final level
    frozen_at = np.full(M, np.nan)
    C, X, warm, first = 0.0, None, None, None
    counts = {"solves": 0, "stages": 0, "forced": 0}
    optimal = True

    while rising.any():
        if is_past(deadline):
            return _stopped(a, X, level, frozen_at, first, counts)
        cap = paths.caps(rising, level, C)
        topped = rising & (cap <= C * (1 + CAP_TOL))
        if topped.any():  # at their top already (within tolerance): frozen where they are
            frozen_at[topped] = C
            rising = rising & ~topped
            continue
        counts["stages"] += 1
        stage = _Search(a, gpus, capacity, top, rising, level, C, cap, paths, solve)
        found = stage.run(warm)
        counts["solves"] += stage.solves
        if found is None:
            return _stopped(a, X, level, frozen_at, first, counts) if is_past(deadline) else None
        step, pinned, floor, base, rate = found
        first = first or stage.first
        optimal &= stage.optimal
        level[pinned] = floor[pinned]
        frozen_at[pinned] = cap[pinned]
        rising = rising & ~pinned
        X = step.allocation
        if not rising.any():
            break
        C = step.level
        share = np.where(rising, step.share, 0.0)
        stuck = rising & (share > max(DUAL_FLOOR, DUAL_SHARE * share.max()))
        if not stuck.any() and not pinned.any():  # no dual signal: freeze the likeliest job
            stuck[np.flatnonzero(rising)[np.argmax(share[rising])]] = True
            counts["forced"] += 1
        level[rising] = base[rising] + rate[rising] * C
        frozen_at[stuck] = C
        rising = rising & ~stuck
        warm = step.warm
    return Filling(X, level, frozen_at, first.bound, counts["solves"],
                   counts["stages"], counts["forced"], optimal)


def _stopped(a, X, level, frozen_at, first, counts) -> Filling:
    """The filling cut short by its time limit: the last stage's allocation (zeros before
    the first) and the first stage's bound (none before it ends)."""
    X = np.zeros_like(a) if X is None else X
    bound = np.inf if first is None else first.bound
    return Filling(X, level, frozen_at, bound, counts["solves"], counts["stages"],
                   counts["forced"], False, timed_out=True)


class _Search:
    """One stage: the LP with every rising job rising, then, if some jobs top out before the
    level stops, how many (k) and the stage's LP with those k pinned at their top.

    Feasible(theta) = "jobs with cap < theta at their top, the rest at their path's level at
    theta" holds at caps[0] (the first LP reaches it) and fails beyond the answer; the answer
    k is the number of caps at or below the largest feasible cap. Every LP's GPU prices bound
    the feasible level from above (`price_bound_of`, weak duality; exact at the optimal
    prices), and so does a failed probe's level. The stage's LP is tried with the jobs under
    the bound pinned: reaching the largest pinned cap proves the count (feasible there,
    infeasible above the bound). Else a probe at the largest cap theta under the bound (every
    job's level required at theta scaled by t / theta, so the LP reaches theta iff feasible)
    moves the bracket, bisecting past FAST_PROBES probes.

    Returns (the stage's LP, pinned jobs, floors with theirs, base, rate of the others), or
    None."""

    def __init__(self, a, gpus, capacity, top, rising, level, C, cap, paths, solve):
        self.a, self.top, self.rising, self.level, self.C = a, top, rising, level, C
        self.cap, self.solve_lp = cap, solve
        self.caps = np.unique(cap[rising])
        self.piece = lambda pinned: paths.piece(rising, level, C, pinned)
        self.bound = price_bound_of(a, gpus, capacity, rising, level, cap, self.caps,
                                    self.piece, C)
        self.equal_prices = np.ones_like(capacity)
        self.solves, self.optimal, self.first = 0, True, None

    def solve(self, rising, base, rate, floor, warm, hint):
        step = self.solve_lp(rising, base, rate, floor, warm, hint)
        self.solves += 1
        if step is not None:
            self.optimal &= step.optimal
        return step

    def pinned_stage(self, hi, floor_of, warm, hint):
        """The stage's LP with the jobs whose cap is under caps[hi] at `floor_of` (their top,
        or what a probe proved)."""
        pinned = self.rising & (self.cap < self.caps[hi])
        floor = self.level.copy()
        floor[pinned] = floor_of[pinned]
        base, rate = self.piece(pinned)
        final = self.solve(self.rising & ~pinned, base, rate, floor, warm, hint)
        return final, pinned, floor, base, rate

    def run(self, warm):
        rising, cap, top, caps = self.rising, self.cap, self.top, self.caps
        nothing = np.zeros_like(rising)
        base, rate = self.piece(nothing)
        step = self.solve(rising, base, rate, self.level, warm, None)
        self.first = step
        if step is None:
            return None
        if step.level < caps[0] * (1 - CAP_TOL):  # the level stops before any job tops out
            return step, nothing, self.level, base, rate
        lo, hi, good, warm = 0, caps.size, step, step.warm
        final_warm, may_try, probes = None, True, 0

        def cut(hi: int, value: float) -> int:
            return max(lo + 1, min(hi, int(np.searchsorted(caps, value, side="right"))))

        # Any prices bound the level; equal GPU prices are a fair start, the LPs' own are tight.
        limit = min(self.bound(self.equal_prices), self.bound(step.prices))
        hi = cut(hi, limit)
        while True:
            proven = hi - lo == 1
            if hi < caps.size and (proven or may_try):
                reached = np.minimum(top, _levels(self.a, good.allocation))
                found = self.pinned_stage(hi, reached if proven else top, final_warm,
                                          limit if final_warm is not None else None)
                final = found[0]
                if final is not None and (proven or final.level >= caps[hi - 1] * (1 - CAP_TOL)):
                    return found
                if proven:
                    return None
                hi -= 1  # the pinned jobs cannot all top out with the rest at caps[hi - 1]
                may_try = final is not None  # infeasible: probe before trying again
                if final is not None:  # its prices are (nearly) the answer's: a tight bound
                    final_warm = final.warm
                    limit = min(limit, self.bound(final.prices))
                    hi = cut(hi, limit)
                continue
            if proven:  # every cap is reached: `good` has every rising job at its top
                floor = self.level.copy()
                floor[rising] = np.minimum(top, _levels(self.a, good.allocation))[rising]
                return good, rising.copy(), floor, np.zeros_like(base), np.zeros_like(rate)
            mid = hi - 1 if probes < FAST_PROBES else (lo + hi) // 2
            theta = caps[mid]
            pinned = rising & (cap < theta)
            base, rate = self.piece(pinned)
            need = np.where(pinned, top, base + rate * theta)
            trial = self.solve(rising, np.zeros_like(need), np.where(rising, need / theta, 0.0),
                               self.level, warm, None)
            probes += 1
            if trial is None:
                return None
            if trial.level >= theta * (1 - CAP_TOL):
                lo, good = mid, trial
            else:
                hi = cut(mid, trial.level)
            limit = min(limit, self.bound(trial.prices))
            hi = cut(hi, limit)
            may_try = True


def price_bound_of(a: np.ndarray, gpus: np.ndarray, capacity: np.ndarray, rising: np.ndarray,
                   level: np.ndarray, cap: np.ndarray, caps: np.ndarray, piece, C: float):
    """prices -> an upper bound on the water level tau the stage can reach: for any prices
    p >= 0, a feasible tau has sum_m h_m(need_m(tau); p) <= p @ capacity, with h_m the job's
    cheapest cost at p (`level_hull`) and need_m(tau) its level required at tau (its top once
    tau passes its cap, `piece` before; frozen jobs: their level). The sum is increasing in
    tau: a search over the caps finds the piece where it passes p @ capacity; there it is
    piecewise linear between the jobs' hull vertices, so the bound is exact for p."""
    top = a.max(axis=1)
    r = np.flatnonzero(rising)
    f = np.flatnonzero(~rising)

    def bound(prices: np.ndarray | None) -> float:
        if prices is None or not np.any(prices > 0):
            return np.inf
        hulls = build_hulls(a, gpus[:, None] * prices[None, :])
        spare = prices @ capacity
        if f.size:
            frozen = hulls.rows(f)
            spare -= cost_on(frozen, segment_of(frozen, level[f]), level[f]).sum()
        mine = hulls.rows(r)

        def slack(tau: float, k: int) -> float:
            """On piece k (jobs with cap < caps[k] pinned; k = caps.size: all)."""
            pinned = rising & (cap < (caps[k] if k < caps.size else np.inf))
            base, rate = piece(pinned)
            need = np.where(pinned, top, np.minimum(base + rate * tau, top))[r]
            return spare - cost_on(mine, segment_of(mine, need), need).sum()

        # the first cap where the prices prove infeasibility (its piece holds the root)
        k, end = 0, caps.size
        while k < end:
            mid = (k + end) // 2
            if slack(caps[mid], mid) < 0:
                end = mid
            else:
                k = mid + 1
        if k == caps.size:
            return np.inf  # every job at its top passes
        low = caps[k - 1] if k > 0 else C
        base, rate = piece(rising & (cap < caps[k]))
        free = r[rate[r] > 0]
        points = (hulls.level[free, 1:] - base[free, None]) / rate[free, None]
        points = np.unique(np.r_[points[(points > low) & (points < caps[k])], caps[k]])
        first, above = 0, points.size - 1
        while first < above:  # the first point where the prices prove infeasibility
            mid = (first + above) // 2
            if slack(points[mid], k) < 0:
                above = mid
            else:
                first = mid + 1
        below = points[first - 1] if first > 0 else low
        s_below, s_above = slack(below, k), slack(points[first], k)
        if s_below <= 0:
            return below * (1 + 1e-9)
        root = below + s_below * (points[first] - below) / (s_below - s_above)
        return root * (1 + 1e-9) + 1e-300
    return bound


def _distinct(values: np.ndarray, tol: float = 1e-7) -> int:
    v = np.sort(values[np.isfinite(values)])
    if v.size == 0:
        return 0
    return int(1 + np.sum(np.diff(v) > tol * np.maximum(np.abs(v[1:]), 1e-300)))


def _empty(problem: ThroughputProblem, solver: str) -> Outcome:
    return Outcome.from_status(np.zeros((0, problem.num_types)), Status.OPTIMAL, None, None, 0.0, solver,
                   {"levels": 0, "solves": 0, "job_levels": {}})


def _failed(solver: str, seconds: float) -> Outcome:
    return Outcome.from_status(None, Status.ERROR, None, None, seconds, solver,
                   {"termination": "a water-filling stage LP has no optimal solution"})


def _details(problem: ThroughputProblem, filling: Filling, levels: np.ndarray,
             distinct: np.ndarray) -> dict:
    details = {"levels": _distinct(distinct), "solves": filling.solves,
               "stages": filling.stages, "job_levels": dict(zip(problem.job_ids, levels.tolist()))}
    if filling.forced:
        details["forced_freezes"] = filling.forced
    return details


def _stages(problem: ThroughputProblem, a: np.ndarray, method: Method,
            solver: Solver | str | None, gap: float = GAP
            ) -> tuple[StageSolver, str, float | None]:
    """The stage solver `method` picks (`solving.choose_method`), what Outcome.solver says,
    and the deadline the solver's time limit sets for the whole filling (from now)."""
    method, solver = choose_method(method, solver)
    deadline = deadline_after(solver.settings.time_limit)
    if method == DECOMPOSITION:
        return decomposition_stages(problem, a, gap, solver, deadline), DECOMPOSITION, deadline
    solver = lp_solver(solver)
    return lp_stages(problem, a, solver, deadline), solver.name, deadline


def water_filling(problem: ThroughputProblem, solver: Solver | str | None = None,
                  agnostic: bool = False, gap: float = GAP,
                  method: Method = "auto") -> Outcome:
    """The leximin allocation of the max-min terms a[m] @ X[m] (module docstring).

    objective: the smallest level (max_min_fairness's optimum); bound: the first stage's proven
    upper bound; details: levels (distinct levels), solves (LPs), stages, job_levels."""
    a = normalized_throughput(problem, agnostic) * problem.runnable
    stages, solver, deadline = _stages(problem, a, method, solver, gap)
    if problem.num_jobs == 0:
        return _empty(problem, solver)
    problem.require_runnable()
    start = time.perf_counter()
    filling = progressive_filling(a, problem.scale_factor, problem.capacity,
                                  flat_paths(a.max(axis=1)), stages, deadline)
    seconds = time.perf_counter() - start
    if filling is None:
        return _failed(solver, seconds)
    levels = _levels(a, filling.allocation)
    return _filled(filling, float(levels.min()), seconds, solver,
                   _details(problem, filling, levels, filling.level))


def hierarchical_water_filling(problem: ThroughputProblem, solver: Solver | str | None = None,
                               agnostic: bool = False, method: Method = "auto") -> Outcome:
    """Water filling among users by user weight, then among each user's jobs by job weight
    (module docstring). objective: the first stage's water level; details: levels (distinct
    water levels at which jobs froze), solves, job_levels (a[m] @ X[m], unweighted),
    user_shares (named users' share / weight)."""
    a = _unweighted(problem, agnostic)
    stages, solver, deadline = _stages(problem, a, method, solver)
    if problem.num_jobs == 0:
        return _empty(problem, solver)
    problem.require_runnable()
    start = time.perf_counter()
    paths = user_paths(problem, a.max(axis=1))
    filling = progressive_filling(a, problem.scale_factor, problem.capacity, paths, stages,
                                  deadline)
    seconds = time.perf_counter() - start
    if filling is None:
        return _failed(solver, seconds)
    levels = _levels(a, filling.allocation)
    objective = float(np.min(levels / _starting_rates(problem, paths)))
    details = _details(problem, filling, levels, filling.frozen_at)
    if problem.user is not None:
        shares = np.bincount(problem.user, weights=levels, minlength=problem.user_weight.size)
        shares /= problem.user_weight
        names = np.array(problem.user_names, dtype=object)
        named = np.not_equal(names, None)
        details["user_shares"] = dict(zip(names[named].tolist(), shares[named].tolist()))
    return _filled(filling, objective, seconds, solver, details)


def _filled(filling: Filling, objective: float, seconds: float, solver: str,
            details: dict) -> Outcome:
    status = Status.OPTIMAL if filling.optimal else Status.FEASIBLE
    stopped = Termination.TIME_LIMIT if filling.timed_out else None
    bound = filling.first_bound if np.isfinite(filling.first_bound) else None
    return Outcome.from_status(filling.allocation, status, objective, bound, seconds, solver,
                               details, termination=stopped)


def _unweighted(problem: ThroughputProblem, agnostic: bool) -> np.ndarray:
    """a[m, j] = s_m T[m,j] / thr^eq_m (agnostic: s_m) on runnable types, no job weight."""
    per_unit = (np.ones_like(problem.throughput) if agnostic
                else problem.throughput / problem.equal_share_throughput[:, None])
    return problem.scale_factor[:, None] * per_unit * problem.runnable


def _starting_rates(problem: ThroughputProblem, paths: Paths) -> np.ndarray:
    everyone = np.ones(problem.num_jobs, bool)
    return paths.piece(everyone, np.zeros(problem.num_jobs), 0.0, ~everyone)[1]


def hierarchical_objective(problem: ThroughputProblem, X: np.ndarray,
                           agnostic: bool = False) -> float:
    """`hierarchical_water_filling`'s objective of any X: min_m a[m] @ X[m] / rate_m at the
    starting rates W_u w_m / sum_{k in u} w_k."""
    if problem.num_jobs == 0:
        return 0.0
    a = _unweighted(problem, agnostic)
    rates = _starting_rates(problem, user_paths(problem, a.max(axis=1)))
    return float(np.min(_levels(a, X) / rates))
