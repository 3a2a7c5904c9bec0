"""--time-limit bounds the whole policy solve, not one LP: the decomposition, water filling
and finish-time fairness's bisection stop at it with their best allocation so far, a typed
termination (time_limit) and a bound that is still proven."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from click.testing import CliRunner

from schedopt import solve
from schedopt.cli.main import main
from schedopt.core.outcome import Termination
from schedopt.core.problem import ThroughputProblem

TYPES = ("v100", "p100", "k80")


def contended(jobs: int, seed: int = 0) -> ThroughputProblem:
    """Jobs drawn from a few hundred kinds, 0.3 GPU per job: the GPUs bind, so the
    decomposition needs several rounds (and water filling several stages)."""
    rng = np.random.default_rng(seed)
    kinds = rng.random((300, 3)) * [10.0, 5.0, 2.0] + 0.1
    T = kinds[rng.integers(0, 300, jobs)]
    scale = rng.choice([1.0, 2.0], size=jobs, p=[0.8, 0.2])
    gpus = np.full(3, max(jobs // 10, 4), dtype=float)
    problem = ThroughputProblem.from_arrays(
        T, scale, rng.choice([1.0, 2.0], size=jobs), gpus,
        remaining_steps=rng.integers(1_000, 100_000, jobs).astype(float),
        time_since_arrival=rng.uniform(0, 3600, jobs))
    return problem


def assert_feasible(problem: ThroughputProblem, X: np.ndarray) -> None:
    assert np.all(X >= -1e-9)
    assert np.all(X.sum(axis=1) <= 1 + 1e-7)
    assert np.all(problem.scale_factor @ X <= problem.capacity * (1 + 1e-7) + 1e-7)


@pytest.fixture(scope="module")
def problem():
    return contended(20_000)


@pytest.mark.parametrize("policy, options, jobs", [
    ("max_min_fairness", {}, 20_000),
    ("water_filling", {}, 20_000),
    ("water_filling", {"method": "lp", "solver": "highs"}, 1_000),
    ("hierarchical_water_filling", {}, 20_000),
])
def test_a_tiny_limit_gives_a_feasible_allocation_and_a_proven_bound(policy, options, jobs):
    problem = contended(jobs)
    exact = solve(problem, policy, **options)
    began = time.perf_counter()
    cut = solve(problem, policy, time_limit=1e-4, **options)
    elapsed = time.perf_counter() - began
    assert cut.termination is Termination.TIME_LIMIT
    assert cut.status.value == "feasible" and cut.to_dict()["termination"] == "time_limit"
    assert_feasible(problem, cut.X)
    assert cut.objective <= exact.objective + 1e-9
    if cut.bound is not None:
        assert cut.bound >= exact.objective * (1 - 1e-7)
    assert elapsed < max(5.0, 0.5 * exact.solve_seconds + 2.0)


def test_a_generous_limit_changes_nothing(problem):
    exact = solve(problem, "max_min_fairness")
    timed = solve(problem, "max_min_fairness", time_limit=600)
    assert timed.termination is Termination.OPTIMAL and "termination" not in timed.to_dict()
    np.testing.assert_array_equal(timed.X, exact.X)


def test_finish_time_fairness_stops_its_bisection_at_the_limit():
    small = contended(400, seed=1)
    exact = solve(small, "finish_time_fairness")
    cut = solve(small, "finish_time_fairness", time_limit=1e-4)
    assert cut.termination is Termination.TIME_LIMIT and cut.status.value == "feasible"
    assert_feasible(small, cut.X)
    assert exact.bound - 1e-9 <= exact.objective <= cut.objective + 1e-9  # minimizing rho
    assert cut.bound <= exact.objective + 1e-9
    assert cut.details["lp_solves"] < exact.details["lp_solves"]


def test_the_cli_reports_the_limit_and_exits_0(tmp_path, problem):
    doc = {"format": "schedopt-instance/1",
           "cluster": {"gpu_types": {t: {"count": int(c)} for t, c in zip(TYPES, problem.capacity)}},
           "jobs": [{"id": j, "throughput": dict(zip(TYPES, row.tolist())),
                     "scale_factor": int(s)}
                    for j, row, s in zip(problem.job_ids, problem.throughput,
                                         problem.scale_factor)]}
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(main, ["solve", str(path), "--time-limit", "0.0001", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["status"] == "feasible" and out["termination"] == "time_limit"
    assert out["bound"] is None or out["bound"] >= out["objective"]


def test_smd_search_stops_at_the_limit_with_a_placed_configuration():
    from schedopt.traces.parameter_server import parameter_server_instance

    # a mixed-regime instance: on the default drawing smd meets its bound before the search
    instance = parameter_server_instance(60, 12, seed=3, regime="mixed")
    full = solve(instance, "smd")
    cut = solve(instance, "smd", time_limit=1e-3)
    assert cut.status.has_solution and cut.details["placement"]
    assert cut.bound == pytest.approx(full.bound)  # the bounds do not depend on the limit
    assert cut.objective >= full.bound * (1 - 1e-9)
    assert cut.details["search"]["steps"] < full.details["search"]["steps"]


def test_allox_returns_the_greedy_schedule_when_the_limit_hits_before_the_matching():
    from pathlib import Path

    from schedopt.instance import load_instance
    from schedopt.policies.allox.matching import allox_assignment, greedy_counts

    instance = load_instance(Path(__file__).resolve().parents[1] / "instances" / "allox-40.json")
    exact = solve(instance, "allox")
    cut = solve(instance, "allox", time_limit=1e-9)
    assert exact.status.value == "optimal"
    assert cut.termination is Termination.TIME_LIMIT and cut.status.value == "feasible"
    assert cut.bound is None and cut.objective >= exact.objective - 1e-6
    scheduled = {job for queue in cut.details["queues"].values() for job in queue}
    assert scheduled == {job for queue in exact.details["queues"].values() for job in queue}

    rng = np.random.default_rng(0)
    P = rng.uniform(1.0, 50.0, (60, 7))
    P[rng.random(P.shape) < 0.2] = np.inf
    P[:, 0] = rng.uniform(1.0, 50.0, 60)  # every job can run somewhere
    machine, stats = allox_assignment(P, np.zeros(7), "scipy", deadline=0.0)
    assert stats.timed_out and stats.matchings == 0
    np.testing.assert_array_equal(machine, greedy_counts(P, np.zeros(7))[2])
    assert np.isfinite(P[np.arange(60), machine]).all()
