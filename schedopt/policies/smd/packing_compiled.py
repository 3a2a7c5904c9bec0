"""`Packing.room` and `Packing._add` compiled with numba (imported by `jit.load` only): the same rules, the same
floating-point operations in the same order, so the same placements bit for bit
(tests/test_smd_compiled.py). The numpy versions spend most of a call in the overhead of a
dozen small array operations on (machines, resources) arrays."""

from __future__ import annotations

import numpy as np

from schedopt.policies.smd.jit import njit
from schedopt.policies.smd.packing import TOL


@njit
def _room(left, inv, free, out):
    """out[h] = how many tasks of demand 1 / inv (free: BIG where not asked) fit on machine h
    with `left`: floor(min over resources of left * inv + free, + TOL)."""
    H, R = left.shape
    for h in range(H):
        m = left[h, 0] * inv[0] + free[0]
        for r in range(1, R):
            v = left[h, r] * inv[r] + free[r]
            if v < m:
                m = v
        out[h] = np.floor(m + TOL)


@njit
def room_sums(left, a_inv, a_free, b_inv, b_free):
    """(workers, PSs) of one job that fit, each counted alone (`Packing.room`)."""
    H = left.shape[0]
    out = np.empty(H)
    _room(left, a_inv, a_free, out)
    workers = out.sum()
    _room(left, b_inv, b_free, out)
    return workers, out.sum()


@njit
def _take(room, count, key):
    """As packing._take: integer amounts per machine, at most `room` each, summing to
    min(count, room's sum), machines with room by increasing `key` (stable)."""
    H = room.shape[0]
    out = np.zeros(H, dtype=np.int64)
    n_has = 0
    for h in range(H):
        if room[h] > 0:
            n_has += 1
    if count <= 0 or n_has == 0:
        return out
    has = np.empty(n_has, dtype=np.int64)
    keys = np.empty(n_has)
    j = 0
    for h in range(H):
        if room[h] > 0:
            has[j] = h
            keys[j] = key[h]
            j += 1
    for j in np.argsort(keys, kind="mergesort"):
        h = has[j]
        got = count if room[h] >= count else int(room[h])
        out[h] = got
        count -= got
        if count == 0:
            break
    return out


@njit
def add_tasks(left, workers, ps, w, p, i, dw, dp, a, b, a_inv, a_free, b_inv, b_free, reserve):
    """`Packing._add`: dw workers and dp PSs of job i placed by its rules; returns (placed,
    the new `left`). workers, ps, w, p change in place only when placed."""
    H, R = left.shape
    room = np.empty(H)
    y = np.zeros(H, dtype=np.int64)
    new = left.copy()
    if dp:
        _room(left, b_inv[i], b_free[i], room)
        if room.sum() < dp:
            return False, left
        beyond = np.empty((H, R))  # resources beyond what the free GPUs' workers would need
        for h in range(H):
            gpus = np.floor(left[h, 0] + TOL)
            for r in range(R):
                beyond[h, r] = left[h, r] - gpus * reserve[r]
        spare = np.empty(H)
        _room(beyond, b_inv[i], b_free[i], spare)
        for h in range(H):
            spare[h] = max(spare[h], 0.0)
        y = _take(spare, dp, -spare)
        placed = y.sum()
        if placed < dp:
            rest = room - y
            y += _take(rest, dp - placed, rest)
        for h in range(H):
            for r in range(R):
                new[h, r] = left[h, r] - y[h] * b[i, r]
    x = np.zeros(H, dtype=np.int64)
    if dw:
        _room(new, a_inv[i], a_free[i], room)
        if room.sum() < dw:
            return False, left
        x = _take(room, dw, room)
        for h in range(H):
            for r in range(R):
                new[h, r] = new[h, r] - x[h] * a[i, r]
        for h in range(H):
            workers[i, h] += x[h]
        w[i] += dw
    if dp:
        for h in range(H):
            ps[i, h] += y[h]
        p[i] += dp
    return True, new


@njit
def _covers(left, h, need, j):
    """left[h] >= need[j] - TOL on every resource."""
    for r in range(left.shape[1]):
        if not left[h, r] >= need[j, r] - TOL:
            return False
    return True


@njit
def relocation(left, d, workers, ps, a, b, a_size, b_size):
    """The search of `Packing._place_one` for a task of demand d that does not fit anywhere:
    (found, moved kind (0 worker, 1 PS), its job j, its machine h, fits (H,): the machines
    other than h it fits on). The candidate is, for each kind in turn, the first (job,
    machine) in row-major order with the least size among the tasks whose move frees what
    their machine lacks for d and that fit on another machine; a PS replaces a worker only
    when strictly smaller."""
    n, H = workers.shape
    R = left.shape[1]
    best_j, best_h, best_moved, best_size = -1, -1, -1, np.inf
    for moved in range(2):
        demand, counts, size = (b, ps, b_size) if moved else (a, workers, a_size)
        k_j, k_h, k_size = -1, -1, np.inf
        for j in range(n):
            for h in range(H):
                if counts[j, h] == 0:
                    continue
                frees = True
                for r in range(R):
                    if not demand[j, r] >= (d[r] - left[h, r]) - TOL:
                        frees = False
                        break
                if not frees:
                    continue
                fits_elsewhere = False
                for g in range(H):
                    if g != h and _covers(left, g, demand, j):
                        fits_elsewhere = True
                        break
                if fits_elsewhere and size[j] < k_size:
                    k_j, k_h, k_size = j, h, size[j]
        if k_j >= 0 and (best_j < 0 or k_size < best_size):
            best_j, best_h, best_moved, best_size = k_j, k_h, moved, k_size
    fits = np.zeros(H, dtype=np.bool_)
    if best_j < 0:
        return False, -1, -1, -1, fits
    demand = b if best_moved else a
    for g in range(H):
        fits[g] = g != best_h and _covers(left, g, demand, best_j)
    return True, best_moved, best_j, best_h, fits
