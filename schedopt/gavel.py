"""A drop-in for Gavel's policy objects: Gavel's scheduler runs schedopt's policies unchanged.

    from schedopt.gavel import get_policy
    policy = get_policy("max_min_fairness_perf")   # the names Gavel's utils.get_policy takes
    policy.name                                     # "MaxMinFairness_Perf", Gavel's class-style name
    allocation = policy.get_allocation(throughputs, scale_factors, priority_weights, cluster_spec)

Gavel's scheduler (`scheduler.py`, `_compute_allocation`) picks the arguments it passes by the
policy object's `name`, and reads nothing else from the object; so `name` is Gavel's, and
`get_allocation` takes, for each policy, the parameters of Gavel's method of that name, in
order, with Gavel's keywords and defaults (`inspect.signature(policy.get_allocation)` shows them).

Arguments keep Gavel's shapes: `throughputs[job_id][worker_type]` in steps/s,
`scale_factors[job_id]` (GPUs), `priority_weights[job_id]`, `cluster_spec[worker_type]` (GPUs),
`num_steps_remaining[job_id]` (steps), `times_since_start[job_id]` (s),
`instance_costs[worker_type]` ($/h; None: 1 $/h for every type, as in Gavel), `SLOs[job_id]`
(seconds left). Worker types are those of
the first job's throughputs, sorted, as in Gavel. The result is `{job_id: {worker_type: time
fraction}}`, or None when there are no jobs. Job ids may be any sortable keys (Gavel's JobIdPair
included). The hierarchical water filling takes Gavel's `entity_weights` and
`entity_to_job_mapping` ({entity: [job ids]}). Every name of Gavel's `utils.get_policy` is
offered (`allox_alpha=A` too); docs/gavel-adapter.md has the table, and which optimum each
returns where its LP has many (`spread_over_types`, `average_interchangeable_jobs`,
LEXIMIN_OPTIMUM, FTF_LEXIMIN, MAKESPAN_LEXIMIN, CENTERED, `gavel_feasible_point`).

Packed names (`PACKED`): Gavel's scheduler offers job pairs to a policy whose name holds
`Packing`: `throughputs` then also has a key per pair of jobs (Gavel's JobIdPair: `is_pair()`
true, `singletons()` its two jobs) whose value per worker type is [steps/s of the first job,
of the second] while they share GPUs. The adapter reads them as a co-location table with one
label per job (`build_pair_table`) and returns, as Gavel's packed policies do, each job's solo
time fractions under its own id and each pair's time fractions under the pair's key. `gandiva`
is packed too (Gavel's own Gandiva, `GavelGandiva`); `allox` decides whole GPUs
(`allox.matching`).

State kept across calls, as Gavel's objects keep it: the isolated time credited to each job
(finish-time fairness), the GPU type each running job holds (`fifo`, `allox`) and Gandiva's
pairs with its seeded generator (`GavelGandiva`).
"""

from __future__ import annotations

import dataclasses
import inspect
import random

import numpy as np

from schedopt.api import solve
from schedopt.backends.base import LinearProgram, SolutionStatus
from schedopt.backends.gavel_programs import (ecos_installed, glpk_mi_installed,
                                              max_throughput_sum_ecos,
                                              min_max_finish_time_ratio_ecos,
                                              min_max_finish_time_ratio_packed_ecos,
                                              water_filling_ecos_glpk)
from schedopt.backends.session import Solver
from schedopt.core.problem import ThroughputProblem
from schedopt.errors import PolicyError
from schedopt.policies.catalog import GAVEL_ALIASES
from schedopt.policies.gavel.lp import (finish_time_ratios, isolated_finish_time,
                                       isolated_throughput, makespan_of)
from schedopt.policies.allox.matching import allox_schedule
from schedopt.policies.packed.per_dollar import MinCostPacked
from schedopt.policies.packed.fifo import FifoPacked, fifo_solo
from schedopt.policies.packed.finish_fairness import (FinishTimeFairnessPacked,
                                                      finish_time_ratios_packed, isolated_finish)
from schedopt.policies.packed.master import PairTable
from schedopt.policies.packed.policy import MinMakespanPacked, WaterFillingPacked

_T, _TU = "throughputs", "unflattened_throughputs"
_W, _WU = "priority_weights", "unflattened_priority_weights"
_WATER = ("entity_weights", "entity_to_job_mapping", "verbose", "return_effective_throughputs")
_FTF = (_TU, "scale_factors", _WU, "times_since_start", "num_steps_remaining", "cluster_spec")
_SLO = (_TU, "scale_factors", "cluster_spec", "instance_costs", "SLOs", "num_steps_remaining")

# Gavel's name -> (Gavel's class-style `name`, get_allocation's parameters after self).
SIGNATURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "allox": ("AlloX_Perf", (_TU, "scale_factors", "times_since_start", "num_steps_remaining",
                             "cluster_spec")),
    "fifo": ("FIFO", (_T, "scale_factors", "cluster_spec")),
    "fifo_perf": ("FIFO_Perf", (_T, "scale_factors", "cluster_spec")),
    "fifo_packed": ("FIFO_Packing", (_T, "scale_factors", "cluster_spec")),
    "gandiva": ("Gandiva_Packing", (_TU, "scale_factors", "cluster_spec")),
    "isolated": ("Isolated", (_TU, "scale_factors", "cluster_spec")),
    "max_min_fairness": ("MaxMinFairness", (_TU, "scale_factors", _W, "cluster_spec")),
    "max_min_fairness_perf": ("MaxMinFairness_Perf", (_TU, "scale_factors", _WU, "cluster_spec")),
    "max_min_fairness_packed": ("MaxMinFairness_Packing",
                                (_TU, "scale_factors", _WU, "cluster_spec")),
    "max_min_fairness_water_filling": ("MaxMinFairnessWaterFilling",
                                       (_TU, "scale_factors", _WU, "cluster_spec") + _WATER),
    "max_min_fairness_water_filling_perf": ("MaxMinFairnessWaterFilling_Perf",
                                            (_TU, "scale_factors", _WU, "cluster_spec") + _WATER),
    "max_min_fairness_water_filling_packed": ("MaxMinFairnessWaterFilling_Packing",
                                              (_TU, "scale_factors", _WU, "cluster_spec") + _WATER),
    "min_total_duration": ("MinTotalDuration",
                           (_TU, "scale_factors", "num_steps_remaining", "cluster_spec")),
    "min_total_duration_perf": ("MinTotalDuration_Perf",
                                (_TU, "scale_factors", "num_steps_remaining", "cluster_spec")),
    "min_total_duration_packed": ("MinTotalDuration_Packing",
                                  (_TU, "scale_factors", "num_steps_remaining", "cluster_spec")),
    "finish_time_fairness": ("FinishTimeFairness", _FTF),
    "finish_time_fairness_perf": ("FinishTimeFairness_Perf", _FTF),
    "finish_time_fairness_packed": ("FinishTimeFairness_Packing", _FTF),
    "max_sum_throughput_perf": ("ThroughputSumWithPerf", (_TU, "scale_factors", "cluster_spec")),
    "max_sum_throughput_normalized_by_cost_perf": (
        "ThroughputNormalizedByCostSum_Perf",
        (_TU, "scale_factors", "cluster_spec", "instance_costs")),
    "max_sum_throughput_normalized_by_cost_perf_SLOs": ("ThroughputNormalizedByCostSum_PerfSLOs",
                                                        _SLO),
    "max_sum_throughput_normalized_by_cost_packed_SLOs": (
        "ThroughputNormalizedByCostSum_PackingSLOs", _SLO),
}

# Defaults of Gavel's keyword parameters (SLOs and num_steps_remaining default to empty dicts there).
_DEFAULTS = {"entity_weights": None, "entity_to_job_mapping": None, "verbose": False,
             "return_effective_throughputs": False, "instance_costs": None, "SLOs": None}
_SLO_DEFAULTS = {"SLOs": None, "num_steps_remaining": None}

# Gavel's names that this adapter refuses, and why (one line each): none; kept for callers
# that check a name before asking for it.
UNSUPPORTED: dict[str, str] = {}

# Gavel's packed names (job pairs in `throughputs`, see the docstring) -> (schedopt policy,
# options); `gandiva` is packed too (`GavelGandiva`).
PACKED_POLICIES = {
    # the leximin optimum of the max-min LP: see LEXIMIN_OPTIMUM
    "max_min_fairness_packed": (WaterFillingPacked(), {}),
    "max_min_fairness_water_filling_packed": (WaterFillingPacked(), {}),
    "min_total_duration_packed": (MinMakespanPacked(), {}),
    "fifo_packed": (FifoPacked(), {}),
    "finish_time_fairness_packed": (FinishTimeFairnessPacked(), {}),
    "max_sum_throughput_normalized_by_cost_packed_SLOs": (MinCostPacked(), {"slos": True}),
}
PACKED = frozenset(PACKED_POLICIES) | {"gandiva"}

# Gavel's packed max-min fairness returns, among its LP's many optima, an interior point (ECOS)
# where jobs off the bottleneck get more than the minimum level; a simplex vertex or column
# generation gives them no more, and Gavel's simulator then finishes them later (+4.9% average
# JCT on Gavel's max_min_fairness trace). The adapter returns the leximin allocation instead
# (water filling): its lowest level is the max-min optimum, so it is an optimum of the same LP,
# and it gives the remaining capacity out level by level (docs/gavel-adapter.md).
LEXIMIN_OPTIMUM = frozenset({"max_min_fairness_packed"})

# Finish-time fairness has the same wide optimal face (only the worst ratio is pinned): these
# names return the leximin allocation of the levels steps_m / need_m(rho*), need_m(rho*) the
# steps/s job m needs for ratio rho*, the optimum. Its lowest level is 1, so every ratio is at
# most rho* and it is an optimum too (checked; otherwise the solver's optimum is returned).
# (Not the speed-blind finish_time_fairness: on Gavel's max_min_fairness trace its leximin
# allocation, spread over types, moved average JCT from +2.8% to +10% against Gavel's run.)
FTF_LEXIMIN = frozenset({"finish_time_fairness_perf", "finish_time_fairness_packed"})
# The same for the packed makespan, with need_m = R_m / makespan (steps/s): every job still
# finishes by the optimal makespan, and the jobs off the critical path finish earlier.
MAKESPAN_LEXIMIN = frozenset({"min_total_duration_packed"})

# Gavel's speed-blind makespan and finish-time fairness solve its _Perf LP with every GPU type
# priced at the job's steps/s on this type (`agnostic_view`).
GAVEL_REFERENCE_TYPE = "v100"

# Speed-blind names that solve Gavel's V100-priced LP (`agnostic_view`).
V100_PRICED = frozenset({"min_total_duration", "finish_time_fairness"})
# Speed-blind finish-time fairness returns the analytic center of its LP's optimal face
# (`centered_optimum`), the point Gavel's interior-point solve (ECOS) approaches. Spreading each
# job's time over types in proportion to GPU counts instead (`spread_over_types`) left average
# JCT 2.8% to 6.9% above Gavel's own runs.
CENTERED = frozenset({"finish_time_fairness"})
# With Gavel's solver name "ECOS" and the ecos package installed, speed-blind finish-time
# fairness takes ECOS's own answer to Gavel's program when its largest ratio is within this
# relative slack of the LP optimum (ECOS stops at its tolerances, about 1e-6 here; Gavel takes
# its answer as it is).
ECOS_RATIO_SLACK = 1e-5
# The names that, with Gavel's solver name "ECOS" and the ecos package installed, return ECOS's
# answer to Gavel's own program (`schedopt.backends.gavel_programs`; kept only within
# ECOS_RATIO_SLACK of schedopt's optimum, else the answer without ECOS).
ECOS_ROUTE = frozenset({"finish_time_fairness", "finish_time_fairness_packed",
                        "max_sum_throughput_perf", "max_sum_throughput_normalized_by_cost_perf",
                        "max_min_fairness_water_filling"})
# Relative slack on the optimum inside which the center is taken: the answer's largest
# finish-time ratio is below the optimum times (1 + CENTER_SLACK).
CENTER_SLACK = 1e-6


def agnostic_view(problem: ThroughputProblem, every_type: bool = False) -> ThroughputProblem:
    """Gavel's speed-blind view: every runnable type runs job m at its steps/s on
    GAVEL_REFERENCE_TYPE (at its best runnable steps/s, schedopt's agnostic view, when the
    throughputs have no such type or the job cannot run on it). every_type: as Gavel's own
    program prices it, also the types where the job runs at 0 steps/s (where it has enough
    GPUs of the type)."""
    T = problem.throughput * problem.runnable
    best = T.max(axis=1)
    if GAVEL_REFERENCE_TYPE in problem.gpu_types:
        on_reference = T[:, problem.gpu_types.index(GAVEL_REFERENCE_TYPE)]
        best = np.where(on_reference > 0, on_reference, best)
    size = problem.capacity if problem.type_size is None else problem.type_size
    where = (problem.scale_factor[:, None] <= size[None, :]) if every_type else problem.runnable
    return dataclasses.replace(problem, throughput=best[:, None] * where)


def analytic_center(problem: ThroughputProblem, need: np.ndarray, start: np.ndarray,
                    cone: bool = False, max_steps: int = 200) -> np.ndarray | None:
    """The analytic center of {X: base constraints, thr_m(X) > need_m where need_m > 0}: over
    the runnable cells, the X maximizing
        sum log X[m,j] + sum_m log(1 - sum_j X[m,j]) + sum_j log(c_j - sum_m s_m X[m,j])
        + sum_m log(thr_m(X) - need_m)
    (with `cone`, 2 log(thr_m - need_m) - log thr_m: the barrier of Gavel's inv_pos finish
    time, maximized over its auxiliary variable), by damped Newton steps from `start`, a point
    strictly inside the set. need in steps/s. None when `start` is not strictly inside or the
    steps stall.

    With need_m what job m needs for the optimum relaxed by a tiny slack, this is the point
    an interior-point solve of the LP approaches: every job off the bottleneck gets a share
    of the room left, on every type it can run on, rather than the minimum or a vertex."""
    runnable = problem.runnable
    T = problem.throughput * runnable
    s, capacity = problem.scale_factor, problem.capacity.astype(float)
    has_need = need > 0
    ones = runnable.astype(float)
    S = s[:, None] * ones  # the column constraints' coefficients

    def parts(X):
        thr = (T * X).sum(axis=1)
        return 1.0 - X.sum(axis=1), capacity - s @ X, np.where(has_need, thr - need, 1.0), thr

    def barrier(X):
        room, free, margin, thr = parts(X)
        if X[runnable].min(initial=1) <= 0 or min(room.min(), free.min(), margin.min()) <= 0:
            return -np.inf
        jobs = (2 * np.log(margin) - np.log(thr))[has_need] if cone else np.log(margin)
        return np.log(X[runnable]).sum() + np.log(room).sum() + np.log(free).sum() + jobs.sum()

    X = np.where(runnable, start, 0.0).astype(float)
    value = barrier(X)
    if not np.isfinite(value):
        return None
    M, J = X.shape
    cells = np.arange(J)
    for _ in range(max_steps):
        room, free, margin, thr = parts(X)
        slope, curve = ((2 / margin - 1 / thr, 1 / thr**2 - 2 / margin**2) if cone
                        else (1 / margin, -1 / margin**2))
        slope, curve = np.where(has_need, slope, 0.0), np.where(has_need, curve, 0.0)
        inverse = np.divide(1.0, X, out=np.zeros_like(X), where=runnable)
        gradient = (inverse - (1 / room)[:, None] - S / free[None, :] + T * slope[:, None]) * ones
        # Newton's system: one J x J block per job (its cells, its row and need terms) plus
        # the rank-J column terms, solved by the Woodbury identity
        blocks = (-(ones / room[:, None] ** 2)[:, :, None] * ones[:, None, :]
                  + (curve[:, None, None] * T[:, :, None] * T[:, None, :]))
        blocks[:, cells, cells] -= np.where(runnable, inverse**2, 1.0)
        try:
            y = np.linalg.solve(blocks, -gradient[:, :, None])[:, :, 0]
            W = np.linalg.solve(blocks, S[:, :, None] * np.eye(J)[None])
            K = -np.diag(free**2) + np.einsum("mj,mjk->jk", S, W)
            step = y - W @ np.linalg.solve(K, (S * y).sum(axis=0))
        except np.linalg.LinAlgError:  # slacks so thin the system is singular in floats
            return None
        decrement = float((gradient * step).sum())
        if not np.isfinite(decrement):
            return None
        if decrement < 1e-9:  # the barrier is within 1e-9 of its maximum
            return X
        t = 1.0
        while (trial := barrier(X + t * step)) < value + 0.25 * t * decrement:
            t *= 0.5
            if t < 1e-12:
                return None
        X, value = X + t * step, trial
    return None


def centered_optimum(problem: ThroughputProblem, X: np.ndarray) -> np.ndarray:
    """CENTERED: the analytic center of the allocations whose largest finish-time ratio is
    below X's times (1 + CENTER_SLACK), X an optimum of `problem`, a speed-blind view
    (`agnostic_view`); X itself when the center is not found.

    The slack shrinks tenfold from 10% to CENTER_SLACK, each center starting from 1/20 of the
    previous one and 19/20 of X: that point keeps half the new slack on every job (a thin
    start next to X's zeros and full rows stalls Newton's steps)."""
    active = problem.remaining_steps > 0
    if not active.any():
        return X
    isolated = isolated_finish_time(problem)
    rho = float(np.max(finish_time_ratios(problem, X, isolated)[active]))
    center = _shrinking_slack_center(
        problem, X, lambda slack: ftf_need(problem, rho * (1 + slack), isolated, weighted=False),
        cone=True)
    return X if center is None else center


def center_over_types(problem: ThroughputProblem, X: np.ndarray) -> np.ndarray | None:
    """The analytic center of the allocations that give every job at least its total time
    fraction in X (less a relative CENTER_SLACK) on the types it can run on, within every
    type's GPU count; None when it is not found. For a speed-blind policy, whose objective
    sees a job's total time only, it is as optimal as X."""
    unit = dataclasses.replace(problem, throughput=problem.runnable.astype(float))
    total = (X * problem.runnable).sum(axis=1)
    return _shrinking_slack_center(unit, X, lambda slack: total * (1 - slack), cone=False)


def _shrinking_slack_center(problem: ThroughputProblem, X: np.ndarray, need_at,
                            cone: bool) -> np.ndarray | None:
    """`analytic_center` with need_at(slack) (steps/s), the slack shrunk tenfold from 10% to
    CENTER_SLACK, each center starting from 1/20 of the previous one and 19/20 of X (X meets
    every need at slack 0); None when a center is not found."""
    runnable = problem.runnable
    inside = 0.5 * min(1.0 / runnable.sum(axis=1).max(),
                       float(np.min(problem.capacity / (problem.scale_factor @ runnable))))
    center, slack = inside * runnable, 0.1
    weight = slack / 4  # of the interior point, at the first slack
    while True:
        center = analytic_center(problem, need_at(slack), weight * center + (1 - weight) * X,
                                 cone)
        if center is None or slack <= CENTER_SLACK:
            return center
        slack, weight = max(slack / 10, CENTER_SLACK), 0.05


def gavel_bisection_makespan(optimum: float) -> float:
    """The makespan (s) at which Gavel's speed-blind min_total_duration stops, given the
    optimal one (s): it bisects [100 s, 1e6 s] (then [1e6, 1e7], and so on while nothing there
    is feasible), a midpoint being feasible when it is at least the optimum, until the range
    is within a factor 1.05, and keeps the last feasible midpoint: between the optimum and
    5% above it."""
    low, high, found = 100.0, 1e6, None
    while found is None:
        while 1.05 * low < high:
            middle = (low + high) / 2
            if middle >= optimum:
                found = high = middle
            else:
                low = middle
        low, high = high, high * 10
    return found


def gavel_feasible_point(problem: ThroughputProblem, makespan: float) -> np.ndarray | None:
    """Clarabel's answer to Gavel's speed-blind min_total_duration at `makespan` (s), a
    feasibility LP without objective over the runnable cells, each row scaled as Gavel's:
    X >= 0, sum_m s_m X[m,j] <= c_j, sum_j X[m,j] <= 1, sum_j T[m,j] X[m,j] >= R_m / makespan
    (T in steps/s, R in steps). With no objective an interior-point method returns the first
    point it finds feasible, which depends on where it starts, not a center; on Gavel's own
    calls Clarabel's point lies closer to Gavel's ECOS answer than the analytic center of the
    optimal face does (docs/gavel-adapter.md). Clipped to [0, 1] as Gavel's; None unless
    Clarabel reports it solved."""
    import scipy.sparse as sp

    cells = np.argwhere(problem.runnable)  # (row, type) of each variable
    n, (M, J) = len(cells), problem.throughput.shape
    m, j, column = cells[:, 0], cells[:, 1], np.arange(len(cells))
    A = sp.vstack([sp.csr_matrix((problem.scale_factor[m], (j, column)), shape=(J, n)),
                   sp.csr_matrix((np.ones(n), (m, column)), shape=(M, n)),
                   sp.csr_matrix((problem.throughput[m, j], (m, column)), shape=(M, n))],
                  format="csr")
    lp = LinearProgram(
        c=np.zeros(n), A=A,
        row_lower=np.concatenate([np.full(J + M, -np.inf),
                                  np.nan_to_num(problem.remaining_steps) / makespan]),
        row_upper=np.concatenate([problem.capacity, np.ones(M), np.full(M, np.inf)]),
        col_lower=np.zeros(n), col_upper=np.full(n, np.inf))
    result = Solver("clarabel").solve(lp)
    if result.solution is not SolutionStatus.OPTIMAL:
        return None
    X = np.zeros((M, J))
    X[m, j] = np.clip(result.x, 0.0, 1.0)
    return X


def gavel_isolated_throughput(problem: ThroughputProblem) -> np.ndarray:
    """(M,) steps/s of each job under Gavel's isolated share, in the order of Gavel's float
    operations (c_j / M of every type, divided by s_m, each row scaled to sum to at most 1,
    then sum_j T x): `isolated_throughput` to the last bit, so the ECOS route hands ECOS the
    data Gavel's does (a last-bit difference moves ECOS's answer by about 1e-7, which Gavel's
    simulator amplifies)."""
    M = problem.num_jobs
    x = np.array([[c / M for c in problem.capacity] for _ in range(M)])
    x = x / problem.scale_factor[:, None]
    x = x / np.maximum(np.sum(x, axis=1), 1.0)[:, None]
    return np.sum(np.multiply(problem.throughput, x), axis=1)


def level_weights(problem: ThroughputProblem, need: np.ndarray) -> np.ndarray:
    """(M,) weights under which water filling's level of job m, s_m steps_m / (w_m thr^eq_m),
    is steps_m / need_m (need in steps/s; a job that needs nothing keeps weight 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        w = problem.scale_factor * need / problem.equal_share_throughput
    return np.where((need > 0) & np.isfinite(w) & (w > 0), w, 1.0)


def ftf_need(problem: ThroughputProblem, rho: float, isolated: np.ndarray,
             weighted: bool) -> np.ndarray:
    """(M,) steps/s each job needs for finish-time ratio <= rho: w_m R_m / (rho D_m - t_m)
    (w_m = 1 unless weighted; 0 for jobs without steps left)."""
    R = np.nan_to_num(problem.remaining_steps)
    room = rho * isolated - problem.time_since_arrival
    w = problem.weight if weighted else 1.0
    return np.where((R > 0) & (room > 0), w * R / np.where(room > 0, room, 1.0), 0.0)


# Backends used when none is named: for the throughput sums, whose optimal faces are wide, an
# interior-point solve returns a point inside the face as Gavel's ECOS does (a simplex vertex
# starves some jobs, and Gavel's simulator finishes them later; docs/gavel-adapter.md).
INTERIOR_POINT_DEFAULTS = {name: "clarabel" for name in (
    "max_sum_throughput_perf", "max_sum_throughput_normalized_by_cost_perf",
    "max_sum_throughput_normalized_by_cost_perf_SLOs")}

# Gavel's speed-blind policies: a job's time on any runnable type counts the same, so every
# split of a job's total time over types is optimal (see spread_over_types).
SPEED_BLIND = frozenset({"max_min_fairness", "max_min_fairness_water_filling",
                         "min_total_duration", "finish_time_fairness"})


def spread_over_types(problem: ThroughputProblem, X: np.ndarray) -> np.ndarray:
    """Each job's time fraction raised by one common amount while the GPUs last (capped at 1),
    then split over its runnable types in proportion to their GPU counts; when that split does
    not fit every type's count, the analytic center of X's total times (`center_over_types`),
    or X as is if that is not found.

    For a speed-blind policy (a job's time counts the same on every type it can run on) each
    job's objective term depends on its total time only and does not fall as it grows, so this
    allocation is optimal too. Gavel's interior-point solves of those degenerate LPs return
    such an allocation; a simplex vertex puts whole jobs on single types and leaves GPUs idle,
    and Gavel's simulator (which runs jobs at their true speeds) then finishes them differently
    (docs/gavel-adapter.md)."""
    share = problem.runnable * problem.capacity[None, :]
    total = share.sum(axis=1, keepdims=True)
    share = np.divide(share, total, out=np.zeros_like(share), where=total > 0)
    time = X.sum(axis=1)
    s, room = problem.scale_factor, problem.capacity.sum()
    low, high = 0.0, 1.0
    for _ in range(60):  # the largest common extra time whose GPUs fit the cluster (bisection)
        mid = 0.5 * (low + high)
        low, high = (mid, high) if s @ np.minimum(1.0, time + mid) <= room else (low, mid)
    for extra in (low, 0.0):
        spread = np.minimum(1.0, time + extra)[:, None] * share
        if np.all(s @ spread <= problem.capacity * (1 + 1e-9) + 1e-9):
            return spread
    center = center_over_types(problem, X)
    return X if center is None else center


def average_interchangeable_jobs(problem: ThroughputProblem, X: np.ndarray) -> np.ndarray:
    """X with the rows of interchangeable jobs (same throughputs, scale factor, weight and SLO
    need in steps/s) replaced by their mean.

    For a policy whose LP treats such jobs alike (the throughput sums), permuting them maps
    optima to optima, so the mean of those permutations, this X, is optimal too (convexity). It
    is the split Gavel's interior-point solves return, where a simplex vertex gives one of the
    jobs all the time and the other none (docs/gavel-adapter.md)."""
    need = np.nan_to_num(problem.remaining_steps / problem.time_to_deadline, nan=-1.0)
    key = np.column_stack([problem.throughput, problem.scale_factor, problem.weight, need])
    _, group, count = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    group = group.reshape(-1)
    sums = np.zeros((count.size, X.shape[1]))
    np.add.at(sums, group, X)
    return (sums / count[:, None])[group]


def _column(mapping, keys, default=np.nan) -> np.ndarray:
    if not mapping:
        return np.full(len(keys), default, dtype=float)
    return np.array([mapping.get(k, default) for k in keys], dtype=float)


def _users(job_ids, entity_to_job_mapping, entity_weights):
    """Gavel's entities -> (each job's user name or None, {user: weight})."""
    owner = {job: str(entity) for entity, jobs in (entity_to_job_mapping or {}).items()
             for job in jobs}
    return ([owner.get(job) for job in job_ids],
            {str(e): float(w) for e, w in (entity_weights or {}).items()})


def build_problem(throughputs, cluster_spec, scale_factors=None, priority_weights=None,
                  num_steps_remaining=None, times_since_start=None, instance_costs=None,
                  SLOs=None, isolated_time=None, entity_weights=None,
                  entity_to_job_mapping=None) -> tuple[list, ThroughputProblem]:
    """Gavel's dicts -> (sorted job ids, ThroughputProblem); worker types are the first job's
    throughput keys, sorted, as Gavel's `flatten` takes them. Units as in the module docstring."""
    job_ids = sorted(throughputs)
    types = sorted(throughputs[job_ids[0]])
    try:
        T = np.array([[throughputs[job][t] for t in types] for job in job_ids], dtype=float)
        capacity = [cluster_spec[t] for t in types]
    except (KeyError, TypeError, ValueError) as exc:
        raise PolicyError("throughputs must give every job one steps/s number per worker type, "
                          f"each type in cluster_spec (failed at {exc!r})") from None
    user, user_weight = (None, None)
    if entity_to_job_mapping:
        user, user_weight = _users(job_ids, entity_to_job_mapping, entity_weights)
    problem = ThroughputProblem.from_arrays(
        T.reshape(len(job_ids), len(types)), _column(scale_factors, job_ids, 1.0),
        _column(priority_weights, job_ids, 1.0), capacity,
        job_ids=[str(job) for job in job_ids], gpu_types=types,
        cost_per_hour=_column(instance_costs, types), time_to_deadline=_column(SLOs, job_ids),
        remaining_steps=_column(num_steps_remaining, job_ids),
        time_since_arrival=_column(times_since_start, job_ids, 0.0),
        isolated_time=_column(isolated_time, job_ids, 0.0), user=user, user_weight=user_weight)
    return job_ids, problem


def _is_pair(job_id) -> bool:
    return bool(getattr(job_id, "is_pair", lambda: False)())


def build_pair_table(throughputs, job_ids: list, gpu_types: list) -> PairTable:
    """Gavel's pair entries of `throughputs` ({pair: {worker type: [steps/s of the pair's first
    job, of its second]}}) as a co-location table with one label per job (job m is label m);
    a pair of jobs without an entry cannot share, nor can one given [0, 0] on a type."""
    row = {job: m for m, job in enumerate(job_ids)}
    M = len(job_ids)
    rate = np.full((len(gpu_types), M, M), np.nan)
    for key, per_type in throughputs.items():  # Gavel's pairs: its own dict, entry by entry
        if not _is_pair(key):
            continue
        try:
            a, b = (row[job] for job in key.singletons())
            for j, name in enumerate(gpu_types):
                rate[j, a, b], rate[j, b, a] = (float(v) for v in per_type[name])
        except (KeyError, TypeError, ValueError) as exc:
            raise PolicyError(f"a pair entry of throughputs must name two jobs that have their "
                              f"own entries and give [steps/s, steps/s] per worker type "
                              f"(failed at {key}: {exc!r})") from None
    return PairTable.from_arrays(np.arange(M), rate, labels=[str(job) for job in job_ids])


def _no_allocation(name: str, status, details: dict | None) -> PolicyError:
    """The one-line error of a solve without an allocation (naming the jobs whose SLOs cannot
    be met, when that is why)."""
    missed = (details or {}).get("infeasible_slos")
    why = (f"the SLOs of jobs {', '.join(map(str, missed))} cannot be met" if missed
           else status.value)
    return PolicyError(f"{name}: no allocation ({why})")


def _packed_allocation(throughputs: dict, job_ids: list, gpu_types: list, solo: np.ndarray,
                       first, second, gpu, fraction) -> dict:
    """Gavel's packed result: each job's solo time fractions under its id, each offered pair's
    shared time fractions under the pair's key (0 where unused)."""
    allocation = {job: dict(zip(gpu_types, row)) for job, row in zip(job_ids, solo.tolist())}
    M = len(job_ids)
    shared = np.zeros((M, M, len(gpu_types)))
    np.add.at(shared, (first, second, gpu), fraction)
    shared += shared.transpose(1, 0, 2)
    row = {job: m for m, job in enumerate(job_ids)}
    for key in throughputs:
        if _is_pair(key):
            a, b = (row[job] for job in key.singletons())
            allocation[key] = dict(zip(gpu_types, shared[a, b].tolist()))
    return allocation


class GavelGandiva:
    """What Gavel's Gandiva policy does (`get_policy("gandiva", seed=...)`), call by call,
    including its random draws (Python's random.Random(seed), as Gavel's policy seeds it).
    schedopt's own Gandiva (`baselines.gandiva`, a maximal random pairing) is not this.

    Each call: a pair formed earlier is dissolved when a job of it has left or its normalized
    throughput (sum over types of each job's paired steps/s / its solo steps/s; 0 when a job
    makes 0 steps/s paired on some type) is below 1. If the jobs ask for no more GPUs than
    the cluster has, every job is its own combination. Otherwise the jobs in no pair, in id
    order, are paired by n draws of two of them at random (n: how many there were), a draw
    of unequal scale factors being wasted, and the jobs left stay alone. With K combinations,
    combination k gets c_j / (K s_k) of type j, its row scaled to sum to at most 1.
    State: `assigned`, {job id: (its combination's key, its partner or None)}."""

    def __init__(self, seed: int | None = None):
        self.rng = random.Random()
        if seed is not None:
            self.rng.seed(seed)
        self.assigned: dict = {}

    @staticmethod
    def normalized_throughput(throughputs: dict, key, types: list) -> float:
        """Sum over types of paired / solo steps/s of both jobs of pair `key` (0 for a single
        job, a pair not offered, or a job making 0 steps/s paired or alone on some type)."""
        if not _is_pair(key) or key not in throughputs:
            return 0.0
        total = 0.0
        for t in types:
            for position, job in enumerate(key.singletons()):
                paired, solo = throughputs[key][t][position], throughputs[job][t]
                if paired <= 0.0 or solo <= 0.0:
                    return 0.0
                total += paired / solo
        return total

    def allocate(self, throughputs: dict, scale_factors: dict, cluster_spec: dict) -> dict:
        """Gavel's result: {key: {type: time fraction}} for every single job and offered
        pair in `throughputs` (module docstring for the arguments)."""
        singles = sorted(key for key in throughputs if not _is_pair(key))
        keys = singles + [key for key in throughputs if _is_pair(key)]
        types = sorted(throughputs[singles[0]])
        dropped = []
        for job, (key, partner) in self.assigned.items():
            if (job not in throughputs or (partner is not None and partner not in throughputs)
                    or self.normalized_throughput(throughputs, key, types) < 1.0):
                dropped += [job, partner]
        for job in dropped:
            self.assigned.pop(job, None)
        if sum(scale_factors[job] for job in singles) <= sum(cluster_spec[t] for t in types):
            chosen = singles
        else:
            pair_of = {frozenset(key.singletons()): key for key in keys if _is_pair(key)}
            alone = [job for job in singles if job not in self.assigned]
            for _ in range(len(alone)):
                if len(alone) < 2:
                    break
                a, b = self.rng.sample(alone, 2)
                if scale_factors[a] != scale_factors[b]:
                    continue
                key = pair_of.get(frozenset((a, b)))
                if key is None:
                    raise PolicyError(f"Gandiva_Packing: jobs {a} and {b} were paired but "
                                      f"throughputs has no entry for the pair")
                alone.remove(a)
                alone.remove(b)
                self.assigned[a], self.assigned[b] = (key, b), (key, a)
            for job in alone:
                self.assigned[job] = (job, None)
            chosen = {key for key, _ in self.assigned.values()}
        row = {key: k for k, key in enumerate(keys)}
        x = np.zeros((len(keys), len(types)))
        for key in chosen:
            x[row[key]] = np.array([cluster_spec[t] / len(chosen) for t in types])
            x[row[key]] = x[row[key]] / scale_factors[key.singletons()[0]]
        x = x / np.maximum(x.sum(axis=1), 1.0)[:, None]
        return {key: dict(zip(types, x[k].tolist())) for k, key in enumerate(keys)}


def _signature(params: tuple[str, ...], gavel_name: str) -> inspect.Signature:
    defaults = _SLO_DEFAULTS if gavel_name.endswith("_SLOs") else {}
    return inspect.Signature([
        inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                          default={**_DEFAULTS, **defaults}.get(p, inspect.Parameter.empty))
        for p in params])


class GavelPolicy:
    """One Gavel policy: `name` is Gavel's class-style name (what Gavel's scheduler dispatches
    on), `gavel_name` the name given to `get_policy`, `get_allocation` takes Gavel's arguments.

    Like Gavel's finish-time-fairness policy it remembers, across calls, each job's isolated
    time credited so far (s): steps done since the last call / isolated steps/s then; like
    Gavel's FIFO (`fifo`), the type each running job holds.
    """

    def __init__(self, name: str, solver: str | None = None, gavel_solver: str | None = None,
                 **options):
        if name in UNSUPPORTED:
            raise PolicyError(f"Gavel policy {name!r} is not offered: {UNSUPPORTED[name]}")
        if name not in SIGNATURES or not (name in GAVEL_ALIASES or name in PACKED or
                                          name == "allox"):
            raise PolicyError(f"unknown Gavel policy {name!r}; supported: "
                              f"{', '.join(sorted(set(SIGNATURES) - set(UNSUPPORTED)))}")
        self.gavel_name = name
        self.name, params = SIGNATURES[name]
        self.solver = solver if solver is not None else INTERIOR_POINT_DEFAULTS.get(name)
        self.options = options
        self._signature = _signature(params, name)
        self._isolated_time: dict = {}
        self._previous: dict = {}  # job -> (steps remaining, isolated steps/s) at the last call
        self._placed: dict = {}  # fifo, allox: job -> index of the GPU type it holds
        self._fifo_calls = 0
        seed = self.options.pop("seed", None)
        self._gandiva = GavelGandiva(0 if seed is None else seed)
        self._fifo_draws = random.Random(0 if seed is None else seed)  # fifo: as Gavel's
        self._intended_fifo = name == "fifo" and bool(self.options.pop("intended", False))
        self._alpha = float(self.options.pop("alpha", 1.0))  # allox: share of waiting jobs
        self._ecos = (name in ECOS_ROUTE and gavel_solver == "ECOS" and solver is None
                      and ecos_installed() and ("water_filling" not in name
                                                or glpk_mi_installed()))

    def __repr__(self) -> str:
        return f"GavelPolicy({self.gavel_name!r}, name={self.name!r})"

    def get_allocation(self, *args, **kwargs) -> dict | None:
        """Gavel's get_allocation for this policy (parameters: `policy.signature`); returns
        {job_id: {worker_type: time fraction}}, or None when there are no jobs."""
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.name}.get_allocation{self._signature}: {exc}") from None
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        throughputs = arguments.pop(_TU, None) or arguments.pop(_T, None)
        if _WU in arguments:
            arguments[_W] = arguments.pop(_WU)
        if not throughputs:  # every job has finished
            self._previous, self._placed = {}, {}
            return None
        arguments.pop("verbose", None)
        if arguments.pop("return_effective_throughputs", False):
            raise PolicyError(f"{self.name}: return_effective_throughputs=True is not offered; "
                              "compute s*T@X / equal-share steps/s from the allocation")
        if "instance_costs" in arguments and arguments["instance_costs"] is None:
            arguments["instance_costs"] = dict.fromkeys(next(iter(throughputs.values())), 1.0)
        policy = self._schedopt_policy(arguments)
        if self.gavel_name == "allox":
            return self._allox(throughputs, **arguments)
        if self.gavel_name == "gandiva":
            singles = {job: row for job, row in throughputs.items() if not _is_pair(job)}
            build_problem(singles, **arguments)  # the one-line errors of malformed input
            return self._gandiva.allocate(throughputs, **arguments)
        if self.gavel_name in PACKED:
            return self._packed(throughputs, arguments)
        remaining = arguments.get("num_steps_remaining")
        self._credit_isolated_time(remaining)
        job_ids, problem = build_problem(throughputs, isolated_time=self._isolated_time,
                                         **arguments)
        if self.gavel_name in V100_PRICED:
            problem = agnostic_view(problem, every_type=self._ecos)
        if self.gavel_name == "fifo":
            return (self._sticky_fifo if self._intended_fifo else self._gavel_fifo)(job_ids,
                                                                                     problem)
        if self.gavel_name == "fifo_perf":  # Gavel's rule, the solo pass of fifo_packed
            placed, _ = fifo_solo(problem)
            X = np.zeros(problem.throughput.shape)
            X[np.flatnonzero(placed >= 0), placed[placed >= 0]] = 1.0
            return {job: dict(zip(problem.gpu_types, r)) for job, r in zip(job_ids, X.tolist())}
        slos = {"slos": True} if self.gavel_name.endswith("_SLOs") else {}
        result = solve(problem, policy, self.solver, **slos, **self.options)
        if result.X is None or not result.status.has_solution:
            raise _no_allocation(self.name, result.status, result.details)
        if remaining:  # as the FTF policy's own denominator uses
            iso = (gavel_isolated_throughput if self._ecos else isolated_throughput)(problem)
            self._previous = {job: (remaining[job], iso[m]) for m, job in enumerate(job_ids)}
        X = result.X
        if self.gavel_name in FTF_LEXIMIN:
            X = self._ftf_leximin(problem, X)
        ecos_point = None
        if self._ecos and self.gavel_name == "finish_time_fairness":
            ecos_point = self._ecos_ftf(job_ids, problem, X)
        elif self._ecos and self.gavel_name == "max_min_fairness_water_filling":
            if policy == f"gavel:{self.gavel_name}":  # flat over jobs, as Gavel's without entities
                ecos_point = self._ecos_water_filling(problem, X)
        elif self._ecos:
            ecos_point = self._ecos_throughput_sum(throughputs, job_ids, problem, X)
        if ecos_point is not None:
            X = ecos_point
        elif self.gavel_name == "min_total_duration":
            X = self._gavel_makespan_point(problem, X)
        elif self.gavel_name in CENTERED:
            X = centered_optimum(problem, X)
        elif self.gavel_name in SPEED_BLIND:
            X = spread_over_types(problem, X)
        elif self.gavel_name.startswith("max_sum_throughput"):
            X = average_interchangeable_jobs(problem, X)
        return {job: dict(zip(problem.gpu_types, row)) for job, row in zip(job_ids, X.tolist())}

    @property
    def signature(self) -> inspect.Signature:
        """Gavel's get_allocation parameters for this policy (after self)."""
        return self._signature

    def _schedopt_policy(self, arguments: dict) -> str:
        """The schedopt policy to solve: Gavel's alias, or the hierarchical water filling when
        entities are given (Gavel's agnostic variant is the perf one on unit throughputs,
        schedopt's `hierarchical_water_filling_agnostic`)."""
        if arguments.get("entity_to_job_mapping"):
            if self.gavel_name in PACKED:
                raise PolicyError(f"{self.name}: water filling among entities is not offered "
                                  f"with space sharing; call it without entity_to_job_mapping "
                                  f"(flat water filling over jobs)")
            return ("hierarchical_water_filling" if self.gavel_name.endswith("_perf")
                    else "hierarchical_water_filling_agnostic")
        arguments.pop("entity_weights", None)
        arguments.pop("entity_to_job_mapping", None)
        return f"gavel:{self.gavel_name}"

    def _packed(self, throughputs: dict, arguments: dict) -> dict:
        """A packed policy on Gavel's singles and pairs: {job: {type: solo time}, pair: {type:
        time shared}} for every job and every pair key Gavel offered."""
        singles = {job: row for job, row in throughputs.items() if not _is_pair(job)}
        remaining = arguments.get("num_steps_remaining")
        ftf = self.gavel_name == "finish_time_fairness_packed"
        if ftf:
            self._credit_isolated_time(remaining)
            arguments = {**arguments, "isolated_time": self._isolated_time}
        job_ids, problem = build_problem(singles, **arguments)
        table = build_pair_table(throughputs, job_ids, problem.gpu_types)
        policy, defaults = PACKED_POLICIES[self.gavel_name]
        options = policy.parse_options({**defaults, **self.options})
        outcome = policy.solve_with_table(problem, table, options,
                                          Solver(self.solver or policy.default_solver))
        if not outcome.status.has_solution:
            raise _no_allocation(self.name, outcome.status, outcome.details)
        decision = outcome.decision
        ecos_answer = (self._ecos_ftf_packed(throughputs, job_ids, problem,
                                             float(outcome.objective)) if self._ecos else None)
        if ecos_answer is None and self.gavel_name in FTF_LEXIMIN | MAKESPAN_LEXIMIN:
            decision = self._leximin_packed(problem, table, outcome)
        if ftf and remaining:
            iso = (gavel_isolated_throughput if self._ecos else isolated_throughput)(problem)
            self._previous = {job: (remaining[job], iso[m]) for m, job in enumerate(job_ids)}
        if ecos_answer is not None:
            return ecos_answer
        return _packed_allocation(throughputs, job_ids, problem.gpu_types, decision.solo,
                                  decision.first, decision.second, decision.gpu,
                                  decision.fraction)

    @staticmethod
    def _gavel_makespan_point(problem: ThroughputProblem, X: np.ndarray) -> np.ndarray:
        """Speed-blind min_total_duration as Gavel's answers it: `gavel_feasible_point` at
        the makespan where Gavel's bisection stops (`gavel_bisection_makespan`) for X's
        optimal makespan; X itself when no job has steps left or Clarabel fails."""
        if not (problem.remaining_steps > 0).any():
            return X
        point = gavel_feasible_point(problem, gavel_bisection_makespan(makespan_of(problem, X)))
        return X if point is None else point

    @staticmethod
    def _ecos_ftf(job_ids: list, problem: ThroughputProblem, X: np.ndarray) -> np.ndarray | None:
        """Speed-blind finish-time fairness as Gavel's ECOS solve answers it
        (`min_max_finish_time_ratio_ecos`, jobs in Gavel's order: sorted ids, isolated
        steps/s as Gavel computes them, `gavel_isolated_throughput`); None when ECOS
        returns nothing or its answer's largest ratio is above the LP optimum X's by more than
        ECOS_RATIO_SLACK (then the caller centers X, on the same view: Gavel's pricing of
        every type, `agnostic_view(every_type=True)`)."""
        try:
            order = sorted(range(len(job_ids)), key=job_ids.__getitem__)
        except TypeError:  # ids that do not sort: the given order
            order = list(range(len(job_ids)))
        isolated = isolated_finish_time(problem, gavel_isolated_throughput(problem))
        Y = min_max_finish_time_ratio_ecos(
            problem.throughput[order], problem.scale_factor[order].astype(float),
            problem.capacity.astype(float), problem.remaining_steps[order],
            problem.time_since_arrival[order], isolated[order])
        if Y is None:
            return None
        answer = np.empty_like(Y)
        answer[order] = Y
        best = float(np.max(finish_time_ratios(problem, X, isolated)))
        got = float(np.max(finish_time_ratios(problem, answer, isolated)))
        return answer if got <= best * (1 + ECOS_RATIO_SLACK) else None

    def _ecos_throughput_sum(self, throughputs: dict, job_ids: list,
                             problem: ThroughputProblem, X: np.ndarray) -> np.ndarray | None:
        """The throughput sums as Gavel's ECOS solve answers them (`max_throughput_sum_ecos`
        on Gavel's values: each job's steps/s as given, per $/h for the cost policy); None when
        ECOS returns nothing or its answer falls short of X's objective by more than
        ECOS_RATIO_SLACK (relative) or overfills a type by more than 1e-6 GPUs."""
        types = problem.gpu_types
        value = np.array([[float(throughputs[job][t]) for t in types] for job in job_ids])
        if self.gavel_name.endswith("_by_cost_perf"):
            value = value / problem.cost_per_hour[None, :]
        Y = max_throughput_sum_ecos(value, problem.scale_factor, problem.capacity)
        if Y is None or np.any(problem.scale_factor @ Y > problem.capacity + 1e-6):
            return None
        best, got = float((value * X).sum()), float((value * Y).sum())
        return Y if got >= best * (1 - ECOS_RATIO_SLACK) else None

    @staticmethod
    def _ecos_water_filling(problem: ThroughputProblem, X: np.ndarray) -> np.ndarray | None:
        """Speed-blind water filling as Gavel's ECOS and GLPK_MI solves answer it
        (`water_filling_ecos_glpk` on Gavel's view: steps/s 1 on every type); None when it
        returns nothing or its lowest weighted level, s_m / w_m x (time_m / time^prop_m),
        is below X's by more than ECOS_RATIO_SLACK (relative)."""
        ones = np.ones(problem.throughput.shape)
        Y = water_filling_ecos_glpk(ones, problem.scale_factor, problem.weight,
                                    problem.capacity)
        if Y is None or np.any(problem.scale_factor @ Y > problem.capacity + 1e-6):
            return None
        share = np.tile(problem.capacity / len(X), (len(X), 1))
        proportional = (share / share.sum(axis=1).max()).sum(axis=1)
        active = problem.weight > 0
        unit = problem.scale_factor[active] / problem.weight[active] / proportional[active]

        def lowest(Z):
            return float(np.min(unit * Z[active].sum(axis=1), initial=np.inf))

        return Y if lowest(Y) >= lowest(X) * (1 - ECOS_RATIO_SLACK) else None

    @staticmethod
    def _ecos_ftf_packed(throughputs: dict, job_ids: list, problem: ThroughputProblem,
                         optimum: float) -> dict | None:
        """Packed finish-time fairness as Gavel's ECOS solve answers it
        (`min_max_finish_time_ratio_packed_ecos` over Gavel's keys: single jobs, then
        offered pairs, each sorted; steps/s in float32 divided by the priority weight, as
        Gavel's table holds them; isolated steps/s as Gavel computes them,
        `gavel_isolated_throughput`): Gavel's result dict, or None when ECOS returns nothing,
        some job has no isolated finish time, or the answer's largest ratio is above `optimum`
        (schedopt's) by more than ECOS_RATIO_SLACK."""
        pairs = [key for key in throughputs if _is_pair(key)]
        try:  # Gavel's order: single jobs, then pairs (sorted, where the keys sort)
            pairs.sort()
        except TypeError:
            pass
        keys, types = job_ids + pairs, problem.gpu_types
        row = {job: m for m, job in enumerate(job_ids)}
        M, K, J = len(job_ids), len(keys), len(types)
        rates = np.zeros((M, K, J), dtype=np.float32)
        combinations = [[] for _ in range(M)]
        scale = np.zeros(K)
        for k, key in enumerate(keys):
            members = key.singletons() if _is_pair(key) else (key,)
            sizes = {problem.scale_factor[row[job]] for job in members}
            scale[k] = sizes.pop() if len(sizes) == 1 else 0.0
            for position, job in enumerate(members):
                m = row[job]
                combinations[m].append(k)
                rates[m, k] = [throughputs[key][t][position] if _is_pair(key)
                               else throughputs[key][t] for t in types]
        for m in range(M):
            rates[m] /= float(problem.weight[m])
        remaining = np.nan_to_num(problem.remaining_steps)
        isolated = problem.isolated_time + remaining / gavel_isolated_throughput(problem)
        if not np.all(np.isfinite(isolated) & (isolated > 0)):
            return None
        Y = min_max_finish_time_ratio_packed_ecos(
            rates, combinations, scale, problem.capacity.astype(float), remaining,
            problem.time_since_arrival, isolated)
        if Y is None:
            return None
        steps = np.array([(rates[m, rows].astype(float) * Y[rows]).sum()
                          for m, rows in enumerate(combinations)])
        with np.errstate(divide="ignore"):
            ratio = (problem.time_since_arrival + np.where(remaining > 0, remaining / steps, 0.0)
                     ) / isolated
        if not ratio.max() <= optimum * (1 + ECOS_RATIO_SLACK):
            return None
        return {key: dict(zip(types, Y[k].tolist())) for k, key in enumerate(keys)}

    def _ftf_leximin(self, problem: ThroughputProblem, X: np.ndarray) -> np.ndarray:
        """FTF_LEXIMIN for the unpacked policy (its ratios ignore priority weights, as Gavel's
        unpacked policy does)."""
        isolated = isolated_finish_time(problem)
        rho = float(np.max(finish_time_ratios(problem, X, isolated)))
        need = ftf_need(problem, rho, isolated, weighted=False)
        levelled = dataclasses.replace(problem, weight=level_weights(problem, need))
        result = solve(levelled, "water_filling", self.solver)
        if result.X is None or not result.status.has_solution:
            return X
        ratio = np.max(finish_time_ratios(problem, result.X, isolated))
        return result.X if ratio <= rho * (1 + 1e-6) else X

    def _leximin_packed(self, problem: ThroughputProblem, table: PairTable, outcome):
        """FTF_LEXIMIN and MAKESPAN_LEXIMIN for the packed policies: water filling with space
        sharing of steps_m / need_m, need_m the steps/s job m needs for the optimum (the
        largest finish-time ratio, or the makespan in seconds)."""
        makespan = self.gavel_name == "min_total_duration_packed"
        optimum = float(outcome.objective)
        if makespan:
            need = np.where(problem.remaining_steps > 0, problem.remaining_steps / optimum, 0.0)
        else:
            need = ftf_need(problem, optimum, isolated_finish(problem), weighted=True)
        levelled = dataclasses.replace(problem, weight=level_weights(problem, need))
        policy = WaterFillingPacked()
        result = policy.solve_with_table(levelled, table, policy.parse_options({}),
                                         Solver(self.solver or policy.default_solver))
        if not result.status.has_solution:
            return outcome.decision
        steps = result.decision.steps(problem)
        if makespan:
            active = problem.remaining_steps > 0
            with np.errstate(divide="ignore"):
                value = np.max(problem.remaining_steps[active] / steps[active], initial=0.0)
        else:
            value = finish_time_ratios_packed(problem, steps).max()
        return result.decision if value <= optimum * (1 + 1e-6) else outcome.decision

    def _allox(self, throughputs: dict, scale_factors, times_since_start, num_steps_remaining,
               cluster_spec) -> dict:
        """Gavel's AlloX: a job keeps the GPU it started on until it finishes; the other jobs
        (with alpha < 1, only the max(alpha m, free GPUs) that have waited longest) are
        matched to the free GPUs minimizing their total completion time
        (`allox.matching.allox_schedule`: processing time = steps left / steps/s on the GPU's
        type, arrival = now - times_since_start) and each free GPU starts the first job of its
        queue."""
        job_ids, problem = build_problem(throughputs, cluster_spec, scale_factors,
                                         num_steps_remaining=num_steps_remaining,
                                         times_since_start=times_since_start)
        wide = np.flatnonzero(problem.scale_factor != 1)
        if wide.size:
            raise PolicyError(f"{self.name}: AlloX runs jobs of one GPU each, as Gavel's does; "
                              f"job {job_ids[wide[0]]} asks for "
                              f"{problem.scale_factor[wide[0]]:g} GPUs")
        problem.require_remaining_steps(self.name)
        M, J = problem.num_jobs, problem.num_types
        X = np.zeros((M, J))
        held = np.array([[m, self._placed[job]] for m, job in enumerate(job_ids)
                         if job in self._placed], dtype=int).reshape(-1, 2)
        X[held[:, 0], held[:, 1]] = 1.0
        free = np.maximum(problem.capacity - np.bincount(held[:, 1], minlength=J), 0)
        machine_type = np.repeat(np.arange(J), free.astype(int))
        waiting = np.setdiff1d(np.arange(M), held[:, 0])
        # AlloX's fairness knob: only the longest-waiting max(alpha m, free GPUs) jobs compete
        longest = waiting[np.argsort(-problem.time_since_arrival[waiting], kind="stable")]
        waiting = np.sort(longest[:max(int(self._alpha * waiting.size), machine_type.size)])
        T = (problem.throughput * problem.runnable)[np.ix_(waiting, machine_type)]
        with np.errstate(divide="ignore"):
            processing = np.where(T > 0, problem.remaining_steps[waiting, None] / T, np.inf)
        can_run = np.isfinite(processing).any(axis=1)
        if machine_type.size and can_run.any():
            rows = waiting[can_run]
            schedule = allox_schedule(processing[can_run], np.zeros(machine_type.size),
                                      -problem.time_since_arrival[rows])
            first = schedule.position == 0
            X[rows[first], machine_type[schedule.machine[first]]] = 1.0
        placed = np.flatnonzero(X.sum(axis=1) > 0.5)
        self._placed = {job_ids[m]: int(X[m].argmax()) for m in placed}
        return {job: dict(zip(problem.gpu_types, r)) for job, r in zip(job_ids, X.tolist())}

    def _gavel_fifo(self, job_ids: list, problem: ThroughputProblem) -> dict:
        """What Gavel's base-mode FIFO does (`get_policy("fifo")`), as its runs show: a job
        keeps the type it was given until it finishes, and the GPUs of a job that finished
        go to the head of the queue if it fits in what the jobs before it in id order left
        of that type and runs there. Then, with the types that have free GPUs in sorted name
        order, each queued job in id order (until one fits no such type) draws one of the
        types it fits at random, but is given the last of those types, whatever its free
        GPUs (nothing if the job runs there at 0 steps/s); when that type's free GPUs reach
        exactly 0, the type drawn leaves the list. So jobs pile onto one type beyond its
        count. Draws: Python's random.Random(seed), one per job that fits some type."""
        row = {job: m for m, job in enumerate(job_ids)}
        T, s = problem.throughput, problem.scale_factor
        free = problem.capacity.astype(float)
        queue = [m for m, job in enumerate(job_ids) if job not in self._placed]
        placed = {}
        for job in sorted(self._placed):
            j = self._placed[job]
            if job in row:
                placed[job] = j
                free[j] -= s[row[job]]
            elif queue and s[queue[0]] <= free[j] and T[queue[0], j] > 0:
                head = queue.pop(0)
                placed[job_ids[head]] = j
                free[j] -= s[head]
        listed = [j for j in range(problem.num_types) if free[j] > 0]
        while queue and listed:
            m = queue.pop(0)
            fits = [j for j in listed if free[j] >= s[m]]
            if not fits:
                break
            drawn, j = fits[self._fifo_draws.randrange(len(fits))], listed[-1]
            if T[m, j] > 0:
                placed[job_ids[m]] = j
                free[j] -= s[m]
                if free[j] == 0:
                    listed.remove(drawn)
        self._placed = placed
        X = np.zeros(T.shape)
        for job, j in placed.items():
            X[row[job], j] = 1.0
        return {job: dict(zip(problem.gpu_types, r)) for job, r in zip(job_ids, X.tolist())}

    def _sticky_fifo(self, job_ids: list, problem: ThroughputProblem) -> dict:
        """The FIFO Gavel's base mode intends (`get_policy("fifo", intended=True)`): a job
        keeps the type it was given until it finishes; the others, in job-id order, get what
        is left from schedopt's `fifo_agnostic` (a random type with room, seeded by the call
        count)."""
        row = {job: m for m, job in enumerate(job_ids)}
        kept = [(row[job], j) for job, j in self._placed.items() if job in row]
        held = np.array(kept, dtype=int).reshape(-1, 2)
        X = np.zeros(problem.throughput.shape)
        X[held[:, 0], held[:, 1]] = 1.0
        free = problem.capacity - np.bincount(held[:, 1], weights=problem.scale_factor[held[:, 0]],
                                              minlength=problem.num_types)
        rest = np.setdiff1d(np.arange(len(job_ids)), held[:, 0])
        if rest.size:
            sub = ThroughputProblem.from_arrays(problem.throughput[rest],
                                                problem.scale_factor[rest], None, free)
            options = {"seed": self._fifo_calls, **self.options}
            X[rest] = solve(sub, "gavel:fifo", self.solver, **options).X
        self._fifo_calls += 1
        placed = np.flatnonzero(X.sum(axis=1) > 0.5)
        self._placed = {job_ids[m]: int(j) for m, j in zip(placed, X[placed].argmax(axis=1))}
        return {job: dict(zip(problem.gpu_types, r)) for job, r in zip(job_ids, X.tolist())}

    def _credit_isolated_time(self, remaining) -> None:
        if not remaining:
            return
        for job, (before, iso) in self._previous.items():
            if job in remaining and iso > 0:
                credit = float((before - remaining[job]) / iso)
                self._isolated_time[job] = self._isolated_time.get(job, 0.0) + credit


def get_policy(name: str, solver: str | None = None, seed: int | None = None,
               priority_reweighting_policies=None, **options) -> GavelPolicy:
    """A policy object for Gavel's policy `name`, taking the arguments of Gavel's
    `utils.get_policy`. solver: a schedopt backend name, or None for the policy's default;
    Gavel's cvxpy solver names (ECOS, SCS, GUROBI, ...: upper case) also mean the default, since
    Gavel's scripts always pass one, with one exception: with "ECOS" (Gavel's default) and the
    `ecos` package installed (for water filling also `cvxopt`: GLPK_MI), the names in
    ECOS_ROUTE solve Gavel's own programs with ECOS through cvxpy, which return the optimal
    allocation Gavel's own object returns (`schedopt.backends.gavel_programs`; without the
    packages: the answers described in docs/gavel-adapter.md). seed: the random draws of
    `gandiva` and of base-mode `fifo`, as Gavel's (None: 0; the other policies are
    deterministic); `get_policy("fifo", intended=True)` gives the FIFO Gavel's base mode
    intends (each job a random type with room, seeded by the call count) instead of what its
    code does; priority_reweighting_policies is accepted and unused."""
    gavel_solver = None
    if solver is not None and solver.isupper():
        gavel_solver, solver = solver, None
    if name.startswith("allox_alpha="):  # Gavel's AlloX with its fairness knob in the name
        try:
            options = {**options, "alpha": float(name[len("allox_alpha="):])}
        except ValueError:
            raise PolicyError(f"Gavel policy {name!r}: allox_alpha= takes a number") from None
        name = "allox"
    if name not in SIGNATURES:
        raise PolicyError(f"unknown Gavel policy {name!r}; Gavel's names: "
                          f"{', '.join(sorted(SIGNATURES))}")
    if name in ("gandiva", "fifo") and seed is not None:
        options = {**options, "seed": seed}
    return GavelPolicy(name, solver, gavel_solver=gavel_solver, **options)


def get_allocation(policy: str, throughputs, *args, solver: str | None = None,
                   **kwargs) -> dict | None:
    """One-shot: `get_policy(policy, solver).get_allocation(throughputs, *args, **kwargs)`."""
    return get_policy(policy, solver).get_allocation(throughputs, *args, **kwargs)
