"""What a solve ends with: why it stopped, what it found, and how good that is.

Like Pyomo's newer solver results and OR-Tools MathOpt's `Termination`, *why the solver stopped*
(`Termination`) is kept apart from *what you have* (`SolutionStatus`); `Status` is the single word
the `schedopt-result/1` document and the CLI show, derived from the two.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class Status(str, enum.Enum):
    """What was found, in the result document's vocabulary."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"  # a solution, but a time/gap/iteration limit stopped the proof
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    ERROR = "error"  # no usable solution (includes a limit hit before any solution)

    @property
    def has_solution(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


class Termination(str, enum.Enum):
    """Why a solve stopped."""

    OPTIMAL = "optimal"                  # proven optimal (to the requested gap)
    INFEASIBLE = "infeasible"            # proven to have no solution
    UNBOUNDED = "unbounded"              # the objective can improve without end
    TIME_LIMIT = "time_limit"            # --time-limit reached
    ITERATION_LIMIT = "iteration_limit"  # an iteration, node or solution limit reached
    INTERRUPTED = "interrupted"          # the user or a signal stopped it
    NUMERICAL = "numerical"              # the solver gave up, or its answer is not accurate
    FEASIBLE = "feasible"                # stopped with a solution and no proof, for another reason
    ERROR = "error"                      # the solver failed


class SolutionStatus(str, enum.Enum):
    """What a solve has to show for itself."""

    OPTIMAL = "optimal"    # a solution proven optimal
    FEASIBLE = "feasible"  # a solution, not proven optimal
    NONE = "none"          # no usable solution


_STATUS_OF_SOLUTION = {SolutionStatus.OPTIMAL: Status.OPTIMAL,
                       SolutionStatus.FEASIBLE: Status.FEASIBLE}
_STATUS_WITHOUT_SOLUTION = {Termination.INFEASIBLE: Status.INFEASIBLE,
                            Termination.UNBOUNDED: Status.UNBOUNDED}
_FROM_STATUS = {  # the (termination, solution) pair a bare Status stands for
    Status.OPTIMAL: (Termination.OPTIMAL, SolutionStatus.OPTIMAL),
    Status.FEASIBLE: (Termination.FEASIBLE, SolutionStatus.FEASIBLE),
    Status.INFEASIBLE: (Termination.INFEASIBLE, SolutionStatus.NONE),
    Status.UNBOUNDED: (Termination.UNBOUNDED, SolutionStatus.NONE),
    Status.ERROR: (Termination.ERROR, SolutionStatus.NONE),
}


def status_of(termination: Termination, solution: SolutionStatus) -> Status:
    """The document's one word for a (termination, solution status) pair."""
    if solution in _STATUS_OF_SOLUTION:
        return _STATUS_OF_SOLUTION[solution]
    return _STATUS_WITHOUT_SOLUTION.get(termination, Status.ERROR)


def split_status(status: Status, termination: Termination | None = None
                 ) -> tuple[Termination, SolutionStatus]:
    """(termination, solution status) for a bare `status`; `termination` overrides the reason."""
    default, solution = _FROM_STATUS[Status(status)]
    return (termination or default), solution


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """|objective - bound| / max(1, |objective|), or None if either is unknown."""
    if objective is None or bound is None:
        return None
    return abs(objective - bound) / max(1.0, abs(objective))


@dataclass
class Outcome:
    """What a policy's `solve` returns.

    allocation: (M, J) time fractions for time-fraction policies (None for other decision kinds).
    decision: the typed decision of other kinds (`schedopt.core.decisions`), None otherwise.
    termination / solution: why the solve stopped and what it has (`status` joins them).
    objective: the policy's objective evaluated on the decision (units: the policy's
    `objective_doc`); bound: the best proven bound on the optimum (equal to it when optimal).
    solve_seconds: wall seconds; solver: the backend (or algorithm) that produced it.
    details: the policy's extras, written as top-level keys of the result document.
    """

    allocation: np.ndarray | None
    termination: Termination
    solution: SolutionStatus
    objective: float | None
    bound: float | None
    solve_seconds: float
    solver: str
    details: dict = field(default_factory=dict)
    decision: Any = None

    @classmethod
    def from_status(cls, allocation: np.ndarray | None, status: Status, objective: float | None,
                    bound: float | None, solve_seconds: float, solver: str,
                    details: dict | None = None, *, termination: Termination | None = None,
                    decision: Any = None) -> "Outcome":
        """An outcome from the document's one-word `status` (and, if known, the reason)."""
        reason, solution = split_status(status, termination)
        return cls(allocation, reason, solution, objective, bound, solve_seconds, solver,
                   dict(details or {}), decision)

    @property
    def status(self) -> Status:
        return status_of(self.termination, self.solution)

    @status.setter
    def status(self, value: Status) -> None:
        self.termination, self.solution = split_status(value)

    @property
    def gap(self) -> float | None:
        """Relative gap between objective and bound (None if either is unknown)."""
        return relative_gap(self.objective, self.bound)
