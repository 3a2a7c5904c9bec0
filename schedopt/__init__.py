"""schedopt: GPU-cluster scheduling policies as mathematical programs, solved exactly.

    import schedopt
    result = schedopt.solve(schedopt.load_instance("instances/tiny.json"), "max_min_fairness")

Your own policy: `schedopt.policy` (a decorated function that builds a `Model`), a
`ModelPolicy` subclass, or any `Policy`, made visible with `register_policy` (README, "Write
your own policy"; examples/custom_policy.py).
"""

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

__all__ = ["solve", "load_instance", "save_instance", "Result", "ThroughputProblem", "Status",
           "SolveOptions", "SchedoptError", "InstanceError", "PolicyError", "SolveError",
           "Policy", "ModelPolicy", "policy", "register_policy", "allocation_variable", "Model",
           "Outcome", "Capability", "DecisionKind"]
