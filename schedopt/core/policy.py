"""The Policy contract: what every scheduling policy, built in or written by a user, provides.

A policy has a `name`, a typed `Options` dataclass (its options are parsed and validated from
it), the `decision` kind it emits, the solver `needs` it has (capabilities, not backend names),
`solve(problem, options, solver)` and `objective(problem, allocation, options)`.

    class RawMaxMin(Policy):
        name = "raw_max_min"
        summary = "..."
        objective_doc = "min over jobs of steps/s per unit weight"
        needs = Capability.LP
        def solve(self, problem, options, solver): ...

Register it with `schedopt.register_policy` (docs: README, "Write your own policy").
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from schedopt.core.capabilities import Capability
from schedopt.core.decisions import DecisionKind
from schedopt.core.outcome import Outcome
from schedopt.core.problem import ThroughputProblem
from schedopt.errors import PolicyError

if TYPE_CHECKING:
    from schedopt.backends.session import Solver


@dataclasses.dataclass(frozen=True)
class NoOptions:
    """A policy without options."""


class Policy:
    """Base class of every policy (see the module docstring).

    Class attributes: name, summary (one line), objective_doc (what `Result.objective` means,
    with units), Options (a frozen dataclass; its fields are the policy's options, validated in
    `__post_init__` where a type is not enough), decision (the kind it emits), needs (solver
    capabilities; `Capability.none()` for policies that call no solver), default_solver (the
    backend used when the caller names none, picked by measurement; None for none),
    instance_data (None, or what the policy reads from the whole instance beyond the throughput
    matrix, e.g. "CPU machines and cpu_time": it then needs `problem.instance`).
    """

    name: ClassVar[str]
    summary: ClassVar[str] = ""
    objective_doc: ClassVar[str] = "none"
    Options: ClassVar[type] = NoOptions
    decision: ClassVar[DecisionKind] = DecisionKind.ALLOCATION
    needs: ClassVar[Capability] = Capability.LP
    default_solver: ClassVar[str | None] = "highs"
    instance_data: ClassVar[str | None] = None

    def solve(self, problem: ThroughputProblem, options: Any, solver: "Solver") -> Outcome:
        raise NotImplementedError

    def objective(self, problem: ThroughputProblem, allocation: np.ndarray,
                  options: Any) -> float | None:
        """The objective of any allocation X (None: the policy has none to evaluate)."""
        return None

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self.Options))

    def parse_options(self, values: dict[str, Any]) -> Any:
        """Options from {name: value}, each checked against the Options field's type."""
        unknown = sorted(set(values) - set(self.option_names))
        if unknown:
            raise PolicyError(f"policy {self.name} has no option(s) {', '.join(unknown)}; "
                              f"it takes: {', '.join(self.option_names) or 'none'}")
        hints = typing.get_type_hints(self.Options)
        checked = {key: _checked(self.name, key, value, hints[key])
                   for key, value in values.items()}
        try:
            return self.Options(**checked)
        except (TypeError, ValueError) as exc:
            raise PolicyError(f"policy {self.name}: {exc}") from None

    def check_instance(self, problem: ThroughputProblem) -> None:
        """PolicyError in one line when the policy reads instance data the problem lacks."""
        if self.instance_data is not None and problem.instance is None:
            raise PolicyError(f"policy {self.name} needs an instance (a file or an Instance: "
                              f"{self.instance_data}), not a ThroughputProblem")

    def __repr__(self) -> str:
        return f"<policy {self.name}>"


def _checked(policy: str, key: str, value: Any, hint: Any) -> Any:
    """`value` if it fits `hint` (ints pass as floats), else a PolicyError naming the option."""
    allowed = typing.get_args(hint) if _is_union(hint) else (hint,)
    for kind in allowed:
        if kind is type(None) and value is None:
            return None
        if typing.get_origin(kind) is Literal and value in typing.get_args(kind):
            return value
        if kind is bool and isinstance(value, bool):
            return value
        if kind is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if kind is str and isinstance(value, str):
            return value
        if kind is Any:
            return value
    raise PolicyError(f"policy {policy}: option {key} expects {_describe(hint)}, got {value!r}")


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _describe(hint: Any) -> str:
    if _is_union(hint):
        return " or ".join(_describe(h) for h in typing.get_args(hint))
    if typing.get_origin(hint) is Literal:
        return "one of " + ", ".join(repr(v) for v in typing.get_args(hint))
    if hint is type(None):
        return "null"
    return {bool: "true/false", int: "an integer", float: "a number", str: "a string"}.get(
        hint, getattr(hint, "__name__", str(hint)))
