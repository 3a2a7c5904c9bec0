"""`Solver`: a backend together with the settings of one solve, as policies receive it.

Policies never import a solver library: they call `solver.solve(lp)` (or
`solver.incremental(lp)` for column generation), and ask `solver.capabilities` instead of
comparing backend names. A Solver keeps the last program it was given, for MPS export.
"""

from __future__ import annotations

from dataclasses import replace

from schedopt.backends.base import LinearProgram, SolveOptions, SolveResult, check_options
from schedopt.core.capabilities import Capability
from schedopt.errors import PolicyError, SolveError


class Solver:
    """The backend `name` (None: the policy calls no backend) with `settings`.

    programs: every LinearProgram solved through this Solver (and those derived from it with
    `with_settings`), in order, when keep_programs is True; `last_program` the last one.
    """

    def __init__(self, name: str | None, settings: SolveOptions | None = None,
                 keep_programs: bool = False, _programs: list | None = None):
        self.name = name
        self.settings = settings or SolveOptions()
        self.keep_programs = keep_programs
        self.programs: list[LinearProgram] = [] if _programs is None else _programs
        self._last: list[LinearProgram | None] = [None]

    @property
    def backend(self):
        from schedopt.backends import get_backend

        if self.name is None:
            raise SolveError("no solver backend was chosen for this solve")
        return get_backend(self.name)

    @property
    def capabilities(self) -> Capability:
        return Capability.none() if self.name is None else self.backend.capabilities

    def supports(self, needed: Capability) -> bool:
        return needed in self.capabilities

    def require(self, needed: Capability, policy: str) -> None:
        """PolicyError in one line when this backend lacks what `policy` needs."""
        missing = needed & ~self.capabilities
        if missing:
            from schedopt.backends import backends_with

            raise PolicyError(f"policy {policy} needs a solver with {', '.join(missing.names())}; "
                              f"{self.name!r} has {', '.join(self.capabilities.names()) or 'none'}"
                              f" (use one of {', '.join(backends_with(needed))})")

    def with_settings(self, **changes) -> "Solver":
        """The same backend with some settings changed (time limit, start, ...); programs it
        solves are kept with this Solver's."""
        other = Solver(self.name, replace(self.settings, **changes), self.keep_programs,
                       self.programs)
        other._last = self._last
        return other

    def with_backend(self, name: str) -> "Solver":
        """Another backend with the same settings and program record."""
        other = Solver(name, self.settings, self.keep_programs, self.programs)
        other._last = self._last
        return other

    def record(self, lp: LinearProgram) -> None:
        """Keep `lp` as the last program (and in `programs` when keep_programs is True)."""
        self._last[0] = lp
        if self.keep_programs:
            self.programs.append(lp)

    @property
    def last_program(self) -> LinearProgram | None:
        return self._last[0]

    def solve(self, lp: LinearProgram) -> SolveResult:
        self.record(lp)
        backend = self.backend
        check_options(backend, self.settings)
        return backend.solve(lp, self.settings)

    def incremental(self, lp: LinearProgram):
        """A loaded copy of `lp` that takes new columns and re-solves warm (ADD_COLUMNS)."""
        self.require(Capability.ADD_COLUMNS, "column generation")
        backend = self.backend
        check_options(backend, self.settings)
        return backend.incremental(lp, self.settings, self)

    def __repr__(self) -> str:
        return f"Solver({self.name!r})"
