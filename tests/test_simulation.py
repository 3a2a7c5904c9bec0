"""The simulator: work is conserved, physics holds, placement-aware throughput is used, and the
Gavel-compatible mode reproduces Gavel's own simulator on its physical-cluster traces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from schedopt.errors import SchedoptError
from schedopt.instance import load_instance, parse_instance
from schedopt.simulation import SimulationConfig, simulate

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "trace-samples" / "gavel"
SMALL = load_instance(ROOT / "instances" / "small-heterogeneous.yaml")
MODES = [SimulationConfig(), SimulationConfig.gavel_compatible()]
POLICIES = ["max_min_fairness", "max_min_fairness_agnostic", "min_makespan", "finish_time_fairness",
            "fifo", "max_total_throughput", "isolated"]


@pytest.mark.parametrize("config", MODES, ids=lambda c: c.mode)
@pytest.mark.parametrize("policy", POLICIES)
def test_every_job_completes_once_with_exactly_its_steps(policy, config):
    result = simulate(SMALL, policy, config)
    jobs = result.jobs
    assert len(jobs) == len(SMALL.jobs) and jobs.index.is_unique
    assert jobs["completion_s"].notna().all()
    np.testing.assert_allclose(jobs["steps_done"], jobs["total_steps"], rtol=1e-9)
    # no job finishes faster than alone on its fastest GPU type from its arrival
    best = np.array([max(j.throughput.values()) for j in SMALL.jobs])
    assert np.all(jobs["jct_s"].to_numpy() >= jobs["total_steps"].to_numpy() / best * (1 - 1e-9))
    assert np.all(jobs["completion_s"] >= jobs["arrival_s"])
    summary = result.summary
    assert summary["makespan_s"] == pytest.approx(jobs["completion_s"].max() - jobs["arrival_s"].min())
    assert summary["average_jct_s"] == pytest.approx(jobs["jct_s"].mean())
    assert all(0 <= u <= 1 + 1e-9 for u in summary["utilization"].values())


def test_gpu_seconds_never_exceed_the_cluster_in_any_round():
    result = simulate(SMALL, "max_min_fairness")
    total = sum(t.count for t in SMALL.cluster.gpu_types.values())
    assert (result.rounds["gpus_busy"] <= total).all()
    assert (result.rounds["length_s"] <= 360 + 1e-9).all()


def two_node_instance(unconsolidated: float | None):
    doc = {"format": "schedopt-instance/1",
           "cluster": {"gpu_types": {"g": {"count": 2, "gpus_per_node": 1}}},
           "jobs": [{"id": "a", "type": "m", "scale_factor": 2, "total_steps": 7200}],
           "performance": {"throughput": {"m": {"g": 2.0}}}}
    if unconsolidated is not None:
        doc["performance"]["unconsolidated"] = {"m": {"g": unconsolidated}}
    return parse_instance(doc)


def test_a_job_spread_over_nodes_runs_at_its_unconsolidated_throughput():
    assert simulate(two_node_instance(None), "max_min_fairness").summary["makespan_s"] == pytest.approx(3600)
    assert simulate(two_node_instance(1.0), "max_min_fairness").summary["makespan_s"] == pytest.approx(7200)
    gavel = simulate(two_node_instance(1.0), "max_min_fairness", SimulationConfig.gavel_compatible())
    assert gavel.summary["makespan_s"] == pytest.approx(3600, rel=1e-3)  # Gavel ignores the table


def test_deadline_misses_are_counted():
    doc = {"format": "schedopt-instance/1", "cluster": {"gpu_types": {"g": {"count": 1}}},
           "jobs": [{"id": "a", "throughput": {"g": 1.0}, "total_steps": 1000, "deadline": 5000},
                    {"id": "b", "throughput": {"g": 1.0}, "total_steps": 1000, "deadline": 1500}]}
    result = simulate(parse_instance(doc), "fifo")
    assert result.jobs["missed_deadline"].tolist() == [False, True]
    assert result.summary["deadline_miss_ratio"] == 0.5


REFERENCE = [  # docs/reference-results.md: Gavel's simulator, 8 V100 + 16 P100 + 24 K80, 360 s rounds
    ("max_min_fairness.trace", "gavel:max_min_fairness", 19989, 77141),
    ("max_min_fairness.trace", "gavel:max_min_fairness_perf", 14623, 63945),
    ("max_min_fairness.trace", "gavel:finish_time_fairness_perf", 15010, 64971),
    ("max_min_fairness.trace", "gavel:fifo_perf", 19527, 72320),
    ("minimize_makespan.trace", "gavel:min_total_duration", 71950, 76635),
    ("minimize_makespan.trace", "gavel:min_total_duration_perf", 63775, 64721),
    ("minimize_makespan.trace", "gavel:max_min_fairness_perf", 35659, 68522),
    ("minimize_makespan.trace", "gavel:fifo_perf", 40258, 90701),
]


@pytest.mark.skipif(not SHARED.exists(), reason="shared/trace-samples not present")
@pytest.mark.parametrize("trace, policy, jct, makespan", REFERENCE)
def test_gavel_mode_matches_gavels_own_simulator_within_ten_percent(trace, policy, jct, makespan):
    from schedopt.traces.gavel_throughputs import read_gavel_trace

    instance = read_gavel_trace(SHARED / trace, SHARED / "simulation_throughputs.json")
    summary = simulate(instance, policy, SimulationConfig.gavel_compatible(seed=0)).summary
    assert summary["average_jct_s"] == pytest.approx(jct, rel=0.10)
    assert summary["makespan_s"] == pytest.approx(makespan, rel=0.10)


def queue_on_one_gpu(rounds_each: int, jobs: int = 3, source: str | None = None):
    """`jobs` jobs that each need exactly `rounds_each` rounds of 360 s alone on one GPU."""
    doc = {"format": "schedopt-instance/1",
           "cluster": {"gpu_types": {"g": {"count": 1, "gpus_per_node": 1}}},
           "jobs": [{"id": f"j{n}", "type": "m", "total_steps": 2.0 * 360 * rounds_each}
                    for n in range(jobs)],
           "performance": {"throughput": {"m": {"g": 2.0}}}}
    return parse_instance(doc, source=source or "<memory>")


@pytest.mark.parametrize("make", [SimulationConfig, SimulationConfig.gavel_compatible],
                         ids=["default", "gavel"])
def test_max_rounds_bounds_the_run(make):
    trace = queue_on_one_gpu(3)
    full = simulate(trace, "max_min_fairness", make())
    used = len(full.rounds)
    assert used >= 9  # 9 rounds of work on the one GPU
    assert len(simulate(trace, "max_min_fairness", make(max_rounds=used)).rounds) == used
    with pytest.raises(SchedoptError, match=f"passed max_rounds={used - 1} rounds of 360 s"):
        simulate(trace, "max_min_fairness", make(max_rounds=used - 1))


@pytest.mark.parametrize("make", [SimulationConfig, SimulationConfig.gavel_compatible],
                         ids=["default", "gavel"])
def test_a_job_that_alone_needs_more_rounds_fails_before_the_first(make):
    trace = queue_on_one_gpu(5, jobs=2, source="queue.json")
    with pytest.raises(SchedoptError) as caught:
        simulate(trace, "max_min_fairness", make(max_rounds=4))
    assert str(caught.value).startswith("queue.json: jobs[0].total_steps: job j0: 3600 steps at "
                                        "its fastest 2 steps/s need at least 5 rounds of 360 s")
    assert len(simulate(trace, "max_min_fairness", make(max_rounds=10)).rounds) == 10


def test_a_job_of_1e20_steps_is_one_line_not_a_hang(tmp_path):
    """Stepping 1e20 steps round by round would take ~1e16 rounds; the command says so at once."""
    from click.testing import CliRunner

    from schedopt.cli.main import main

    doc = {"format": "schedopt-instance/1",
           "cluster": {"gpu_types": {"v100": {"count": 4, "gpus_per_node": 4}}},
           "jobs": [{"id": "a", "type": "m", "total_steps": 99999999999999999999},
                    {"id": "b", "type": "m", "total_steps": 500}],
           "performance": {"throughput": {"m": {"v100": 30.0}}}}
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(doc))
    for mode in ("default", "gavel"):
        result = CliRunner().invoke(main, ["simulate", str(path), "--mode", mode])
        assert result.exit_code == 2, result.output
        assert result.output.strip().splitlines() == [
            f"error: {path}: jobs[0].total_steps: job a: 1e+20 steps at its fastest 30 steps/s "
            f"need at least 9.26e+15 rounds of 360 s, more than max_rounds=1000000 "
            f"(--max-rounds); expected fewer steps or longer rounds"]
