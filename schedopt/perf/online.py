"""Throughput estimates learned online from measurements, as Gavel's scheduler keeps them.

Gavel (stanford-futuredata/gavel, scheduler/scheduler.py) starts a job's throughput on each
worker type as unknown and, each time a round reports a measured rate, folds it into an
exponential moving average with EMA_ALPHA = 0.25. Here the first measurement of a (job, GPU
type) cell sets the estimate and each later one x updates it as

    estimate <- alpha * x + (1 - alpha) * estimate

so after measurements x_1 .. x_n the estimate is
(1 - alpha)^(n-1) x_1 + sum_{i=2..n} alpha (1 - alpha)^(n-i) x_i. Co-location measurements
(this job's steps/s while sharing a GPU type with a partner job) are averaged the same way per
(job, GPU type, partner). Units: steps/s.

Isolated estimates live in dense (jobs x GPU types) arrays that double when full, so a batch of
measurements (`update_many`) is a few numpy operations whatever the number of jobs; pair
estimates live in a dict keyed by (job, GPU type, partner), never a jobs x jobs array.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from schedopt.errors import SchedoptError
from schedopt.perf.model import PerformanceModel

GAVEL_EMA_ALPHA = 0.25


class OnlineEstimator:
    """EMA of measured steps/s per (job, GPU type) and per (job, GPU type, partner job).

    gpu_types: the GPU types measurements may name; alpha: the weight of the newest
    measurement, in (0, 1] (1 = keep only the last).
    """

    def __init__(self, gpu_types: Sequence[str], alpha: float = GAVEL_EMA_ALPHA):
        if not 0 < alpha <= 1:
            raise SchedoptError(f"alpha must lie in (0, 1], got {alpha}")
        self.gpu_types = tuple(gpu_types)
        self.alpha = float(alpha)
        self._gpu = {g: j for j, g in enumerate(self.gpu_types)}
        self._row: dict[str, int] = {}
        self._estimate = np.full((8, len(self.gpu_types)), np.nan)
        self._count = np.zeros((8, len(self.gpu_types)), dtype=np.int64)
        self._pairs: dict[tuple[int, int, int], tuple[float, int]] = {}

    @property
    def jobs(self) -> tuple[str, ...]:
        """Jobs seen so far, in order of first measurement."""
        return tuple(self._row)

    def _rows(self, jobs: Iterable[str]) -> np.ndarray:
        rows = []
        for job in jobs:
            row = self._row.get(job)
            if row is None:
                row = self._row[job] = len(self._row)
            rows.append(row)
        if len(self._row) > self._estimate.shape[0]:
            grow = max(len(self._row), 2 * self._estimate.shape[0]) - self._estimate.shape[0]
            self._estimate = np.vstack([self._estimate, np.full((grow, len(self.gpu_types)), np.nan)])
            self._count = np.vstack([self._count, np.zeros((grow, len(self.gpu_types)), dtype=np.int64)])
        return np.asarray(rows, dtype=np.int64)

    def _columns(self, gpu_types: Iterable[str]) -> np.ndarray:
        try:
            return np.asarray([self._gpu[g] for g in gpu_types], dtype=np.int64)
        except KeyError as e:
            raise SchedoptError(f"unknown GPU type {e.args[0]!r}; the estimator has "
                                f"{', '.join(self.gpu_types)}") from None

    @staticmethod
    def _check(values: np.ndarray) -> None:
        if not np.all(np.isfinite(values) & (values >= 0)):
            raise SchedoptError("a measured throughput must be a finite number of steps/s >= 0")

    def update(self, job: str, gpu_type: str, steps_per_s: float, partner: str | None = None) -> float:
        """Fold one measurement in; returns the new estimate. `partner`: the job sharing the
        GPU type during the measurement (None: the job ran alone)."""
        value = np.asarray([steps_per_s], dtype=float)
        self._check(value)
        if partner is None:
            return float(self.update_many([job], [gpu_type], value)[0])
        j = self._columns([gpu_type])[0]
        row, other = self._rows([job, partner])
        old, n = self._pairs.get((row, j, other), (np.nan, 0))
        new = value[0] if n == 0 else self.alpha * value[0] + (1 - self.alpha) * old
        self._pairs[(row, j, other)] = (float(new), n + 1)
        return float(new)

    def update_many(self, jobs: Sequence[str], gpu_types: Sequence[str], steps_per_s) -> np.ndarray:
        """Fold in a batch of isolated measurements, in order (measurement i: job jobs[i] alone
        on gpu_types[i]); returns the estimates after each one's cell was updated."""
        values = np.asarray(steps_per_s, dtype=float).reshape(-1)
        if not len(jobs) == len(gpu_types) == values.size:
            raise SchedoptError("jobs, gpu_types and steps_per_s must have the same length")
        self._check(values)
        cols = self._columns(gpu_types)
        rows = self._rows(jobs)
        cells = rows * len(self.gpu_types) + cols
        if np.unique(cells).size < cells.size:  # one cell twice in a batch: apply in order
            return np.array([self.update_many([jobs[i]], [gpu_types[i]], values[i:i + 1])[0]
                             for i in range(values.size)])
        old = self._estimate[rows, cols]
        first = self._count[rows, cols] == 0
        new = np.where(first, values, self.alpha * values + (1 - self.alpha) * old)
        self._estimate[rows, cols] = new
        self._count[rows, cols] += 1
        return new

    def estimate(self, job: str, gpu_type: str, partner: str | None = None) -> float:
        """The current estimate (steps/s), NaN when that cell was never measured."""
        row, j = self._row.get(job), self._gpu.get(gpu_type)
        if row is None or j is None:
            return float("nan")
        if partner is None:
            return float(self._estimate[row, j])
        return self._pairs.get((row, j, self._row.get(partner, -1)), (float("nan"), 0))[0]

    def count(self, job: str, gpu_type: str, partner: str | None = None) -> int:
        """How many measurements went into that cell's estimate."""
        row, j = self._row.get(job), self._gpu.get(gpu_type)
        if row is None or j is None:
            return 0
        if partner is None:
            return int(self._count[row, j])
        return self._pairs.get((row, j, self._row.get(partner, -1)), (0.0, 0))[1]

    def model(self, name: str | None = None) -> PerformanceModel:
        """The estimates as a `PerformanceModel`: one row per job (its id as the job-type
        label), measured cells known, the rest NaN; pair columns for the jobs that took part in
        a co-location measurement."""
        R, J = len(self._row), len(self.gpu_types)
        labels = self.jobs
        partners = sorted({labels[r] for (a, _, b) in self._pairs for r in (a, b)})
        P = len(partners)
        index = {t: k for k, t in enumerate(partners)}
        values = np.full((R, J * (1 + P)), np.nan)
        values[:, :J] = self._estimate[:R]
        for (a, j, b), (x, _) in self._pairs.items():
            values[a, J + j * P + index[labels[b]]] = x
        return PerformanceModel(labels, self.gpu_types, tuple(partners), values,
                                np.isfinite(values), name=name)
