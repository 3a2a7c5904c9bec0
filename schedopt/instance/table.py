"""The job queue as columns: `JobTable`, a read-only sequence of `Job`s kept as arrays.

A large instance (a JSON file read by the columnar fast path, a CSV/Parquet jobs table, pandas
DataFrames) holds its jobs as one array per field; `Job` objects are built only when someone
reads them one by one, all at once, and kept. `ThroughputProblem.from_instance` reads the arrays
directly, so solving a million-job file never builds a million Python objects.

Units as in `model`: throughput in steps/s on `scale_factor` GPUs, times in seconds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from schedopt.instance.model import Job, frozen_map

_NAN = float("nan")


def _none_or_float(values: np.ndarray) -> list:
    """nan -> None, else the Python float (per job; used only when Jobs are built)."""
    return [None if v != v else v for v in values.tolist()]


class JobTable(Sequence):
    """Jobs as columns (index m runs over jobs, j over `gpu_types`).

    ids: (M,) str. throughput: (M, J) steps/s, the resolved rows. job_type: (M,) str or None,
    or None when no job has a type. scale_factor: (M,) int GPUs. weight: (M,). arrival_time,
    steps_done, isolated_time: (M,) seconds / steps / seconds. total_steps, deadline: (M,)
    steps and seconds after arrival, nan = unknown / none. user: (M,) str or None, or None when
    no job names a user. Behaves as a tuple of `Job`s (indexing, iteration, ==)."""

    def __init__(self, ids, gpu_types, throughput, *, job_type=None, scale_factor=None,
                 weight=None, arrival_time=None, total_steps=None, steps_done=None,
                 deadline=None, user=None, isolated_time=None):
        M = len(ids)

        def column(values, default, dtype=float):
            return (np.full(M, default, dtype=dtype) if values is None
                    else np.asarray(values, dtype=dtype).reshape(M))

        self.ids = tuple(ids)
        self.gpu_types = tuple(gpu_types)
        self.throughput = np.asarray(throughput, dtype=float).reshape(M, len(self.gpu_types))
        self.job_type = None if job_type is None else list(job_type)
        self.scale_factor = column(scale_factor, 1, np.int64)
        self.weight = column(weight, 1.0)
        self.arrival_time = column(arrival_time, 0.0)
        self.total_steps = column(total_steps, _NAN)
        self.steps_done = column(steps_done, 0.0)
        self.deadline = column(deadline, _NAN)
        self.user = None if user is None else list(user)
        self.isolated_time = column(isolated_time, 0.0)
        self._jobs: tuple[Job, ...] | None = None

    @classmethod
    def of_jobs(cls, jobs: Sequence[Job], gpu_types: Sequence[str]) -> "JobTable":
        """The columns of `Job` objects (an instance built job by job)."""
        if isinstance(jobs, JobTable):
            return jobs.reordered(gpu_types)
        types = tuple(gpu_types)
        table = cls(
            [j.id for j in jobs], types,
            [[j.throughput[t] for t in types] for j in jobs],
            job_type=[j.type for j in jobs] if any(j.type is not None for j in jobs) else None,
            scale_factor=[j.scale_factor for j in jobs], weight=[j.weight for j in jobs],
            arrival_time=[j.arrival_time for j in jobs],
            total_steps=[_NAN if j.total_steps is None else j.total_steps for j in jobs],
            steps_done=[j.steps_done for j in jobs],
            deadline=[_NAN if j.deadline is None else j.deadline for j in jobs],
            user=[j.user for j in jobs] if any(j.user is not None for j in jobs) else None,
            isolated_time=[j.isolated_time for j in jobs])
        table._jobs = tuple(jobs)
        return table

    def reordered(self, gpu_types: Sequence[str]) -> "JobTable":
        """The same jobs with throughput columns in the order of `gpu_types`."""
        types = tuple(gpu_types)
        if types == self.gpu_types:
            return self
        at = {t: k for k, t in enumerate(self.gpu_types)}
        copy = object.__new__(JobTable)
        copy.__dict__.update(self.__dict__)
        copy.gpu_types, copy.throughput = types, self.throughput[:, [at[t] for t in types]]
        return copy

    @property
    def remaining_steps(self) -> np.ndarray:
        """(M,) steps left (nan = unknown total), as `Job.remaining_steps`."""
        return np.maximum(self.total_steps - self.steps_done, 0.0)

    def _build(self) -> tuple[Job, ...]:
        M, types = len(self.ids), self.gpu_types
        job_type = self.job_type or [None] * M
        user = self.user or [None] * M
        total, deadline = _none_or_float(self.total_steps), _none_or_float(self.deadline)
        return tuple(
            Job(id=i, throughput=frozen_map(zip(types, row)), type=jt, scale_factor=s,
                weight=w, arrival_time=a, total_steps=ts, steps_done=d, deadline=dl, user=u,
                isolated_time=it)
            for i, row, jt, s, w, a, ts, d, dl, u, it in zip(
                self.ids, self.throughput.tolist(), job_type, self.scale_factor.tolist(),
                self.weight.tolist(), self.arrival_time.tolist(), total,
                self.steps_done.tolist(), deadline, user, self.isolated_time.tolist()))

    @property
    def jobs(self) -> tuple[Job, ...]:
        """The jobs as `Job` objects (built on first read, then kept)."""
        if self._jobs is None:
            self._jobs = self._build()
        return self._jobs

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index):
        return self.jobs[index]

    def __iter__(self):
        return iter(self.jobs)

    def __eq__(self, other) -> bool:
        if isinstance(other, (JobTable, tuple)):
            return len(self) == len(other) and self.jobs == tuple(other)
        return NotImplemented

    __hash__ = None

    def __add__(self, other):
        return self.jobs + tuple(other)

    def __radd__(self, other):
        return tuple(other) + self.jobs

    def __repr__(self) -> str:
        return f"JobTable({len(self)} jobs x {len(self.gpu_types)} GPU types)"

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_jobs": None}


def is_table(value: object) -> bool:
    """Whether a document value is a table reference, {"table": FILE}."""
    return isinstance(value, dict) and "table" in value and isinstance(value["table"], str)


def uses_tables(doc: dict) -> bool:
    """Whether the document takes its jobs or its throughput matrix from a table file."""
    perf = doc.get("performance")
    return is_table(doc.get("jobs")) or isinstance(perf, dict) and is_table(perf.get("throughput"))


def keeps_rule(values: np.ndarray, rule: dict) -> np.ndarray:
    """Which of `values` (floats, NaN where a cell is empty) are finite and keep a JSON-Schema
    rule's `minimum`, `exclusiveMinimum` and integer `type` (what a table's numeric column
    must satisfy, as the same key does in a JSON job)."""
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(values)
        if "minimum" in rule:
            ok &= values >= rule["minimum"]
        if "exclusiveMinimum" in rule:
            ok &= values > rule["exclusiveMinimum"]
        if rule.get("type") == "integer":
            ok &= np.floor(values) == values
    return ok
