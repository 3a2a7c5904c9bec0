"""One job's task more, the whole placement repacked by a tabu search (docs/smd.md, "Beyond the
paper"): numpy only.

Where the NIC or the cores bind, a job's extra worker often fits only once several other
tasks have moved between machines: the free room is there in total, but split. A step takes a
*change of counts* that lowers the sum of completion times, one task more for a job (a worker
or a PS), alone or with one task less for another job (or the other kind of the same job),
puts the new task on the machine it overflows least, and then looks for a placement of the new
counts: a tabu search over moves of one task to another machine and swaps of two tasks on two
machines, each iteration taking the move that lowers the total overflow most among those that
touch one overflowing machine, until nothing overflows. The overflow is relative to capacity
and weighted per machine and resource, summed; a weight grows by WEIGHT_STEP every iteration
its resource overflows on its machine (guided local search: where the same overflow persists,
the search is pushed to move something else). A move back is tabu for a few iterations
unless it lowers the weighted overflow. The placement found replaces the incumbent, whose sum
it lowers by construction.

Each change is tried at most once per incumbent: the HEAD with the largest falls in the sum
first, then the best remaining change of each added task kind, then the second best of each,
and so on (a job whose extra task cannot be placed would otherwise use up the patience with
one removal after another). One is ruled out without a search when the cluster's free
resources in total (with the removed task's) cannot hold the new task, or when its fall
exceeds the distance to a proven lower bound. After `patience` failed changes in a row,
up to COMPOUND compound changes are tried (`_compound_changes`: one job's worker, PS or both
more, for up to MAX_REMOVED tasks less of other jobs); the search goes on from the first one
placed, and stops when none is. A tabu iteration costs about 0.2 ms at 60 jobs in numpy, about
6x less compiled (`tabu_compiled`, `jit`).

The same tabu search places a given choice of counts from scratch (`tabu_placement`): smd
uses it for the Lagrangian bound's configuration choice where first fit fails.
"""

from __future__ import annotations

import time

import numpy as np

from schedopt.policies.smd import jit
from schedopt.policies.smd.model import Placement, SmdProblem

ITERATIONS = 120  # tabu iterations per change tried (60 before the loops were compiled; docs/smd.md)
PATIENCE = 24  # failed changes in a row after which the search stops (docs/smd.md)
HEAD = 12  # changes tried best first before the others are taken one added kind at a time
TENURE = 7  # iterations a move back stays tabu (plus 0-2 at random)
TOLERANCE = 1e-9  # capacity slack (absolute), as Placement.violations
POOL = 256  # task kinds paired at most on each side of a change (`_changes`)
PLACE_ITERATIONS = 200  # tabu iterations to place a given choice of counts (`tabu_placement`)
COMPOUND = 12  # compound changes tried once the single ones are spent (`_compound_changes`)
MAX_REMOVED = 3  # tasks of other jobs a compound change removes at most
DEEPEN = True  # compound changes with one removal more than their totals need (`_compound_changes`)
WEIGHT_STEP = 3.0  # added per iteration to the weight of each overflowing (machine, resource)
LOWERS = -1e-12  # a tabu move is allowed when its score (change of weighted overflow) is below
TIE_NOISE = 1e-12  # scale of the random noise that breaks ties between equal scores


def _overflow(load: np.ndarray, capacity: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Summed over the last axis (resources): how far `load` exceeds `capacity`, in shares of
    `scale`."""
    return (np.maximum(load - capacity, 0.0) / scale).sum(axis=-1)


class _Cluster:
    """The demands of the 2n task kinds (rows 0..n-1: job i's worker, n..2n-1: its PS) and the
    machines' capacities, with the scale the overflow is measured in."""

    def __init__(self, problem: SmdProblem):
        self.demand = np.concatenate([problem.worker_demand, problem.ps_demand])
        self.capacity = problem.capacity + TOLERANCE
        finite = np.isfinite(problem.capacity) & (problem.capacity > 0)
        self.scale = np.where(finite, problem.capacity, 1.0)
        # resource-major copies for `_overflows`; the last kind, all zeros, is "no task"
        self.demand_t = np.concatenate([self.demand, np.zeros((1, self.demand.shape[1]))]).T.copy()
        self.capacity_t = self.capacity.T.copy()
        self.unit_t = 1.0 / self.scale.T  # what an excess is multiplied by at weight 1
        # the kind and the machine of each entry of a flattened (2n, H) array of counts
        kinds, machines = self.demand.shape[0], self.capacity.shape[0]
        self.kind_of = np.repeat(np.arange(kinds), machines)
        self.machine_of = np.tile(np.arange(machines), kinds)

    def overflow(self, load: np.ndarray, machines=slice(None)) -> np.ndarray:
        return _overflow(load, self.capacity[machines], self.scale[machines])

    def least_overflow(self, load: np.ndarray, kind: int) -> int:
        """The machine whose overflow one more task of `kind` raises least."""
        return int(np.argmin(self.overflow(load + self.demand[kind]) - self.overflow(load)))


def _overflows(room: np.ndarray, added: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """(m, C): summed over resources r, max(room[r, c] + added[r, a], 0) * inverse[r, c], the
    overflow of load - capacity `room` (R, C) with a task of demand added[:, a] (R, m) on top,
    in units of 1 / inverse (R, C), or (R, 1) for one column shared by all. Resource-major, so
    that the resources are summed one (m, C) slab at a time instead of along a short last axis,
    and multiplied by the inverse of the scale rather than divided by it: the tabu search
    spends most of its time here."""
    load = room[:, None, :] + added[:, :, None]
    np.maximum(load, 0.0, out=load)
    load *= inverse[:, None, :]
    return load.sum(axis=0)  # slab by slab, in the order of the resources


def relieve(cluster: _Cluster, counts: np.ndarray, iterations: int,
            rng: np.random.Generator) -> np.ndarray | None:
    """The tabu search of the module docstring on task counts (2n, H) (one row per task kind);
    returns counts with no machine over capacity, or None after `iterations` without.

    The overflow is weighted per (machine, resource): each weight starts at 1 and grows by
    WEIGHT_STEP every iteration that resource overflows on that machine, so an overflow that
    persists costs more and the search moves on from it (guided local search). Zero weighted
    overflow is zero overflow, so what it returns is feasible.

    With numba installed the loop below runs compiled (`tabu_compiled`: the same result bit for
    bit, about 6x faster) once the process has run `jit.NUMPY_FIRST` iterations in numpy."""
    counts = counts.copy()
    DT = cluster.demand_t
    H = counts.shape[1]
    unit = cluster.unit_t  # (R, H)
    inverse = unit.copy()  # weight / scale: what an excess is multiplied by
    room = (counts.T @ cluster.demand).T - cluster.capacity_t  # load - capacity, (R, H)
    over = (np.maximum(room, 0.0) * inverse).sum(axis=0)
    compiled = jit.kernels()
    if compiled is not None:
        moved = counts.astype(np.int64, copy=False)  # counts is this call's own copy
        placed = compiled.relieve(moved, room, inverse, over, DT, unit, iterations, rng, TENURE,
                                  WEIGHT_STEP)
        return moved.astype(counts.dtype, copy=False) if placed else None
    tabu = np.zeros(counts.shape, dtype=np.int64)  # kind u may not go to h before iteration
    held = counts.reshape(-1)  # a view (the copy above is C-ordered): follows the moves below
    for it in range(iterations):
        hot = np.flatnonzero(over > 0)
        if hot.size == 0:
            return counts
        jit.numpy_iterations[0] += 1
        nonzero = held != 0  # as np.nonzero(counts), row-major, at half the cost
        kinds, machines = cluster.kind_of[nonzero], cluster.machine_of[nonzero]
        h = int(hot[rng.integers(hot.size)])
        here = machines == h
        mine = kinds[here]  # the task kinds on the machine this iteration relieves
        dm = DT[:, mine]  # (R, m)
        # a task of `mine` onto each machine (first H columns), or onto the machine of each
        # task (kinds, machines) once that task has left it (the next K)
        onto = _overflows(np.concatenate([room, room[:, machines] - DT[:, kinds]], axis=1), dm,
                          np.concatenate([inverse, inverse[:, machines]], axis=1))
        # machine h without a task of `mine`, with a task of each kind added (the last: none)
        off = _overflows(DT, room[:, h, None] - dm, inverse[:, h, None])
        moved = (off[:, -1] - over[h])[:, None] + onto[:, :H] - over
        moved[:, h] = np.inf
        # one task of `mine` for one task of another kind on another machine
        swapped = off[:, kinds] - over[h] + onto[:, H:] - over[machines][None]
        # a tabu move is allowed when it lowers the weighted overflow
        banned = tabu[mine] > it
        moved[banned & (moved >= LOWERS)] = np.inf
        swapped[here[None] | (mine[:, None] == kinds[None])
                | ((banned[:, machines] | (tabu[kinds, h][None] > it)) & (swapped >= LOWERS))] \
            = np.inf
        scores = np.concatenate([moved.ravel(), swapped.ravel()])
        noisy = rng.random(scores.size)
        noisy *= TIE_NOISE
        noisy += scores
        pick = int(np.argmin(noisy))
        if not np.isfinite(scores[pick]):
            return None  # every move is tabu
        if pick < moved.size:
            row, to = divmod(pick, H)
            changes = [(int(mine[row]), h, to)]
        else:
            row, col = divmod(pick - moved.size, kinds.size)
            to = int(machines[col])
            changes = [(int(mine[row]), h, to), (int(kinds[col]), to, h)]
        for u, a, b in changes:
            counts[u, a] -= 1
            counts[u, b] += 1
            room[:, a] -= DT[:, u]
            room[:, b] += DT[:, u]
            tabu[u, a] = it + TENURE + int(rng.integers(3))
        excess = np.maximum(room, 0.0)
        inverse += (WEIGHT_STEP * unit) * (excess > 0)
        over = (excess * inverse).sum(axis=0)
    return counts if not (over > 0).any() else None


def _changes(problem: SmdProblem, demand: np.ndarray, w: np.ndarray, p: np.ndarray,
             T: np.ndarray, left: np.ndarray,
             slack: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The changes of counts worth a search, in the order they are tried (the HEAD largest
    falls first, then one per added kind in turn; module docstring): (fall of the sum in s
    (< 0), task kind added, task kind removed or -1), over task kinds 0..2n-1 with their
    `demand` (2n, R), from counts w, p whose completion times are T (module docstring). Above
    POOL kinds, only the POOL largest falls of one task more and the POOL smallest rises of
    one task less are paired (memory and time stay O(POOL^2) on large clusters)."""
    n = problem.num_jobs
    fewer_w, fewer_p, more_w, more_p = problem.task_changes(w, p, T)
    gain, loss = np.concatenate([more_w, more_p]), np.concatenate([fewer_w, fewer_p])
    kinds = np.arange(2 * n)
    adds = np.argsort(gain, kind="stable")[:POOL] if 2 * n > POOL else kinds
    cuts = np.argsort(loss, kind="stable")[:POOL] if 2 * n > POOL else kinds
    change = gain[adds][:, None] + loss[cuts][None, :]  # exact for two jobs
    job, other = adds % n, cuts % n
    # one job's worker for its own PS (or the other way): T at the new pair, not a sum
    more_worker = problem.completion_time(np.minimum(w + 1, problem.max_workers),
                                          np.maximum(p - 1, 1)) - T
    more_ps = problem.completion_time(np.maximum(w - 1, 1),
                                      np.minimum(p + 1, problem.max_ps)) - T
    more_worker = np.where((p > 1) & (w < problem.max_workers), more_worker, np.inf)
    more_ps = np.where((w > 1) & (p < problem.max_ps), more_ps, np.inf)
    own = job[:, None] == other[None, :]
    change = np.where(own & (adds[:, None] < n) & (cuts[None, :] >= n), more_worker[job][:, None],
                      change)
    change = np.where(own & (adds[:, None] >= n) & (cuts[None, :] < n), more_ps[job][:, None],
                      change)
    change[adds[:, None] == cuts[None, :]] = np.inf
    change = np.concatenate([change, gain[adds][:, None]], axis=1)  # last column: nothing removed
    room = left.sum(axis=0)
    freed = np.concatenate([demand[cuts], np.zeros((1, demand.shape[1]))])
    fits = np.all(room[None, None] + freed[None] >= demand[adds][:, None] - TOLERANCE, axis=2)
    keep = fits & (change < -1e-12 * float(T.sum())) & (change >= -slack)
    rows, cols = np.nonzero(keep)
    order = np.argsort(change[rows, cols], kind="stable")
    head, rest = order[:HEAD], order[HEAD:]
    # after the HEAD best, the best change of each added kind, then the second best of each...
    kind = rows[rest]
    by_kind = np.argsort(kind, kind="stable")
    starts = np.flatnonzero(np.r_[True, kind[by_kind][1:] != kind[by_kind][:-1]])
    rank = np.empty(kind.size, dtype=np.int64)
    rank[by_kind] = np.arange(kind.size) - np.repeat(starts, np.diff(np.r_[starts, kind.size]))
    order = np.concatenate([head, rest[np.argsort(rank, kind="stable")]])
    removed = np.append(cuts, -1)[cols]
    return change[rows, cols][order], adds[rows][order], removed[order]


def _moved(cluster: _Cluster, counts: np.ndarray, load: np.ndarray, added: list[int],
           removed: list[int]) -> np.ndarray:
    """`counts` with one task of each kind in `removed` off the machine where the first added
    task would then overflow least, and one of each kind in `added` on the machine it
    overflows least, in turn."""
    counts = counts.copy()
    load = load.copy()
    D = cluster.demand
    for u in removed:
        hosts = np.flatnonzero(counts[u])
        after = load[hosts] - D[u] + D[added[0]]
        h = int(hosts[np.argmin(cluster.overflow(after, hosts))])
        counts[u, h] -= 1
        load[h] -= D[u]
    for u in added:
        h = cluster.least_overflow(load, u)
        counts[u, h] += 1
        load[h] += D[u]
    return counts


def _compound_changes(problem: SmdProblem, demand: np.ndarray, w: np.ndarray, p: np.ndarray,
                      T: np.ndarray, left: np.ndarray, slack: float) -> list:
    """Changes of counts that no single change reaches: one job's worker, PS, or both more,
    for up to MAX_REMOVED tasks less of other jobs (one per job), chosen greedily by the rise
    of their job's completion time per share of the missing room they free, until the
    cluster's free resources in total hold the added tasks, and (DEEPEN) one or two tasks more
    by the rise per share of the added tasks' demand, since the totals may hold them while no
    machine can. Returns (fall of the sum in s, added kinds, removed kinds) for each variant
    that lowers the sum by at most `slack`, largest fall first. Vectorized over the 3n
    candidate additions; the greedy runs MAX_REMOVED rounds."""
    n = problem.num_jobs
    fewer_w, fewer_p, more_w, more_p = problem.task_changes(w, p, T)
    loss = np.concatenate([fewer_w, fewer_p])
    finite = np.isfinite(problem.capacity)
    scale = problem.total_capacity()
    room = np.where(finite, left, 0.0).sum(axis=0)
    unlimited = ~finite.all(axis=0)  # a resource some machine has without limit never lacks
    both = np.where((w < problem.max_workers) & (p < problem.max_ps),
                    problem.completion_time(np.minimum(w + 1, problem.max_workers),
                                            np.minimum(p + 1, problem.max_ps)) - T, np.inf)
    jobs = np.arange(n)
    # candidates: job i's worker (i), its PS (n + i), or both; (C,) each
    gain = np.concatenate([more_w, more_p, both])
    first = np.concatenate([jobs, jobs + n, jobs])
    second = np.concatenate([np.full(2 * n, -1), jobs + n])
    floor = -1e-12 * float(T.sum())
    keep = gain < floor
    gain, first, second = gain[keep], first[keep], second[keep]
    job = first % n
    C = gain.size
    added = demand[first] + np.where(second[:, None] >= 0, demand[np.maximum(second, 0)], 0.0)
    need = np.where(unlimited, 0.0, added - room)
    rows = np.arange(C)
    banned = np.zeros((C, 2 * n), dtype=bool)
    banned[rows, job], banned[rows, job + n] = True, True
    removed = np.full((C, MAX_REMOVED), -1)
    fall = gain.astype(float)

    def holding(count: int, among: np.ndarray) -> list:  # variants whose totals hold
        ok = among & ~(need > TOLERANCE).any(axis=1) & (fall < floor) & (fall >= -slack)
        ok &= (count >= 2) | (second >= 0)  # not a single change
        return [(float(fall[c]), c, count) for c in np.flatnonzero(ok).tolist()]

    found = holding(0, np.ones(C, dtype=bool))
    for step in range(MAX_REMOVED):
        short = (need > TOLERANCE).any(axis=1)
        # while short, room for what is missing; once the totals hold (DEEPEN), room for the
        # added tasks, which the totals may hold while no machine can
        wanted = np.where(short[:, None], np.maximum(need, 0.0), added)
        cover = (np.minimum(demand[None], wanted[:, None]) / scale).sum(axis=2)
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where((cover > 0) & ~banned, loss[None] / cover, np.inf)
        u = np.argmin(score, axis=1)
        take = (short | DEEPEN) & np.isfinite(score[rows, u])
        r, u = rows[take], u[take]
        removed[r, step] = u
        fall[r] += loss[u]
        need[r] -= demand[u]
        banned[r, u % n], banned[r, u % n + n] = True, True
        found += holding(step + 1, take)
    out = []
    for value, c, k in sorted(found, key=lambda v: v[:2]):
        kinds = [int(first[c])] + ([int(second[c])] if second[c] >= 0 else [])
        out.append((value, kinds, removed[c, :k].tolist()))
    return out


def repack(problem: SmdProblem, placement: Placement, patience: int = PATIENCE,
           iterations: int | None = None, seed: int = 0, bound: float = -np.inf,
           target: float = -np.inf, time_limit: float = np.inf,
           compound: int | None = None) -> tuple[Placement, dict]:
    """The search of the module docstring from `placement` (feasible); it stops after
    `patience` failed changes in a row (each searched for `iterations` tabu iterations;
    None: ITERATIONS) and `compound` (None: COMPOUND) failed compound changes, once the sum
    is within 1e-9 of `target`, or when `time_limit` seconds of CPU time have passed (checked
    between changes). `bound`: a proven lower bound on the sum (s), which
    rules out changes that would fall below it. Returns the placement it ends at (feasible;
    its sum never higher) and statistics (steps: changes made, tries: changes searched, both
    counting the compound ones, compound_tries and compound_steps when any, seconds)."""
    clock, cpu = time.perf_counter(), time.process_time()
    compound = COMPOUND if compound is None else compound
    iterations = ITERATIONS if iterations is None else iterations
    rng = np.random.default_rng(seed)
    n = problem.num_jobs
    cluster = _Cluster(problem)
    counts = np.concatenate([placement.workers, placement.ps]).astype(np.int64)
    stats = {"steps": 0, "tries": 0}
    failed = 0
    while failed < patience:
        w, p = counts[:n].sum(axis=1), counts[n:].sum(axis=1)
        T = problem.completion_time(w, p)
        value = float(T.sum())
        if value <= target * (1 + 1e-9):
            break
        load = counts.T @ cluster.demand
        left = problem.capacity - load
        _, added, removed = _changes(problem, cluster.demand, w, p, T, left, value - bound)
        for a, b in zip(added[:patience - failed].tolist(), removed[:patience - failed].tolist()):
            if time.process_time() - cpu >= time_limit:
                failed = patience
                break
            stats["tries"] += 1
            found = relieve(cluster, _moved(cluster, counts, load, [a], [b] if b >= 0 else []),
                            iterations, rng)
            if found is not None:
                counts, failed = found, 0
                stats["steps"] += 1
                break
            failed += 1
        else:
            found = None if not compound or time.process_time() - cpu >= time_limit else \
                _compound_step(problem, cluster, counts, load, (w, p, T, left), value - bound,
                               compound, iterations, rng, stats)
            if found is None:
                break
            counts, failed = found, 0
    stats["seconds"] = time.perf_counter() - clock
    return Placement(counts[:n].copy(), counts[n:].copy()), stats


def _compound_step(problem: SmdProblem, cluster: _Cluster, counts: np.ndarray,
                   load: np.ndarray, state: tuple, slack: float, tries: int, iterations: int,
                   rng: np.random.Generator, stats: dict) -> np.ndarray | None:
    """The counts of the first of the `tries` largest compound changes (`_compound_changes`
    at state = (w, p, T, left)) that the tabu search places, or None; counts the tries and
    steps in `stats`."""
    for _, added, removed in _compound_changes(problem, cluster.demand, *state,
                                               slack)[:tries]:
        stats["tries"] += 1
        stats["compound_tries"] = stats.get("compound_tries", 0) + 1
        found = relieve(cluster, _moved(cluster, counts, load, added, removed), iterations, rng)
        if found is not None:
            stats["steps"] += 1
            stats["compound_steps"] = stats.get("compound_steps", 0) + 1
            return found
    return None


def tabu_placement(problem: SmdProblem, w: np.ndarray, p: np.ndarray,
                   iterations: int = PLACE_ITERATIONS, seed: int = 0,
                   near: Placement | None = None) -> Placement | None:
    """A placement of exactly w[i] workers and p[i] PSs per job, or None: every task, largest
    share of the cluster's totals first, on the machine it overflows least (or, given a
    placement `near`, its tasks: those beyond the counts taken off the machines they would
    overflow most, the missing ones added where they overflow least), then the tabu search
    (`relieve`) for at most `iterations` iterations."""
    n = problem.num_jobs
    cluster = _Cluster(problem)
    target = np.concatenate([w, p]).astype(np.int64)
    if near is None:
        counts = np.zeros((2 * n, problem.num_machines), dtype=np.int64)
        load = np.zeros(problem.capacity.shape)
        size = np.concatenate(problem.task_sizes())
        tasks = np.repeat(np.arange(2 * n), target)
        adding = tasks[np.argsort(-size[tasks], kind="stable")].tolist()
    else:
        counts = np.concatenate([near.workers, near.ps]).astype(np.int64)
        load = counts.T @ cluster.demand
        for u in np.flatnonzero(counts.sum(axis=1) > target).tolist():
            for _ in range(int(counts[u].sum() - target[u])):
                hosts = np.flatnonzero(counts[u])
                h = int(hosts[np.argmax(cluster.overflow(load[hosts] + cluster.demand[u], hosts))])
                counts[u, h] -= 1
                load[h] -= cluster.demand[u]
        short = np.maximum(target - counts.sum(axis=1), 0)
        adding = np.repeat(np.arange(2 * n), short).tolist()
    for u in adding:
        to = cluster.least_overflow(load, u)
        counts[u, to] += 1
        load[to] += cluster.demand[u]
    found = relieve(cluster, counts, iterations, np.random.default_rng(seed))
    return None if found is None else Placement(found[:n].copy(), found[n:].copy())
