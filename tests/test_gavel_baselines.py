"""Isolated, proportional and FIFO baselines: exact allocations on hand-built instances, and
allocations that satisfy the base constraints on random ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import gavel_reference as ref
from schedopt.api import solve
from schedopt.backends import Status
from schedopt.policies.baselines import throughput as baselines
from schedopt.core.problem import ThroughputProblem

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ isolated / proportional

def test_isolated_gives_each_job_one_mth_of_each_type_scaled_to_fit():
    # M = 3, c = [4, 4]: (c/M)/s = [4/3, 4/3]/s; rows [4/3, 4/3] (sum 8/3), [2/3, 2/3]
    # (sum 4/3), [1/3, 1/3] (sum 2/3) -> each divided by max(sum, 1)
    p = ThroughputProblem.from_arrays(np.ones((3, 2)), scale_factor=[1, 2, 4], capacity=[4, 4])
    result = solve(p, policy="isolated")
    assert result.status is Status.FEASIBLE and result.objective is None
    np.testing.assert_allclose(result.X, [[0.5, 0.5], [0.5, 0.5], [1 / 3, 1 / 3]], rtol=1e-12)


def test_isolated_rows_below_one_are_left_alone():
    p = ThroughputProblem.from_arrays(np.ones((4, 2)), scale_factor=[1, 1, 2, 2], capacity=[2, 1])
    X = baselines.isolated(p).allocation
    # the 2-GPU jobs' share of the 1-GPU type (0.125) is dropped: they cannot run there
    np.testing.assert_allclose(X, [[0.5, 0.25], [0.5, 0.25], [0.25, 0.0], [0.25, 0.0]], rtol=1e-12)


def test_proportional_scales_shares_down_when_jobs_ask_for_more_than_the_cluster():
    # C = 6 GPUs, jobs ask for 1+1+2+4 = 8 -> fit = 6/8; share [4/6, 2/6] * 3/4 = [0.5, 0.25];
    # the 4-GPU job cannot use the 2-GPU type, so its 0.25 there is dropped
    p = ThroughputProblem.from_arrays(np.ones((4, 2)), scale_factor=[1, 1, 2, 4], capacity=[4, 2])
    result = solve(p, policy="proportional")
    np.testing.assert_allclose(result.X, [[0.5, 0.25]] * 3 + [[0.5, 0.0]], rtol=1e-12)
    np.testing.assert_allclose(p.scale_factor @ result.X, [4, 1], rtol=1e-12)


def test_proportional_without_contention_is_the_equal_share():
    p = ThroughputProblem.from_arrays(np.ones((2, 3)), capacity=[1, 2, 5])
    np.testing.assert_allclose(solve(p, policy="proportional").X, np.tile([1 / 8, 2 / 8, 5 / 8], (2, 1)))


@pytest.mark.parametrize("policy", ["isolated", "proportional"])
def test_closed_form_baselines_give_no_time_on_types_the_job_cannot_use(policy):
    # j0 makes no progress on g1 (T = 0); j1 needs 4 GPUs and g0 has only 2
    p = ThroughputProblem.from_arrays([[1.0, 0.0], [2.0, 2.0]], scale_factor=[1, 4],
                                      capacity=[2, 4])
    X = solve(p, policy=policy).X
    assert X[0, 1] == 0.0, f"j0 gets {X[0, 1]} of g1, where its throughput is 0"
    assert X[1, 0] == 0.0, f"j1 (4 GPUs) gets {X[1, 0]} of g0, which has 2 GPUs"


# ------------------------------------------------------------------ FIFO

def test_fifo_head_of_line_job_that_does_not_fit_blocks_the_queue():
    # one type with 4 GPUs; arrival order a (1 GPU), b (4 GPUs), c (1 GPU); listed out of order.
    # a takes 1 GPU, b needs 4 but only 3 are free, so b waits and c may not jump ahead.
    p = ThroughputProblem.from_arrays([[1.0], [1.0], [1.0]], scale_factor=[1, 1, 4], capacity=[4],
                                      job_ids=["c", "a", "b"], time_since_arrival=[10, 300, 200])
    result = solve(p, policy="fifo")
    assert result.allocation.loc[["a", "b", "c"], "g0"].tolist() == [1.0, 0.0, 0.0]
    assert solve(p, policy="fifo_agnostic", seed=3).allocation["g0"].to_dict() == \
        {"a": 1.0, "b": 0.0, "c": 0.0}


def test_fifo_puts_each_job_on_its_fastest_type_with_room():
    # one GPU of each type. j0 arrived first and takes its fastest (g1); j1 also prefers g1,
    # finds it full and takes g0; j2 finds nothing free (and stops the queue).
    p = ThroughputProblem.from_arrays([[1.0, 3.0], [1.0, 5.0], [9.0, 9.0]], capacity=[1, 1],
                                      time_since_arrival=[30, 20, 10])
    np.testing.assert_array_equal(solve(p, policy="fifo").X, [[0, 1], [1, 0], [0, 0]])


def test_fifo_serves_jobs_in_arrival_order_not_list_order():
    p = ThroughputProblem.from_arrays([[1.0, 3.0], [1.0, 5.0]], capacity=[1, 1],
                                      time_since_arrival=[20, 30])  # j1 arrived first
    np.testing.assert_array_equal(solve(p, policy="fifo").X, [[1, 0], [0, 1]])


def test_fifo_skips_types_too_small_or_unable_to_run_the_job():
    # g1 is fastest but has 1 GPU < s = 2; g2 cannot run it (T = 0); g0 is the only choice
    p = ThroughputProblem.from_arrays([[1.0, 8.0, 0.0]], scale_factor=[2], capacity=[2, 1, 4])
    np.testing.assert_array_equal(solve(p, policy="fifo").X, [[1, 0, 0]])


def test_fifo_agnostic_is_reproducible_with_a_seed_and_varies_across_seeds():
    rng = np.random.default_rng(0)
    p = ThroughputProblem.from_arrays(rng.uniform(0.1, 10, (6, 4)), capacity=[2, 2, 2, 2],
                                      time_since_arrival=np.arange(6)[::-1])
    runs = {seed: solve(p, policy="fifo_agnostic", seed=seed).X for seed in range(20)}
    for seed, X in runs.items():
        np.testing.assert_array_equal(solve(p, policy="fifo_agnostic", seed=seed).X, X)
        assert X.sum() == 6  # 8 GPUs, 6 single-GPU jobs: everyone is placed
        np.testing.assert_array_equal(X.sum(axis=1), 1)
    assert len({X.tobytes() for X in runs.values()}) > 1, "the seed changes nothing"
    # the fastest-type FIFO is deterministic and picks the fastest type of the first job
    X = solve(p, policy="fifo").X
    first = 0  # largest time_since_arrival
    assert X[first, np.argmax(p.throughput[first])] == 1.0


# ------------------------------------------------------------------ random instances

BASELINES = ["isolated", "proportional", "fifo", "fifo_agnostic"]


@pytest.mark.parametrize("policy", BASELINES)
@SETTINGS
@given(p=ref.problems())
def test_baseline_allocations_respect_time_and_capacity(policy, p):
    X = solve(p, policy=policy).X
    assert X.shape == p.throughput.shape
    assert X.min() >= 0
    assert np.all(X.sum(axis=1) <= 1 + 1e-12)
    assert np.all(p.scale_factor @ X <= p.capacity * (1 + 1e-12))


@pytest.mark.parametrize("policy", BASELINES)
@SETTINGS
@given(p=ref.problems())
def test_baseline_allocations_are_zero_where_the_job_cannot_run(policy, p):
    # a job holding s_m GPUs of a type that has fewer, or on which it makes no progress
    ref.assert_base_constraints(p, solve(p, policy=policy).X)


@pytest.mark.parametrize("agnostic", [False, True])
@SETTINGS
@given(p=ref.problems())
def test_fifo_places_a_prefix_of_the_queue_and_stops_at_the_first_misfit(agnostic, p):
    order = np.argsort(-p.time_since_arrival, kind="stable")
    X = baselines.fifo(p, order=order, agnostic=agnostic, seed=7).allocation
    placed = X.sum(axis=1)
    assert set(np.unique(placed)) <= {0.0, 1.0} and set(np.unique(X)) <= {0.0, 1.0}
    in_order = placed[order]
    k = int(in_order.sum())
    assert np.all(in_order[:k] == 1) and np.all(in_order[k:] == 0), "a job jumped the queue"
    ok = ref.runnable(p)
    free = p.capacity.copy()
    for m in order[:k]:
        j = int(np.argmax(X[m]))
        had_room = ok[m] & (free >= p.scale_factor[m])
        assert had_room[j], f"job {m} placed on type {j} without room"
        if not agnostic:  # the fastest of the types that had room when it was placed
            assert p.throughput[m, j] == p.throughput[m][had_room].max()
        free[j] -= p.scale_factor[m]
    if k < p.num_jobs:
        head = order[k]
        assert not np.any(ok[head] & (free >= p.scale_factor[head])), "the head job fits somewhere"
