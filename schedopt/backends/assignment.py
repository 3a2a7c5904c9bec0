"""Min-cost bipartite assignment (each row one column, each column at most one row) by three
solvers: scipy's dense Hungarian method, scipy's sparse full matching and OR-Tools' min-cost
flow. Infinite costs are forbidden pairs. Used by AlloX's matching."""

from __future__ import annotations

import numpy as np

from schedopt.core.sparse_import import scipy_sparse
from schedopt.errors import SolveError


class NoFullMatching(Exception):
    """The capped problem leaves some job without a slot (only possible with initial_caps)."""


def _column_of_row(n: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """(n,) the slot (column) matched to each job (row)."""
    out = np.empty(n, dtype=int)
    out[rows] = cols
    return out


def dense(cost: np.ndarray) -> np.ndarray:
    scipy_sparse()  # which scipy.optimize imports: this way without numpy's unused modules
    from scipy.optimize import linear_sum_assignment

    try:
        rows, cols = linear_sum_assignment(cost)
    except ValueError as exc:  # "cost matrix is infeasible"
        raise NoFullMatching from exc
    return _column_of_row(cost.shape[0], rows, cols)


def sparse(cost: np.ndarray) -> np.ndarray:
    csr_matrix = scipy_sparse().csr_matrix
    from scipy.sparse.csgraph import min_weight_full_bipartite_matching

    rows, cols = np.nonzero(np.isfinite(cost))
    weights = cost[rows, cols]
    weights = weights - weights.min() + 1.0  # every row takes one entry: a shift changes nothing;
    graph = csr_matrix((weights, (rows, cols)), shape=cost.shape)  # > 0, as zeros are no edge
    try:
        r, c = min_weight_full_bipartite_matching(graph)
    except ValueError as exc:  # "no full matching exists"
        raise NoFullMatching from exc
    return _column_of_row(cost.shape[0], r, c)


def min_cost_flow(cost: np.ndarray) -> np.ndarray:
    from ortools.graph.python import min_cost_flow as flows

    n, S = cost.shape
    rows, cols = np.nonzero(np.isfinite(cost))
    weights = cost[rows, cols] - cost[rows, cols].min()
    top = min(2.0 ** 40, 2.0 ** 60 / (n + S + 1))  # OR-Tools scales costs by the node count
    scaled = np.rint(weights * (top / weights.max() if weights.max() > 0 else 1.0)).astype(np.int64)
    flow = flows.SimpleMinCostFlow()
    sink = n + S
    tails = np.concatenate([rows, n + np.arange(S)])
    heads = np.concatenate([n + cols, np.full(S, sink)])
    flow.add_arcs_with_capacity_and_unit_cost(tails, heads, np.ones(tails.size, dtype=np.int64),
                                              np.concatenate([scaled, np.zeros(S, np.int64)]))
    flow.set_nodes_supplies(np.append(np.arange(n), sink),
                            np.append(np.ones(n, dtype=np.int64), -n))
    status = flow.solve()
    if status == flow.INFEASIBLE:
        raise NoFullMatching
    if status != flow.OPTIMAL:
        raise SolveError(f"OR-Tools min-cost flow stopped with status {status}")
    used = flow.flows(np.arange(rows.size)) > 0
    out = np.empty(n, dtype=int)
    out[rows[used]] = cols[used]
    return out
