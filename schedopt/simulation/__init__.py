"""Trace-driven simulation under any policy: jobs arrive, the policy decides, jobs progress and
leave. One entry point for every decision kind:

    result = simulate(load_instance("trace.json"), "max_min_fairness")
    result.jobs      # DataFrame, one row per job (arrival, completion, jct, ...)
    result.summary   # dict: average/percentile JCT, makespan, utilization, ...

The loop depends on the kind of decision the policy emits (`policy.decision`):
- ALLOCATION (time fractions X, Gavel's policies, `fifo`, user LPs): rounds on the cluster's
  topology (`rounds_loop`, schedopt/mechanism/rounds.py), or Gavel's reference conventions with
  `config.mode == "gavel"` (`gavel_mode`); the policy is re-solved when the job set changes.
- LEASES (chronus, edf, srtf): lease by lease on one GPU pool (`leases_loop`).
- QUEUES (allox, sjf, drf, fifo_queue): non-preemptive jobs on GPU and CPU machines, decided
  at arrivals and completions (`queues_loop`).

A trace is an instance whose jobs carry future `arrival_time`s (seconds) and `total_steps`.
Times are seconds of simulated time; throughputs steps/s. Metrics: `schedopt.simulation.metrics`.
A long run of any policy can write checkpoints and be resumed from one:

    plan = CheckpointPlan(Path("run.ckpt"), every_events=50)  # every 50 rounds
    simulate(trace, "max_min_fairness", checkpoint=plan)
    simulate(trace, "max_min_fairness", resume="run.ckpt")  # after an interrupt: the same result
"""

from __future__ import annotations

import os

from schedopt.core.decisions import DecisionKind
from schedopt.core.policy import Policy
from schedopt.core.registry import resolve
from schedopt.errors import PolicyError
from schedopt.instance.model import Instance
from schedopt.simulation.checkpoint import (CheckpointError, CheckpointPlan, Checkpoints,
                                            options_fingerprint, trace_fingerprint)
from schedopt.simulation.common import SimulationConfig, SimulationResult, policy_name

__all__ = ["simulate", "SimulationConfig", "SimulationResult", "CheckpointPlan",
           "CheckpointError"]


def simulate(trace: Instance, policy: str | Policy, config: SimulationConfig = SimulationConfig(),
             progress: bool = False, checkpoint: CheckpointPlan | None = None,
             resume: str | os.PathLike | None = None) -> SimulationResult:
    """Replay `trace` under `policy`: a name `schedopt policies` lists, gavel:NAME,
    MODULE:NAME, or a Policy object. `config.policy_options` are the policy's options (e.g.
    lease_seconds for chronus, alpha for allox); `progress` shows a bar over finished jobs.

    Every run can be checkpointed: `checkpoint` says where and how often the run's state is
    written (every N rounds, lease boundaries or queue events, and when the run is
    interrupted); `resume`, a checkpoint file of the same trace, policy and config, continues that run to the result an
    uninterrupted run gives (schedopt.simulation.checkpoint)."""
    chosen, fixed = resolve(policy) if isinstance(policy, str) else (policy, {})
    if not isinstance(chosen, Policy):
        raise PolicyError(f"simulate expects a policy name or a Policy, got "
                          f"{type(chosen).__name__}")
    kind = chosen.decision
    if kind == DecisionKind.ALLOCATION:
        from schedopt.simulation.gavel_mode import run_gavel
        from schedopt.simulation.rounds_loop import run_default

        run = run_gavel if config.mode == "gavel" else run_default
        if checkpoint is None and resume is None:
            return run(trace, policy, config, progress)
        return run(trace, policy, config, progress,
                   _checkpoints(f"rounds/{config.mode}", trace, policy, fixed, config,
                                checkpoint, resume))
    options = chosen.parse_options({**fixed, **config.policy_options})
    if config.partitions is not None:
        raise PolicyError(f"POP partitions apply to allocation policies in simulation; "
                          f"{chosen.name} decides {kind.value}")
    name = policy_name(policy)
    if kind == DecisionKind.LEASES:
        from schedopt.simulation.leases_loop import run_leases

        checkpoints = None if checkpoint is None and resume is None else _checkpoints(
            "leases", trace, policy, fixed, config, checkpoint, resume)
        return run_leases(trace, chosen, options, name, config, progress, checkpoints)
    if kind == DecisionKind.QUEUES:
        from schedopt.policies.baselines.queues import MachineTrace
        from schedopt.simulation.queues_loop import run_queues

        checkpoints = None if checkpoint is None and resume is None else _checkpoints(
            "queues", trace, policy, fixed, config, checkpoint, resume)
        return run_queues(MachineTrace.from_instance(trace), chosen, options, name, config,
                          progress, checkpoints)
    raise PolicyError(f"policy {chosen.name} decides {kind.value}, which the simulator does not "
                      f"replay (it replays allocations, leases and queues)")


def _checkpoints(loop: str, trace: Instance, policy: str | Policy, fixed: dict,
                 config: SimulationConfig, plan: CheckpointPlan | None,
                 resume: str | os.PathLike | None) -> Checkpoints:
    return Checkpoints(loop, trace_fingerprint(trace),
                       options_fingerprint(policy_name(policy), fixed, config), plan, resume)
