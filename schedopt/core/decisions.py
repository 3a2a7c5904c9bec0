"""The kinds of decision a policy emits, and the typed decisions of the kinds that are not a
time-fraction allocation. The simulator advances each kind by its own events."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class DecisionKind(str, enum.Enum):
    """ALLOCATION: X[m, j], the fraction of wall time job m holds its GPUs of type j (Gavel).
    QUEUES: whole jobs ordered on machines (AlloX). LEASES: which jobs hold GPUs in which of the
    coming leases (Chronus). PS_CONFIGURATION: workers and parameter servers per job and their
    machines (SMD)."""

    ALLOCATION = "allocation"
    QUEUES = "queues"
    LEASES = "leases"
    PS_CONFIGURATION = "ps_configuration"


@dataclass(frozen=True)
class MachineQueues:
    """Whole jobs in run order on each machine. queues: {machine: [job ids]}; schedule: {job:
    {machine, position, start (s), completion (s)}}; waiting: job ids not matched yet."""

    queues: dict[str, list[str]]
    schedule: dict[str, dict]
    waiting: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LeasePlan:
    """Who holds the pool's GPUs in the coming leases. leases: {job id: lease indices held,
    0 = the next lease}; running: job ids in lease 0; admitted / rejected: SLO job ids;
    lease_seconds: seconds per lease; gpu_type: the pool's type."""

    leases: dict[str, list[int]]
    running: list[str]
    admitted: list[str]
    rejected: list[str]
    lease_seconds: float
    gpu_type: str


@dataclass(frozen=True)
class PsConfiguration:
    """Workers and parameter servers per job and where they run. workers / ps: {job id: count};
    placement: {job id: {machine id: {"workers": n, "ps": m}}}; completion_time_s: {job id: s}."""

    workers: dict[str, int]
    ps: dict[str, int]
    placement: dict[str, dict[str, dict[str, int]]]
    completion_time_s: dict[str, float]
