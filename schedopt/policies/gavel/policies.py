"""The Gavel family as Policy classes: heterogeneity-aware max-min fairness, makespan,
finish-time fairness, total throughput, cost and water filling (formulations in `lp.py` and
`water_filling.py`; the math in docs/exact-max-min.md and docs/water-filling.md).

Each class is registered twice where Gavel has a speed-blind variant: `MaxMinFairness()` as
max_min_fairness and `MaxMinFairness.variant(...)` as max_min_fairness_agnostic, the same
class with the option default agnostic=True (see `builtin.py`).

The option `method` ("auto", "decomposition", "lp") of the max-min family picks the price
decomposition or one LP on a backend (`solving.choose_method`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar

import numpy as np

from schedopt.core.outcome import Outcome
from schedopt.core.policy import NoOptions, Policy
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.gavel import lp, water_filling
from schedopt.policies.gavel.solving import Method, lp_solver


def option_values(options: Any) -> dict[str, Any]:
    """An Options dataclass as keyword arguments (shallow: a `start` mapping is not copied)."""
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}


class FormulationPolicy(Policy):
    """A Policy whose `solve` is a formulation function `(problem, solver, **options) ->
    Outcome` and whose `objective` is an evaluation `(problem, X, **options) -> float`.

    An instance may carry its own name, summary and objective text, and option `defaults`
    its registered name fixes (the agnostic variants)."""

    Options: ClassVar[type] = NoOptions
    formulation: ClassVar[Callable[..., Outcome]]
    evaluation: ClassVar[Callable[..., float] | None] = None
    evaluated_options: ClassVar[tuple[str, ...]] = ()  # the options `evaluation` takes

    def __init__(self, name: str | None = None, summary: str | None = None,
                 objective: str | None = None, defaults: dict | None = None):
        if name is not None:
            self.name = name
        if summary is not None:
            self.summary = summary
        if objective is not None:
            self.objective_doc = objective
        self.defaults = dict(defaults or {})

    @classmethod
    def variant(cls, name: str, summary: str, objective: str, **defaults) -> "FormulationPolicy":
        """The same policy registered under another name with some option defaults."""
        return cls(name, summary, objective, defaults)

    def solve(self, problem: ThroughputProblem, options: Any, solver) -> Outcome:
        if self.default_solver is not None:
            solver = lp_solver(solver, self.default_solver)
        return type(self).formulation(problem, solver, **option_values(options))

    def objective(self, problem: ThroughputProblem, allocation: np.ndarray,
                  options: Any) -> float | None:
        if type(self).evaluation is None:
            return None
        values = option_values(options)
        return type(self).evaluation(problem, allocation,
                                     **{k: values[k] for k in self.evaluated_options})

    def __reduce__(self):
        return type(self), (self.name, self.summary, self.objective_doc, self.defaults)



# ---------------------------------------------------------------- max-min fairness

@dataclasses.dataclass(frozen=True)
class MaxMinOptions:
    """agnostic: time shares, blind to GPU speed (Gavel's LAS); start: a previous solve's
    details ("prices", "level") to warm-start the decomposition; robust: r in [0, 1), the
    level guaranteed for every true throughput within a factor 1 -+ r (docs/perf-error.md);
    method: "decomposition", "lp" or "auto" (`solving.choose_method`)."""

    agnostic: bool = False
    start: Any = None
    robust: float = 0.0
    method: Method = "auto"


class MaxMinFairness(FormulationPolicy):
    name = "max_min_fairness"
    summary = "Heterogeneity-aware max-min fairness over normalized throughputs (Gavel)."
    objective_doc = ("min over jobs of s*throughput/(weight*equal-share throughput) "
                     "(dimensionless)")
    Options = MaxMinOptions
    default_solver = None  # the price decomposition; a named backend solves the LP
    formulation = staticmethod(lp.max_min_fairness)
    evaluation = staticmethod(lp.max_min_objective)
    evaluated_options = ("agnostic", "robust")


# ---------------------------------------------------------------- makespan

@dataclasses.dataclass(frozen=True)
class MakespanOptions:
    """agnostic: every GPU type runs a job at its best throughput; start, method: as for
    max_min_fairness."""

    agnostic: bool = False
    start: Any = None
    method: Method = "auto"


class MinMakespan(FormulationPolicy):
    name = "min_makespan"
    summary = "Minimize the time until every job finishes (exact single LP)."
    objective_doc = "makespan in seconds"
    Options = MakespanOptions
    default_solver = None
    formulation = staticmethod(lp.min_makespan)
    evaluation = staticmethod(lp.makespan_objective)
    evaluated_options = ("agnostic",)


# ---------------------------------------------------------------- finish-time fairness

@dataclasses.dataclass(frozen=True)
class FinishTimeOptions:
    """agnostic: as for min_makespan; tolerance: relative width of the interval on rho at
    which it stops; max_iterations: LPs (method lp) or decomposition solves at most; method:
    as for max_min_fairness ("auto": the decomposition unless a solver is named)."""

    agnostic: bool = False
    tolerance: float = 1e-6
    max_iterations: int = 200
    method: Method = "auto"


class FinishTimeFairness(FormulationPolicy):
    name = "finish_time_fairness"
    summary = "Minimize the worst finish-time ratio rho (Themis), exact to a proven tolerance."
    objective_doc = "max over jobs of rho (dimensionless)"
    Options = FinishTimeOptions
    default_solver = None  # the price decomposition; a named backend bisects over LPs
    formulation = staticmethod(lp.finish_time_fairness)
    evaluation = staticmethod(lp.finish_time_objective)
    evaluated_options = ("agnostic",)


# ---------------------------------------------------------------- throughput and cost

class MaxTotalThroughput(FormulationPolicy):
    name = "max_total_throughput"
    summary = "Maximize the sum of jobs' effective throughputs (Gavel)."
    objective_doc = "total steps/s"
    Options = NoOptions
    default_solver = "highs-ipm"
    formulation = staticmethod(lp.max_total_throughput)
    evaluation = staticmethod(lp.total_throughput_objective)


@dataclasses.dataclass(frozen=True)
class CostOptions:
    """slos: every job with a deadline and known remaining steps must finish by it; method:
    as for max_min_fairness ("auto": the price decomposition unless a solver is named)."""

    slos: bool = True
    method: Method = "auto"


class MinCost(FormulationPolicy):
    name = "min_cost"
    summary = "Maximize throughput per dollar, meeting deadlines as SLOs where given."
    objective_doc = "sum of steps/s divided by $/GPU-hour"
    Options = CostOptions
    default_solver = None  # the price decomposition; a named backend solves the whole LP
    formulation = staticmethod(lp.min_cost)
    evaluation = staticmethod(lp.cost_objective)


# ---------------------------------------------------------------- water filling

@dataclasses.dataclass(frozen=True)
class WaterFillingOptions:
    """agnostic: as for max_min_fairness; gap: proven relative gap of every decomposition
    stage; method: as for max_min_fairness."""

    agnostic: bool = False
    gap: float = water_filling.GAP
    method: Method = "auto"


class WaterFilling(FormulationPolicy):
    name = "water_filling"
    summary = ("Lexicographic max-min fairness (water filling) over normalized throughputs "
               "(Gavel).")
    objective_doc = ("min over jobs of s*throughput/(weight*equal-share throughput) "
                     "(dimensionless); each job's in job_levels")
    Options = WaterFillingOptions
    default_solver = None
    formulation = staticmethod(water_filling.water_filling)
    evaluation = staticmethod(lp.max_min_objective)
    evaluated_options = ("agnostic",)


@dataclasses.dataclass(frozen=True)
class HierarchicalOptions:
    """agnostic, method: as for water_filling."""

    agnostic: bool = False
    method: Method = "auto"


class HierarchicalWaterFilling(FormulationPolicy):
    name = "hierarchical_water_filling"
    summary = ("Water filling among users by user weight, then among each user's jobs by job "
               "weight (Gavel's multi-level fairness).")
    objective_doc = ("first water level: min over jobs of s*throughput/equal-share throughput "
                     "divided by (user weight * job weight / user's total job weight) "
                     "(dimensionless)")
    Options = HierarchicalOptions
    default_solver = None
    formulation = staticmethod(water_filling.hierarchical_water_filling)
    evaluation = staticmethod(water_filling.hierarchical_objective)
    evaluated_options = ("agnostic",)
