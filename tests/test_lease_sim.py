"""Lease-based simulation: a hand-computed run, metrics against the per-job frame, the Chronus
guarantee for admitted jobs, Chronus against EDF under overload, errors and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from schedopt.cli.main import main
from schedopt.errors import SchedoptError
from schedopt.policies.chronus.boundary import LeaseSettings
from schedopt.instance import load_instance, parse_instance
from schedopt.simulation.lease_sim import SCHEDULERS, LeaseSimulationConfig, simulate_leases

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "instances" / "chronus-leases.json"


def trace(jobs, gpus=4, per_node=4):
    return parse_instance({"format": "schedopt-instance/1",
                           "cluster": {"gpu_types": {"v100": {"count": gpus,
                                                              "gpus_per_node": per_node}}},
                           "jobs": [{"throughput": {"v100": 1.0}, **j} for j in jobs]})


def config(**settings):
    """Decisions at boundaries only (the hand-worked runs below); between boundaries:
    tests/test_work_conserving.py."""
    return LeaseSimulationConfig(LeaseSettings(**{"lease_seconds": 100.0,
                                                  "resume_overhead_s": 10.0,
                                                  "work_conserving": False, **settings}))


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_hand_computed_preemption_run(scheduler):
    # Leases of 100 s, 10 s lost per (re)start, 4 GPUs. x (best effort, 4 GPUs, 250 s) starts
    # at 0 and has 160 s left at 100. y (4 GPUs, 50 s, deadline 200 s after arriving at 10)
    # takes lease 1 under every scheduler: earliest deadline, shortest remaining, and Chronus
    # admits it (1 lease before t = 210 -> lease 1 only). y ends at 100 + 10 + 50 = 160; x is
    # preempted once, resumes at 200 (10 s lost, 90 s done, 70 s left) and ends at 300 + 70.
    result = simulate_leases(trace([
        {"id": "x", "scale_factor": 4, "total_steps": 250},
        {"id": "y", "scale_factor": 4, "total_steps": 50, "arrival_time": 10, "deadline": 200},
    ]), scheduler, config())
    jobs = result.jobs
    assert jobs.loc["x", "completion_s"] == pytest.approx(370.0)
    assert jobs.loc["y", "completion_s"] == pytest.approx(160.0)
    assert jobs["preemptions"].tolist() == [1, 0]
    assert jobs["starts"].tolist() == [2, 1]
    assert bool(jobs.loc["y", "met_deadline"])
    s = result.summary
    assert s["slo_miss_ratio"] == 0.0 and s["value_weighted_miss"] == 0.0
    assert s["best_effort_average_jct_s"] == pytest.approx(370.0)
    assert s["preemptions"] == 1 and s["leases"] == 4
    # 4 leases x 4 GPUs held over a 370 s span.
    assert s["utilization"] == pytest.approx(16 * 100 / (4 * 370))
    assert s["admitted"] == (1 if scheduler == "chronus" else 0)


def test_edf_and_srtf_differ_where_deadline_and_length_disagree():
    # 2 GPUs; a: 1 lease of work but a loose deadline; b: 2 leases, tight deadline.
    jobs = [{"id": "a", "scale_factor": 2, "total_steps": 90, "deadline": 1000},
            {"id": "b", "scale_factor": 2, "total_steps": 180, "deadline": 200}]
    edf = simulate_leases(trace(jobs, gpus=2, per_node=2), "edf", config()).jobs
    srtf = simulate_leases(trace(jobs, gpus=2, per_node=2), "srtf", config()).jobs
    # EDF: b in leases 0-1 (10 + 90, then 90 more: done at 190), a in lease 2 (done 290).
    assert edf["completion_s"].tolist() == pytest.approx([300.0, 190.0])
    # SRTF: a first (done at 100), b in leases 1-2 (done 290 > 200: missed).
    assert srtf["completion_s"].tolist() == pytest.approx([100.0, 290.0])
    assert srtf["met_deadline"].tolist() == [True, False]


def test_value_weighted_miss_counts_the_best_option_met():
    # One GPU; j0: 270 s, deadline 400 (value = weight 1); j1: 90 s, options (150 s, 6), (1000 s, 2).
    jobs = [{"id": "j0", "total_steps": 270, "deadline": 400},
            {"id": "j1", "total_steps": 90,
             "deadline_options": [{"after_s": 150, "value": 6}, {"after_s": 1000, "value": 2}]}]
    result = simulate_leases(trace(jobs, gpus=1, per_node=1), "edf", config())
    # EDF: j1 (due 150) in lease 0: 10 s lost, done at 100. j0 in leases 1-3: 90 s, 100 s, then
    # its last 80 s: done at 380 <= 400.
    assert result.jobs["completion_s"].tolist() == pytest.approx([380.0, 100.0])
    assert result.jobs["value_earned"].tolist() == [1.0, 6.0]
    assert result.summary["value_weighted_miss"] == 0.0
    jobs[1]["total_steps"] = 190
    late = simulate_leases(trace(jobs, gpus=1, per_node=1), "edf", config(resume_overhead_s=0))
    # j1 runs leases 0-1 (done 190 > 150: earns 2 of 6); j0 leases 2-4, done 470 > 400 (earns 0).
    assert late.jobs["completion_s"].tolist() == pytest.approx([470.0, 190.0])
    assert late.jobs["value_earned"].tolist() == [0.0, 2.0]
    assert late.summary["value_weighted_miss"] == pytest.approx(1 - 2 / 7)
    assert late.summary["slo_miss_ratio"] == 1.0


def overloaded(seed, n=40):
    """Random SLO and best-effort jobs arriving within 2 h: several times what 16 GPUs serve."""
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(n):
        run = float(rng.uniform(600, 4 * 3600))
        job = {"id": f"j{i}", "scale_factor": int(rng.choice([1, 2, 4, 8], p=[.5, .2, .2, .1])),
               "arrival_time": float(rng.uniform(0, 2 * 3600)), "total_steps": run}
        if rng.random() < 0.7:
            job["deadline"] = run * float(rng.uniform(1.2, 3))
        jobs.append(job)
    return trace(jobs, gpus=16, per_node=8)


@pytest.mark.parametrize("seed", [1, 2])
def test_chronus_misses_fewer_slos_than_edf_when_overloaded_and_keeps_its_guarantees(seed):
    instance = overloaded(seed)
    cfg = LeaseSimulationConfig(LeaseSettings(time_limit=2.0))
    chronus = simulate_leases(instance, "chronus", cfg)
    edf = simulate_leases(instance, "edf", cfg)
    assert chronus.summary["slo_miss_ratio"] < edf.summary["slo_miss_ratio"]
    jobs = chronus.jobs
    guaranteed = jobs[jobs["admitted"]]
    assert len(guaranteed) > 0
    assert (guaranteed["value_earned"] > 0).all()  # every admitted job met a deadline option
    # The summary agrees with the per-job frame.
    slo = jobs[jobs["slo"]]
    assert chronus.summary["slo_miss_ratio"] == pytest.approx(1 - slo["met_deadline"].mean())
    assert chronus.summary["preemptions"] == jobs["preemptions"].sum()
    assert np.isfinite(jobs["completion_s"]).all()


def test_bad_inputs_are_reported():
    with pytest.raises(SchedoptError, match="unknown lease scheduler 'fifo'"):
        simulate_leases(trace([{"id": "a", "total_steps": 1}]), "fifo")
    two_types = parse_instance({
        "format": "schedopt-instance/1",
        "cluster": {"gpu_types": {"v100": {"count": 8}, "k80": {"count": 4}}},
        "jobs": [{"id": "a", "total_steps": 1, "throughput": {"v100": 0.0, "k80": 1.0}}]})
    with pytest.raises(SchedoptError, match="job\\(s\\) a cannot run on the 8 v100 GPUs"):
        simulate_leases(two_types, "edf")  # the pool defaults to the larger type
    assert simulate_leases(two_types, "edf", LeaseSimulationConfig(gpu_type="k80")) \
        .jobs.loc["a", "completion_s"] == pytest.approx(31.0)  # 30 s overhead + 1 s


def test_bundled_trace_through_the_cli_as_a_table_and_as_json():
    runner = CliRunner()
    out = runner.invoke(main, ["leases", str(BUNDLED), "--time-limit", "1"])
    assert out.exit_code == 0, out.output
    assert "SLO miss ratio" in out.output and "chronus" in out.output and "srtf" in out.output
    out = runner.invoke(main, ["leases", str(BUNDLED), "-p", "edf", "--json"])
    doc = json.loads(out.output)
    assert doc["format"] == "schedopt-lease-simulation/1"
    (only,) = doc["results"]
    assert only["scheduler"] == "edf"
    assert len(only["jobs"]) == len(load_instance(BUNDLED).jobs)
    out = runner.invoke(main, ["solve", str(BUNDLED), "--policy", "chronus", "--json"])
    doc = json.loads(out.output)
    assert {"objective", "bound", "status", "leases", "gap"} <= set(doc)
    assert doc["status"] in ("optimal", "feasible") and doc["bound"] >= doc["objective"] - 1e-6
    assert set(doc["admitted"]) <= set(doc["leases"])  # every admitted job holds leases
    out = runner.invoke(main, ["leases", str(BUNDLED), "--sigma", "2"])
    assert out.exit_code == 2 and "--sigma expects" in out.output
