"""Chronus over several GPU types (gpu_type="all"): the pool MILP choosing each job's type,
against a hand-worked example, brute force on tiny two-type instances, and the one-pool lease
MILP."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedopt import solve
from schedopt.backends import Status
from schedopt.errors import PolicyError
from schedopt.instance import parse_instance
from schedopt.policies.chronus.lease_milp import LeaseProblem, solve_lease_problem
from schedopt.policies.chronus.pools import PoolProblem, pool_greedy, solve_pool_problem


def two_types():
    """v100 and k80 pools of 4 GPUs (4 per node), leases of 1,200 s, no resume overhead."""
    return parse_instance({
        "format": "schedopt-instance/1",
        "cluster": {"gpu_types": {"v100": {"count": 4, "gpus_per_node": 4},
                                  "k80": {"count": 4, "gpus_per_node": 4}}},
        "jobs": [
            {"id": "A", "scale_factor": 4, "total_steps": 2400, "deadline": 3600,
             "throughput": {"v100": 1.0, "k80": 0.5}},
            {"id": "B", "scale_factor": 4, "total_steps": 1200, "deadline": 2400,
             "throughput": {"v100": 1.0, "k80": 1.0}},
            {"id": "C", "scale_factor": 4, "total_steps": 2400, "deadline": 2400,
             "throughput": {"v100": 2.0, "k80": 1.0}},
        ]})


def test_two_types_hand_worked_example():
    # Leases needed (steps / steps/s / 1,200 s): A 2 on v100, 4 on k80; B 1 on either;
    # C 1 on v100, 2 on k80. Horizons (leases ending by the deadline): A 3, B 2, C 2. Each job
    # takes a whole pool (4 GPUs), so a pool serves one job per lease.
    # A cannot make it on k80 (4 > 3): A holds 2 of v100's leases {0, 1, 2}.
    # v100 alone: A, B, C need 2 + 1 + 1 = 4 of 3 leases, so one SLO is lost (value 2).
    # With k80 too, all three fit (value 3). sigma = -1 subtracts the GPUs in lease 0 over the
    # cluster's 8: C on k80 would need both k80 leases {0, 1}, so C goes to v100 (1 lease) and
    # B to k80 lease 1; then v100 holds A (2 leases) and C (1) in {0, 1, 2}: one of them is in
    # lease 0 (4 GPUs). Objective 3 - 4/8 = 2.5.
    result = solve(two_types(), "chronus", gpu_type="all", resume_overhead_s=0, sigma=-1)
    doc = result.to_dict()
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(2.5, abs=1e-9)
    assert doc["admitted"] == ["A", "B", "C"]
    assert doc["pools"] == {"A": "v100", "B": "k80", "C": "v100"}
    assert doc["leases"]["B"] == [1]
    assert sorted(doc["leases"]["A"] + doc["leases"]["C"]) == [0, 1, 2]
    assert len(doc["running"]) == 1
    assert {job: sum(row.values()) for job, row in doc["allocation"].items()} == \
        {"A": float("A" in doc["running"]), "B": 0.0, "C": float("C" in doc["running"])}
    # One pool (the default: v100, the first of the largest): value 2 - 4/4 = 1.
    single = solve(two_types(), "chronus", resume_overhead_s=0, sigma=-1)
    assert single.objective == pytest.approx(1.0, abs=1e-9)


def test_all_types_on_a_one_type_instance_is_the_single_pool_policy():
    inst = parse_instance({
        "format": "schedopt-instance/1",
        "cluster": {"gpu_types": {"v100": {"count": 8, "gpus_per_node": 8}}},
        "jobs": [{"id": "A", "scale_factor": 4, "total_steps": 2400, "throughput": {"v100": 1.0},
                  "deadline_options": [{"after_s": 2400, "value": 10},
                                       {"after_s": 3600, "value": 8}]},
                 {"id": "B", "scale_factor": 8, "total_steps": 1200, "throughput": {"v100": 1.0},
                  "deadline": 2400}]})
    one = solve(inst, "chronus", resume_overhead_s=0, sigma=1).to_dict()
    every = solve(inst, "chronus", resume_overhead_s=0, sigma=1, gpu_type="all").to_dict()
    for key in ("objective", "leases", "running", "admitted", "allocation"):
        assert every[key] == one[key]


def brute_force(problem: PoolProblem) -> float | None:
    """Best objective over every (option, pool, set of slots before the horizon giving the
    job's leases on that pool) per job, or nothing for jobs not admitted; None if infeasible."""
    n, V, P, H = problem.shape
    usable = problem.usable()
    choices = []
    for j in range(n):
        mine = [] if problem.admitted[j] else [(-1, -1, ())]
        for v, p in itertools.product(range(V), range(P)):
            if not usable[j, v, p]:
                continue
            slots = range(min(int(problem.horizon[j, v]), H))
            for r in range(1, len(slots) + 1):
                for held in itertools.combinations(slots, r):
                    if problem.width[list(held)].sum() >= problem.need[j, p]:
                        mine.append((v, p, held))
        choices.append(mine)
    best = None
    for plan in itertools.product(*choices):
        used = np.zeros((P, H), dtype=np.int64)
        for j, (v, p, held) in enumerate(plan):
            if v >= 0:
                used[p, list(held)] += problem.gpus[j, p]
        if np.any(used > problem.capacity):
            continue
        value = sum(problem.value[j, v] for j, (v, _, _) in enumerate(plan) if v >= 0)
        value += problem.sigma * sum(problem.gpus[j, p] for j, (v, p, held) in enumerate(plan)
                                     if v >= 0 and 0 in held) / problem.scale()
        best = value if best is None else max(best, value)
    return best


@st.composite
def two_type_problems(draw):
    H = draw(st.integers(2, 3))
    width = np.array([1] + draw(st.lists(st.sampled_from([1, 2]), min_size=H - 1,
                                         max_size=H - 1)))
    n = draw(st.integers(1, 3))
    gpus = np.array(draw(st.lists(st.lists(st.sampled_from([0, 1, 2, 4]), min_size=2,
                                           max_size=2), min_size=n, max_size=n)))
    need = np.array(draw(st.lists(st.lists(st.integers(1, 4), min_size=2, max_size=2),
                                  min_size=n, max_size=n)))
    V = draw(st.integers(1, 2))
    value = np.array(draw(st.lists(st.lists(st.sampled_from([1.0, 2.0, 3.5]), min_size=V,
                                            max_size=V), min_size=n, max_size=n)))
    horizon = np.array(draw(st.lists(st.lists(st.integers(0, H), min_size=V, max_size=V),
                                     min_size=n, max_size=n)))
    capacity = np.array(draw(st.lists(st.lists(st.sampled_from([2, 4]), min_size=H,
                                               max_size=H), min_size=2, max_size=2)))
    sigma = draw(st.sampled_from([1.0, -1.0]))
    wish = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    loose = PoolProblem.from_arrays(gpus, need, value, horizon, capacity, width, sigma=sigma)
    placed = pool_greedy(loose)[0][:, 0] >= 0  # admitted jobs must be placeable
    return PoolProblem.from_arrays(gpus, need, value, horizon, capacity, width, wish & placed,
                                   sigma)


@settings(max_examples=60, deadline=None)
@given(two_type_problems())
def test_pool_milp_matches_brute_force_on_tiny_two_type_instances(problem):
    plan = solve_pool_problem(problem, "scip", time_limit=None)
    expected = brute_force(problem)
    assert expected is not None
    assert plan.status is Status.OPTIMAL
    assert plan.objective == pytest.approx(expected, abs=1e-6)
    used = np.zeros_like(problem.capacity)
    for j in np.flatnonzero(plan.choice[:, 0] >= 0):
        v, p = plan.choice[j]
        held = np.flatnonzero(plan.held[j])
        assert np.all(held < problem.horizon[j, v]) and problem.gpus[j, p] > 0
        assert problem.width[held].sum() >= problem.need[j, p]
        used[p, held] += problem.gpus[j, p]
    assert np.all(used <= problem.capacity)
    assert np.all(plan.choice[problem.admitted, 0] >= 0)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_one_pool_problem_has_the_lease_milp_optimum(seed):
    rng = np.random.default_rng(seed)
    n, H = int(rng.integers(1, 5)), int(rng.integers(2, 6))
    gpus = rng.choice([1, 2, 4], n)
    need = rng.integers(1, 4, n)
    horizon = rng.integers(1, H + 1, (n, 2))
    value = rng.choice([1.0, 2.0, 5.0], (n, 2))
    capacity = rng.choice([4, 6], H)
    sigma = float(rng.choice([1.0, -1.0]))
    pool = solve_pool_problem(PoolProblem.from_arrays(gpus[:, None], need[:, None], value,
                                                      horizon, capacity[None, :], sigma=sigma),
                              "scip", time_limit=None)
    lease = solve_lease_problem(LeaseProblem.from_arrays(
        gpus, need, np.repeat(np.arange(n), 2), value.ravel(), horizon.ravel(), capacity,
        sigma=sigma, admitted=np.zeros(n, dtype=bool)), "scip", time_limit=None)
    assert pool.status is Status.OPTIMAL and lease.status is Status.OPTIMAL
    assert pool.objective == pytest.approx(lease.objective, abs=1e-6)


def test_pool_problem_rejects_bad_shapes():
    with pytest.raises(PolicyError, match="capacity must be"):
        PoolProblem.from_arrays([[1, 1]], [[1, 1]], [[1.0]], [[1]], [[4, 4]])
    with pytest.raises(PolicyError, match="needs >= 1"):
        PoolProblem.from_arrays([[1]], [[0]], [[1.0]], [[1]], [[4]])


def test_lease_replay_of_all_types_is_one_clear_error():
    from schedopt.errors import SchedoptError
    from schedopt.policies.chronus.boundary import LeaseInstance

    with pytest.raises(SchedoptError, match="gpu_type=all plans every GPU type at one boundary"):
        LeaseInstance.from_instance(two_types(), "all")
