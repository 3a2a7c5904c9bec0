"""SMD's completion-time model and the arrays its policies read (docs/formulations.md §5; every
modelling choice is argued in docs/smd.md).

Job i runs w workers and p parameter servers (PSs), synchronous data parallel. Per iteration
each worker computes a batch of M_i samples and exchanges the whole gradient (g_i GB) with the
PSs, each PS holding 1/p of the parameters:

    compute     c_i M_i                           (c_i: seconds per sample, all layers)
    worker side 2 * 8 g_i / b^w_i                 (push g, pull g at the worker's b^w Gbit/s)
    PS side     2 * 8 g_i w / (p b^ps_i)          (a PS moves w shards of g/p each way)
    tau_i(w, p) = c_i M_i + max(worker side, PS side)

and the job needs E_i K_i / (w M_i) iterations (E epochs of K samples, global batch w M), so

    T_i(w, p) = E_i K_i tau_i(w, p) / (w M_i) = N_i(w, p) / D_i(w),
    N_i = E_i K_i tau_i(w, p)  (sample-seconds),  D_i = w M_i  (samples per iteration).

Bandwidth is a reservation: each task holds its b Gbit/s of its machine's NIC while the job
runs, so T_i does not depend on where the tasks sit; the NIC capacity limits how many tasks a
machine holds, next to its GPUs, CPUs and memory (resources in RESOURCES order).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from schedopt.errors import PolicyError
from schedopt.instance.model import Instance, ParameterServerSpec

RESOURCES = ("gpus", "cpus", "memory_gb", "bandwidth_gbps")
BITS_PER_BYTE = 8.0
JOB_FIELDS = ("worker_demand", "ps_demand", "epochs", "samples_per_epoch", "batch_per_worker",
              "compute_s", "size_gb", "worker_bw", "ps_bw", "max_workers", "max_ps")  # (n, ...) arrays


@dataclass(frozen=True)
class TimeParts:
    """The completion-time model's parts (arrays broadcast over the workers and PS counts):
    compute_s, worker_comm_s, ps_comm_s, iteration_s (= tau, seconds per iteration),
    iterations (total, all epochs) and completion_s (= T, seconds)."""

    compute_s: np.ndarray
    worker_comm_s: np.ndarray
    ps_comm_s: np.ndarray
    iteration_s: np.ndarray
    iterations: np.ndarray
    completion_s: np.ndarray


def completion_time_parts(spec: ParameterServerSpec, workers, ps) -> TimeParts:
    """T(w, p) and its parts for one job, for arrays (or scalars) `workers` and `ps` >= 1."""
    w, p = np.asarray(workers, dtype=float), np.asarray(ps, dtype=float)
    if np.any(w < 1) or np.any(p < 1):
        raise PolicyError("a parameter-server job needs at least 1 worker and 1 parameter server")
    w, p = np.broadcast_arrays(w, p)
    size_gbit = BITS_PER_BYTE * spec.size_gb
    compute = np.full(w.shape, spec.compute_s * spec.batch_per_worker)
    worker_comm = np.full(w.shape, 2.0 * size_gbit / spec.worker.bandwidth_gbps)
    ps_comm = 2.0 * size_gbit * w / (p * spec.ps.bandwidth_gbps)
    tau = compute + np.maximum(worker_comm, ps_comm)
    iterations = spec.epochs * spec.samples_per_epoch / (w * spec.batch_per_worker)
    return TimeParts(compute, worker_comm, ps_comm, tau, iterations, iterations * tau)


def completion_time(spec: ParameterServerSpec, workers, ps) -> np.ndarray:
    """T(w, p) in seconds for one job (arrays broadcast): see the module docstring."""
    return completion_time_parts(spec, workers, ps).completion_s


@dataclass(frozen=True, eq=False)
class SmdProblem:
    """The arrays of a parameter-server scheduling problem: n jobs, H machines, R resources.

    capacity (H, R): each machine's resources in RESOURCES order (inf = a resource no job asks
    for and the machine does not state). worker_demand, ps_demand (n, R): one task's resources.
    Per job (n,): epochs, samples_per_epoch, batch_per_worker, compute_s (per sample, all
    layers), size_gb (gradient), worker_bw, ps_bw (Gbit/s), max_workers, max_ps.
    """

    job_ids: tuple[str, ...]
    machine_ids: tuple[str, ...]
    capacity: np.ndarray
    worker_demand: np.ndarray
    ps_demand: np.ndarray
    epochs: np.ndarray
    samples_per_epoch: np.ndarray
    batch_per_worker: np.ndarray
    compute_s: np.ndarray
    size_gb: np.ndarray
    worker_bw: np.ndarray
    ps_bw: np.ndarray
    max_workers: np.ndarray
    max_ps: np.ndarray

    @property
    def num_jobs(self) -> int:
        return len(self.job_ids)

    @property
    def num_machines(self) -> int:
        return len(self.machine_ids)

    @classmethod
    def from_instance(cls, instance: Instance) -> SmdProblem:
        """Every job must have `parameter_server`; machines are `cluster.nodes` (GPUs from
        `gpus`, the rest from `cpus`, `memory_gb`, `bandwidth_gbps`). A resource some task asks
        for must be stated on every node (PolicyError otherwise)."""
        missing = [n for n, job in enumerate(instance.jobs) if job.parameter_server is None]
        if missing:
            ids = ", ".join(instance.jobs[n].id for n in missing[:5])
            raise PolicyError(instance.located(
                f"jobs[{missing[0]}].parameter_server", f"parameter-server policies need "
                f"`parameter_server` on every job; {len(missing)} job(s) have none: {ids}"))
        specs = [job.parameter_server for job in instance.jobs]
        demand = {role: np.array([[getattr(getattr(s, role), r) for r in RESOURCES] for s in specs],
                                 dtype=float).reshape(len(specs), len(RESOURCES))
                  for role in ("worker", "ps")}
        asked = (demand["worker"] > 0).any(axis=0) | (demand["ps"] > 0).any(axis=0)
        nodes = instance.cluster.nodes
        capacity = np.full((len(nodes), len(RESOURCES)), np.inf)
        for h, node in enumerate(nodes):
            for r, name in enumerate(RESOURCES):
                value = getattr(node, name)
                if value is not None:
                    capacity[h, r] = value
                elif asked[r]:
                    raise PolicyError(instance.located(
                        f"cluster.nodes[{h}].{name}",
                        f"node {node.id!r} does not state `{name}`, which parameter-server "
                        f"tasks ask for; give every node `{name}`"))
        column = lambda f, dtype=float: np.array([f(s) for s in specs], dtype=dtype)  # noqa: E731
        return cls(
            job_ids=instance.job_ids, machine_ids=tuple(n.id for n in nodes), capacity=capacity,
            worker_demand=demand["worker"], ps_demand=demand["ps"],
            epochs=column(lambda s: s.epochs), samples_per_epoch=column(lambda s: s.samples_per_epoch),
            batch_per_worker=column(lambda s: s.batch_per_worker),
            compute_s=column(lambda s: s.compute_s), size_gb=column(lambda s: s.size_gb),
            worker_bw=column(lambda s: s.worker.bandwidth_gbps),
            ps_bw=column(lambda s: s.ps.bandwidth_gbps),
            max_workers=column(lambda s: s.max_workers, int), max_ps=column(lambda s: s.max_ps, int),
        )

    def restrict(self, jobs: np.ndarray, machines: np.ndarray, capacity: np.ndarray) -> SmdProblem:
        """The problem of jobs `jobs` alone on machines `machines` (index arrays) with their
        capacity (len(machines), R) replaced by `capacity` (e.g. what other jobs leave)."""
        per_job = {name: getattr(self, name)[jobs] for name in JOB_FIELDS}
        return dataclasses.replace(
            self, job_ids=tuple(self.job_ids[i] for i in jobs),
            machine_ids=tuple(self.machine_ids[h] for h in machines),
            capacity=np.asarray(capacity, dtype=float), **per_job)

    def _check_rows(self, w: np.ndarray) -> None:
        if w.ndim == 0 or w.shape[0] != self.num_jobs:
            raise ValueError(f"expected one row per job ({self.num_jobs}), got shape {w.shape}")

    def numerator(self, workers, ps) -> np.ndarray:
        """N_i(w, p) = E K tau(w, p), sample-seconds; `workers`/`ps` broadcast against (n,) or
        (n, K) (one column per configuration)."""
        w, p = np.broadcast_arrays(np.asarray(workers, dtype=float), np.asarray(ps, dtype=float))
        self._check_rows(w)
        job = (slice(None),) + (None,) * (w.ndim - 1)
        size_gbit = BITS_PER_BYTE * self.size_gb[job]
        comm = np.maximum(2.0 * size_gbit / self.worker_bw[job],
                          2.0 * size_gbit * w / (p * self.ps_bw[job]))
        tau = self.compute_s[job] * self.batch_per_worker[job] + comm
        return self.epochs[job] * self.samples_per_epoch[job] * tau

    def denominator(self, workers) -> np.ndarray:
        """D_i(w) = w M_i, samples per iteration."""
        w = np.asarray(workers, dtype=float)
        self._check_rows(w)
        return w * self.batch_per_worker[(slice(None),) + (None,) * (w.ndim - 1)]

    def completion_time(self, workers, ps) -> np.ndarray:
        """T_i(w_i, p_i) = N / D in seconds, per job (or per job and configuration)."""
        return self.numerator(workers, ps) / self.denominator(workers)

    def task_changes(self, w: np.ndarray, p: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, ...]:
        """Each job's change of completion time (s) from T = T(w, p) for one worker less, one
        PS less, one worker more and one PS more (inf where its counts forbid it: fewer than
        one, more than max_workers / max_ps)."""
        fewer_w = np.where(w > 1, self.completion_time(np.maximum(w - 1, 1), p) - T, np.inf)
        fewer_p = np.where(p > 1, self.completion_time(w, np.maximum(p - 1, 1)) - T, np.inf)
        more_w = np.where(w < self.max_workers,
                          self.completion_time(np.minimum(w + 1, self.max_workers), p) - T, np.inf)
        more_p = np.where(p < self.max_ps,
                          self.completion_time(w, np.minimum(p + 1, self.max_ps)) - T, np.inf)
        return fewer_w, fewer_p, more_w, more_p

    def total_capacity(self) -> np.ndarray:
        """(R,) the cluster's total of each resource over the machines that limit it (unlimited
        capacities count 0), 1 where that total is 0: the scale of a share of the cluster."""
        total = np.where(np.isfinite(self.capacity), self.capacity, 0.0).sum(axis=0)
        return np.where(total > 0, total, 1.0)

    def task_sizes(self) -> tuple[np.ndarray, np.ndarray]:
        """(n,) each job's worker and PS: its demands summed over resources, each in shares of
        the cluster's total (`total_capacity`). The first-fit rules place the largest tasks
        first by it."""
        scale = self.total_capacity()
        return (self.worker_demand / scale).sum(axis=1), (self.ps_demand / scale).sum(axis=1)

    def usage(self, workers: np.ndarray, ps: np.ndarray) -> np.ndarray:
        """(H, R) resources used on each machine by placements workers, ps (n, H)."""
        return workers.T @ self.worker_demand + ps.T @ self.ps_demand

    def configurations(self) -> Configurations:
        """Each job's (w, p) candidates: 1 <= w <= max_workers, 1 <= p <= max_ps, without the
        dominated ones (a configuration is kept only when its T is below that of both (w-1, p)
        and (w, p-1), hence below every smaller one: T is nonincreasing in w and p, and fewer
        tasks never fit worse, so an optimum never needs a dominated configuration)."""
        W, P = int(self.max_workers.max()), int(self.max_ps.max())
        w = np.broadcast_to(np.arange(1, W + 1)[:, None], (W, P)).ravel()
        p = np.broadcast_to(np.arange(1, P + 1)[None, :], (W, P)).ravel()
        n = self.num_jobs
        T = self.completion_time(np.broadcast_to(w, (n, w.size)), np.broadcast_to(p, (n, w.size)))
        grid = T.reshape(n, W, P)
        inside = ((w[None, :] <= self.max_workers[:, None])
                  & (p[None, :] <= self.max_ps[:, None])).reshape(n, W, P)
        keep = inside.copy()
        tol = 1 - 1e-12
        keep[:, 1:, :] &= grid[:, 1:, :] < grid[:, :-1, :] * tol
        keep[:, :, 1:] &= grid[:, :, 1:] < grid[:, :, :-1] * tol
        keep = keep.reshape(n, -1)
        counts = keep.sum(axis=1)
        K = int(counts.max()) if n else 1
        order = np.argsort(~keep, axis=1, kind="stable")[:, :K]  # kept columns first, in order
        valid = np.take_along_axis(keep, order, axis=1)
        cw, cp = w[order], p[order]
        cw, cp = np.where(valid, cw, 1), np.where(valid, cp, 1)
        N, D = self.numerator(cw, cp), self.denominator(cw)
        return Configurations(cw, cp, valid, N, D)


@dataclass(frozen=True, eq=False)
class Configurations:
    """Each job's candidate (w, p), padded to K columns: workers, ps (n, K) ints, valid (n, K)
    (False = padding, which repeats (1, 1)), numerator N and denominator D (n, K); time = N / D
    (inf on padding). Column 0 is (1, 1) for every job."""

    workers: np.ndarray
    ps: np.ndarray
    valid: np.ndarray
    numerator: np.ndarray
    denominator: np.ndarray

    @property
    def time(self) -> np.ndarray:
        return np.where(self.valid, self.numerator / self.denominator, np.inf)

    def demand(self, problem: SmdProblem) -> np.ndarray:
        """(n, K, R): resources of each configuration (w worker demands + p PS demands)."""
        return (self.workers[:, :, None] * problem.worker_demand[:, None, :]
                + self.ps[:, :, None] * problem.ps_demand[:, None, :])


@dataclass(frozen=True, eq=False)
class Placement:
    """A decision: workers[i, h] and ps[i, h] tasks of job i on machine h (ints, (n, H))."""

    workers: np.ndarray
    ps: np.ndarray

    @property
    def total_workers(self) -> np.ndarray:
        return self.workers.sum(axis=1)

    @property
    def total_ps(self) -> np.ndarray:
        return self.ps.sum(axis=1)

    def violations(self, problem: SmdProblem, tol: float = 1e-9) -> list[str]:
        """What makes the placement infeasible (empty list: feasible): a job without a worker or
        a PS, counts above max_workers / max_ps, negative counts, a machine over a resource."""
        found = []
        w, p = self.total_workers, self.total_ps
        for i, job in enumerate(problem.job_ids):
            if w[i] < 1 or p[i] < 1:
                found.append(f"job {job}: {w[i]} worker(s), {p[i]} PS(s); needs at least 1 of each")
            if w[i] > problem.max_workers[i] or p[i] > problem.max_ps[i]:
                found.append(f"job {job}: {w[i]} worker(s), {p[i]} PS(s) above its maximum")
        if (self.workers < 0).any() or (self.ps < 0).any():
            found.append("negative task counts")
        over = problem.usage(self.workers, self.ps) - problem.capacity
        for h, r in zip(*np.nonzero(over > tol * np.maximum(1.0, np.abs(problem.capacity)))):
            found.append(f"machine {problem.machine_ids[h]}: {RESOURCES[r]} over capacity by "
                         f"{over[h, r]:.6g}")
        return found
