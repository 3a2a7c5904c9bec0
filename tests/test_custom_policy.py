"""Users' own policies: the example `raw_max_min` against an independent linprog model, the
decorator and ModelPolicy, register_policy, the `schedopt.policies` entry point and
`--policy MODULE:NAME` on the CLI."""

from __future__ import annotations

import dataclasses
import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.optimize import linprog
from scipy.sparse import coo_matrix, hstack, kron, eye, vstack, csr_matrix

import schedopt
from schedopt.cli.main import main
from schedopt.core import registry
from schedopt.core.problem import ThroughputProblem

ROOT = Path(__file__).resolve().parents[1]
TINY = str(ROOT / "instances" / "tiny.json")
EXAMPLE = "examples.custom_policy:raw_max_min"

if str(ROOT) not in sys.path:  # the example is imported from a checkout, as users run it
    sys.path.insert(0, str(ROOT))

from examples.custom_policy import raw_max_min  # noqa: E402


def random_problem(rng: np.random.Generator) -> ThroughputProblem:
    M, J = int(rng.integers(1, 12)), int(rng.integers(1, 4))
    T = rng.uniform(0.5, 10.0, (M, J)) * (rng.random((M, J)) > 0.25)
    T[np.arange(M), rng.integers(0, J, M)] = rng.uniform(0.5, 10.0, M)  # every job runs somewhere
    capacity = rng.integers(1, 9, J).astype(float)
    scale = rng.choice([1.0, 2.0, 4.0], M)
    scale = np.minimum(scale, capacity.max())
    return ThroughputProblem.from_arrays(T, scale, rng.uniform(0.5, 3.0, M), capacity)


def linprog_raw_max_min(problem: ThroughputProblem) -> float:
    """max t s.t. sum_j T[m,j] X[m,j] >= w_m t, sum_j X[m,j] <= 1, sum_m s_m X[m,j] <= c_j,
    X >= 0 and X[m,j] = 0 where T[m,j] = 0 or s_m > c_j; columns [X (row-major), t]."""
    T, w, s, c = problem.throughput, problem.weight, problem.scale_factor, problem.capacity
    M, J = T.shape
    rows_per_job = kron(eye(M), np.ones((1, J)))                     # (M, M*J)
    level = hstack([-(rows_per_job @ csr_matrix(np.diag(T.ravel()))), csr_matrix(w[:, None])])
    time = hstack([rows_per_job, csr_matrix((M, 1))])
    gpus = hstack([kron(np.ones((1, M)), eye(J)) @ csr_matrix(np.diag(np.repeat(s, J))),
                   csr_matrix((J, 1))])
    can = (T > 0) & (s[:, None] <= c[None, :])
    bounds = [(0, None if ok else 0) for ok in can.ravel()] + [(None, None)]
    cost = np.zeros(M * J + 1)
    cost[-1] = -1.0
    res = linprog(cost, A_ub=vstack([level, time, gpus]).tocsr(),
                  b_ub=np.concatenate([np.zeros(M), np.ones(M), c]), bounds=bounds,
                  method="highs")
    assert res.status == 0, res.message
    return -res.fun


def assert_feasible(problem: ThroughputProblem, X: np.ndarray, tol: float = 1e-7) -> None:
    assert X.shape == problem.throughput.shape
    assert (X >= -tol).all()
    assert (X.sum(axis=1) <= 1 + tol).all()
    assert ((problem.scale_factor[:, None] * X).sum(axis=0) <= problem.capacity + tol).all()
    assert (np.abs(X[~problem.runnable]) <= tol).all()


def raw_level(problem: ThroughputProblem, X: np.ndarray) -> float:
    return float(((problem.throughput * X).sum(axis=1) / problem.weight).min())


def test_raw_max_min_matches_linprog_on_random_instances():
    rng = np.random.default_rng(14)
    for _ in range(25):
        problem = random_problem(rng)
        expected = linprog_raw_max_min(problem)
        result = schedopt.solve(problem, raw_max_min)
        assert result.status is schedopt.Status.OPTIMAL
        assert result.objective == pytest.approx(expected, rel=1e-6)
        assert_feasible(problem, result.X)
        assert raw_level(problem, result.X) == pytest.approx(expected, rel=1e-6)


def test_objective_of_a_given_allocation_is_the_model_with_x_fixed():
    rng = np.random.default_rng(3)
    options = raw_max_min.parse_options({})
    for _ in range(10):
        problem = random_problem(rng)
        X = schedopt.solve(problem, raw_max_min).X
        for candidate in (X, 0.5 * X, X * rng.random(X.shape)):
            assert raw_max_min.objective(problem, candidate, options) == pytest.approx(
                raw_level(problem, candidate), rel=1e-6, abs=1e-9)


def test_example_is_at_most_30_lines_and_uses_only_the_public_layer():
    text = (ROOT / "examples" / "custom_policy.py").read_text()
    assert len(text.splitlines()) <= 30
    assert "import schedopt" in text and "schedopt." not in text.replace("schedopt.policy(", "") \
        .replace("schedopt.allocation_variable(", "").replace("schedopt.solve(", "") \
        .replace("schedopt solve", "")


def test_python_api_takes_the_object_the_reference_and_the_registered_name():
    problem = ThroughputProblem.from_instance(schedopt.load_instance(TINY))
    expected = linprog_raw_max_min(problem)
    for policy in (raw_max_min, EXAMPLE, "raw_max_min"):
        result = schedopt.solve(TINY, policy)
        assert result.policy == "raw_max_min"
        assert result.objective == pytest.approx(expected, rel=1e-6)


def test_decorated_policy_pickles_by_reference():
    assert pickle.loads(pickle.dumps(raw_max_min)) is raw_max_min


def test_cli_solves_the_example_from_a_checkout():
    problem = ThroughputProblem.from_instance(schedopt.load_instance(TINY))
    command = ([shutil.which("schedopt")] if shutil.which("schedopt")
               else [sys.executable, "-m", "schedopt.cli.main"])
    done = subprocess.run(command + ["solve", "instances/tiny.json", "--policy", EXAMPLE,
                                     "--json"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["policy"] == "raw_max_min" and document["status"] == "optimal"
    assert document["objective"] == pytest.approx(linprog_raw_max_min(problem), rel=1e-6)


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_cli_pop_2_runs_the_example_and_reports_its_objective_on_the_whole_instance():
    problem = ThroughputProblem.from_instance(schedopt.load_instance(TINY))
    result = run("solve", TINY, "--policy", EXAMPLE, "--pop", "2", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["pop"]["k"] == 2
    X = np.array([[document["allocation"][job][t] for t in problem.gpu_types]
                  for job in problem.job_ids])
    assert_feasible(problem, X)
    assert document["objective"] == pytest.approx(raw_level(problem, X), rel=1e-6)
    assert document["objective"] <= linprog_raw_max_min(problem) * (1 + 1e-6)


@pytest.mark.parametrize("command", [["simulate", TINY, "-p", EXAMPLE, "--json"],
                                     ["compare", TINY, "-p", f"max_min_fairness,{EXAMPLE}",
                                      "--json"]], ids=["simulate", "compare"])
def test_simulate_and_compare_take_the_example_as_module_name(command):
    result = run(*command)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)


@pytest.mark.parametrize("reference, expected", [
    ("no_such_module_14:policy", "cannot import 'no_such_module_14'"),
    ("examples.custom_policy:nothing_here", "has no 'nothing_here'"),
    ("examples.custom_policy:schedopt", "not a Policy"),
])
@pytest.mark.parametrize("command", ["solve", "simulate", "compare"])
def test_a_bad_module_name_reference_is_one_line_and_exit_2(command, reference, expected):
    result = run(command, TINY, "--policy" if command != "compare" else "--policies", reference)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0]


@dataclasses.dataclass(frozen=True)
class CappedOptions:
    cap: float = 1.0  # most of its time (fraction in [0, 1]) any job may get

    def __post_init__(self):
        if not 0 < self.cap <= 1:
            raise ValueError(f"cap must be in (0, 1], got {self.cap}")


class CappedTotalThroughput(schedopt.ModelPolicy):
    """Maximize sum_m,j T[m,j] X[m,j] (steps/s) with each job's time at most `cap`."""

    name = "capped_total_throughput_test"
    summary = "max total steps/s, each job at most `cap` of the time"
    objective_doc = "total steps/s"
    Options = CappedOptions

    def build(self, problem, model, options):
        X = schedopt.allocation_variable(model, problem)
        model.add("cap", X.sum(axis=1) <= options.cap)
        model.maximize((problem.throughput * X).sum())
        return X


def linprog_capped_total(problem: ThroughputProblem, cap: float) -> float:
    T, s, c = problem.throughput, problem.scale_factor, problem.capacity
    M, J = T.shape
    A = vstack([kron(eye(M), np.ones((1, J))), kron(np.ones((1, M)), eye(J)) @
                coo_matrix(np.diag(np.repeat(s, J)))])
    bounds = [(0, None if ok else 0) for ok in problem.runnable.ravel()]
    res = linprog(-T.ravel(), A_ub=A.tocsr(), b_ub=np.concatenate([np.full(M, cap), c]),
                  bounds=bounds, method="highs")
    return -res.fun


def test_register_policy_from_user_code_then_solve_by_name():
    policy = schedopt.register_policy(CappedTotalThroughput)
    try:
        rng = np.random.default_rng(7)
        for _ in range(5):
            problem = random_problem(rng)
            result = schedopt.solve(problem, "capped_total_throughput_test", cap=0.5)
            assert result.objective == pytest.approx(linprog_capped_total(problem, 0.5), rel=1e-6)
            assert (result.X.sum(axis=1) <= 0.5 + 1e-7).all()
            assert policy.objective(problem, result.X, policy.parse_options({"cap": 0.5})) == \
                pytest.approx(result.objective, rel=1e-6)
        with pytest.raises(schedopt.PolicyError, match="cap must be in"):
            schedopt.solve(TINY, "capped_total_throughput_test", cap=2)
        with pytest.raises(schedopt.PolicyError, match="already registered"):
            schedopt.register_policy(CappedTotalThroughput(), name="max_min_fairness")
    finally:
        registry.unregister_policy("capped_total_throughput_test")


def test_entry_point_group_schedopt_policies_finds_an_installed_plugin(tmp_path, monkeypatch):
    (tmp_path / "plugin_policy_14.py").write_text(
        "import schedopt\n"
        "from schedopt.modeling.policy import FunctionPolicy\n"
        "def build(problem, model):\n"
        "    X = schedopt.allocation_variable(model, problem)\n"
        "    model.maximize((problem.throughput * X).sum())\n"
        "    return X\n"
        "PLUGIN = FunctionPolicy(build, 'plugin_total_14', summary='a plugin')\n")
    info = tmp_path / "plugin_policy_14-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-policy-14\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[schedopt.policies]\nplugin_total_14 = plugin_policy_14:PLUGIN\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry._loaded, "plugins", False)
    try:
        entries = registry.registered()
        assert "plugin_total_14" in entries and entries["plugin_total_14"].policy.summary == "a plugin"
        policy, fixed = registry.resolve("plugin_total_14")
        assert policy.name == "plugin_total_14" and fixed == {}
        result = schedopt.solve(TINY, "plugin_total_14")
        assert result.objective == pytest.approx(linprog_capped_total(
            ThroughputProblem.from_instance(schedopt.load_instance(TINY)), 1.0), rel=1e-6)
    finally:
        registry.unregister_policy("plugin_total_14")


def test_a_plugin_cannot_take_a_built_in_name_and_built_in_names_skip_the_plugin_scan(
        tmp_path, monkeypatch):
    (tmp_path / "plugin_policy_shadow.py").write_text(
        "from schedopt.modeling.policy import FunctionPolicy\n"
        "SHADOW = FunctionPolicy(lambda problem, model: None, 'max_min_fairness')\n")
    info = tmp_path / "plugin_policy_shadow-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-policy-shadow\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[schedopt.policies]\nmax_min_fairness = plugin_policy_shadow:SHADOW\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry._loaded, "plugins", False)

    def no_scan():
        raise AssertionError("a built-in name looked for plugins")

    with monkeypatch.context() as scan:
        scan.setattr(registry, "_load_plugins", no_scan)
        policy, _ = registry.resolve("max_min_fairness")
    assert registry._loaded["plugins"] is False
    with pytest.warns(UserWarning, match="'max_min_fairness' .* is not loaded: the name is "
                                         "taken by a built-in policy"):
        entries = registry.registered()
    assert entries["max_min_fairness"].builtin and entries["max_min_fairness"].policy is policy
    assert "plugin_policy_shadow" not in sys.modules


def test_the_guide_shows_the_example_as_it_is():
    readme = (ROOT / "docs" / "guide" / "custom-policies.md").read_text()
    example = (ROOT / "examples" / "custom_policy.py").read_text()
    policy = example[example.index("import schedopt"):example.index('\n\nif __name__')]
    assert policy in readme


def test_no_jobs_is_an_optimal_empty_allocation_as_for_built_in_policies():
    problem = ThroughputProblem.from_arrays(np.zeros((0, 2)), capacity=[1, 2])
    ours, builtin = schedopt.solve(problem, raw_max_min), schedopt.solve(problem, "max_min_fairness")
    assert ours.status is builtin.status is schedopt.Status.OPTIMAL
    assert ours.X.shape == (0, 2) and ours.objective is None


def test_objective_absorbs_round_off_and_refuses_an_infeasible_allocation():
    problem = ThroughputProblem.from_instance(schedopt.load_instance(TINY))
    options = raw_max_min.parse_options({})
    X = schedopt.solve(problem, raw_max_min).X
    noisy = X + np.where(problem.runnable, 0.0, 1e-9) - 1e-12
    assert raw_max_min.objective(problem, noisy, options) == pytest.approx(
        raw_level(problem, X), rel=1e-6)
    assert raw_max_min.objective(problem, np.ones_like(X), options) is None  # rows overfull


def test_a_plain_install_ships_every_package_the_public_layer_imports():
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts)
             for init in (ROOT / "schedopt").rglob("__init__.py")}
    assert found - listed == set()
