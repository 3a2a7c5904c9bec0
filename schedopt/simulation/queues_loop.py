"""The simulation loop of queue policies (decision QUEUES: allox, sjf, drf, fifo_queue): an
event-driven simulation of non-preemptive jobs on GPU and CPU machines.

Machines are every GPU (one machine each) and every CPU machine; job m takes p[m, k] seconds on
machine k (`schedopt.policies.allox.matching.allox_processing_times`, np.inf = cannot run there).
A started job runs to completion on its machine: nothing is ever preempted or migrated.

Events are job arrivals and job completions. At each event time, completions free their
machines and arrivals join the queue; then, if some machine is free and some job is queued, the
policy is asked which jobs start (a *decision*): it gets a `QueueDecision` problem
(`policy.solve`) and returns a `MachineQueues`; the job at the head of each free machine's queue
starts there.

`allox` (docs/formulations.md §4 online) reads the decision's busy machines and users' shares
(`schedopt.policies.allox.policy`): the queued jobs that pass the fairness filter are matched to
(machine, position-from-last) slots at minimum total completion time, busy machines entering
with the time their running job ends; the first job of each *free* machine's queue starts, the
rest of the matching is thrown away. A free machine whose queue is empty stays idle until the
next event, even if jobs wait.
The baselines' rules are in `schedopt.policies.baselines.queues`.

Times are seconds of simulated time, measured from the instance's clock (arrival_time).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from schedopt.backends import SolveOptions
from schedopt.backends.session import Solver
from schedopt.core.decisions import DecisionKind, MachineQueues
from schedopt.core.policy import Policy
from schedopt.errors import SchedoptError
from schedopt.core.events import QueueDecision, QueueStarts
from schedopt.policies.baselines.queues import MachineTrace
from schedopt.simulation.checkpoint import Checkpoints, checkpointing, prefix, restore
from schedopt.simulation.common import SimulationConfig, SimulationResult, progress_bar
from schedopt.simulation.metrics import queue_summary

# (job, machine) pairs that start now, the jobs that entered the decision, solver seconds.
Starts = tuple[list[tuple[int, int]], int, float]


def run_queues(trace: MachineTrace, policy: Policy, options: Any, name: str,
               config: SimulationConfig, progress: bool = False,
               checkpoints: Checkpoints | None = None) -> SimulationResult:
    """Replay `trace` under the QUEUES `policy` with parsed `options`; `checkpoints`
    (schedopt.simulation.checkpoint) resumes it from a saved state and writes its state at
    event times (and when it is interrupted)."""
    solver = Solver(config.solver or policy.default_solver,
                    SolveOptions(time_limit=config.time_limit))
    n, K = trace.processing.shape
    queued = np.zeros(n, dtype=bool)
    start, completion = np.full(n, np.nan), np.full(n, np.nan)
    machine = np.full(n, -1)
    busy_until = np.full(K, -np.inf)  # machine k is free at time t if busy_until[k] <= t
    running = np.full(K, -1)          # job on machine k, -1 = none (or finished)
    arrivals = trace.arrival_order
    arrives = trace.arrival[arrivals].tolist()  # seconds, in arrival order
    P = trace.processing
    admitted, launched, waiting = 0, 0, 0       # waiting: jobs queued now
    decisions: list[tuple] = []
    t = arrives[0] if n else 0.0
    if checkpoints is not None and checkpoints.resumed is not None:
        saved = checkpoints.resumed
        queued, start, completion, machine, busy_until, running = restore(
            saved, queued=queued, start=start, completion=completion, machine=machine,
            busy_until=busy_until, running=running)
        t, admitted, launched = saved["t"], saved["admitted"], saved["launched"]
        waiting, decisions = saved["waiting"], list(saved["decisions"])

    def snapshot() -> dict:
        return {"queued": queued.copy(), "start": start.copy(), "completion": completion.copy(),
                "machine": machine.copy(), "busy_until": busy_until.copy(),
                "running": running.copy(), "t": t, "admitted": admitted, "launched": launched,
                "waiting": waiting, "decisions": prefix(decisions)}

    bar = progress_bar(n, progress)
    bar.update(launched)
    with checkpointing(checkpoints):
        while launched < n:
            if checkpoints is not None:
                checkpoints.tick(snapshot)
            while admitted < n and arrives[admitted] <= t:
                queued[arrivals[admitted]] = True
                admitted += 1
                waiting += 1
            free = busy_until <= t
            if waiting and free.any():
                decision = QueueDecision(trace, t, queued, free, busy_until, running, start,
                                         completion)
                starts, candidates, seconds = _contract_step(policy, options, solver, decision,
                                                             waiting)
                for m, k in starts:
                    queued[m] = False
                    start[m], machine[m] = t, k
                    completion[m] = t + P[m, k]
                    busy_until[k], running[k] = completion[m], m
                decisions.append((t, waiting, candidates, int(free.sum()), len(starts), seconds))
                launched += len(starts)
                waiting -= len(starts)
                bar.update(len(starts))
            # the next completion
            later = float(busy_until.min(where=busy_until > t, initial=np.inf))
            if admitted < n:
                later = min(later, arrives[admitted])
            if later == np.inf:
                # every machine free, jobs queued, nothing started: a policy bug
                if launched < n:
                    raise SchedoptError(f"policy {name} left jobs "
                                        f"{', '.join(np.asarray(trace.ids)[queued][:5])} "
                                        f"waiting with every machine free at t={t:.0f} s")
                break
            t = later
    bar.close()
    frame = _job_frame(trace, start, completion, machine)
    decided = pd.DataFrame(decisions, columns=["time_s", "queued", "candidates", "free_machines",
                                               "started", "solve_seconds"])
    busy = (np.bincount(machine, weights=frame["processing_s"].to_numpy(), minlength=K)
            if n else np.zeros(K))
    summary = queue_summary(frame, busy, trace.is_gpu, decided)
    return SimulationResult(name, frame, summary, None, config, DecisionKind.QUEUES,
                            decisions=decided, options=options)


def _contract_step(policy: Policy, options: Any, solver: Solver, decision: QueueDecision,
                   waiting: int) -> Starts:
    """The policy's decision through its contract: the head of each free machine's queue
    (`waiting`: how many jobs are queued)."""
    outcome = policy.solve(decision.problem(), options, solver)
    plan = outcome.decision
    if not isinstance(plan, MachineQueues):
        raise SchedoptError(f"policy {policy.name} (decision {DecisionKind.QUEUES.value}) "
                            f"returned {type(plan).__name__}, expected a MachineQueues")
    trace, queued, P = decision.trace, decision.queued, decision.trace.processing
    starts = _heads(plan, decision)
    taken = set()
    for m, k in starts:
        if not queued[m] or not math.isfinite(P[m, k]) or m in taken:
            raise SchedoptError(f"policy {policy.name} started job {trace.ids[m]} on "
                                f"{trace.machines[k]}, where it is not waiting or cannot run "
                                f"(or twice)")
        taken.add(m)
    # solve seconds are kept for policies that solved an optimization (they report a bound)
    seconds = outcome.solve_seconds if outcome.bound is not None else float("nan")
    return starts, int(outcome.details.get("candidates", waiting)), seconds


def _heads(plan: MachineQueues, decision: QueueDecision) -> list[tuple[int, int]]:
    """(job, machine) indices of the head of each free machine's queue in `plan`."""
    free = decision.free
    if isinstance(plan, QueueStarts) and plan.decision is decision:  # indices already
        return [(m, k) for m, k in plan.starts if free[k]]
    trace, heads = decision.trace, []
    for name, queue in plan.queues.items():
        k = trace.machine_index[name]
        if queue and free[k]:
            heads.append((trace.job_index[queue[0]], k))
    return heads


def _job_frame(trace: MachineTrace, start: np.ndarray, completion: np.ndarray,
               k: np.ndarray) -> pd.DataFrame:
    n = len(trace.ids)
    processing = trace.processing[np.arange(n), k] if n else np.zeros(0)
    fastest = trace.processing.min(axis=1) if n else np.zeros(0)
    jct = completion - trace.arrival
    machines = np.array(trace.machines, dtype=object)
    return pd.DataFrame({
        "job": list(trace.ids), "user": np.array(trace.users, dtype=object)[trace.user],
        "arrival_s": trace.arrival, "start_s": start, "completion_s": completion,
        "jct_s": jct, "wait_s": start - trace.arrival, "machine": machines[k],
        "device": np.where(trace.is_gpu[k], "gpu", "cpu"), "processing_s": processing,
        "fastest_processing_s": fastest, "slowdown": jct / fastest,
    }).set_index("job")
