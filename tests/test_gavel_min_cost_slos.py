"""min_cost with deadlines as SLOs: met when possible, reported (never dropped) when not."""

from __future__ import annotations

import json

import numpy as np
import pytest

from schedopt.api import solve
from schedopt.backends import Status
from schedopt.errors import PolicyError
from schedopt.core.problem import ThroughputProblem


def problem(T, c, cost, R, ttd, **kw):
    return ThroughputProblem.from_arrays(np.asarray(T, dtype=float), capacity=c, cost_per_hour=cost,
                                         remaining_steps=R, time_to_deadline=ttd, **kw)


def test_feasible_slo_is_met_and_shifts_the_cost_optimum():
    # one GPU; without SLOs a (10 steps/s) takes it all: objective 10.
    # b's deadline needs 100 steps in 200 s = 0.5 steps/s = half the GPU: objective 10*0.5 + 0.5
    p = problem([[10.0], [1.0]], [1], [1.0], R=[1e6, 100.0], ttd=[np.nan, 200.0], job_ids=["a", "b"])
    assert solve(p, policy="min_cost", slos=False).objective == pytest.approx(10.0, rel=1e-6)
    result = solve(p, policy="min_cost")
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(5.5, rel=1e-6)
    assert result.effective_throughput["b"] == pytest.approx(0.5, rel=1e-6)
    assert "infeasible_slos" not in result.details


def test_slo_beyond_the_best_throughput_is_reported_with_its_shortfall():
    # a needs 1000 steps in 100 s = 10 steps/s; its best is 4 (g1) -> short by 6 steps/s.
    # b needs 100 steps in 1000 s = 0.1 steps/s and can get it on g0.
    p = problem([[2.0, 4.0], [1.0, 1.0]], [1, 1], [1.0, 1.0], R=[1000.0, 100.0],
                ttd=[100.0, 1000.0], job_ids=["a", "b"])
    result = solve(p, policy="min_cost")
    assert result.status is Status.INFEASIBLE
    assert result.details["infeasible_slos"] == ["a"]
    assert result.details["slo_shortfall"] == {"a": pytest.approx(6.0, rel=1e-6)}
    thr = result.effective_throughput
    assert thr["a"] == pytest.approx(4.0, rel=1e-6)    # as close as it can get
    assert thr["b"] >= 0.1 * (1 - 1e-9)                # the feasible SLO is still met
    json.dumps(result.to_dict(), allow_nan=False)


def test_jointly_infeasible_slos_report_the_total_shortfall():
    # one GPU, two jobs each needing 0.6 of it: 0.2 steps/s must be missed in total
    p = problem([[1.0], [1.0]], [1], [1.0], R=[60.0, 60.0], ttd=[100.0, 100.0])
    result = solve(p, policy="min_cost")
    assert result.status is Status.INFEASIBLE
    shortfall = result.details["slo_shortfall"]
    assert set(result.details["infeasible_slos"]) == set(shortfall) and shortfall
    assert sum(shortfall.values()) == pytest.approx(0.2, rel=1e-6)
    thr = result.effective_throughput.to_numpy()
    np.testing.assert_allclose(0.6 - thr, [shortfall.get(j, 0.0) for j in p.job_ids], atol=1e-6)


@pytest.mark.parametrize("ttd", [0.0, -50.0])
def test_deadline_already_passed_is_reported_with_no_shortfall(ttd):
    # c's deadline has passed: reported with shortfall None; b's SLO is feasible and met
    p = problem([[1.0, 2.0], [3.0, 1.0], [1.0, 1.0]], [1, 1], [1.0, 2.0], R=[1e4, 100.0, 500.0],
                ttd=[np.nan, 1000.0, ttd], job_ids=["a", "b", "c"])
    result = solve(p, policy="min_cost")
    assert result.status is Status.INFEASIBLE
    assert result.details["infeasible_slos"] == ["c"]
    assert result.details["slo_shortfall"] == {"c": None}
    assert result.effective_throughput["b"] >= 0.1 * (1 - 1e-9)
    doc = result.to_dict()
    assert json.loads(json.dumps(doc, allow_nan=False))["slo_shortfall"] == {"c": None}


def test_only_job_with_a_passed_deadline():
    p = problem([[1.0]], [1], [1.0], R=[10.0], ttd=[-1.0], job_ids=["late"])
    result = solve(p, policy="min_cost")
    assert result.status is Status.INFEASIBLE
    assert result.details["slo_shortfall"] == {"late": None}


def test_finished_job_with_a_deadline_has_no_slo():
    p = problem([[1.0], [2.0]], [1], [1.0], R=[0.0, 10.0], ttd=[-5.0, np.nan])
    result = solve(p, policy="min_cost")
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(2.0, rel=1e-6)


def test_slos_false_ignores_unmeetable_deadlines():
    p = problem([[2.0, 4.0]], [1, 1], [1.0, 1.0], R=[1000.0], ttd=[100.0])
    result = solve(p, policy="min_cost", slos=False)
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(4.0, rel=1e-6)


def cost_objective(p, X):
    return float(np.sum(p.throughput * X / p.cost_per_hour[None, :]))


def test_passed_deadline_does_not_idle_the_rest_of_the_cluster():
    # c's deadline has passed (reported). a (no deadline) and b (feasible SLO) should still get
    # the cost optimum without c's SLO: b on g0 (3 steps/s / $1), a on g1 (2 / $2) -> 4.0.
    # schedopt returns only a min-shortfall point: b gets 0.1 of g1 and both GPUs idle otherwise.
    kw = dict(capacity=[1, 1], cost_per_hour=[1.0, 2.0], remaining_steps=[1e4, 100.0, 500.0],
              job_ids=["a", "b", "c"])
    T = [[1.0, 2.0], [3.0, 1.0], [1.0, 1.0]]
    without_c = solve(ThroughputProblem.from_arrays(T, time_to_deadline=[np.nan, 1000.0, np.nan], **kw),
                      policy="min_cost")
    assert without_c.objective == pytest.approx(4.0, rel=1e-6)
    p = ThroughputProblem.from_arrays(T, time_to_deadline=[np.nan, 1000.0, -5.0], **kw)
    result = solve(p, policy="min_cost")
    assert result.details["slo_shortfall"] == {"c": None}
    assert cost_objective(p, result.X) == pytest.approx(4.0, rel=1e-6), result.X.tolist()


def test_unmeetable_slo_does_not_idle_the_rest_of_the_cluster():
    # b needs 1000 steps in 100 s = 10 steps/s, its best is 3 (g0): it takes all of g0 and is
    # 7 steps/s short. g1 should still go to a (2 steps/s / $2): objective 3/1 + 2/2 = 4.0.
    p = ThroughputProblem.from_arrays([[1.0, 2.0], [3.0, 1.0]], capacity=[1, 1],
                                      cost_per_hour=[1.0, 2.0], remaining_steps=[1e4, 1000.0],
                                      time_to_deadline=[np.nan, 100.0], job_ids=["a", "b"])
    result = solve(p, policy="min_cost")
    assert result.status is Status.INFEASIBLE
    assert result.details["slo_shortfall"] == {"b": pytest.approx(7.0, rel=1e-6)}
    assert cost_objective(p, result.X) == pytest.approx(4.0, rel=1e-6), result.X.tolist()


@pytest.mark.parametrize("T,s,c", [([[0.0, 0.0], [1.0, 2.0]], [1, 1], [1, 1]),     # no progress anywhere
                                   ([[1.0, 5.0], [1.0, 2.0]], [4, 1], [2, 2])])   # fits on no type
def test_slo_of_a_job_that_can_run_nowhere_is_reported(T, s, c):
    # 'stuck' has a deadline needing 0.1 steps/s but can run on no type. Either a PolicyError
    # naming it (as max_min_fairness / min_makespan do) or an infeasible SLO with shortfall 0.1
    # is acceptable; status "error" with no allocation and no explanation is not.
    p = ThroughputProblem.from_arrays(T, scale_factor=s, capacity=c, cost_per_hour=[1.0, 1.0],
                                      remaining_steps=[100.0, 100.0], time_to_deadline=[1000.0, 1000.0],
                                      job_ids=["stuck", "ok"])
    try:
        result = solve(p, policy="min_cost")
    except PolicyError as exc:
        assert "stuck" in str(exc)
        return
    assert result.status is Status.INFEASIBLE, (result.status, result.details)
    assert result.details["slo_shortfall"] == {"stuck": pytest.approx(0.1, rel=1e-6)}
    assert result.effective_throughput["ok"] >= 0.1 * (1 - 1e-9)
