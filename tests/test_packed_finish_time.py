"""finish_time_fairness_packed against Gavel's formulation in cvxpy, pairs listed one by one."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

import gavel_reference as ref
from schedopt.backends import Status
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.packed.finish_fairness import finish_time_fairness_packed
from schedopt.policies.packed.master import PairTable
from test_gavel_dropin import TYPES, hand_table, packed_state, problem_of


def cvxpy_packed_ftf(p: ThroughputProblem, state: dict) -> float:
    """min max_m (t_m + w_m R_m inv_pos(steps_m)) / D_m over solo rows and one row per pair
    entry of `state` (Gavel's packed finish-time fairness, written from its math)."""
    T = np.asarray(p.throughput, dtype=float)
    ok = ref.runnable(p)
    s, c = np.asarray(p.scale_factor, dtype=float), np.asarray(p.capacity, dtype=float)
    R, t, w = (np.asarray(v, dtype=float) for v in (p.remaining_steps, p.time_since_arrival,
                                                    p.weight))
    D = p.isolated_time + R / ref.thr(T, ref.isolated_share(c, s))
    M, J = T.shape
    X = cp.Variable((M, J), nonneg=True)
    pairs = list(state["pairs"].items())
    P = cp.Variable((len(pairs), J), nonneg=True)
    time, gpus, steps = [cp.sum(X[m]) for m in range(M)], [s @ X[:, j] for j in range(J)], \
        [T[m] @ X[m] for m in range(M)]
    constraints = [cp.multiply((~ok).astype(float), X) == 0]
    for i, (pair, per_type) in enumerate(pairs):
        for j, name in enumerate(TYPES):
            qa, qb = per_type[name]
            if not (ok[pair.a, j] and ok[pair.b, j]) or qa + qb == 0:
                constraints.append(P[i, j] == 0)
                continue
            time[pair.a] += P[i, j]
            time[pair.b] += P[i, j]
            gpus[j] += s[pair.a] * P[i, j]
            steps[pair.a] += qa * P[i, j]
            steps[pair.b] += qb * P[i, j]
    constraints += [cp.hstack(time) <= 1, cp.hstack(gpus) <= c]
    rho = cp.hstack([(t[m] + w[m] * R[m] * cp.inv_pos(steps[m])) / D[m] for m in range(M)])
    problem = cp.Problem(cp.Minimize(cp.max(rho)), constraints)
    problem.solve(solver="CLARABEL")
    assert problem.status == cp.OPTIMAL
    return float(problem.value)


def with_history(state: dict, waited: bool) -> ThroughputProblem:
    p = problem_of(state)
    since = p.time_since_arrival if waited else np.zeros(p.num_jobs)
    return ThroughputProblem.from_arrays(
        p.throughput, p.scale_factor, p.weight, p.capacity, job_ids=p.job_ids,
        gpu_types=p.gpu_types, remaining_steps=p.remaining_steps, time_since_arrival=since,
        isolated_time=since * 0.3)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("method", ["columns", "dense"])
def test_packed_ftf_reaches_gavels_convex_optimum_with_a_proven_bound(seed, method):
    state = packed_state(seed)
    p = with_history(state, waited=True)
    outcome = finish_time_fairness_packed(p, hand_table(state), method=method)
    expected = cvxpy_packed_ftf(p, state)
    assert outcome.status is Status.OPTIMAL
    assert outcome.bound <= outcome.objective <= outcome.bound * (1 + 1e-6)
    assert outcome.bound <= expected * (1 + 1e-6)  # a proven lower bound holds
    assert outcome.objective == pytest.approx(expected, rel=1e-5)
    steps = outcome.decision.steps(p)  # the reported ratio is the decision's own
    D = p.isolated_time + p.remaining_steps / ref.thr(
        p.throughput, ref.isolated_share(np.asarray(p.capacity, float), p.scale_factor))
    rho = (p.time_since_arrival + p.weight * p.remaining_steps / steps) / D
    assert rho.max() == pytest.approx(outcome.objective, rel=1e-12)


def test_packed_ftf_without_waiting_is_exact_in_one_probe():
    state = packed_state(2)
    p = with_history(state, waited=False)
    outcome = finish_time_fairness_packed(p, hand_table(state))
    assert outcome.details["probes"] == 1 and outcome.status is Status.OPTIMAL
    assert outcome.objective == pytest.approx(cvxpy_packed_ftf(p, state), rel=1e-5)


def test_packed_ftf_without_pairs_is_gavels_unpacked_ftf():
    state = packed_state(1)
    p = with_history(state, waited=True)
    unit = ThroughputProblem.from_arrays(  # weights 1: Gavel's unpacked FTF ignores them
        p.throughput, p.scale_factor, None, p.capacity, remaining_steps=p.remaining_steps,
        time_since_arrival=p.time_since_arrival, isolated_time=p.isolated_time)
    outcome = finish_time_fairness_packed(unit, PairTable.none(p.num_jobs, p.num_types))
    assert outcome.objective == pytest.approx(ref.finish_time_fairness(unit).value, rel=1e-5)
    assert outcome.details["pairs"] == []


@pytest.mark.parametrize("name", ["finish_time_fairness_packed", "min_cost_packed",
                                  "fifo_packed"])
def test_new_packed_policies_solve_an_instance_with_a_colocation_table(name):
    from schedopt.api import solve
    from test_packed import COLOCATION

    result = solve(COLOCATION, name)
    assert result.status is Status.OPTIMAL
    allocation = np.asarray(result.X)
    assert allocation.min() >= 0 and allocation.sum(axis=1).max() <= 1 + 1e-9
    if name == "finish_time_fairness_packed":  # a proven bound within the tolerance
        assert result.details["lower"] <= result.objective <= result.details["lower"] * (1 + 1e-6)
