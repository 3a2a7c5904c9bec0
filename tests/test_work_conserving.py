"""Work-conserving lease runs: GPUs idle between two boundaries (a job finished, nothing was
planned on them) go at once to waiting jobs, arrivals included, until the next boundary, where
everything is decided again. Hand-worked runs give the exact start and completion times; on
random traces chronus's admitted jobs still meet a deadline option (their reservations hold)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedopt.errors import PolicyError
from schedopt.instance import parse_instance
from schedopt.policies.chronus.boundary import LeaseSettings
from schedopt.simulation.lease_sim import SCHEDULERS, LeaseSimulationConfig, simulate_leases


def trace(jobs, gpus=4, per_node=4):
    return parse_instance({"format": "schedopt-instance/1",
                           "cluster": {"gpu_types": {"v100": {"count": gpus,
                                                              "gpus_per_node": per_node}}},
                           "jobs": [{"throughput": {"v100": 1.0}, **j} for j in jobs]})


def config(conserving=True, **settings):
    return LeaseSimulationConfig(LeaseSettings(**{"lease_seconds": 100.0,
                                                  "resume_overhead_s": 10.0,
                                                  "work_conserving": conserving, **settings}))


# Leases of 100 s, 10 s lost per (re)start, 4 GPUs. a (2 GPUs, 50 s) starts at 0 and ends at
# 60. b (2 GPUs, 100 s) arrives at 30 with 2 GPUs idle: it starts at once, runs from 40, has
# 40 s left at the boundary 100, keeps its GPUs (no overhead) and ends at 140. c (2 GPUs, 20 s,
# deadline 100 s after arriving at 70) takes a's GPUs at 70, runs from 80 and ends at 100.
# At boundaries only: b starts at 100 (ends 210), c at 100 too (ends 130).
HAND = [{"id": "a", "scale_factor": 2, "total_steps": 50},
        {"id": "b", "scale_factor": 2, "total_steps": 100, "arrival_time": 30},
        {"id": "c", "scale_factor": 2, "total_steps": 20, "arrival_time": 70, "deadline": 100}]


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_with_idle_gpus_no_job_waits_for_a_lease_boundary(scheduler):
    on = simulate_leases(trace(HAND), scheduler, config())
    assert on.jobs["completion_s"].tolist() == pytest.approx([60.0, 140.0, 100.0])
    # a start is 10 s before the job's first progress: b started at 30, c at 70
    wait = on.jobs["completion_s"] - on.jobs["run_s"] - 10.0 - on.jobs["arrival_s"]
    assert wait.loc[["a", "c"]].tolist() == pytest.approx([0.0, 0.0])
    assert on.jobs["starts"].tolist() == [1, 1, 1] and on.summary["preemptions"] == 0
    assert on.leases["started_between"].tolist() == [2, 0]
    # GPU-seconds held: a 2 x 60, b 2 x 70 + 2 x 40, c 2 x 30, over 4 GPUs x 140 s
    assert on.summary["utilization"] == pytest.approx(400 / 560)
    off = simulate_leases(trace(HAND), scheduler, config(conserving=False))
    assert off.jobs["completion_s"].tolist() == pytest.approx([60.0, 210.0, 130.0])


def test_a_freed_gpu_goes_to_the_job_first_in_the_rules_order():
    # 2 GPUs. x (2 GPUs, 30 s) holds both from 0 to 40. Waiting from 5: s (1 GPU, 200 s, due
    # 300 s after arriving) and q (1 GPU, 20 s, best effort). Both fit in the 2 GPUs x frees
    # at 40: both start, run from 50; q ends at 70, s has 150 s left at 100 and ends at 250.
    jobs = [{"id": "x", "scale_factor": 2, "total_steps": 30},
            {"id": "s", "total_steps": 200, "arrival_time": 5, "deadline": 300},
            {"id": "q", "total_steps": 20, "arrival_time": 5}]
    for scheduler in SCHEDULERS:
        done = simulate_leases(trace(jobs, gpus=2, per_node=2), scheduler, config()).jobs
        assert done["completion_s"].tolist() == pytest.approx([40.0, 250.0, 70.0])
    # One GPU freed for two waiting 1-GPU jobs: EDF gives it to s (deadline), SRTF to q.
    jobs[0]["scale_factor"] = 1
    jobs.append({"id": "y", "total_steps": 300})  # holds the other GPU through lease 0
    edf = simulate_leases(trace(jobs, gpus=2, per_node=2), "edf", config()).jobs
    srtf = simulate_leases(trace(jobs, gpus=2, per_node=2), "srtf", config()).jobs
    # EDF: s starts at 40 (runs 50-100, 150 left), keeps its GPU: ends at 250.
    assert edf.loc["s", "completion_s"] == pytest.approx(250.0)
    # SRTF: q starts at 40, runs 50-70.
    assert srtf.loc["q", "completion_s"] == pytest.approx(70.0)


def test_no_start_when_the_lease_has_no_more_than_the_overhead_left():
    # a (4 GPUs, 85 s) ends at 95; b arrives at 92: with 8 s left of the lease and 10 s of
    # overhead a start would do no work, so b waits for the boundary at 100 (ends 100 + 10 + 5).
    jobs = [{"id": "a", "scale_factor": 4, "total_steps": 85},
            {"id": "b", "scale_factor": 2, "total_steps": 5, "arrival_time": 92}]
    done = simulate_leases(trace(jobs), "edf", config()).jobs
    assert done["completion_s"].tolist() == pytest.approx([95.0, 115.0])


def test_work_conserving_is_a_checked_option():
    with pytest.raises(PolicyError, match="work_conserving"):
        LeaseSettings(work_conserving="yes")
    from schedopt.simulation import SimulationConfig, simulate

    with pytest.raises(PolicyError, match="work_conserving"):
        simulate(trace(HAND), "edf", SimulationConfig(policy_options={"work_conserving": 3}))


@st.composite
def deadline_traces(draw):
    n = draw(st.integers(2, 7))
    jobs = []
    for i in range(n):
        run = draw(st.integers(20, 400))
        job = {"id": f"j{i}", "scale_factor": draw(st.sampled_from([1, 2, 4])),
               "arrival_time": float(draw(st.integers(0, 300))), "total_steps": float(run)}
        if draw(st.booleans()):
            job["deadline"] = float(run * draw(st.floats(1.1, 4.0)) + 20)
        jobs.append(job)
    return trace(jobs)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(deadline_traces())
def test_admitted_jobs_never_miss_in_work_conserving_runs(instance):
    result = simulate_leases(instance, "chronus", config(time_limit=5.0))
    jobs = result.jobs
    assert np.isfinite(jobs["completion_s"]).all()
    admitted = jobs[jobs["admitted"]]
    assert (admitted["value_earned"] > 0).all()
    # no job runs before it arrives nor faster than its work allows
    assert (jobs["completion_s"] >= jobs["arrival_s"] + jobs["run_s"] + 10.0 - 1e-6).all()
    held = result.leases["gpus_held"].to_numpy()
    assert (held <= 4 + 1e-9).all()  # never more GPUs held than the pool has
