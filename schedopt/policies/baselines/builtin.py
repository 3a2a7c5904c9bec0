"""The baselines family's built-in policies, as the registry lists them: (policy, name, defaults)."""

from __future__ import annotations

import numpy as np

from schedopt.backends import SolveOptions
from schedopt.core.outcome import Outcome
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.baselines import throughput as baselines
from schedopt.policies.legacy import LegacyPolicy


def _fifo(problem: ThroughputProblem, solver: str, options: SolveOptions, agnostic: bool = False,
          seed: int = 0) -> Outcome:
    order = np.argsort(-problem.time_since_arrival, kind="stable")  # earliest arrival first
    return baselines.fifo(problem, order=order, agnostic=agnostic, seed=seed)


def _closed_form(fn):
    def run(problem: ThroughputProblem, solver: str, options: SolveOptions) -> Outcome:
        return fn(problem)
    return run


POLICIES = [
    LegacyPolicy("isolated", "Baseline: every job gets 1/M of each GPU type.", "none",
           _closed_form(baselines.isolated)),
    LegacyPolicy("proportional", "Baseline: equal shares proportional to each type's GPU count.", "none",
           _closed_form(baselines.proportional)),
    LegacyPolicy("fifo", "Baseline: arrival order, each job on its fastest type with room.", "none", _fifo),
    LegacyPolicy("fifo_agnostic", "Baseline: arrival order, each job on a random type with room.", "none",
           _fifo, {"agnostic": True}),
]
