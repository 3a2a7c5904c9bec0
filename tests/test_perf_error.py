"""Misestimated throughputs: `perf_error` perturbs only the matrix the policy sees, and
robust max-min fairness guarantees its level for every throughput matrix in the stated box."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from schedopt.errors import PolicyError, SchedoptError
from schedopt.policies.gavel import lp as gavel
from schedopt.policies.gavel import robust
from schedopt.core.problem import ThroughputProblem
from schedopt.instance import load_instance, parse_instance
from schedopt.simulation import SimulationConfig, simulate
from schedopt.simulation.common import TraceArrays, lognormal_sigma, misestimate

ROOT = Path(__file__).resolve().parents[1]
SMALL = load_instance(ROOT / "instances" / "small-heterogeneous.yaml")


# ---------------------------------------------------------------- the error model

@pytest.mark.parametrize("error", [0.05, 0.1, 0.25, 0.5])
def test_misestimated_matrix_has_the_stated_mean_relative_error(error):
    T = np.random.default_rng(3).uniform(0.1, 10.0, (400, 50))
    seen = misestimate(T, error, seed=7)
    relative = np.abs(seen / T - 1.0)
    # 20,000 draws: the sample mean is within 3% (relative) of the stated error
    assert relative.mean() == pytest.approx(error, rel=0.03)
    assert np.all(seen > 0)
    # E|exp(sigma Z) - 1| = exp(sigma^2 / 2) erf(sigma / sqrt 2) at the sigma chosen
    z = np.random.default_rng(0).standard_normal(2_000_000)
    assert np.abs(np.exp(lognormal_sigma(error) * z) - 1).mean() == pytest.approx(error, rel=5e-3)


def test_misestimate_is_seeded_keeps_zeros_and_is_the_identity_at_zero_error():
    T = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 4.0]])
    assert misestimate(T, 0.0, seed=1) is T
    a, b, c = misestimate(T, 0.2, 1), misestimate(T, 0.2, 1), misestimate(T, 0.2, 2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    np.testing.assert_array_equal(a == 0, T == 0)


def test_the_policy_sees_the_misestimated_matrix_and_the_simulator_keeps_the_true_one():
    data = TraceArrays(SMALL, perf_error=0.3, seed=4)
    truth = TraceArrays(SMALL)
    np.testing.assert_array_equal(data.T, truth.T)
    active = np.arange(len(SMALL.jobs))
    problem = data.problem(active, np.array([4.0, 4.0, 4.0])[: data.T.shape[1]], 0.0,
                           np.zeros(len(active)), np.ones(len(active)))
    np.testing.assert_array_equal(problem.throughput, data.seen)
    assert not np.allclose(data.seen, data.T)


@pytest.mark.parametrize("config", [SimulationConfig(), SimulationConfig.gavel_compatible()],
                         ids=lambda c: c.mode)
def test_zero_error_gives_exactly_the_unperturbed_results(config):
    import dataclasses

    plain = simulate(SMALL, "max_min_fairness", config)
    zero = simulate(SMALL, "max_min_fairness", dataclasses.replace(config, perf_error=0.0))
    np.testing.assert_array_equal(plain.jobs["completion_s"], zero.jobs["completion_s"])
    assert plain.summary["average_jct_s"] == zero.summary["average_jct_s"]


@pytest.mark.parametrize("mode", ["default", "gavel"])
def test_jobs_progress_at_their_true_throughput_whatever_the_error(mode):
    doc = {"format": "schedopt-instance/1",
           "cluster": {"gpu_types": {"g": {"count": 1}}},
           "jobs": [{"id": "a", "type": "m", "total_steps": 7200}],
           "performance": {"throughput": {"m": {"g": 2.0}}}}
    trace = parse_instance(doc)
    for error in (0.0, 0.1, 0.5):
        config = SimulationConfig(mode=mode, perf_error=error, seed=11)
        result = simulate(trace, "max_min_fairness", config)
        assert result.jobs.loc["a", "jct_s"] == pytest.approx(7200 / 2.0, rel=1e-12)


def test_error_changes_the_decisions_but_every_job_still_gets_exactly_its_steps():
    plain = simulate(SMALL, "max_min_fairness")
    noisy = simulate(SMALL, "max_min_fairness", SimulationConfig(perf_error=0.5, seed=2))
    np.testing.assert_allclose(noisy.jobs["steps_done"], noisy.jobs["total_steps"], rtol=1e-9)
    assert not np.allclose(plain.jobs["completion_s"], noisy.jobs["completion_s"])


def test_perf_error_out_of_range_is_refused():
    with pytest.raises(SchedoptError, match="perf_error"):
        SimulationConfig(perf_error=1.5)


# ---------------------------------------------------------------- robust max-min fairness

def random_problem(rng, M=6, J=3) -> ThroughputProblem:
    T = rng.uniform(0.2, 5.0, (M, J))
    T[rng.random((M, J)) < 0.25] = 0.0
    T[:, 0] = np.maximum(T[:, 0], 0.1)  # every job runs somewhere
    return ThroughputProblem.from_arrays(T, rng.integers(1, 3, M), rng.uniform(0.5, 2.0, M),
                                         rng.integers(2, 6, J).astype(float))


def realized(problem: ThroughputProblem, true_T: np.ndarray, X: np.ndarray) -> np.ndarray:
    """(..., M) each job's normalized throughput s_m thr_m / (w_m thr^eq_m) when the true
    matrix is `true_T` (..., M, J): numerator and equal-share normalizer both at true_T."""
    q = problem.capacity / problem.capacity.sum()
    thr = np.einsum("...mj,mj->...m", true_T, X * problem.runnable)
    return problem.scale_factor * thr / (problem.weight * (true_T @ q))


def corner_levels(problem: ThroughputProblem, X: np.ndarray, r: float) -> np.ndarray:
    """(M,) worst case by enumerating the 2^J corners of each job's own box (jobs' boxes are
    independent, and a ratio of linear functions is smallest at a corner)."""
    M, J = X.shape
    worst = np.full(M, np.inf)
    for signs in itertools.product((-1.0, 1.0), repeat=J):
        worst = np.minimum(worst, realized(problem, problem.throughput * (1 + r * np.array(signs)), X))
    return worst


@pytest.mark.parametrize("seed", range(6))
def test_worst_case_levels_match_corner_enumeration(seed):
    rng = np.random.default_rng(seed)
    problem = random_problem(rng, M=8, J=4)
    X = gavel.max_min_fairness(problem).allocation * rng.uniform(0.2, 1.0, (8, 4))
    for r in (0.0, 0.1, 0.3):
        np.testing.assert_allclose(robust.worst_case_levels(problem, X, r),
                                   corner_levels(problem, X, r), rtol=1e-12)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("r", [0.05, 0.2, 0.4])
def test_robust_guarantee_holds_for_every_sampled_matrix_and_beats_nominal_worst_case(seed, r):
    rng = np.random.default_rng(100 + seed)
    problem = random_problem(rng)
    robust = gavel.max_min_fairness(problem, robust=r)
    nominal = gavel.max_min_fairness(problem)
    guaranteed = robust.details["guaranteed_level"]
    assert robust.objective == guaranteed
    assert guaranteed == pytest.approx(robust.bound, rel=1e-6)  # the LP's own optimum
    # the guarantee holds for throughputs sampled in the box (and at its corners)
    samples = problem.throughput * rng.uniform(1 - r, 1 + r, (2000,) + problem.throughput.shape)
    corners = problem.throughput * (1 + r * rng.choice([-1.0, 1.0], samples.shape))
    levels = realized(problem, np.concatenate([samples, corners]), robust.allocation)
    assert levels.min() >= guaranteed - 1e-9
    assert levels.min() <= guaranteed * (1 + 0.05)  # the corners come close to it
    # the robust allocation is never worse in the worst case than the nominal one
    nominal_worst = corner_levels(problem, nominal.allocation, r).min()
    assert nominal_worst <= guaranteed + 1e-7
    # and it pays at most the box at the nominal matrix: level >= guarantee
    assert robust.details["nominal_level"] >= guaranteed - 1e-9
    assert robust.details["nominal_level"] <= nominal.objective * (1 + 1e-6)


def test_robust_zero_width_box_is_the_nominal_policy():
    problem = random_problem(np.random.default_rng(5))
    nominal = gavel.max_min_fairness(problem)
    tiny = gavel.max_min_fairness(problem, robust=1e-12)
    assert tiny.objective == pytest.approx(nominal.objective, rel=1e-6)


def test_robust_option_is_validated():
    problem = random_problem(np.random.default_rng(5))
    with pytest.raises(PolicyError, match="box"):
        gavel.max_min_fairness(problem, robust=1.2)
    with pytest.raises(PolicyError, match="agnostic"):
        gavel.max_min_fairness(problem, agnostic=True, robust=0.1)


def test_robust_option_runs_in_the_simulator_and_through_the_cli(tmp_path):
    from click.testing import CliRunner

    from schedopt.cli.main import main

    config = SimulationConfig(perf_error=0.2, policy_options={"robust": 0.2})
    result = simulate(SMALL, "max_min_fairness", config)
    assert result.jobs["completion_s"].notna().all()
    out = CliRunner().invoke(main, ["simulate", str(ROOT / "instances" / "small-heterogeneous.yaml"),
                                    "--perf-error", "0.2", "-o", "robust=0.2", "--json"])
    assert out.exit_code == 0, out.output
    import json

    summary = json.loads(out.output)["summary"]
    assert summary["average_jct_s"] == pytest.approx(result.summary["average_jct_s"], rel=1e-9)
