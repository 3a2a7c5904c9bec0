"""The contracts every policy shares: outcome statuses, typed options, the registry."""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np
import pytest

from schedopt.core.outcome import (Outcome, SolutionStatus, Status, Termination, split_status,
                                   status_of)
from schedopt.core.policy import Policy
from schedopt.core.registry import register_policy, registered, resolve, unregister_policy
from schedopt.errors import PolicyError


@pytest.mark.parametrize("termination, solution, status", [
    (Termination.OPTIMAL, SolutionStatus.OPTIMAL, Status.OPTIMAL),
    (Termination.TIME_LIMIT, SolutionStatus.FEASIBLE, Status.FEASIBLE),
    (Termination.TIME_LIMIT, SolutionStatus.NONE, Status.ERROR),
    (Termination.INFEASIBLE, SolutionStatus.NONE, Status.INFEASIBLE),
    (Termination.UNBOUNDED, SolutionStatus.NONE, Status.UNBOUNDED),
    (Termination.NUMERICAL, SolutionStatus.FEASIBLE, Status.FEASIBLE),
    (Termination.INTERRUPTED, SolutionStatus.NONE, Status.ERROR),
])
def test_status_keeps_why_apart_from_what(termination, solution, status):
    assert status_of(termination, solution) is status
    outcome = Outcome(None, termination, solution, None, None, 0.0, "x")
    assert outcome.status is status
    assert outcome.status.has_solution == (solution is not SolutionStatus.NONE)


@pytest.mark.parametrize("status", list(Status))
def test_a_bare_status_round_trips(status):
    assert status_of(*split_status(status)) is status
    outcome = Outcome.from_status(None, status, 1.0, 1.0, 0.0, "x")
    assert outcome.status is status


def test_a_time_limit_with_a_solution_reports_its_gap():
    outcome = Outcome.from_status(None, Status.FEASIBLE, 10.0, 12.0, 1.0, "x",
                                  termination=Termination.TIME_LIMIT)
    assert outcome.termination is Termination.TIME_LIMIT
    assert outcome.solution is SolutionStatus.FEASIBLE
    assert outcome.gap == pytest.approx(0.2)


@dataclasses.dataclass(frozen=True)
class _Options:
    level: float = 1.0
    rounds: int = 3
    method: Literal["fast", "exact"] = "fast"
    flag: bool = False
    label: str | None = None

    def __post_init__(self):
        if self.level <= 0:
            raise ValueError(f"level must be > 0, got {self.level}")


class _Equal(Policy):
    name = "test_equal_shares"
    summary = "every job the same share of every type"
    Options = _Options

    def solve(self, problem, options, solver):
        X = np.full((problem.num_jobs, problem.num_types), 1.0 / max(problem.num_jobs, 1))
        return Outcome.from_status(X, Status.FEASIBLE, None, None, 0.0, "none")


def test_options_are_parsed_from_their_types():
    options = _Equal().parse_options({"level": 2, "method": "exact", "flag": True})
    assert options == _Options(level=2.0, method="exact", flag=True)
    assert isinstance(options.level, float)


@pytest.mark.parametrize("values, message", [
    ({"levle": 1.0}, "has no option"),
    ({"rounds": 2.5}, "rounds expects an integer"),
    ({"rounds": True}, "rounds expects an integer"),
    ({"method": "slow"}, "one of 'fast', 'exact'"),
    ({"flag": 1}, "true/false"),
    ({"label": 3}, "a string or null"),
    ({"level": -1.0}, "level must be > 0"),
])
def test_bad_options_get_one_line_naming_the_option(values, message):
    with pytest.raises(PolicyError, match=message) as info:
        _Equal().parse_options(values)
    assert "\n" not in str(info.value)


def test_a_registered_policy_resolves_and_can_be_removed():
    register_policy(_Equal, defaults={"rounds": 5})
    try:
        policy, fixed = resolve("test_equal_shares")
        assert isinstance(policy, _Equal) and fixed == {"rounds": 5}
        with pytest.raises(PolicyError, match="already registered"):
            register_policy(_Equal())
    finally:
        unregister_policy("test_equal_shares")
    assert "test_equal_shares" not in registered()


def test_built_in_names_cannot_be_removed_and_defaults_are_checked():
    unregister_policy("max_min_fairness")
    assert "max_min_fairness" in registered()
    with pytest.raises(PolicyError, match="has no option"):
        register_policy(_Equal, name="test_bad_defaults", defaults={"nope": 1})


@pytest.mark.parametrize("reference, message", [
    ("no_such_module_xyz:policy", "cannot import"),
    ("json:no_such_attribute", "has no 'no_such_attribute'"),
    ("json:dumps", "not a Policy"),
    ("gavel:no_such_policy", "unknown Gavel policy"),
    ("no_such_policy", "unknown policy"),
])
def test_bad_references_are_one_line_errors(reference, message):
    with pytest.raises(PolicyError, match=message):
        resolve(reference)


def test_a_module_reference_finds_a_policy_class(tmp_path, monkeypatch):
    (tmp_path / "my_policies_for_test.py").write_text(
        "from schedopt.core.policy import Policy\n"
        "class Mine(Policy):\n    name = 'mine'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    policy, fixed = resolve("my_policies_for_test:Mine")
    assert policy.name == "mine" and fixed == {}
