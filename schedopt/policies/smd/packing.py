"""Placing SMD's tasks on machines: a mutable placement (`Packing`) with the per-machine rules
for adding and removing tasks, the first placement (one worker and one PS per job) and a
placement of given counts (`pack_counts`: first-fit orders, then a depth-first search in small
problems). The knapsack step and the exchange pass built on them are in `smd_knapsack`.
"""

from __future__ import annotations

import numpy as np

from schedopt.policies.smd import jit
from schedopt.policies.smd.model import SmdProblem

TOL = 1e-9
BIG = 1e30  # stands for an unlimited resource (a task that does not ask for it)


def _covers(have: np.ndarray, need: np.ndarray) -> np.ndarray:
    """(have >= need).all(axis=-1), broadcast, one comparison per resource: numpy reduces a
    short last axis more slowly than it compares."""
    out = have[..., 0] >= need[..., 0]
    for r in range(1, have.shape[-1]):
        out &= have[..., r] >= need[..., r]
    return out


def _take(room: np.ndarray, count: int, key: np.ndarray) -> np.ndarray:
    """Integer amounts per machine, at most `room` each, summing to min(count, room.sum()),
    filling machines by increasing `key` (machines without room are skipped)."""
    out = np.zeros(room.shape[0], dtype=np.int64)
    has = np.flatnonzero(room > 0)
    if count <= 0 or has.size == 0:
        return out
    if count == 1:
        out[has[np.argmin(key[has])]] = 1
        return out
    for h in has[np.argsort(key[has], kind="stable")].tolist():
        got = min(count, int(room[h]))
        out[h] = got
        count -= got
        if count == 0:
            break
    return out


class Packing:
    """Where every task sits: workers[i, h], ps[i, h] (ints), totals w, p (n,), and what is left
    of each machine's resources, `left` (H, R) (BIG where unlimited).

    Placement rules (documented in docs/smd.md): a new parameter server goes first to machines
    whose resources beyond what their free GPUs' workers would need (`reserve` per free GPU)
    can host it, most such room first, then best fit; a new worker goes best fit (the machine
    with the least room that still takes it). Tasks are removed from the machines with the most
    free GPUs first.

    With numba, `room`, `_add` and the search of `_place_one` run compiled (`packing_compiled`,
    `jit`), with the same results bit for bit.
    """

    def __init__(self, problem: SmdProblem):
        n, H = problem.num_jobs, problem.num_machines
        a, b = problem.worker_demand, problem.ps_demand
        self.a, self.b = a, b
        self.a_inv, self.b_inv = (np.where(d > 0, 1.0 / np.where(d > 0, d, 1.0), 0.0) for d in (a, b))
        self.a_free, self.b_free = (np.where(d > 0, 0.0, BIG) for d in (a, b))
        reserve = a.mean(axis=0) if n else np.zeros(a.shape[1])
        self.reserve = np.where(np.arange(a.shape[1]) == 0, 0.0, reserve)  # per free GPU
        total = np.where(np.isfinite(problem.capacity), problem.capacity, 0.0).sum(axis=0)
        self.scale = np.where(total > 0, 1.0 / np.where(total > 0, total, 1.0), 0.0)
        self.a_size, self.b_size = (a * self.scale).sum(axis=1), (b * self.scale).sum(axis=1)
        self.workers = np.zeros((n, H), dtype=np.int64)
        self.ps = np.zeros((n, H), dtype=np.int64)
        self._job_of, self._host_of = np.repeat(np.arange(n), H), np.tile(np.arange(H), n)
        self.left = np.where(np.isfinite(problem.capacity), problem.capacity, BIG)
        self.w = np.zeros(n, dtype=np.int64)
        self.p = np.zeros(n, dtype=np.int64)

    @classmethod
    def of(cls, problem: SmdProblem, workers: np.ndarray, ps: np.ndarray) -> Packing:
        """The packing of a given placement (workers, ps (n, H) task counts)."""
        pack = cls(problem)
        pack.workers, pack.ps = workers.astype(np.int64).copy(), ps.astype(np.int64).copy()
        pack.w, pack.p = pack.workers.sum(axis=1), pack.ps.sum(axis=1)
        pack.left = pack.left - problem.usage(pack.workers, pack.ps)
        return pack

    def copy(self) -> Packing:
        other = Packing.__new__(Packing)
        other.__dict__.update(self.__dict__)
        for name in ("workers", "ps", "left", "w", "p"):
            setattr(other, name, getattr(self, name).copy())
        return other

    @staticmethod
    def _room(left, inv, free) -> np.ndarray:
        room = (left * inv + free).min(axis=1)
        room += TOL
        return np.floor(room, out=room)

    def room(self, i: int) -> tuple[float, float]:
        """(workers, PSs) of job i that could be added, each counted alone."""
        compiled = jit.kernels()
        if compiled is not None:
            return compiled.room_sums(self.left, self.a_inv[i], self.a_free[i], self.b_inv[i],
                                      self.b_free[i])
        return (self._room(self.left, self.a_inv[i], self.a_free[i]).sum(),
                self._room(self.left, self.b_inv[i], self.b_free[i]).sum())

    relocate = False  # when True, `add` may move other tasks to make room (`_place_one`)

    def add(self, i: int, dw: int, dp: int) -> bool:
        """Place dw more workers and dp more PSs of job i; False (and nothing changes) if they
        do not fit. With `relocate`, tasks that the rules below cannot place go one at a time,
        each where moving one task of another machine's elsewhere makes room (`_place_one`)."""
        if self._add(i, dw, dp):
            return True
        if not self.relocate:
            return False
        saved = (self.workers.copy(), self.ps.copy(), self.left.copy(), self.w.copy(),
                 self.p.copy())
        for kind, count in ((1, dp), (0, dw)):
            for _ in range(count):
                if not self._place_one(i, kind):
                    self.workers, self.ps, self.left, self.w, self.p = saved
                    return False
        return True

    def _place_one(self, i: int, kind: int) -> bool:
        """One more worker (kind 0) or PS (1) of job i: where it fits, else on the machine h
        where moving one task (the smallest that suffices, by summed shares) to another
        machine that holds it makes room; False when no such move exists."""
        if self._add(i, 1 - kind, kind):
            return True
        d = self.b[i] if kind else self.a[i]
        compiled = jit.kernels()
        if compiled is not None:
            found, moved, j, h, fits = compiled.relocation(self.left, d, self.workers, self.ps,
                                                           self.a, self.b, self.a_size, self.b_size)
            return found and self._relocate(i, kind, moved, j, h, fits)
        need = d[None, :] - self.left - TOL  # (H, R): what machine h lacks
        best = None
        for moved, demand, counts, size in ((0, self.a, self.workers, self.a_size),
                                            (1, self.b, self.ps, self.b_size)):
            # only (job, machine) pairs holding a task of this kind, in row-major order
            held = counts.ravel() != 0
            jobs, hosts = self._job_of[held], self._host_of[held]
            frees = (demand[jobs] >= need[hosts]).all(axis=1)
            if not frees.any():
                continue
            jobs, hosts = jobs[frees], hosts[frees]
            fits = _covers(self.left[None, :, :], demand[jobs][:, None, :] - TOL)
            fits[np.arange(jobs.size), hosts] = False  # a machine other than its own takes it
            ok = fits.any(axis=1)
            if not ok.any():
                continue
            k = np.flatnonzero(ok)[np.argmin(size[jobs[ok]])]
            j = int(jobs[k])
            if best is None or size[j] < best[0]:
                best = (size[j], moved, j, int(hosts[k]), fits[k])
        if best is None:
            return False
        return self._relocate(i, kind, *best[1:])

    def _relocate(self, i: int, kind: int, moved: int, j: int, h: int, fits: np.ndarray) -> bool:
        """Job j's task of kind `moved` from machine h to the best fit among `fits`, and job i's
        new task of `kind` onto h (`_place_one`)."""
        d = self.b[i] if kind else self.a[i]
        demand = self.b[j] if moved else self.a[j]
        room = np.where(fits, np.minimum(self.left, BIG) @ self.scale, np.inf)
        target = int(np.argmin(room))  # best fit
        counts = self.ps if moved else self.workers
        counts[j, h] -= 1
        counts[j, target] += 1
        self.left[h] += demand
        self.left[target] -= demand
        self.left[h] -= d
        (self.ps if kind else self.workers)[i, h] += 1
        if kind:
            self.p[i] += 1
        else:
            self.w[i] += 1
        return True

    def _add(self, i: int, dw: int, dp: int) -> bool:
        compiled = jit.kernels()
        if compiled is not None:
            placed, self.left = compiled.add_tasks(
                self.left, self.workers, self.ps, self.w, self.p, i, dw, dp, self.a, self.b,
                self.a_inv, self.a_free, self.b_inv, self.b_free, self.reserve)
            return placed
        left = self.left
        if dp:
            room = self._room(left, self.b_inv[i], self.b_free[i])
            if room.sum() < dp:
                return False
            gpus = np.floor(left[:, 0] + TOL)
            spare = np.maximum(self._room(left - gpus[:, None] * self.reserve, self.b_inv[i],
                                          self.b_free[i]), 0)
            y = _take(spare, dp, -spare)
            if y.sum() < dp:
                y += _take(room - y, dp - int(y.sum()), room - y)
            left = left - y[:, None] * self.b[i]
        if dw:
            room = self._room(left, self.a_inv[i], self.a_free[i])
            if room.sum() < dw:
                return False
            x = _take(room, dw, room)
            left = left - x[:, None] * self.a[i]
            self.workers[i] += x
            self.w[i] += dw
        if dp:
            self.ps[i] += y
            self.p[i] += dp
        self.left = left
        return True

    def remove(self, i: int, dw: int, dp: int) -> None:
        """Take dw workers and dp PSs of job i off (from the machines with the most free GPUs)."""
        key = -self.left[:, 0]
        if dw:
            x = _take(self.workers[i].astype(float), dw, key)
            self.workers[i] -= x
            self.left = self.left + x[:, None] * self.a[i]
            self.w[i] -= dw
        if dp:
            y = _take(self.ps[i].astype(float), dp, key)
            self.ps[i] -= y
            self.left = self.left + y[:, None] * self.b[i]
            self.p[i] -= dp


def minimal_packing(problem: SmdProblem) -> Packing | None:
    """Every job with 1 worker and 1 PS, the largest (by summed capacity shares) first; None when
    this first-fit rule cannot place them all."""
    pack = Packing(problem)
    total = np.where(np.isfinite(problem.capacity), problem.capacity, 0.0).sum(axis=0)
    share = (problem.worker_demand + problem.ps_demand) / np.where(total > 0, total, 1.0)
    for i in np.argsort(-share.sum(axis=1), kind="stable"):
        if not pack.add(int(i), 1, 1):
            return None
    return pack


SEARCH_TASKS = 64  # pack_counts searches exhaustively up to this many tasks ...
SEARCH_NODES = 20_000  # ... and this many search nodes


def _search(problem: SmdProblem, w: np.ndarray, p: np.ndarray,
            budget: list[int] | None = None) -> Packing | None:
    """Depth-first search for a placement of w[i] workers and p[i] PSs: task groups (job, kind)
    by decreasing size; for a group, machine by machine, how many of its tasks go there (most
    first, machines largest first). Cut when the machines left cannot hold the group's tasks;
    the cluster's totals are checked once, before the search (placing a task lowers what is
    left and what is needed alike). Machines that were alike when the group started (same
    resources left) are interchangeable, so a group puts no more tasks on such a machine than on
    the one before it.
    None when there is no placement or SEARCH_NODES is reached (or budget[0], the nodes a caller
    allows all its searches together, which is lowered by the nodes this one took)."""
    groups = [(i, kind, count, demand[i]) for i in range(problem.num_jobs)
              for kind, count, demand in ((0, int(w[i]), problem.worker_demand),
                                          (1, int(p[i]), problem.ps_demand)) if count]
    total = np.where(np.isfinite(problem.capacity), problem.capacity, 0).sum(axis=0)
    groups.sort(key=lambda g: float((g[3] / np.where(total > 0, total, 1)).max()), reverse=True)
    H, R = problem.num_machines, problem.capacity.shape[1]
    capacity = np.where(np.isfinite(problem.capacity), problem.capacity, BIG)
    machines = sorted(range(H), key=lambda h: tuple(-capacity[h]))  # alike machines side by side
    left = [list(capacity[h]) for h in machines]
    demands = [[float(v) for v in g[3]] for g in groups]
    asked = [[(r, v) for r, v in enumerate(d) if v > 0] for d in demands]
    need = [sum(g[2] * d[r] for g, d in zip(groups, demands)) for r in range(R)]
    if any(need[r] > sum(row[r] for row in left) + TOL for r in range(R)):
        return None
    placed = [[0] * H for _ in groups]
    nodes, limit = 0, SEARCH_NODES if budget is None else min(SEARCH_NODES, budget[0])

    def most(h: int, g: int, count: int) -> int:
        row = left[h]
        for r, v in asked[g]:
            fit = int((row[r] + TOL) // v)
            if fit < count:
                count = fit
        return max(count, 0)

    def holds(g: int, h: int, count: int) -> bool:
        """Whether machines h.. can hold `count` tasks of group g (each machine alone)."""
        for m in range(h, H):
            count -= most(m, g, count)
            if count <= 0:
                return True
        return False

    alike = [False] * H  # machine h had the same resources left as h - 1 when the group began

    def dfs(g: int, h: int, count: int) -> bool:
        nonlocal nodes
        if count == 0:
            if g + 1 == len(groups):
                return True
            saved = alike[:]
            alike[1:] = [left[m] == left[m - 1] for m in range(1, H)]
            found = dfs(g + 1, 0, groups[g + 1][2])
            alike[:] = saved
            return found
        if h == H:
            return False
        nodes += 1
        if nodes > limit or not holds(g, h, count):
            return False
        top = most(h, g, count)
        if alike[h]:
            top = min(top, placed[g][h - 1])
        row = left[h]
        for c in range(top, -1, -1):
            for r, v in asked[g]:
                row[r] -= c * v
            placed[g][h] = c
            if dfs(g, h + 1, count - c):
                return True
            for r, v in asked[g]:
                row[r] += c * v
        placed[g][h] = 0
        return False

    pack = Packing(problem)
    alike[1:] = [left[m] == left[m - 1] for m in range(1, H)]
    found = not groups or dfs(0, 0, groups[0][2])
    if budget is not None:
        budget[0] -= min(nodes, limit)
    if not found:
        return None
    for (i, kind, _, _), row in zip(groups, placed):
        (pack.workers if kind == 0 else pack.ps)[i, machines] += np.asarray(row, dtype=np.int64)
    pack.w, pack.p = pack.workers.sum(axis=1), pack.ps.sum(axis=1)
    pack.left = pack.left - problem.usage(pack.workers, pack.ps)
    return pack


def pack_counts(problem: SmdProblem, w: np.ndarray, p: np.ndarray,
                search: bool | None = None, budget: list[int] | None = None) -> Packing | None:
    """A placement of exactly w[i] workers and p[i] PSs per job, or None: three first-fit
    orders (each job whole, largest first; every PS group first; every worker group first,
    groups by decreasing summed shares), then, for at most SEARCH_TASKS tasks (or when
    `search` is True), the exhaustive `_search` (within `budget`, see there)."""
    size_w, size_p = problem.task_sizes()
    size_w, size_p = size_w * w, size_p * p
    by_job = np.argsort(-(size_w + size_p), kind="stable")
    orders = [
        [(int(i), int(w[i]), int(p[i])) for i in by_job],
        [(int(i), 0, int(p[i])) for i in np.argsort(-size_p, kind="stable")]
        + [(int(i), int(w[i]), 0) for i in np.argsort(-size_w, kind="stable")],
        [(int(i), int(w[i]), 0) for i in np.argsort(-size_w, kind="stable")]
        + [(int(i), 0, int(p[i])) for i in np.argsort(-size_p, kind="stable")],
    ]
    for order in orders:
        pack = Packing(problem)
        if all(pack.add(i, dw, dp) for i, dw, dp in order):
            return pack
    if search or (search is None and int(w.sum() + p.sum()) <= SEARCH_TASKS):
        return _search(problem, w, p, budget)
    return None
