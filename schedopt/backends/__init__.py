"""Solver backends, selected by name and imported only when used.

Names: ``highs`` (HiGHS via highspy; ``highs-ipm`` forces its interior point), ``clarabel``
(interior point, LPs only), ``glop``, ``pdlp``, ``cpsat``, ``scip`` (OR-Tools MathOpt),
``cbc`` (the CBC binary that PuLP ships),
``cvxpy`` or ``cvxpy:SOLVER`` (any solver cvxpy has installed, e.g. ``cvxpy:CLARABEL``).

Each backend declares its `capabilities` (`schedopt.core.capabilities.Capability`: LP, MILP,
DUALS, WARM_START, ADD_COLUMNS, MIP_START, DETERMINISTIC_TIME); policies ask for those, never for names
(`backends_with`, `Solver.require`). Reading them imports no solver package.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Protocol

from schedopt.backends.base import (LinearProgram, SolutionStatus, SolveOptions, SolveResult,
                                    Status, Termination, check_options)
from schedopt.core.capabilities import Capability
from schedopt.errors import SolveError

__all__ = ["Backend", "Capability", "LinearProgram", "SolutionStatus", "SolveOptions",
           "SolveResult", "Status", "Termination", "BACKEND_NAMES", "backends_with",
           "get_backend", "solve_lp"]


class Backend(Protocol):
    name: str
    capabilities: Capability

    def solve(self, lp: LinearProgram, options: SolveOptions) -> SolveResult: ...


# name -> (adapter module, class, constructor argument, package the solver needs);
# adapter modules import their solver package only inside solve().
_REGISTRY: dict[str, tuple[str, str, str | None, str]] = {
    "highs": ("schedopt.backends.highs", "HighsBackend", None, "highspy"),
    "highs-ipm": ("schedopt.backends.highs", "HighsBackend", "ipm", "highspy"),
    "clarabel": ("schedopt.backends.clarabel", "ClarabelBackend", None, "clarabel"),
    "glop": ("schedopt.backends.ortools", "MathOptBackend", "glop", "ortools"),
    "pdlp": ("schedopt.backends.ortools", "MathOptBackend", "pdlp", "ortools"),
    "cpsat": ("schedopt.backends.ortools", "MathOptBackend", "cpsat", "ortools"),
    "scip": ("schedopt.backends.ortools", "MathOptBackend", "scip", "ortools"),
    "cbc": ("schedopt.backends.cbc", "CbcBackend", None, "pulp"),
    "cvxpy": ("schedopt.backends.cvxpy", "CvxpyBackend", None, "cvxpy"),
}

BACKEND_NAMES: tuple[str, ...] = tuple(_REGISTRY) + ("cvxpy:SOLVER",)


def get_backend(name: str) -> Backend:
    """Return the backend called `name` (see module docstring); SolveError if unknown/missing."""
    base, _, sub = name.partition(":")
    key = base.strip().lower()
    if key not in _REGISTRY or (sub and key != "cvxpy"):
        raise SolveError(f"unknown solver {name!r}; expected one of {', '.join(BACKEND_NAMES)}")
    module_name, class_name, arg, package = _REGISTRY[key]
    if importlib.util.find_spec(package) is None:
        raise SolveError(f"solver {name!r} needs the package {package!r}, which is not installed; "
                         f"install it with: pip install 'schedopt[all]'")
    cls = getattr(importlib.import_module(module_name), class_name)
    if sub:
        return cls(sub.strip())
    return cls(arg) if arg is not None else cls()


def backends_with(needed: Capability) -> list[str]:
    """Names of the installed backends (in registry order) that have every flag in `needed`."""
    names = []
    for name, (_, _, _, package) in _REGISTRY.items():
        if importlib.util.find_spec(package) is not None and needed in get_backend(name).capabilities:
            names.append(name)
    return names


def solve_lp(lp: LinearProgram, solver: str = "highs",
             options: SolveOptions | None = None) -> SolveResult:
    """Solve `lp` with the backend named `solver` (a one-off solve; policies solve through the
    `session.Solver` they receive, which keeps the last program for MPS export)."""
    backend, options = get_backend(solver), options or SolveOptions()
    check_options(backend, options)
    return backend.solve(lp, options)
