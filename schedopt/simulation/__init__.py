"""Trace-driven, round-based simulation: jobs arrive, the policy re-solves when the job set
changes, the round mechanism places jobs on GPUs, jobs progress at their throughput and leave.

    result = simulate(load_instance("trace.json"), "max_min_fairness")
    result.jobs      # DataFrame, one row per job (arrival, completion, jct, rho, ...)
    result.summary   # dict: average/percentile JCT, makespan, rho, utilization, cost, ...

A trace is an instance whose jobs carry future `arrival_time`s (seconds) and `total_steps`.
Times are seconds of simulated time; throughputs steps/s.
"""

from __future__ import annotations

from schedopt.instance.model import Instance
from schedopt.simulation.common import SimulationConfig, SimulationResult
from schedopt.simulation.engine import run_default
from schedopt.simulation.gavel_mode import run_gavel

__all__ = ["simulate", "SimulationConfig", "SimulationResult"]


def simulate(trace: Instance, policy: str, config: SimulationConfig = SimulationConfig(),
             progress: bool = False) -> SimulationResult:
    """Replay `trace` under `policy` (any name `schedopt policies` lists, or gavel:NAME)."""
    run = run_gavel if config.mode == "gavel" else run_default
    return run(trace, policy, config, progress)
