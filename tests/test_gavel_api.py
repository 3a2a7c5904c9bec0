"""The policy registry (names and `gavel:` aliases) and the Python entry point `schedopt.api.solve`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import gavel_reference as ref
from schedopt.api import solve
from schedopt.backends import Status
from schedopt.errors import PolicyError
from schedopt.core.problem import ThroughputProblem
from schedopt.core.registry import registered, resolve
from schedopt.policies.catalog import GAVEL_ALIASES

# Every built-in policy that needs only the throughput matrix.
POLICIES = sorted(name for name, entry in registered().items()
                  if entry.builtin and entry.policy.instance_data is None)


def small_problem():
    return ThroughputProblem.from_arrays(
        [[1.0, 2.5, 0.0], [0.4, 0.9, 3.0], [2.0, 2.0, 2.0], [0.0, 7.0, 1.0]],
        scale_factor=[1, 2, 1, 4], weight=[1, 2, 1, 3], capacity=[2, 4, 3],
        job_ids=["alpha", "beta", "gamma", "delta"], gpu_types=["k80", "v100", "a100"],
        cost_per_hour=[0.9, 3.1, 4.0], remaining_steps=[1e4, 5e4, 2e5, 1e3],
        time_since_arrival=[100.0, 50.0, 0.0, 4000.0], time_to_deadline=[np.nan, 1e6, np.nan, 1e5])


EXPECTED_ALIASES = {
    "max_min_fairness": "max_min_fairness_agnostic",
    "max_min_fairness_perf": "max_min_fairness",
    "max_min_fairness_water_filling": "water_filling_agnostic",
    "max_min_fairness_water_filling_perf": "water_filling",
    "max_min_fairness_packed": "max_min_fairness_packed",
    "max_min_fairness_water_filling_packed": "water_filling_packed",
    "min_total_duration_packed": "min_makespan_packed",
    "fifo_packed": "fifo_packed",
    "finish_time_fairness_packed": "finish_time_fairness_packed",
    "max_sum_throughput_normalized_by_cost_packed_SLOs": "min_cost_packed",
    "min_total_duration": "min_makespan_agnostic",
    "min_total_duration_perf": "min_makespan",
    "finish_time_fairness": "finish_time_fairness_agnostic",
    "finish_time_fairness_perf": "finish_time_fairness",
    "max_sum_throughput_perf": "max_total_throughput",
    "max_sum_throughput_normalized_by_cost_perf": "min_cost",
    "max_sum_throughput_normalized_by_cost_perf_SLOs": "min_cost",
    "isolated": "isolated",
    "fifo": "fifo_agnostic",
    "fifo_perf": "fifo",
}


@pytest.mark.parametrize("gavel_name", sorted(  # the packed one needs an instance: test_packed
    name for name in GAVEL_ALIASES if resolve(f"gavel:{name}")[0].instance_data is None))
def test_every_gavel_alias_resolves_and_solves(gavel_name):
    policy, options = resolve(f"gavel:{gavel_name}")
    assert policy.name == EXPECTED_ALIASES[gavel_name]
    assert set(options) <= set(policy.option_names)
    p = small_problem()
    result = solve(p, policy=f"gavel:{gavel_name}")
    assert result.policy == policy.name
    assert result.status.has_solution
    if policy.name != "isolated":  # isolated's runnable-mask bug is tested in test_gavel_baselines
        ref.assert_base_constraints(p, result.X)
    direct = solve(p, policy=policy.name, **{k: v for k, v in options.items()
                                             if k not in policy.defaults})
    np.testing.assert_allclose(result.X, direct.X, atol=1e-6)


def test_gavel_aliases_cover_the_expected_names():
    assert set(GAVEL_ALIASES) == set(EXPECTED_ALIASES)
    assert resolve("gavel:max_sum_throughput_normalized_by_cost_perf")[1] == {"slos": False}
    assert resolve("gavel:max_sum_throughput_normalized_by_cost_perf_SLOs")[1] == {"slos": True}
    assert resolve("gavel:fifo")[1] == {"agnostic": True}
    assert resolve("gavel:max_sum_throughput_normalized_by_cost_packed_SLOs")[1] == {"slos": True}


def test_slos_alias_differs_from_plain_cost_alias_when_a_deadline_binds():
    # one GPU; b's deadline needs half of it, so the SLO variant gives up half of a's throughput
    p = ThroughputProblem.from_arrays([[10.0], [1.0]], capacity=[1], cost_per_hour=[1.0],
                                      remaining_steps=[1e6, 100.0], time_to_deadline=[np.nan, 200.0])
    plain = solve(p, policy="gavel:max_sum_throughput_normalized_by_cost_perf")
    slos = solve(p, policy="gavel:max_sum_throughput_normalized_by_cost_perf_SLOs")
    assert plain.objective == pytest.approx(10.0, rel=1e-6)
    assert slos.objective == pytest.approx(5.5, rel=1e-6)


@pytest.mark.parametrize("name", ["gavel:gandiva", "gavel:nope", "max_min",
                                  "", "gavel:"])
def test_unknown_policy_is_a_policy_error(name):
    with pytest.raises(PolicyError):
        resolve(name)
    with pytest.raises(PolicyError):
        solve(small_problem(), policy=name)


def test_unknown_option_is_a_policy_error_naming_it():
    with pytest.raises(PolicyError, match="warp_speed"):
        solve(small_problem(), policy="max_min_fairness", warp_speed=9)
    with pytest.raises(PolicyError, match="slos"):
        solve(small_problem(), policy="max_total_throughput", slos=False)


def test_missing_data_is_a_policy_error():
    no_steps = ThroughputProblem.from_arrays([[1.0]], capacity=[1])
    for policy in ["min_makespan", "finish_time_fairness"]:
        with pytest.raises(PolicyError, match="total_steps"):
            solve(no_steps, policy=policy)
    with pytest.raises(PolicyError, match="cost_per_hour"):
        solve(no_steps, policy="min_cost")
    stuck = ThroughputProblem.from_arrays([[1.0], [0.0]], capacity=[1], remaining_steps=[1.0, 1.0],
                                          job_ids=["ok", "stuck"])
    for policy in ["max_min_fairness", "min_makespan", "finish_time_fairness"]:
        with pytest.raises(PolicyError, match="stuck"):
            solve(stuck, policy=policy)


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_result_shapes_and_document(policy):
    p = small_problem()
    result = solve(p, policy=policy)
    alloc = result.allocation
    assert isinstance(alloc, pd.DataFrame)
    assert list(alloc.index) == list(p.job_ids)
    assert list(alloc.columns) == list(p.gpu_types)
    np.testing.assert_array_equal(alloc.to_numpy(), result.X)
    thr = result.effective_throughput
    assert list(thr.index) == list(p.job_ids)
    np.testing.assert_allclose(thr.to_numpy(), (p.throughput * alloc.to_numpy()).sum(axis=1),
                               rtol=1e-12)
    doc = result.to_dict()
    text = json.dumps(doc, allow_nan=False)
    back = json.loads(text)
    assert back["format"] == "schedopt-result/1"
    assert back["policy"] == policy
    assert back["status"] == result.status.value
    assert set(back["allocation"]) == set(p.job_ids)
    for job, row in back["allocation"].items():
        assert list(row) == list(p.gpu_types)
        assert row == pytest.approx(alloc.loc[job].to_dict())
    assert back["effective_throughput"] == pytest.approx(thr.to_dict())
    if result.objective is not None:
        assert back["objective"] == pytest.approx(result.objective)


def test_result_of_lp_policy_reports_optimal_with_bound_equal_to_objective():
    result = solve(small_problem(), policy="max_min_fairness")
    assert result.status is Status.OPTIMAL
    # bound is the LP's t, objective is recomputed from X: equal up to HiGHS' feasibility tolerance
    assert result.bound == pytest.approx(result.objective, rel=1e-6)
    assert result.gap == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("policy", ["max_min_fairness", "min_makespan", "water_filling",
                                    "hierarchical_water_filling"])
def test_method_auto_is_the_decomposition_without_a_solver_and_the_lp_with_one(policy):
    problem = small_problem()
    by_prices = solve(problem, policy=policy)
    explicit = solve(problem, policy=policy, method="decomposition")
    whole_lp = solve(problem, policy=policy, solver="clarabel")
    default_lp = solve(problem, policy=policy, method="lp")
    assert by_prices.solver == explicit.solver == "decomposition"
    assert whole_lp.solver == "clarabel" and default_lp.solver == "highs"
    for other in (explicit, whole_lp, default_lp):
        assert other.objective == pytest.approx(by_prices.objective, rel=1e-5)


def test_solver_decomposition_is_deprecated_and_means_method_decomposition():
    problem = small_problem()
    with pytest.warns(FutureWarning, match="method=decomposition"):
        old = solve(problem, policy="max_min_fairness", solver="decomposition")
    new = solve(problem, policy="max_min_fairness", method="decomposition")
    assert old.solver == "decomposition"
    np.testing.assert_array_equal(old.X, new.X)
    with pytest.raises(PolicyError, match="contradicts method=lp"):
        solve(problem, policy="max_min_fairness", solver="decomposition", method="lp")


def test_method_is_validated_and_the_agnostic_variant_is_the_same_class():
    with pytest.raises(PolicyError, match="option method expects one of"):
        solve(small_problem(), policy="max_min_fairness", method="simplex")
    plain, _ = resolve("max_min_fairness")
    agnostic, fixed = resolve("max_min_fairness_agnostic")
    assert type(plain) is type(agnostic) and agnostic.name == "max_min_fairness_agnostic"
    assert fixed == {"agnostic": True}
