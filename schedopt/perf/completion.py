"""Filling a performance model's missing cells by low-rank matrix completion on log steps/s.

The matrix is the model's (job types x configurations) table (`schedopt.perf.model`), taken in
logs so that a job type's speed and a configuration's speed multiply, and fitted by a biased
low-rank factorization, the collaborative-filtering model of Koren, Bell & Volinsky (2009,
"Matrix factorization techniques for recommender systems", IEEE Computer 42(8)) that Paragon
and Quasar (Delimitrou & Kozyrakis, ASPLOS 2013 / 2014) used for the same question, how fast
does a workload run on a platform or next to a co-runner it was never profiled with:

    log T[a, c] ~ mu + r_a + d[a, gpu(c)] + b_c + u_a . w_c          (u_a, w_c in R^k)

r_a: the job type's overall speed; d[a, g]: its speed on GPU type g (shared by the isolated
column of g and every pair column on g, so a pair's rate scales with the job's own rate there);
b_c: the configuration's speed; u_a . w_c: a rank-k interaction. The parameters minimize

    1/2 sum_measured (pred - log T)^2 + lam/2 (|U|^2 + |W|^2) + lam/6 |d|^2 + eps/2 (|r|^2 + |b|^2)

by alternating least squares: with the column parameters fixed, each row's (r_a, d[a], u_a) is
one small ridge regression, and the other way round; all rows (columns) are solved at once as a
stack of (1 + J + k)-sized systems, until the objective improves by less than `tol` relative.
The rank k and lam are chosen by held-out validation: a fifth of the measured *units* (an
isolated cell, or one co-location pair = both of its sides, since one run measures both; this
is also how Gavel's own completion experiment, scheduler/perf_prediction/, hides entries) is
held out, each (k, lam) on the grid is fitted on the rest, and the smallest mean relative error
on the held-out cells of the kinds being filled (pairs and isolated cells weighted alike) wins,
averaged over `folds` random splits. A filled pair rate is capped at the job's isolated rate on that GPU type (sharing
a GPU never makes a job faster; no measured pair in Gavel's table breaks this).

Uncertainty: the model is refitted on `ensemble` bootstrap resamples of the measured units
(drawn with replacement). `spread[a, c]` is the standard deviation of the predicted log
steps/s across those refits: the part of the error due to *which* measurements happened to be
available. The model's own misfit is not in it, so the uncertainty reported on a filled cell
adds the held-out validation residual in quadrature:

    uncertainty = sqrt(spread^2 + s_val^2),   s_val = RMS of log(pred / truth) on held-out cells

a standard deviation of log steps/s: 0.1 means "about +-10%", and if the errors were normal
the truth would lie within 2 uncertainties of the estimate 95% of the time (the accuracy study,
`schedopt.perf.study`, reports how often it does). Measured cells keep uncertainty 0.

Measured cells are never changed; cells with 0 steps/s (cannot run there, or a pair that
cannot share) are measurements that take no part in the fit (log 0 is undefined) and stay 0.
A job type with no positive measurement, or a configuration no job type was measured in, stays
missing (cold start), unless the rule below fills it.

Pairs that cannot share. The fit only sees positive rates, so on its own it would give every
unmeasured pair a positive rate, also to job types that cannot share with most partners (in
Gavel's table: too much memory for two, and every multi-GPU pair). So before fitting, each job
type a gets, per GPU type g, its share of measured pairs that cannot share:

    z[a, g] = (measured pair cells of a on g at 0 steps/s) / (measured pair cells of a on g)

and a missing pair cell, a with b on g, is predicted 0 steps/s (cannot share; both sides, as
one pair) when

    z[a, g] + z[b, g] > 1

(a job type with no measured pair on g counts 0). Why: if two jobs can share a GPU when their
footprints (memory, say) add up to at most its capacity, and partners' footprints are spread
evenly, then a fails with the share z[a, g] of partners whose footprint exceeds what a leaves
free, z[a, g] estimates a's footprint as a share of the capacity, and a and b fail together
exactly when their two shares add up to more than 1. Every multi-GPU pair in Gavel's table is
such a case (z = 1). Such cells are estimates (`known` False) with no uncertainty (NaN; log 0
is undefined); every other missing pair cell is filled by the fit, and so gets a positive rate
even where the two cannot share: the rule is silent when each of a and b shares with most of
its measured partners. On Gavel's table with half of the pair units hidden (zeros included;
`hide_units(..., zeros=True)`, seeds 0, 1, 2) completion gives a positive rate to 51, 40 and
39 of about 1,700 hidden zeros (single-GPU pairs with one memory-hungry job, e.g. Transformer
(batch size 256), which fails with half of its k80 partners; the other hidden zeros are
predicted 0 or stay missing), and predicts 0 for none of about 950 hidden positive pairs. A
stricter rule (max(z[a, g], z[b, g]) > 1/2) leaves 17-39 hidden zeros positive but predicts 0
for 10-26 pairs that share, and with only positive pairs hidden its errors raise the mean
relative error of the filled rates (seeds 0, 1, 2) from 8-10% to 11-14%.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from schedopt.errors import SchedoptError
from schedopt.perf.model import PerformanceModel

CANNOT_SHARE_SUM = 1.0  # predict "cannot share" when z[a, g] + z[b, g] exceeds this (module doc)
DEFAULT_RANKS = (2, 4, 6)
DEFAULT_LAMBDAS = (1.0, 0.3, 0.1)
EPS = 1e-6  # ridge on the biases r and b: only to make the optimum unique
BIAS_SHRINK = 1 / 3  # d is penalized at lam * BIAS_SHRINK


@dataclass(frozen=True, eq=False)
class Completion:
    """What `complete` returns.

    model: the completed model (measured cells as given, missing ones filled; `uncertainty`
    on filled cells as in the module doc, 0 on measured cells, NaN elsewhere); filled: (R, C)
    bool, the cells filled; cannot_share: (R, C) bool, the filled pair cells predicted 0
    steps/s by the rule in the module doc (`complete` always sets it); spread: (R, C)
    bootstrap sd of log steps/s on every cell (None without an ensemble); rank, lam: the
    chosen hyperparameters; residual: {"pairs": s_val, "isolated": s_val}, the RMS held-out
    log error of each kind of cell at (rank, lam) (NaN where none was held out); validation:
    {(rank, lam): held-out mean relative error on the kinds of cells being filled} over the
    grid (empty when the grid has one point). weights, side_lambda, method: set by
    `schedopt.perf.predict.predict` (the ensemble's member weights per 'kind:GPU type', the
    side model's ridge weight per kind, and "ensemble"); `complete` leaves them empty, "als".
    unconsolidated: the (job type, GPU type) whose unconsolidated rate was filled (only
    `predict` fills them: `schedopt.perf.spread`).
    """

    model: PerformanceModel
    filled: np.ndarray
    rank: int
    lam: float
    spread: np.ndarray | None = None
    residual: dict = field(default_factory=dict)
    validation: dict = field(default_factory=dict)
    cannot_share: np.ndarray | None = None
    weights: dict = field(default_factory=dict)
    side_lambda: dict = field(default_factory=dict)
    method: str = "als"
    unconsolidated: frozenset = frozenset()

    def entries(self) -> list[dict]:
        """The filled cells as dicts (job_type, gpu_type, partner, steps_per_s, measured,
        uncertainty, unconsolidated: `PerformanceModel.entries`), then the filled
        unconsolidated rates."""
        return self.model.entries(self.filled) + [
            e for e in self.model.unconsolidated_entries()
            if (e["job_type"], e["gpu_type"]) in self.unconsolidated]


@dataclass(frozen=True, eq=False)
class Fit:
    """One fitted factorization: pred (R, C) log steps/s, and the column parameters (b, W)
    that warm-start another fit."""

    pred: np.ndarray
    b: np.ndarray
    W: np.ndarray
    iterations: int


def _gram(weight: np.ndarray, F: np.ndarray) -> np.ndarray:
    """(R, p, p): sum over columns c of weight[r, c] * outer(F[c], F[c]), as p thin products
    (one wide product is slow where BLAS threads compete for two cores)."""
    outer = F[:, :, None] * F[:, None, :]
    return np.stack([weight @ outer[:, i, :] for i in range(F.shape[1])], axis=1)


def fit_log_factors(X: np.ndarray, weight: np.ndarray, gpu_of_column: np.ndarray, num_gpus: int,
                    rank: int, lam: float, *, seed: int = 0, init: Fit | None = None,
                    tol: float = 1e-6, max_iter: int = 2000) -> Fit:
    """The biased rank-`rank` model (module doc) fitted by alternating least squares to the
    cells of X with weight > 0 (weight = how many times a cell counts; X elsewhere is ignored).
    `init`: a previous fit of the same shape and rank to start from."""
    R, C = X.shape
    k, J = rank, num_gpus
    w = np.asarray(weight, dtype=float)
    total = w.sum()
    mu = float((w * np.where(w > 0, X, 0.0)).sum() / total) if total > 0 else 0.0
    Y = np.where(w > 0, X - mu, 0.0)
    wY = w * Y
    G = np.zeros((C, J))
    G[np.arange(C), gpu_of_column] = 1.0
    if init is not None and init.W.shape == (C, k):
        b, W = init.b.copy(), init.W.copy()
    else:
        b, W = np.zeros(C), 0.1 * np.random.default_rng(seed).standard_normal((C, k))
    row_ridge = np.diag(np.r_[EPS, np.full(J, lam * BIAS_SHRINK), np.full(k, lam)])
    col_ridge = np.diag(np.r_[EPS, np.full(k, lam)])
    previous = np.inf
    for iteration in range(1, max_iter + 1):
        F = np.hstack([np.ones((C, 1)), G, W])  # row step: r_a, d[a, :], u_a
        rows = np.linalg.solve(_gram(w, F) + row_ridge, ((wY - w * b) @ F)[..., None])[..., 0]
        base = rows[:, :1 + J] @ F[:, :1 + J].T  # r_a + d[a, gpu(c)]
        U = rows[:, 1 + J:]
        F2 = np.hstack([np.ones((R, 1)), U])  # column step: b_c, w_c
        cols = np.linalg.solve(_gram(w.T, F2) + col_ridge, ((wY - w * base).T @ F2)[..., None])[..., 0]
        b, W = cols[:, 0], cols[:, 1:]
        pred = base + b[None, :] + U @ W.T
        d = rows[:, 1:1 + J]
        loss = 0.5 * float(np.sum(w * (pred - Y) ** 2))
        loss += 0.5 * lam * float(np.sum(U * U) + np.sum(W * W) + BIAS_SHRINK * np.sum(d * d))
        loss += 0.5 * EPS * float(rows[:, 0] @ rows[:, 0] + b @ b)
        if previous - loss <= tol * max(1.0, abs(loss)):
            break
        previous = loss
    return Fit(pred + mu, b, W, iteration)


def measurement_units(model: PerformanceModel, cells: np.ndarray) -> np.ndarray:
    """(R, C) int: a unit id per cell in `cells` (-1 elsewhere). An isolated cell is its own
    unit; the two sides of one co-location pair (a with b, b with a, same GPU type) share one."""
    R, C = model.shape
    flat = np.arange(R * C).reshape(R, C)
    other = model.transpose_index()
    key = np.where(other >= 0, np.minimum(flat, other), flat)
    units = np.full((R, C), -1, dtype=np.int64)
    _, ids = np.unique(key[cells], return_inverse=True)
    units[cells] = ids
    return units


class _Fitter:
    """The fit data of one model: log values, which cells take part, their units."""

    def __init__(self, model: PerformanceModel, seed: int, tol: float):
        self.model, self.tol = model, tol
        values = model.values
        self.usable = model.known & (values > 0)  # np.nan > 0 is False
        # rows and columns with no positive measurement take no part (their cells stay missing)
        self.rows = np.flatnonzero(self.usable.any(axis=1))
        self.cols = np.flatnonzero(self.usable.any(axis=0))
        self.X = np.log(np.where(self.usable, values, 1.0))
        self.units = measurement_units(model, self.usable)
        self.num_units = int(self.units.max()) + 1 if self.usable.any() else 0
        self.is_pair_unit = np.zeros(self.num_units, dtype=bool)
        self.is_pair_unit[self.units[:, model.is_pair][self.usable[:, model.is_pair]]] = True
        self.rng = np.random.default_rng(seed)

    def fit(self, unit_weight: np.ndarray, rank: int, lam: float, seed: int,
            init: Fit | None = None) -> Fit:
        weight = np.where(self.usable, unit_weight[np.maximum(self.units, 0)], 0.0)
        m, sub = self.model, np.ix_(self.rows, self.cols)
        fit = fit_log_factors(self.X[sub], weight[sub], m.column_gpu[self.cols], len(m.gpu_types),
                              rank, lam, seed=seed, init=init, tol=self.tol)
        pred = np.full(m.shape, np.nan)
        pred[sub] = fit.pred
        return Fit(pred, fit.b, fit.W, fit.iterations)

    def holdout(self, fraction: float) -> np.ndarray:
        """(num_units,) bool: a random `fraction` of the pair units and of the isolated units
        (none of a kind with fewer than 5 units)."""
        out = np.zeros(self.num_units, dtype=bool)
        for kind in (self.is_pair_unit, ~self.is_pair_unit):
            ids = np.flatnonzero(kind)
            take = round(fraction * ids.size) if ids.size >= 5 else 0
            out[self.rng.choice(ids, size=take, replace=False)] = True
        return out

    def held_cells(self, held: np.ndarray) -> np.ndarray:
        """(R, C) bool: the measured cells of the held-out units."""
        return self.usable & held[np.maximum(self.units, 0)]


def _kind_errors(model: PerformanceModel, cells: np.ndarray, pred: np.ndarray, X: np.ndarray) -> dict:
    """{kind: log(pred / truth) on `cells` of that kind}, kind 'pairs' or 'isolated'."""
    out = {}
    for kind, cols in (("pairs", model.is_pair), ("isolated", ~model.is_pair)):
        mask = cells & cols[None, :]
        out[kind] = (pred - X)[mask]
    return out


def cap_pairs_at_isolated(model: PerformanceModel, values: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """`values` with the pair cells in `cells` capped at the same job type's isolated steps/s
    on the same GPU type (where that is finite)."""
    J, P = len(model.gpu_types), len(model.partners)
    cap = np.full(values.shape, np.inf)
    cap[:, J:] = np.repeat(np.where(np.isfinite(values[:, :J]), values[:, :J], np.inf), P, axis=1)
    return np.where(cells, np.minimum(values, cap), values)


def cannot_share_share(model: PerformanceModel) -> np.ndarray:
    """(R, J): z[a, g], the share of job type a's measured pair cells on GPU type g that are
    0 steps/s (NaN where a has no measured pair cell on g); module doc."""
    R, J, P = len(model.job_types), len(model.gpu_types), len(model.partners)
    known = model.known[:, J:].reshape(R, J, P)
    zero = known & (model.values[:, J:].reshape(R, J, P) == 0)
    n = known.sum(axis=2)
    return np.where(n > 0, zero.sum(axis=2) / np.maximum(n, 1), np.nan)


def predicted_cannot_share(model: PerformanceModel) -> np.ndarray:
    """(R, C) bool: the missing pair cells the module doc's rule predicts at 0 steps/s:
    z[a, g] + z[b, g] > CANNOT_SHARE_SUM for a with b on g (not where b's side of the pair
    was measured above 0)."""
    R, J, P = len(model.job_types), len(model.gpu_types), len(model.partners)
    z = np.nan_to_num(cannot_share_share(model), nan=0.0)  # (R, J)
    own = z[:, :, None]  # (R, J, 1): row a
    other = z[model.pair_rows].T[None, :, :]  # (1, J, P): partner b
    out = np.zeros(model.shape, dtype=bool)
    out[:, J:] = (own + other > CANNOT_SHARE_SUM).reshape(R, J * P)
    # a pair whose other side was measured sharing (> 0 steps/s) is not predicted to fail
    flat = model.transpose_index().ravel()
    shared = np.zeros(model.shape, dtype=bool).ravel()
    has = flat >= 0
    shared[has] = (model.known.ravel() & (model.values.ravel() > 0))[flat[has]]
    return out & model.missing & ~shared.reshape(model.shape)


def complete(model: PerformanceModel, *, ranks=DEFAULT_RANKS, lambdas=DEFAULT_LAMBDAS,
             holdout: float = 0.2, folds: int = 2, ensemble: int = 8, seed: int = 0,
             isolated: bool = True, pairs: bool = True, cap: bool = True,
             tol: float = 1e-6) -> Completion:
    """Fill the missing cells of `model` (isolated ones if `isolated`, pair ones if `pairs`).

    ranks, lambdas: the validation grid; holdout, folds: the share of measured units held out
    per split and how many random splits (0: no validation, the first rank with the largest
    lambda is used and the uncertainty lacks s_val); ensemble: bootstrap refits for the spread (0 or 1: none;
    the uncertainty is then s_val alone); seed: every random draw; cap: cap filled pair
    rates at the job's isolated rate on that GPU type; tol: stop a fit when the objective
    improves by less than tol x max(1, objective). Missing pair cells of job types that mostly
    cannot share are predicted 0 (`predicted_cannot_share`); a job type (or a configuration)
    with no positive measurement at all otherwise stays missing: nothing relates it to the
    rest. See the module doc. Raises SchedoptError when the model has no positive measurement
    at all.
    """
    fitter = _Fitter(model, seed, tol)
    if fitter.num_units == 0:
        raise SchedoptError("the performance model has no positive measurement to complete from")
    grid = [(int(k), float(lam)) for k in ranks for lam in sorted(lambdas, reverse=True)]
    if not grid:
        raise SchedoptError("give at least one rank and one lambda")
    zeros = predicted_cannot_share(model) if pairs else np.zeros(model.shape, dtype=bool)
    target = model.missing & ~zeros & np.where(model.is_pair, pairs, isolated)[None, :]
    # cold start: a job type, or a configuration, with no measurement at all stays missing,
    # and so does the other side of such a pair (a pair is written only with both sides)
    target &= fitter.usable.any(axis=1)[:, None] & fitter.usable.any(axis=0)[None, :]
    other = model.transpose_index()
    ready = (target | zeros | np.isfinite(model.values)).ravel()
    target &= (other < 0) | ready[np.maximum(other, 0)]
    kinds = [k for k, cols in (("pairs", model.is_pair), ("isolated", ~model.is_pair))
             if (target & cols[None, :]).any()] or ["pairs", "isolated"]
    errors: dict = {key: {"pairs": [], "isolated": []} for key in grid}
    for fold in range(folds):  # also when the grid has one point: s_val needs held-out errors
        held_units = fitter.holdout(holdout)
        held, train = fitter.held_cells(held_units), (~held_units).astype(float)
        previous = None  # warm start along each rank's lambda path (largest lambda first)
        for key in grid:
            previous = fitter.fit(train, *key, seed=seed + fold, init=previous)
            for kind, e in _kind_errors(model, held, previous.pred, fitter.X).items():
                errors[key][kind].append(e)

    def score(key) -> float:  # held-out mean relative error, kinds being filled weighted alike
        parts = [np.concatenate(errors[key][k]) for k in kinds if errors[key][k]]
        parts = [np.abs(np.expm1(p)).mean() for p in parts if p.size]
        return float(np.mean(parts)) if parts else float("inf")

    validation = {key: score(key) for key in grid} if folds and len(grid) > 1 else {}
    rank, lam = min(grid, key=lambda key: (validation[key], key)) if validation else grid[0]
    residual = {}
    for kind in ("pairs", "isolated"):
        e = np.concatenate(errors[(rank, lam)][kind]) if errors[(rank, lam)][kind] else np.empty(0)
        residual[kind] = float(np.sqrt(np.mean(e ** 2))) if e.size else float("nan")
    full = fitter.fit(np.ones(fitter.num_units), rank, lam, seed=seed)
    values = np.where(target, np.exp(full.pred), np.where(zeros, 0.0, model.values))
    if cap:
        values = cap_pairs_at_isolated(model, values, target & model.is_pair[None, :])
    s_val = np.where(model.is_pair, residual["pairs"], residual["isolated"])[None, :]
    spread = None
    before = model.uncertainty if model.uncertainty is not None else np.nan  # earlier estimates
    uncertainty = np.where(model.known, 0.0, before)
    if ensemble > 1:
        draws = np.empty((ensemble, *model.shape))
        for i in range(ensemble):
            counts = np.bincount(fitter.rng.integers(0, fitter.num_units, fitter.num_units),
                                 minlength=fitter.num_units).astype(float)
            draws[i] = fitter.fit(counts, rank, lam, seed=seed + 1 + i, init=full).pred
        spread = draws.std(axis=0, ddof=1)
        both = np.sqrt(spread ** 2 + np.where(np.isfinite(s_val), s_val, 0.0) ** 2)
        uncertainty = np.where(target, both, uncertainty)
    else:
        uncertainty = np.where(target, s_val, uncertainty)
    uncertainty = np.where(zeros, np.nan, uncertainty)
    completed = model.with_values(values, uncertainty)
    return Completion(completed, target | zeros, rank, lam, spread, residual, validation, zeros)
