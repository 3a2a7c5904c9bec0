"""The round-based mechanism: turn time fractions X into concrete GPUs, one round at a time.

Gavel's mechanism (formulations.md section 2). Each round:
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

`place_round` is pure: simulators call it every round with their own bookkeeping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from schedopt.mechanism.topology import Topology

NEVER_RUN_BOOST = 1e9


@dataclass(frozen=True)
class RoundPlacement:
    """gpus[m]: the GPU ids job m runs on this round (absent = not running); gpu_type[m]: the
    type index; nodes_spanned[m]: how many nodes those GPUs span (> 1 = unconsolidated)."""

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
                 served: np.ndarray, work_conserving: bool = True) -> np.ndarray:
    """(M,) the type index each job runs on this round, -1 for none (steps 2 and 3)."""
    M, J = allocation.shape
    chosen = np.full(M, -1)
    free = capacity.astype(float).copy()
    jobs, types = np.nonzero(allocation > 0)
    order = np.lexsort((-allocation[jobs, types], -deficit[jobs, types], -priority[jobs, types]))
    smallest = scale_factor.min() if M else 0
    for m, j in zip(jobs[order], types[order]):
        if chosen[m] < 0 and free[j] >= scale_factor[m]:
            chosen[m] = j
            free[j] -= scale_factor[m]
            if free.max() < smallest:
                return chosen
    if work_conserving:
        waiting = np.flatnonzero(chosen < 0)
        for m in waiting[np.argsort(served[waiting], kind="stable")]:
            fits = np.flatnonzero(runnable[m] & (free >= scale_factor[m]))
            if fits.size:
                j = fits[np.argmax(allocation[m, fits])]  # where X wants it most, else first
                chosen[m] = j
                free[j] -= scale_factor[m]
    return chosen


def _take_gpus(free_by_node: dict[int, list[int]], size: int) -> tuple[int, ...]:
    """`size` free GPUs from one node if one fits them (the fullest that does), else from the
    nodes with the most free GPUs first. Removes them from `free_by_node`."""
    fitting = [n for n, gpus in free_by_node.items() if len(gpus) >= size]
    if fitting:
        node = min(fitting, key=lambda n: (len(free_by_node[n]), n))
        taken, free_by_node[node] = free_by_node[node][:size], free_by_node[node][size:]
        return tuple(taken)
    taken: list[int] = []
    for node in sorted(free_by_node, key=lambda n: (-len(free_by_node[n]), n)):
        need = size - len(taken)
        taken += free_by_node[node][:need]
        free_by_node[node] = free_by_node[node][need:]
        if len(taken) == size:
            break
    return tuple(taken)


def place_on_gpus(chosen: np.ndarray, scale_factor: np.ndarray, topology: Topology,
                  previous: Mapping[int, tuple[int, ...]]) -> RoundPlacement:
    """Step 4: concrete GPU ids for the jobs `chosen` assigned to a type."""
    is_free = np.ones(topology.num_gpus, dtype=bool)
    gpus: dict[int, tuple[int, ...]] = {}
    running = np.flatnonzero(chosen >= 0)
    for m in running:  # lease extensions first: same type, same GPUs, all still free
        before = previous.get(int(m))
        if before and len(before) == scale_factor[m] and \
                np.all(topology.gpu_type[list(before)] == chosen[m]) and is_free[list(before)].all():
            gpus[int(m)] = tuple(before)
            is_free[list(before)] = False
    rest = [m for m in running[np.argsort(-scale_factor[running], kind="stable")] if int(m) not in gpus]
    free_by_type: dict[int, dict[int, list[int]]] = {}
    for g in np.flatnonzero(is_free):
        free_by_type.setdefault(int(topology.gpu_type[g]), {}).setdefault(
            int(topology.gpu_node[g]), []).append(int(g))
    for m in rest:
        gpus[int(m)] = _take_gpus(free_by_type[int(chosen[m])], int(scale_factor[m]))
    return RoundPlacement(
        gpus=gpus, gpu_type={m: int(chosen[m]) for m in gpus},
        nodes_spanned={m: len(set(topology.gpu_node[list(g)].tolist())) for m, g in gpus.items()})


def place_round(allocation: np.ndarray, scale_factor: np.ndarray, topology: Topology,
                received: np.ndarray, elapsed: float,
                previous: Mapping[int, tuple[int, ...]] | None = None,
                deficit: np.ndarray | None = None, runnable: np.ndarray | None = None,
                work_conserving: bool = True) -> RoundPlacement:
    """One round of the mechanism (see the module docstring).

    allocation: (M, J) time fractions X. scale_factor: (M,) GPUs per job. received: (M, J)
    seconds each job has run on each type since X was set, over `elapsed` seconds. previous:
    last round's `gpus` (job index -> GPU ids). deficit: (M, J) tie-breaker, e.g. seconds owed
    from an earlier allocation (default 0). runnable: (M, J) where a job may fill idle GPUs
    (default: X > 0).
    """
    allocation = np.asarray(allocation, dtype=float)
    scale_factor = np.asarray(scale_factor, dtype=int)
    zeros = np.zeros_like(allocation)
    chosen = assign_types(allocation, priorities(allocation, received, elapsed),
                          zeros if deficit is None else deficit, scale_factor, topology.capacity,
                          allocation > 0 if runnable is None else runnable,
                          received.sum(axis=1), work_conserving)
    return place_on_gpus(chosen, scale_factor, topology, previous or {})


def run_rounds(allocation: np.ndarray, scale_factor: np.ndarray, topology: Topology,
               rounds: int, round_seconds: float = 360.0, work_conserving: bool = False):
    """Apply the mechanism `rounds` times to a fixed allocation; yields (round, placement,
    received fraction (M, J)) after each round. Used to measure the mechanism's error."""
    received = np.zeros_like(np.asarray(allocation, dtype=float))
    previous: Mapping[int, tuple[int, ...]] = {}
    for r in range(rounds):
        placement = place_round(allocation, scale_factor, topology, received, r * round_seconds,
                                previous, work_conserving=work_conserving)
        received += placement.type_matrix(*received.shape) * round_seconds
        previous = placement.gpus
        yield r, placement, received / ((r + 1) * round_seconds)


def mechanism_error(allocation: np.ndarray, received_fraction: np.ndarray) -> float:
    """max over jobs and types of |received fraction - X|."""
    return float(np.max(np.abs(received_fraction - allocation))) if allocation.size else 0.0
