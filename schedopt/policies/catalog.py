"""The built-in policies: which family module registers each name, and Gavel's policy names as
`gavel:` aliases.

A family module (`schedopt.policies.<family>.builtin`) holds a list POLICIES of entries; it is
imported only when one of its names is looked up (`load_family_of`) or every name is listed
(`load_all`), so `schedopt solve -p max_min_fairness` never imports SMD's or Chronus' code.
`BUILTINS` names every policy without importing anything; tests/test_registry.py checks it
against what the families really register, so a new policy cannot be left out.
"""

from __future__ import annotations

import importlib

from schedopt.core.registry import register_gavel_name, register_policy

_GAVEL = "schedopt.policies.gavel.builtin"
_BASELINES = "schedopt.policies.baselines.builtin"
_PACKED = "schedopt.policies.packed.builtin"
_ALLOX = "schedopt.policies.allox.builtin"
_CHRONUS = "schedopt.policies.chronus.builtin"
_SMD = "schedopt.policies.smd.builtin"
_EVENTS = "schedopt.policies.baselines.builtin_events"

# Another family: add its builtin module here (a list POLICIES of entries, see _register).
FAMILIES = (_GAVEL, _BASELINES, _PACKED, _ALLOX, _CHRONUS, _SMD, _EVENTS)

# Every built-in name -> its family module, in the order `schedopt policies` lists them.
BUILTINS: dict[str, str] = {
    **dict.fromkeys(("max_min_fairness", "max_min_fairness_agnostic", "min_makespan",
                     "min_makespan_agnostic", "finish_time_fairness",
                     "finish_time_fairness_agnostic", "max_total_throughput", "min_cost",
                     "water_filling", "water_filling_agnostic", "hierarchical_water_filling",
                     "hierarchical_water_filling_agnostic"), _GAVEL),
    **dict.fromkeys(("isolated", "proportional", "fifo", "fifo_agnostic"), _BASELINES),
    **dict.fromkeys(("max_min_fairness_packed", "water_filling_packed", "min_makespan_packed",
                     "fifo_packed", "finish_time_fairness_packed", "min_cost_packed"), _PACKED),
    "allox": _ALLOX,
    "chronus": _CHRONUS,
    **dict.fromkeys(("smd", "smd_exact", "smd_equal_split", "smd_greedy"), _SMD),
    **dict.fromkeys(("edf", "srtf", "sjf", "drf", "fifo_queue"), _EVENTS),
}

_loaded: set[str] = set()


def entry_name(entry) -> str:
    """The name a POLICIES entry registers: a Policy's own, or the tuple's second item."""
    return entry[1] if isinstance(entry, tuple) else entry.name


def _register(entry, taken) -> None:
    """An entry is a Policy (registered under its name) or (policy, name, option defaults).
    A name a user already took (register_policy(..., replace=True)) stays theirs."""
    if entry_name(entry) in taken:
        return
    if isinstance(entry, tuple):
        policy, name, defaults = entry
        register_policy(policy, name=name, defaults=defaults, builtin=True)
    else:
        register_policy(entry, defaults=getattr(entry, "defaults", None), builtin=True)


def load_family(module: str, taken=frozenset()) -> None:
    """Import the family `module` and register its policies (once); names in `taken` are
    skipped."""
    if module in _loaded:
        return
    _loaded.add(module)
    for entry in importlib.import_module(module).POLICIES:
        _register(entry, taken)


def load_family_of(name: str, taken=frozenset()) -> None:
    """Register the family of the built-in `name`; a name missing from BUILTINS loads every
    family (slower, never wrong: a policy left out of the table still resolves)."""
    module = BUILTINS.get(name)
    if module is not None:
        load_family(module, taken)
    else:
        load_all(taken)


def load_all(taken=frozenset()) -> None:
    """Register every family."""
    for module in FAMILIES:
        load_family(module, taken)


# Gavel's policy names (scheduler/utils.py get_available_policies) -> (our policy, options).
GAVEL_ALIASES: dict[str, tuple[str, dict]] = {
    "max_min_fairness": ("max_min_fairness_agnostic", {}),
    "max_min_fairness_perf": ("max_min_fairness", {}),
    "max_min_fairness_water_filling": ("water_filling_agnostic", {}),
    "max_min_fairness_water_filling_perf": ("water_filling", {}),
    "max_min_fairness_packed": ("max_min_fairness_packed", {}),
    "max_min_fairness_water_filling_packed": ("water_filling_packed", {}),
    "min_total_duration_packed": ("min_makespan_packed", {}),
    "fifo_packed": ("fifo_packed", {}),
    "finish_time_fairness_packed": ("finish_time_fairness_packed", {}),
    "max_sum_throughput_normalized_by_cost_packed_SLOs": ("min_cost_packed", {"slos": True}),
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
