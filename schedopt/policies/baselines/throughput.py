"""Closed-form and greedy baselines of the Gavel family: isolated, proportional and FIFO.

They optimize nothing, so their outcome has no objective or bound; status `feasible` says the
allocation satisfies the base constraints without an optimality claim.
"""

from __future__ import annotations

import numpy as np

from schedopt.backends import Status
from schedopt.core.outcome import Outcome
from schedopt.policies.gavel.lp import isolated_allocation
from schedopt.core.problem import ThroughputProblem


def _baseline(X: np.ndarray, name: str, **details) -> Outcome:
    return Outcome.from_status(X, Status.FEASIBLE, None, None, 0.0, name, details)


def isolated(problem: ThroughputProblem) -> Outcome:
    """Each job gets 1/M of every type: X[m,j] = (c_j / M) / s_m, rows scaled to sum <= 1,
    and 0 where the job cannot run (Gavel's share, less what the job could not use)."""
    if problem.num_jobs == 0:
        return _baseline(np.zeros((0, problem.num_types)), "closed-form")
    return _baseline(isolated_allocation(problem) * problem.runnable, "closed-form")


def proportional(problem: ThroughputProblem) -> Outcome:
    """Every job gets the same share of each type, in proportion to its count:
    X[m,j] = (c_j / C) * min(1, C / sum_m s_m), with C = sum_j c_j, so that the cluster fits,
    and 0 where the job cannot run.

    Gavel's ProportionalPolicy returns c_j / C without the second factor, which overfills
    the cluster whenever the jobs ask for more GPUs than it has; it serves as a normalizer there.
    """
    C = problem.capacity.sum()
    fit = min(1.0, C / problem.scale_factor.sum()) if problem.num_jobs else 1.0
    X = np.tile(problem.capacity / C * fit, (problem.num_jobs, 1)) * problem.runnable
    return _baseline(X, "closed-form")


def fifo(problem: ThroughputProblem, order: np.ndarray | None = None, agnostic: bool = False,
         seed: int = 0) -> Outcome:
    """First in, first out: jobs in `order` (default: as given) each take X = 1 on one type
    with at least s_m free GPUs where they can run: the fastest such type, or with `agnostic`
    a uniformly random one (seeded). The queue stops at the first job that fits nowhere, so no
    job jumps ahead (Gavel's fifo_perf / fifo; the loop is over the queue, which is short
    compared with an LP solve, and inherently sequential).
    """
    M, J = problem.throughput.shape
    order = np.arange(M) if order is None else np.asarray(order)
    free = problem.capacity.astype(float).copy()
    runnable = problem.runnable
    X = np.zeros((M, J))
    rng = np.random.default_rng(seed)
    for m in order:
        fits = runnable[m] & (free >= problem.scale_factor[m])
        if not fits.any():
            break
        candidates = np.flatnonzero(fits)
        if agnostic:
            j = rng.choice(candidates)
        else:
            j = candidates[np.argmax(problem.throughput[m, candidates])]
        X[m, j] = 1.0
        free[j] -= problem.scale_factor[m]
    return _baseline(X, "greedy", order="arrival")
