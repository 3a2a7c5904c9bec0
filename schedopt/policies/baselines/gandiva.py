"""Gandiva's packing as Gavel simulates it (`gandiva`): an equal split of the cluster among job
combinations, with jobs paired at random when they do not all fit.

Each call (one scheduling round), with c_j GPUs of type j, s_m GPUs per job:

1. A pair formed earlier is dissolved when one of its jobs has left, or when its normalized
   throughput, sum over types j of Q_j[m,m'] / T[m,j] + Q_j[m',m] / T[m',j], is below 1
   (it is 0 when either job makes 0 steps/s paired on some type): the pair runs slower than
   time-slicing its two jobs would.
2. If the jobs ask for no more GPUs than the cluster has (sum_m s_m <= sum_j c_j), every job
   is its own combination and pairs are not used (but kept for later rounds).
3. Otherwise every job not in a pair is paired at random (seeded) with another unpaired job of
   the same scale factor: the unpaired jobs of each scale factor are shuffled and paired
   consecutively (one may be left alone). Combinations are the pairs and the unpaired jobs.

With K combinations, combination i gets x[i,j] = c_j / (K s_i) of type j, scaled down so
that sum_j x[i,j] <= 1 (time fractions; the GPUs used then never exceed c_j).

Gavel's implementation draws a limited number of random pairs per round (a draw of two jobs
of unequal scale factor is wasted), so it leaves more jobs unpaired than this maximal random
pairing does; both are randomized heuristics, not formulations with an optimum.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def equal_split(capacity: np.ndarray, scale_factor: np.ndarray) -> np.ndarray:
    """(K, J) time fractions of K combinations (scale factors s, GPUs per combination) sharing
    the cluster equally: c_j / (K s_i), each row scaled to sum to at most 1."""
    K = scale_factor.shape[0]
    if K == 0:
        return np.zeros((0, capacity.shape[0]))
    x = capacity[None, :] / (K * scale_factor[:, None])
    return x / np.maximum(x.sum(axis=1, keepdims=True), 1.0)


def normalized_pair_throughput(rates: np.ndarray, T: np.ndarray, a: np.ndarray,
                               b: np.ndarray) -> np.ndarray:
    """(n,) sum over types of Q_j[a,b] / T[a,j] + Q_j[b,a] / T[b,j] for pairs (a[i], b[i]);
    0 where either job makes 0 steps/s (or has no pair rate) on some type. rates: (J, M, M)
    steps/s, nan where not measured; T: (M, J) solo steps/s."""
    qa = np.nan_to_num(rates[:, a, b].T)  # (n, J)
    qb = np.nan_to_num(rates[:, b, a].T)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = np.nan_to_num(qa / T[a] + qb / T[b], posinf=0.0).sum(axis=1)
    stalled = np.any((qa <= 0) | (qb <= 0), axis=1)
    return np.where(stalled, 0.0, total)


@dataclass
class GandivaPacking:
    """The pairing state across rounds (keyed by the caller's job ids) and the seeded random
    generator; `allocate` is one round."""

    seed: int | None = None
    partner: dict = field(default_factory=dict)  # job id -> the job id it is paired with
    rng: np.random.Generator = field(init=False)

    def __post_init__(self):
        self.rng = np.random.default_rng(self.seed)

    def allocate(self, job_ids: list, throughput: np.ndarray, scale_factor: np.ndarray,
                 capacity: np.ndarray, rates: np.ndarray, offered: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One round (module docstring). job_ids: (M,) hashable ids; throughput: (M, J) solo
        steps/s; scale_factor: (M,) GPUs; capacity: (J,) GPUs; rates: (J, M, M) pair steps/s
        (nan: not measured); offered: (M, M) bool, the pairs that may be formed (default:
        all; a drawn pair outside it leaves both jobs alone this round). Returns (solo (M, J) time fractions, pair first rows, pair second
        rows, pair (n, J) time fractions)."""
        M, J = throughput.shape
        row = {job: m for m, job in enumerate(job_ids)}
        self._dissolve(row, throughput, rates)
        none = np.zeros(0, dtype=np.int64)
        if scale_factor.sum() <= capacity.sum():
            return equal_split(capacity, scale_factor), none, none, np.zeros((0, J))
        self._pair_at_random(job_ids, row, scale_factor,
                             np.ones((M, M), dtype=bool) if offered is None else offered)
        first = np.array(sorted({min(row[a], row[b]) for a, b in self.partner.items()}),
                         dtype=np.int64)
        second = np.array([row[self.partner[job_ids[m]]] for m in first], dtype=np.int64)
        alone = np.setdiff1d(np.arange(M), np.concatenate([first, second]))
        split = equal_split(capacity, np.concatenate([scale_factor[alone],
                                                      scale_factor[first]]))
        solo = np.zeros((M, J))
        solo[alone] = split[: alone.size]
        return solo, first, second, split[alone.size:]

    def _dissolve(self, row: dict, throughput: np.ndarray, rates: np.ndarray) -> None:
        pairs = [(a, b) for a, b in self.partner.items() if a in row and b in row]
        keep = set()
        if pairs:
            a = np.array([row[p[0]] for p in pairs])
            b = np.array([row[p[1]] for p in pairs])
            good = normalized_pair_throughput(rates, throughput, a, b) >= 1.0
            keep = {p[0] for p, ok in zip(pairs, good) if ok}
        self.partner = {a: b for a, b in self.partner.items() if a in keep}

    def _pair_at_random(self, job_ids: list, row: dict, scale_factor: np.ndarray,
                        offered: np.ndarray) -> None:
        free = np.array([m for m, job in enumerate(job_ids) if job not in self.partner],
                        dtype=np.int64)
        shuffled = free[self.rng.permutation(free.size)]
        order = shuffled[np.argsort(scale_factor[shuffled], kind="stable")]
        sizes = scale_factor[order]
        # consecutive jobs of one scale factor pair up: positions 0-1, 2-3, ... within a group
        start = np.searchsorted(sizes, sizes, side="left")
        rank = np.arange(order.size) - start
        lead = (rank % 2 == 0) & (np.append(sizes[1:], np.nan) == sizes)
        a_rows, b_rows = order[lead], order[np.flatnonzero(lead) + 1]
        keep = offered[a_rows, b_rows]
        for a, b in zip(a_rows[keep], b_rows[keep]):
            self.partner[job_ids[a]] = job_ids[b]
            self.partner[job_ids[b]] = job_ids[a]
