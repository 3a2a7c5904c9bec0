"""The throughput-matrix baselines as Policy classes: isolated, proportional and FIFO
(closed forms and a greedy queue in `throughput.py`; they call no solver)."""

from __future__ import annotations

import dataclasses

import numpy as np

from schedopt.core.capabilities import Capability
from schedopt.core.outcome import Outcome
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.baselines import throughput
from schedopt.policies.gavel.policies import FormulationPolicy


class _Baseline(FormulationPolicy):
    """A baseline: no solver, no objective."""

    objective_doc = "none"
    needs = Capability.none()
    default_solver = None


def _isolated(problem: ThroughputProblem, solver) -> Outcome:
    return throughput.isolated(problem)


def _proportional(problem: ThroughputProblem, solver) -> Outcome:
    return throughput.proportional(problem)


def _fifo(problem: ThroughputProblem, solver, agnostic: bool = False, seed: int = 0) -> Outcome:
    order = np.argsort(-problem.time_since_arrival, kind="stable")  # earliest arrival first
    return throughput.fifo(problem, order=order, agnostic=agnostic, seed=seed)


class Isolated(_Baseline):
    name = "isolated"
    summary = "Baseline: every job gets 1/M of each GPU type."
    formulation = staticmethod(_isolated)


class Proportional(_Baseline):
    name = "proportional"
    summary = "Baseline: equal shares proportional to each type's GPU count."
    formulation = staticmethod(_proportional)


@dataclasses.dataclass(frozen=True)
class FifoOptions:
    """agnostic: each job on a uniformly random type with room (not its fastest); seed: that
    draw's seed."""

    agnostic: bool = False
    seed: int = 0


class Fifo(_Baseline):
    name = "fifo"
    summary = "Baseline: arrival order, each job on its fastest type with room."
    Options = FifoOptions
    formulation = staticmethod(_fifo)
