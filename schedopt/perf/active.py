"""Which cells to measure next: active measurement for a performance model.

Given a model with missing cells and a budget of k measurements, `suggest` ranks the missing
*units* (an isolated cell, or one co-location pair = both of its sides, measured by one run)
and returns the k best:

- "random": a uniformly random order (the reference);
- "uncertainty": the largest completion uncertainty first (uncertainty sampling; a pair
  scores the larger of its two sides);
- "maxmin": the largest expected loss of max-min fairness caused by not knowing the cell.
  The completed matrix E is what a policy would decide from. For a missing isolated cell
  (a, g) with estimate e and uncertainty u (sd of log steps/s) the truth is taken to be
  e exp(-z u) or e exp(+z u) (z = 1.5, two equally likely scenarios). In scenario S (E with
  that one cell changed), the allocation X_E made from E reaches the max-min level
  L_S(X_E), while measuring the cell first would give X_S and L_S(X_S); the cell's score
  is the mean regret (L_S(X_S) - L_S(X_E)) / L_S(X_S) over the two scenarios, the share of
  fairness lost by deciding without it. Every missing isolated cell is first screened in
  closed form (X_E kept, L_S(X_S) taken as the current level: only the cell's own job's level
  changes); the `candidates` cells the screen ranks first get the exact regret (two max-min
  solves each). Pair cells, which max-min across GPU types does not read, and ties follow in
  uncertainty order.

Max-min fairness here is Gavel's heterogeneity-aware policy (`max_min_fairness_perf`,
`schedopt.policies.gavel.lp.max_min_fairness`) with one job per job type, its scale factor
from the label, weight 1, on a cluster of `capacity` GPUs per type: the level of allocation
X under matrix T is min over jobs of s_m (T[m] . X[m]) / (T[m] . q), q the cluster's share
of each GPU type (throughput relative to an equal share of the cluster). Job types measured
at 0 steps/s everywhere are left out (they cannot run).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedopt.errors import SchedoptError
from schedopt.perf.completion import complete, measurement_units
from schedopt.perf.model import PerformanceModel

STRATEGIES = ("maxmin", "uncertainty", "random")
SCENARIO_Z = 1.5
DEFAULT_CANDIDATES = 40


@dataclass(frozen=True)
class Suggestion:
    """One measurement to make: job type, GPU type, partner (None: alone), the current
    estimate (steps/s, NaN if none), its uncertainty (sd of log steps/s) and the score the
    strategy ranked it by (for "maxmin": the expected share of the max-min level lost)."""

    job_type: str
    gpu_type: str
    partner: str | None
    estimate: float
    uncertainty: float
    score: float


def maxmin_allocation(T: np.ndarray, scale_factor: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """(M, J) Gavel's max-min fairness allocation (time shares) for throughput matrix T
    (steps/s, M jobs x J GPU types; 0 = cannot run)."""
    from schedopt.core.problem import ThroughputProblem
    from schedopt.policies.gavel.lp import max_min_fairness

    problem = ThroughputProblem.from_arrays(T, scale_factor, None, capacity)
    return np.asarray(max_min_fairness(problem).allocation, dtype=float)


def maxmin_level(T: np.ndarray, X: np.ndarray, scale_factor: np.ndarray, capacity: np.ndarray) -> float:
    """The max-min level allocation X reaches when the throughputs are T: min over jobs of
    s_m (T[m] . X[m]) / (T[m] . q), q = capacity / capacity.sum() (module doc)."""
    q = capacity / capacity.sum()
    return float(np.min(scale_factor * np.einsum("mj,mj->m", T, X) / (T @ q)))


def decision_rows(model: PerformanceModel) -> np.ndarray:
    """Job types max-min can schedule: some isolated cell is not measured at 0."""
    J = len(model.gpu_types)
    return np.flatnonzero(~(model.known[:, :J] & (model.values[:, :J] == 0)).all(axis=1))


def _units(model: PerformanceModel, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unit id per cell (-1 elsewhere), (n_units,) a representative flat cell per unit)."""
    units = measurement_units(model, cells)
    n = int(units.max()) + 1 if cells.any() else 0
    first = np.full(n, -1, dtype=np.int64)
    flat = np.flatnonzero(cells.ravel())
    first[units.ravel()[flat][::-1]] = flat[::-1]
    return units, first


def suggest(model: PerformanceModel, budget: int, strategy: str = "maxmin", *,
            capacity=None, seed: int = 0, candidates: int = DEFAULT_CANDIDATES,
            completed: PerformanceModel | None = None, **options) -> list[Suggestion]:
    """The `budget` missing units to measure next, best first (module doc). capacity: GPUs
    per type for "maxmin" (default: one per job type, of every type); completed: the model
    already completed (else `complete(model, **options)` is run: it gives the estimates and
    uncertainties every strategy but "random" ranks by)."""
    if strategy not in STRATEGIES:
        raise SchedoptError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    if budget < 0:
        raise SchedoptError(f"the budget must be >= 0 measurements, got {budget}")
    missing = model.missing
    units, first = _units(model, missing)
    n = first.size
    if completed is None and strategy != "random":
        completed = complete(model, **options).model
    R, C = model.shape
    estimate = completed.values if completed is not None else np.full((R, C), np.nan)
    u = completed.uncertainty if completed is not None and completed.uncertainty is not None \
        else np.full((R, C), np.nan)
    # a unit's uncertainty: the larger of its sides; a cell left unfilled (a cold start) ranks
    # first, one predicted 0 by the cannot-share rule (an estimate without uncertainty) last
    unc = np.full(n, -np.inf)
    cell_u = np.where(np.isfinite(u), u, np.where(np.isfinite(estimate), 0.0, np.inf))[missing]
    np.maximum.at(unc, units[missing], cell_u)
    score = np.zeros(n)
    rng = np.random.default_rng(seed)
    if strategy == "random":
        order = rng.permutation(n)
    else:
        if strategy == "maxmin":
            score = _maxmin_scores(model, completed, units, first, unc, capacity, candidates)
        order = np.lexsort((rng.random(n), -unc, -score))
    out = []
    for i in order[:budget]:
        r, c = divmod(int(first[i]), C)
        g, partner = model.configurations[c]
        out.append(Suggestion(model.job_types[r], g, partner, float(estimate[r, c]),
                              float(u[r, c]) if np.isfinite(u[r, c]) else float("nan"), float(score[i])))
    return out


def _maxmin_scores(model, completed, units, first, unc, capacity, candidates) -> np.ndarray:
    """(n_units,) expected share of the max-min level lost by not measuring each unit."""
    J = len(model.gpu_types)
    R, C = model.shape
    rows = decision_rows(model)
    E = np.nan_to_num(completed.values[rows][:, :J], nan=0.0)
    usable_rows = (E > 0).any(axis=1)
    rows, E = rows[usable_rows], E[usable_rows]
    scores = np.zeros(first.size)
    if rows.size == 0:
        return scores
    s = model.scale_factors[rows].astype(float)
    cap = np.full(J, float(rows.size)) if capacity is None else np.asarray(capacity, dtype=float)
    X = maxmin_allocation(E, s, cap)
    position = np.full(R, -1)
    position[rows] = np.arange(rows.size)
    r_of, c_of = np.divmod(first, C)
    isolated = np.flatnonzero((c_of < J) & (position[r_of] >= 0) & np.isfinite(unc) & (unc > 0))
    if isolated.size == 0:
        return scores
    # screen every cell in closed form: X kept, only job m's level changes in scenario S
    q = cap / cap.sum()
    num, norm = np.einsum("mj,mj->m", E, X), E @ q
    levels = s * num / norm
    L = float(levels.min())
    low = np.sort(levels)[:2]
    m, g = position[r_of[isolated]], c_of[isolated]
    others = np.where(levels[m] == low[0], low[-1], low[0])  # the lowest level of the other jobs
    screen = np.zeros(isolated.size)
    for sign in (-1.0, 1.0):
        delta = E[m, g] * np.expm1(sign * SCENARIO_Z * unc[isolated])
        mine = s[m] * (num[m] + delta * X[m, g]) / (norm[m] + delta * q[g])
        screen += np.maximum(0.0, L - np.minimum(others, mine)) / L / 2
    scores[isolated] = screen
    # the `candidates` cells the screen ranks first: the exact regret, two max-min solves each
    chosen = isolated[np.lexsort((-unc[isolated], -screen))][:candidates]
    for i in chosen:
        mm, gg = position[r_of[i]], c_of[i]
        regret = []
        for sign in (-1.0, 1.0):
            S = E.copy()
            S[mm, gg] = E[mm, gg] * np.exp(sign * SCENARIO_Z * unc[i])
            best = maxmin_level(S, maxmin_allocation(S, s, cap), s, cap)
            regret.append(max(0.0, best - maxmin_level(S, X, s, cap)) / best if best > 0 else 0.0)
        scores[i] = float(np.mean(regret))
    return scores


def measurement_curve(truth: PerformanceModel, strategy: str, *, seed: int = 0, capacity=None,
                      step: int = 6, target: float = 0.95, ensemble: int = 4,
                      candidates: int = DEFAULT_CANDIDATES, until_target: bool = True,
                      method: str = "als", **options) -> list[tuple[int, float]]:
    """How fair max-min is as isolated cells of `truth` (a fully measured model) get measured
    in `strategy`'s order: [(measurements made, level)], level = the true max-min level of
    the allocation made from the completed matrix / that of the allocation made from truth.

    Start: each job type measured on one GPU type drawn with default_rng(seed) among those
    where it runs (cells at 0 steps/s are known from the start); each step measures `step`
    more cells chosen by `suggest` and completes again (`complete`, `ensemble` bootstrap
    refits). Stops when the level first reaches `target` (if `until_target`) or when every
    cell is measured. capacity: GPUs per type (default: one per job type of every type);
    method: "als" (`complete`) or "ensemble" (`schedopt.perf.predict.predict`, side
    information included) completes the matrix; options: more arguments of either (ranks,
    lambdas)."""
    if method == "ensemble":
        from schedopt.perf.predict import predict as fill
    elif method == "als":
        fill = complete
    else:
        raise SchedoptError(f"unknown method {method!r}; expected als or ensemble")
    J = len(truth.gpu_types)
    rows = decision_rows(truth)
    s = truth.scale_factors[rows].astype(float)
    cap = np.full(J, float(rows.size)) if capacity is None else np.asarray(capacity, dtype=float)
    T = truth.values[rows][:, :J]
    best = maxmin_level(T, maxmin_allocation(T, s, cap), s, cap)
    rng = np.random.default_rng(seed)
    positive = truth.values[:, :J] > 0
    start = np.zeros(truth.shape, dtype=bool)
    first = np.array([rng.choice(np.flatnonzero(p)) if p.any() else -1 for p in positive])
    has = first >= 0
    start[np.flatnonzero(has), first[has]] = True
    start[:, :J] |= ~positive
    known = start.copy()
    curve = []
    while True:
        seen = truth.hide(~known)
        done = fill(seen, seed=seed, ensemble=ensemble, **options)
        E = np.nan_to_num(done.model.values[rows][:, :J], nan=0.0)
        level = maxmin_level(T, maxmin_allocation(E, s, cap), s, cap) / best
        curve.append((int((known & ~start).sum()), level))
        if (until_target and level >= target) or not (~known[:, :J]).any():
            return curve
        for p in suggest(seen, step, strategy, capacity=cap, seed=seed + len(curve),
                         completed=done.model, candidates=candidates):
            known[truth.job_types.index(p.job_type), truth.gpu_types.index(p.gpu_type)] = True
