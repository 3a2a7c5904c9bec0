"""Policy lookup: names registered by schedopt and by users, Gavel's names as `gavel:NAME`,
installed plugins (entry-point group `schedopt.policies`) and `MODULE:NAME` references.

    from schedopt import register_policy
    register_policy(MyPolicy())                  # now `schedopt solve F --policy my_policy`
    resolve("examples.custom_policy:raw_max_min")  # imported from the current directory

Built-in policies are registered by `schedopt.policies.catalog` family by family: looking up
one name imports only its family's modules; listing every name (`registered`) imports them all.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any

from schedopt.core.policy import Policy
from schedopt.errors import PolicyError

ENTRY_POINT_GROUP = "schedopt.policies"


@dataclass(frozen=True)
class Entry:
    """A registered name: the policy and the options the name fixes (e.g. agnostic=True)."""

    policy: Policy
    defaults: dict = field(default_factory=dict)
    builtin: bool = False


_ENTRIES: dict[str, Entry] = {}
_GAVEL: dict[str, tuple[str, dict]] = {}
_loaded = {"builtins": False, "plugins": False}


def register_policy(policy: Policy | type[Policy], *, name: str | None = None,
                    defaults: dict | None = None, replace: bool = False,
                    builtin: bool = False) -> Policy:
    """Register `policy` (an instance, or a Policy subclass to instantiate) under `name`
    (default: policy.name) with option `defaults`; returns the policy. Usable as a decorator
    on a Policy subclass. A name already taken needs replace=True."""
    if inspect.isclass(policy) and issubclass(policy, Policy):
        policy = policy()
    if not isinstance(policy, Policy):
        raise PolicyError(f"register_policy expects a Policy, got {type(policy).__name__}")
    key = name or policy.name
    if not builtin and key not in _ENTRIES:
        _load_family_of(key)  # a built-in of that name is registered first, then checked
    if key in _ENTRIES and not replace and _ENTRIES[key].policy is not policy:
        raise PolicyError(f"a policy named {key!r} is already registered; pass replace=True")
    if defaults:
        policy.parse_options(defaults)  # fail now, not at the first solve
    _ENTRIES[key] = Entry(policy, dict(defaults or {}), builtin)
    return policy


def register_gavel_name(gavel_name: str, policy_name: str, options: dict | None = None) -> None:
    """Make `gavel:<gavel_name>` resolve to `policy_name` with `options`."""
    _GAVEL[gavel_name] = (policy_name, dict(options or {}))


def unregister_policy(name: str) -> None:
    """Remove a user-registered name (built-in names stay)."""
    entry = _ENTRIES.get(name)
    if entry is not None and not entry.builtin:
        del _ENTRIES[name]


def registered() -> dict[str, Entry]:
    """Every registered name (built-ins, plugins, user policies): the built-in names in the
    catalog's order, then the others in registration order. Imports every policy family."""
    catalog = _catalog()
    catalog.load_all(taken=set(_ENTRIES))
    _load_plugins()
    ordered = {name: _ENTRIES[name] for name in catalog.BUILTINS if name in _ENTRIES}
    ordered.update((name, entry) for name, entry in _ENTRIES.items() if name not in ordered)
    return ordered


def gavel_names() -> dict[str, tuple[str, dict]]:
    """Gavel's policy names -> (schedopt policy name, options)."""
    _catalog()
    return dict(_GAVEL)


def resolve(name: str) -> tuple[Policy, dict]:
    """(policy, options the name fixes) for a registered name, `gavel:NAME` or `MODULE:NAME`.
    Installed plugins are looked for only when the name is neither registered nor built in
    (the scan costs ~0.05 s per process)."""
    key = name.strip()
    options: dict = {}
    catalog = _catalog()
    if key.startswith("gavel:"):
        gavel_name = key[len("gavel:"):]
        if gavel_name not in _GAVEL:
            raise PolicyError(f"unknown Gavel policy {gavel_name!r}; supported: "
                              f"{', '.join(sorted(_GAVEL))}")
        key, options = _GAVEL[gavel_name]
    elif ":" in key:
        return _from_reference(key), {}
    if key not in _ENTRIES and key not in catalog.BUILTINS:
        _load_plugins()
    if key not in _ENTRIES:
        _load_family_of(key)
    if key not in _ENTRIES:
        raise PolicyError(f"unknown policy {name!r}; run `schedopt policies` for the list, or "
                          f"name one in a module as MODULE:NAME")
    entry = _ENTRIES[key]
    return entry.policy, {**entry.defaults, **options}


def _from_reference(reference: str) -> Policy:
    """The Policy `NAME` in module `MODULE` (imported from the current directory or
    PYTHONPATH, as `uvicorn app:app` does)."""
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise PolicyError(f"policy reference {reference!r} must be MODULE:NAME")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PolicyError(f"policy reference {reference!r}: cannot import {module_name!r} "
                          f"({exc})") from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise PolicyError(f"policy reference {reference!r}: module {module_name!r} has no "
                              f"{attr!r}")
        target = getattr(target, part)
    if inspect.isclass(target) and issubclass(target, Policy):
        target = target()
    if not isinstance(target, Policy):
        raise PolicyError(f"policy reference {reference!r} is a {type(target).__name__}, "
                          f"not a Policy")
    return target


def _catalog():
    """The built-in catalog (importing it registers Gavel's names, no policy family)."""
    _loaded["builtins"] = True
    return importlib.import_module("schedopt.policies.catalog")


def _load_family_of(name: str) -> None:
    """Register the built-in family that defines `name`, if one does (names users or plugins
    already took stay theirs)."""
    _catalog().load_family_of(name, taken=set(_ENTRIES))


def _load_plugins() -> None:
    """Register the policies installed packages announce in the `schedopt.policies` group. A
    plugin never takes a name that is built in or already registered: it is skipped with a
    warning, so that installing a package cannot change what an existing name solves."""
    if _loaded["plugins"]:
        return
    _loaded["plugins"] = True
    import importlib.metadata  # ~0.03 s, on the first lookup only

    builtins = _catalog().BUILTINS
    for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if point.name in builtins or point.name in _ENTRIES:
            owner = "a built-in" if point.name in builtins else "a registered"
            warnings.warn(f"plugin policy {point.name!r} ({point.value}) is not loaded: the "
                          f"name is taken by {owner} policy", stacklevel=2)
            continue
        try:
            loaded = point.load()
        except Exception as exc:  # a broken plugin must not break every command
            raise PolicyError(f"plugin policy {point.name!r} ({point.value}) failed to load: "
                              f"{exc}") from None
        if isinstance(loaded, Policy) or (inspect.isclass(loaded) and issubclass(loaded, Policy)):
            register_policy(loaded, name=point.name)
