"""How a Gavel-family policy solves: by the price decomposition (`levels.py`) or as one LP on
a backend, and the outcome helpers its LPs share.

The option `method` picks it: "decomposition", "lp", or "auto" (the decomposition when the
caller named no solver, the whole LP on the named backend otherwise, so
`schedopt solve F --solver clarabel` solves the LP with Clarabel).
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np

from schedopt.backends import Status
from schedopt.backends.session import Solver
from schedopt.core.outcome import Outcome
from schedopt.core.problem import ThroughputProblem
from schedopt.errors import PolicyError

Method = Literal["auto", "decomposition", "lp"]
DECOMPOSITION = "decomposition"  # Outcome.solver of a decomposition solve
LP_DEFAULT = "highs"             # the backend of the whole LP when none is named


def as_solver(solver: Solver | str | None) -> Solver:
    """A Solver from a Solver, a backend name or None (no backend named)."""
    return solver if isinstance(solver, Solver) else Solver(solver)


def choose_method(method: Method, solver: Solver | str | None) -> tuple[str, Solver]:
    """("decomposition" or "lp", the Solver to use) for `method` and the caller's solver.

    Deprecated, accepted for one release: the solver name "decomposition" (schedopt <= 0.x
    called the price decomposition a solver) means method="decomposition" with no backend
    named; this is the only place that reads it."""
    solver = as_solver(solver)
    if solver.name == DECOMPOSITION:
        if method == "lp":
            raise PolicyError("solver 'decomposition' contradicts method=lp: name a backend "
                              "(e.g. highs) with method=lp, or use method=decomposition")
        warnings.warn("solver 'decomposition' is deprecated; use the policy option "
                      "method=decomposition (-o method=decomposition)", FutureWarning,
                      stacklevel=3)
        return DECOMPOSITION, solver.with_backend(None)
    if method == "auto":
        return (DECOMPOSITION if solver.name is None else "lp"), solver
    return method, solver


def lp_solver(solver: Solver, default: str = LP_DEFAULT) -> Solver:
    """`solver`, or the same settings on `default` when no backend was named."""
    return solver if solver.name is not None else solver.with_backend(default)


def empty_outcome(problem: ThroughputProblem, solver: str | None,
                  objective: float | None = None) -> Outcome:
    """The optimal answer without jobs to serve: an all-zero allocation."""
    return Outcome.from_status(np.zeros((problem.num_jobs, problem.num_types)), Status.OPTIMAL,
                               objective, objective, 0.0, solver)


def lp_outcome(result, X, objective: float | None, bound: float | None, solver: str | None,
               status: Status | None = None) -> Outcome:
    """Outcome of one LP solve; names the solver's own reason when it did not prove optimality."""
    status = status or result.status
    if X is None:
        objective = bound = None
    details = {} if status is Status.OPTIMAL else {"termination": result.termination}
    return Outcome.from_status(X, status, objective, bound, result.solve_seconds, solver, details)
