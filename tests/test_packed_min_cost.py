"""min_cost_packed (Gavel's max_sum_throughput_normalized_by_cost_packed_SLOs) against a scipy LP
with every pair column listed one by one, and against the unpacked min_cost without pairs."""

from __future__ import annotations

import numpy as np
import pytest

import gavel_reference as ref
from schedopt.backends import Status
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.packed.per_dollar import MinCostPacked, min_cost_packed
from schedopt.policies.packed.master import PairTable
from test_gavel_dropin import hand_table, packed_state, problem_of
from test_packed_targets import FullLP


def per_dollar(p: ThroughputProblem, lp: FullLP) -> np.ndarray:
    """The objective over FullLP's columns [X, P]: steps/s per $/h of the column's type."""
    c = np.asarray(p.cost_per_hour)
    solo = (np.asarray(p.throughput) * p.runnable / c[None, :]).ravel()
    return np.concatenate([solo, [(qa + qb) / c[j] for j, a, b, qa, qb in lp.pairs]])


def slo_problem(state: dict, seconds: dict) -> ThroughputProblem:
    """problem_of with the SLOs (seconds left) of `seconds` {job row: s} only."""
    p = problem_of(state)
    deadline = np.full(p.num_jobs, np.nan)
    deadline[list(seconds)] = list(seconds.values())
    return ThroughputProblem.from_arrays(
        p.throughput, p.scale_factor, p.weight, p.capacity, job_ids=p.job_ids,
        gpu_types=p.gpu_types, cost_per_hour=p.cost_per_hour, remaining_steps=p.remaining_steps,
        time_to_deadline=deadline)


@pytest.mark.parametrize("seed", range(5))
def test_packed_cost_matches_the_full_lp(seed):
    state = packed_state(seed)
    p, table = problem_of(state), hand_table(state)
    lp = FullLP(p, table)
    M = p.num_jobs
    expected = -lp.maximize(np.zeros(M), np.zeros(M), np.zeros(M, dtype=bool),
                            per_dollar(p, lp)).fun
    outcome = min_cost_packed(p, table, slos=False)
    assert outcome.status is Status.OPTIMAL
    assert outcome.objective == pytest.approx(expected, rel=1e-7)
    assert MinCostPacked().objective(p, outcome.decision, None) == pytest.approx(expected,
                                                                                  rel=1e-7)
    unpruned = min_cost_packed(p, table, slos=False, prune=False)
    assert unpruned.objective == pytest.approx(expected, rel=1e-7)


@pytest.mark.parametrize("seed", range(3))
def test_packed_cost_meets_slos_and_matches_the_full_lp_with_floors(seed):
    state = packed_state(seed)
    R = problem_of(state).remaining_steps
    rates = (state["T"] * 0.1).max(axis=1)  # ask jobs 0 and 1 for 10% of their best rate
    p = slo_problem(state, {0: R[0] / rates[0], 1: R[1] / rates[1]})
    table = hand_table(state)
    lp = FullLP(p, table)
    M = p.num_jobs
    floors = np.zeros(M)
    floors[:2] = rates[:2]
    expected = -lp.maximize(np.zeros(M), floors, np.zeros(M, dtype=bool), per_dollar(p, lp)).fun
    outcome = min_cost_packed(p, table)
    assert outcome.objective == pytest.approx(expected, rel=1e-7)
    steps = outcome.decision.steps(p)
    assert np.all(steps[:2] >= rates[:2] * (1 - 1e-9))
    free = min_cost_packed(p, table, slos=False)
    assert free.objective >= outcome.objective - 1e-9


def test_packed_cost_names_the_jobs_whose_slos_cannot_be_met():
    state = packed_state(0)
    p = slo_problem(state, {2: 1e-6})
    outcome = min_cost_packed(p, hand_table(state))
    assert outcome.status is Status.INFEASIBLE and outcome.decision is None
    assert outcome.details["infeasible_slos"] == [p.job_ids[2]]


def test_packed_cost_without_pairs_is_the_unpacked_min_cost():
    state = packed_state(3)
    p = problem_of(state)
    outcome = min_cost_packed(p, PairTable.none(p.num_jobs, p.num_types), slos=False)
    assert outcome.objective == pytest.approx(ref.min_cost(p, slos=False).value, rel=1e-6)
