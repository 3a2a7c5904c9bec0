"""The round mechanism: placements are physically valid, and received time converges to X."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedopt.api import solve
from schedopt.core.problem import ThroughputProblem
from schedopt.mechanism.rounds import mechanism_error, place_round, priorities, run_rounds
from schedopt.mechanism.topology import Topology

TOPOLOGY = Topology.uniform({"v100": 16, "p100": 16, "k80": 16}, {"v100": 4, "p100": 4, "k80": 8})


def assert_valid(placement, scale_factor, topology):
    used = [g for gpus in placement.gpus.values() for g in gpus]
    assert len(used) == len(set(used)), "a GPU holds two jobs"
    for m, gpus in placement.gpus.items():
        assert len(gpus) == scale_factor[m], "a job got a number of GPUs other than its scale factor"
        assert set(topology.gpu_type[list(gpus)]) == {placement.gpu_type[m]}, "a job spans GPU types"
        assert placement.nodes_spanned[m] == len(set(topology.gpu_node[list(gpus)]))
    per_node = np.bincount(topology.gpu_node[used], minlength=len(topology.node_ids)) if used else 0
    assert np.all(per_node <= np.bincount(topology.gpu_node)), "a node is over-filled"


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 60), rounds=st.integers(1, 15))
def test_placements_never_double_book_a_gpu_or_split_a_job(seed, jobs, rounds):
    rng = np.random.default_rng(seed)
    X = rng.dirichlet(np.ones(4), size=jobs)[:, :3] * rng.uniform(0, 1, (jobs, 1))
    scale = rng.choice([1, 2, 4, 8], jobs)
    for _, placement, _ in run_rounds(X, scale, TOPOLOGY, rounds, work_conserving=True):
        assert_valid(placement, scale, TOPOLOGY)


def test_a_multi_gpu_job_is_consolidated_on_one_node_when_one_has_room():
    topology = Topology.uniform({"v100": 8}, {"v100": 4})
    placement = place_round(np.array([[1.0], [1.0]]), np.array([1, 4]), topology,
                            np.zeros((2, 1)), 0.0)
    assert placement.nodes_spanned == {0: 1, 1: 1}
    assert set(topology.gpu_node[list(placement.gpus[1])]) != set(topology.gpu_node[list(placement.gpus[0])])


def test_a_job_keeps_its_gpus_across_rounds_when_it_runs_again():
    topology = Topology.uniform({"v100": 8}, {"v100": 4})
    X = np.array([[0.5], [0.5], [0.5]])
    first = place_round(X, np.array([2, 2, 4]), topology, np.zeros((3, 1)), 0.0)
    again = place_round(X, np.array([2, 2, 4]), topology, np.full((3, 1), 100.0), 360.0,
                        previous=first.gpus)
    for m in set(first.gpus) & set(again.gpus):
        assert again.gpus[m] == first.gpus[m]


def test_priorities_follow_gavels_formula():
    X = np.array([[0.5, 0.0], [0.25, 0.25]])
    received = np.array([[100.0, 0.0], [0.0, 50.0]])
    P = priorities(X, received, 400.0)
    np.testing.assert_allclose(P, [[0.5 / 0.25, 0.0], [0.25 * 1e9, 0.25 / 0.125]])


def test_mechanism_error_shrinks_with_rounds_and_is_below_two_percent_after_1000():
    rng = np.random.default_rng(0)
    M = 100
    problem = ThroughputProblem.from_arrays(rng.uniform(0.5, 5, (M, 3)), rng.choice([1, 1, 1, 2, 4], M),
                                            None, TOPOLOGY.capacity)
    X = solve(problem, "max_min_fairness").X
    errors = {}
    for r, placement, fraction in run_rounds(X, problem.scale_factor, TOPOLOGY, 1000):
        if r + 1 in (10, 100, 1000):
            errors[r + 1] = mechanism_error(X, fraction)
    assert errors[10] > errors[100] > errors[1000]
    assert errors[1000] < 0.02


def test_topology_from_an_instance_numbers_gpus_node_by_node():
    from schedopt.instance import parse_instance

    doc = {"format": "schedopt-instance/1", "jobs": [],
           "cluster": {"gpu_types": {"a": {"count": 6, "gpus_per_node": 4}, "b": {"count": 2}}}}
    topology = Topology.from_cluster(parse_instance(doc).cluster)
    assert topology.gpu_type.tolist() == [0, 0, 0, 0, 0, 0, 1, 1]
    assert topology.gpu_node.tolist() == [0, 0, 0, 0, 1, 1, 2, 2]
    assert topology.gpu_label(5) == "a-n1/1"
    np.testing.assert_array_equal(topology.capacity, [6, 2])
