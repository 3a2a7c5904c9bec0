"""The event-driven baselines (edf, srtf: leases; sjf, drf, fifo_queue: queues) as registered
policies: hand-worked 3-job traces, the numbers the former schedulers gave on the bundled traces,
one-decision solves from an instance, and the contract the simulator calls them through."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from schedopt.api import as_problem, solve
from schedopt.cli.main import main
from schedopt.core.decisions import DecisionKind, LeasePlan, MachineQueues
from schedopt.core.problem import ThroughputProblem
from schedopt.core.registry import resolve
from schedopt.errors import PolicyError
from schedopt.instance import load_instance, parse_instance
from schedopt.simulation import SimulationConfig, simulate

ROOT = Path(__file__).resolve().parents[1]
LEASES = ROOT / "instances" / "chronus-leases.json"
ALLOX_40 = ROOT / "instances" / "allox-40.json"
LEASE_OPTIONS = {"lease_seconds": 100.0, "resume_overhead_s": 10.0}


def lease_trace():
    """2 GPUs (one node), 1 step/s: a (1 GPU, 170 s, deadline 1000), b (1 GPU, 50 s, best
    effort), c (2 GPUs, 80 s, deadline 250), all at t = 0."""
    jobs = [{"id": "a", "total_steps": 170, "deadline": 1000},
            {"id": "b", "total_steps": 50},
            {"id": "c", "scale_factor": 2, "total_steps": 80, "deadline": 250}]
    return parse_instance({"format": "schedopt-instance/1",
                           "cluster": {"gpu_types": {"v100": {"count": 2, "gpus_per_node": 2}}},
                           "jobs": [{"throughput": {"v100": 1.0}, **j} for j in jobs]})


def queue_trace():
    """One GPU g and one CPU machine c0. J0 (GPU 4 s, CPU 8 s, user a, t=0), J1 (2 s, 3 s,
    user a, t=0), J2 (GPU 6 s, no CPU, user b, t=1)."""
    jobs = [{"id": "J0", "total_steps": 4.0, "user": "a"},
            {"id": "J1", "total_steps": 2.0, "user": "a"},
            {"id": "J2", "total_steps": 6.0, "user": "b", "arrival_time": 1.0}]
    return parse_instance({
        "format": "schedopt-instance/1",
        "cluster": {"gpu_types": {"g": {"count": 1}},
                    "cpu_machines": [{"id": "c0", "cores": 8}]},
        "jobs": [{"throughput": {"g": 1.0}, **j} for j in jobs],
        "performance": {"cpu_time": {"J0": 8.0, "J1": 3.0}}})


def test_every_baseline_is_registered_with_its_decision_kind():
    kinds = {"edf": DecisionKind.LEASES, "srtf": DecisionKind.LEASES,
             "sjf": DecisionKind.QUEUES, "drf": DecisionKind.QUEUES,
             "fifo_queue": DecisionKind.QUEUES, "fifo": DecisionKind.ALLOCATION}
    for name, kind in kinds.items():
        assert resolve(name)[0].decision == kind


def test_edf_on_three_jobs_worked_by_hand():
    # Leases of 100 s, 10 s lost per (re)start. t=0: deadlines c 250 < a 1000 < b (none): c
    # takes both GPUs and ends at 10 + 80 = 90. t=100: a and b (1 GPU each) start: b ends at
    # 110 + 50 = 160; a does 90 s (80 left). t=200: a keeps its GPU (no overhead), ends at 280.
    result = simulate(lease_trace(), "edf", SimulationConfig(policy_options=LEASE_OPTIONS))
    assert result.kind == DecisionKind.LEASES
    assert result.jobs["completion_s"].tolist() == pytest.approx([280.0, 160.0, 90.0])
    assert result.jobs["preemptions"].tolist() == [0, 0, 0]
    assert result.summary["slo_miss_ratio"] == 0.0 and result.summary["leases"] == 3


def test_srtf_on_three_jobs_worked_by_hand():
    # t=0: remaining b 50 < c 80 < a 170: b (1 GPU) starts, c (2 GPUs) does not fit, a (1 GPU)
    # does: b ends at 60, a has 80 s left. t=100: a and c both have 80 s left; a arrived first
    # in file order and fits, c does not: a keeps its GPU and ends at 180. Work-conserving
    # (the default): both GPUs are idle at 180, so c starts there and ends at 190 + 80 = 270;
    # deciding at boundaries only, c waits for t=200 and ends at 210 + 80 = 290. Either way
    # past its deadline 250.
    for conserving, c_ends in ((True, 270.0), (False, 290.0)):
        options = {**LEASE_OPTIONS, "work_conserving": conserving}
        result = simulate(lease_trace(), "srtf", SimulationConfig(policy_options=options))
        assert result.jobs["completion_s"].tolist() == pytest.approx([180.0, 60.0, c_ends])
        assert result.jobs["met_deadline"].tolist()[::2] == [True, False]  # b: no deadline
        assert result.summary["slo_miss_ratio"] == pytest.approx(0.5)


@pytest.mark.parametrize("policy, completion", [
    # sjf: J0 and J1 are faster on the GPU: J1 (2 s) first, 0..2; the CPU stays idle; J0 at
    # 2..6; J2 (arrives at 1, GPU only) at 6..12.
    ("sjf", [6.0, 2.0, 12.0]),
    # fifo_queue: J0 takes the GPU (4 s < 8 s), J1 the CPU (0..3); J2 waits for the GPU (4..10).
    ("fifo_queue", [4.0, 3.0, 10.0]),
    # drf: only user a waits at 0: the GPU gets a's shortest job there (J1, 0..2), the CPU a's
    # other job (J0, 0..8); at 2 the GPU goes to b (J2, 2..8).
    ("drf", [8.0, 2.0, 8.0]),
])
def test_queue_baselines_on_three_jobs_worked_by_hand(policy, completion):
    result = simulate(queue_trace(), policy)
    assert result.kind == DecisionKind.QUEUES
    assert result.jobs["completion_s"].tolist() == pytest.approx(completion)
    jct = np.array(completion) - np.array([0.0, 0.0, 1.0])
    assert result.summary["average_jct_s"] == pytest.approx(jct.mean())


# Recorded with the simulators as they were before these baselines became policies (commit
# acf9eb9: simulate_leases(load_instance("instances/chronus-leases.json"), NAME) and
# simulate_allox(load_instance("instances/allox-40.json"), NAME), NAME = fifo for fifo_queue),
# default settings.
RECORDED_LEASES = {
    "edf": {"slo_miss_ratio": 0.6153846153846154, "value_weighted_miss": 0.48051948051948057,
            "best_effort_average_jct_s": 54358.564841269836, "average_jct_s": 29252.857308888888,
            "makespan_s": 89888.7101, "preemptions": 27, "starts": 87, "leases": 74,
            "utilization": 0.9127953878603938},
    "srtf": {"slo_miss_ratio": 0.4358974358974359, "value_weighted_miss": 0.4155844155844156,
             "best_effort_average_jct_s": 24292.850555555557, "average_jct_s": 21425.85730888889,
             "makespan_s": 92288.7101, "preemptions": 13, "starts": 73, "leases": 76,
             "utilization": 0.8890578263700318},
}
RECORDED_QUEUES = {
    "sjf": {"average_jct_s": 3494.377660420906, "p90_jct_s": 9063.980512424674,
            "makespan_s": 14388.69951524583, "jain_share": 0.9425490004964344,
            "jain_user_jct": 0.8214810849848574, "utilization_gpu": 0.8992391857529206,
            "utilization_cpu": 0.05713497589750414, "decisions": 76},
    "drf": {"average_jct_s": 4762.825296480198, "p90_jct_s": 12091.671700000003,
            "makespan_s": 32586.1, "jain_share": 0.9001524529245089,
            "jain_user_jct": 0.8072617099670464, "utilization_gpu": 0.24024335383724665,
            "utilization_cpu": 0.506984914580143, "decisions": 40},
    "fifo_queue": {"average_jct_s": 5725.017841032648, "p90_jct_s": 14101.224,
                   "makespan_s": 33144.863, "jain_share": 0.9154467021373386,
                   "jain_user_jct": 0.8503910354896617, "utilization_gpu": 0.2803362083372173,
                   "utilization_cpu": 0.5343616897737667, "decisions": 40},
}


@pytest.mark.parametrize("policy", sorted(RECORDED_LEASES))
def test_lease_baselines_give_the_recorded_numbers_on_the_bundled_trace(policy):
    # The former schedulers decided at lease boundaries only; work-conserving runs (the
    # default) are checked by hand-worked traces and tests/test_work_conserving.py.
    config = SimulationConfig(policy_options={"work_conserving": False})
    summary = simulate(load_instance(LEASES), policy, config).summary
    for key, value in RECORDED_LEASES[policy].items():
        assert summary[key] == pytest.approx(value, rel=1e-12), key


@pytest.mark.parametrize("policy", sorted(RECORDED_QUEUES))
def test_queue_baselines_give_the_recorded_numbers_on_the_bundled_trace(policy):
    summary = simulate(load_instance(ALLOX_40), policy).summary
    for key, value in RECORDED_QUEUES[policy].items():
        assert summary[key] == pytest.approx(value, rel=1e-12), key


def test_one_decision_from_an_instance_through_solve():
    plan = solve(lease_trace(), "edf", lease_seconds=100.0, resume_overhead_s=10.0)
    assert plan.details["running"] == ["c"] and plan.X[:, 0].tolist() == [0.0, 0.0, 1.0]
    assert solve(lease_trace(), "srtf").details["running"] == ["a", "b"]
    queues = solve(queue_trace(), "fifo_queue")
    # every machine free at t=0 and every job waiting (J2 too: solve sees no future arrivals)
    assert queues.details["queues"] == {"g-n0/0": ["J0"], "c0": ["J1"]}
    assert queues.details["waiting"] == ["J2"]
    with pytest.raises(PolicyError, match="needs an instance"):
        solve(ThroughputProblem.from_arrays([[1.0]], capacity=[1]), "sjf")


def test_the_decisions_are_typed():
    edf, _ = resolve("edf")
    outcome = edf.solve(as_problem(lease_trace()), edf.parse_options({}), None)
    assert isinstance(outcome.decision, LeasePlan) and outcome.decision.running == ["c"]
    assert outcome.decision.leases == {"c": [0]} and outcome.decision.lease_seconds == 1200.0
    sjf, _ = resolve("sjf")
    outcome = sjf.solve(as_problem(queue_trace()), sjf.parse_options({}), None)
    assert isinstance(outcome.decision, MachineQueues)
    assert list(outcome.decision.queues.values()) == [["J1"]]


def test_lease_options_are_validated_in_one_line():
    with pytest.raises(PolicyError, match="resume_overhead_s must be in"):
        simulate(lease_trace(), "edf", SimulationConfig(
            policy_options={"lease_seconds": 10.0, "resume_overhead_s": 20.0}))
    with pytest.raises(PolicyError, match="policy sjf has no option"):
        simulate(queue_trace(), "sjf", SimulationConfig(policy_options={"alpha": 0.5}))


def test_solve_from_the_cli_prints_the_decision():
    out = CliRunner().invoke(main, ["solve", str(LEASES), "--policy", "edf", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["policy"] == "edf" and set(doc["running"]) <= {j.id for j in load_instance(LEASES).jobs}
