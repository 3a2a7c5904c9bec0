"""The built-in catalog: every policy a family registers is in the static name table (so a
lookup can import only that family), and a lookup imports nothing else."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import numpy as np
import pytest

from schedopt.backends import Status
from schedopt.core.outcome import Outcome
from schedopt.core.policy import Policy
from schedopt.core.registry import registered, resolve
from schedopt.policies import catalog


class _Mine(Policy):
    name = "isolated"
    summary = "a user's replacement"

    def solve(self, problem, options, solver):
        X = np.zeros((problem.num_jobs, problem.num_types))
        return Outcome.from_status(X, Status.FEASIBLE, None, None, 0.0, "none")


def test_static_table_names_exactly_what_each_family_registers():
    for module in catalog.FAMILIES:
        names = [catalog.entry_name(e) for e in importlib.import_module(module).POLICIES]
        table = [name for name, where in catalog.BUILTINS.items() if where == module]
        assert names == table, module
    assert set(catalog.BUILTINS.values()) == set(catalog.FAMILIES)


def test_every_builtin_and_gavel_name_resolves_to_the_policy_of_that_name():
    entries = registered()
    assert list(entries)[:len(catalog.BUILTINS)] == list(catalog.BUILTINS)
    for name in catalog.BUILTINS:
        policy, _ = resolve(name)
        assert policy is entries[name].policy
        assert entries[name].builtin
    for gavel_name, (ours, options) in catalog.GAVEL_ALIASES.items():
        policy, fixed = resolve(f"gavel:{gavel_name}")
        assert policy is entries[ours].policy
        assert fixed == {**entries[ours].defaults, **options}


def _modules_after(code: str) -> dict:
    """The schedopt policy families and heavy packages loaded after running `code` in a fresh
    interpreter."""
    probe = (code + "\nimport json, sys\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.endswith(('builtin', 'builtin_events')) "
             "or m.startswith('schedopt.policies.') and m.count('.') == 2 "
             "or m in ('pandas', 'scipy.sparse', 'jsonschema'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("name, builtin", [
    ("max_min_fairness", "max_min_fairness"), ("gavel:fifo_perf", "fifo"),
    ("smd_greedy", "smd_greedy"), ("edf", "edf"), ("water_filling_packed", None)])
def test_a_lookup_imports_only_the_family_of_the_name(name, builtin):
    loaded = _modules_after(f"from schedopt.core.registry import resolve\n"
                            f"print(resolve({name!r})[0].name)")
    families = {m for m in loaded if m.endswith(("builtin", "builtin_events"))}
    assert families == {catalog.BUILTINS[builtin or name]}, loaded
    assert "pandas" not in loaded and "jsonschema" not in loaded


def test_importing_the_package_and_the_backends_imports_no_scipy_sparse_nor_a_policy():
    loaded = _modules_after("import schedopt, schedopt.backends, schedopt.core.registry, "
                            "schedopt.result, schedopt.instance")
    assert not {"scipy.sparse", "pandas", "jsonschema"} & loaded, loaded
    assert not any(m.endswith("builtin") for m in loaded), loaded


def test_a_user_policy_under_a_builtin_name_needs_replace_and_then_wins(monkeypatch):
    from schedopt.core import registry

    # A fresh registry state in which no family is loaded yet.
    monkeypatch.setattr(registry, "_ENTRIES", {})
    monkeypatch.setattr(catalog, "_loaded", set())
    mine = _Mine()
    with pytest.raises(registry.PolicyError, match="already registered"):
        registry.register_policy(mine, name="isolated")
    registry.register_policy(mine, name="isolated", replace=True)
    assert resolve("isolated")[0] is mine
    entries = registry.registered()  # loading every family keeps the user's policy
    assert entries["isolated"].policy is mine and not entries["isolated"].builtin
    assert list(entries)[:len(catalog.BUILTINS)] == list(catalog.BUILTINS)
