"""Transitional: a policy still written as a bare function, served through the Policy contract.
Each family replaces its entries with Policy classes; this module goes when none is left."""

from __future__ import annotations

import inspect
from typing import Callable

from schedopt.core.decisions import DecisionKind
from schedopt.core.outcome import Outcome
from schedopt.core.policy import Policy
from schedopt.errors import PolicyError

_POP_PARAMETERS = ("partitions", "partition_seed")  # set through solve(partitions=...)
_DECISIONS = {"allox": DecisionKind.QUEUES, "chronus": DecisionKind.LEASES,
              "smd": DecisionKind.PS_CONFIGURATION}


class LegacyPolicy(Policy):
    """A policy still written as a bare function (being ported to its own Policy class):
    `run(problem, solver name, SolveOptions, **options) -> Outcome`."""

    def __init__(self, name: str, summary: str, objective: str, run: Callable[..., Outcome],
                 defaults: dict | None = None, solver: str = "highs",
                 evaluate: Callable[..., float] | None = None):
        self.name = name
        self.summary = summary
        self.objective_doc = objective
        self.run = run
        self.defaults = dict(defaults or {})
        self.default_solver = solver
        self.evaluate = evaluate
        self.decision = _DECISIONS.get(name.split("_")[0], DecisionKind.ALLOCATION)

    @property
    def option_names(self) -> tuple[str, ...]:
        params = inspect.signature(self.run).parameters
        return tuple(p for p in params if p not in ("problem", "instance", "solver", "options")
                     and p not in _POP_PARAMETERS)

    def parse_options(self, values: dict) -> dict:
        unknown = set(values) - set(self.option_names)
        if unknown:
            raise PolicyError(f"policy {self.name} has no option(s) {', '.join(sorted(unknown))}; "
                              f"it takes: {', '.join(self.option_names) or 'none'}")
        return dict(values)

    def solve(self, problem, options, solver) -> Outcome:
        return self.run(problem, solver.name, solver.settings, **options)

    def objective(self, problem, allocation, options):
        return None if self.evaluate is None else self.evaluate(problem, allocation, **options)
