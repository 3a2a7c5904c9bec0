"""Side information about job types, and an additive ridge model of log steps/s built on it.

A job type's label says what it is: 'ResNet-50 (batch size 64) x4' is the model family
'ResNet-50', batch size 64, on 4 GPUs (scale factor). Rates of related job types move together
(the same model at another batch size or scale factor, the same partner family), which the
low-rank matrix of `schedopt.perf.completion` cannot see: it knows rows and columns only by
their measurements. This module turns the labels into *groups* (categorical keys) and fits

    log T[cell] ~ offset[cell] + sum over groups G of theta_G[key_G(cell)] + numeric terms

by ridge regression (every theta shrunk to 0 with weight lam, so an effect seen on few cells
stays small and a key never seen contributes 0): the classic random-effects / one-hot
regression, one sparse design matrix, one sparse solve.

Pair cells (job a sharing GPU type g with partner b), target log(T_pair / T_alone[a, g]),
a's slowdown: groups (a, g) a's sensitivity on g, (b, g) b's aggressiveness on g, (a, b)
the pair on every GPU type, and the same with families in place of job types ((a, fam b, g),
(fam a, b, g), (fam a, fam b, g), (a, fam b)), so a pair never measured borrows from pairs
of the same families. Isolated cells (a on g), target log T_alone[a, g]: groups a (the job
type's own speed), (model at that batch size, g), (family, scale factor, g), (family, g),
(scale factor, g), g, (family, batch size), and log2(scale factor) per GPU type: a job type
never measured is predicted from its relatives.

`relative_ratios` predicts isolated cells the other way: from the job type's own rate on
another GPU type, or its model's rate at another scale factor, times the ratio its relatives
show between the two (a local, unshrunk estimate where the ridge averages over whole groups).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from schedopt.traces.performance import parse_label

_BATCH = re.compile(r"\s*\(batch size (\d+)\)\s*$")


@dataclass(frozen=True)
class JobTypeInfo:
    """What the labels say, one entry per job type: family (the model without batch size),
    model (with batch size, without scale factor), batch size (NaN when the label has none)
    and scale factor (GPUs per job)."""

    family: tuple[str, ...]
    model: tuple[str, ...]
    batch_size: np.ndarray
    scale_factor: np.ndarray


def job_type_info(job_types) -> JobTypeInfo:
    """Parse labels '<family> (batch size <b>) x<s>' (the batch size and ' x<s>' optional)."""
    family, model, batch, scale = [], [], [], []
    for t in job_types:
        name, s = parse_label(t)
        match = _BATCH.search(name)
        model.append(name)
        family.append(name[:match.start()] if match else name)
        batch.append(float(match.group(1)) if match else np.nan)
        scale.append(s)
    return JobTypeInfo(tuple(family), tuple(model), np.array(batch), np.array(scale, dtype=np.int64))


def group_codes(*keys: np.ndarray) -> np.ndarray:
    """One integer id per distinct tuple of the given integer key arrays."""
    stacked = np.stack([np.asarray(k, dtype=np.int64) for k in keys], axis=1)
    return np.unique(stacked, axis=0, return_inverse=True)[1].ravel()


def _ids(labels) -> np.ndarray:
    return np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)[1].ravel()


def pair_groups(info: JobTypeInfo, a: np.ndarray, b: np.ndarray, g: np.ndarray) -> list[np.ndarray]:
    """Group keys of pair cells (job type a with partner b on GPU type g; row indices)."""
    fam = _ids(info.family)
    fa, fb = fam[a], fam[b]
    return [group_codes(a, g), group_codes(b, g), group_codes(a, fb, g), group_codes(fa, b, g),
            group_codes(fa, fb, g), group_codes(g)]


def isolated_groups(info: JobTypeInfo, a: np.ndarray, g: np.ndarray) -> list[np.ndarray]:
    """Group keys of isolated cells (job type a on GPU type g)."""
    fam, mod, s = _ids(info.family), _ids(info.model), info.scale_factor
    batch = np.nan_to_num(info.batch_size, nan=0.0).astype(np.int64)
    return [a, group_codes(mod[a], g), group_codes(fam[a], s[a], g), group_codes(fam[a], g),
            group_codes(s[a], g), group_codes(g), group_codes(fam[a], batch[a])]


class GroupRidge:
    """Ridge regression on one-hot groups plus numeric columns (module doc).

    groups: list of (n,) int key arrays over *all* cells (train and predict), so that a key
    seen only in cells to predict gets a coefficient of 0; numeric: (n, q) or None; penalty:
    per group, a multiplier of lam for its coefficients (default 1 each): a group penalized
    more explains only what the others leave (a job type's own effect, say, after its
    relatives' effects, so that a job type never measured is not shrunk toward the mean)."""

    def __init__(self, groups: list[np.ndarray], numeric: np.ndarray | None = None, penalty=None):
        n = len(groups[0])
        penalty = [1.0] * len(groups) if penalty is None else list(penalty)
        blocks, self.sizes = [], []
        for key, weight in zip(groups, penalty):
            size = int(key.max()) + 1 if n else 0
            # scaling a one-hot column by 1/sqrt(weight) penalizes its coefficient weight x lam
            blocks.append(sp.csr_matrix((np.full(n, weight ** -0.5), (np.arange(n), key)), shape=(n, size)))
            self.sizes.append(size)
        if numeric is not None and numeric.size:
            blocks.append(sp.csr_matrix(np.asarray(numeric, dtype=float)))
        self.X = sp.hstack(blocks, format="csr")

    def fit_predict(self, train: np.ndarray, y: np.ndarray, lam: float, weight=None) -> np.ndarray:
        """Fit on the cells `train` (bool (n,)) to targets y (n,) (read only where train) with
        ridge weight lam > 0, and return the prediction for every cell. The normal equations
        (X'WX + lam I) theta = X'W y are solved by conjugate gradients on sparse products
        (no dense p x p system: dense solves crawl where BLAS threads compete for few cores)."""
        X = self.X[train]
        w = np.ones(X.shape[0]) if weight is None else np.asarray(weight, dtype=float)[train]
        target = np.asarray(y, dtype=float)[train]
        mean = float(np.average(target, weights=w)) if target.size else 0.0
        Xw = (sp.diags(np.sqrt(w)) @ X).tocsr()
        XwT = Xw.T.tocsr()
        p = X.shape[1]
        normal = spla.LinearOperator((p, p), matvec=lambda v: XwT @ (Xw @ v) + lam * v, dtype=float)
        rhs = XwT @ (np.sqrt(w) * (target - mean))
        theta, _ = spla.cg(normal, rhs, rtol=1e-10, atol=0.0, maxiter=20 * p)
        return mean + self.X @ theta


def relative_ratios(info: JobTypeInfo, log_rate: np.ndarray, beta: float = 1.0,
                    floor: float = 0.01) -> np.ndarray:
    """Isolated log steps/s of every (job type, GPU type) cell from the job type's own
    measurements and its relatives' ratios: (R, J) log steps/s, NaN where nothing applies.

    log_rate: (R, J) measured log steps/s, NaN where unknown. Two kinds of anchor, each giving
    one estimate of cell (a, g):

    - the same job type on another GPU type h: log T[a, h] + the weighted mean over relatives r
      (same family, both cells measured) of log(T[r, g] / T[r, h]);
    - the same model at another scale factor s' on g: log T[a', g] + the weighted mean over
      relatives r of the family at a's scale factor whose model is measured at s' on g too of
      log(T[r, g] / T[r', g]).

    A relative weighs exp(-beta |log2 batch size difference| - |log2 scale factor difference|)
    (ratios move with batch size and scale factor). Anchors are combined by precision: the
    weight sum n of their relatives, shrunk as n / (n + 1), over the weighted variance of
    their ratios plus `floor` (log units squared), so an anchor backed by a few scattered
    ratios counts little."""
    fam, mod = _ids(info.family), _ids(info.model)
    scale = np.log2(info.scale_factor.astype(float))
    batch = np.log2(np.nan_to_num(info.batch_size, nan=1.0))
    R, J = log_rate.shape
    known = np.isfinite(log_rate)
    out = np.full((R, J), np.nan)

    def combine(diff, w):
        mean = np.sum(w * diff) / w.sum()
        var = np.sum(w * (diff - mean) ** 2) / w.sum() + floor
        return mean, w.sum() / (w.sum() + 1) / var

    for a in range(R):
        kin = (fam == fam[a]) & (np.arange(R) != a)
        near = np.exp(-beta * np.abs(batch - batch[a]))
        for g in range(J):
            est, prec = [], []
            for h in np.flatnonzero(known[a]):
                r = kin & known[:, g] & known[:, h]
                if h != g and r.any():
                    weight = near[r] * np.exp(-np.abs(scale[r] - scale[a]))
                    m, p = combine(log_rate[r, g] - log_rate[r, h], weight)
                    est.append(log_rate[a, h] + m)
                    prec.append(p)
            for other in np.flatnonzero((mod == mod[a]) & known[:, g] & (np.arange(R) != a)):
                diff, w = [], []
                for r in np.flatnonzero(kin & (scale == scale[a]) & known[:, g]):
                    twin = np.flatnonzero((mod == mod[r]) & (scale == scale[other]) & known[:, g])
                    if twin.size:
                        diff.append(log_rate[r, g] - log_rate[twin[0], g])
                        w.append(near[r])
                if diff:
                    m, p = combine(np.array(diff), np.array(w))
                    est.append(log_rate[other, g] + m)
                    prec.append(p)
            if est:
                out[a, g] = np.dot(prec, est) / np.sum(prec)
    return out
