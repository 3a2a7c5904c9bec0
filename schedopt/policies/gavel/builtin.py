"""The gavel family's built-in policies, as the registry lists them: (policy, name, defaults)."""

from __future__ import annotations

from schedopt.policies.gavel import lp as gavel
from schedopt.policies.gavel import water_filling
from schedopt.policies.legacy import LegacyPolicy


POLICIES = [
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
