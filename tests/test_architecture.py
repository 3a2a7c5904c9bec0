"""The package's structure: no import cycles between modules, nothing below the CLI imports
it, and only the backends import solver libraries."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "schedopt"
SOLVER_LIBRARIES = {"highspy", "ortools", "pulp", "cvxpy", "clarabel"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> list[tuple[str, bool]]:
    """(imported module, at module level?) for every import in the file; `from a import b`
    counts as a.b when a.b is a module of the package, else as a."""
    tree = ast.parse(path.read_text())
    top_level = {id(node) for node in tree.body}
    type_checking = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            type_checking.update(id(n) for n in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if id(node) in type_checking:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                name = candidate if candidate in MODULES else node.module
                found.append((name, id(node) in top_level))
    return found


FILES = sorted(PACKAGE.rglob("*.py"))
MODULES = {module_name(path): path for path in FILES}


def module_graph() -> dict[str, set[str]]:
    """Module-level imports between the package's own modules (a package's __init__ counts
    as imported with any of its submodules, as Python runs it first)."""
    graph = {}
    for name, path in MODULES.items():
        targets = set()
        for imported, top in imports_of(path):
            if top and imported in MODULES and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def test_no_import_cycles_between_modules():
    graph = module_graph()
    state: dict[str, int] = {}
    cycles = []

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert cycles == []


def test_nothing_below_the_cli_imports_it():
    offenders = [(name, imported) for name, path in MODULES.items()
                 if not name.startswith("schedopt.cli")
                 for imported, _ in imports_of(path) if imported.startswith("schedopt.cli")]
    assert offenders == []


def test_only_backends_import_solver_libraries():
    offenders = [(name, imported) for name, path in MODULES.items()
                 if not name.startswith("schedopt.backends")
                 for imported, _ in imports_of(path)
                 if imported.split(".")[0] in SOLVER_LIBRARIES]
    assert offenders == []


def test_core_contracts_do_not_import_implementations():
    offenders = [(name, imported) for name, path in MODULES.items()
                 if name.startswith("schedopt.core")
                 for imported, top in imports_of(path) if top and imported.startswith(
                     ("schedopt.policies", "schedopt.simulation", "schedopt.cli"))]
    assert offenders == []


def test_no_two_modules_share_a_file_name_for_different_things():
    """Files only (a package is a folder); the exceptions are the generic per-family names
    (policy, builtin, ...) and the CLI's modules, each named after the command it defines."""
    generic = {"__init__", "policy", "policies", "builtin", "model", "baselines", "common",
               "problem", "io"}
    seen: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        if path.name != "__init__.py" and not name.startswith("schedopt.cli."):
            seen.setdefault(path.stem, []).append(name)
    repeated = {leaf: names for leaf, names in seen.items()
                if len(names) > 1 and leaf not in generic}
    assert repeated == {}
