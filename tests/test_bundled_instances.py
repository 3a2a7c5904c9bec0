"""Every LP policy on the bundled instances, checked by an independent route: the hand-worked
optimum of tiny.json, and the cvxpy reference (tests/gavel_reference.py) on the others."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gavel_reference as ref
from schedopt.api import solve
from schedopt.core.problem import ThroughputProblem
from schedopt.instance import load_instance

INSTANCES = Path(__file__).resolve().parents[1] / "instances"


def problem_of(name: str) -> ThroughputProblem:
    return ThroughputProblem.from_instance(load_instance(INSTANCES / name))


def test_tiny_max_min_optimum_is_the_hand_computed_five_quarters():
    result = solve(problem_of("tiny.json"), "max_min_fairness")
    assert result.objective == pytest.approx(5 / 4, rel=1e-7)
    # instances/README.md: the optimum is unique, every job at 5/4 and both types full
    np.testing.assert_allclose(result.X, [[3 / 4, 1 / 4], [7 / 8, 1 / 8], [3 / 16, 13 / 16]], atol=1e-6)


def test_tiny_agnostic_max_min_optimum_is_one():
    assert solve(problem_of("tiny.json"), "max_min_fairness_agnostic").objective == pytest.approx(1.0, rel=1e-7)


REFERENCES = {
    "max_min_fairness": lambda p: ref.max_min_fairness(p),
    "max_min_fairness_agnostic": lambda p: ref.max_min_fairness(p, agnostic=True),
    "min_makespan": lambda p: ref.min_makespan(p),
    "finish_time_fairness": lambda p: ref.finish_time_fairness(p),
    "max_total_throughput": lambda p: ref.max_total_throughput(p),
    "min_cost": lambda p: ref.min_cost(p, slos=False),
}


@pytest.mark.parametrize("name", ["tiny.json", "small-heterogeneous.yaml", "colocation.json"])
@pytest.mark.parametrize("policy", sorted(REFERENCES))
def test_bundled_instance_matches_the_cvxpy_reference(name, policy):
    p = problem_of(name)
    options = {"slos": False} if policy == "min_cost" else {}
    result = solve(p, policy, **options)
    expected = REFERENCES[policy](p).value
    tolerance = 1e-3 if policy == "finish_time_fairness" else 1e-4
    assert result.status.value == "optimal"
    assert ref.rel_diff(result.objective, expected) <= tolerance, (result.objective, expected)
    ref.assert_base_constraints(p, result.X)


def test_small_heterogeneous_min_cost_meets_every_deadline_it_can():
    p = problem_of("small-heterogeneous.yaml")
    result = solve(p, "min_cost")
    need = ref.slo_need(p)
    has = np.isfinite(need)
    thr = (p.throughput * result.X).sum(axis=1)
    if result.status.value == "optimal":
        assert np.all(thr[has] >= need[has] * (1 - 1e-6))
        assert result.objective == pytest.approx(ref.min_cost(p).value, rel=1e-4)
    else:
        assert result.status.value == "infeasible" and result.details["infeasible_slos"]


def test_large_instance_max_min_matches_the_reference_and_fits_the_cluster():
    p = problem_of("large-2000.json")
    result = solve(p, "max_min_fairness")
    assert result.objective == pytest.approx(ref.max_min_fairness(p).value, rel=1e-6)
    ref.assert_base_constraints(p, result.X)
