"""The problem every policy sees: the throughput matrix and the job queue as arrays, with the
instance at hand for policies that need more of it.

`ThroughputProblem` is built from an `Instance` (or directly from arrays by simulators and the
Gavel adapter). Index m runs over jobs, j over GPU types; the allocation X is (M, J).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedopt.errors import PolicyError
from schedopt.instance.model import Instance


@dataclass(frozen=True, eq=False)
class ThroughputProblem:
    """Inputs of one throughput-matrix allocation.

    throughput: (M, J) steps/s of job m on `scale_factor[m]` GPUs of type j (0 = cannot run).
    scale_factor: (M,) GPUs used at once. weight: (M,) priority weight.
    capacity: (J,) GPUs per type. cost_per_hour: (J,) $/GPU-hour (nan = unknown).
    remaining_steps: (M,) steps left (nan = unknown). time_since_arrival: (M,) seconds.
    isolated_time: (M,) seconds of isolated-share time already credited (finish-time fairness).
    time_to_deadline: (M,) seconds left until the deadline (nan = no deadline).
    type_size: (J,) GPUs of each type in the whole cluster, for `runnable`, when `capacity` is
    only a share of it (a POP part); None = capacity.
    user: (M,) int, the index of each job's user in `user_weight`; a job without a user is a
    user of its own (weight: the job's weight). None = no job names a user.
    user_weight: (U,) each user's weight (hierarchical water filling).
    user_names: (U,) each user's name (None for a job's own user).
    instance: the whole Instance the arrays come from, for policies that read more than the
    throughput matrix (machines, leases, parameter servers); None when built from arrays.
    """

    job_ids: tuple[str, ...]
    gpu_types: tuple[str, ...]
    throughput: np.ndarray
    scale_factor: np.ndarray
    weight: np.ndarray
    capacity: np.ndarray
    cost_per_hour: np.ndarray
    remaining_steps: np.ndarray
    time_since_arrival: np.ndarray
    isolated_time: np.ndarray
    time_to_deadline: np.ndarray
    type_size: np.ndarray | None = None
    user: np.ndarray | None = None
    user_weight: np.ndarray | None = None
    user_names: tuple[str | None, ...] | None = None
    instance: Instance | None = None

    @property
    def num_jobs(self) -> int:
        return len(self.job_ids)

    @property
    def num_types(self) -> int:
        return len(self.gpu_types)

    @property
    def runnable(self) -> np.ndarray:
        """(M, J) bool: job m can run on type j (nonzero throughput and enough GPUs of it)."""
        size = self.capacity if self.type_size is None else self.type_size
        return (self.throughput > 0) & (self.scale_factor[:, None] <= size[None, :])

    @property
    def equal_share_throughput(self) -> np.ndarray:
        """(M,) steps/s under the equal share X^eq[m,j] = c_j / sum(c) (Gavel's normalizer)."""
        return self.throughput @ (self.capacity / self.capacity.sum())

    def located(self, where: str, message: str) -> str:
        """`message` prefixed by the instance's file and `where` in it (a field path), when the
        arrays come from an instance read from a file (not a POP part: its job indices are
        the part's); else `message` alone."""
        if self.instance is None or not self.instance.source:
            return message
        return self.instance.located(where, message)

    def require_runnable(self) -> None:
        """PolicyError naming the jobs that can run on no GPU type."""
        stuck = ~self.runnable.any(axis=1)
        if stuck.any():
            names = ", ".join(np.asarray(self.job_ids, dtype=object)[stuck][:5])
            raise PolicyError(self.located(
                f"jobs[{int(np.argmax(stuck))}]", f"job(s) {names} cannot run on any GPU type "
                f"(zero throughput everywhere or scale factor larger than every type's count)"))

    def require_remaining_steps(self, policy: str) -> None:
        """PolicyError naming the jobs whose remaining work is unknown."""
        unknown = np.isnan(self.remaining_steps)
        if unknown.any():
            names = ", ".join(np.asarray(self.job_ids, dtype=object)[unknown][:5])
            raise PolicyError(self.located(
                f"jobs[{int(np.argmax(unknown))}].total_steps",
                f"policy {policy} needs total_steps for every job; missing for {names}"))

    @classmethod
    def from_instance(cls, instance: Instance) -> "ThroughputProblem":
        types = instance.cluster.type_names
        table = instance.job_table  # columns; no per-job objects for a file read as a table
        gpu = instance.cluster.gpu_types
        since = instance.now - table.arrival_time
        return cls(
            job_ids=table.ids,
            gpu_types=types,
            throughput=table.throughput.copy(),  # the instance's own columns stay untouched
            scale_factor=table.scale_factor.astype(float),
            weight=table.weight.copy(),
            capacity=np.array([gpu[t].count for t in types], dtype=float),
            cost_per_hour=np.array([np.nan if gpu[t].cost_per_hour is None else gpu[t].cost_per_hour
                                    for t in types], dtype=float),
            remaining_steps=table.remaining_steps,
            time_since_arrival=since,
            isolated_time=table.isolated_time.copy(),
            time_to_deadline=table.deadline - since,
            **user_fields(table.user, instance.users, table.weight),
            instance=instance,
        )

    @classmethod
    def from_arrays(cls, throughput, scale_factor=None, weight=None, capacity=None, *,
                    job_ids=None, gpu_types=None, cost_per_hour=None, remaining_steps=None,
                    time_since_arrival=None, isolated_time=None, time_to_deadline=None,
                    user=None, user_weight=None) -> "ThroughputProblem":
        """Build from plain arrays (defaults: scale factor 1, weight 1, nothing else known).

        user: (M,) each job's user name (None: the job is a user of its own); user_weight:
        {name: weight} (default 1 per user)."""
        T = np.asarray(throughput, dtype=float)
        if T.ndim != 2:
            raise PolicyError(f"throughput must be a 2-D (jobs x GPU types) array, got shape {T.shape}")
        M, J = T.shape

        def vector(value, size, default, name):
            arr = np.full(size, default, dtype=float) if value is None else np.asarray(value, dtype=float)
            if arr.shape != (size,):
                raise PolicyError(f"{name} must have shape ({size},), got {arr.shape}")
            return arr

        if capacity is None:
            raise PolicyError("capacity (GPUs per type) is required")
        if user is not None and len(user) != M:
            raise PolicyError(f"user must name one user (or None) per job, got {len(user)} for {M} jobs")
        weight = vector(weight, M, 1.0, "weight")
        return cls(
            job_ids=tuple(job_ids) if job_ids is not None else tuple(f"j{m}" for m in range(M)),
            gpu_types=tuple(gpu_types) if gpu_types is not None else tuple(f"g{j}" for j in range(J)),
            throughput=T,
            scale_factor=vector(scale_factor, M, 1.0, "scale_factor"),
            weight=weight,
            capacity=vector(capacity, J, 0.0, "capacity"),
            cost_per_hour=vector(cost_per_hour, J, np.nan, "cost_per_hour"),
            remaining_steps=vector(remaining_steps, M, np.nan, "remaining_steps"),
            time_since_arrival=vector(time_since_arrival, M, 0.0, "time_since_arrival"),
            isolated_time=vector(isolated_time, M, 0.0, "isolated_time"),
            time_to_deadline=vector(time_to_deadline, M, np.nan, "time_to_deadline"),
            **user_fields(user, user_weight, weight),
        )


def user_fields(users, user_weight, job_weight: np.ndarray) -> dict:
    """ThroughputProblem's `user`, `user_weight` and `user_names` from each job's user name
    (None: a user of its own, weighted like the job) and {name: weight} (default 1); all None
    when no job names a user."""
    if users is None:
        return {}
    import pandas as pd  # only with named users; a solve need not load pandas

    codes, names = pd.factorize(pd.Series(users, dtype=object), sort=True)
    alone = codes < 0
    if alone.all():
        return {}
    codes[alone] = len(names) + np.arange(alone.sum())
    weights = user_weight or {}
    for name in weights:
        if weights[name] <= 0:
            raise PolicyError(f"user {name!r} has weight {weights[name]}; expected > 0")
    return {"user": codes.astype(int),
            "user_weight": np.concatenate([[float(weights.get(n, 1.0)) for n in names],
                                           job_weight[alone]]),
            "user_names": tuple(names) + (None,) * int(alone.sum())}
