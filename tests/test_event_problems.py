"""The problem and decisions of one decision point of an event simulation (schedopt.core.events):
the arrays an EventProblem builds on first read, and the job-id lists of LeaseMask and
QueueStarts, checked against values worked out by hand."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from schedopt.core.decisions import LeasePlan, MachineQueues
from schedopt.core.events import EventProblem, LeaseBoundary, LeaseMask, QueueDecision, QueueStarts
from schedopt.core.problem import ThroughputProblem
from schedopt.instance import parse_instance
from schedopt.policies.baselines.queues import MachineTrace
from schedopt.policies.chronus.boundary import LeaseJobs


def boundary() -> LeaseBoundary:
    """Three jobs at t = 1000 s on an 8-GPU v100 pool: b has a deadline at 1600 s."""
    jobs = LeaseJobs(gpus=np.array([1, 4, 2]), remaining_s=np.array([300.0, 900.0, 50.0]),
                     option_job=np.array([1]), option_deadline_s=np.array([1600.0]),
                     option_value=np.array([1.0]))
    return LeaseBoundary(np.array(["a", "b", "c"], dtype=object), np.array([0.0, 400.0, 1000.0]),
                         np.array([np.inf, 1600.0, np.inf]), jobs, 8, "v100", 1000.0, 600.0)


def test_a_lease_boundary_problem_reads_as_the_pool_on_first_access():
    event = boundary()
    problem = event.problem()
    assert isinstance(problem, ThroughputProblem) and problem.event is event
    assert problem.instance is None and problem.type_size is None
    assert list(problem.job_ids) == ["a", "b", "c"] and problem.gpu_types == ("v100",)
    assert problem.throughput.tolist() == [[1.0], [1.0], [1.0]]
    assert problem.scale_factor.tolist() == [1, 4, 2] and problem.capacity.tolist() == [8.0]
    assert problem.remaining_steps.tolist() == [300.0, 900.0, 50.0]
    assert problem.time_since_arrival.tolist() == [1000.0, 600.0, 0.0]
    assert problem.time_to_deadline[1] == 600.0
    assert np.isnan(problem.time_to_deadline[[0, 2]]).all()
    assert problem.weight.tolist() == [1.0] * 3 and problem.isolated_time.tolist() == [0.0] * 3
    assert np.isnan(problem.cost_per_hour).all() and problem.num_jobs == 3
    assert getattr(problem, "times", None) is None  # not a field: no array built for it
    with pytest.raises(dataclasses.FrozenInstanceError):
        problem.capacity = np.array([4.0])


def test_an_event_problem_copies_like_a_dataclass():
    problem = boundary().problem()
    half = dataclasses.replace(problem, capacity=np.array([4.0]))
    assert type(half) is EventProblem and half.event is problem.event
    assert half.capacity.tolist() == [4.0] and list(half.job_ids) == ["a", "b", "c"]


def test_a_lease_mask_lists_the_jobs_of_its_mask():
    event = boundary()
    plan = LeaseMask.of(event, np.array([True, False, True]))
    assert isinstance(plan, LeasePlan)
    assert plan.running == ["a", "c"] and plan.leases == {"a": [0], "c": [0]}
    assert plan.admitted == [] and plan.rejected == []
    assert plan.lease_seconds == 600.0 and plan.gpu_type == "v100"


def hybrid():
    """J0..J2 on one GPU (1 step/s) and one CPU machine; J1 cannot run on the CPU."""
    return parse_instance({
        "format": "schedopt-instance/1",
        "cluster": {"gpu_types": {"g": {"count": 1}}, "cpu_machines": [{"id": "c0", "cores": 8}]},
        "jobs": [{"id": f"J{m}", "total_steps": steps, "throughput": {"g": 1.0},
                  "arrival_time": arrival, "user": user}
                 for m, (steps, arrival, user) in enumerate([(10.0, 0.0, "u"), (20.0, 5.0, "v"),
                                                             (30.0, 5.0, "u")])],
        "performance": {"cpu_time": {"J0": 40.0, "J2": 60.0}}})


def test_a_queue_decision_problem_covers_the_waiting_jobs():
    trace = MachineTrace.from_instance(hybrid())
    decision = QueueDecision(trace, 8.0, np.array([False, True, True]), np.array([True, True]),
                             np.array([8.0, 8.0]), np.array([-1, -1]), np.full(3, np.nan),
                             np.full(3, np.nan))
    problem = decision.problem()
    assert list(problem.job_ids) == ["J1", "J2"] and problem.gpu_types == ()
    assert problem.throughput.shape == (2, 0) and problem.capacity.shape == (0,)
    assert problem.time_since_arrival.tolist() == [3.0, 3.0]
    assert np.isnan(problem.remaining_steps).all() and np.isnan(problem.time_to_deadline).all()


def test_queue_starts_lists_queues_schedule_and_waiting_from_index_pairs():
    trace = MachineTrace.from_instance(hybrid())
    gpu, cpu = 0, 1  # machines: GPUs first, then CPU machines
    assert trace.machines[cpu] == "c0"
    decision = QueueDecision(trace, 5.0, np.array([True, True, True]), np.array([True, True]),
                             np.array([5.0, 5.0]), np.array([-1, -1]), np.full(3, np.nan),
                             np.full(3, np.nan))
    plan = QueueStarts.of(decision, [(1, gpu), (2, cpu)])
    assert isinstance(plan, MachineQueues) and plan.starts == [(1, gpu), (2, cpu)]
    assert plan.queues == {trace.machines[gpu]: ["J1"], "c0": ["J2"]}
    assert plan.schedule == {
        "J1": {"machine": trace.machines[gpu], "position": 0, "start": 5.0, "completion": 25.0},
        "J2": {"machine": "c0", "position": 0, "start": 5.0, "completion": 65.0}}
    assert plan.waiting == ["J0"]
