"""Every lease policy is called the same way by the simulator: a `LeaseBoundary` with the run's
state (held, arrived, run_index, memory). A stateful policy of a user's own keeps what it needs
in `memory`; chronus keeps its admitted jobs and reservations there."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedopt.core.capabilities import Capability
from schedopt.core.decisions import DecisionKind
from schedopt.core.events import LeaseBoundary, LeaseMask, event_of, rule_outcome
from schedopt.core.policy import Policy
from schedopt.instance import parse_instance
from schedopt.simulation import SimulationConfig, simulate


@dataclass(frozen=True)
class StickyOptions:
    lease_seconds: float = 100.0
    resume_overhead_s: float = 10.0


class Sticky(Policy):
    """First come, first served, never preempting: a job that held GPUs keeps them (it reads
    `held`); the boundaries seen are counted in `memory`."""

    name = "sticky_test"
    summary = "test policy"
    objective_doc = "none"
    Options = StickyOptions
    decision = DecisionKind.LEASES
    needs = Capability.none()
    default_solver = None
    seen: list = []
    memory_arrived: list = []

    def solve(self, problem, options, solver):
        b = event_of(problem, LeaseBoundary)
        b.memory["boundaries"] = b.memory.get("boundaries", 0) + 1
        b.memory.setdefault("arrived", []).extend(b.ids[b.arrived].tolist())
        Sticky.memory_arrived = b.memory["arrived"]
        Sticky.seen.append((b.now, b.ids.tolist(), b.held.tolist(), b.run_index.tolist(),
                            b.memory["boundaries"]))
        free = b.capacity - int(b.jobs.gpus[b.held].sum())
        running = b.held.copy()
        for i in np.argsort(b.run_index, kind="stable"):
            if not running[i] and b.jobs.gpus[i] <= free:
                running[i] = True
                free -= int(b.jobs.gpus[i])
        return rule_outcome(None, LeaseMask.of(b, running), {}, 0.0, self.name)


def test_a_stateful_lease_policy_of_ones_own_reads_held_and_keeps_memory():
    # 2 GPUs; a (2 GPUs, 150 s of work) at 0, b (1 GPU, 50 s) at 0, c (1 GPU, 50 s) at 120 s.
    trace = parse_instance({
        "format": "schedopt-instance/1",
        "cluster": {"gpu_types": {"gpu": {"count": 2, "gpus_per_node": 2}}},
        "jobs": [{"id": "a", "scale_factor": 2, "total_steps": 150, "throughput": {"gpu": 1.0}},
                 {"id": "b", "scale_factor": 1, "total_steps": 50, "throughput": {"gpu": 1.0}},
                 {"id": "c", "scale_factor": 1, "total_steps": 50, "throughput": {"gpu": 1.0},
                  "arrival_time": 120.0}]})
    Sticky.seen = []
    result = simulate(trace, Sticky(), SimulationConfig())
    # Lease 0: a starts (10 s lost, 90 done); lease 1: a keeps its GPUs (nothing lost) and
    # finishes at 160; lease 2: b and c start and finish at 260.
    assert result.jobs["completion_s"].tolist() == [160.0, 260.0, 260.0]
    assert [s[0] for s in Sticky.seen] == [0.0, 100.0, 200.0]
    assert Sticky.seen[0][1:4] == (["a", "b"], [False, False], [0, 1])
    assert Sticky.seen[1][1:4] == (["a", "b"], [True, False], [0, 1])
    assert Sticky.seen[2][1:4] == (["b", "c"], [False, False], [1, 2])
    assert [s[4] for s in Sticky.seen] == [1, 2, 3]  # the same memory at every boundary
    assert Sticky.memory_arrived == ["a", "b", "c"]  # each job reported arrived once
    assert result.jobs["preemptions"].sum() == 0
