"""schedopt: GPU-cluster scheduling policies as mathematical programs, solved exactly.

    import schedopt
    result = schedopt.solve(schedopt.load_instance("instances/tiny.json"), "max_min_fairness")

Your own policy: `schedopt.policy` (a decorated function that builds a `Model`), a
`ModelPolicy` subclass, or any `Policy`, made visible with `register_policy` (README, "Write
your own policy"; examples/custom_policy.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Public name -> the module that defines it. Imported on first use, so that `schedopt solve`
# (whose modules live in this package) loads only what its policy and backend need.
_PUBLIC = {
    "solve": "schedopt.api",
    "load_instance": "schedopt.instance",
    "save_instance": "schedopt.instance",
    "Result": "schedopt.result",
    "ThroughputProblem": "schedopt.core.problem",
    "Status": "schedopt.backends",
    "SolveOptions": "schedopt.backends",
    "SchedoptError": "schedopt.errors",
    "InstanceError": "schedopt.errors",
    "PolicyError": "schedopt.errors",
    "SolveError": "schedopt.errors",
    "Policy": "schedopt.core.policy",
    "ModelPolicy": "schedopt.modeling.policy",
    "policy": "schedopt.modeling.policy",
    "register_policy": "schedopt.core.registry",
    "allocation_variable": "schedopt.modeling.policy",
    "Model": "schedopt.modeling",
    "Outcome": "schedopt.core.outcome",
    "Capability": "schedopt.core.capabilities",
    "DecisionKind": "schedopt.core.decisions",
}

__all__ = list(_PUBLIC)

if TYPE_CHECKING:
    from schedopt.api import solve
    from schedopt.backends import SolveOptions, Status
    from schedopt.core.capabilities import Capability
    from schedopt.core.decisions import DecisionKind
    from schedopt.core.outcome import Outcome
    from schedopt.core.policy import Policy
    from schedopt.core.problem import ThroughputProblem
    from schedopt.core.registry import register_policy
    from schedopt.errors import InstanceError, PolicyError, SchedoptError, SolveError
    from schedopt.instance import load_instance, save_instance
    from schedopt.modeling import Model
    from schedopt.modeling.policy import ModelPolicy, allocation_variable, policy
    from schedopt.result import Result


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'schedopt' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
