"""One engine: `simulate` replays a trace under a policy of any decision kind, including a
Policy object defined here, and the metrics module's summaries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from schedopt.backends import Status
from schedopt.core.capabilities import Capability
from schedopt.core.decisions import DecisionKind
from schedopt.core.outcome import Outcome
from schedopt.core.policy import Policy
from schedopt.errors import PolicyError, SchedoptError
from schedopt.instance import load_instance, parse_instance
from schedopt.simulation import SimulationConfig, simulate
from schedopt.simulation.metrics import jain_index, jct_summary, percentile

ROOT = Path(__file__).resolve().parents[1]


class EqualShares(Policy):
    """Every job gets min(1, GPUs / jobs) of the one GPU type, where it can run."""

    name = "equal_shares_test"
    needs = Capability.none()
    default_solver = None

    def solve(self, problem, options, solver) -> Outcome:
        share = np.minimum(1.0, problem.capacity / max(problem.num_jobs, 1))
        X = np.where(problem.runnable, share[None, :], 0.0)
        return Outcome.from_status(X, Status.OPTIMAL, None, None, 0.0, "closed form")


def one_type(jobs, gpus):
    return parse_instance({"format": "schedopt-instance/1",
                           "cluster": {"gpu_types": {"v100": {"count": gpus,
                                                              "gpus_per_node": gpus}}},
                           "jobs": [{"throughput": {"v100": 1.0}, **j} for j in jobs]})


def test_a_custom_allocation_policy_runs_through_the_round_engine():
    # 2 GPUs, rounds of 100 s, 1 step/s. t=0: A (250) and B (100) each get X = 1: B ends at
    # 100, A has 150 left. t=100: C (arrived at 50, 120 steps) joins: A and C get X = 1 and
    # run 100 s (A: 50 left, C: 20). t=200: C ends at 220, A at 250.
    trace = one_type([{"id": "A", "total_steps": 250}, {"id": "B", "total_steps": 100},
                      {"id": "C", "total_steps": 120, "arrival_time": 50}], gpus=2)
    result = simulate(trace, EqualShares(), SimulationConfig(round_seconds=100))
    assert result.policy == "equal_shares_test" and result.kind == DecisionKind.ALLOCATION
    assert result.jobs["jct_s"].tolist() == pytest.approx([250.0, 100.0, 170.0])
    assert result.summary["average_jct_s"] == pytest.approx(520.0 / 3)
    assert result.summary["policy_solves"] == 2  # at 0 and 100 (C in, B out); both end by 250


def test_a_custom_allocation_policy_time_shares_one_gpu():
    # 1 GPU, two jobs of 150 steps, X = 1/2 each: rounds of 100 s alternate, so one job runs
    # 0-100 and 200-250, the other 100-200 and 250-300.
    trace = one_type([{"id": "A", "total_steps": 150}, {"id": "B", "total_steps": 150}], gpus=1)
    result = simulate(trace, EqualShares(), SimulationConfig(round_seconds=100))
    assert sorted(result.jobs["jct_s"].tolist()) == pytest.approx([250.0, 300.0])
    assert result.summary["utilization"]["v100"] == pytest.approx(1.0)


def test_every_kind_goes_through_simulate():
    leases = simulate(load_instance(ROOT / "instances" / "chronus-leases.json"), "srtf")
    queues = simulate(load_instance(ROOT / "instances" / "allox-40.json"), "allox",
                      SimulationConfig(policy_options={"alpha": 0.5}))
    assert leases.kind == DecisionKind.LEASES and leases.rounds is None
    assert len(leases.leases) == leases.summary["leases"]
    assert queues.kind == DecisionKind.QUEUES and len(queues.decisions) == queues.summary["decisions"]
    # recorded before the engine was merged (simulate_allox(instance, "allox", 0.5), acf9eb9)
    assert queues.summary["average_jct_s"] == pytest.approx(2401.4412649036767, rel=1e-12)
    assert queues.alpha == 0.5


def test_kinds_the_engine_does_not_replay_are_one_line_errors():
    trace = load_instance(ROOT / "instances" / "chronus-leases.json")
    with pytest.raises(PolicyError, match="parameter server|ps_configuration"):
        simulate(trace, "smd")
    with pytest.raises(PolicyError, match="POP partitions apply to allocation policies"):
        simulate(trace, "edf", SimulationConfig(partitions=2))
    with pytest.raises(PolicyError, match="unknown policy"):
        simulate(trace, "no_such_policy")


def test_metrics_on_hand_cases():
    jobs = pd.DataFrame({"arrival_s": [0.0, 10.0, 20.0], "completion_s": [100.0, 50.0, 80.0],
                         "jct_s": [100.0, 40.0, 60.0]})
    s = jct_summary(jobs, 50)
    assert s == {"jobs": 3, "average_jct_s": pytest.approx(200 / 3), "p50_jct_s": 60.0,
                 "makespan_s": 100.0}
    assert percentile(np.array([np.nan, np.inf]), 50) is None
    assert jain_index([2, 2]) == pytest.approx(1.0) and jain_index([0, 4]) == pytest.approx(0.5)


class LongestFirst(Policy):
    """A queue policy written here: each free machine takes the waiting job that runs longest
    there (ties: trace order)."""

    name = "longest_first_test"
    decision = DecisionKind.QUEUES
    needs = Capability.none()
    default_solver = None

    def solve(self, problem, options, solver) -> Outcome:
        from schedopt.policies.baselines.queues import queue_outcome

        event = problem.event
        waiting, P, starts = event.queued.copy(), event.trace.processing, []
        for k in np.flatnonzero(event.free):
            jobs = np.flatnonzero(waiting & np.isfinite(P[:, k]))
            if jobs.size:
                m = int(jobs[np.argmax(P[jobs, k])])
                starts.append((m, int(k)))
                waiting[m] = False
        return queue_outcome(event, starts, 0.0, self.name)


class Nobody(Policy):
    """A lease policy that returns no LeasePlan."""

    name = "nobody_test"
    decision = DecisionKind.LEASES
    needs = Capability.none()
    default_solver = None

    def solve(self, problem, options, solver) -> Outcome:
        return Outcome.from_status(None, Status.FEASIBLE, None, None, 0.0, "none")


def test_a_custom_queue_policy_runs_through_the_queue_engine():
    # One GPU, no CPU machine: J0 (2 s), J1 (5 s), J2 (3 s), all at t=0. Longest first: J1
    # 0..5, J2 5..8, J0 8..10.
    trace = parse_instance({"format": "schedopt-instance/1",
                            "cluster": {"gpu_types": {"g": {"count": 1}}},
                            "jobs": [{"id": f"J{m}", "total_steps": s, "throughput": {"g": 1.0}}
                                     for m, s in enumerate([2.0, 5.0, 3.0])]})
    result = simulate(trace, LongestFirst())
    assert result.kind == DecisionKind.QUEUES
    assert result.jobs["completion_s"].tolist() == pytest.approx([10.0, 5.0, 8.0])


def test_a_policy_returning_the_wrong_decision_is_a_one_line_error():
    trace = one_type([{"id": "A", "total_steps": 10}], gpus=1)
    with pytest.raises(SchedoptError, match="returned NoneType, expected a LeasePlan"):
        simulate(trace, Nobody())
