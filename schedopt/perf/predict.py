"""Predicting unmeasured steps/s by an ensemble selected on held-out measurements.

`complete` (completion.py) fits one low-rank model to the whole matrix. `predict` combines
seven predictors of log steps/s, each good where the others are weak:

- `als`: that low-rank model (`complete`: rank and ridge weight chosen by validation);
- `als_gpu`: the same model fitted separately to each GPU type's columns (its isolated column
  and its pair columns), so the interaction of two job types may differ from one GPU type to
  another (Gavel's K80 and P100 pairs are far more regular than its V100 ones);
- `side`: the group ridge on what the labels say (`schedopt.perf.side`): a pair's slowdown
  log(T_pair / T_alone) from the two job types, their families and the GPU type; an isolated
  rate from the job type's relatives (same model at another batch size or scale factor).
  It also fills job types never measured on any GPU type (cold starts `complete` leaves).
- `gp` (pair cells only): Gaussian processes per GPU type on the same slowdowns
  (`schedopt.perf.kernel`): a pair is read off pairs of the same families at neighbouring
  batch sizes, job and partner side together, with weights learned by marginal likelihood
  (on Gavel's table it carries the V100 pairs the others predict worst). Two GPs, with an
  exponential and a squared-exponential kernel in the batch size, are averaged; the final
  estimate of each also averages the posterior means under the hyperparameters of the
  held-out folds' fits and of the fit on everything (the likelihood has two optima on V100).
- `ratio` (isolated cells only): the job type's own rate on another GPU type, or its model's
  rate at another scale factor, times the ratio its relatives show between the two
  (`schedopt.perf.side.relative_ratios`).
- `scaling` (isolated cells only): the low-rank model of the same form on another matrix,
  rows = models (family and batch size), columns = (scale factor, GPU type): a job type's
  rate from its model's rates at the other scale factors and on the other GPU types (rank
  chosen on the held-out folds from SCALING_HYPER).
- `pairmax` (isolated cells only): the job type's largest measured pair rate on that GPU
  type, times the median ratio of isolated rate to largest pair rate over the job types
  measured both ways there (a job next to its least demanding partner runs close to its
  isolated rate). Only job types with a measured pair rate above 0 on that GPU type. Its
  estimates also stand in for the unmeasured isolated cells that `ratio` and `scaling` read
  (a multi-GPU job type's rate from its single-GPU version's).

Selection: the measured positive units (an isolated cell, or the two sides of one pair) are
split into `folds` folds; each predictor is refitted without each fold and predicts it. Per
group of cells (pair cells per GPU type; isolated cells per GPU type and single- or multi-GPU
job type, as the low-rank members see no pair of a multi-GPU job type and do worse there; a
group with fewer than MIN_GROUP held-out cells takes its GPU type's weights), the convex
weights w (a grid of step 0.1 over the simplex of the members that predict that kind)
minimizing the held-out mean relative error of the blend

    log T_hat = sum_m w_m log T_m           (members with no prediction for a cell drop out,
                                             the others' weights renormalized)

are kept, and the blend of the predictors fitted on everything fills the missing cells. Pair
rates are capped at the job's isolated rate on that GPU type; the "cannot share" rule and
measured cells are exactly as in `complete` (measured cells never change, a measured 0 stays 0).

Uncertainty (sd of log steps/s), a split-conformal calibration on the held-out errors of the
blend, scaled per cell: the log of |held-out log error| is a ridge on (kind, GPU type), (kind,
GPU type, family of the job type) and (kind, GPU type, family of the partner, or single- or
multi-GPU for isolated cells), so that a family the members predict badly on a GPU type (the
Recommendation models on Gavel's V100 pairs) gets a wider band than one they predict well; per
kind and GPU type a factor sets 2 s at CALIBRATION_QUANTILE of the held-out errors so scaled
(`_calibrated_sd`). This s is combined with the low-rank model's bootstrap spread where it has
weight: uncertainty = sqrt(s^2 + (w_als spread)^2).
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from schedopt.perf.completion import (
    DEFAULT_LAMBDAS,
    DEFAULT_RANKS,
    Completion,
    cap_pairs_at_isolated,
    complete,
    fit_log_factors,
    measurement_units,
)
from schedopt.errors import SchedoptError
from schedopt.perf.kernel import PairGP
from schedopt.perf.model import PerformanceModel
from schedopt.perf.side import (GroupRidge, group_codes, isolated_groups, job_type_info,
                                pair_groups, relative_ratios)
from schedopt.perf.spread import fill_unconsolidated

MEMBERS = ("als", "als_gpu", "side", "gp", "ratio", "scaling", "pairmax")
PAIR_MEMBERS = ("als", "als_gpu", "side", "gp")  # the members that predict pair cells
ISOLATED_MEMBERS = ("als", "als_gpu", "side", "ratio", "scaling", "pairmax")  # and isolated cells
MIN_GROUP = 10
SIDE_LAMBDAS = (0.03, 0.1, 0.3, 1.0)
# (rank, lam) of the `scaling` member tried on held-out folds. On Gavel's table, 50% of the
# isolated cells hidden, seeds 100-107, the ensemble's mean error with (2, 0.1) alone 15.4%,
# (1, 0.1) 15.8%, (3, 0.1) 15.9%, ranks 1-3 at 0.1 picked by the folds 15.3%, with (2, 0.3)
# added to those 15.8%
SCALING_HYPER = ((1, 0.1), (2, 0.1), (3, 0.1))
# 2 sd is set at this quantile of the held-out errors (scaled as in _calibrated_sd), per kind:
# they come from fits on 3/4 of the measurements, so they run larger than the final fit's. On
# Gavel's table, 50% of one kind hidden, seeds 100-109 for pairs (0.90 covered 92.7-97.4% of
# the hidden pairs, mean 94.8%; 0.95 covered 95.9-98.8%) and isolated cells (0.95: 88.6-95.1%
# on seeds 100-103; 0.90: 87.0-94.3% on 100-104; about 40 held-out cells per GPU type are few)
CALIBRATION_QUANTILE = {"pairs": 0.90, "isolated": 0.95}
ERROR_FLOOR = 0.01  # log units added to |held-out error| before its log (errors of exactly 0)
ERROR_SCALE_LAMBDA = 3.0  # ridge weight of the error-scale groups (_calibrated_sd)
# an isolated rate is first explained by the job type's relatives, its own effect penalized
# 16 x more (held-out on Gavel's table, 50% of isolated cells hidden: 25% error, against 27%
# at 4 x and 29% at 1 x)
OWN_EFFECT_PENALTY = 16.0


def _simplex(n: int, step: float = 0.1) -> np.ndarray:
    """(k, n): every weight vector on the grid of `step` with entries >= 0 summing to 1, in
    lexicographic order (the first of equally good rows wins in `_best_weights`)."""
    m = round(1 / step)
    # stars and bars: n - 1 bars among m + n - 1 places, the gaps between them are the counts
    bars = list(itertools.combinations(range(m + n - 1), n - 1))
    bars = np.array(bars, dtype=int).reshape(len(bars), n - 1)
    edges = np.hstack([np.full((len(bars), 1), -1), bars, np.full((len(bars), 1), m + n - 1)])
    counts = np.diff(edges, axis=1) - 1
    return counts[np.lexsort(counts.T[::-1])].astype(float) / m


def _fit_cells(model: PerformanceModel, X: np.ndarray, weight: np.ndarray, cols: np.ndarray,
               rank: int, lam: float, seed: int) -> np.ndarray:
    """Low-rank fit (completion.fit_log_factors) to the cells of `cols` with weight > 0;
    (R, C) log prediction, NaN outside `cols` and in rows/columns with nothing to fit."""
    w = weight[:, cols]
    rows = np.flatnonzero((w > 0).any(axis=1))
    used = cols[(w > 0).any(axis=0)]
    out = np.full(model.shape, np.nan)
    if rows.size == 0 or used.size == 0:
        return out
    gpu = model.column_gpu[used]
    _, gpu = np.unique(gpu, return_inverse=True)
    sub = np.ix_(rows, used)
    fit = fit_log_factors(X[sub], weight[sub], gpu.ravel(), int(gpu.max()) + 1, rank, lam, seed=seed,
                          tol=1e-5)
    out[sub] = fit.pred
    return out


class _Members:
    """The three predictors on one model, refittable on any subset of its measurements."""

    def __init__(self, model: PerformanceModel, rank: int, lam: float,
                 gpu_hyper: list[tuple[int, float]], seed: int):
        self.model, self.rank, self.lam, self.gpu_hyper, self.seed = model, rank, lam, gpu_hyper, seed
        v = model.values
        self.usable = model.known & (v > 0)
        self.X = np.log(np.where(self.usable, v, 1.0))
        R = model.shape[0]
        J, P = len(model.gpu_types), len(model.partners)
        self.J = J
        self.info = info = job_type_info(model.job_types)
        # `scaling`'s matrix: row of each job type's model, column block of its scale factor
        self.scaling_index = (np.unique(np.asarray(info.model, dtype=str), return_inverse=True)[1].ravel(),
                              np.unique(info.scale_factor, return_inverse=True)[1].ravel())
        # pair cells that can be positive: (row a, column c, GPU g, partner row b)
        cells = model.applicable & ~(model.known & (v == 0)) & model.is_pair[None, :]
        a, c = np.nonzero(cells)
        g = (c - J) // max(P, 1)
        b = model.pair_rows[(c - J) % P] if P else c
        self.pair_index = (a, c, g, b)
        self.pair_ridge = GroupRidge(pair_groups(info, a, b, g)) if a.size else None
        self.pair_gps = (PairGP(info, a, b, g, seed), PairGP(info, a, b, g, seed, smooth=True))
        ia, ig = np.repeat(np.arange(R), J), np.tile(np.arange(J), R)
        self.iso_index = (ia, ig)
        groups = isolated_groups(info, ia, ig)  # the first is the job type's own effect
        self.iso_ridge = GroupRidge(groups, penalty=[OWN_EFFECT_PENALTY] + [1.0] * (len(groups) - 1))

    def low_rank(self, train: np.ndarray) -> dict:
        """{'als', 'als_gpu': (R, C) log steps/s} fitted on the usable cells in `train`."""
        m = self.model
        weight = (self.usable & train).astype(float)
        out = {"als": _fit_cells(m, self.X, weight, np.arange(m.shape[1]), self.rank, self.lam, self.seed)}
        per = np.full(m.shape, np.nan)
        for j, (k, lam) in enumerate(self.gpu_hyper):
            cols = np.flatnonzero(m.column_gpu == j)
            per[:, cols] = _fit_cells(m, self.X, weight, cols, k, lam, self.seed)[:, cols]
        out["als_gpu"] = per
        return out

    def ratio(self, train: np.ndarray, fill: np.ndarray | None = None) -> np.ndarray:
        """(R, C) log steps/s of the isolated cells from relatives' ratios
        (side.relative_ratios) on the usable isolated cells in `train`, and on `fill` ((R, J)
        log steps/s, NaN where none) in the isolated cells not among them; NaN in pair
        columns."""
        J = self.J
        seen = np.where((self.usable & train)[:, :J], self.X[:, :J], np.nan)
        if fill is not None:
            seen = np.where(np.isnan(seen), fill, seen)
        out = np.full(self.model.shape, np.nan)
        out[:, :J] = relative_ratios(self.info, seen)
        return out

    def pairmax(self, train: np.ndarray) -> np.ndarray:
        """(R, C) log steps/s of the isolated cells from the job type's own pair rates: on
        GPU type g, the largest of its usable pair cells in `train` there plus c_g (log
        units), c_g the median of (isolated - largest pair) log rate over the job types with
        both in `train`: sharing never makes a job faster, and next to its least demanding
        partner a job runs close to its isolated rate. NaN in pair columns, for job types
        with no such pair cell on g, and on g if no job type gives c_g."""
        J, P = self.J, len(self.model.partners)
        ok = self.usable & train
        out = np.full(self.model.shape, np.nan)
        for g in range(J):
            cols = J + g * P + np.arange(P)
            top = np.where(ok[:, cols], self.X[:, cols], -np.inf).max(axis=1, initial=-np.inf)
            has = np.isfinite(top)
            both = has & ok[:, g]
            if both.any():
                out[has, g] = top[has] + float(np.median(self.X[both, g] - top[both]))
        return out

    def scaling(self, train: np.ndarray, rank: int, lam: float,
                fill: np.ndarray | None = None) -> np.ndarray:
        """(R, C) log steps/s of the isolated cells from the low-rank model
        (completion.fit_log_factors) of the matrix models x (scale factor, GPU type): a row
        per model (family and batch size), a column per scale factor and GPU type, so that a
        job type's rate is read off its model's rates at other scale factors and on other
        GPU types (d[model, GPU type] shared by that GPU type's columns); fitted on the
        usable isolated cells in `train` and on `fill` ((R, J) log steps/s, NaN where none)
        in the isolated cells not among them. NaN in pair columns and where the model or the
        column has no such cell."""
        J = self.J
        model_row, scale_col = self.scaling_index
        cols = scale_col[:, None] * J + np.arange(J)[None, :]  # (R, J) column of each cell
        shape = (int(model_row.max()) + 1, (int(scale_col.max()) + 1) * J)
        a, g = np.nonzero((self.usable & train)[:, :J])
        X, weight = np.zeros(shape), np.zeros(shape)
        X[model_row[a], cols[a, g]] = self.X[a, g]
        weight[model_row[a], cols[a, g]] = 1.0
        if fill is not None:
            a, g = np.nonzero(np.isfinite(fill) & ~(self.usable & train)[:, :J])
            X[model_row[a], cols[a, g]] = fill[a, g]
            weight[model_row[a], cols[a, g]] = 1.0
        out = np.full(self.model.shape, np.nan)
        if weight.sum() == 0:
            return out
        gpu = np.tile(np.arange(J), shape[1] // J)
        fit = fit_log_factors(X, weight, gpu, J, rank, lam, seed=self.seed, tol=1e-6)
        seen = (weight.sum(axis=1) > 0)[model_row][:, None] & (weight.sum(axis=0) > 0)[cols]
        out[:, :J] = np.where(seen, fit.pred[model_row[:, None], cols], np.nan)
        return out

    def side(self, train: np.ndarray, iso_log: np.ndarray, lam: float) -> np.ndarray:
        """(R, C) log steps/s of the side model fitted on the usable cells in `train` with
        ridge weight lam; pair slowdowns are relative to iso_log ((R, J) log steps/s)."""
        out = np.full(self.model.shape, np.nan)
        ia, ig = self.iso_index
        fit_iso = (self.usable & train)[ia, ig]
        if fit_iso.any():
            out[ia, ig] = self.iso_ridge.fit_predict(fit_iso, self.X[ia, ig], lam)
        if self.pair_ridge is not None:
            a, c = self.pair_index[:2]
            base, fit_pair, slow = self._slowdowns(train, iso_log)
            if fit_pair.any():
                out[a, c] = np.minimum(self.pair_ridge.fit_predict(fit_pair, slow, lam), 0.0) + base
        return out

    def gp(self, train: np.ndarray, iso_log: np.ndarray, *, average: bool = False) -> np.ndarray:
        """(R, C) log steps/s of the pair cells: the mean of the capped slowdowns of the
        exponential- and squared-exponential-kernel GPs (schedopt.perf.kernel), their
        hyperparameters and posteriors fitted on the usable pair cells in `train`; slowdowns
        are relative to iso_log ((R, J) log steps/s). With `average`, each GP's posterior mean
        is averaged over the hyperparameters of every fit made so far (the held-out folds'
        and this one: `PairGP.predict`). NaN in isolated columns."""
        out = np.full(self.model.shape, np.nan)
        a, c = self.pair_index[:2]
        if a.size == 0:
            return out
        base, fit, slow = self._slowdowns(train, iso_log)
        slowdowns = []
        for gp in self.pair_gps:
            gp.fit(fit, slow)
            slowdowns.append(np.minimum(gp.predict(fit, slow, average=average), 0.0))
        out[a, c] = np.mean(slowdowns, axis=0) + base
        return out

    def _slowdowns(self, train: np.ndarray, iso_log: np.ndarray):
        """Per pair cell of `pair_index`: the job's isolated log rate `base` (iso_log, (R, J)),
        which cells to fit (usable, in `train`, with a finite base) and the slowdown log
        rate - base there (the pair members' target; read only where fitted)."""
        a, c, g, _ = self.pair_index
        base = iso_log[a, g]
        fit = (self.usable & train)[a, c] & np.isfinite(base)
        return base, fit, self.X[a, c] - np.where(np.isfinite(base), base, 0.0)


def _blend(preds: list[np.ndarray], w: np.ndarray) -> np.ndarray:
    """Weighted mean of the finite predictions (weights renormalized per cell); where every
    member with weight > 0 lacks one (a cold start for the low-rank members), the mean of the
    members that have one; NaN where none has."""
    stack = np.stack(preds)
    finite = np.isfinite(stack)
    values = np.where(finite, stack, 0.0)
    w = np.asarray(w).reshape((-1,) + (1,) * (stack.ndim - 1))
    ok = finite & (w > 0)
    total = np.where(ok, w, 0.0).sum(axis=0)
    weighted = (np.where(ok, w, 0.0) * values).sum(axis=0) / np.where(total > 0, total, 1.0)
    count = finite.sum(axis=0)
    fallback = np.where(count > 0, values.sum(axis=0) / np.maximum(count, 1), np.nan)
    return np.where(total > 0, weighted, fallback)


def predict(model: PerformanceModel, *, ranks=DEFAULT_RANKS, lambdas=DEFAULT_LAMBDAS,
            side_lambdas=SIDE_LAMBDAS, folds: int = 4, ensemble: int = 8, seed: int = 0,
            isolated: bool = True, pairs: bool = True, unconsolidated: bool = True,
            members=MEMBERS) -> Completion:
    """Fill the missing cells of `model` (isolated ones if `isolated`, pair ones if `pairs`)
    with the held-out-selected ensemble of the module doc. ranks, lambdas, ensemble: as in
    `complete` (the low-rank members' grid and bootstrap); side_lambdas: the side model's
    ridge weights tried; folds: held-out folds of the measured units; members: which of
    MEMBERS take part (at least one of PAIR_MEMBERS and one of ISOLATED_MEMBERS);
    unconsolidated: also fill the unconsolidated rates of multi-GPU job types from the
    completed isolated rates (`schedopt.perf.spread.fill_unconsolidated`). Returns a
    `Completion` whose `weights` hold each member's weight per group ('pairs:<GPU type>',
    'isolated:<GPU type>:single-GPU', 'isolated:<GPU type>:multi-GPU') and whose `residual` holds, per 'kind:GPU type', the
    median calibrated s (log steps/s) over the held-out cells of that kind and GPU type (s
    differs from cell to cell: module doc). With no matrix cell to fill, no member is fitted
    (`weights` and `residual` empty) and only the unconsolidated rates are filled."""
    names = [m for m in MEMBERS if m in members]
    pair_names = [m for m in names if m in PAIR_MEMBERS]
    iso_names = [m for m in names if m in ISOLATED_MEMBERS]
    if not pair_names or not iso_names:
        raise SchedoptError(f"give at least one member of {', '.join(PAIR_MEMBERS)} (pair cells) and one of "
                            f"{', '.join(ISOLATED_MEMBERS)} (isolated cells)")
    base = complete(model, ranks=ranks, lambdas=lambdas, ensemble=ensemble, seed=seed,
                    isolated=isolated, pairs=pairs)
    J, gpu = len(model.gpu_types), model.column_gpu
    cold = isolated & (model.missing & ~model.is_pair[None, :]).any()
    if not (base.filled.any() or cold):  # no matrix cell to fill: no member is fitted
        return _with_unconsolidated(replace(base, residual={}), model, base.model, unconsolidated, seed)
    gpu_hyper = [_gpu_hyper(model, j, ranks, lambdas, seed, (base.rank, base.lam)) for j in range(J)]
    usable = model.known & (model.values > 0)
    units = measurement_units(model, usable)
    n_units = int(units.max()) + 1 if usable.any() else 0
    fold = np.random.default_rng(seed + 7919).permutation(n_units) % max(folds, 1)
    cell_fold = np.where(usable, fold[np.maximum(units, 0)], -1)
    iso_known = np.log(np.where(usable[:, :J], model.values[:, :J], np.nan))
    done = base.model.values[:, :J]
    iso_full = np.log(np.where(np.isfinite(done) & (done > 0), done, np.nan))
    fitter = _Members(model, base.rank, base.lam, gpu_hyper, seed)
    held_out = {name: np.full(model.shape, np.nan) for name in ("als", "als_gpu", "gp", "ratio", "pairmax")}
    held_side = {lam: np.full(model.shape, np.nan) for lam in side_lambdas}
    held_scaling = {h: np.full(model.shape, np.nan) for h in SCALING_HYPER}
    for f in range(folds):
        train, held = cell_fold != f, cell_fold == f
        if "als" in names or "als_gpu" in names:
            for name, pred in fitter.low_rank(train).items():
                held_out[name][held] = pred[held]
        iso_log = np.where(held[:, :J], iso_full, iso_known)
        if "gp" in names:
            held_out["gp"][held] = fitter.gp(train, iso_log)[held]
        if "side" in names:
            for lam in side_lambdas:
                held_side[lam][held] = fitter.side(train, iso_log, lam)[held]
        fill = None  # isolated rates of single-GPU job types read off their pair rates
        if "pairmax" in names:
            pairmax = fitter.pairmax(train)
            held_out["pairmax"][held] = pairmax[held]
            fill = pairmax[:, :J]
        if "ratio" in names:
            held_out["ratio"][held] = fitter.ratio(train, fill)[held]
        if "scaling" in names:
            for h in SCALING_HYPER:
                held_scaling[h][held] = fitter.scaling(train, *h, fill=fill)[held]
    truth = np.where(usable, fitter.X, np.nan)
    kinds = {"pairs": model.is_pair, "isolated": ~model.is_pair}
    side_lam = {kind: min(side_lambdas, key=lambda lam: (_mre(held_side[lam], truth, usable & cols[None, :]), lam))
                for kind, cols in kinds.items()}
    held_out["side"] = np.where(model.is_pair[None, :], held_side[side_lam["pairs"]],
                                held_side[side_lam["isolated"]])
    full = fitter.low_rank(np.ones(model.shape, dtype=bool)) if {"als", "als_gpu"} & set(names) else {}
    if "side" in names:
        side_full = {lam: fitter.side(np.ones(model.shape, dtype=bool), iso_full, lam)
                     for lam in set(side_lam.values())}
        full["side"] = np.where(model.is_pair[None, :], side_full[side_lam["pairs"]],
                                side_full[side_lam["isolated"]])
    if "gp" in names:
        full["gp"] = fitter.gp(np.ones(model.shape, dtype=bool), iso_full, average=True)
    fill = None
    if "pairmax" in names:
        full["pairmax"] = fitter.pairmax(np.ones(model.shape, dtype=bool))
        fill = full["pairmax"][:, :J]
    if "ratio" in names:
        full["ratio"] = fitter.ratio(np.ones(model.shape, dtype=bool), fill)
    if "scaling" in names:
        iso_cells = usable & kinds["isolated"][None, :]
        hyper = min(SCALING_HYPER, key=lambda h: _mre(held_scaling[h], truth, iso_cells))
        held_out["scaling"] = held_scaling[hyper]
        full["scaling"] = fitter.scaling(np.ones(model.shape, dtype=bool), *hyper, fill=fill)
    multi = np.asarray(fitter.info.scale_factor) > 1
    weights = {}
    out, w_als = np.full(model.shape, np.nan), np.zeros(model.shape)
    held_error = np.full(model.shape, np.nan)  # |log error| of the blend on held-out cells
    for kind, cols in kinds.items():
        used = pair_names if kind == "pairs" else iso_names
        grid, preds = _simplex(len(used)), [held_out[n] for n in used]
        rows = {"": np.ones(len(multi), dtype=bool)} if kind == "pairs" else \
            {":single-GPU": ~multi, ":multi-GPU": multi}
        for j, g in enumerate(model.gpu_types):
            sel = (cols & (gpu == j))[None, :]
            pooled = _best_weights(model, kind, grid, preds, truth, usable & sel)
            for suffix, row in rows.items():
                here = row[:, None] & sel
                mask = usable & here
                enough = mask.sum() >= MIN_GROUP
                w = _best_weights(model, kind, grid, preds, truth, mask) if enough else pooled
                weights[f"{kind}:{g}{suffix}"] = dict(zip(used, w.tolist()))
                e = np.abs(np.minimum(_blend(preds, w), _cap(model, kind)) - truth)
                held_error = np.where(mask, e, held_error)
                out = np.where(here, _blend([full[n] for n in used], w), out)
                w_als = np.where(here, weights[f"{kind}:{g}{suffix}"].get("als", 0.0), w_als)
    s = _calibrated_sd(model, fitter.info, held_error, cell_fold)
    scale = {}
    for kind, cols in kinds.items():
        for j, g in enumerate(model.gpu_types):
            here = np.isfinite(held_error) & (cols & (gpu == j))[None, :]
            scale[f"{kind}:{g}"] = float(np.median(s[here])) if here.any() else float("nan")
    target = base.filled & ~base.cannot_share
    if isolated:  # job types with no measurement at all: the side model knows their relatives
        target |= model.missing & ~model.is_pair[None, :]
    target &= np.isfinite(out)
    values = np.where(target, np.exp(out), base.model.values)
    values = cap_pairs_at_isolated(model, values, target & model.is_pair[None, :])
    other = model.transpose_index()  # a pair is written only with both sides
    has = np.isfinite(values).ravel()[np.maximum(other, 0)]
    lonely = target & (other >= 0) & ~has
    target &= ~lonely
    values = np.where(lonely, np.nan, values)
    spread = np.nan_to_num(base.spread) if base.spread is not None else np.zeros(model.shape)
    unc = np.sqrt(np.nan_to_num(s) ** 2 + (w_als * spread) ** 2)
    before = np.where(model.known, 0.0, model.uncertainty if model.uncertainty is not None else np.nan)
    uncertainty = np.where(target, unc, before)
    uncertainty = np.where(base.cannot_share, np.nan, uncertainty)
    base = replace(base, filled=target | base.cannot_share, residual=scale, weights=weights,
                   side_lambda=side_lam)
    return _with_unconsolidated(base, model, model.with_values(values, uncertainty), unconsolidated, seed)


def _with_unconsolidated(result: Completion, model: PerformanceModel, done: PerformanceModel,
                         unconsolidated: bool, seed: int) -> Completion:
    """`result` as the ensemble's, its model `done` with the unconsolidated rates filled
    (if `unconsolidated`) from done's isolated rates and their uncertainty."""
    if unconsolidated:
        J = len(done.gpu_types)
        sd = None if done.uncertainty is None else done.uncertainty[:, :J]
        done = fill_unconsolidated(done, done.values[:, :J], sd, seed)
    return replace(result, model=done, method="ensemble",
                   unconsolidated=frozenset(done.unconsolidated_estimated) - set(model.unconsolidated_estimated))


def _error_groups(model: PerformanceModel, info) -> list[np.ndarray]:
    """Group keys over every cell (row-major (R, C) flattened) for the error-scale ridge:
    (kind, GPU type), (kind, GPU type, family of the job type) and (kind, GPU type, family of
    the partner) for pair cells or (kind, GPU type, single- or multi-GPU) for isolated ones."""
    R, C = model.shape
    J, P = len(model.gpu_types), len(model.partners)
    fam = np.unique(np.asarray(info.family, dtype=str), return_inverse=True)[1].ravel()
    a, c = (x.ravel() for x in np.indices((R, C)))
    g = model.column_gpu[c]
    pair = model.is_pair[c]
    partner = model.pair_rows[np.maximum(c - J, 0) % max(P, 1)] if P else np.zeros_like(c)
    other = np.where(pair, fam[partner], fam.max() + 1 + (np.asarray(info.scale_factor)[a] > 1))
    return [group_codes(pair, g), group_codes(pair, g, fam[a]), group_codes(pair, g, other)]


def _calibrated_sd(model: PerformanceModel, info, held_error: np.ndarray,
                   cell_fold: np.ndarray) -> np.ndarray:
    """(R, C) sd of log steps/s for every cell (NaN for a kind and GPU type with fewer than 5
    held-out cells), calibrated on the held-out |log errors| `held_error` (NaN elsewhere):
    log(|error| + ERROR_FLOOR) is a ridge on the groups of `_error_groups` (which job families
    a GPU type predicts badly), and per kind and GPU type c is the kind's CALIBRATION_QUANTILE of
    (|error| + ERROR_FLOOR) / fit over the held-out cells, each fold's errors scaled by a fit
    without that fold (cross-fitting: a fit on its own cells would make them look too small);
    the sd is c x fit / 2."""
    R, C = model.shape
    e = held_error.ravel()
    seen = np.isfinite(e)
    if not seen.any():
        return np.full(model.shape, np.nan)
    groups = _error_groups(model, info)
    ridge = GroupRidge(groups)
    y = np.log(np.where(seen, e, 1.0) + ERROR_FLOOR)
    fold = cell_fold.ravel()
    ratio = np.full(e.size, np.nan)
    for f in np.unique(fold[seen]):
        train = seen & (fold != f)
        here = seen & (fold == f)
        fit = ridge.fit_predict(train if train.any() else seen, y, ERROR_SCALE_LAMBDA)
        ratio[here] = (e[here] + ERROR_FLOOR) / np.exp(fit[here])
    fit = np.exp(ridge.fit_predict(seen, y, ERROR_SCALE_LAMBDA))
    sd = np.full(e.size, np.nan)
    group = groups[0]  # (kind, GPU type)
    pair = np.broadcast_to(model.is_pair[None, :], model.shape).ravel()
    for key in np.unique(group[seen]):
        cells = group == key
        z = ratio[seen & cells]
        if z.size >= 5:
            level = CALIBRATION_QUANTILE["pairs" if pair[cells][0] else "isolated"]
            sd[cells] = np.quantile(z, level) * fit[cells] / 2
    return sd.reshape(R, C)


def _best_weights(model, kind, grid, preds, truth, mask) -> np.ndarray:
    """The row of `grid` whose blend (`_blend`) of the held-out `preds` has the least mean
    relative error on the cells of `mask` (the first row where none is scored). Only those
    cells are blended, with every row of the grid at once (thousands of rows with six
    members)."""
    stack = np.stack([p[mask] for p in preds])  # (members, cells)
    finite = np.isfinite(stack)
    values = np.where(finite, stack, 0.0)
    total = grid @ finite
    weighted = (grid @ values) / np.where(total > 0, total, 1.0)
    count = finite.sum(axis=0)
    fallback = np.where(count > 0, values.sum(axis=0) / np.maximum(count, 1), np.nan)
    blend = np.where(total > 0, weighted, fallback[None, :])  # _blend for every row of grid
    error = np.minimum(blend, _cap(model, kind)[mask][None, :]) - truth[mask][None, :]
    error = np.abs(np.expm1(error[:, np.isfinite(error).all(axis=0)]))
    if error.shape[1] == 0:
        return grid[0]
    return grid[int(np.argmin(error.mean(axis=1)))]


def _gpu_hyper(model, j, ranks, lambdas, seed, fallback) -> tuple[int, float]:
    """(rank, lam) validated on GPU type j's columns alone (fallback when nothing there fits)."""
    sub = _gpu_submodel(model, j, np.flatnonzero(model.column_gpu == j))
    if not (sub.known & (sub.values > 0)).any():
        return fallback
    got = complete(sub, ranks=ranks, lambdas=lambdas, ensemble=0, seed=seed, isolated=False)
    return got.rank, got.lam


def _cap(model: PerformanceModel, kind: str) -> np.ndarray:
    """(R, C) cap on held-out log predictions: a pair cell's measured isolated rate (log
    steps/s), +inf elsewhere and for isolated cells."""
    cap = np.full(model.shape, np.inf)
    if kind == "pairs":
        J, P = len(model.gpu_types), len(model.partners)
        iso = np.log(np.where(model.values[:, :J] > 0, model.values[:, :J], np.nan))
        cap[:, J:] = np.repeat(np.where(np.isfinite(iso), iso, np.inf), P, axis=1)
    return cap


def _mre(pred: np.ndarray, truth: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Mean relative error of log predictions against log truths on `mask` (every cell if
    None), finite pairs only; inf where there is none."""
    e = pred - truth if mask is None else (pred - truth)[mask]
    e = e[np.isfinite(e)]
    return float(np.abs(np.expm1(e)).mean()) if e.size else float("inf")


def _gpu_submodel(model: PerformanceModel, j: int, cols: np.ndarray) -> PerformanceModel:
    """The model restricted to GPU type j's columns (its isolated column and pair columns)."""
    return PerformanceModel(model.job_types, (model.gpu_types[j],), model.partners,
                            model.values[:, cols], model.known[:, cols])
