"""One more task for one job, placed by CP-SAT (docs/smd.md, "Beyond the paper"): the step the
searches before it miss where a job's extra worker or PS fits only once several other jobs'
tasks move across machines (mixed and CPU-bound clusters). Each try takes the job and
configuration with one task more (workers and PSs each at least the job's current ones) that
lowers the job's completion time most, and asks CP-SAT to place every job's configuration with
that one changed (`schedopt.policies.smd.repair.place`, the whole cluster, no objective, at
most `work` units of deterministic time). A placement is kept at once: only that job's time
changes, and it falls. A pair that could not be placed is not tried again, and a pair whose
extra task exceeds what the cluster has left in total of a resource is ruled out without a
try (no CP-SAT call).
"""

from __future__ import annotations

import numpy as np

from schedopt.policies.smd.milp import ExactProgram
from schedopt.policies.smd.model import Configurations, Placement, SmdProblem
from schedopt.policies.smd.repair import place


def upgrade(problem: SmdProblem, cfg: Configurations, program: ExactProgram,
            placement: Placement, tries: int, work: float) -> tuple[Placement, dict]:
    """The tries of the module docstring from `placement`, at most `tries` CP-SAT calls of
    `work` deterministic units each, on `program` (smd_exact's MILP of `problem`, without
    symmetry rows). Returns the placement and statistics: tries, placed."""
    stats = {"tries": 0, "placed": 0}
    w, p = placement.total_workers, placement.total_ps
    match = cfg.valid & (cfg.workers == w[:, None]) & (cfg.ps == p[:, None])
    if problem.num_jobs == 0 or not match.any(axis=1).all():
        return placement, stats
    rows, choice = np.arange(problem.num_jobs), match.argmax(axis=1)
    T = np.where(cfg.valid, cfg.time, np.inf)
    failed = np.zeros(cfg.valid.shape, dtype=bool)
    demand = cfg.demand(problem)  # (n, K, R)
    limited = np.isfinite(problem.capacity).all(axis=0)
    total = problem.capacity[:, limited].sum(axis=0)
    while stats["tries"] < tries:
        W, P = cfg.workers[rows, choice], cfg.ps[rows, choice]
        held = demand[rows, choice][:, limited]  # (n, R')
        left = total - held.sum(axis=0)
        room = ((demand[:, :, limited] - held[:, None, :]) <= left + 1e-9).all(axis=2)
        larger = cfg.valid & ~failed & room & (cfg.workers >= W[:, None]) \
            & (cfg.ps >= P[:, None]) & (cfg.workers + cfg.ps == (W + P + 1)[:, None])
        gain = np.where(larger, T[rows, choice][:, None] - T, -np.inf)
        i, k = np.unravel_index(int(np.argmax(gain)), gain.shape)
        if not gain[i, k] > 0:
            break
        trial = choice.copy()
        trial[i] = k
        stats["tries"] += 1
        placed, _ = place(program, trial, work)
        if placed is None:
            failed[i, k] = True
        else:
            placement, choice = placed, trial
            stats["placed"] += 1
    return placement, stats
