"""The built-in policies: each family's `builtin.POLICIES` registered with
`schedopt.core.registry` (imported on the first lookup), and Gavel's policy names as `gavel:`
aliases."""

from __future__ import annotations

from schedopt.core.registry import register_gavel_name, register_policy
from schedopt.policies.allox import builtin as allox
from schedopt.policies.baselines import builtin as baselines
from schedopt.policies.baselines import builtin_events as baseline_events
from schedopt.policies.chronus import builtin as chronus
from schedopt.policies.gavel import builtin as gavel
from schedopt.policies.packed import builtin as packed
from schedopt.policies.smd import builtin as smd

# Another family: add its builtin module here (a list POLICIES of entries, see _register).
FAMILIES = (gavel, baselines, packed, allox, chronus, smd, baseline_events)

def _register(entry) -> None:
    """An entry is a Policy (registered under its name) or (policy, name, option defaults)."""
    if isinstance(entry, tuple):
        policy, name, defaults = entry
        register_policy(policy, name=name, defaults=defaults, builtin=True)
    else:
        register_policy(entry, defaults=getattr(entry, "defaults", None), builtin=True)


for _family in FAMILIES:
    for _entry in _family.POLICIES:
        _register(_entry)

# Gavel's policy names (scheduler/utils.py get_available_policies) -> (our policy, options).
GAVEL_ALIASES: dict[str, tuple[str, dict]] = {
    "max_min_fairness": ("max_min_fairness_agnostic", {}),
    "max_min_fairness_perf": ("max_min_fairness", {}),
    "max_min_fairness_water_filling": ("water_filling_agnostic", {}),
    "max_min_fairness_water_filling_perf": ("water_filling", {}),
    "max_min_fairness_packed": ("max_min_fairness_packed", {}),
    "max_min_fairness_water_filling_packed": ("water_filling_packed", {}),
    "min_total_duration_packed": ("min_makespan_packed", {}),
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
