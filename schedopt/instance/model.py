"""Typed, frozen view of a schedopt instance (format `schedopt-instance/1`).

Built once by `schedopt.instance.load` after validation; code past that boundary trusts it.
Units: throughput in steps/s on `scale_factor` GPUs, time in seconds, cost in $/GPU-hour.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

import numpy as np

from schedopt.errors import SchedoptError

FORMAT = "schedopt-instance/1"


def frozen_map(d: Mapping | None = None) -> Mapping:
    """A read-only mapping (so frozen dataclasses stay immutable all the way down)."""
    return MappingProxyType(dict(d or {}))


@dataclass(frozen=True)
class GpuType:
    """One GPU type: `count` GPUs, `gpus_per_node` per server, `cost_per_hour` $/GPU-hour."""

    name: str
    count: int
    gpus_per_node: int
    cost_per_hour: float | None = None


@dataclass(frozen=True)
class Node:
    """One server holding `gpus` GPUs of `gpu_type`, in `rack`.

    cpus, memory_gb, bandwidth_gbps: its other resources (cores, GB of memory, Gbit/s of NIC
    bandwidth), None when the file does not say (parameter-server policies such as `smd` need
    them where a job asks for that resource).
    """

    id: str
    gpu_type: str
    gpus: int
    rack: str = "r0"
    cpus: float | None = None
    memory_gb: float | None = None
    bandwidth_gbps: float | None = None


@dataclass(frozen=True)
class CpuMachine:
    id: str
    cores: int


@dataclass(frozen=True)
class Cluster:
    gpu_types: Mapping[str, GpuType]
    nodes: tuple[Node, ...]
    cpu_machines: tuple[CpuMachine, ...] = ()

    @property
    def type_names(self) -> tuple[str, ...]:
        return tuple(self.gpu_types)


@dataclass(frozen=True)
class DeadlineOption:
    """A soft deadline: `value` is earned if the job finishes within `after_s` seconds of arrival."""

    after_s: float
    value: float


@dataclass(frozen=True)
class TaskDemand:
    """What one worker or one parameter server of a job holds on its machine while it runs:
    `gpus`, `cpus` (cores), `memory_gb` and `bandwidth_gbps` (Gbit/s of the machine's NIC,
    reserved for the task; its transfers run at this rate)."""

    bandwidth_gbps: float
    gpus: int = 0
    cpus: float = 0.0
    memory_gb: float = 0.0


@dataclass(frozen=True)
class ParameterServerSpec:
    """A data-parallel job trained with parameter servers (the `smd` family of policies).

    epochs: passes over the data; samples_per_epoch: training samples per pass;
    batch_per_worker: samples per worker per iteration; compute_s_per_sample: seconds of
    forward + backward computation per sample on one worker, per layer (one entry = the total);
    model_size_gb: gradient (= parameter) size in GB, per layer (one entry = the total);
    worker / ps: the resources of one worker / one parameter server; max_workers / max_ps: the
    largest counts a policy may give the job. The completion-time model is in docs/smd.md.
    """

    epochs: int
    samples_per_epoch: float
    batch_per_worker: int
    compute_s_per_sample: tuple[float, ...]
    model_size_gb: tuple[float, ...]
    worker: TaskDemand
    ps: TaskDemand
    max_workers: int = 8
    max_ps: int = 8

    @property
    def compute_s(self) -> float:
        """Seconds of computation per sample, all layers."""
        return float(sum(self.compute_s_per_sample))

    @property
    def size_gb(self) -> float:
        """Gradient size in GB, all layers."""
        return float(sum(self.model_size_gb))


@dataclass(frozen=True)
class Job:
    """A queued job. `throughput` is its resolved row (steps/s per GPU type), always complete.

    deadline: seconds after arrival (None = none); total_steps None = unknown work.
    isolated_time: seconds of isolated-share time already credited (finish-time fairness).
    deadline_options: soft deadlines by increasing after_s (the first is `deadline`); empty when
    the file gives none.
    parameter_server: the job as a parameter-server training job (None when the file gives none).
    """

    id: str
    throughput: Mapping[str, float]
    type: str | None = None
    scale_factor: int = 1
    weight: float = 1.0
    arrival_time: float = 0.0
    total_steps: float | None = None
    steps_done: float = 0.0
    deadline: float | None = None
    user: str | None = None
    isolated_time: float = 0.0
    deadline_options: tuple[DeadlineOption, ...] = ()
    parameter_server: ParameterServerSpec | None = None

    @property
    def slo_options(self) -> tuple[DeadlineOption, ...]:
        """The job's deadline options: `deadline_options`, else one option at `deadline` worth
        the job's `weight`, else none (a best-effort job)."""
        if self.deadline_options:
            return self.deadline_options
        if self.deadline is None:
            return ()
        return (DeadlineOption(self.deadline, self.weight),)

    @property
    def remaining_steps(self) -> float | None:
        return None if self.total_steps is None else max(self.total_steps - self.steps_done, 0.0)


@dataclass(frozen=True)
class Colocation:
    """Steps/s of both jobs of a pair of job types sharing GPUs of `gpu_type` (two jobs of
    the same scale factor s on the same s GPUs). [0, 0] is a measurement: the two cannot share.
    `unconsolidated`: both rates when the pair's GPUs span several nodes, where they differ
    from `throughput` (None: the same)."""

    types: tuple[str, str]
    gpu_type: str
    throughput: tuple[float, float]
    unconsolidated: tuple[float, float] | None = None


@dataclass(frozen=True)
class Performance:
    throughput: Mapping[str, Mapping[str, float]] = field(default_factory=frozen_map)
    colocated: tuple[Colocation, ...] = ()
    unconsolidated: Mapping[str, Mapping[str, float]] = field(default_factory=frozen_map)
    cpu_time: Mapping[str, float] = field(default_factory=frozen_map)


@dataclass(frozen=True)
class Instance:
    """One scheduling decision's inputs. `now` is the decision time in seconds (default: the
    latest arrival); `source` is the file it came from, for error messages (not compared, so the
    same instance read from two files is equal); `users` maps user names to their weights
    (hierarchical water filling; a user the file does not list weighs 1)."""

    cluster: Cluster
    jobs: tuple[Job, ...]  # or a table.JobTable, which behaves as one
    performance: Performance
    name: str | None = None
    now: float = 0.0
    source: str | None = field(default=None, compare=False)
    users: Mapping[str, float] = field(default_factory=frozen_map)

    def located(self, where: str, message: str) -> str:
        """`message` prefixed by the file it came from (when read from one) and `where` in it
        (a field path, e.g. 'jobs[3].parameter_server'), for one-line errors."""
        file = self.source if self.source and not self.source.startswith("<") else None
        return f"{file}: {where}: {message}" if file else f"{where}: {message}"

    @property
    def job_ids(self) -> tuple[str, ...]:
        ids = getattr(self.jobs, "ids", None)  # a JobTable's, without building Jobs
        return ids if ids is not None else tuple(job.id for job in self.jobs)

    @property
    def job_table(self):
        """The jobs as columns (`table.JobTable`, throughput columns in the cluster's GPU type
        order): the loader's own when it read a table, else built from the Jobs once."""
        cached = self.__dict__.get("_job_table")
        if cached is None:
            from schedopt.instance.table import JobTable

            cached = JobTable.of_jobs(self.jobs, self.cluster.type_names)
            object.__setattr__(self, "_job_table", cached)
        return cached

    @classmethod
    def from_frames(cls, jobs, cluster: Mapping, throughput=None, *, name: str | None = None,
                    now: float | None = None, users: Mapping | None = None,
                    performance: Mapping | None = None) -> "Instance":
        """An instance from pandas DataFrames: `jobs` has a column `id` and any of a job's keys
        (type, scale_factor, weight, arrival_time (s), total_steps, steps_done, deadline (s),
        user, isolated_time (s)) as columns, plus one column per GPU type (steps/s) for jobs
        with their own row; `throughput` (optional) has a column `type` and one per GPU type.
        `cluster`, `users` and `performance` (colocated, unconsolidated, cpu_time) are as in
        the document (docs/instance-format.md), e.g. cluster={"gpu_types": {"v100": {"count":
        8}}}. Raises InstanceError naming each bad cell (`<jobs frame>: row 3, column k80`)."""
        from schedopt.errors import InstanceError, Problem
        from schedopt.instance.tables import instance_with_tables
        from schedopt.instance.validate import find_problems
        from schedopt.instance.values import format_path

        doc = {"format": FORMAT, "cluster": cluster, "jobs": {"table": "<jobs frame>"}}
        doc.update({k: v for k, v in (("name", name), ("now", now), ("users", users),
                                      ("performance", performance)) if v is not None})
        problems = find_problems(doc)  # everything but the frames, with the usual messages
        if problems:
            raise InstanceError([Problem("<frames>", format_path(path), message)
                                 for path, message in problems])
        return instance_with_tables(doc, "<frames>", None, jobs=jobs, throughput=throughput)

    def require_total_steps(self, purpose: str) -> None:
        """SchedoptError naming (up to five of) the jobs without `total_steps`, which `purpose`
        (e.g. "simulated") needs."""
        table = self.job_table
        missing = [table.ids[m] for m in np.flatnonzero(np.isnan(table.total_steps))[:5]]
        if missing:
            raise SchedoptError(f"{self.source or 'trace'}: jobs need total_steps to be "
                                f"{purpose}; missing for {', '.join(missing[:5])}")
