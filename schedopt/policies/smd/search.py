"""Ruin and recreate for SMD's placement (docs/smd.md, "Beyond the paper"): numpy only.

Each step takes the incumbent, *ruins* part of it — every task on a few machines, every task
beyond one worker and one PS of a few jobs, or the few tasks whose loss costs their jobs least
per priced size (a PS that barely shortens its job holds NIC, cores and memory that another
job's extra worker could use) — puts back one worker and one PS of every job that
lost all of one kind (moving another task if that is what makes room), and *recreates* with the
knapsack step (`knapsack_step`, configurations upgraded by gain per priced resource, with
relocation), its priced sizes randomly perturbed so that steps differ. The result replaces the
incumbent when its sum of completion times is lower. A step costs 5-30 ms at 20-60 jobs.
"""

from __future__ import annotations

import time

import numpy as np

from schedopt.policies.smd.knapsack import knapsack_step
from schedopt.policies.smd.model import Configurations, SmdProblem
from schedopt.policies.smd.packing import Packing

NOISE = 0.3  # priced sizes times U(1 - NOISE, 1 + NOISE) in a recreate
RELOCATE_UPGRADES = True  # whether a recreate's upgrades may move other tasks
PATIENCE = 15  # steps without an improvement after which the search stops
TRIM_SHARE = 1 / 3  # the share of ruins that trim the tasks least worth their room


def _trimmed(problem: SmdProblem, pack: Packing, sizes: tuple[np.ndarray, np.ndarray],
             rng: np.random.Generator) -> Packing | None:
    """A copy of `pack` without the 2-8 tasks whose loss is least worth their room: for each
    job, the rise of its completion time (s) when it gives up one worker, or one PS, divided by
    that task's priced size, times U(0.5, 1.5); jobs keep >= 1 worker and PS (None when no job
    has a task to spare)."""
    n = problem.num_jobs
    fewer_w, fewer_p, _, _ = problem.task_changes(pack.w, pack.p,
                                                  problem.completion_time(pack.w, pack.p))
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.concatenate([fewer_w / sizes[0], fewer_p / sizes[1]])
    loss = loss * rng.uniform(0.5, 1.5, 2 * n)
    pick = np.argsort(loss, kind="stable")[:int(rng.integers(2, 9))]
    pick = pick[np.isfinite(loss[pick])]
    if pick.size == 0:
        return None
    out = pack.copy()
    for j in pick.tolist():
        out.remove(j % n, int(j < n), int(j >= n))
    out.relocate = True
    return out


def _ruined(problem: SmdProblem, pack: Packing, sizes: tuple[np.ndarray, np.ndarray],
            rng: np.random.Generator) -> Packing | None:
    """A copy of `pack` with part of it taken off (a third of the time `_trimmed`) and every job
    back at >= 1 worker and PS (None when that cannot be placed)."""
    if rng.random() < TRIM_SHARE:
        return _trimmed(problem, pack, sizes, rng)
    n, H = pack.workers.shape
    workers, ps = pack.workers.copy(), pack.ps.copy()
    if rng.random() < 0.5:
        machines = rng.choice(H, size=min(H, int(rng.integers(1, 4))), replace=False)
        workers[:, machines] = 0
        ps[:, machines] = 0
    else:
        jobs = rng.choice(n, size=min(n, int(rng.integers(2, 7))), replace=False)
        for i in jobs.tolist():  # keep one worker and one PS where they are
            for counts in (workers, ps):
                row = counts[i]
                keep = int(rng.choice(np.flatnonzero(row))) if row.any() else None
                row[:] = 0
                if keep is not None:
                    row[keep] = 1
    out = Packing.of(problem, workers, ps)
    out.relocate = True
    lost_w, lost_p = out.w == 0, out.p == 0
    for i in np.flatnonzero(lost_w | lost_p)[rng.permutation(int((lost_w | lost_p).sum()))].tolist():
        if not out.add(i, int(lost_w[i]), int(lost_p[i])):
            return None
    return out


def ruin_and_recreate(problem: SmdProblem, cfg: Configurations, pack: Packing,
                      sizes: tuple[np.ndarray, np.ndarray], steps: int, time_limit: float,
                      seed: int = 0, target: float = -np.inf) -> tuple[Packing, dict]:
    """The search of the module docstring from `pack` for `steps` steps (fewer after PATIENCE
    steps without an improvement, when `time_limit` seconds of CPU time pass first, or once the objective
    is within 1e-9 of `target`, a lower bound). sizes: the priced worker and PS sizes of the knapsack step. Returns the best
    packing and statistics (steps, improving steps, seconds)."""
    clock, cpu = time.perf_counter(), time.process_time()
    rng = np.random.default_rng(seed)
    best = pack.copy()
    best.relocate = True
    value = float(problem.completion_time(best.w, best.p).sum())
    done = improved = last = 0
    while done < steps and done - last < PATIENCE and value > target * (1 + 1e-9) \
            and time.process_time() - cpu < time_limit:
        done += 1
        trial = _ruined(problem, best, sizes, rng)
        noise = rng.uniform(1 - NOISE, 1 + NOISE, size=(2, problem.num_jobs))
        if trial is None:
            continue
        trial.relocate = RELOCATE_UPGRADES
        trial = knapsack_step(trial, cfg.workers, cfg.ps, cfg.valid, cfg.time,
                              problem.completion_time(trial.w, trial.p),
                              sizes[0] * noise[0], sizes[1] * noise[1])
        got = float(problem.completion_time(trial.w, trial.p).sum())
        if got < value * (1 - 1e-12):
            best, value, last = trial, got, done
            improved += 1
    return best, {"steps": done, "improved": improved, "seconds": time.perf_counter() - clock}
