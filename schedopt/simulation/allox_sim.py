"""The AlloX simulator's former entry points, kept for scripts and notebooks: `simulate_allox`
runs a queue policy (allox, sjf, drf, fifo_queue or any policy whose decision is QUEUES) through
`schedopt.simulation.queues_loop`; `alpha_sweep` runs allox at several fairness knobs.

    result = simulate_allox(load_instance("instances/allox-40.json"), "allox", alpha=1.0)
    result.jobs       # DataFrame, one row per job: arrival_s, start_s, completion_s, jct_s, machine
    result.summary    # dict: average/p90 JCT, makespan, per-user JCT, Jain index, utilization
    sweep = alpha_sweep(instance, [0.25, 0.5, 0.75, 1.0])   # average JCT and fairness per alpha

summary keys (seconds): see `schedopt.simulation.metrics.queue_summary`.
"""

from __future__ import annotations

import warnings

import pandas as pd

from schedopt.core.decisions import DecisionKind
from schedopt.errors import SchedoptError
from schedopt.instance.model import Instance
from schedopt.policies.baselines.queues import MachineTrace
from schedopt.simulation.common import (SimulationConfig, SimulationResult, policy_deciding,
                                        progress_bar)
from schedopt.simulation.metrics import jain_index, share_fairness
from schedopt.simulation.queues_loop import run_queues

__all__ = ["SCHEDULERS", "AlloxSimulationResult", "AlloxTrace", "alpha_sweep", "jain_index",
           "share_fairness", "simulate_allox", "queue_policy"]

SCHEDULERS = ("allox", "sjf", "fifo_queue", "drf")
AlloxTrace = MachineTrace
AlloxSimulationResult = SimulationResult
RENAMED = {"fifo": "fifo_queue"}  # the AlloX simulator's scheduler names that became policies


def queue_policy(name: str) -> str:
    """The queue policy a scheduler name stands for: `fifo` (deprecated here: it is the
    time-fraction baseline) maps to `fifo_queue` with a DeprecationWarning."""
    if name in RENAMED:
        warnings.warn(f"the AlloX scheduler {name!r} is now the policy {RENAMED[name]!r} "
                      f"({name!r} names the time-fraction baseline)", DeprecationWarning,
                      stacklevel=3)
        return RENAMED[name]
    return name


def simulate_allox(instance: Instance | MachineTrace, scheduler: str = "allox",
                   alpha: float = 1.0, progress: bool = False) -> SimulationResult:
    """Replay the jobs of `instance` (arrival_time, user; GPU time total_steps / throughput, CPU
    time performance.cpu_time) on its GPUs and CPU machines under the queue policy `scheduler`.
    `alpha` in (0, 1] is AlloX's fairness knob (only `allox` uses it). `progress` shows a bar
    over started jobs."""
    name = queue_policy(scheduler)
    policy = policy_deciding(name, DecisionKind.QUEUES,
                             f"unknown AlloX scheduler {scheduler!r}; expected a queue policy "
                             f"such as {', '.join(SCHEDULERS)}")
    if not (isinstance(alpha, (int, float)) and 0.0 < alpha <= 1.0):
        raise SchedoptError(f"alpha must be in (0, 1], got {alpha!r}")
    options = policy.parse_options({"alpha": float(alpha)} if "alpha" in policy.option_names
                                   else {})
    trace = instance if isinstance(instance, MachineTrace) else MachineTrace.from_instance(instance)
    return run_queues(trace, policy, options, name, SimulationConfig(), progress)


def alpha_sweep(instance: Instance | MachineTrace, alphas, progress: bool = False) -> pd.DataFrame:
    """Online AlloX at each fairness knob in `alphas` (each in (0, 1]): one row per alpha with
    columns alpha, average_jct_s, p90_jct_s, makespan_s, max_user_average_jct_s, jain_share
    and jain_user_jct (Jain's indices, see `schedopt.simulation.metrics.queue_summary`)."""
    alphas = [float(a) for a in alphas]
    if not alphas:
        raise SchedoptError("give at least one alpha in (0, 1]")
    trace = instance if isinstance(instance, MachineTrace) else MachineTrace.from_instance(instance)
    columns = ["average_jct_s", "p90_jct_s", "makespan_s", "max_user_average_jct_s",
               "jain_share", "jain_user_jct"]
    rows = []
    bar = progress_bar(len(alphas), progress)
    for alpha in alphas:
        summary = simulate_allox(trace, "allox", alpha).summary
        rows.append({"alpha": alpha, **{key: summary[key] for key in columns}})
        bar.update(1)
    bar.close()
    return pd.DataFrame(rows)
