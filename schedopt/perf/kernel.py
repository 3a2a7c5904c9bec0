"""Gaussian-process regression of pair slowdowns on how alike the job types are.

A pair cell (job type a sharing GPU type g with partner b) is predicted through a's slowdown
y = log(T_pair / T_alone[a, g]) (log units; 0 = sharing costs a nothing). Two job types are
alike when they are the same model family at nearby batch sizes and scale factors:

    k(a, a') = [family a = family a'] exp(-|log2 batch a - log2 batch a'| / l
                                          - |log2 scale a - log2 scale a'| / r)

and the slowdowns of two pair cells on one GPU type covary as

    cov(y[a, b], y[a', b']) = s_job k_l(a, a') + s_partner k_m(b, b')
                              + s_pair k_l(a, a') k_m(b, b')
                              + s_family [family a = family a'] [family b = family b']

plus independent noise s_noise: a job's sensitivity, a partner's pressure, and their
interaction, each smooth along the batch size within a family. The product term is what the
additive ridge of `schedopt.perf.side` lacks: a ResNet-50 at batch size 64 next to an LM at
batch size 20 is read off the same models at neighbouring batch sizes, with weights learned
from the data rather than fixed groups. The eight hyperparameters (four variances, the noise,
the length scales l, m in log2 batch-size units, and r in log2 scale-factor units, shared by
both sides: how much a model's pairs at one scale factor say about its pairs at another)
maximize the marginal likelihood of the measured slowdowns on that GPU type (L-BFGS-B with
the analytic gradient); the prediction is the posterior mean. Where every measured pair has
one scale factor, r has no gradient and stays where it starts. One GP per GPU type: on
Gavel's table a pair's V100 slowdown tells little about its P100 or K80 one (correlation
0.29-0.34).

With `smooth=True` the batch-size term is squared exponential, exp(-d^2 / (2 l^2)) in the
distance d in log2 batch size (l and m reported in log2 batch-size units as above): slowdowns
that change smoothly with the batch size, where the exponential kernel allows kinks. The
ensemble's `gp` member (`schedopt.perf.predict`) is the mean of the two.

A `PairGP` refitted on several subsets (the ensemble's held-out folds, then everything) can
average the posterior means under every fit's hyperparameters (`predict(..., average=True)`):
on Gavel's V100 pairs the likelihood has two optima, a noise variance at its lower bound with
long length scales and one of about 0.01, and which one a fit lands in changes from one
subset to the next.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.optimize as so

from schedopt.perf.side import JobTypeInfo, _ids

TERMS = ("job", "partner", "pair", "family", "noise")
# starting point (variances in log units squared; l, m in log2 batch size, r in log2 scale
# factor)
START = {"job": 0.05, "partner": 0.05, "pair": 0.05, "family": 0.02, "noise": 0.02,
         "l": 1.0, "m": 1.0, "r": 1.0}
LOG_BOUNDS = [(-9.0, 3.0)] * len(TERMS) + [(-3.0, 3.0)] * 3
JITTER = 1e-6
# Cost grows with the cube of the measured cells of a GPU type (memory with the square): above
# these counts a random subset of them, fixed by the seed, sets the hyperparameters and the
# posterior (Gavel's table has at most 656 per GPU type, all used). Predicted cells go through
# the posterior in chunks of CHUNK.
FIT_CELLS = 800
POSTERIOR_CELLS = 2500
CHUNK = 2000


@dataclass(frozen=True)
class _Similarity:
    """Per job type pair (R, R): same family, and the distance in log2 batch size and log2
    scale factor."""

    family: np.ndarray
    batch: np.ndarray
    scale: np.ndarray

    @classmethod
    def of(cls, info: JobTypeInfo, smooth: bool = False) -> _Similarity:
        """With `smooth`, `batch` holds d^2 / 2 instead of d, so that `kernel`'s
        exp(-batch / length) is squared exponential with length = l^2."""
        fam = _ids(info.family)
        batch = np.log2(np.nan_to_num(info.batch_size, nan=1.0))
        distance = np.abs(batch[:, None] - batch[None, :])
        scale = np.log2(info.scale_factor.astype(float))
        return cls((fam[:, None] == fam[None, :]).astype(float),
                   distance ** 2 / 2 if smooth else distance, np.abs(scale[:, None] - scale[None, :]))

    def kernel(self, length: float, scale_length: float) -> np.ndarray:
        return self.family * np.exp(-self.batch / length - self.scale / scale_length)


class _Block:
    """What the covariance between cells (a1, b1) and (a2, b2) reads, gathered once: flat
    indices into the (R, R) job type matrices, the family-block term and the batch
    distances (the gradient's)."""

    def __init__(self, sim: _Similarity, a1, b1, a2, b2):
        R = sim.family.shape[0]
        self.sim = sim
        self.ia = np.asarray(a1)[:, None] * R + np.asarray(a2)[None, :]
        self.ib = np.asarray(b1)[:, None] * R + np.asarray(b2)[None, :]
        self.family = np.take(sim.family.ravel(), self.ia) * np.take(sim.family.ravel(), self.ib)
        self.batch_a = np.take(sim.batch.ravel(), self.ia)
        self.batch_b = np.take(sim.batch.ravel(), self.ib)
        self.scale_a = np.take(sim.scale.ravel(), self.ia)
        self.scale_b = np.take(sim.scale.ravel(), self.ib)

    def parts(self, theta: np.ndarray):
        """The covariance without noise, the job and partner kernels, and exp(theta)."""
        p = np.exp(theta)
        ka = np.take(self.sim.kernel(p[5], p[7]).ravel(), self.ia)
        kb = np.take(self.sim.kernel(p[6], p[7]).ravel(), self.ib)
        cov = p[0] * ka + p[1] * kb + p[2] * ka * kb + p[3] * self.family
        return cov, ka, kb, p


def marginal_likelihood(cov: np.ndarray, grads: list[np.ndarray], y: np.ndarray):
    """Negative log marginal likelihood (up to a constant) of y ((n,), mean 0) under the
    covariance `cov` ((n, n), noise included), and its gradient given d cov / d theta_i for
    each hyperparameter (`grads`); (1e10, zeros) where cov is not positive definite."""
    chol, info = sla.lapack.dpotrf(cov, lower=1)
    if info != 0:
        return 1e10, np.zeros(len(grads))
    alpha = sla.cho_solve((chol, True), y, check_finite=False)
    value = 0.5 * y @ alpha + np.log(np.diag(chol)).sum()
    inverse = sla.lapack.dpotri(chol, lower=1)[0]  # lower triangle of K^-1
    inverse = np.tril(inverse) + np.tril(inverse, -1).T
    W = inverse - np.outer(alpha, alpha)
    return value, 0.5 * np.array([np.sum(W * g) for g in grads])


def _objective(theta, block: _Block, y):
    """`marginal_likelihood` of the slowdowns y in the log hyperparameters theta."""
    cov, ka, kb, p = block.parts(theta)
    n = len(y)
    da = ka * (block.batch_a / p[5])  # d ka / d log l
    db = kb * (block.batch_b / p[6])
    ra = ka * (block.scale_a / p[7])  # d ka / d log r
    rb = kb * (block.scale_b / p[7])
    grads = [p[0] * ka, p[1] * kb, p[2] * ka * kb, p[3] * block.family, p[4] * np.eye(n),
             (p[0] + p[2] * kb) * da, (p[1] + p[2] * ka) * db,
             (p[0] + p[2] * kb) * ra + (p[1] + p[2] * ka) * rb]
    return marginal_likelihood(cov + (p[4] + JITTER) * np.eye(n), grads, y)


class PairGP:
    """Slowdown GPs of the pair cells of one model, one per GPU type (module doc).

    info: the job types' labels parsed (`side.job_type_info`); a, b, g: (n,) row of the job
    type, row of the partner and GPU type index of every pair cell that may be predicted;
    seed: of the subsets drawn where a GPU type has more measured cells than FIT_CELLS or
    POSTERIOR_CELLS; smooth: the squared-exponential batch-size kernel (module doc)."""

    def __init__(self, info: JobTypeInfo, a: np.ndarray, b: np.ndarray, g: np.ndarray, seed: int = 0,
                 smooth: bool = False):
        self.sim = _Similarity.of(info, smooth)
        self.smooth = smooth
        self.a, self.b, self.g = a, b, g
        self.seed = seed
        self.theta: dict[int, np.ndarray] = {}
        self.history: list[dict[int, np.ndarray]] = []  # theta after each fit, oldest first

    def _cells(self, train: np.ndarray, j: int, limit: int) -> np.ndarray:
        """Indices of the cells in `train` on GPU type j, at most `limit` of them (a random
        subset, the same for the same seed and cells)."""
        cells = np.flatnonzero(train & (self.g == j))
        if cells.size <= limit:
            return cells
        return np.sort(np.random.default_rng(self.seed + j).choice(cells, limit, replace=False))

    def fit(self, train: np.ndarray, y: np.ndarray) -> None:
        """Choose each GPU type's hyperparameters on the cells `train` ((n,) bool) with
        slowdowns y ((n,) log units, read only where train; at most FIT_CELLS per GPU
        type). The search starts from the previous fit's hyperparameters if there was one
        (refits on overlapping folds converge in about half the steps), else from START; a GPU
        type with fewer than 3 such cells keeps what it had (nothing: no estimate there)."""
        for j in np.unique(self.g):
            start = self.theta.get(int(j), np.log([START[t] for t in TERMS] + [START["l"], START["m"], START["r"]]))
            cells = self._cells(train, int(j), FIT_CELLS)
            if cells.size < 3:
                continue
            target = y[cells] - y[cells].mean()
            block = _Block(self.sim, self.a[cells], self.b[cells], self.a[cells], self.b[cells])
            got = so.minimize(_objective, start, args=(block, target), jac=True, method="L-BFGS-B",
                              bounds=LOG_BOUNDS)
            self.theta[int(j)] = got.x
        self.history.append(dict(self.theta))

    def predict(self, train: np.ndarray, y: np.ndarray, *, average: bool = False) -> np.ndarray:
        """(n,) posterior mean slowdown (log units) of every cell given the cells `train` (at
        most POSTERIOR_CELLS per GPU type), with the hyperparameters of the last `fit`, or
        with `average` the mean of the posterior means under the hyperparameters of every
        fit so far, each capped at 0 first (a slowdown never speeds a job up); NaN on GPU
        types with nothing fitted."""
        if not (average and self.history):
            return self._posterior(train, y, [self.theta])[0]
        # a GPU type left unfitted by an early fit (under 3 cells) is averaged over the others
        means = np.minimum(self._posterior(train, y, self.history), 0.0)
        count = np.isfinite(means).sum(axis=0)
        return np.where(count > 0, np.nansum(means, axis=0) / np.maximum(count, 1), np.nan)

    def _posterior(self, train: np.ndarray, y: np.ndarray, fits: list[dict[int, np.ndarray]]) -> np.ndarray:
        """(len(fits), n) posterior means, one row per hyperparameter set (NaN on a GPU type
        the set lacks). The covariance blocks' indices are gathered once for all sets."""
        out = np.full((len(fits), len(self.a)), np.nan)
        for j in sorted({j for fit in fits for j in fit}):
            cells = self._cells(train, j, POSTERIOR_CELLS)
            if not cells.size:
                continue
            a, b = self.a[cells], self.b[cells]
            mean = y[cells].mean()
            block = _Block(self.sim, a, b, a, b)
            alphas = {}
            for k, fit in enumerate(fits):
                if j in fit:
                    cov, *_, p = block.parts(fit[j])
                    chol = sla.cho_factor(cov + (p[4] + JITTER) * np.eye(len(a)), lower=True, check_finite=False)
                    alphas[k] = sla.cho_solve(chol, y[cells] - mean, check_finite=False)
            del block  # its index arrays are as large as a chunk's: not both at once
            here = np.flatnonzero(self.g == j)
            for part in np.array_split(here, max(1, -(-here.size // CHUNK))):
                cross = _Block(self.sim, self.a[part], self.b[part], a, b)
                for k, alpha in alphas.items():
                    out[k, part] = mean + cross.parts(fits[k][j])[0] @ alpha
        return out

    def hyperparameters(self, gpu_types) -> dict[str, dict[str, float]]:
        """{GPU type: {term: value}}: variances (log units squared), length scales l, m (log2
        batch size) and r (log2 scale factor)."""
        names = list(TERMS) + ["l", "m", "r"]
        out = {}
        for j, t in self.theta.items():
            p = np.exp(t)
            if self.smooth:  # the fitted lengths are l^2 and m^2 (`_Similarity.of`)
                p[5:7] = np.sqrt(p[5:7])
            out[gpu_types[j]] = dict(zip(names, p.round(6).tolist()))
        return out
