"""One job's cheapest way to reach a level, for every job at once (the closed-form sub-problem
of the price decomposition in `levels.py`).

At GPU prices p (level units per GPU-time share), job m reaches level tau at least cost

    h_m(tau) = min  s_m p @ x   s.t.  gain[m] @ x >= tau,  sum_j x_j <= 1,  x >= 0.

h_m is the lower convex hull of the origin and the points (gain[m,j], s_m p_j): piecewise
linear, convex and non-decreasing in tau up to the job's top level max_j gain[m,j]. Vertex 0
is the origin; vertex k >= 1 is "all of the job's time on type `vertex_type[m,k-1]`". On the
first segment the job uses part of its time on one type; on a later segment it splits all of
its time between two neighbouring vertices' types.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Hulls:
    """Per-job hulls. level/cost: (M, J+2) vertex coordinates (vertex 0 = origin; unused
    vertices, and one spare column, repeat the last one); vertex_type: (M, J) GPU type of vertices 1..J (-1 unused);
    top: (M,) index of the last vertex (the job's highest reachable level is level[m, top])."""

    level: np.ndarray
    cost: np.ndarray
    vertex_type: np.ndarray
    top: np.ndarray

    @property
    def top_level(self) -> np.ndarray:
        return self.level[np.arange(self.level.shape[0]), self.top]

    def rows(self, keep: np.ndarray) -> "Hulls":
        """The hulls of the jobs selected by `keep` (a mask or indices)."""
        return Hulls(self.level[keep], self.cost[keep], self.vertex_type[keep], self.top[keep])


def build_hulls(gain: np.ndarray, unit_cost: np.ndarray) -> Hulls:
    """Hulls of every job: gain (M, J) level per unit time (0 = cannot run), unit_cost (M, J)
    = s_m p_j, the cost of all of the job's time on type j. Gift wrapping from the origin, one
    numpy pass per GPU type (J passes), never a loop over jobs."""
    M, J = gain.shape
    rows = np.arange(M)
    level = np.zeros((M, J + 2))
    cost = np.zeros((M, J + 2))
    vertex_type = np.full((M, J), -1)
    top = np.zeros(M, dtype=int)
    cur_level, cur_cost = np.zeros(M), np.zeros(M)
    slope = np.empty((M, J))
    for k in range(J):
        ahead = gain > cur_level[:, None] * (1 + 1e-12)   # implies gain > 0
        slope.fill(np.inf)
        np.divide(unit_cost - cur_cost[:, None], gain - cur_level[:, None], out=slope, where=ahead)
        best = slope.min(axis=1)
        more = np.isfinite(best)
        # Among (near-)equal slopes go to the farthest point: the hull keeps no collinear vertex.
        tied = slope <= best[:, None] + 1e-12 * np.abs(best)[:, None]
        pick = np.argmax(np.where(tied, gain, -1.0), axis=1)
        cur_level = np.where(more, gain[rows, pick], cur_level)
        cur_cost = np.where(more, unit_cost[rows, pick], cur_cost)
        vertex_type[:, k] = np.where(more, pick, -1)
        top += more
        level[:, k + 1] = cur_level
        cost[:, k + 1] = cur_cost
    level[:, J + 1], cost[:, J + 1] = cur_level, cur_cost
    return Hulls(level, cost, vertex_type, top)


def segment_of(hulls: Hulls, target: np.ndarray) -> np.ndarray:
    """(M,) index k of the segment [level_k, level_k+1] holding each job's target level (the
    left one at a vertex); == top where the target is above the job's highest level."""
    inside = hulls.level[:, 1:] < target[:, None]
    return np.minimum(inside.sum(axis=1), hulls.top)


def _segment_ends(hulls: Hulls, segment: np.ndarray):
    rows = np.arange(segment.shape[0])
    return (hulls.level[rows, segment], hulls.level[rows, segment + 1],
            hulls.cost[rows, segment], hulls.cost[rows, segment + 1])


def segment_slope(hulls: Hulls, segment: np.ndarray) -> np.ndarray:
    """(M,) d cost / d level on each job's segment (0 past the top: the job is capped there)."""
    lo, hi, c_lo, c_hi = _segment_ends(hulls, segment)
    width = hi - lo
    return np.where(width > 0, (c_hi - c_lo) / np.where(width > 0, width, 1.0), 0.0)


def cost_on(hulls: Hulls, segment: np.ndarray, target: np.ndarray) -> np.ndarray:
    """(M,) cost of each job at `target` on its given segment (the segment's line extended)."""
    lo, _, c_lo, _ = _segment_ends(hulls, segment)
    return c_lo + segment_slope(hulls, segment) * (target - lo)


def affine_allocation(hulls: Hulls, segment: np.ndarray, num_types: int):
    """(X0, X1), each (M, J): on its segment job m's allocation at level tau is X0 + X1 tau."""
    M = segment.shape[0]
    rows = np.arange(M)
    lo, hi, _, _ = _segment_ends(hulls, segment)
    width = np.where(hi > lo, hi - lo, 1.0)
    X0, X1 = np.zeros((M, num_types)), np.zeros((M, num_types))
    first = segment == 0
    nxt = hulls.vertex_type[rows, np.minimum(segment, num_types - 1)]
    prev = hulls.vertex_type[rows, np.maximum(segment - 1, 0)]
    usable = (nxt >= 0) & (hi > lo)
    # first segment: time tau / level_1 on the first vertex's type
    X1[rows[first & usable], nxt[first & usable]] = 1.0 / width[first & usable]
    # later segments: all the time, moving from the previous vertex's type to the next one's
    mid = ~first & usable
    X0[rows[mid], prev[mid]] = hi[mid] / width[mid]
    X1[rows[mid], prev[mid]] = -1.0 / width[mid]
    X0[rows[mid], nxt[mid]] = -lo[mid] / width[mid]
    X1[rows[mid], nxt[mid]] = 1.0 / width[mid]
    # a job whose target is at (or, capped, past) its top vertex: all its time on that type
    capped = ~usable & (hulls.top > 0)
    last = hulls.vertex_type[rows, np.maximum(hulls.top - 1, 0)]
    X0[rows[capped], last[capped]] = 1.0
    return X0, X1
