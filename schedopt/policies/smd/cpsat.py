"""CP-SAT for smd's sub-problems (feasibility repair, placement of a configuration choice,
neighbourhood steps) with a limit that does not depend on the machine's load: one thread and
CP-SAT's deterministic time (`max_deterministic_time`, in CP-SAT's units of work, roughly
seconds of one core), so that a fixed seed gives the same answer on an idle and on a loaded
machine. A wall-clock limit would stop a step early under load and change the answer.
"""

from __future__ import annotations

import numpy as np

from schedopt.backends import LinearProgram, SolveOptions, SolveResult
from schedopt.backends.session import Solver

SOLVER = "cpsat"


def solve(lp: LinearProgram, work: float, start: np.ndarray | None = None,
          presolve: bool = True) -> SolveResult:
    """CP-SAT on `lp` (every column integer) with one thread, at most `work` units of
    deterministic time, `start` as a hint; presolve=False leaves CP-SAT's presolve out (the
    neighbourhood steps' small sub-problems: docs/smd.md). SolveError when CP-SAT (the
    `ortools` extra) is not installed."""
    return Solver(SOLVER, SolveOptions(threads=1, start=start, deterministic_time=work,
                                       presolve=presolve)).solve(lp)
