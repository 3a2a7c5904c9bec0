"""The policy registry: name -> formulation, with Gavel's policy names as `gavel:` aliases."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from schedopt.backends import SolveOptions
from schedopt.errors import PolicyError
from schedopt.formulations import allox, baselines, chronus, gavel
from schedopt.formulations.chronus_policy import chronus_policy
from schedopt.formulations import smd_exact, smd_policy
from schedopt.formulations import water_filling
from schedopt.formulations.packed import packed_policy
from schedopt.formulations.blocks import Outcome
from schedopt.formulations.inputs import ThroughputProblem


_POP_PARAMETERS = ("partitions", "partition_seed")  # set through solve(partitions=...)


@dataclass(frozen=True)
class Policy:
    """A named policy. `objective` says what Result.objective means (with units); `run` takes
    (problem, solver, options, **policy_options) and returns an Outcome. `solver` is the
    default backend, picked by measurement (benchmarks/README.md). `evaluate(problem, X,
    **policy_options)` gives the objective of any allocation X (None: the policy has none);
    POP reports the coalesced allocation's objective with it."""

    name: str
    summary: str
    objective: str
    run: Callable[..., Outcome]
    defaults: dict = field(default_factory=dict)
    solver: str = "highs"
    reads_instance: bool = False
    evaluate: Callable[..., float] | None = None

    @property
    def option_names(self) -> tuple[str, ...]:
        params = inspect.signature(self.run).parameters
        return tuple(p for p in params if p not in ("problem", "instance", "solver", "options")
                     and p not in _POP_PARAMETERS)

    @property
    def partitions_itself(self) -> bool:
        """An instance-reading policy that runs POP on its own (`partitions` parameter)."""
        return "partitions" in inspect.signature(self.run).parameters


def _fifo(problem: ThroughputProblem, solver: str, options: SolveOptions, agnostic: bool = False,
          seed: int = 0) -> Outcome:
    order = np.argsort(-problem.time_since_arrival, kind="stable")  # earliest arrival first
    return baselines.fifo(problem, order=order, agnostic=agnostic, seed=seed)


def _closed_form(fn):
    def run(problem: ThroughputProblem, solver: str, options: SolveOptions) -> Outcome:
        return fn(problem)
    return run


_POLICIES = [
    Policy("max_min_fairness", "Heterogeneity-aware max-min fairness over normalized throughputs (Gavel).",
           "min over jobs of s*throughput/(weight*equal-share throughput) (dimensionless)",
           gavel.max_min_fairness, solver=gavel.DECOMPOSITION, evaluate=gavel.max_min_objective),
    Policy("max_min_fairness_agnostic", "Max-min fairness of time shares, blind to GPU speed (LAS).",
           "min over jobs of s*(time share)/weight (dimensionless)",
           gavel.max_min_fairness, {"agnostic": True}, solver=gavel.DECOMPOSITION,
           evaluate=gavel.max_min_objective),
    Policy("min_makespan", "Minimize the time until every job finishes (exact single LP).",
           "makespan in seconds", gavel.min_makespan, solver=gavel.DECOMPOSITION,
           evaluate=gavel.makespan_objective),
    Policy("min_makespan_agnostic", "Makespan LP that treats every GPU type as the job's fastest.",
           "makespan in seconds under that assumption", gavel.min_makespan, {"agnostic": True},
           solver=gavel.DECOMPOSITION, evaluate=gavel.makespan_objective),
    Policy("finish_time_fairness", "Minimize the worst finish-time ratio rho (Themis), exact bisection.",
           "max over jobs of rho (dimensionless)", gavel.finish_time_fairness,
           evaluate=gavel.finish_time_objective),
    Policy("finish_time_fairness_agnostic", "Finish-time fairness treating every GPU type as the fastest.",
           "max over jobs of rho under that assumption", gavel.finish_time_fairness,
           {"agnostic": True}, evaluate=gavel.finish_time_objective),
    Policy("max_total_throughput", "Maximize the sum of jobs' effective throughputs (Gavel).",
           "total steps/s", gavel.max_total_throughput, solver="highs-ipm",
           evaluate=gavel.total_throughput_objective),
    Policy("min_cost", "Maximize throughput per dollar, meeting deadlines as SLOs where given.",
           "sum of steps/s divided by $/GPU-hour", gavel.min_cost, solver="highs-ipm",
           evaluate=gavel.cost_objective),
    Policy("isolated", "Baseline: every job gets 1/M of each GPU type.", "none",
           _closed_form(baselines.isolated)),
    Policy("proportional", "Baseline: equal shares proportional to each type's GPU count.", "none",
           _closed_form(baselines.proportional)),
    Policy("fifo", "Baseline: arrival order, each job on its fastest type with room.", "none", _fifo),
    Policy("fifo_agnostic", "Baseline: arrival order, each job on a random type with room.", "none",
           _fifo, {"agnostic": True}),
    Policy("water_filling", "Lexicographic max-min fairness (water filling) over normalized "
           "throughputs (Gavel).", "min over jobs of s*throughput/(weight*equal-share "
           "throughput) (dimensionless); each job's in job_levels",
           water_filling.water_filling, solver=water_filling.DECOMPOSITION,
           evaluate=gavel.max_min_objective),
    Policy("water_filling_agnostic", "Water filling of time shares, blind to GPU speed.",
           "min over jobs of s*(time share)/weight (dimensionless); each job's in job_levels",
           water_filling.water_filling, {"agnostic": True},
           solver=water_filling.DECOMPOSITION, evaluate=gavel.max_min_objective),
    Policy("hierarchical_water_filling", "Water filling among users by user weight, then among "
           "each user's jobs by job weight (Gavel's multi-level fairness).",
           "first water level: min over jobs of s*throughput/equal-share throughput divided by "
           "(user weight * job weight / user's total job weight) (dimensionless)",
           water_filling.hierarchical_water_filling, solver=water_filling.DECOMPOSITION,
           evaluate=water_filling.hierarchical_objective),
    Policy("hierarchical_water_filling_agnostic", "Hierarchical water filling of time shares, "
           "blind to GPU speed.", "first water level, as hierarchical_water_filling's with "
           "s*(time share) (dimensionless)", water_filling.hierarchical_water_filling,
           {"agnostic": True}, solver=water_filling.DECOMPOSITION,
           evaluate=water_filling.hierarchical_objective),
]

POLICIES: dict[str, Policy] = {p.name: p for p in _POLICIES}

# Policies that read the whole Instance (`reads_instance`: run(instance, solver, options,
# **opts)): most decide something other than a time-fraction allocation X (Result.X = None,
# the decision in Result.details); max_min_fairness_packed needs the co-location table and
# returns X plus its pairs. Kept apart from POLICIES, whose every entry solves a
# ThroughputProblem; `resolve` and `schedopt policies` see both.
SCHEDULE_POLICIES: dict[str, Policy] = {p.name: p for p in [
    Policy("max_min_fairness_packed", "Max-min fairness with space sharing: pairs of jobs "
           "co-located on the same GPUs (co-location table), exact by column generation.",
           "min over jobs of s*throughput/(weight*equal-share throughput), throughput counting "
           "paired time (dimensionless)", packed_policy, reads_instance=True),
    Policy("allox", "Whole jobs on single GPUs and CPU machines, min total completion time (AlloX "
           "matching; option alpha).", "total completion time, sum of (completion - arrival), "
           "seconds", allox.allox_policy, solver=allox.DEFAULT_METHOD, reads_instance=True),
    Policy("chronus", "Deadline-aware leases (Chronus): admission control, lease MILP for SLO jobs, "
           "shortest remaining service for the rest, on one GPU type.",
           "sum of chosen deadline-option values + sigma x (GPUs of SLO jobs in the next lease) / "
           "pool size", chronus_policy, solver=chronus.DEFAULT_SOLVER, reads_instance=True),
    Policy("smd", "Parameter-server jobs: workers and PSs per job and their placement, min total "
           "completion time (SMD: sum-of-ratios + knapsack decomposition; option epsilon).",
           "sum of completion times, seconds", smd_policy.smd_policy,
           solver=smd_policy.HEURISTIC, reads_instance=True),
    Policy("smd_exact", "Parameter-server jobs, exact: MILP over (w, p) configuration binaries "
           "with placement.", "sum of completion times, seconds", smd_policy.smd_exact_policy,
           solver=smd_exact.DEFAULT_SOLVER, reads_instance=True),
    Policy("smd_equal_split", "Parameter-server baseline: every job its fastest (w, p) within "
           "1/n of every resource.", "sum of completion times, seconds",
           smd_policy.equal_split_policy, solver=smd_policy.HEURISTIC, reads_instance=True),
    Policy("smd_greedy", "Parameter-server baseline (Optimus-style): add the worker or PS with "
           "the largest marginal gain per dominant share.", "sum of completion times, seconds",
           smd_policy.greedy_policy, solver=smd_policy.HEURISTIC, reads_instance=True),
]}

REGISTRY: dict[str, Policy] = {**POLICIES, **SCHEDULE_POLICIES}

# Gavel's policy names (scheduler/utils.py get_available_policies) -> (our policy, options).
GAVEL_ALIASES: dict[str, tuple[str, dict]] = {
    "max_min_fairness": ("max_min_fairness_agnostic", {}),
    "max_min_fairness_perf": ("max_min_fairness", {}),
    "max_min_fairness_water_filling": ("water_filling_agnostic", {}),
    "max_min_fairness_water_filling_perf": ("water_filling", {}),
    "max_min_fairness_packed": ("max_min_fairness_packed", {}),
    "min_total_duration": ("min_makespan_agnostic", {}),
    "min_total_duration_perf": ("min_makespan", {}),
    "finish_time_fairness": ("finish_time_fairness_agnostic", {}),
    "finish_time_fairness_perf": ("finish_time_fairness", {}),
    "max_sum_throughput_perf": ("max_total_throughput", {}),
    "max_sum_throughput_normalized_by_cost_perf": ("min_cost", {"slos": False}),
    "max_sum_throughput_normalized_by_cost_perf_SLOs": ("min_cost", {"slos": True}),
    "isolated": ("isolated", {}),
    "fifo": ("fifo_agnostic", {}),
    "fifo_perf": ("fifo", {}),
}


def resolve(name: str) -> tuple[Policy, dict]:
    """(policy, option overrides) for a policy name or a `gavel:NAME` alias."""
    options: dict = {}
    key = name.strip()
    if key.startswith("gavel:"):
        gavel_name = key[len("gavel:"):]
        if gavel_name not in GAVEL_ALIASES:
            raise PolicyError(f"unknown Gavel policy {gavel_name!r}; supported: "
                              f"{', '.join(sorted(GAVEL_ALIASES))}")
        key, options = GAVEL_ALIASES[gavel_name]
    if key not in REGISTRY:
        raise PolicyError(f"unknown policy {name!r}; run `schedopt policies` for the list")
    policy = REGISTRY[key]
    return policy, {**policy.defaults, **options}
