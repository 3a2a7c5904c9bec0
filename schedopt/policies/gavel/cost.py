"""min_cost at scale: the price decomposition for a linear objective with per-job SLO rows
(docs/exact-max-min.md, "min_cost with SLOs").

The LP (`models.throughput_model`), on classes k of identical jobs (count n_k, exact):

    max  sum_k n_k w[k] @ X[k]      w[k,j] = T[k,j] / cost_j  ((steps/s) per $/h)
    s.t. f[k] @ X[k] >= tau_k       (SLO: a fraction of the best type's throughput; 0 = none)
         sum_j X[k,j] <= 1,  X >= 0 (and 0 where the job cannot run),
         sum_k n_k s_k X[k,j] <= c_j.

Jobs meet only in the J capacity rows. At GPU prices p >= 0 job k's best allocation maximizes
v @ x with v = w[k] - s_k p over its own polytope {x >= 0, sum x <= 1, f @ x >= tau}, whose
vertices have at most two nonzero entries: 0 (tau = 0), all time on type j (f_j >= tau), just
enough time on j (tau / f_j), or all time split between two types with f_a < tau < f_b so that
f @ x = tau (`_vertices`). For any p >= 0

    OPT <= p @ c + sum_k n_k max_vertex v @ x          (weak Lagrangian duality)

is a proven upper bound; any allocation meeting every row is a proven lower bound. As in
`levels.py`, classes whose best vertex is clear at the current prices are fixed there, the
nearly tied ones stay free in a small restricted LP (the fixed usage taken off the capacity),
whose duals are the next prices, until the two bounds agree to `gap`. Prices come from the
same problem over a random tenth of the jobs (recursively, down to DIRECT_CLASSES solved as
one LP).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from schedopt.core.deadline import is_past, seconds_left
from schedopt.backends import Status
from schedopt.backends.session import Solver
from schedopt.policies.gavel.levels import (INTERIOR_BACKEND, SIMPLEX_BACKEND, SIMPLEX_CLASSES,
                                            identical_rows)
from schedopt.policies.gavel.models import priced_model

SAMPLE_FACTOR = 10
DIRECT_CLASSES = 1000     # up to this many classes the restricted LP holds every class
TIE = 0.01                # price error (relative to the largest price) assumed of prices from
                          # DIRECT_CLASSES jobs (shrinks as 1/sqrt(sample size))
MIN_TIE = 1e-6
MAX_ROUNDS = 30


@dataclass(frozen=True)
class CostClasses:
    """weight: (K, J) objective per unit of time on each type (0 where it cannot run, with
    `allowed` False); fraction: (K, J) f; gpus: (K,); target: (K,) tau (0 = no SLO); count:
    (K,) jobs per class; allowed: (K, J) bool; capacity: (J,) GPUs per type."""

    weight: np.ndarray
    fraction: np.ndarray
    gpus: np.ndarray
    target: np.ndarray
    count: np.ndarray
    allowed: np.ndarray
    capacity: np.ndarray

    def take(self, keep: np.ndarray, count: np.ndarray | None = None,
             capacity: np.ndarray | None = None) -> "CostClasses":
        return CostClasses(self.weight[keep], self.fraction[keep], self.gpus[keep],
                           self.target[keep], self.count[keep] if count is None else count,
                           self.allowed[keep],
                           self.capacity if capacity is None else capacity)


def merge(weight, fraction, gpus, target, allowed, capacity) -> tuple[CostClasses, np.ndarray]:
    """Identical jobs merged (exact for an LP: averaging identical jobs' rows keeps every
    constraint and the objective). Returns the classes and each job's class."""
    first, of_job, count = identical_rows(np.column_stack([weight, fraction, gpus, target,
                                                           allowed]))
    classes = CostClasses(weight[first], fraction[first], gpus[first], target[first],
                          count.astype(float), allowed[first], np.asarray(capacity, float))
    return classes, of_job


# ---------------------------------------------------------------- each class's best vertex

@dataclass(frozen=True)
class _Vertices:
    """values: (K, V) v @ x of each candidate vertex (-inf where it is not one); time: (K, V)
    its sum_j x_j (how much a price error can move its value); the candidates: kind (V,)
    0 = zero, 1 = all time on `a`, 2 = tau / f_a on `a`, 3 = all time split between `a` and
    `b`; a, b: (V,) types."""

    values: np.ndarray
    time: np.ndarray
    kind: np.ndarray
    a: np.ndarray
    b: np.ndarray


def _vertices(cls: CostClasses, prices: np.ndarray) -> _Vertices:
    K, J = cls.weight.shape
    v = cls.weight - cls.gpus[:, None] * prices[None, :]
    f, tau, ok = cls.fraction, cls.target, cls.allowed
    values, time_used = [np.where(tau <= 0, 0.0, -np.inf)], [np.zeros(K)]
    kind, a, b = [0], [0], [0]
    reach = ok & (f >= tau[:, None])
    for j in range(J):
        values.append(np.where(reach[:, j], v[:, j], -np.inf))
        time_used.append(np.ones(K))
        kind.append(1), a.append(j), b.append(j)
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(J):
            part = np.where(reach[:, j] & (tau > 0), tau / f[:, j], 0.0)
            values.append(np.where(part > 0, v[:, j] * part, -np.inf))
            time_used.append(part)
            kind.append(2), a.append(j), b.append(j)
        for i in range(J):
            for j in range(i + 1, J):
                low = f[:, i] < f[:, j]
                f_lo, f_hi = np.where(low, f[:, i], f[:, j]), np.where(low, f[:, j], f[:, i])
                v_lo, v_hi = np.where(low, v[:, i], v[:, j]), np.where(low, v[:, j], v[:, i])
                share = (tau - f_lo) / (f_hi - f_lo)
                valid = ok[:, i] & ok[:, j] & (f_lo < tau) & (tau < f_hi)
                values.append(np.where(valid, v_lo + share * (v_hi - v_lo), -np.inf))
                time_used.append(np.ones(K))
                kind.append(3), a.append(i), b.append(j)
    return _Vertices(np.column_stack(values), np.column_stack(time_used), np.array(kind),
                     np.array(a), np.array(b))


def _allocation(cls: CostClasses, vertices: _Vertices, choice: np.ndarray) -> np.ndarray:
    """(K, J) the allocation of each class's chosen vertex."""
    K, J = cls.weight.shape
    X = np.zeros((K, J))
    f, tau = cls.fraction, cls.target
    for v, (kind, a, b) in enumerate(zip(vertices.kind, vertices.a, vertices.b)):
        rows = np.flatnonzero(choice == v)
        if rows.size == 0 or kind == 0:
            continue
        if kind == 1:
            X[rows, a] = 1.0
        elif kind == 2:
            X[rows, a] = tau[rows] / f[rows, a]
        else:
            fa, fb = f[rows, a], f[rows, b]
            on_b = np.where(fa < fb, tau[rows] - fa, fa - tau[rows]) / np.abs(fb - fa)
            X[rows, b], X[rows, a] = on_b, 1.0 - on_b
    return X


def dual_bound(cls: CostClasses, prices: np.ndarray) -> float:
    """The proven upper bound p @ c + sum_k n_k max_vertex v @ x at prices p >= 0."""
    values = _vertices(cls, prices).values
    return float(prices @ cls.capacity + cls.count @ values.max(axis=1))


def _near_ties(cls: CostClasses, vertices: _Vertices, prices: np.ndarray,
               margin: float) -> np.ndarray:
    """Classes whose best vertex could change if every price moved by up to `margin` times
    the largest price: a vertex's value moves by at most s_k * that * its time, so the
    runner-up must trail by more than the two moves together."""
    values = vertices.values
    order = np.argsort(-values, axis=1)[:, :2]
    rows = np.arange(values.shape[0])
    top, second = values[rows, order[:, 0]], values[rows, order[:, 1]]
    moves = vertices.time[rows, order[:, 0]] + vertices.time[rows, order[:, 1]]
    reach = margin * max(float(prices.max()), 1e-300) * cls.gpus * moves
    with np.errstate(invalid="ignore"):
        return (top - second) <= reach + 1e-12 * np.abs(top)


# ---------------------------------------------------------------- the solver

@dataclass
class CostSolution:
    """allocation: (K, J) per class; objective: its value; bound: a proven upper bound;
    prices: (J,) per GPU; status: optimal at the gap, feasible when stopped earlier,
    infeasible when a restricted LP over every class is; details: rounds, free classes."""

    allocation: np.ndarray | None
    objective: float
    bound: float
    prices: np.ndarray
    status: Status
    details: dict
    timed_out: bool = False

    @property
    def gap(self) -> float:
        return (self.bound - self.objective) / max(abs(self.bound), 1e-300)


def _restricted_lp(cls: CostClasses, free: np.ndarray, fixed_X: np.ndarray, solver: Solver,
                   overflow_price: np.ndarray | None = None):
    """The LP over the free classes with the fixed ones' usage taken off the capacity:
    (X of the free classes, prices per GPU, GPUs used beyond capacity (J,)) or None when it
    has no optimal solution. overflow_price: elastic GPU rows (`models.priced_model`)."""
    used = (cls.count * cls.gpus * ~free) @ fixed_X
    sub = cls.take(free)
    model, X, overflow = priced_model(sub.weight * sub.count[:, None], sub.count * sub.gpus,
                                      cls.capacity - used, cls.capacity, sub.fraction,
                                      sub.target, sub.allowed, overflow_price)
    if solver.name is None:
        solver = solver.with_backend(SIMPLEX_BACKEND if sub.count.size <= SIMPLEX_CLASSES
                                     else INTERIOR_BACKEND)
    solution = model.solve(solver)
    if solution.result.status is not Status.OPTIMAL or solution[X] is None:
        return None
    duals = solution.dual("gpus")
    if duals is None:
        return None
    prices = np.maximum(np.abs(duals) / np.maximum(cls.capacity, 1e-300), 0.0)
    over = np.zeros(cls.capacity.size)
    if overflow is not None:
        over = np.maximum(solution[overflow], 0.0)
    return np.clip(solution[X], 0.0, 1.0), prices, over


def _clip(cls: CostClasses, X: np.ndarray) -> np.ndarray:
    """X with solver dust removed, still meeting every row: negative entries dropped and a
    time row above 1 scaled down (only where it keeps the SLO)."""
    X = np.maximum(X, 0.0) * cls.allowed
    total = X.sum(axis=1)
    return X / np.maximum(total, 1.0)[:, None]


def _meets_rows(cls: CostClasses, X: np.ndarray, tolerance: float = 1e-7) -> bool:
    """Every row holds to `tolerance` (relative; an interior-point restricted LP's accuracy,
    as the whole LP's answer has)."""
    usage = (cls.count * cls.gpus) @ X
    got = np.einsum("kj,kj->k", cls.fraction, X)
    return bool(np.all(usage <= cls.capacity * (1 + tolerance) + tolerance) and
                np.all(got >= cls.target * (1 - tolerance) - 1e-12) and
                np.all(X.sum(axis=1) <= 1 + tolerance))


def max_priced(cls: CostClasses, gap: float = 1e-6, solver: Solver | None = None,
               seed: int = 0, deadline: float | None = None,
               seeded: tuple[np.ndarray, float] | None = None) -> CostSolution:
    """The LP of the module docstring to a proven relative gap. seeded: (prices, margin) to
    start from; deadline: time.perf_counter() value at which to stop with the best so far."""
    K = cls.count.size
    solver = solver or Solver(None)
    if seeded is None and K > DIRECT_CLASSES:
        seeded = _sample_prices(cls, solver, seed, deadline)
    if seeded is None:
        prices, margin, free = np.zeros(cls.capacity.size), TIE, np.ones(K, bool)
    else:
        prices, margin = seeded
    vertices = _vertices(cls, prices)
    if seeded is not None:
        free = _near_ties(cls, vertices, prices, margin)
    # While some classes are fixed, the GPU rows are elastic at a price above any the LP
    # should need (raised whenever it is used): fixed choices that overfill a type then move
    # its price up, and the classes whose choice that changes are freed, instead of the LP
    # being infeasible and telling nothing.
    per_gpu = np.max(cls.weight / cls.gpus[:, None])
    penalty = 4.0 * max(float(prices.max()), per_gpu, 1e-300)
    best = None
    for rounds in range(1, MAX_ROUNDS + 1):
        if is_past(deadline) and best is not None:
            best.timed_out = True
            return best
        choice = np.argmax(vertices.values, axis=1)
        fixed_X = _allocation(cls, vertices, choice)
        left = None if deadline is None else max(seconds_left(deadline), 1e-3)
        solved = _restricted_lp(cls, free, fixed_X,
                                solver if left is None else solver.with_settings(time_limit=left),
                                None if free.all() else np.full(cls.capacity.size, penalty))
        if solved is None:
            if is_past(deadline):
                return best or CostSolution(None, -np.inf, np.inf, prices, Status.ERROR,
                                            {"rounds": rounds, "free_classes": int(free.sum())},
                                            timed_out=True)
            if free.all():
                status = Status.INFEASIBLE
                return best or CostSolution(None, -np.inf, np.inf, prices, status,
                                            {"rounds": rounds, "free_classes": int(K)})
            margin = 2 * margin
            free |= _near_ties(cls, vertices, prices, margin)
            continue
        X_free, new_prices, over = solved
        overfilled = np.any(over > 1e-9 * np.maximum(cls.capacity, 1.0))
        if overfilled:
            penalty *= 4.0
        X = fixed_X
        X[free] = X_free
        X = _clip(cls, X)
        objective = float(cls.count @ np.einsum("kj,kj->k", cls.weight, X))
        bound = dual_bound(cls, new_prices)
        done = not overfilled and bound - objective <= gap * max(abs(bound), 1e-300)
        if not overfilled and _meets_rows(cls, X) and (
                best is None or bound - objective < best.bound - best.objective):
            best = CostSolution(X, objective, bound, new_prices,
                                Status.OPTIMAL if done else Status.FEASIBLE,
                                {"rounds": rounds, "classes": int(K),
                                 "free_classes": int(free.sum())})
        if (done and best is not None) or free.all():
            break
        new_vertices = _vertices(cls, new_prices)
        chosen = new_vertices.values[np.arange(K), choice]
        top = new_vertices.values.max(axis=1)
        with np.errstate(invalid="ignore"):
            wrong = ~free & (top - chosen > 1e-9 * np.abs(top) + 1e-12)
        shift = np.max(np.abs(new_prices - prices)) / max(new_prices.max(), 1e-300)
        prices, vertices = new_prices, new_vertices
        before = int(free.sum())
        if wrong.sum() <= max(free.sum(), 10):
            free |= wrong | _near_ties(cls, vertices, prices, max(2 * shift, MIN_TIE))
        if int(free.sum()) == before:  # too many wrong choices, or nothing new to free
            margin = 2 * margin
            free |= _near_ties(cls, vertices, prices, margin)
    if best is None:
        return CostSolution(None, -np.inf, np.inf, prices, Status.ERROR,
                            {"rounds": MAX_ROUNDS, "free_classes": int(free.sum())})
    return best


def _sample_prices(cls: CostClasses, solver: Solver, seed: int, deadline: float | None):
    """(prices, margin) from the same problem over a random tenth of the jobs, capacity
    scaled to match, solved the same way to a loose gap; None when that sample has no
    solution (its SLOs may not fit where the whole problem's do)."""
    jobs = int(cls.count.sum())
    size = max(jobs // SAMPLE_FACTOR, DIRECT_CLASSES)
    drawn = np.random.default_rng(seed).choice(jobs, size=size, replace=False)
    job_class = np.repeat(np.arange(cls.count.size), cls.count.astype(int))
    picked, counts = np.unique(job_class[drawn], return_counts=True)
    sample = cls.take(picked, counts.astype(float), cls.capacity * size / jobs)
    solved = max_priced(sample, 1e-4, solver, seed + 1, deadline)
    if solved.allocation is None:
        relaxed = replace(sample, target=np.zeros_like(sample.target))
        solved = max_priced(relaxed, 1e-4, solver, seed + 1, deadline)
        if solved.allocation is None:
            return None
    return solved.prices, max(TIE * np.sqrt(DIRECT_CLASSES / size), 1e-4)
