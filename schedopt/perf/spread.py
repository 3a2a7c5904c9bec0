"""Unconsolidated rates: how fast a multi-GPU job runs when its GPUs span several nodes.

A job type on s > 1 GPUs of type g has its consolidated rate T (`throughput`, GPUs packed in
as few nodes as possible) and, where measured, its unconsolidated rate U (`unconsolidated`,
GPUs spread over nodes: gradients cross the network). This module predicts the missing U
through the job's spread ratio y = log(U / T) (log units; 0 = spreading costs nothing). On
Gavel's table U / T runs from 0.10 to 1.35 (median 0.74): a job that computes a step fast
spends a larger share of it exchanging gradients, so it loses more.

One Gaussian process over every (multi-GPU job type a, GPU type g) cell, the cells of all GPU
types together:

    cov(y[a, g], y[a', g']) = s_family k(a, a') + s_family_gpu k(a, a') [g = g']
                              + s_gpu [g = g'] + s_gpu_scale [g = g'] [scale a = scale a']
                              + s_speed x[a, g] x[a', g'] [g = g'] + s_speed_all z[a, g] z[a', g']

plus independent noise s_noise, where k is the job-type kernel of `schedopt.perf.kernel`
(same family, exp(-|log2 batch distance| / l - |log2 scale distance| / r)), x[a, g] is the
job's log consolidated rate on g minus its mean over the fitted cells of g (how fast a step
is against the others on that GPU type: the speed terms), and z[a, g] the same log rate minus
its mean over every fitted cell (the speed term shared by all GPU types, which carries a GPU
type with no measured ratio). The nine hyperparameters (seven variances, l and r) maximize the
marginal likelihood of the measured ratios (L-BFGS-B with the analytic gradient); a
prediction is the posterior mean, its uncertainty the posterior sd of y with the noise (sd of
log steps/s).

Selection on Gavel's table (165 measured ratios with U, T > 0, half hidden, seeds 0-9 of
`schedopt.perf.study.hide_unconsolidated`): mean relative error of U 7.9% (worst seed 10.4%),
2-sd coverage 94.9%; without the speed terms 12.0%; a ridge on (family, scale factor, GPU
type), (family, GPU type), (scale factor, GPU type), GPU type, (model, GPU type) and (model,
scale factor) 17.2%; a median ratio per (scale factor, GPU type) 36%; U = T (what a simulator
assumes without U) 91%. Without the shared speed term the error on Gavel is the same (7.8%),
but on a planted table with no ratio measured on one GPU type it is 16.8% there against 9.9%.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.linalg as sla
import scipy.optimize as so

from schedopt.instance.model import frozen_map
from schedopt.perf.kernel import JITTER, _Similarity, marginal_likelihood
from schedopt.perf.model import PerformanceModel
from schedopt.perf.side import JobTypeInfo, job_type_info

PARTS = ("gpu", "gpu_scale", "speed", "speed_all")  # the terms without the job-type kernel
TERMS = ("family", "family_gpu", *PARTS, "noise")
START = {"family": 0.1, "family_gpu": 0.1, "gpu": 0.1, "gpu_scale": 0.05, "speed": 0.01,
         "speed_all": 0.01, "noise": 0.01, "l": 1.0, "r": 1.0}
NOISE, LENGTH, SCALE_LENGTH = len(TERMS) - 1, len(TERMS), len(TERMS) + 1  # indices in theta
LOG_BOUNDS = [(-12.0, 3.0)] * len(TERMS) + [(-3.0, 4.0)] * 2
MIN_MEASURED = 10  # fewer measured ratios than this: nothing is predicted
# above these many measured ratios, a seeded subset sets the hyperparameters / the posterior;
# predicted cells go through the posterior in chunks of CHUNK
FIT_CELLS = 800
POSTERIOR_CELLS = 2500
CHUNK = 2000


class _Covariance:
    """The covariance terms between cells (a1, g1) and (a2, g2), gathered once; x: the log
    consolidated rate centred per GPU type, z: centred over every GPU type."""

    def __init__(self, sim: _Similarity, scale: np.ndarray, a1, g1, x1, z1, a2, g2, x2, z2):
        self.sim, self.ia = sim, np.asarray(a1)[:, None] * sim.family.shape[0] + np.asarray(a2)[None, :]
        self.same_gpu = (np.asarray(g1)[:, None] == np.asarray(g2)[None, :]).astype(float)
        same_scale = scale[a1][:, None] == scale[a2][None, :]
        self.parts = [self.same_gpu, self.same_gpu * same_scale, self.same_gpu * np.outer(x1, x2),
                      np.outer(z1, z2)]
        self.batch = np.take(sim.batch.ravel(), self.ia)
        self.scale = np.take(sim.scale.ravel(), self.ia)

    def __call__(self, theta: np.ndarray):
        """The covariance without noise, the job-type kernel and exp(theta)."""
        p = np.exp(theta)
        k = np.take(self.sim.kernel(p[LENGTH], p[SCALE_LENGTH]).ravel(), self.ia)
        cov = (p[0] + p[1] * self.same_gpu) * k + sum(v * m for v, m in zip(p[2:NOISE], self.parts))
        return cov, k, p


def _objective(theta, cov_terms: _Covariance, y):
    cov, k, p = cov_terms(theta)
    n = len(y)
    outer = p[0] + p[1] * cov_terms.same_gpu
    grads = [p[0] * k, p[1] * k * cov_terms.same_gpu, *(v * m for v, m in zip(p[2:NOISE], cov_terms.parts)),
             p[NOISE] * np.eye(n), outer * k * cov_terms.batch / p[LENGTH],
             outer * k * cov_terms.scale / p[SCALE_LENGTH]]
    return marginal_likelihood(cov + (p[NOISE] + JITTER) * np.eye(n), grads, y)


def spread_ratios(info: JobTypeInfo, a: np.ndarray, g: np.ndarray, log_rate: np.ndarray,
                  train: np.ndarray, y: np.ndarray, seed: int = 0):
    """Posterior of the spread ratio (module doc) of every cell (a[i], g[i]): job type row,
    GPU type index; log_rate: (n,) log consolidated steps/s; train: (n,) bool, the cells whose
    ratio y ((n,) log U/T, read only there) is measured. Returns (mean, sd, theta): (n,) log
    units each (sd with the noise), and the fitted log hyperparameters (TERMS, then l, r)."""
    sim = _Similarity.of(info)
    scale = np.asarray(info.scale_factor)
    cells = np.flatnonzero(train)
    centre = np.zeros(int(g.max()) + 1)
    for j in np.unique(g):  # over the measured cells of g, or all of g's cells where none is
        here = cells[g[cells] == j] if (g[cells] == j).any() else np.flatnonzero(g == j)
        centre[j] = log_rate[here].mean()
    x = log_rate - centre[g]
    z = log_rate - log_rate[cells].mean()
    subset = cells if cells.size <= FIT_CELLS else np.sort(
        np.random.default_rng(seed).choice(cells, FIT_CELLS, replace=False))

    def terms(rows, cols):
        return _Covariance(sim, scale, a[rows], g[rows], x[rows], z[rows], a[cols], g[cols], x[cols], z[cols])

    mean = y[subset].mean()
    start = np.log([START[t] for t in TERMS] + [START["l"], START["r"]])
    theta = so.minimize(_objective, start, args=(terms(subset, subset), y[subset] - mean), jac=True,
                        method="L-BFGS-B", bounds=LOG_BOUNDS).x
    if cells.size > POSTERIOR_CELLS:
        cells = np.sort(np.random.default_rng(seed + 1).choice(cells, POSTERIOR_CELLS, replace=False))
    cov, _, p = terms(cells, cells)(theta)
    chol = sla.cho_factor(cov + (p[NOISE] + JITTER) * np.eye(cells.size), lower=True, check_finite=False)
    centre_y = y[cells].mean()
    alpha = sla.cho_solve(chol, y[cells] - centre_y, check_finite=False)
    post, explained = np.empty(len(a)), np.empty(len(a))
    for part in np.array_split(np.arange(len(a)), max(1, -(-len(a) // CHUNK))):
        cross = terms(part, cells)(theta)[0]
        post[part] = centre_y + cross @ alpha
        explained[part] = np.einsum("ij,ji->i", cross, sla.cho_solve(chol, cross.T, check_finite=False))
    prior = p[0] + p[1] + p[2] + p[3] + p[4] * x ** 2 + p[5] * z ** 2
    sd = np.sqrt(np.maximum(prior - explained, 0.0) + p[NOISE])
    return post, sd, theta


def fill_unconsolidated(model: PerformanceModel, rates: np.ndarray, rate_sd: np.ndarray | None = None,
                        seed: int = 0) -> PerformanceModel:
    """`model` with the unconsolidated rate of every multi-GPU job type on every GPU type where
    its consolidated rate (rates: (R, J) steps/s, measured or estimated; NaN unknown) is above
    0 and no unconsolidated rate is given, predicted as rates x exp(spread ratio) (module doc);
    each estimate is recorded in `unconsolidated_estimated` with its uncertainty, the ratio's
    sd combined with rate_sd ((R, J) sd of log steps/s of the rates, 0 or NaN where
    measured). The ratios are fitted where both rates are measurements above 0 (neither an
    earlier estimate nor an estimated consolidated rate); with fewer than MIN_MEASURED of those,
    `model` is returned as it is. A measured unconsolidated 0 stays 0 and is not fitted."""
    info = job_type_info(model.job_types)
    multi = np.asarray(info.scale_factor) > 1
    given, earlier = model.unconsolidated_array()
    measured = np.isfinite(given) & ~earlier
    with np.errstate(divide="ignore", invalid="ignore"):
        log_rate = np.log(np.where(rates > 0, rates, np.nan))
        y = np.log(given) - log_rate
    fit = measured & model.known[:, :len(model.gpu_types)] & np.isfinite(y) & multi[:, None]
    target = multi[:, None] & np.isfinite(log_rate) & np.isnan(given)
    if fit.sum() < MIN_MEASURED or not target.any():
        return model
    a, g = np.nonzero(fit | target)
    mean, sd, _ = spread_ratios(info, a, g, log_rate[a, g], fit[a, g], np.nan_to_num(y[a, g]), seed)
    new = target[a, g]
    a, g, mean, sd = a[new], g[new], mean[new], sd[new]
    other = np.zeros(a.size) if rate_sd is None else np.nan_to_num(rate_sd[a, g])
    unconsolidated = {t: dict(row) for t, row in model.unconsolidated.items()}
    estimated = dict(model.unconsolidated_estimated)
    for r, j, m, s, o in zip(a, g, mean, sd, other):
        t, gpu = model.job_types[r], model.gpu_types[j]
        unconsolidated.setdefault(t, {})[gpu] = float(np.exp(log_rate[r, j] + m))
        estimated[(t, gpu)] = float(np.hypot(s, o))
    return replace(model, unconsolidated=frozen_map({t: frozen_map(r) for t, r in unconsolidated.items()}),
                   unconsolidated_estimated=frozen_map(estimated))
