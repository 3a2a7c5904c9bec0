"""schedopt: GPU-cluster scheduling policies as mathematical programs, solved exactly.

    import schedopt
    result = schedopt.solve(schedopt.load_instance("instances/tiny.json"), "max_min_fairness")
"""

from schedopt.api import solve
from schedopt.backends import SolveOptions, Status
from schedopt.errors import InstanceError, PolicyError, SchedoptError, SolveError
from schedopt.core.problem import ThroughputProblem
from schedopt.instance import load_instance, save_instance
from schedopt.result import Result

__all__ = ["solve", "load_instance", "save_instance", "Result", "ThroughputProblem", "Status",
           "SolveOptions", "SchedoptError", "InstanceError", "PolicyError", "SolveError"]
