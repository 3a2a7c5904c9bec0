"""SMD's feasibility repair (docs/smd.md, "Beyond the paper"): when the first-fit rules and the
bounded placement search cannot place one worker and one PS per job, `smd_exact`'s MILP
(`schedopt.policies.smd.milp`) with every job's configuration fixed to (1, 1) and no objective
is handed to CP-SAT, which either places the tasks or proves that nothing can.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from schedopt.errors import SolveError
from schedopt.policies.smd import cpsat
from schedopt.policies.smd.milp import ExactProgram
from schedopt.policies.smd.model import Placement


def place(program: ExactProgram, choice: np.ndarray, work: float) -> tuple[Placement | None, str]:
    """(a placement of exactly the configurations `choice` (n,) column indices, or None, why):
    "placed", "infeasible" (proven: no placement of them exists), "time limit" (none found
    within `work` units of CP-SAT's deterministic time, `schedopt.policies.smd.cpsat`) or "no
    solver" (CP-SAT, the `ortools` extra, is not installed)."""
    lp = program.lp
    lower, upper = lp.col_lower.copy(), lp.col_upper.copy()
    fixed = np.zeros(program.z.shape)
    fixed[np.arange(fixed.shape[0]), choice] = 1
    lower[program.z.columns] = upper[program.z.columns] = fixed.ravel()
    try:
        result = cpsat.solve(dataclasses.replace(lp, col_lower=lower, col_upper=upper,
                                                 c=np.zeros(lp.num_cols)), work)
    except SolveError:
        return None, "no solver"
    if result.status.has_solution:
        x = np.rint(result.x).astype(np.int64)
        return Placement(x[program.x.columns].reshape(program.x.shape),
                         x[program.y.columns].reshape(program.y.shape)), "placed"
    return None, "infeasible" if result.status.value == "infeasible" else "time limit"


def repair(program: ExactProgram, work: float) -> tuple[Placement | None, str]:
    """`place` of one worker and one PS per job (configuration column 0 is (1, 1))."""
    return place(program, np.zeros(program.z.shape[0], dtype=np.int64), work)
