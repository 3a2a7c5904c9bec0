"""Exact max-min levels at scale: price decomposition over the GPU types with a proven gap.

The problem (`LevelProblem`) behind max-min fairness, makespan and every water-filling step:

    max t >= 0  s.t.  gain[m] @ X[m] >= floor[m] + t   for rising jobs,
                      gain[m] @ X[m] >= floor[m]       for frozen jobs,
                      sum_j X[m,j] <= 1,   sum_m gpus[m] X[m,j] <= capacity[j],   X >= 0.

Jobs meet only in the J capacity rows. At GPU prices p every job's cheapest way to reach a
level has a closed form (`level_hull`), which gives for any p >= 0 the Lagrangian bound

    t* <= c @ p + max_{t>=0} [ t - sum_rising h_m(floor_m + t; p) ] - sum_frozen h_m(floor_m; p).

The solver: jobs with identical rows are merged into classes (exact: averaging identical jobs'
rows keeps every constraint). Prices come from the same problem over a random tenth of the jobs
(recursively, down to DIRECT_CLASSES classes solved as one LP), or from the previous round's
solve. Each job is then *fixed* to its cheapest hull segment at those prices — its allocation
becomes affine in t and adds a constant and a slope to each capacity row — except jobs whose
choice is nearly tied, which stay *free* in a small restricted LP. The LP's duals are new
prices; fixed jobs whose segment is no longer cheapest at them are freed, until the
allocation's own minimum level (after clipping it exactly into the constraints) and the
Lagrangian bound at the LP's prices agree to `gap`. Both numbers are computed here from X and
p, not taken from the LP solver. docs/exact-max-min.md has the whole story.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from schedopt.core.deadline import deadline_after, seconds_left
from schedopt.backends import Capability, Status
from schedopt.backends.base import ColumnArrays, LinearProgram
from schedopt.backends.session import Solver
from schedopt.errors import PolicyError
from schedopt.policies.gavel.level_hull import (Hulls, affine_allocation, build_hulls, cost_on,
                                              segment_of, segment_slope)

SAMPLE_FACTOR = 10        # each price sample holds this fraction 1/SAMPLE_FACTOR of the jobs
DIRECT_CLASSES = 300      # up to this many classes the restricted LP holds every class
TIE = 0.05                # relative reduced-cost margin under which a job starts free, for
                          # prices from DIRECT_CLASSES jobs (shrinks as 1/sqrt(sample size))
LEVEL_TIE = 0.05          # relative margin on the level t: a job whose segment ends this close
                          # to its target starts free
MIN_TIE = 1e-4            # never a smaller margin
SIMPLEX_CLASSES = 3000    # no solver named: a simplex backend up to this many free classes,
                          # else an interior-point one (faster there; Clarabel's duals are
                          # ~1e-9 exact)
SIMPLEX_BACKEND = "highs"    # the defaults of that choice, picked by measurement
INTERIOR_BACKEND = "clarabel"
WARM_TIE = 1e-3           # the margin for prices of a previous solve (a round before)


@dataclass(frozen=True)
class LevelProblem:
    """gain: (M, J) level per unit of time on each GPU type (0 = cannot run there, which the
    caller decides, e.g. also where a type has fewer GPUs than the job needs);
    gpus: (M,) GPUs a job holds while it runs; capacity: (J,) GPUs per type;
    rises: (M,) bool, jobs whose level rises with the maximized t (default all);
    floor: (M,) the level a frozen job must keep (>= 0), and a rising job's offset: it must
    reach floor + t (default 0; a negative offset means the job needs nothing until
    t = -offset)."""

    gain: np.ndarray
    gpus: np.ndarray
    capacity: np.ndarray
    rises: np.ndarray | None = None
    floor: np.ndarray | None = None

    @property
    def rising(self) -> np.ndarray:
        return np.ones(self.gain.shape[0], bool) if self.rises is None else self.rises

    @property
    def floors(self) -> np.ndarray:
        return np.zeros(self.gain.shape[0]) if self.floor is None else self.floor


@dataclass
class LevelSolution:
    """allocation: (M, J) time fractions meeting every constraint exactly; level: the smallest
    rising job's level under it (a proven lower bound on t*); bound: a proven upper bound on
    t*; prices: (J,) GPU prices (d t / d capacity, level per GPU); marginal: (M,) each job's
    dual (d t / d its own level); positive means the job is at the level in every optimum.
    timed_out: the time limit stopped the search (status feasible, gap as far as it got)."""

    allocation: np.ndarray
    level: float
    bound: float
    prices: np.ndarray
    marginal: np.ndarray
    status: Status
    seconds: float
    details: dict = field(default_factory=dict)
    timed_out: bool = False

    @property
    def gap(self) -> float:
        return (self.bound - self.level) / max(abs(self.bound), 1e-300)


@dataclass(frozen=True)
class _Classes:
    """Jobs merged by identical (gain row, gpus, rises, floor): representative rows, counts,
    and each job's class."""

    gain: np.ndarray
    gpus: np.ndarray
    rises: np.ndarray
    floor: np.ndarray
    count: np.ndarray
    of_job: np.ndarray


def identical_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first, of_row, count): one representative row index per distinct row of the 2-D
    `key`, each row's class and each class's size (one random projection, checked exactly)."""
    probe = key @ np.random.default_rng(7).uniform(1.0, 2.0, key.shape[1])
    _, first, of_job, count = np.unique(probe, return_index=True, return_inverse=True,
                                        return_counts=True)
    if not np.array_equal(key[first][of_job], key):  # a hash collision: keep every job apart
        first, of_job, count = np.arange(len(key)), np.arange(len(key)), np.ones(len(key), int)
    return first, of_job, count


def _classes(problem: LevelProblem) -> _Classes:
    first, of_job, count = identical_rows(
        np.column_stack([problem.gain, problem.gpus, problem.rising, problem.floors]))
    return _Classes(problem.gain[first], problem.gpus[first], problem.rising[first],
                    problem.floors[first], count.astype(float), of_job)


def _validate(problem: LevelProblem) -> None:
    gain = problem.gain
    if gain.ndim != 2 or problem.gpus.shape != (gain.shape[0],) or \
            problem.capacity.shape != (gain.shape[1],):
        raise PolicyError("level problem: gain must be (M, J) with gpus (M,) and capacity (J,)")
    if not problem.rising.any():
        raise PolicyError("level problem: no job rises, so the level is unbounded")
    if not (gain > 0).any(axis=1).all():
        raise PolicyError("level problem: some job can run on no GPU type")
    floor = problem.floors
    if not (floor[~problem.rising] >= 0).all():
        raise PolicyError("level problem: frozen jobs' floors must be >= 0")
    if (floor > np.max(gain, axis=1)).any():
        raise PolicyError("level problem: a job's floor is above its highest level")


# ---------------------------------------------------------------- the restricted LP

@dataclass(frozen=True)
class _Fixed:
    """Fixed classes' allocations X0 + X1 t, their segments' level ranges, and the t range on
    which every fixed rising class stays on its segment."""

    mask: np.ndarray
    X0: np.ndarray
    X1: np.ndarray
    low: np.ndarray
    high: np.ndarray
    t_low: float
    t_high: float


def _targets(cls: _Classes, t: float) -> np.ndarray:
    """Each class's level at t: floor + t (rising) or floor (frozen)."""
    return cls.floor + cls.rises * t


def _fix(cls: _Classes, hulls: Hulls, free: np.ndarray, t: float) -> _Fixed:
    """Every class on its cheapest segment at level t (rising) or its floor (frozen)."""
    target = _targets(cls, t)
    segment = segment_of(hulls, target)
    X0, X1 = affine_allocation(hulls, segment, cls.gain.shape[1])
    X0 += X1 * cls.floor[:, None]          # allocations in t, not in the job's own level
    X1[~cls.rises] = 0.0
    idle = target <= 0                     # needs nothing (yet): X = 0 up to level 0
    X0[idle], X1[idle] = 0.0, 0.0
    rows = np.arange(segment.size)
    low = np.where(idle, -np.inf, hulls.level[rows, segment])
    high = np.where(idle, 0.0, hulls.level[rows, segment + 1])
    pinned = ~free & cls.rises
    t_low = float((low - cls.floor)[pinned].max(initial=0.0))
    t_high = float((high - cls.floor)[pinned].min(initial=np.inf))
    return _Fixed(~free, X0, X1, low, high, t_low, t_high)


def _restricted_lp(cls: _Classes, capacity: np.ndarray, free: np.ndarray, fixed: _Fixed,
                   solver: Solver):
    """Solve max t over the free classes, the fixed ones adding their affine usage to the
    capacity rows. Returns (t, X of the free classes (F, J), prices (J,), class duals (F,)),
    or None when the LP has no optimal solution."""
    idx = np.flatnonzero(free)
    gain = cls.gain[idx]
    F, J = gain.shape
    cols = np.flatnonzero(gain.ravel() > 0)
    n = cols.size
    row_of, type_of = np.divmod(cols, J)
    level_scale = 1.0 / gain.max(axis=1)
    rises = cls.rises[idx].astype(float)
    weight = cls.count * cls.gpus * fixed.mask
    intercept, slope = weight @ fixed.X0, weight @ fixed.X1
    cap_scale = 1.0 / np.where(capacity > 0, capacity, 1.0)
    # Rows: F level rows, F time rows, J capacity rows. Each x column has one entry in each of
    # the three blocks (rows increasing); the t column has one in every level and capacity row.
    x_rows = np.stack([row_of, F + row_of, 2 * F + type_of], axis=1).ravel()
    x_values = np.stack([gain.ravel()[cols] * level_scale[row_of], np.ones(n),
                         (cls.count * cls.gpus)[idx][row_of] * cap_scale[type_of]], axis=1).ravel()
    A = ColumnArrays(shape=(2 * F + J, n + 1),
                     start=np.concatenate([np.arange(0, 3 * n + 1, 3), [3 * n + F + J]]),
                     index=np.concatenate([x_rows, np.arange(F), 2 * F + np.arange(J)]),
                     value=np.concatenate([x_values, -rises * level_scale, slope * cap_scale]))
    lp = LinearProgram(
        c=np.concatenate([np.zeros(n), [1.0]]),
        A=A,
        row_lower=np.concatenate([cls.floor[idx] * level_scale,
                                  np.full(F + J, -np.inf)]),
        row_upper=np.concatenate([np.full(F, np.inf), np.ones(F),
                                  (capacity - intercept) * cap_scale]),
        col_lower=np.concatenate([np.zeros(n), [fixed.t_low]]),
        col_upper=np.concatenate([np.full(n, np.inf), [fixed.t_high]]),
        maximize=True)
    if solver.name is None:
        solver = solver.with_backend(SIMPLEX_BACKEND if F <= SIMPLEX_CLASSES else INTERIOR_BACKEND)
    result = solver.solve(lp)
    if result.status is not Status.OPTIMAL or result.row_duals is None:
        return None
    X = np.zeros(F * J)
    X[cols] = result.x[:n]
    duals = result.row_duals
    prices = np.maximum(duals[2 * F:] * cap_scale, 0.0)
    class_duals = np.maximum(-duals[:F] * level_scale, 0.0)
    return float(result.x[n]), X.reshape(F, J), prices, class_duals


# ---------------------------------------------------------------- bounds and checks

def _clip_into_constraints(cls: _Classes, capacity: np.ndarray, X: np.ndarray) -> np.ndarray:
    """X scaled down just enough that every time and capacity row holds exactly."""
    X = np.maximum(X, 0.0)
    X /= np.maximum(X.sum(axis=1, keepdims=True), 1.0)
    usage = (cls.count * cls.gpus) @ X
    return X * np.minimum(1.0, capacity / np.maximum(usage, 1e-300))[None, :]


def lagrangian_bound(cls: _Classes, capacity: np.ndarray, prices: np.ndarray,
                     hulls: Hulls) -> float:
    """The upper bound on t* at prices p >= 0 (module docstring), maximizing the concave
    t - sum_rising count_m h_m(floor_m + t) over t >= 0 exactly: its slope falls at the rising
    classes' hull vertices, so t* is the vertex where the summed hull slope first reaches 1."""
    rising = cls.rises
    frozen = hulls.rows(~rising)
    floor = cls.floor[~rising]
    frozen_cost = cls.count[~rising] @ cost_on(frozen, segment_of(frozen, floor), floor)
    h, count, offset = hulls.rows(rising), cls.count[rising], cls.floor[rising]
    J = cls.gain.shape[1]
    t_max = float((h.top_level - offset).min())
    slopes = np.column_stack([segment_slope(h, np.full(count.size, k)) for k in range(J)])
    # the summed slope just above t = 0 (each job at its offset), then its rise at every
    # later vertex
    # (a job with a negative offset pays nothing until t = -offset, then its first slope)
    idle = offset < 0
    start = np.minimum((h.level[:, 1:J + 1] <= offset[:, None]).sum(axis=1), J - 1)
    steps = np.column_stack([np.where(idle, slopes[:, 0], 0.0), np.diff(slopes, axis=1)])
    steps *= count[:, None]
    at = np.column_stack([-offset, h.level[:, 1:J] - offset[:, None]])
    keep = (steps > 0) & (at > 0) & (at < t_max)
    at, steps = at[keep], steps[keep]
    order = np.argsort(at, kind="stable")
    first_slope = np.where(idle, 0.0, slopes[np.arange(count.size), start])
    reached = count @ first_slope + np.concatenate([[0.0], np.cumsum(steps[order])])
    first = int(np.searchsorted(reached, 1.0))
    if first == 0:
        t_star = 0.0
    elif first <= order.size:
        t_star = float(at[order][first - 1])
    else:
        t_star = t_max
    needed = np.maximum(offset + t_star, 0.0)
    value = t_star - count @ cost_on(h, segment_of(h, needed), needed)
    return float(prices @ capacity - frozen_cost + value)


def _near_ties(cls: _Classes, hulls: Hulls, unit_cost: np.ndarray, t: float,
               margin: float) -> np.ndarray:
    """Classes whose cheapest way to their target could change under a relative price or
    level error of `margin`: another type's reduced cost within the margin, or the target
    within the margin of its segment's ends."""
    target = _targets(cls, t)
    idle = target <= 0
    segment = segment_of(hulls, target)
    rows = np.arange(segment.size)
    low, high = hulls.level[rows, segment], hulls.level[rows, segment + 1]
    slope = segment_slope(hulls, segment)
    time_price = slope * low - hulls.cost[rows, segment]           # >= 0 by convexity
    reduced = unit_cost + time_price[:, None] - slope[:, None] * cls.gain
    scale = unit_cost + time_price[:, None] + 1e-300
    close = ((cls.gain > 0) & (reduced <= margin * scale)).sum(axis=1)
    basic = np.where(segment == 0, 1, 2)
    # a sample's level is less certain than its prices
    reach = max(margin, LEVEL_TIE) * np.maximum(np.abs(target), t)
    near_end = (((high - target) < reach) | ((segment > 0) & ((target - low) < reach)) |
                (idle & (-target < reach)))
    return ((close > basic) & ~idle) | (near_end & cls.rises)


def _violators(cls: _Classes, hulls: Hulls, unit_cost: np.ndarray, fixed: _Fixed,
               t: float) -> np.ndarray:
    """Fixed classes no longer on a cheapest segment at the new prices (hulls), or sitting at
    an end of their segment's range (where the restricted LP's bound on t may have held)."""
    target = _targets(cls, t)
    needed = np.maximum(target, 0.0)
    best = cost_on(hulls, segment_of(hulls, needed), needed)
    X = fixed.X0 + fixed.X1 * t
    paid = (unit_cost * X).sum(axis=1)
    dearer = paid - best > 1e-7 * np.maximum(paid, 1e-300) + 1e-13 * max(paid.max(), 1e-300)
    at_end = cls.rises & ((fixed.high <= target * (1 + 1e-9)) |
                          ((fixed.low > 0) & (fixed.low >= target * (1 - 1e-9))))
    return fixed.mask & (dearer | at_end)


# ---------------------------------------------------------------- the solver

def _sample_prices(cls: _Classes, capacity: np.ndarray, solver: Solver, seed: int,
                   deadline: float | None):
    """(t, prices) from the same problem over a random tenth of the jobs, capacity scaled to
    match, solved the same way (so prices come from ever larger samples, each seeded by the
    one before), to a loose gap: only the prices are needed."""
    jobs = int(cls.count.sum())
    size = max(jobs // SAMPLE_FACTOR, DIRECT_CLASSES)
    drawn = np.random.default_rng(seed).choice(jobs, size=size, replace=False)
    job_class = np.repeat(np.arange(cls.count.size), cls.count.astype(int))
    picked, counts = np.unique(job_class[drawn], return_counts=True)
    sample = _Classes(cls.gain[picked], cls.gpus[picked], cls.rises[picked], cls.floor[picked],
                      counts.astype(float), picked)
    if not sample.rises.any():
        return None
    solved = _solve_classes(sample, capacity * size / jobs, None, 1e-4, solver, 10, seed + 1,
                            deadline)
    margin = max(TIE * np.sqrt(DIRECT_CLASSES / size), MIN_TIE)
    return None if solved is None else (solved.level, solved.prices, margin)


def _unit_cost(cls: _Classes, prices: np.ndarray) -> np.ndarray:
    """(K, J) s_k p_j: what all of a class's time on each type costs at `prices`."""
    return cls.gpus[:, None] * prices[None, :]


def _guide(prices: np.ndarray) -> np.ndarray:
    """Prices for choosing fixed segments: a type the LP left free (price 0) gets a tiny price,
    so jobs still prefer the types where they are fastest instead of tying everywhere."""
    top = prices.max()
    return np.maximum(prices, 1e-9 * top) if top > 0 else np.ones_like(prices)


def _capped_by_their_own_time(cls: _Classes, capacity: np.ndarray) -> LevelSolution | None:
    """The solution when the GPUs do not bind: no job can rise above its top level (all of its
    time on its fastest type), so t* <= min top over rising jobs, and if every job at that
    level (frozen ones at their floor) fits on its fastest type, that level is reached. None
    when it does not fit (then prices matter)."""
    best = np.argmax(cls.gain, axis=1)
    top = cls.gain[np.arange(best.size), best]
    t = float((top - cls.floor)[cls.rises].min())
    time_on_best = np.maximum(_targets(cls, t), 0.0) / top
    X = np.zeros_like(cls.gain)
    X[np.arange(best.size), best] = time_on_best
    if ((cls.count * cls.gpus) @ X > capacity).any():
        return None
    bottleneck = cls.rises & (top - cls.floor <= t)
    marginal = np.where(bottleneck, 1.0 / (cls.count * bottleneck).sum(), 0.0)
    return LevelSolution(X, t, t, np.zeros(capacity.size), marginal, Status.OPTIMAL, 0.0,
                         {"rounds": 0, "classes": cls.count.size, "free_classes": 0})


def _nothing_yet(cls: _Classes, capacity: np.ndarray, prices: np.ndarray) -> LevelSolution | None:
    """What a search stopped by its time limit before its first restricted LP has: the zero
    allocation (when no floor asks for more) and the Lagrangian bound at `prices`."""
    if np.any(cls.floor > 0):
        return None
    prices = _guide(prices)
    bound = lagrangian_bound(cls, capacity, prices, build_hulls(cls.gain, _unit_cost(cls, prices)))
    level = float(-cls.floor[cls.rises].max())
    K = cls.count.size
    return LevelSolution(np.zeros_like(cls.gain), level, bound, prices, np.zeros(K),
                         Status.FEASIBLE, 0.0, {"rounds": 0, "classes": K, "free_classes": 0},
                         timed_out=True)


def _solve_classes(cls: _Classes, capacity: np.ndarray, seeded, gap: float, solver: Solver,
                   max_rounds: int, seed: int, deadline: float | None = None
                   ) -> LevelSolution | None:
    """`max_level` on classes; allocation and marginal per class (None: no LP solution).
    `seeded` = (t, prices, margin): a starting point and its expected relative price error;
    deadline: time.perf_counter() value at which to stop with the best solution so far."""
    K = cls.count.size
    capped = _capped_by_their_own_time(cls, capacity)
    if capped is not None:
        return capped
    if seeded is None and K > DIRECT_CLASSES:
        seeded = _sample_prices(cls, capacity, solver, seed, deadline)
    if seeded is None:
        t, prices, free, margin = 0.0, np.ones(capacity.size), np.ones(K, bool), TIE
    else:
        t, prices, margin = seeded
    unit = _unit_cost(cls, _guide(prices))
    hulls = build_hulls(cls.gain, unit)
    if seeded is not None:
        free = _near_ties(cls, hulls, unit, t, margin)
    best = None
    for rounds in range(1, max_rounds + 1):
        left = seconds_left(deadline)
        if left is not None and left <= 0:
            if best is None:
                return _nothing_yet(cls, capacity, prices)
            best.timed_out = True
            return best
        fixed = _fix(cls, hulls, free, t)
        solved = _restricted_lp(cls, capacity, free, fixed,
                                solver if left is None else solver.with_settings(time_limit=left))
        if solved is None:
            if free.all():
                return best
            margin = 2 * margin
            free |= _near_ties(cls, hulls, unit, t, margin)
            continue
        new_t, X_free, new_prices, class_duals = solved
        X = fixed.X0 + fixed.X1 * new_t
        X[free] = X_free
        X = _clip_into_constraints(cls, capacity, X)
        level = float((np.einsum("kj,kj->k", cls.gain, X) - cls.floor)[cls.rises].min())
        new_unit = _unit_cost(cls, new_prices)
        new_hulls = build_hulls(cls.gain, new_unit)
        bound = lagrangian_bound(cls, capacity, new_prices, new_hulls)
        new_target = _targets(cls, new_t)
        marginal = np.where(new_target > 0, segment_slope(
            new_hulls, segment_of(new_hulls, new_target)), 0.0)
        marginal[free] = class_duals / cls.count[free]
        done = bound - level <= gap * max(abs(bound), 1e-300)
        if best is None or bound - level < best.bound - best.level:
            best = LevelSolution(X, level, bound, new_prices, marginal,
                                 Status.OPTIMAL if done else Status.FEASIBLE, 0.0,
                                 {"rounds": rounds, "classes": K, "free_classes": int(free.sum())})
        if done or free.all():
            break
        changed = _violators(cls, new_hulls, new_unit, fixed, new_t)
        if changed.sum() <= max(free.sum(), 10):
            # Few fixed choices were wrong: the LP's prices are close; free those jobs and the
            # near-ties at the new prices (margin by how far the prices moved).
            shift = np.max(np.abs(new_prices - prices)) / max(new_prices.max(), 1e-300)
            t, prices = new_t, new_prices
            unit = _unit_cost(cls, _guide(prices))
            hulls = new_hulls if np.array_equal(unit, new_unit) else build_hulls(cls.gain, unit)
            free |= changed | _near_ties(cls, hulls, unit, t, max(2 * shift, MIN_TIE))
        else:
            # Too many wrong choices for the LP's prices to mean much: keep the old prices
            # and widen the margin.
            margin = 2 * margin
            free |= _near_ties(cls, hulls, unit, t, margin)
    return best


def max_level(problem: LevelProblem, start: LevelSolution | Mapping | None = None,
              gap: float = 1e-6,
              solver: Solver | None = None, max_rounds: int = 40, seed: int = 0,
              deadline: float | None = None) -> LevelSolution:
    """Solve `problem` to a proven relative gap (bound - level) / bound <= `gap`.

    start: a previous solution (e.g. last round's), or a mapping with its "prices" and
    "level", that seeds the search;
    solver: the restricted LPs' (a backend with duals); None or one without a backend named:
    a simplex backend for small ones, an interior-point one for large ones (SIMPLEX_CLASSES).
    Status is optimal at the gap, feasible when the rounds ran out first (the gap says how far).
    deadline: a time.perf_counter() value at which to stop with the best allocation so far
    (default: the solver's time_limit seconds from now); `timed_out` then says so.
    """
    began = time.perf_counter()
    _validate(problem)
    solver = solver or Solver(None)
    if deadline is None:
        deadline = deadline_after(solver.settings.time_limit, began)
    if solver.name is not None:
        solver.require(Capability.LP | Capability.DUALS, "the price decomposition")
    capacity = np.asarray(problem.capacity, dtype=float)
    cls = _classes(problem)
    seeded = None
    if start is not None:
        level, prices = ((start["level"], start["prices"]) if isinstance(start, Mapping)
                         else (start.level, start.prices))
        seeded = (float(level), np.asarray(prices, dtype=float), WARM_TIE)
    solved = _solve_classes(cls, capacity, seeded, gap, solver, max_rounds, seed, deadline)
    if solved is None:
        raise PolicyError("level problem: the LP over all jobs has no optimal solution")
    solved.allocation = solved.allocation[cls.of_job]
    solved.marginal = solved.marginal[cls.of_job]
    solved.seconds = time.perf_counter() - began
    return solved
