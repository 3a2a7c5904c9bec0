"""The gavel family's built-in policies, as the registry lists them."""

from __future__ import annotations

from schedopt.policies.gavel.policies import (FinishTimeFairness, HierarchicalWaterFilling,
                                              MaxMinFairness, MaxTotalThroughput, MinCost,
                                              MinMakespan, WaterFilling)

POLICIES = [
    MaxMinFairness(),
    MaxMinFairness.variant(
        "max_min_fairness_agnostic", "Max-min fairness of time shares, blind to GPU speed (LAS).",
        "min over jobs of s*(time share)/weight (dimensionless)", agnostic=True),
    MinMakespan(),
    MinMakespan.variant(
        "min_makespan_agnostic", "Makespan LP that treats every GPU type as the job's fastest.",
        "makespan in seconds under that assumption", agnostic=True),
    FinishTimeFairness(),
    FinishTimeFairness.variant(
        "finish_time_fairness_agnostic",
        "Finish-time fairness treating every GPU type as the fastest.",
        "max over jobs of rho under that assumption", agnostic=True),
    MaxTotalThroughput(),
    MinCost(),
    WaterFilling(),
    WaterFilling.variant(
        "water_filling_agnostic", "Water filling of time shares, blind to GPU speed.",
        "min over jobs of s*(time share)/weight (dimensionless); each job's in job_levels",
        agnostic=True),
    HierarchicalWaterFilling(),
    HierarchicalWaterFilling.variant(
        "hierarchical_water_filling_agnostic",
        "Hierarchical water filling of time shares, blind to GPU speed.",
        "first water level, as hierarchical_water_filling's with s*(time share) "
        "(dimensionless)", agnostic=True),
]
