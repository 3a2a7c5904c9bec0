"""Throughputs learned online in the simulator: the packed policy starts from a prior with pair
rates hidden, jobs progress at their true rates, each measurement corrects the estimate
(worked out by hand on one GPU), a pair that cannot share is learned as such after one round,
the estimator's error falls with measurements, and the learned run's JCT stays close to the
run with the whole table on the bundled co-location trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedopt.errors import SchedoptError
from schedopt.instance import load_instance, parse_instance
from schedopt.perf import OnlineEstimator
from schedopt.simulation import SimulationConfig, simulate
from schedopt.simulation.learning import UNKNOWN_SHARE

ROOT = Path(__file__).resolve().parents[1]
COLOCATION = ROOT / "instances" / "colocation.json"
MODES = ["default", "gavel"]


def one_gpu(jobs: list[tuple[str, str, float]], pairs: list[tuple[str, str, list[float]]]):
    """One v100; every job 1 steps/s alone, arriving at 0."""
    labels = sorted({label for _, label, _ in jobs})
    return parse_instance({
        "format": "schedopt-instance/1",
        "cluster": {"gpu_types": {"v100": {"count": 1, "gpus_per_node": 1}}},
        "jobs": [{"id": i, "type": label, "total_steps": steps} for i, label, steps in jobs],
        "performance": {
            "throughput": {label: {"v100": 1.0} for label in labels},
            "colocated": [{"types": [a, b], "gpu_type": "v100", "throughput": rates}
                          for a, b, rates in pairs]},
    })


def config(mode: str, **changes) -> SimulationConfig:
    return SimulationConfig(mode=mode, round_seconds=100.0, **changes)


@pytest.mark.parametrize("mode", MODES)
def test_a_pair_guessed_from_isolated_rates_is_measured_and_jobs_run_at_the_truth(mode):
    # Nothing known about pairs: the prior guesses 0.6 steps/s each (UNKNOWN_SHARE of 1), which
    # beats time sharing's 0.5, so the policy pairs A and B. They really make 0.9 each. After
    # the first round the estimate is the truth. A: 900 / 0.9 = 1,000 s; B then has 900 of
    # 1,800 steps and runs alone at 1 steps/s: 1,900 s, as with the whole table known.
    trace = one_gpu([("A", "a", 900), ("B", "b", 1800)], [("a", "b", [0.9, 0.9])])
    learned = simulate(trace, "max_min_fairness_packed",
                       config(mode, learn_throughputs=True, hide_pairs=1.0))
    np.testing.assert_allclose(learned.jobs.loc[["A", "B"], "jct_s"], [1000.0, 1900.0])
    known = simulate(trace, "max_min_fairness_packed", config(mode))
    np.testing.assert_allclose(known.jobs["jct_s"], learned.jobs["jct_s"])
    history = learned.learning
    assert history["pair_mre"].iloc[0] == pytest.approx(abs(UNKNOWN_SHARE - 0.9) / 0.9)
    assert history["time_s"].iloc[1] == pytest.approx(100.0)  # re-solved after the measurement
    assert history["pair_mre"].iloc[1:].max() == pytest.approx(0.0, abs=1e-12)
    assert history["measured_cells"].iloc[-1] == 2  # a with b, and b with a


@pytest.mark.parametrize("mode", MODES)
def test_a_hidden_measured_zero_costs_one_round_and_is_never_paired_again(mode):
    # C1 and C2 cannot share ([0, 0]), but that is hidden: the prior's guess pairs them for
    # one round of 100 s in which neither makes a step. Then the estimate holds the 0 and the
    # GPU is time-shared as if the table had been known from the start, 100 s later.
    trace = one_gpu([("C1", "c", 300), ("C2", "c", 500)], [("c", "c", [0.0, 0.0])])
    learned = simulate(trace, "max_min_fairness_packed",
                       config(mode, learn_throughputs=True, hide_pairs=1.0))
    known = simulate(trace, "max_min_fairness_packed", config(mode))
    np.testing.assert_allclose(learned.jobs["jct_s"], known.jobs["jct_s"] + 100.0)
    assert learned.rounds["jobs_running"].iloc[0] == 2 and (learned.rounds["jobs_running"].iloc[1:] == 1).all()
    assert learned.learning["zeros_shared"].tolist()[:2] == [1, 0]
    assert learned.learning["zeros_shared"].iloc[-1] == 0


def test_the_estimators_error_falls_as_noisy_measurements_arrive():
    rng = np.random.default_rng(0)
    truth = 3.0
    errors = []
    for _ in range(200):  # 50 runs of 40 measurements with 20% noise, each folded in by EMA
        estimator = OnlineEstimator(["v100"], alpha=0.25)
        run = []
        for _ in range(40):
            estimate = estimator.update("a", "v100", truth * rng.lognormal(0.0, 0.2), partner="b")
            run.append(abs(estimate - truth) / truth)
        errors.append(run)
    mean = np.mean(errors, axis=0)
    # EMA with alpha 0.25: the first measurement's error, then a weighted mean of ~7 of them
    assert mean[0] > mean[5] > mean[39]
    assert mean[39] < 0.6 * mean[0]


def test_on_the_colocation_trace_measurements_lower_the_error_and_the_jct_stays_close():
    trace = load_instance(COLOCATION)
    full = simulate(trace, "max_min_fairness_packed").summary["average_jct_s"]
    falls = 0
    for seed in range(4):
        result = simulate(trace, "max_min_fairness_packed",
                          SimulationConfig(learn_throughputs=True, hide_pairs=0.5, seed=seed))
        history = result.learning
        assert result.jobs["completion_s"].notna().all()
        assert history["time_s"].is_monotonic_increasing
        assert history["measured_cells"].is_monotonic_increasing
        assert history["hidden_mre"].iloc[-1] <= history["hidden_mre"].iloc[0] + 1e-12
        falls += history["hidden_mre"].iloc[-1] < history["hidden_mre"].iloc[0] - 1e-3
        assert abs(result.summary["average_jct_s"] / full - 1) < 0.05
    assert falls >= 1


def test_learning_says_what_it_needs_in_one_line():
    trace = load_instance(COLOCATION)
    with pytest.raises(SchedoptError, match="max_min_fairness does not share GPUs"):
        simulate(trace, "max_min_fairness", SimulationConfig(learn_throughputs=True))
    with pytest.raises(SchedoptError, match="hide_pairs"):
        SimulationConfig(learn_throughputs=True, hide_pairs=1.5)


def test_a_learning_run_refuses_checkpoints_in_one_line(tmp_path):
    from schedopt.simulation import CheckpointPlan

    trace = load_instance(COLOCATION)
    with pytest.raises(SchedoptError, match="checkpoints do not cover runs that learn"):
        simulate(trace, "max_min_fairness_packed", SimulationConfig(learn_throughputs=True),
                 checkpoint=CheckpointPlan(tmp_path / "run.ckpt", every_events=3))
    assert not (tmp_path / "run.ckpt").exists()
