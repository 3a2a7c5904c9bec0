"""Baselines for the parameter-server policies (docs/smd.md): a fixed equal split and an
Optimus-style greedy. Both place tasks with the same per-machine rules as SMD (`Packing`)."""

from __future__ import annotations

import heapq
import time

import numpy as np

from schedopt.policies.smd.algorithm import SmdSolution, solution
from schedopt.policies.smd.model import SmdProblem
from schedopt.policies.smd.packing import minimal_packing, pack_counts


def _totals(problem: SmdProblem) -> np.ndarray:
    """The cluster's total of every resource (inf where some machine does not limit it)."""
    return problem.capacity.sum(axis=0)


def equal_split(problem: SmdProblem) -> SmdSolution:
    """Every job gets 1/n of the cluster's total of each resource and takes, within that share,
    its fastest configuration (just (1, 1) when not even that fits the share). Jobs are placed
    one by one, largest share first; a job whose configuration does not fit what the earlier
    ones left steps down to its fastest configuration that does. Infeasible when one worker and
    one PS per job cannot be placed."""
    clock = time.perf_counter()
    n = problem.num_jobs
    cfg = problem.configurations()
    demand = cfg.demand(problem)
    share = _totals(problem) / max(n, 1)
    within = cfg.valid & (demand <= share + 1e-9).all(axis=2)
    within[:, 0] = True  # (1, 1) always: every job needs one worker and one PS
    time_in = np.where(within, cfg.time, np.inf)
    pack = _one_each(problem)
    if pack is None:
        return solution(problem, None, "equal_split", clock)
    size = (demand[np.arange(n), np.argmin(time_in, axis=1)]
            / np.where(np.isfinite(share) & (share > 0), share, 1.0)).sum(axis=1)
    for i in np.argsort(-size, kind="stable").tolist():
        for k in np.argsort(time_in[i], kind="stable").tolist():
            if not np.isfinite(time_in[i, k]) or k == 0:
                break  # (1, 1) is already placed
            if pack.add(i, int(cfg.workers[i, k]) - 1, int(cfg.ps[i, k]) - 1):
                break
    return solution(problem, pack, "equal_split", clock,
                    details={"share": [float(s) for s in share]})


def optimus_greedy(problem: SmdProblem) -> SmdSolution:
    """Optimus-style greedy (Peng et al., EuroSys'18): from one worker and one PS per job,
    repeatedly add the single task, a worker or a PS of some job, with the largest marginal
    gain, the decrease of the job's completion time divided by the task's dominant share (its
    largest demand over the cluster's total of that resource), while some task fits and gains.
    A task goes on a machine by the same rules as SMD's; a (job, kind) that once fits nowhere
    is not tried again (machines only fill up)."""
    clock = time.perf_counter()
    n = problem.num_jobs
    pack = _one_each(problem)
    if pack is None:
        return solution(problem, None, "optimus_greedy", clock)
    totals = _totals(problem)
    scale = np.where(np.isfinite(totals) & (totals > 0), totals, np.inf)
    dominant = np.stack([(problem.worker_demand / scale).max(axis=1),
                         (problem.ps_demand / scale).max(axis=1)], axis=1)  # (n, 2)
    dominant = np.maximum(dominant, 1e-12)
    limits = np.stack([problem.max_workers, problem.max_ps], axis=1)
    blocked = np.zeros((n, 2), dtype=bool)
    version = np.zeros(n, dtype=np.int64)
    heap: list = []

    def push(i: int) -> None:
        w, p = pack.w[i:i + 1], pack.p[i:i + 1]
        now = problem.completion_time(pack.w, pack.p)[i]
        for kind, (dw, dp) in enumerate(((1, 0), (0, 1))):
            if blocked[i, kind] or (pack.w[i] + dw, pack.p[i] + dp)[kind] > limits[i, kind]:
                continue
            w_new, p_new = pack.w.copy(), pack.p.copy()
            w_new[i], p_new[i] = int(w[0]) + dw, int(p[0]) + dp
            gain = now - problem.completion_time(w_new, p_new)[i]
            if gain > 1e-12 * now:
                heapq.heappush(heap, (-gain / dominant[i, kind], i, kind, version[i]))

    for i in range(n):
        push(i)
    added = 0
    while heap:
        _, i, kind, v = heapq.heappop(heap)
        if v != version[i] or blocked[i, kind]:
            continue
        if pack.add(i, 1 - kind, kind):
            added += 1
            version[i] += 1
            push(i)
        else:
            blocked[i, kind] = True
    return solution(problem, pack, "optimus_greedy", clock, details={"tasks_added": added})


def _one_each(problem: SmdProblem):
    """A packing of one worker and one PS per job (None when none is found)."""
    start = minimal_packing(problem)
    if start is None:
        n = problem.num_jobs
        start = pack_counts(problem, np.ones(n, dtype=np.int64), np.ones(n, dtype=np.int64))
    return start
