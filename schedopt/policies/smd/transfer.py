"""Task transfers, smd's last local search (docs/smd.md, "Beyond the paper"): numpy only.

A transfer takes one task (a worker or a PS) of job i off machine h and puts one task of
another job j (a worker or a PS) in the room that leaves there, when the sum of completion
times falls: T_i rises by less than T_j falls. When no transfer helps, an exchange takes two
tasks off one machine (of one job or of two) for one task of a third job that needs the room
of both. Tasks that shorten nothing are dropped first (a job's (w, p) can end up dominated
after the searches before). Every candidate (machine, giving job, taking job, the four kinds)
is scored at once; the best one is made, and the scores are recomputed, until none lowers
the sum. The searches before move tasks in groups
(ruin and recreate, CP-SAT neighbourhoods of whole machines); a single profitable swap between
two jobs on a machine that neither group covers is what this step finds: on mixed instance 13
of the regimes benchmark, one worker of a job at (2, 1) handed to a job at (3, 3) on the
machine it sits on lowers the sum by 9,115 s (1.6%).
"""

from __future__ import annotations

import numpy as np

from schedopt.policies.smd.model import Placement, SmdProblem

TOLERANCE = 1e-9  # a transfer must lower the sum by this share of it
MAX_TRANSFERS = 1000  # a bound on the loop (each transfer lowers the sum, so it ends anyway)


def _cheapest_take(problem: SmdProblem, room: np.ndarray, given: np.ndarray,
                   allowed: np.ndarray, gain: tuple[np.ndarray, np.ndarray]
                   ) -> tuple[float, int, int, int] | None:
    """Over candidate removals (rows: the room (R,) each leaves on its machine and the rise
    of the sum it costs, s) and taking jobs (`allowed` (rows, n)), the one task added that
    lowers the sum most: (change in s, row, kind taken, taking job), or None."""
    best = None
    for take, demand in enumerate((problem.worker_demand, problem.ps_demand)):
        fits = np.all(room[:, None, :] >= demand[None, :, :] - 1e-9, axis=2)
        change = np.where(fits & allowed, given[:, None] + gain[take][None, :], np.inf)
        k = int(np.argmin(change))
        value = float(change.flat[k])
        if np.isfinite(value) and (best is None or value < best[0]):
            row, j = divmod(k, problem.num_jobs)
            best = (value, row, take, j)
    return best


def _best_transfer(problem: SmdProblem, counts: tuple[np.ndarray, np.ndarray],
                   left: np.ndarray, loss: tuple[np.ndarray, np.ndarray],
                   gain: tuple[np.ndarray, np.ndarray]) -> tuple[float, tuple] | None:
    """The transfer (change of the sum in s; (kind given, giving job, machine, kind taken,
    taking job)) that lowers the sum most, or None."""
    demand = (problem.worker_demand, problem.ps_demand)
    best = None
    for give in (0, 1):
        jobs, machines = np.nonzero(counts[give])
        if jobs.size == 0:
            continue
        room = left[machines] + demand[give][jobs]  # (pairs, R) after the task leaves
        allowed = jobs[:, None] != np.arange(problem.num_jobs)
        found = _cheapest_take(problem, room, loss[give][jobs], allowed, gain)
        if found is not None and (best is None or found[0] < best[0]):
            value, pair, take, j = found
            best = (value, (give, int(jobs[pair]), int(machines[pair]), take, j))
    return best


def _joint_losses(problem: SmdProblem, w: np.ndarray, p: np.ndarray,
                  T: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each job's rise of completion time (s) from T = T(w, p) for two workers less, two PSs
    less, and one worker and one PS less (inf where that leaves it without a worker or a PS)."""
    ww = np.where(w > 2, problem.completion_time(np.maximum(w - 2, 1), p) - T, np.inf)
    pp = np.where(p > 2, problem.completion_time(w, np.maximum(p - 2, 1)) - T, np.inf)
    wp = np.where((w > 1) & (p > 1),
                  problem.completion_time(np.maximum(w - 1, 1), np.maximum(p - 1, 1)) - T, np.inf)
    return ww, pp, wp


def _best_exchange(problem: SmdProblem, counts: tuple[np.ndarray, np.ndarray],
                   left: np.ndarray, loss: tuple[np.ndarray, np.ndarray],
                   joint: tuple[np.ndarray, ...], gain: tuple[np.ndarray, np.ndarray]
                   ) -> tuple[float, tuple] | None:
    """The exchange of two tasks on one machine (of one job or two) for one task of a third
    job that lowers the sum most, as (change in s; (machine, (kind, job) given, (kind, job)
    given, kind taken, taking job)), or None. For a task too large for the room one task
    leaves."""
    demand = (problem.worker_demand, problem.ps_demand)
    n = problem.num_jobs
    best = None
    for h in range(problem.num_machines):
        with_w, with_p = np.flatnonzero(counts[0][:, h]), np.flatnonzero(counts[1][:, h])
        kinds = np.repeat([0, 1], [with_w.size, with_p.size])
        jobs = np.concatenate([with_w, with_p])
        held = np.concatenate([counts[0][with_w, h], counts[1][with_p, h]])
        first, second = np.triu_indices(jobs.size)
        keep = (first != second) | (held[first] >= 2)  # one slot twice: two of its tasks
        first, second = first[keep], second[keep]
        if first.size == 0:
            continue
        ka, kb, ia, ib = kinds[first], kinds[second], jobs[first], jobs[second]
        apart = np.where(ka == 0, loss[0][ia], loss[1][ia]) \
            + np.where(kb == 0, loss[0][ib], loss[1][ib])
        together = np.where(ka != kb, joint[2][ia], np.where(ka == 0, joint[0][ia], joint[1][ia]))
        room = (left[h] + demand[0][ia] * (ka == 0)[:, None] + demand[1][ia] * (ka == 1)[:, None]
                + demand[0][ib] * (kb == 0)[:, None] + demand[1][ib] * (kb == 1)[:, None])
        others = (np.arange(n)[None, :] != ia[:, None]) & (np.arange(n)[None, :] != ib[:, None])
        found = _cheapest_take(problem, room, np.where(ia == ib, together, apart), others, gain)
        if found is not None and (best is None or found[0] < best[0]):
            value, pair, take, j = found
            best = (value, (h, (int(ka[pair]), int(ia[pair])), (int(kb[pair]), int(ib[pair])),
                            take, j))
    return best


def transfer(problem: SmdProblem, placement: Placement) -> tuple[Placement, dict]:
    """The local search of the module docstring from `placement` (feasible); returns the
    placement it ends at (feasible, its sum of completion times never higher) and statistics
    (dropped: tasks that shortened nothing, transfers, exchanges: two tasks for one)."""
    workers, ps = placement.workers.copy(), placement.ps.copy()
    stats = {"dropped": 0, "transfers": 0, "exchanges": 0}
    while stats["transfers"] + stats["exchanges"] < MAX_TRANSFERS:
        w, p = workers.sum(axis=1), ps.sum(axis=1)
        T = problem.completion_time(w, p)
        fewer_w, fewer_p, more_w, more_p = problem.task_changes(w, p, T)
        useless = np.flatnonzero((fewer_w <= 0) | (fewer_p <= 0))
        if useless.size:  # a task that shortens nothing: off, from its last machine
            i = int(useless[0])
            counts = workers if fewer_w[i] <= 0 else ps
            counts[i, int(np.flatnonzero(counts[i])[-1])] -= 1
            stats["dropped"] += 1
            continue
        left = problem.capacity - problem.usage(workers, ps)
        enough = -TOLERANCE * float(T.sum())
        loss, gain = (fewer_w, fewer_p), (more_w, more_p)
        best = _best_transfer(problem, (workers, ps), left, loss, gain)
        if best is not None and best[0] < enough:
            give, i, h, take, j = best[1]
            (workers, ps)[give][i, h] -= 1
            (workers, ps)[take][j, h] += 1
            stats["transfers"] += 1
            continue
        best = _best_exchange(problem, (workers, ps), left, loss,
                              _joint_losses(problem, w, p, T), gain)
        if best is None or best[0] >= enough:
            break
        h, (ka, ia), (kb, ib), take, j = best[1]
        (workers, ps)[ka][ia, h] -= 1
        (workers, ps)[kb][ib, h] -= 1
        (workers, ps)[take][j, h] += 1
        stats["exchanges"] += 1
    return Placement(workers, ps), stats
