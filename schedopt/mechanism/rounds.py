"""The round-based mechanism: turn time fractions X into concrete GPUs, one round at a time.

Gavel's mechanism (docs/formulations.md §2). Each round:
1. priorities P[m,j] = X[m,j] / (fraction of the elapsed time job m has run on type j); a job
   that has received nothing on j gets X[m,j] * 1e9, and X[m,j] = 0 gives 0;
2. (job, type) pairs with X > 0 are visited by descending (priority, deficit, X); a job takes
   s_m GPUs of the type if that many are free and it has none yet this round;
3. work conservation (optional): GPUs still free go to waiting jobs that can run there, least
   served first;
4. placement: a job assigned to the same type as last round keeps exactly its previous GPUs
   when they are all free (no restart); the others, largest scale factor first, go to the node
   with the fewest free GPUs that still fits them all (consolidation), else across the nodes
   with the most free GPUs (as few nodes as possible). A node is never over-filled.

Space sharing: a packed allocation also has pairs (`Pairs`): pair p runs two jobs of equal
scale factor s together on the same s GPUs of one type for a fraction of the time. A pair is an
*entry* of the mechanism like a job alone: it has its own X (its fraction, on its type), its own
received time and priority, takes s GPUs once, and is chosen only when neither of its jobs is
chosen yet this round (alone or in another pair). Work conservation fills GPUs with jobs alone.

`place_round` is pure: simulators call it every round with their own bookkeeping.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from itertools import chain
from typing import Mapping

import numpy as np

from schedopt.mechanism.topology import Topology

NEVER_RUN_BOOST = 1e9


@dataclass(frozen=True, eq=False)
class Pairs:
    """Co-located pairs of a packed allocation: pair p runs jobs first[p] and second[p] (row
    indices, equal scale factors) together on the same GPUs of type gpu[p] for a fraction[p] of
    the time; received[p]: seconds the pair has run together since the allocation was set."""

    first: np.ndarray
    second: np.ndarray
    gpu: np.ndarray
    fraction: np.ndarray
    received: np.ndarray

    @property
    def size(self) -> int:
        return int(self.first.shape[0])

    def entry_matrix(self, solo: np.ndarray, per_pair: np.ndarray) -> np.ndarray:
        """(M + P, J): `solo` (M, J) on top of one row per pair holding `per_pair[p]` in its
        GPU type's column (e.g. the fractions, or the received seconds)."""
        M, J = solo.shape
        out = np.zeros((M + self.size, J))
        out[:M] = solo
        out[M + np.arange(self.size), self.gpu] = per_pair
        return out


@dataclass(frozen=True)
class RoundPlacement:
    """gpus[m]: the GPU ids job m runs on this round (absent = not running); gpu_type[m]: the
    type index; nodes_spanned[m]: how many nodes those GPUs span (> 1 = unconsolidated). With
    pairs (M jobs), key M + p is pair p: both its jobs run on those GPUs."""

    gpus: Mapping[int, tuple[int, ...]]
    gpu_type: Mapping[int, int]
    nodes_spanned: Mapping[int, int]

    def type_matrix(self, num_jobs: int, num_types: int) -> np.ndarray:
        """(M, J) 0/1: job m runs on type j this round."""
        Y = np.zeros((num_jobs, num_types))
        if self.gpu_type:
            jobs = np.fromiter(self.gpu_type.keys(), dtype=int)
            Y[jobs, np.fromiter(self.gpu_type.values(), dtype=int)] = 1.0
        return Y


def priorities(allocation: np.ndarray, received: np.ndarray, elapsed: float) -> np.ndarray:
    """(M, J) Gavel priorities: X divided by the fraction of `elapsed` seconds each job has run
    on each type (`received`, seconds); never-run pairs get X * 1e9."""
    with np.errstate(divide="ignore", invalid="ignore"):
        fraction = received / elapsed if elapsed > 0 else np.zeros_like(received)
        boosted = np.where(fraction > 0, allocation / fraction, allocation * NEVER_RUN_BOOST)
    return np.where(allocation > 0, boosted, 0.0)


def assign_types(allocation: np.ndarray, priority: np.ndarray, deficit: np.ndarray,
                 scale_factor: np.ndarray, capacity: np.ndarray, runnable: np.ndarray,
                 served: np.ndarray, work_conserving: bool = True,
                 pairs: Pairs | None = None) -> np.ndarray:
    """(E,) the type index each entry runs on this round, -1 for none (steps 2 and 3). Entries
    are the M jobs alone, then (with `pairs`) the P pairs: rows M.. of the (E, J) arrays."""
    E, J = allocation.shape
    chosen = [-1] * E  # Python ints and floats: these loops are scalar work
    free = capacity.astype(float).tolist()
    jobs, types = np.nonzero(allocation > 0)
    order = np.lexsort((-allocation[jobs, types], -deficit[jobs, types], -priority[jobs, types]))
    need = scale_factor.tolist()
    smallest = min(need) if E else 0
    if pairs is not None and pairs.size:
        busy = _assign_entries(chosen, free, need, jobs[order].tolist(), types[order].tolist(),
                               pairs)
    else:
        for m, j in zip(jobs[order].tolist(), types[order].tolist()):
            if chosen[m] < 0 and free[j] >= need[m]:
                chosen[m] = j
                free[j] -= need[m]
                if max(free) < smallest:
                    return np.array(chosen, dtype=int)
        busy = np.array(chosen) >= 0
    if work_conserving:
        waiting = np.flatnonzero(~busy)
        for m in waiting[np.argsort(served[waiting], kind="stable")].tolist():
            if max(free) < smallest:
                break  # no job fits anywhere any more
            fits = [j for j in np.flatnonzero(runnable[m]).tolist() if free[j] >= need[m]]
            if fits:
                row = allocation[m]
                j = max(fits, key=lambda k: row[k])  # where X wants it most, else first
                chosen[m] = j
                free[j] -= need[m]
    return np.array(chosen, dtype=int).reshape(E)


def _assign_entries(chosen: list[int], free: list[float], need: list[int], entries: list[int],
                    types: list[int], pairs: Pairs) -> np.ndarray:
    """Step 2 when some entries are pairs: in the given order, an entry takes its GPUs if they
    are free and none of its jobs runs yet this round. Fills `chosen` and `free`; returns (M,)
    bool, the jobs that run (alone or paired)."""
    M = len(chosen) - pairs.size
    first, second = pairs.first.tolist(), pairs.second.tolist()
    busy = [False] * M
    smallest = min(need) if need else 0
    for e, j in zip(entries, types):
        if chosen[e] >= 0 or free[j] < need[e]:
            continue
        members = (e,) if e < M else (first[e - M], second[e - M])
        if any(busy[m] for m in members):
            continue
        chosen[e] = j
        free[j] -= need[e]
        for m in members:
            busy[m] = True
        if max(free) < smallest:
            break
    return np.array(busy, dtype=bool)


class _FreeGpus:
    """The free GPUs of one type, node by node, with nodes bucketed by how many GPUs they have
    free, so that "the fullest node that fits" and "the nodes with the most free GPUs" are found
    without scanning every node (a heap of node indices per free count)."""

    def __init__(self, nodes: np.ndarray, gpus: np.ndarray):
        order = np.lexsort((gpus, nodes))
        nodes, gpus = nodes[order], gpus[order]
        starts = np.flatnonzero(np.r_[True, nodes[1:] != nodes[:-1]]) if nodes.size else []
        self.gpus: dict[int, list[int]] = {}
        for a, b in zip(starts, list(starts[1:]) + [nodes.size]):
            self.gpus[int(nodes[a])] = gpus[a:b].tolist()
        largest = max((len(g) for g in self.gpus.values()), default=0)
        self.buckets: list[list[int]] = [[] for _ in range(largest + 1)]
        for node, free in self.gpus.items():
            self.buckets[len(free)].append(node)
        for bucket in self.buckets:
            heapq.heapify(bucket)

    def _take_from(self, node: int, count: int) -> list[int]:
        free = self.gpus[node]
        taken, self.gpus[node] = free[:count], free[count:]
        if self.gpus[node]:
            heapq.heappush(self.buckets[len(self.gpus[node])], node)
        return taken

    def take(self, size: int) -> tuple[int, ...]:
        """`size` GPUs from one node if one fits them (the fullest that does, lowest index on
        ties), else from the nodes with the most free GPUs first (lowest index on ties)."""
        for count in range(size, len(self.buckets)):
            if self.buckets[count]:
                return tuple(self._take_from(heapq.heappop(self.buckets[count]), size))
        taken: list[int] = []
        for count in range(len(self.buckets) - 1, 0, -1):
            while self.buckets[count] and len(taken) < size:
                node = heapq.heappop(self.buckets[count])
                taken += self._take_from(node, size - len(taken))
            if len(taken) == size:
                break
        return tuple(taken)


def _extensions(chosen: np.ndarray, scale_factor: np.ndarray, topology: Topology,
                previous: Mapping[int, tuple[int, ...]]) -> dict[int, tuple[int, ...]]:
    """Jobs that keep last round's GPUs: same type, as many GPUs as their scale factor, and
    none of them kept by a job of lower index."""
    held = np.fromiter(previous, dtype=int, count=len(previous))
    lengths = np.fromiter(map(len, previous.values()), dtype=int, count=held.size)
    inside = (held >= 0) & (held < chosen.size)
    index = held[inside]
    eligible = np.zeros(held.size, dtype=bool)
    eligible[inside] = (chosen[index] >= 0) & (lengths[inside] == scale_factor[index])
    jobs = np.sort(held[eligible]).tolist()
    if not jobs:
        return {}
    sizes = scale_factor[jobs]
    owner = np.repeat(np.array(jobs), sizes)
    gpus = _flat(previous, jobs, int(sizes.sum()))
    ordered = np.sort(gpus)
    if (ordered[1:] == ordered[:-1]).any():  # overlapping claims: decide them one job at a time
        free = np.ones(topology.num_gpus, dtype=bool)
        kept = {}
        for m in jobs:
            mine = np.asarray(previous[m], dtype=int)
            if np.all(topology.gpu_type[mine] == chosen[m]) and free[mine].all():
                kept[m] = tuple(previous[m])
                free[mine] = False
        return kept
    same_type = topology.gpu_type[gpus] == chosen[owner]
    ok = np.logical_and.reduceat(same_type, np.r_[0, np.cumsum(sizes)[:-1]])
    return {m: tuple(previous[m]) for m in np.asarray(jobs)[ok].tolist()}


def _flat(gpus: Mapping[int, tuple[int, ...]], jobs, count: int) -> np.ndarray:
    """The GPU ids of `jobs` (keys of `gpus`), concatenated in that order; `count` their
    number (-1: unknown)."""
    return np.fromiter(chain.from_iterable(gpus[m] for m in jobs), dtype=int, count=count)


def place_on_gpus(chosen: np.ndarray, scale_factor: np.ndarray, topology: Topology,
                  previous: Mapping[int, tuple[int, ...]]) -> RoundPlacement:
    """Step 4: concrete GPU ids for the jobs `chosen` assigned to a type."""
    gpus = _extensions(chosen, scale_factor, topology, previous)
    is_free = np.ones(topology.num_gpus, dtype=bool)
    if gpus:
        is_free[_flat(gpus, gpus, -1)] = False
    running = np.flatnonzero(chosen >= 0)
    rest = [int(m) for m in running[np.argsort(-scale_factor[running], kind="stable")]
            if int(m) not in gpus]
    free = np.flatnonzero(is_free)
    pools = {j: _FreeGpus(topology.gpu_node[free[topology.gpu_type[free] == j]],
                          free[topology.gpu_type[free] == j])
             for j in np.unique(chosen[rest]).tolist()} if rest else {}
    for m in rest:
        gpus[m] = pools[int(chosen[m])].take(int(scale_factor[m]))
    jobs = list(gpus)
    if jobs:
        sizes = scale_factor[jobs]
        nodes = topology.gpu_node[_flat(gpus, jobs, int(sizes.sum()))]
        owner = np.repeat(np.arange(len(jobs)), sizes)
        pairs = np.unique(owner * (int(topology.gpu_node.max()) + 1) + nodes)  # (job, node) keys
        spanned = np.bincount(pairs // (int(topology.gpu_node.max()) + 1), minlength=len(jobs))
    else:
        spanned = np.zeros(0, dtype=int)
    return RoundPlacement(gpus=gpus, gpu_type={m: int(chosen[m]) for m in jobs},
                          nodes_spanned=dict(zip(jobs, spanned.tolist())))


def place_round(allocation: np.ndarray, scale_factor: np.ndarray, topology: Topology,
                received: np.ndarray, elapsed: float,
                previous: Mapping[int, tuple[int, ...]] | None = None,
                deficit: np.ndarray | None = None, runnable: np.ndarray | None = None,
                work_conserving: bool = True, pairs: Pairs | None = None) -> RoundPlacement:
    """One round of the mechanism (see the module docstring).

    allocation: (M, J) time fractions X (with pairs: each job's time alone). scale_factor: (M,)
    GPUs per job. received: (M, J) seconds each job has run (alone) on each type since X was
    set, over `elapsed` seconds. previous: last round's `gpus` (entry index -> GPU ids; pair p
    is M + p). deficit: (M, J) tie-breaker, e.g. seconds owed from an earlier allocation
    (default 0; 0 for pairs). runnable: (M, J) where a job may fill idle GPUs (default: X > 0).
    pairs: the allocation's co-located pairs (none by default).
    """
    allocation = np.asarray(allocation, dtype=float)
    scale_factor = np.asarray(scale_factor, dtype=int)
    zeros = np.zeros_like(allocation)
    runnable = allocation > 0 if runnable is None else runnable
    served = received.sum(axis=1)
    deficit = zeros if deficit is None else deficit
    if pairs is not None and pairs.size:
        none = np.zeros(pairs.size)
        received = pairs.entry_matrix(received, pairs.received)
        deficit = pairs.entry_matrix(deficit, none)
        allocation = pairs.entry_matrix(allocation, pairs.fraction)
        scale_factor = np.concatenate([scale_factor, scale_factor[pairs.first]])
    chosen = assign_types(allocation, priorities(allocation, received, elapsed), deficit,
                          scale_factor, topology.capacity, runnable, served, work_conserving,
                          pairs)
    return place_on_gpus(chosen, scale_factor, topology, previous or {})


def run_rounds(allocation: np.ndarray, scale_factor: np.ndarray, topology: Topology,
               rounds: int, round_seconds: float = 360.0, work_conserving: bool = False,
               pairs: Pairs | None = None):
    """Apply the mechanism `rounds` times to a fixed allocation (and `pairs`, their received
    time ignored); yields (round, placement, received fraction) after each round, the fraction
    (M, J), or with pairs (M + P, J) with pair p's in row M + p (`Pairs.entry_matrix`). Used to
    measure the mechanism's error."""
    received = np.zeros_like(np.asarray(allocation, dtype=float))
    M, J = received.shape
    together = np.zeros(0 if pairs is None else pairs.size)
    previous: Mapping[int, tuple[int, ...]] = {}
    for r in range(rounds):
        current = None if pairs is None else Pairs(pairs.first, pairs.second, pairs.gpu,
                                                   pairs.fraction, together)
        placement = place_round(allocation, scale_factor, topology, received, r * round_seconds,
                                previous, work_conserving=work_conserving, pairs=current)
        ran = placement.type_matrix(M + together.size, J) * round_seconds
        received += ran[:M]
        together = together + ran[M:].sum(axis=1)
        previous = placement.gpus
        fraction = received if pairs is None else pairs.entry_matrix(received, together)
        yield r, placement, fraction / ((r + 1) * round_seconds)


def mechanism_error(allocation: np.ndarray, received_fraction: np.ndarray) -> float:
    """max over jobs and types of |received fraction - X|."""
    return float(np.max(np.abs(received_fraction - allocation))) if allocation.size else 0.0
