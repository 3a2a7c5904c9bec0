"""Policies written with the modelling layer: state the LP, get `solve` and `objective` free.

    class CappedThroughput(schedopt.ModelPolicy):
        name, Options = "capped_throughput", CapOptions   # CapOptions: frozen dataclass, `cap`
        def build(self, problem, model, options):
            X = schedopt.allocation_variable(model, problem)  # runnable cells, base rows
            model.add("cap", X.sum(axis=1) <= options.cap)
            model.maximize((problem.throughput * X).sum())    # total steps/s
            return X

The `schedopt.policy` decorator makes one from a function `(problem, model) -> X`
(examples/custom_policy.py). The base class compiles the model, solves it with the `Solver` it is
given, reads the allocation and fills the `Outcome`; `objective(problem, X, options)` rebuilds
the model with X fixed to the given values and solves it, which is the policy's objective of X
for any LP policy. The base constraints: docs/formulations.md, "Base constraints".
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from typing import Any, Callable

import numpy as np

from schedopt.core.capabilities import Capability
from schedopt.core.outcome import Outcome, SolutionStatus, Termination
from schedopt.core.policy import NoOptions, Policy
from schedopt.core.problem import ThroughputProblem
from schedopt.errors import PolicyError
from schedopt.modeling.expressions import Variable
from schedopt.modeling.model import Model

ALLOCATION = "X"


def allocation_variable(model: Model, problem: ThroughputProblem,
                        base_constraints: bool = True) -> Variable:
    """The (M, J) block X of time fractions (variable "X"), zero where job m cannot run on
    type j (`problem.runnable`), with Gavel's base constraints unless base_constraints=False:
    "time" (each job's fractions sum to <= 1) and "gpus" (sum_m s_m X[m, j] <= c_j GPUs)."""
    X = model.variable(ALLOCATION, (problem.num_jobs, problem.num_types), lower=0.0,
                       upper=np.where(problem.runnable, 1.0, 0.0))
    if base_constraints:
        model.add("time", X.sum(axis=1) <= 1.0)
        model.add("gpus", (problem.scale_factor[:, None] * X).sum(axis=0) <= problem.capacity)
    return X


class ModelPolicy(Policy):
    """A time-fraction policy stated as a Model: implement `build(problem, model, options)`,
    which adds variables, constraints and the objective and returns the allocation block
    (usually `allocation_variable(model, problem)`)."""

    needs = Capability.LP
    default_solver = "highs"
    scale_rows = False  # True divides each row by its largest |coefficient| (interior point)

    def build(self, problem: ThroughputProblem, model: Model, options: Any) -> Variable | None:
        raise NotImplementedError

    def model(self, problem: ThroughputProblem, options: Any) -> tuple[Model, Variable]:
        """The policy's Model for `problem` and its allocation block."""
        model = Model()
        X = self.build(problem, model, options)
        if not isinstance(X, Variable) or X.shape != (problem.num_jobs, problem.num_types):
            raise PolicyError(f"policy {self.name}: build() must return the (jobs x GPU types) "
                              f"allocation variable, e.g. allocation_variable(model, problem)")
        return model, X

    def solve(self, problem: ThroughputProblem, options: Any, solver) -> Outcome:
        solver.require(self.needs, self.name)
        if problem.num_jobs == 0:  # nothing to allocate, as every built-in policy answers
            return Outcome(np.zeros((0, problem.num_types)), Termination.OPTIMAL,
                           SolutionStatus.OPTIMAL, None, None, 0.0, solver.name)
        start = time.perf_counter()
        model, X = self.model(problem, options)
        solution = model.solve(solver, scale_rows=self.scale_rows)
        result = solution.result
        values = solution[X]
        details = {} if result.reason is Termination.OPTIMAL else {"termination": result.detail}
        return Outcome(values, result.reason, result.solution, result.objective, result.bound,
                       time.perf_counter() - start, solver.name, details)

    def objective(self, problem: ThroughputProblem, allocation: np.ndarray,
                  options: Any) -> float | None:
        """The optimum of the policy's model with X fixed to `allocation` (clipped to X's
        bounds, which absorbs a solver's round-off; None when that X violates the model's rows
        beyond the backend's tolerance)."""
        from schedopt.backends.session import Solver

        model, X = self.model(problem, options)
        lp = model.compile(self.scale_rows)
        lower, upper = lp.col_lower.copy(), lp.col_upper.copy()
        fixed = np.clip(np.asarray(allocation, dtype=float).ravel(), lower[X.columns],
                        upper[X.columns])
        lower[X.columns] = upper[X.columns] = fixed
        lp = dataclasses.replace(lp, col_lower=lower, col_upper=upper)
        result = Solver(self.default_solver or "highs").solve(lp)
        return result.objective if result.solution is not SolutionStatus.NONE else None


class FunctionPolicy(ModelPolicy):
    """A ModelPolicy from a function `(problem, model) -> X` (or `(problem, model, options)`
    when `options` is given): what the `schedopt.policy` decorator makes."""

    def __init__(self, build: Callable, name: str, summary: str = "", objective: str = "none",
                 options: type | None = None, solver: str | None = "highs",
                 needs: Capability = Capability.LP):
        self.name = name
        self.summary = summary or (build.__doc__ or "").strip().split("\n")[0]
        self.objective_doc = objective
        self.Options = options or NoOptions
        self.default_solver = solver
        self.needs = needs
        self._build = build
        self._takes_options = options is not None
        self.__doc__ = build.__doc__
        self.__wrapped__ = build

    def __reduce__(self):
        # By reference, as functions pickle: the module attribute the decorator replaced.
        return _decorated, (self._build.__module__, self._build.__qualname__)

    def build(self, problem, model, options):
        if self._takes_options:
            return self._build(problem, model, options)
        return self._build(problem, model)


def _decorated(module: str, qualname: str) -> FunctionPolicy:
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def policy(name: str, *, summary: str = "", objective: str = "none", options: type | None = None,
           solver: str | None = "highs", needs: Capability = Capability.LP,
           register: bool = True) -> Callable[[Callable], FunctionPolicy]:
    """Decorator: a function `(problem, model) -> X` (with `options=` an Options dataclass,
    `(problem, model, options) -> X`) becomes a `ModelPolicy` named `name`, registered under
    that name unless register=False (then use it as an object or as `--policy MODULE:NAME`).
    objective: what the objective means, with units; solver: the default backend."""

    def wrap(build: Callable) -> FunctionPolicy:
        made = FunctionPolicy(build, name, summary, objective, options, solver, needs)
        if register:
            from schedopt.core.registry import register_policy

            register_policy(made)
        return made

    return wrap
