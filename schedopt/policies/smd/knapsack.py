"""The knapsack step of SMD (docs/smd.md) and the local search after it.

`resource_prices`: Lagrangian multipliers of the cluster's total resources in the relaxed
multiple-choice knapsack (the decomposition of SMD's parametric problem into one choice per
job). `knapsack_step`: configurations upgraded greedily by (cost decrease) / (priced extra
resources) (Toyoda's effective gradient with Lagrangian weights), each upgrade placed on the
machines at once. `exchange_pass`: SMD's last step, a local search on the true completion
times. All of it is numpy work on a few machines x resources per move.
"""

from __future__ import annotations

import heapq

import numpy as np

from schedopt.policies.smd.model import SmdProblem
from schedopt.policies.smd.packing import BIG, SEARCH_TASKS, TOL, Packing, pack_counts

# search nodes the placement searches of exchange passes may take together (small problems;
# about 0.5 CPU s): a search that would have to prove a repack impossible may take its full
# SEARCH_NODES, and a pass tries hundreds of repacks
REPACK_NODES = 20_000


def resource_prices(cost: np.ndarray, shares: np.ndarray, allowed: np.ndarray,
                    start: np.ndarray | None = None, iterations: int = 30) -> np.ndarray:
    """Lagrangian multipliers mu (R,) of the cluster-total capacities in the relaxation
    min sum_i min_k cost[i, k] + mu . (shares[i, k] - 1/n): the dual of the multiple-choice
    knapsack, maximized by projected subgradient steps (each a vectorized argmin over every job's
    allowed configurations; the best dual value's mu is kept). shares (n, K, R) are
    configuration demands divided by the cluster totals, so mu is in cost units per cluster."""
    n, K, R = shares.shape
    F = np.where(allowed, cost, np.inf)
    spread = np.where(allowed, F - F.min(axis=1, keepdims=True), 0.0).max(axis=1).sum()
    mu = np.zeros(R) if start is None else start.copy()
    rows, best, best_mu, flat = np.arange(n), -np.inf, mu, shares.reshape(n * K, R)
    for t in range(iterations):
        L = F + (flat @ mu).reshape(n, K)
        k = np.argmin(L, axis=1)
        value = L[rows, k].sum() - mu.sum()
        if value > best:
            best, best_mu = value, mu.copy()
        over = shares[rows, k].sum(axis=0) - 1.0
        norm = np.linalg.norm(over)
        if norm == 0 or spread == 0:
            break
        mu = np.maximum(0.0, mu + spread / ((t + 1) ** 0.7 * np.sqrt(n)) * over / norm)
    return best_mu


def knapsack_step(pack: Packing, workers: np.ndarray, ps: np.ndarray, allowed: np.ndarray,
                  cost: np.ndarray, state_cost: np.ndarray, worker_size: np.ndarray,
                  ps_size: np.ndarray) -> Packing:
    """Greedy multiple-choice knapsack from `pack` (changed in place and returned): job i moves
    up from its current (w, p) to an allowed configuration k (workers[i, k] >= w,
    ps[i, k] >= p) with the largest efficiency (state_cost[i] - cost[i, k]) / size, size =
    extra workers x worker_size[i] + extra PSs x ps_size[i] (priced resources), placed at once;
    a move that does not fit is dropped and the job's next best is considered. Lazy: a job's
    best move is recomputed only after it moves or fails (efficiencies never change otherwise)."""
    n = workers.shape[0]
    blocked = ~allowed
    version = np.zeros(n, dtype=np.int64)
    current = state_cost.astype(float).copy()
    heap: list = []

    def push(i: int) -> None:
        w0, p0 = pack.w[i], pack.p[i]
        gain = current[i] - cost[i]
        ok = ~blocked[i] & (workers[i] >= w0) & (ps[i] >= p0) & (gain > 1e-12 * abs(current[i]))
        if not ok.any():
            return
        room_w, room_p = pack.room(i)
        dw, dp = workers[i] - w0, ps[i] - p0
        ok &= (dw <= room_w) & (dp <= room_p)
        if not ok.any():
            return
        efficiency = np.where(ok, gain / np.maximum(dw * worker_size[i] + dp * ps_size[i], 1e-300),
                              -np.inf)
        k = int(np.argmax(efficiency))
        heapq.heappush(heap, (-efficiency[k], i, k, version[i]))

    for i in range(n):
        push(i)
    while heap:
        _, i, k, v = heapq.heappop(heap)
        if v != version[i]:
            continue
        version[i] += 1
        if pack.add(i, int(workers[i, k] - pack.w[i]), int(ps[i, k] - pack.p[i])):
            current[i] = cost[i, k]
        else:
            blocked[i, k] = True
        push(i)
    return pack


def exchange_pass(problem: SmdProblem, pack: Packing, workers: np.ndarray, ps: np.ndarray,
                  time: np.ndarray, rounds: int = 3, max_trials: int | None = None,
                  sizes: tuple[np.ndarray, np.ndarray] | None = None,
                  nodes_left: list[int] | None = None) -> Packing:
    """Local search on the true completion times from `pack` (left unchanged; the result is
    returned). Move 1: a job's tasks are all taken off and it takes its fastest configuration
    that fits what is left (which also moves its tasks; in small problems, see SEARCH_TASKS,
    every task may be repacked, all searches within nodes_left[0] nodes together, lowered as
    they take them; default REPACK_NODES). Move 2: job j
    steps down to one of its three fastest configurations with fewer tasks, then job i is refitted as in move 1; kept only when i
    gains more than j loses (in small problems j may step down to any smaller configuration).
    Only moves that the cluster's totals allow are tried (a vectorized check), jobs with the
    most to gain first, partners by smallest loss; a round without an improving move ends the
    search; at most `max_trials` pair moves per round (default 4 n, small problems 200 n).
    Move 3, tried when no other move improved a round: an ejection chain (`_eject`), several
    partners stepping down at once for one job's faster configuration. Move 4, in small
    problems with `sizes` (the priced worker and PS sizes of `knapsack_step`) when nothing else
    improved: one job steps down (its three least costly smaller configurations) and the
    knapsack step refills the cluster from there."""
    best = pack.copy()
    n = workers.shape[0]
    if n == 0:
        return best
    order_t = np.argsort(time, axis=1, kind="stable")  # each job's configurations, fastest first
    finite = np.isfinite(time)
    demand = workers[:, :, None] * best.a[:, None, :] + ps[:, :, None] * best.b[:, None, :]
    small = int(workers.max(axis=1, initial=0).sum() + ps.max(axis=1, initial=0).sum()) <= SEARCH_TASKS
    budget = (200 * n if small else 4 * n) if max_trials is None else max_trials
    options = workers.shape[1] if small else 3  # step-downs of a partner tried
    tried: dict[bytes, Packing | None] = {}  # repacks already searched, by (w, p)
    nodes_left = [REPACK_NODES] if nodes_left is None else nodes_left

    def repack(w: np.ndarray, p: np.ndarray) -> Packing | None:
        key = np.concatenate([w, p]).astype(np.int64).tobytes()
        if key not in tried:
            tried[key] = pack_counts(problem, w, p, budget=nodes_left)
        found = tried[key]
        return None if found is None else found.copy()

    def refit(pk: Packing, i: int, limit: float) -> Packing | None:
        """Job i (taken off `pk`) with its fastest configuration faster than `limit` that fits
        next to the others' tasks (or, in small problems, with every task repacked)."""
        room_w, room_p = pk.room(i)
        left = np.minimum(pk.left, BIG).sum(axis=0)
        for k in order_t[i]:
            if not time[i, k] < limit:
                return None
            if (demand[i, k] > left + TOL).any() \
                    or not small and (workers[i, k] > room_w or ps[i, k] > room_p):
                continue  # cannot fit: more than the cluster has left, or than machines hold
            trial = pk.copy()
            if trial.add(i, int(workers[i, k]), int(ps[i, k])):
                return trial
            if small:
                w, p = pk.w.copy(), pk.p.copy()
                w[i], p[i] = workers[i, k], ps[i, k]
                trial = repack(w, p)
                if trial is not None:
                    return trial
        return None

    def state(pk: Packing):
        """Completion times, each job's own resources, the cluster's resources left."""
        own = pk.w[:, None] * pk.a + pk.p[:, None] * pk.b
        return problem.completion_time(pk.w, pk.p), own, np.minimum(pk.left, BIG).sum(axis=0)

    for _ in range(rounds):
        improved = False
        current, own, left = state(best)
        # move 1, for the jobs with a faster configuration within their own resources + left
        can = (finite & (time < current[:, None] * (1 - 1e-12))
               & (demand <= (own + left)[:, None, :] + TOL).all(axis=2)).any(axis=1)
        for i in np.flatnonzero(can)[np.argsort(-(current[can] - time[can].min(axis=1)))].tolist():
            trial = best.copy()
            trial.remove(i, int(trial.w[i]), int(trial.p[i]))
            trial = refit(trial, i, current[i] * (1 - 1e-12))
            if trial is not None:
                best, improved = trial, True
                current, own, left = state(best)
        # move 2: partners' step-downs (the three fastest configurations with fewer tasks)
        trials = 0
        for i in np.argsort(time.min(axis=1) - current, kind="stable").tolist():
            if trials >= budget or current[i] <= time[i].min():
                break
            smaller = (finite & (workers <= best.w[:, None]) & (ps <= best.p[:, None])
                       & ((workers < best.w[:, None]) | (ps < best.p[:, None])))
            smaller[i] = False
            cand = np.argsort(np.where(smaller, time, np.inf), axis=1, kind="stable")[:, :options]
            loss = np.take_along_axis(np.where(smaller, time, np.inf), cand, axis=1) - current[:, None]
            freed = own[:, None, :] - np.take_along_axis(demand, cand[:, :, None], axis=1)
            # (j, option) pairs after which some faster configuration of i fits the totals
            room = own[i] + left + freed  # (n, options, R)
            faster = finite[i] & (time[i] < current[i])
            fits = (demand[i][faster][None, None, :, :] <= room[:, :, None, :] + TOL).all(axis=3)
            ok = np.isfinite(loss) & (loss < current[i] - time[i].min()) & fits.any(axis=2)
            for j, o in sorted(zip(*np.nonzero(ok)), key=lambda jo: loss[jo]):
                if trials >= budget:
                    break
                trials += 1
                trial, k = best.copy(), int(cand[j, o])
                trial.remove(int(j), int(trial.w[j] - workers[j, k]), int(trial.p[j] - ps[j, k]))
                trial.remove(i, int(trial.w[i]), int(trial.p[i]))
                trial = refit(trial, i, (current[i] - loss[j, o]) * (1 - 1e-12))
                if trial is not None:
                    best, improved = trial, True
                    current, own, left = state(best)
                    break
        # move 3 (ejection chain): several partners step down until i's faster configuration
        # fits the totals, smallest loss per unit of the missing resources first
        for i in np.argsort(time.min(axis=1) - current, kind="stable").tolist():
            if improved or trials >= budget or current[i] <= time[i].min():
                break
            moved = _eject(problem, best, i, workers, ps, time, demand, current, own, left,
                           order_t[i], repack if small else None)
            trials += 1
            if moved is not None:
                best, improved = moved, True
                current, own, left = state(best)
        if not improved and small and sizes is not None:
            best, improved = _refill(problem, best, workers, ps, time, sizes)
        if not improved:
            break
    return best


def _refill(problem: SmdProblem, pack: Packing, workers, ps, time,
            sizes: tuple[np.ndarray, np.ndarray]) -> tuple[Packing, bool]:
    """Move 4 of `exchange_pass`: (the better packing, whether it improved)."""
    finite = np.isfinite(time)
    total = problem.completion_time(pack.w, pack.p).sum()
    for j in range(workers.shape[0]):
        smaller = (finite[j] & (workers[j] <= pack.w[j]) & (ps[j] <= pack.p[j])
                   & ((workers[j] < pack.w[j]) | (ps[j] < pack.p[j])))
        for k in np.flatnonzero(smaller)[np.argsort(time[j, smaller], kind="stable")][:3].tolist():
            trial = pack.copy()
            trial.remove(j, int(trial.w[j] - workers[j, k]), int(trial.p[j] - ps[j, k]))
            trial = knapsack_step(trial, workers, ps, finite, np.where(finite, time, np.inf),
                                  problem.completion_time(trial.w, trial.p), *sizes)
            if problem.completion_time(trial.w, trial.p).sum() < total * (1 - 1e-12):
                return trial, True
    return pack, False


def _eject(problem: SmdProblem, pack: Packing, i: int, workers, ps, time, demand, current, own,
           left, order, repack) -> Packing | None:
    """Move 3 of `exchange_pass` for job i: for each of its configurations faster than now
    (fastest first; the five fastest unless the problem is small), partners j step down, one step at a time to the configuration with the
    least extra loss per unit of the still-missing resources it frees (a partner may step
    down again, further), until the cluster's totals hold i's configuration while the losses
    stay below i's gain; then the tasks are placed (partners' removed tasks off first; small
    problems repack everything). The first that places wins."""
    scale = problem.total_capacity()
    rows = np.arange(workers.shape[0])
    finite = np.isfinite(time)
    loss = time - current[:, None]
    tries = None if repack is not None else 5  # small problems: every faster configuration
    for k in [k for k in order if time[i, k] < current[i] * (1 - 1e-12)][:tries]:
        missing = demand[i, k] - own[i] - left
        budget = current[i] - time[i, k]
        w, p = pack.w.copy(), pack.p.copy()  # partners' configurations so far
        now_loss = np.zeros(rows.size)
        now_demand = own.copy()
        while (missing > TOL).any():
            smaller = (finite & (workers <= w[:, None]) & (ps <= p[:, None])
                       & ((workers < w[:, None]) | (ps < p[:, None])))
            smaller[i] = False
            extra = loss - now_loss[:, None]  # (n, K) further loss of stepping down to k
            freed = now_demand[:, None, :] - demand  # (n, K, R) further resources freed
            cover = (np.maximum(np.minimum(freed, np.maximum(missing, 0)), 0) / scale).sum(axis=2)
            ok = smaller & (cover > 0) & (extra < budget)
            if not ok.any():
                break
            j, kj = np.unravel_index(np.argmin(np.where(ok, extra / np.maximum(cover, 1e-300),
                                                        np.inf)), ok.shape)
            budget -= extra[j, kj]
            missing = missing - freed[j, kj]
            w[j], p[j] = workers[j, kj], ps[j, kj]
            now_loss[j], now_demand[j] = loss[j, kj], demand[j, kj]
        if (missing > TOL).any() or budget <= 0:
            continue
        w[i], p[i] = workers[i, k], ps[i, k]
        trial = pack.copy()
        for j in np.flatnonzero((w != pack.w) | (p != pack.p)).tolist():
            trial.remove(j, int(trial.w[j] - (w[j] if j != i else 0)),
                         int(trial.p[j] - (p[j] if j != i else 0)))
        if trial.add(i, int(w[i]), int(p[i])):
            return trial
        if repack is not None:
            trial = repack(w, p)
            if trial is not None:
                return trial
    return None
