"""Throughput per dollar with space sharing and SLOs (Gavel's
`max_sum_throughput_normalized_by_cost_packed_SLOs`), one LP over solo and pair columns.

Columns as in `master.py`: solo X[m,j] and pair P[p], p = (j, m, m'), with pair rates
Q_j[m,m'] (steps/s of job m beside m' on type j) and prices c_j ($/h):

    max  sum_{m,j} (T[m,j] / c_j) X[m,j] + sum_p ((Q_p,m + Q_p,m') / c_j) P[p]
    s.t. sum_j X[m,j] + sum_{p ∋ m} P[p]                       <= 1              time of m
         sum_m (s_m/c'_j) X[m,j] + sum_{p on j} (s/c'_j) P[p]   <= 1              GPUs of j
         (sum_j T[m,j] X[m,j] + sum_{p ∋ m} Q_p,m P[p]) / Tmax_m >= R_m / (SLO_m Tmax_m)
                                                                       for jobs with an SLO
         X, P >= 0;  X[m,j] = 0 where job m cannot run on type j

(c'_j: GPUs of type j; SLO_m: seconds left; R_m: steps left.) The objective counts every
job's steps/s on type j at type j's price, unweighted, as Gavel's does.

Pruning (as in `master.py`): a pair whose two shares Q/T add to at most 1 is replaced by solo
time that gives each job the same steps/s on the same type with no more time or GPUs, so the
objective and every SLO row keep their values; some optimum uses no such pair. The remaining
candidates are all in the LP (no column generation): the pair columns grow as jobs², which
suits Gavel's scheduler (pairs of the active jobs of one cluster).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from schedopt.backends import SolveOptions, Status
from schedopt.backends.session import Solver
from schedopt.core.capabilities import Capability
from schedopt.core.outcome import Outcome
from schedopt.core.problem import ThroughputProblem
from schedopt.errors import PolicyError
from schedopt.modeling import Model
from schedopt.policies.packed.decision import PairedAllocation
from schedopt.policies.packed.master import (PairTable, empty, pair_terms, paired_allocation,
                                             prepared, scaling)
from schedopt.policies.packed.policy import PackedPolicy, paired


def slo_rate(problem: ThroughputProblem) -> np.ndarray:
    """(M,) steps/s each job needs to finish its remaining steps within its SLO (0: no SLO)."""
    slo = problem.time_to_deadline
    has = np.isfinite(slo)
    if np.any(has & (slo <= 0)):
        late = np.asarray(problem.job_ids, dtype=object)[has & (slo <= 0)]
        raise PolicyError(f"the SLOs of jobs {', '.join(map(str, late[:5]))} have passed "
                          f"(time_to_deadline <= 0 s)")
    if np.any(has & ~np.isfinite(problem.remaining_steps)):
        raise PolicyError("a job with an SLO needs its remaining steps (remaining_steps)")
    return np.where(has, np.nan_to_num(problem.remaining_steps) / np.where(has, slo, 1.0), 0.0)


def min_cost_packed(problem: ThroughputProblem, table: PairTable,
                    solver: Solver | str = "highs", options: SolveOptions = SolveOptions(),
                    slos: bool = True, prune: bool = True) -> Outcome:
    """The LP of the module docstring (SLO rows only when `slos`); objective in (steps/s) per
    $/h, summed over jobs. details: pairs, effective_throughput, gpus_in_use, infeasible_slos
    (when the SLO rows cannot all hold: status infeasible, no allocation)."""
    start = time.perf_counter()
    solver, cand = prepared(problem, table, solver, options, "dense", prune)
    if cand is None:
        return empty(problem, solver)
    if np.any(~np.isfinite(problem.cost_per_hour) | (problem.cost_per_hour <= 0)):
        raise PolicyError("min_cost_packed needs a positive price per hour for every GPU type "
                          "(cost_per_hour, $/h)")
    M, J = problem.num_jobs, problem.num_types
    cost = problem.cost_per_hour
    solo = problem.throughput * problem.runnable
    Tmax, _ = scaling(problem, solo)
    pj, pm, pq = cand.upper_pairs()

    model = Model()
    X = model.variable("X", (M, J), upper=np.where(problem.runnable, np.inf, 0.0))
    P = model.variable("P", pj.size)
    pair_time, pair_gpus, pair_steps = pair_terms(problem, cand, P, pj, pm, pq)
    share = problem.scale_factor[:, None] / np.maximum(problem.capacity, 1e-300)[None, :]
    model.add("time", X.sum(axis=1) + pair_time <= 1.0)
    model.add("gpus", (share * X).sum(axis=0) + pair_gpus <= 1.0)
    need = slo_rate(problem) if slos else np.zeros(M)
    bound = need > 0
    if bound.any():
        steps = ((solo / Tmax[:, None]) * X).sum(axis=1) + pair_steps
        model.add("slo", steps[np.flatnonzero(bound)] >= need[bound] / Tmax[bound])
    value = (solo / cost[None, :] * X).sum() + (
        ((cand.Q[pj, pm, pq] + cand.Q[pj, pq, pm]) / cost[pj]) * P).sum()
    model.maximize(value)
    result = solver.solve(model.compile())
    seconds = time.perf_counter() - start
    details = {"candidate_pairs": cand.pairs - cand.pruned, "pruned_pairs": cand.pruned}
    if result.x is None or not result.status.has_solution:
        if result.status is Status.INFEASIBLE and bound.any():
            details["infeasible_slos"] = [problem.job_ids[m] for m in np.flatnonzero(bound)]
        return Outcome.from_status(None, result.status, None, None, seconds, solver.name,
                                   details | {"termination": result.detail},
                                   termination=result.reason)
    x = np.concatenate([result.x[: M * J], [0.0], result.x[M * J:]])  # paired_allocation's t
    decision = paired_allocation(problem, cand, x, pj, pm, pq)
    return _outcome(problem, decision, result, seconds, solver.name, details)


def throughput_per_dollar(problem: ThroughputProblem, decision: PairedAllocation) -> float:
    """The objective of a decision: sum over jobs and types of steps/s / ($/h)."""
    per_type = decision.solo * problem.throughput * problem.runnable
    value = float((per_type / problem.cost_per_hour[None, :]).sum())
    rates = decision.rate_first + decision.rate_second
    return value + float((decision.fraction * rates / problem.cost_per_hour[decision.gpu]).sum())


def _outcome(problem, decision, result, seconds, solver_name, details) -> Outcome:
    steps = decision.steps(problem)
    details.update(
        pairs=decision.pairs(problem),
        effective_throughput=dict(zip(problem.job_ids, steps.tolist())),
        gpus_in_use=dict(zip(problem.gpu_types, decision.gpus_in_use(problem).tolist())))
    return Outcome.from_status(decision.total(), result.status,
                               throughput_per_dollar(problem, decision), result.bound, seconds,
                               solver_name, details, decision=decision)


@dataclasses.dataclass(frozen=True)
class MinCostPackedOptions:
    """slos: add each job's SLO row (jobs with a finite time_to_deadline, seconds); prune: drop
    the pair columns that cannot help (module docstring)."""

    slos: bool = True
    prune: bool = True


class MinCostPacked(PackedPolicy):
    """Most steps/s per dollar with space sharing, meeting SLOs (Gavel's
    max_sum_throughput_normalized_by_cost_packed_SLOs); details as max_min_fairness_packed's,
    plus infeasible_slos when the SLOs cannot all be met."""

    name = "min_cost_packed"
    summary = ("Most steps/s per dollar with space sharing (co-location table) and SLOs, one "
               "LP over solo and pair columns.")
    objective_doc = "sum over jobs of steps/s divided by the $/h of the GPU type, pairs counted"
    Options = MinCostPackedOptions
    needs = Capability.LP

    def solve_with_table(self, problem: ThroughputProblem, table: PairTable,
                         options: MinCostPackedOptions, solver) -> Outcome:
        return min_cost_packed(problem, table, solver, slos=options.slos, prune=options.prune)

    def objective(self, problem: ThroughputProblem, allocation, options) -> float | None:
        if problem.num_jobs == 0:
            return None
        return throughput_per_dollar(problem, paired(allocation))
