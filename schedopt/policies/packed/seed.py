"""A start for column generation: the space-sharing LP aggregated over interchangeable jobs.

Jobs with the same job type, solo throughput row, scale factor and weight have identical
columns and rows, so averaging an optimal allocation over every permutation inside each class
of such jobs gives another optimal one (the LP is convex and invariant under those
permutations). Its class-level LP (`class_lp`) has, per class c with n_c jobs: the solo share
x[c,j] of each job, and per pair of classes (c, c') and GPU type j the total pair time y:

    sum_j x[c,j] + sum_{y ∋ c} y / n_c                    <= 1   time of each job of c
    sum_c n_c (s_c/c_j) x[c,j] + sum_{y on j} (s/c_j) y   <= 1   GPUs of type j
    (sum_j T_c,j x[c,j] + sum_{y ∋ c} Q y / n_c) / Tmax_c >= k_c t

(a pair inside one class counts twice in its rows). The pairs it uses are spread over the
jobs of their classes (`spread`): between two classes by the north-west-corner rule on
uniform marginals (at most n_c + n_c' - 1 job pairs), inside one class as a cycle. Those job
pairs let the master LP reach the optimum at once; column generation still prices every pair
from the master's duals, so the seed only saves rounds and is never trusted for the bound.
When the exact classes do not aggregate (more than M/2 of them, or more than `max_pairs`
class pairs) coarse ones are tried (same type and scale factor, each class' mean rows), and
their job pairs kept where they are candidates; when neither aggregates there is no seed.
"""

from __future__ import annotations

import numpy as np

from schedopt.backends.session import Solver
from schedopt.core.problem import ThroughputProblem
from schedopt.modeling import Model, Variable
from schedopt.policies.packed.master import Candidates, by_group, scaling
from schedopt.core.sparse_import import scipy_sparse

sp = scipy_sparse()

EMPTY = (np.zeros(0, dtype=np.int64),) * 3


def class_seed(problem: ThroughputProblem, cand: Candidates, job_type: np.ndarray,
               solver: Solver, max_pairs: int = 50_000):
    """(j, m, m') job pairs, m < m', that realize an optimal class-level allocation: of exact
    classes (same type, solo row, scale factor, weight) or, when those are more than half as
    many as the jobs or give more than `max_pairs` class pairs, of coarse ones (same type and
    scale factor, rows averaged); none when neither aggregates. `solver` solves the class LP."""
    s = problem.scale_factor
    for key in (np.column_stack([job_type, s, problem.weight, problem.throughput]),
                np.column_stack([job_type, s])):
        _, cls, size = np.unique(key, axis=0, return_inverse=True, return_counts=True)
        if 2 * size.size > problem.num_jobs:
            continue
        members = np.argsort(cls.ravel(), kind="stable")
        first = np.concatenate([[0], np.cumsum(size)[:-1]])
        rep = members[first]
        rep2 = members[np.minimum(first + 1, members.size - 1)]  # a second member if n_c > 1
        C = size.size
        partner = np.where(np.eye(C, dtype=bool), rep2[None, :], rep[None, :])  # (C, C) jobs
        ok = cand.mask[:, rep[:, None], partner] & np.triu(np.ones((C, C), dtype=bool))
        ok[:, np.arange(C), np.arange(C)] &= size >= 2
        pj, c1, c2 = np.nonzero(ok)
        if pj.size <= max_pairs:
            break
    else:
        return EMPTY
    if pj.size == 0:
        return EMPTY
    y = class_lp(problem, cand, cls.ravel(), size, rep, partner, pj, c1, c2, solver)
    if y is None:
        return EMPTY
    used = y > 1e-12
    pj, a, b = spread(pj[used], c1[used], c2[used], members, first, size)
    keep = cand.mask[pj, a, b]  # all of them, unless the classes were coarse
    return pj[keep], a[keep], b[keep]


def class_lp(problem, cand, cls, size, rep, partner, pj, c1, c2,
             solver: Solver) -> np.ndarray | None:
    """Solve the class-level LP (`class_model`); the total time y of each class pair (None
    without a solution)."""
    model, y = class_model(problem, cand, cls, size, rep, partner, pj, c1, c2)
    return model.solve(solver)[y]


def class_model(problem, cand, cls, size, rep, partner, pj, c1, c2) -> tuple[Model, Variable]:
    """The class-level LP (module docstring) with each class's mean coefficients, over
    [x (C, J), t, y (class pairs (pj, c1, c2))]. cls: (M,) each job's class; size: (C,) jobs
    per class; rep: (C,) a job of each class; partner[c, c']: a job of c' other than rep[c]."""
    C, J, M = size.size, problem.num_types, problem.num_jobs
    mean = sp.csr_matrix((1.0 / size[cls], (cls, np.arange(M))), shape=(C, M))
    Tmax, k = scaling(problem)
    T = mean @ (problem.throughput * problem.runnable / Tmax[:, None])
    share = problem.scale_factor[rep, None] / problem.capacity[None, :]
    a, b = rep[c1], partner[c1, c2]  # a job of each class of the pair
    model = Model()
    x = model.variable("x", (C, J), upper=np.where(T > 0, np.inf, 0.0))
    t = model.variable("t")
    y = model.variable("y", pj.size)
    # a pair inside one class (c1 == c2) enters its class's rows twice
    model.add("time", x.sum(axis=1) + by_group(y / size[c1], c1, C)
              + by_group(y / size[c2], c2, C) <= 1.0)
    model.add("gpus", ((size[:, None] * share) * x).sum(axis=0)
              + by_group(share[c1, pj] * y, pj, J) <= 1.0)
    model.add("fairness", (T * x).sum(axis=1) - (mean @ k) * t
              + by_group((cand.Q[pj, a, b] / Tmax[a] / size[c1]) * y, c1, C)
              + by_group((cand.Q[pj, b, a] / Tmax[b] / size[c2]) * y, c2, C) >= 0.0)
    model.maximize(t)
    return model, y


def spread(pj, c1, c2, members, first, size):
    """Job pairs (j, m, m'), m < m', carrying each used class pair (see module docstring)."""
    out_j, out_a, out_b = ([np.zeros(0, dtype=np.int64)] for _ in range(3))
    for j, p, q in zip(pj.tolist(), c1.tolist(), c2.tolist()):  # used class pairs, not jobs
        A, B = members[first[p]:first[p] + size[p]], members[first[q]:first[q] + size[q]]
        if p == q:
            a, b = (A[:1], A[1:]) if A.size == 2 else (A, np.roll(A, -1))
        else:  # north-west corner: pieces between the breakpoints i/n_A and k/n_B, in units
            cuts = np.union1d(np.arange(A.size + 1) * B.size, np.arange(B.size + 1) * A.size)
            mid2 = cuts[1:] + cuts[:-1]  # of 1/(n_A n_B); twice each piece's midpoint
            a, b = A[mid2 // (2 * B.size)], B[mid2 // (2 * A.size)]
        out_j.append(np.full(a.size, j))
        out_a.append(np.minimum(a, b))
        out_b.append(np.maximum(a, b))
    return tuple(np.concatenate(x).astype(np.int64) for x in (out_j, out_a, out_b))
