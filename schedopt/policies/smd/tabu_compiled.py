"""The tabu search of `repack.relieve`, compiled with numba (imported by `jit.load` only): the
same iterations, the same random draws in the same order and the same floating-point
operations in the same order, so it returns the same counts bit for bit and leaves the random
generator in the same state (tests/test_smd_compiled.py replays searches through both). The
numpy version spends most of an iteration in the overhead of 20-odd small array calls; here
an iteration is a few loops over the tasks of one machine.
"""

from __future__ import annotations

import numpy as np

from schedopt.policies.smd.jit import njit
from schedopt.policies.smd.repack import LOWERS, TIE_NOISE


@njit
def relieve(counts, room, inverse, over, demand_t, unit, iterations, rng, tenure, weight_step):
    """In place on counts (K, H) int64, room (R, H), inverse (R, H) and over (H,): True when
    nothing overflows within `iterations`, False otherwise (also when every move is tabu)."""
    kinds_total, H = counts.shape
    R = room.shape[0]
    tabu = np.zeros((kinds_total, H), dtype=np.int64)
    kinds = np.empty(kinds_total * H, dtype=np.int64)
    machines = np.empty(kinds_total * H, dtype=np.int64)
    hot = np.empty(H, dtype=np.int64)
    empty = demand_t.shape[1] - 1  # the all-zero column: "no task"
    for it in range(iterations):
        n_hot = 0
        for c in range(H):
            if over[c] > 0:
                hot[n_hot] = c
                n_hot += 1
        if n_hot == 0:
            return True
        n_tasks = 0
        for u in range(kinds_total):
            for c in range(H):
                if counts[u, c] != 0:
                    kinds[n_tasks] = u
                    machines[n_tasks] = c
                    n_tasks += 1
        h = hot[rng.integers(0, n_hot)]
        n_mine = 0
        for k in range(n_tasks):
            if machines[k] == h:
                n_mine += 1
        mine = np.empty(n_mine, dtype=np.int64)
        j = 0
        for k in range(n_tasks):
            if machines[k] == h:
                mine[j] = kinds[k]
                j += 1
        n_moved = n_mine * H
        scores = np.empty(n_moved + n_mine * n_tasks)
        for a in range(n_mine):
            u = mine[a]
            # machine h without this task: its overflow with nothing, or with a task of kind v
            off_none = 0.0
            for r in range(R):
                x = demand_t[r, empty] + (room[r, h] - demand_t[r, u])
                off_none += max(x, 0.0) * inverse[r, h]
            for c in range(H):
                s = 0.0
                for r in range(R):
                    x = room[r, c] + demand_t[r, u]
                    s += max(x, 0.0) * inverse[r, c]
                score = ((off_none - over[h]) + s) - over[c]
                if c == h or (tabu[u, c] > it and score >= LOWERS):
                    score = np.inf
                scores[a * H + c] = score
            for k in range(n_tasks):
                c = machines[k]
                v = kinds[k]
                s = 0.0
                off = 0.0
                for r in range(R):
                    x = (room[r, c] - demand_t[r, v]) + demand_t[r, u]
                    s += max(x, 0.0) * inverse[r, c]
                    y = demand_t[r, v] + (room[r, h] - demand_t[r, u])
                    off += max(y, 0.0) * inverse[r, h]
                score = ((off - over[h]) + s) - over[c]
                if c == h or u == v or ((tabu[u, c] > it or tabu[v, h] > it)
                                        and score >= LOWERS):
                    score = np.inf
                scores[n_moved + a * n_tasks + k] = score
        noise = rng.random(scores.size)
        pick = 0
        best = np.inf
        for i in range(scores.size):
            value = noise[i] * TIE_NOISE + scores[i]
            if value < best:
                best = value
                pick = i
        if not np.isfinite(scores[pick]):
            return False
        if pick < n_moved:
            row, to = pick // H, pick % H
            n_changes = 1
        else:
            row, col = (pick - n_moved) // n_tasks, (pick - n_moved) % n_tasks
            to = machines[col]
            n_changes = 2
        for change in range(n_changes):
            if change == 0:
                u, a_from, b_to = mine[row], h, to
            else:
                u, a_from, b_to = kinds[col], to, h
            counts[u, a_from] -= 1
            counts[u, b_to] += 1
            for r in range(R):
                room[r, a_from] -= demand_t[r, u]
                room[r, b_to] += demand_t[r, u]
            tabu[u, a_from] = it + tenure + rng.integers(0, 3)
        for c in range(H):
            total = 0.0
            for r in range(R):
                excess = max(room[r, c], 0.0)
                if excess > 0:
                    inverse[r, c] += weight_step * unit[r, c]
                total += excess * inverse[r, c]
            over[c] = total
    for c in range(H):
        if over[c] > 0:
            return False
    return True
