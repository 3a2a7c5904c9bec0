"""Water filling (lexicographic max-min fairness), flat and hierarchical: against Gavel's method
written plainly (`water_filling_reference`: one LP per level plus one LP per job), against
closed forms, and its constraints, policies, instance field and CLI output."""

from __future__ import annotations

import json

import gavel_reference as ref
import numpy as np
import pytest
from click.testing import CliRunner
from water_filling_reference import (
    coefficients,
    reference_hierarchical,
    reference_water_filling,
)

from schedopt.api import solve
from schedopt.backends import Status
from schedopt.cli.main import main
from schedopt.errors import InstanceError
from schedopt.policies.gavel import lp as gavel
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.gavel.water_filling import (
    hierarchical_water_filling,
    water_filling,
)
from schedopt.instance import load_instance, parse_instance

# The price decomposition (method), and each stage as one LP on a backend (solver).
SOLVERS = [{"method": "decomposition"}, {"solver": "highs"}]


def job_levels(outcome) -> np.ndarray:
    return np.fromiter(outcome.details["job_levels"].values(), float)


def random_problem(seed: int, users: bool = False) -> tuple[ThroughputProblem, bool]:
    """Small instances: 1-12 jobs, 1-3 types, some types unusable per job, scale factors up to
    4 on small types (individual caps bind), weights on odd seeds, tied rows on every fifth,
    agnostic on every third."""
    rng = np.random.default_rng(seed)
    M, J = int(rng.integers(1, 13)), int(rng.integers(1, 4))
    if seed % 4 == 0:
        T = rng.choice([0.5, 1.0, 2.0, 3.0], (M, J))
    else:
        T = rng.uniform(0.1, 3.0, (M, J))
    T = T * (rng.random((M, J)) > 0.25)
    T[:, 0] = np.maximum(T[:, 0], 0.05)
    if seed % 5 == 0 and M > 2:
        T[1] = T[0]
    capacity = rng.integers(1, 9, J).astype(float)
    capacity[0] = max(capacity[0], 4.0)
    weight = rng.choice([0.5, 1.0, 2.0], M) if seed % 2 else np.ones(M)
    owners = None
    if users:
        owners = [rng.choice(["u1", "u2", "u3", None]) for _ in range(M)]
    problem = ThroughputProblem.from_arrays(T, rng.choice([1, 1, 2, 4], M), weight, capacity,
                                            user=owners, user_weight={"u1": 2.0, "u2": 0.5})
    return problem, seed % 3 == 0


def assert_same_levels(got: np.ndarray, expected: np.ndarray) -> None:
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(np.sort(got), np.sort(expected), rtol=0, atol=1e-6 * scale)


# ------------------------------------------------------------------ flat water filling

@pytest.mark.parametrize("how", SOLVERS, ids=["decomposition", "highs"])
@pytest.mark.parametrize("seed", range(40))
def test_water_filling_matches_gavels_lp_sequence_on_random_instances(seed, how):
    problem, agnostic = random_problem(seed)
    reference = reference_water_filling(problem, agnostic)
    outcome = water_filling(problem, **how, agnostic=agnostic)
    assert outcome.status is Status.OPTIMAL
    assert_same_levels(job_levels(outcome), reference.levels)


@pytest.mark.parametrize("seed", range(0, 40, 3))
def test_first_level_is_max_min_fairness_and_the_bound_holds(seed):
    problem, agnostic = random_problem(seed)
    outcome = water_filling(problem, agnostic=agnostic)
    max_min = gavel.max_min_fairness(problem, solver="highs", agnostic=agnostic)
    assert outcome.objective == pytest.approx(max_min.objective, rel=1e-6)
    assert outcome.objective <= outcome.bound * (1 + 1e-9)
    assert outcome.bound == pytest.approx(max_min.objective, rel=1e-6)


@pytest.mark.parametrize("how", SOLVERS, ids=["decomposition", "highs"])
@pytest.mark.parametrize("seed", range(0, 40, 2))
def test_allocation_meets_every_constraint_and_gives_the_reported_levels(seed, how):
    problem, agnostic = random_problem(seed)
    outcome = water_filling(problem, **how, agnostic=agnostic)
    ref.assert_base_constraints(problem, outcome.allocation, tol=1e-9)
    a = coefficients(problem, agnostic)
    np.testing.assert_allclose(job_levels(outcome), np.einsum("mj,mj->m", a, outcome.allocation),
                               rtol=1e-12)
    assert outcome.objective == pytest.approx(job_levels(outcome).min(), rel=1e-12)


def test_hand_worked_single_type_example():
    # One type, 4.5 GPUs; level = s X / w. a (s1, w1), b (s1, w1), c (s2, w1), d (s1, w2).
    # Water at L: a, b hold L GPUs each, c L/2 of its time (L GPUs), d 2L of its time (2L
    # GPUs). d tops out at L = 1/2 (all of its time); a and b at L = 1; then c alone takes the
    # remaining 4.5 - 1 - 1 - 1 = 1.5 GPUs: X_c = 0.75, level 1.5.
    problem = ThroughputProblem.from_arrays([[2.0], [2.0], [2.0], [2.0]], [1, 1, 2, 1],
                                            [1, 1, 1, 2], [4.5], job_ids=list("abcd"))
    for how in SOLVERS:
        outcome = water_filling(problem, **how)
        np.testing.assert_allclose(outcome.allocation[:, 0], [1, 1, 0.75, 1], atol=1e-7)
        np.testing.assert_allclose(job_levels(outcome), [1, 1, 1.5, 0.5], atol=1e-7)
        assert outcome.objective == pytest.approx(0.5, rel=1e-9)
        assert outcome.details["levels"] == 3


def test_hand_worked_heterogeneous_example_has_one_level():
    # fast, slow: one GPU each. a, b run 2 on fast and 1 on slow (thr_eq 1.5), c 1 anywhere.
    # c takes slow time t; a and b split fast and the rest of slow: 4/3 + 2/3 (1 - t) >= 2 t
    # gives t = 3/4 for everyone, and no job can rise alone.
    problem = ThroughputProblem.from_arrays([[2.0, 1.0], [2.0, 1.0], [1.0, 1.0]],
                                            capacity=[1, 1])
    outcome = water_filling(problem)
    np.testing.assert_allclose(job_levels(outcome), [0.75] * 3, rtol=1e-7)
    assert outcome.details["levels"] == 1
    assert outcome.allocation[2, 0] == pytest.approx(0.0, abs=1e-7)


def test_many_distinct_caps_take_few_solves():
    # 400 jobs, each with its own top level s T_best / thr_eq, on a contended cluster: dozens
    # of caps bind before the capacity does, found with a handful of LPs, not one per cap.
    rng = np.random.default_rng(3)
    problem = ThroughputProblem.from_arrays(rng.uniform(0.2, 5.0, (400, 3)),
                                            rng.choice([1, 2, 4], 400, p=[0.8, 0.1, 0.1]),
                                            capacity=[120, 120, 120])
    outcome = water_filling(problem)
    assert outcome.details["levels"] > 100
    assert outcome.details["solves"] <= 8
    highs = water_filling(problem, solver="highs")
    assert_same_levels(job_levels(outcome), job_levels(highs))


def test_identical_jobs_share_one_level_despite_degenerate_duals():
    problem = ThroughputProblem.from_arrays(np.tile([[1.0, 3.0]], (30, 1)), capacity=[4, 4])
    for how in SOLVERS:
        outcome = water_filling(problem, **how)
        np.testing.assert_allclose(job_levels(outcome), job_levels(outcome)[0], rtol=1e-7)
        assert outcome.details["levels"] == 1


def test_no_jobs():
    problem = ThroughputProblem.from_arrays(np.zeros((0, 2)), capacity=[1, 1])
    assert water_filling(problem).details["levels"] == 0
    assert hierarchical_water_filling(problem).allocation.shape == (0, 2)


# ------------------------------------------------------------------ hierarchical

@pytest.mark.parametrize("seed", range(40))
def test_hierarchical_matches_gavels_reweighted_lp_sequence(seed):
    problem, agnostic = random_problem(seed, users=True)
    names = ([problem.user_names[u] for u in problem.user] if problem.user is not None
             else [None] * problem.num_jobs)
    reference = reference_hierarchical(problem, names, {"u1": 2.0, "u2": 0.5}, agnostic)
    outcome = hierarchical_water_filling(problem, agnostic=agnostic)
    assert outcome.status is Status.OPTIMAL
    assert_same_levels(job_levels(outcome), reference.levels)
    assert outcome.objective == pytest.approx(reference.first_level, rel=1e-6)
    ref.assert_base_constraints(problem, outcome.allocation, tol=1e-9)


def one_type(scale_factors, weights, capacity, users, user_weight):
    """One GPU type, throughput 1: a job's level s T X / thr_eq is its GPUs in use."""
    M = len(scale_factors)
    return ThroughputProblem.from_arrays(np.ones((M, 1)), scale_factors, weights, [capacity],
                                         user=users, user_weight=user_weight)


def test_hierarchical_closed_form_two_users_of_different_weights():
    # 1 GPU. alice (weight 2): a1. bob (weight 1): b1 (job weight 3), b2 (job weight 1).
    # Rates 2, 3/4, 1/4: 3 C = 1, so alice holds 2/3, bob 1/3 split 3:1.
    problem = one_type([1, 1, 1], [1, 3, 1], 1, ["alice", "bob", "bob"],
                       {"alice": 2, "bob": 1})
    outcome = hierarchical_water_filling(problem)
    np.testing.assert_allclose(job_levels(outcome), [2 / 3, 1 / 4, 1 / 12], rtol=1e-7)
    assert outcome.objective == pytest.approx(1 / 3, rel=1e-7)
    assert outcome.details["user_shares"] == pytest.approx({"alice": 1 / 3, "bob": 1 / 3})
    # plain water filling by job weight instead: levels X / w equal, X = (1, 3, 1) / 5
    np.testing.assert_allclose(water_filling(problem).allocation[:, 0], [0.2, 0.6, 0.2],
                               rtol=1e-7)


def test_hierarchical_cap_then_the_other_user_takes_the_rest():
    # 2 GPUs, alice weight 4: a1 (rate 4) tops out (X = 1) at C = 1/4; bob's b1, b2 (rates
    # 3/4, 1/4) then share the last GPU 3:1 (C = 1).
    problem = one_type([1, 1, 1], [1, 3, 1], 2, ["alice", "bob", "bob"],
                       {"alice": 4, "bob": 1})
    outcome = hierarchical_water_filling(problem)
    np.testing.assert_allclose(outcome.allocation[:, 0], [1, 0.75, 0.25], rtol=1e-7)
    assert outcome.details["levels"] == 2
    # plain water filling: b1 (weight 3) tops out at L = 1/3, a1 and b2 split the rest
    np.testing.assert_allclose(water_filling(problem).allocation[:, 0], [0.5, 1, 0.5],
                               rtol=1e-7)


def test_hierarchical_frozen_jobs_weight_passes_to_its_siblings():
    # 6 GPUs; level = GPUs used. alice: a1 (s 4). bob: b1 (s 1), b2 (s 4), rates 1, 1/2, 1/2.
    # b1 tops out (1 GPU) at C = 2; then b2 rises at bob's whole rate 1: a1 = C, b2 = C - 1,
    # 2 C = 6: a1 holds 3 GPUs, b2 2, b1 1. The first water level (objective) is 2.
    problem = one_type([4, 1, 4], [1, 1, 1], 6, ["alice", "bob", "bob"], {})
    outcome = hierarchical_water_filling(problem)
    np.testing.assert_allclose(job_levels(outcome), [3, 1, 2], rtol=1e-7)
    assert outcome.objective == pytest.approx(2, rel=1e-7)


@pytest.mark.parametrize("seed", range(0, 40, 4))
def test_hierarchical_is_plain_water_filling_when_every_job_is_its_own_user(seed):
    problem, agnostic = random_problem(seed)
    unit = ThroughputProblem.from_arrays(problem.throughput, problem.scale_factor,
                                         capacity=problem.capacity,
                                         user=[f"u{m}" for m in range(problem.num_jobs)])
    assert_same_levels(job_levels(hierarchical_water_filling(unit, agnostic=agnostic)),
                       job_levels(water_filling(unit, agnostic=agnostic)))
    # no users at all: each job a user of its own weighing its job weight (seed's weights)
    hierarchical = hierarchical_water_filling(problem, agnostic=agnostic)
    flat = water_filling(problem, agnostic=agnostic)
    a = coefficients(problem, agnostic)
    np.testing.assert_allclose(np.einsum("mj,mj->m", a, hierarchical.allocation),
                               job_levels(flat), rtol=1e-6, atol=1e-9)


def test_hierarchical_batches_caps_and_sibling_rate_changes():
    # 300 jobs of 12 users: hundreds of jobs top out (each one speeding up its siblings), in
    # a handful of LPs, not one stage per event.
    rng = np.random.default_rng(4)
    M = 300
    problem = ThroughputProblem.from_arrays(
        rng.uniform(0.2, 5.0, (M, 3)), rng.choice([1, 2, 4], M, p=[0.8, 0.1, 0.1]),
        rng.choice([1.0, 2.0], M), [90, 90, 90], user=[f"u{k}" for k in rng.integers(0, 12, M)],
        user_weight={f"u{k}": float(k % 3 + 1) for k in range(12)})
    outcome = hierarchical_water_filling(problem)
    assert outcome.details["levels"] > 50
    assert outcome.details["solves"] <= 8
    ref.assert_base_constraints(problem, outcome.allocation, tol=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_hierarchical_by_decomposition_equals_whole_lps_per_stage(seed):
    """Hierarchical stages carry per-job offsets (some negative); the decomposition takes them."""
    problem, agnostic = random_problem(seed, users=True)
    ours = hierarchical_water_filling(problem, agnostic=agnostic)
    lps = hierarchical_water_filling(problem, solver="highs", agnostic=agnostic)
    assert ours.solver == "decomposition"
    assert_same_levels(np.array(list(ours.details["job_levels"].values())),
                       np.array(list(lps.details["job_levels"].values())))


# ------------------------------------------------------------------ instance, policies, CLI

def document(users: dict | None = None) -> dict:
    doc = {"format": "schedopt-instance/1", "cluster": {"gpu_types": {"g": {"count": 1}}},
           "jobs": [{"id": "a1", "user": "alice", "throughput": {"g": 1.0}},
                    {"id": "b1", "user": "bob", "weight": 3, "throughput": {"g": 1.0}},
                    {"id": "b2", "user": "bob", "throughput": {"g": 1.0}},
                    {"id": "solo", "weight": 2, "throughput": {"g": 1.0}}]}
    if users is not None:
        doc["users"] = users
    return doc


def test_instance_users_give_user_weights_default_one_unused_names_allowed():
    instance = parse_instance(document({"alice": {"weight": 2}, "bob": {}, "carol": {"weight": 5}}))
    assert dict(instance.users) == {"alice": 2.0, "bob": 1.0, "carol": 5.0}
    problem = ThroughputProblem.from_instance(instance)
    names = [problem.user_names[u] for u in problem.user]
    assert names == ["alice", "bob", "bob", None]
    np.testing.assert_allclose(problem.user_weight[problem.user], [2, 1, 1, 2])
    # rates: alice 2, b1 3/4, b2 1/4, solo (its own user, its weight) 2: 5 C = 1
    outcome = hierarchical_water_filling(problem)
    np.testing.assert_allclose(job_levels(outcome), [0.4, 0.15, 0.05, 0.4], rtol=1e-7)
    assert ThroughputProblem.from_instance(parse_instance(document())).user_weight.tolist() \
        == [1.0, 1.0, 2.0]


def test_instance_user_weight_must_be_positive():
    with pytest.raises(InstanceError, match="users.bob.weight: expected a finite number > 0, got 0"):
        parse_instance(document({"bob": {"weight": 0}}), "x.json")


@pytest.mark.parametrize("policy", ["water_filling", "water_filling_agnostic",
                                    "hierarchical_water_filling",
                                    "hierarchical_water_filling_agnostic",
                                    "gavel:max_min_fairness_water_filling",
                                    "gavel:max_min_fairness_water_filling_perf"])
def test_policies_solve_the_bundled_instance(policy):
    instance = load_instance("instances/small-heterogeneous.yaml")
    result = solve(instance, policy=policy)
    assert result.status is Status.OPTIMAL
    problem = ThroughputProblem.from_instance(instance)
    ref.assert_base_constraints(problem, result.X, tol=1e-9)
    assert set(result.details["job_levels"]) == set(instance.job_ids)
    assert result.objective == pytest.approx(result.bound, rel=1e-6)


def test_hierarchical_runs_under_pop_with_users_split_across_parts():
    instance = load_instance("instances/small-heterogeneous.yaml")
    result = solve(instance, policy="hierarchical_water_filling", partitions=2)
    assert result.status.has_solution
    ref.assert_base_constraints(ThroughputProblem.from_instance(instance), result.X, tol=1e-9)


def test_cli_json_has_every_jobs_level():
    run = CliRunner().invoke(main, ["solve", "instances/small-heterogeneous.yaml", "--policy",
                                   "water_filling", "--json"])
    assert run.exit_code == 0, run.output
    doc = json.loads(run.output)
    assert doc["policy"] == "water_filling" and doc["status"] == "optimal"
    assert set(doc["job_levels"]) == set(doc["allocation"])
    assert min(doc["job_levels"].values()) == pytest.approx(doc["objective"], rel=1e-12)
    assert doc["levels"] >= 1 and doc["solves"] >= 1
