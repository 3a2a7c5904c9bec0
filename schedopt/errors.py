"""Exceptions schedopt raises on purpose; the CLI turns each into one line and exit code 2."""

from __future__ import annotations

from dataclasses import dataclass


class SchedoptError(Exception):
    """Base class of every error schedopt raises deliberately."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file: where it is and what was expected there."""

    file: str
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.path}" if self.path else self.file
        return f"{where}: {self.message}"


class InstanceError(SchedoptError):
    """An instance file (or in-memory document) is malformed; carries every problem found."""

    def __init__(self, problems: list[Problem]):
        if not problems:
            raise ValueError("InstanceError needs at least one problem")
        self.problems = list(problems)
        first = str(self.problems[0])
        more = len(self.problems) - 1
        super().__init__(first if more == 0 else f"{first} (and {more} more problem(s))")


class PolicyError(SchedoptError):
    """A policy name is unknown, or the instance lacks data the policy needs."""


class OutputError(SchedoptError):
    """An output file cannot be written (missing directory, not writable, or an input)."""


class SolveError(SchedoptError):
    """A solver backend is unknown, not installed, or failed in a way that has no typed status."""
