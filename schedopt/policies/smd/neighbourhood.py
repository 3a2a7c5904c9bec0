"""Large-neighbourhood search over smd_exact's MILP, seeded by a placement (docs/smd.md, "Beyond
the paper"): where the NIC, cores or memory bind, the optimum packs machines more tightly than
the numpy rules, and a small exact sub-problem finds such packings.

Each step frees 2-4 machines: every job with a task on one of them loses *all* its tasks (at
most `max_jobs` such jobs, drawn at random when more), the other jobs stay where they are. What
the other jobs leave of each machine's resources is the capacity of a sub-problem over the
freed jobs alone (`SmdProblem.restrict`) on the machines they were on plus EXTRA_HOSTS random
ones with room for one of their tasks. Its MILP (`schedopt.policies.smd.milp`, the rows of
smd_exact) goes to CP-SAT with the freed jobs' current placement as a hint, one thread, at most
`step_work` units of CP-SAT's deterministic time (`schedopt.policies.smd.cpsat`: the same answer
whatever the machine's load); its answer replaces that placement when their sum of completion times
falls, so the incumbent never gets worse. Half of these steps include a machine with a free
GPU (a GPU nobody can use is what a tighter packing turns into workers).

Given the LP relaxation's placement (`guide`), every second step is guided by it instead: the
first freed job is drawn with probability proportional to how far its placement lies from the
LP's (summed over machines, |tasks - LP tasks|), the others are jobs with tasks on one or two of
the machines where it or the LP has it. Where the LP puts a job is a hint of where a tighter
packing needs it; at equal steps these steps lower the objective more than the random ones
(docs/smd.md).

CP-SAT is the `ortools` extra; without it the search does nothing (`skipped`). Measured at
26-60 jobs: a step's sub-problem has 5 jobs x (configurations + 2 x machines) columns, about
150-250, and CP-SAT solves it to optimality in about 8 ms of CPU time on average with its
presolve left out, a third of the time with it, at the same optima (docs/smd.md).
"""

from __future__ import annotations

import time

import numpy as np

from schedopt.errors import SolveError
from schedopt.policies.smd import cpsat
from schedopt.policies.smd.milp import exact_program
from schedopt.policies.smd.model import Placement, SmdProblem

MAX_JOBS = 5  # jobs freed per step
STEP_WORK = 1.0  # CP-SAT deterministic time per step (a safety: steps take 2-17 ms CPU)
EXTRA_HOSTS = 2  # machines a step may move freed tasks to beyond those they were on


def _neighbourhood(problem: SmdProblem, X: np.ndarray, Y: np.ndarray, left: np.ndarray,
                   rng: np.random.Generator, max_jobs: int) -> np.ndarray:
    """Indices of the jobs a step frees (module docstring)."""
    H = X.shape[1]
    count = int(rng.integers(2, 5))
    spare = np.flatnonzero(left[:, 0] >= 1 - 1e-9)
    first = [int(rng.choice(spare))] if spare.size and rng.random() < 0.5 else []
    others = rng.permutation(np.setdiff1d(np.arange(H), first))[: max(count - len(first), 0)]
    machines = np.concatenate([np.asarray(first, dtype=np.int64), others])
    jobs = np.flatnonzero((X[:, machines] + Y[:, machines]).sum(axis=1) > 0)
    if jobs.size > max_jobs:
        jobs = np.sort(rng.choice(jobs, size=max_jobs, replace=False))
    return jobs


def _guided(X: np.ndarray, Y: np.ndarray, guide: tuple[np.ndarray, np.ndarray],
            rng: np.random.Generator, max_jobs: int) -> np.ndarray:
    """Indices of the jobs a guided step frees: one job drawn with probability proportional to
    how far its placement lies from the LP relaxation's (sum over machines of |tasks - LP
    tasks|), then the jobs with tasks on 1-2 of the machines where it or the LP has it."""
    gx, gy = guide
    far = np.abs(X - gx).sum(axis=1) + np.abs(Y - gy).sum(axis=1)
    if not far.sum() > 0:
        return np.zeros(0, dtype=np.int64)
    i = int(rng.choice(far.size, p=far / far.sum()))
    near = np.flatnonzero((X[i] + Y[i] > 0) | (gx[i] + gy[i] > 0.5))
    machines = rng.choice(near, size=min(near.size, int(rng.integers(1, 3))), replace=False)
    others = np.setdiff1d(np.flatnonzero((X[:, machines] + Y[:, machines]).sum(axis=1) > 0), [i])
    others = rng.permutation(others)[: max_jobs - 1]
    return np.sort(np.concatenate([[i], others]).astype(np.int64))


def improve(problem: SmdProblem, placement: Placement, steps: int, seed: int = 0,
            max_jobs: int = MAX_JOBS, step_work: float = STEP_WORK,
            time_limit: float = np.inf, target: float = -np.inf,
            guide: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[Placement, dict]:
    """The search of the module docstring from `placement`: `steps` steps, fewer when
    `time_limit` seconds of CPU time pass first or once the objective is within 1e-9 of
    `target` (a lower bound). Every step is limited by CP-SAT's deterministic time
    (`step_work`), so with `time_limit` (a CPU-time safety cap) not reached, a fixed seed gives
    the same answer on every run, whatever the machine's load. Returns the best
    placement and statistics: steps, improved (steps that lowered the objective), solved
    (steps CP-SAT solved to optimality), seconds (wall), trace ((CPU seconds since the start,
    objective in seconds) as each step begins, and at the end), and `skipped` ("no solver") when
    CP-SAT is missing. guide: the LP relaxation's (workers, PSs) per job and machine (n, H),
    fractional; None leaves the guided steps out."""
    clock, cpu = time.perf_counter(), time.process_time()
    X, Y = placement.workers.copy(), placement.ps.copy()
    n = X.shape[0]
    stats = {"steps": 0, "improved": 0, "solved": 0, "seconds": 0.0, "trace": []}
    if n == 0 or steps <= 0:
        return placement, stats
    rng = np.random.default_rng(seed)
    times = problem.completion_time(X.sum(axis=1), Y.sum(axis=1))
    finite = np.isfinite(problem.capacity)
    while stats["steps"] < steps and time.process_time() - cpu < time_limit \
            and times.sum() > target * (1 + 1e-9):
        stats["trace"].append((time.process_time() - cpu, float(times.sum())))
        left = np.where(finite, problem.capacity - problem.usage(X, Y), np.inf)
        stats["steps"] += 1
        if guide is not None and stats["steps"] % 2 == 0:
            jobs = _guided(X, Y, guide, rng, max_jobs)
        else:
            jobs = _neighbourhood(problem, X, Y, left, rng, max_jobs)
        if jobs.size == 0:
            continue
        kept = np.ones(n, dtype=bool)
        kept[jobs] = False
        room = problem.capacity - problem.usage(X * kept[:, None], Y * kept[:, None])
        room = np.where(finite, np.maximum(room, 0.0), np.inf)
        # the machines the freed jobs were on, and EXTRA_HOSTS more with room for one of their
        # tasks (machines a sub-problem spans cost CP-SAT more than jobs do)
        on = (X[jobs] + Y[jobs]).sum(axis=0) > 0
        room_for = ((room[None] >= problem.worker_demand[jobs][:, None] - 1e-9).all(axis=2)
                    | (room[None] >= problem.ps_demand[jobs][:, None] - 1e-9).all(axis=2)).any(axis=0)
        extra = np.flatnonzero(room_for & ~on)
        extra = rng.choice(extra, size=min(extra.size, EXTRA_HOSTS), replace=False)
        hosts = np.union1d(np.flatnonzero(on), extra)
        sub = problem.restrict(jobs, hosts, room[hosts])
        cfg = sub.configurations()
        program = exact_program(sub, cfg, symmetry=False)
        hint = program.start(cfg, Placement(X[np.ix_(jobs, hosts)], Y[np.ix_(jobs, hosts)]))
        try:
            result = cpsat.solve(program.lp, step_work, hint, presolve=False)
        except SolveError:
            stats["skipped"] = "no solver"
            break
        stats["solved"] += result.status.value == "optimal"
        if not result.status.has_solution:
            continue
        x = np.rint(result.x).astype(np.int64)
        sx, sy = x[program.x.columns].reshape(program.x.shape), x[program.y.columns].reshape(program.y.shape)
        new = sub.completion_time(sx.sum(axis=1), sy.sum(axis=1))
        if new.sum() < times[jobs].sum() * (1 - 1e-9):
            X[jobs], Y[jobs] = 0, 0
            X[np.ix_(jobs, hosts)], Y[np.ix_(jobs, hosts)] = sx, sy
            times[jobs] = new
            stats["improved"] += 1
    stats["trace"].append((time.process_time() - cpu, float(times.sum())))
    stats["seconds"] = time.perf_counter() - clock
    return Placement(X, Y), stats
