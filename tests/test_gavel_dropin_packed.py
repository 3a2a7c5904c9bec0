"""The Gavel names added last, through the fake scheduler of test_gavel_dropin: the packed FIFO,
finish-time fairness and cost policies (Gavel's pair keys in, solo and pair time out), Gandiva's
equal split (its random pairing: test_gavel_gandiva) and AlloX's matching."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

import gavel_reference as ref
from schedopt.gavel import ftf_need, get_policy, level_weights
from schedopt.policies.gavel.lp import finish_time_ratios, isolated_finish_time
from schedopt.policies.baselines.gandiva import equal_split
from schedopt.policies.packed.finish_fairness import finish_time_ratios_packed, isolated_finish
from schedopt.policies.packed.master import PairTable
from test_gavel_dropin import (TYPES, FakeGavelScheduler, JobId, as_matrix,
                               hand_table, packed_state, problem_of, read_back)
from test_packed_finish_time import cvxpy_packed_ftf
from test_packed_min_cost import per_dollar
from test_packed_targets import FullLP, leximin_by_brute_force

NEW_PACKED = ["fifo_packed", "finish_time_fairness_packed",
              "max_sum_throughput_normalized_by_cost_packed_SLOs", "gandiva"]


@pytest.mark.parametrize("name", NEW_PACKED)
def test_new_packed_names_return_gavels_keys_and_fit_the_cluster(name):
    state = packed_state(2)
    scheduler = FakeGavelScheduler(get_policy(name), state)
    allocation = scheduler.compute_allocation()
    assert scheduler.job_packing()
    assert set(allocation) == set(state["ids"]) | set(state["pairs"])
    assert all(list(a) == TYPES for a in allocation.values())
    read_back(state, allocation, problem_of(state))  # time, GPUs, equal scale factors


@pytest.mark.parametrize("seed", range(3))
def test_packed_ftf_and_cost_reach_their_independent_optima(seed):
    state = packed_state(seed)
    p = problem_of(state)
    allocation = FakeGavelScheduler(get_policy("finish_time_fairness_packed"),
                                    state).compute_allocation()
    steps = read_back(state, allocation, p)
    assert finish_time_ratios_packed(p, steps).max() == pytest.approx(
        cvxpy_packed_ftf(p, state), rel=1e-5)
    no_slos = {**state, "SLOs": {}}  # Gavel's cost policy with SLOs, when no job has one
    allocation = FakeGavelScheduler(
        get_policy("max_sum_throughput_normalized_by_cost_packed_SLOs"),
        no_slos).compute_allocation()
    read_back(state, allocation, p)
    c = np.asarray(p.cost_per_hour)
    value = (as_matrix(allocation, state["ids"]) * state["T"] / c).sum() + sum(
        (allocation[pair][t] * (q[0] + q[1]) / c[j])
        for pair, per_type in state["pairs"].items() for j, (t, q) in
        enumerate((t, per_type[t]) for t in TYPES))
    lp = FullLP(p, hand_table(state))
    M = p.num_jobs
    best = -lp.maximize(np.zeros(M), np.zeros(M), np.zeros(M, dtype=bool), per_dollar(p, lp)).fun
    assert value == pytest.approx(best, rel=1e-7)


def test_packed_ftf_object_credits_isolated_time_across_calls():
    state = packed_state(1)
    policy = get_policy("finish_time_fairness_packed")
    FakeGavelScheduler(policy, state).compute_allocation()
    assert policy._isolated_time == {}
    later = {**state, "num_steps_remaining": {j: r - 500.0 for j, r in
                                              state["num_steps_remaining"].items()}}
    FakeGavelScheduler(policy, later).compute_allocation()
    assert set(policy._isolated_time) == set(state["ids"])
    assert all(v > 0 for v in policy._isolated_time.values())


def test_fifo_packed_pairs_a_waiting_job_with_a_running_one():
    state = packed_state(2)
    allocation = FakeGavelScheduler(get_policy("fifo_packed"), state).compute_allocation()
    whole = [v for a in allocation.values() for v in a.values() if v > 0]
    assert whole and all(v == 1.0 for v in whole)  # whole rounds, as Gavel's FIFO
    paired = [pair for pair in state["pairs"] if max(allocation[pair].values()) > 0]
    assert paired and not set(paired) & set(state["zero_pairs"])


def gandiva_state(num_jobs: int, gpus: dict) -> dict:
    state = packed_state(4, num_jobs)
    return {**state, "cluster_spec": gpus}


def test_gandiva_splits_the_cluster_equally_when_every_job_fits():
    state = gandiva_state(5, {"k80": 8, "p100": 4, "v100": 4})
    allocation = FakeGavelScheduler(get_policy("gandiva", seed=1), state).compute_allocation()
    s = np.array([state["scale_factors"][j] for j in state["ids"]], dtype=float)
    c = np.array([state["cluster_spec"][t] for t in TYPES], dtype=float)
    expected = np.array([(c / 5) / s_m / max(((c / 5) / s_m).sum(), 1.0) for s_m in s])
    np.testing.assert_allclose(as_matrix(allocation, state["ids"]), expected, rtol=1e-12)
    np.testing.assert_allclose(equal_split(c, s), expected, rtol=1e-12)
    assert all(max(allocation[pair].values()) == 0 for pair in state["pairs"])


def test_allox_starts_the_shortest_jobs_and_keeps_started_jobs_on_their_gpu():
    ids = [JobId(n) for n in range(4)]
    state = {
        "throughputs": {j: {"k80": 0.0, "p100": 0.0, "v100": 1.0} for j in ids},
        "scale_factors": dict.fromkeys(ids, 1),
        "times_since_start": dict.fromkeys(ids, 0.0),
        "num_steps_remaining": dict(zip(ids, [50.0, 10.0, 30.0, 20.0])),
        "cluster_spec": {"k80": 0, "p100": 0, "v100": 2},
    }
    policy = get_policy("allox")
    first = FakeGavelScheduler(policy, state).compute_allocation()
    # two v100s, all waiting: the optimal schedule runs the two shortest first (10 and 20 s)
    assert [j.n for j in ids if first[j]["v100"] == 1.0] == [1, 3]
    state["num_steps_remaining"] = dict(zip(ids, [50.0, 9.0, 30.0, 1.0]))
    state["throughputs"][JobId(4)] = {"k80": 0.0, "p100": 0.0, "v100": 1.0}
    state["scale_factors"][JobId(4)] = 1
    state["times_since_start"][JobId(4)] = 0.0
    state["num_steps_remaining"][JobId(4)] = 0.5
    second = FakeGavelScheduler(policy, state).compute_allocation()
    assert [j.n for j in second if second[j]["v100"] == 1.0] == [1, 3]  # no preemption
    del state["throughputs"][JobId(3)]  # job 3 finished: its GPU starts the shortest waiting
    third = FakeGavelScheduler(policy, state).compute_allocation()
    assert [j.n for j in third if third[j]["v100"] == 1.0] == [1, 4]


def test_allox_total_completion_time_is_optimal_by_brute_force():
    rng = np.random.default_rng(3)
    ids = [JobId(n) for n in range(5)]
    T = rng.uniform(0.5, 3.0, (5, 3))
    R = rng.uniform(10, 100, 5)
    state = {"throughputs": {j: dict(zip(TYPES, T[m])) for m, j in enumerate(ids)},
             "scale_factors": dict.fromkeys(ids, 1), "times_since_start": dict.fromkeys(ids, 0.0),
             "num_steps_remaining": dict(zip(ids, R)), "cluster_spec": dict(zip(TYPES, [1, 1, 1]))}
    started = FakeGavelScheduler(get_policy("allox"), state).compute_allocation()

    def total(assign):  # each GPU runs its jobs shortest first
        out = 0.0
        for g in range(3):
            times = sorted(R[m] / T[m, g] for m in range(5) if assign[m] == g)
            out += np.cumsum(times).sum()
        return out

    best = min(itertools.product(range(3), repeat=5), key=total)
    for g in range(3):  # the job each GPU starts is the first of an optimal schedule's queue
        queue = sorted((R[m] / T[m, g], m) for m in range(5) if best[m] == g)
        assert started[ids[queue[0][1]]][TYPES[g]] == 1.0


def test_allox_alpha_lets_only_the_longest_waiting_jobs_compete():
    ids = [JobId(n) for n in range(4)]
    state = {
        "throughputs": {j: {"k80": 0.0, "p100": 0.0, "v100": 1.0} for j in ids},
        "scale_factors": dict.fromkeys(ids, 1),
        "times_since_start": dict(zip(ids, [100.0, 0.0, 50.0, 10.0])),
        "num_steps_remaining": dict(zip(ids, [40.0, 5.0, 30.0, 20.0])),
        "cluster_spec": {"k80": 0, "p100": 0, "v100": 1},
    }
    plain = FakeGavelScheduler(get_policy("allox"), state).compute_allocation()
    assert [j.n for j in ids if plain[j]["v100"] == 1.0] == [1]  # the shortest job
    # alpha 0.5: the 2 longest-waiting jobs (0 and 2) compete; job 2 is the shorter of them
    fair = FakeGavelScheduler(get_policy("allox_alpha=0.5"), state).compute_allocation()
    assert [j.n for j in ids if fair[j]["v100"] == 1.0] == [2]
    assert get_policy("allox_alpha=0.5").name == "AlloX_Perf"


@pytest.mark.parametrize("seed", range(3))
def test_packed_max_min_returns_the_leximin_optimum_of_its_lp(seed):
    state = packed_state(seed)
    p, table = problem_of(state), hand_table(state)
    allocation = FakeGavelScheduler(get_policy("max_min_fairness_packed"),
                                    state).compute_allocation()
    unit = np.asarray(p.weight) * p.equal_share_throughput / np.asarray(p.scale_factor)
    levels = read_back(state, allocation, p) / unit
    M = p.num_jobs
    best = -FullLP(p, table).maximize(unit, np.zeros(M), np.ones(M, dtype=bool)).fun
    assert levels.min() == pytest.approx(best, rel=1e-6)  # an optimum of the max-min LP
    np.testing.assert_allclose(levels, leximin_by_brute_force(p, table), rtol=1e-6)


def test_ftf_perf_returns_the_leximin_of_the_needs_at_the_optimal_ratio():
    """Levels steps_m / need_m(rho*) against a brute-force leximin (test_packed_targets), for
    the unpacked policy (no pairs) and the packed one (Gavel's pairs)."""
    state = packed_state(3)
    p = problem_of(state)
    X = as_matrix(FakeGavelScheduler(get_policy("finish_time_fairness_perf"),
                                     {**state, "pairs": {}}).compute_allocation(), state["ids"])
    unit = dataclasses.replace(p, weight=np.ones(p.num_jobs))
    rho = finish_time_ratios(unit, X).max()
    assert rho == pytest.approx(ref.finish_time_fairness(unit).value, rel=1e-5)
    need = ftf_need(unit, rho, isolated_finish_time(unit), weighted=False)
    levelled = dataclasses.replace(unit, weight=level_weights(unit, need))
    expected = leximin_by_brute_force(levelled, PairTable.none(p.num_jobs, p.num_types))
    np.testing.assert_allclose((state["T"] * X).sum(1) / need, expected, rtol=1e-5)
    allocation = FakeGavelScheduler(get_policy("finish_time_fairness_packed"),
                                    state).compute_allocation()
    steps = read_back(state, allocation, p)
    rho = finish_time_ratios_packed(p, steps).max()
    assert rho == pytest.approx(cvxpy_packed_ftf(p, state), rel=1e-5)
    need = ftf_need(p, rho, isolated_finish(p), weighted=True)
    levelled = dataclasses.replace(p, weight=level_weights(p, need))
    np.testing.assert_allclose(steps / need, leximin_by_brute_force(levelled, hand_table(state)),
                               rtol=1e-5)


def test_packed_makespan_returns_the_leximin_of_the_needs_at_the_optimal_makespan():
    state = packed_state(0)
    p, table = problem_of(state), hand_table(state)
    allocation = FakeGavelScheduler(get_policy("min_total_duration_packed"),
                                    state).compute_allocation()
    steps = read_back(state, allocation, p)
    R = np.asarray(p.remaining_steps)
    M = p.num_jobs
    best = 1.0 / -FullLP(p, table).maximize(R, np.zeros(M), R > 0).fun  # seconds
    assert np.max(R / steps) == pytest.approx(best, rel=1e-6)
    need = R / best
    levelled = dataclasses.replace(p, weight=level_weights(p, need))
    np.testing.assert_allclose(steps / need, leximin_by_brute_force(levelled, table), rtol=1e-5)


def test_fifo_perf_passes_over_a_job_that_cannot_run_on_its_free_types():
    """Gavel's FIFO_Perf: job 2's only free type (k80) runs it at 0 steps/s, so it is passed
    over and job 3 still starts there (hand-worked, as tests/test_packed_fifo.py)."""
    ids = [JobId(n) for n in range(4)]
    rates = [[1.0, 0.0, 2.0], [1.0, 0.0, 3.0], [0.0, 0.0, 1.0], [1.0, 0.0, 1.0]]
    state = {"throughputs": {j: dict(zip(TYPES, r)) for j, r in zip(ids, rates)},
             "scale_factors": dict.fromkeys(ids, 1), "cluster_spec": {"k80": 2, "p100": 0,
                                                                      "v100": 1}}
    allocation = FakeGavelScheduler(get_policy("fifo_perf"), state).compute_allocation()
    np.testing.assert_array_equal(as_matrix(allocation, ids),
                                  [[0, 0, 1], [1, 0, 0], [0, 0, 0], [1, 0, 0]])
