"""More tasks for one job, placed by CP-SAT (docs/smd.md, "Beyond the paper"): the step the
searches before it miss where a job's extra worker or PS fits only once several other jobs'
tasks move across machines (mixed and CPU-bound clusters). Each try takes the job and
configuration with one task more (workers and PSs each at least the job's current ones) that
lowers the job's completion time most, and asks CP-SAT to place every job's configuration with
that one changed (`schedopt.policies.smd.repair.place`, the whole cluster, no objective, at
most `work` units of deterministic time). A placement is kept at once: only that job's time
changes, and it falls.

A pair that could not be placed is not tried again. Once a job has no one-task step left to
try (each failed, was ruled out or does not lower its time), its step to one worker *and* one
PS more joins the candidates, ranked by its fall in time per task (half of it): where a lone
extra worker has no PS bandwidth to use, the two together may halve the job's time. Without a
call, a pair is ruled out when its extra tasks exceed what the cluster has left in total of a
resource, or when its fall in time exceeds the distance from the objective to `bound` (no
placement lies below a proven lower bound).
"""

from __future__ import annotations

import numpy as np

from schedopt.policies.smd.milp import ExactProgram
from schedopt.policies.smd.model import Configurations, Placement, SmdProblem
from schedopt.policies.smd.repair import place


def upgrade(problem: SmdProblem, cfg: Configurations, program: ExactProgram,
            placement: Placement, tries: int, work: float,
            bound: float = -np.inf) -> tuple[Placement, dict]:
    """The tries of the module docstring from `placement`, at most `tries` CP-SAT calls of
    `work` deterministic units each, on `program` (smd_exact's MILP of `problem`, without
    symmetry rows); `bound` a proven lower bound on the sum of completion times (s). Returns the
    placement and statistics: tries, placed."""
    stats = {"tries": 0, "placed": 0}
    w, p = placement.total_workers, placement.total_ps
    match = cfg.valid & (cfg.workers == w[:, None]) & (cfg.ps == p[:, None])
    if problem.num_jobs == 0 or not match.any(axis=1).all():
        return placement, stats
    rows, choice = np.arange(problem.num_jobs), match.argmax(axis=1)
    T = np.where(cfg.valid, cfg.time, np.inf)
    slack = float(T[rows, choice].sum()) - bound  # the objective's distance to the bound, s
    failed = np.zeros(cfg.valid.shape, dtype=bool)
    demand = cfg.demand(problem)  # (n, K, R)
    limited = np.isfinite(problem.capacity).all(axis=0)
    total = problem.capacity[:, limited].sum(axis=0)
    tasks = cfg.workers + cfg.ps
    while stats["tries"] < tries:
        W, P = cfg.workers[rows, choice], cfg.ps[rows, choice]
        held = demand[rows, choice][:, limited]  # (n, R')
        left = total - held.sum(axis=0)
        room = ((demand[:, :, limited] - held[:, None, :]) <= left + 1e-9).all(axis=2)
        fall = T[rows, choice][:, None] - T
        open_ = cfg.valid & ~failed & room & (fall > 0) & (fall <= slack * (1 + 1e-9))
        single = open_ & (cfg.workers >= W[:, None]) & (cfg.ps >= P[:, None]) \
            & (tasks == (W + P + 1)[:, None])
        both = open_ & (cfg.workers == (W + 1)[:, None]) & (cfg.ps == (P + 1)[:, None]) \
            & ~single.any(axis=1, keepdims=True)
        gain = np.where(single | both, fall, -np.inf)
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
            slack -= fall[i, k]
            stats["placed"] += 1
    return placement, stats
