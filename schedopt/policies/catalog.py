"""The built-in policies, registered with `schedopt.core.registry`, and Gavel's policy names as
`gavel:` aliases."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from schedopt.backends import SolveOptions
from schedopt.core.decisions import DecisionKind
from schedopt.core.outcome import Outcome
from schedopt.core.policy import Policy
from schedopt.core.problem import ThroughputProblem
from schedopt.core.registry import register_gavel_name, register_policy, registered, resolve  # noqa: F401
from schedopt.errors import PolicyError
from schedopt.policies.allox import matching as allox
from schedopt.policies.baselines import throughput as baselines
from schedopt.policies.chronus import lease_milp as chronus
from schedopt.policies.chronus.policy import chronus_policy
from schedopt.policies.gavel import lp as gavel
from schedopt.policies.gavel import water_filling
from schedopt.policies.packed.master import packed_policy
from schedopt.policies.smd import exact as smd_exact
from schedopt.policies.smd import policy as smd_policy

_POP_PARAMETERS = ("partitions", "partition_seed")  # set through solve(partitions=...)
_DECISIONS = {"allox": DecisionKind.QUEUES, "chronus": DecisionKind.LEASES,
              "smd": DecisionKind.PS_CONFIGURATION}


class LegacyPolicy(Policy):
    """A policy still written as a bare function (being ported to its own Policy class):
    `run(problem or instance, solver name, SolveOptions, **options) -> Outcome`."""

    def __init__(self, name: str, summary: str, objective: str, run: Callable[..., Outcome],
                 defaults: dict | None = None, solver: str = "highs", reads_instance: bool = False,
                 evaluate: Callable[..., float] | None = None):
        self.name = name
        self.summary = summary
        self.objective_doc = objective
        self.run = run
        self.defaults = dict(defaults or {})
        self.default_solver = solver
        self.reads_instance = reads_instance
        self.instance_data = "machines, leases or parameter servers" if reads_instance else None
        self.evaluate = evaluate
        self.decision = _DECISIONS.get(name.split("_")[0], DecisionKind.ALLOCATION)

    @property
    def option_names(self) -> tuple[str, ...]:
        params = inspect.signature(self.run).parameters
        return tuple(p for p in params if p not in ("problem", "instance", "solver", "options")
                     and p not in _POP_PARAMETERS)

    @property
    def partitions_itself(self) -> bool:
        return "partitions" in inspect.signature(self.run).parameters

    def parse_options(self, values: dict) -> dict:
        unknown = set(values) - set(self.option_names)
        if unknown:
            raise PolicyError(f"policy {self.name} has no option(s) {', '.join(sorted(unknown))}; "
                              f"it takes: {', '.join(self.option_names) or 'none'}")
        return dict(values)

    def solve(self, problem, options, solver) -> Outcome:
        data = problem.instance if self.reads_instance else problem
        return self.run(data, solver.name, solver.settings, **options)

    def objective(self, problem, allocation, options):
        return None if self.evaluate is None else self.evaluate(problem, allocation, **options)


def _fifo(problem: ThroughputProblem, solver: str, options: SolveOptions, agnostic: bool = False,
          seed: int = 0) -> Outcome:
    order = np.argsort(-problem.time_since_arrival, kind="stable")  # earliest arrival first
    return baselines.fifo(problem, order=order, agnostic=agnostic, seed=seed)


def _closed_form(fn):
    def run(problem: ThroughputProblem, solver: str, options: SolveOptions) -> Outcome:
        return fn(problem)
    return run


_POLICIES = [
    LegacyPolicy("max_min_fairness", "Heterogeneity-aware max-min fairness over normalized throughputs (Gavel).",
           "min over jobs of s*throughput/(weight*equal-share throughput) (dimensionless)",
           gavel.max_min_fairness, solver=gavel.DECOMPOSITION, evaluate=gavel.max_min_objective),
    LegacyPolicy("max_min_fairness_agnostic", "Max-min fairness of time shares, blind to GPU speed (LAS).",
           "min over jobs of s*(time share)/weight (dimensionless)",
           gavel.max_min_fairness, {"agnostic": True}, solver=gavel.DECOMPOSITION,
           evaluate=gavel.max_min_objective),
    LegacyPolicy("min_makespan", "Minimize the time until every job finishes (exact single LP).",
           "makespan in seconds", gavel.min_makespan, solver=gavel.DECOMPOSITION,
           evaluate=gavel.makespan_objective),
    LegacyPolicy("min_makespan_agnostic", "Makespan LP that treats every GPU type as the job's fastest.",
           "makespan in seconds under that assumption", gavel.min_makespan, {"agnostic": True},
           solver=gavel.DECOMPOSITION, evaluate=gavel.makespan_objective),
    LegacyPolicy("finish_time_fairness", "Minimize the worst finish-time ratio rho (Themis), exact bisection.",
           "max over jobs of rho (dimensionless)", gavel.finish_time_fairness,
           evaluate=gavel.finish_time_objective),
    LegacyPolicy("finish_time_fairness_agnostic", "Finish-time fairness treating every GPU type as the fastest.",
           "max over jobs of rho under that assumption", gavel.finish_time_fairness,
           {"agnostic": True}, evaluate=gavel.finish_time_objective),
    LegacyPolicy("max_total_throughput", "Maximize the sum of jobs' effective throughputs (Gavel).",
           "total steps/s", gavel.max_total_throughput, solver="highs-ipm",
           evaluate=gavel.total_throughput_objective),
    LegacyPolicy("min_cost", "Maximize throughput per dollar, meeting deadlines as SLOs where given.",
           "sum of steps/s divided by $/GPU-hour", gavel.min_cost, solver="highs-ipm",
           evaluate=gavel.cost_objective),
    LegacyPolicy("isolated", "Baseline: every job gets 1/M of each GPU type.", "none",
           _closed_form(baselines.isolated)),
    LegacyPolicy("proportional", "Baseline: equal shares proportional to each type's GPU count.", "none",
           _closed_form(baselines.proportional)),
    LegacyPolicy("fifo", "Baseline: arrival order, each job on its fastest type with room.", "none", _fifo),
    LegacyPolicy("fifo_agnostic", "Baseline: arrival order, each job on a random type with room.", "none",
           _fifo, {"agnostic": True}),
    LegacyPolicy("water_filling", "Lexicographic max-min fairness (water filling) over normalized "
           "throughputs (Gavel).", "min over jobs of s*throughput/(weight*equal-share "
           "throughput) (dimensionless); each job's in job_levels",
           water_filling.water_filling, solver=water_filling.DECOMPOSITION,
           evaluate=gavel.max_min_objective),
    LegacyPolicy("water_filling_agnostic", "Water filling of time shares, blind to GPU speed.",
           "min over jobs of s*(time share)/weight (dimensionless); each job's in job_levels",
           water_filling.water_filling, {"agnostic": True},
           solver=water_filling.DECOMPOSITION, evaluate=gavel.max_min_objective),
    LegacyPolicy("hierarchical_water_filling", "Water filling among users by user weight, then among "
           "each user's jobs by job weight (Gavel's multi-level fairness).",
           "first water level: min over jobs of s*throughput/equal-share throughput divided by "
           "(user weight * job weight / user's total job weight) (dimensionless)",
           water_filling.hierarchical_water_filling, solver=water_filling.DECOMPOSITION,
           evaluate=water_filling.hierarchical_objective),
    LegacyPolicy("hierarchical_water_filling_agnostic", "Hierarchical water filling of time shares, "
           "blind to GPU speed.", "first water level, as hierarchical_water_filling's with "
           "s*(time share) (dimensionless)", water_filling.hierarchical_water_filling,
           {"agnostic": True}, solver=water_filling.DECOMPOSITION,
           evaluate=water_filling.hierarchical_objective),
]

POLICIES: dict[str, LegacyPolicy] = {p.name: p for p in _POLICIES}

# Policies that read the whole Instance (`reads_instance`: run(instance, solver, options,
# **opts)): most decide something other than a time-fraction allocation X (Result.X = None,
# the decision in Result.details); max_min_fairness_packed needs the co-location table and
# returns X plus its pairs. Kept apart from POLICIES, whose every entry solves a
# ThroughputProblem; `resolve` and `schedopt policies` see both.
SCHEDULE_POLICIES: dict[str, LegacyPolicy] = {p.name: p for p in [
    LegacyPolicy("max_min_fairness_packed", "Max-min fairness with space sharing: pairs of jobs "
           "co-located on the same GPUs (co-location table), exact by column generation.",
           "min over jobs of s*throughput/(weight*equal-share throughput), throughput counting "
           "paired time (dimensionless)", packed_policy, reads_instance=True),
    LegacyPolicy("allox", "Whole jobs on single GPUs and CPU machines, min total completion time (AlloX "
           "matching; option alpha).", "total completion time, sum of (completion - arrival), "
           "seconds", allox.allox_policy, solver=allox.DEFAULT_METHOD, reads_instance=True),
    LegacyPolicy("chronus", "Deadline-aware leases (Chronus): admission control, lease MILP for SLO jobs, "
           "shortest remaining service for the rest, on one GPU type.",
           "sum of chosen deadline-option values + sigma x (GPUs of SLO jobs in the next lease) / "
           "pool size", chronus_policy, solver=chronus.DEFAULT_SOLVER, reads_instance=True),
    LegacyPolicy("smd", "Parameter-server jobs: workers and PSs per job and their placement, min total "
           "completion time (SMD: sum-of-ratios + knapsack decomposition; option epsilon).",
           "sum of completion times, seconds", smd_policy.smd_policy,
           solver=smd_policy.HEURISTIC, reads_instance=True),
    LegacyPolicy("smd_exact", "Parameter-server jobs, exact: MILP over (w, p) configuration binaries "
           "with placement.", "sum of completion times, seconds", smd_policy.smd_exact_policy,
           solver=smd_exact.DEFAULT_SOLVER, reads_instance=True),
    LegacyPolicy("smd_equal_split", "Parameter-server baseline: every job its fastest (w, p) within "
           "1/n of every resource.", "sum of completion times, seconds",
           smd_policy.equal_split_policy, solver=smd_policy.HEURISTIC, reads_instance=True),
    LegacyPolicy("smd_greedy", "Parameter-server baseline (Optimus-style): add the worker or PS with "
           "the largest marginal gain per dominant share.", "sum of completion times, seconds",
           smd_policy.greedy_policy, solver=smd_policy.HEURISTIC, reads_instance=True),
]}

REGISTRY: dict[str, LegacyPolicy] = {**POLICIES, **SCHEDULE_POLICIES}
for _policy in REGISTRY.values():
    register_policy(_policy, defaults=_policy.defaults, builtin=True)

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


for _gavel_name, (_ours, _options) in GAVEL_ALIASES.items():
    register_gavel_name(_gavel_name, _ours, _options)
