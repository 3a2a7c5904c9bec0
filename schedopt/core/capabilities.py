"""What a solver backend can do, and what a policy needs from one."""

from __future__ import annotations

import enum


class Capability(enum.Flag):
    """Backends declare the flags they have; policies ask for the flags they need."""

    LP = enum.auto()           # continuous linear programs
    MILP = enum.auto()         # integer columns, solved correctly
    DUALS = enum.auto()        # constraint duals of an optimal LP
    WARM_START = enum.auto()   # re-solve a modified LP from the last basis
    ADD_COLUMNS = enum.auto()  # add columns to a loaded LP and re-solve it (column generation)
    MIP_START = enum.auto()    # take a starting solution as a hint for a MILP
    DETERMINISTIC_TIME = enum.auto()  # SolveOptions.deterministic_time: a load-free work limit
    PRESOLVE_OFF = enum.auto()  # SolveOptions.presolve=False: the solver's presolve switched off

    @classmethod
    def none(cls) -> "Capability":
        return cls(0)

    def names(self) -> list[str]:
        return [flag.name.lower() for flag in Capability if flag in self]
