"""The CLI as a user runs it: exit codes, one-line errors, table and JSON output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from schedopt.cli.main import main
from schedopt.instance import load_instance
from schedopt.core.registry import registered
from schedopt.policies.catalog import GAVEL_ALIASES

ROOT = Path(__file__).resolve().parents[1]
TINY = str(ROOT / "instances" / "tiny.json")
MALFORMED = sorted((ROOT / "tests" / "malformed").iterdir())


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize("path", MALFORMED, ids=lambda p: p.name)
def test_every_malformed_file_gives_one_line_and_exit_2(path):
    for command in (["solve", str(path)], ["validate", str(path)]):
        result = run(*command)
        assert result.exit_code == 2, (command, result.output)
        lines = result.stderr.strip().splitlines()
        assert lines and "Traceback" not in result.stderr
        assert path.name in lines[0]
        if command[0] == "solve":
            assert len(lines) == 1 and lines[0].startswith("error: ")


def test_solve_tiny_prints_the_hand_computed_optimum_as_a_table():
    result = run("solve", TINY)
    assert result.exit_code == 0
    assert "status     optimal" in result.output
    assert "objective  1.25" in result.output
    assert "0.7500" in result.output and "0.8125" in result.output


def test_solve_json_is_the_result_document():
    result = run("solve", TINY, "--policy", "gavel:max_min_fairness_perf", "--json")
    doc = json.loads(result.output)
    assert doc["format"] == "schedopt-result/1" and doc["policy"] == "max_min_fairness"
    assert doc["status"] == "optimal"
    assert doc["objective"] == pytest.approx(1.25, rel=1e-6)
    assert doc["allocation"]["a"] == pytest.approx({"fast": 0.75, "slow": 0.25}, abs=1e-6)
    assert doc["effective_throughput"]["c"] == pytest.approx(4 * 0.1875 + 0.8125, rel=1e-6)


@pytest.mark.parametrize("solver", ["highs", "clarabel", "glop", "cbc", "cvxpy:CLARABEL"])
def test_solve_with_each_solver_name(solver):
    doc = json.loads(run("solve", TINY, "--solver", solver, "--json").output)
    assert doc["objective"] == pytest.approx(1.25, rel=1e-6)


def test_output_and_export_mps_write_files_that_reproduce_the_optimum(tmp_path):
    import highspy

    out, mps = tmp_path / "r.json", tmp_path / "m.mps"
    result = run("solve", TINY, "-p", "min_makespan", "--output", str(out), "--export-mps", str(mps))
    assert result.exit_code == 0
    doc = json.loads(out.read_text())
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(mps))
    h.run()
    z = h.getInfo().objective_function_value
    assert z > 0 and doc["status"] == "optimal"
    # The LP maximizes z = D / makespan, D = the largest best-case job time (seconds).
    jobs = load_instance(TINY).jobs
    best_case = max(job.remaining_steps / max(job.throughput.values()) for job in jobs)
    assert best_case / z == pytest.approx(doc["objective"], rel=1e-6)


def test_export_mps_of_the_max_min_decomposition_writes_its_last_restricted_lp(tmp_path):
    # The decomposition builds its LPs as plain column arrays (no scipy): the MPS writer
    # still reads them, and the last restricted LP's optimum is the max-min level.
    import highspy

    mps = tmp_path / "m.mps"
    result = run("solve", TINY, "--option", "method=decomposition", "--json",
                 "--export-mps", str(mps))
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert doc["solver"] == "decomposition" and doc["objective"] == pytest.approx(1.25, rel=1e-9)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(mps))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    assert h.getInfo().objective_function_value == pytest.approx(1.25, rel=1e-9)


def test_export_mps_of_a_baseline_is_a_one_line_error(tmp_path):
    result = run("solve", TINY, "-p", "fifo", "--export-mps", str(tmp_path / "m.mps"))
    assert result.exit_code == 2 and result.stderr.startswith("error: policy fifo solves no LP")


@pytest.mark.parametrize("args, message", [
    (["solve", TINY, "-p", "nope"], "unknown policy 'nope'"),
    (["solve", TINY, "-p", "gavel:nope"], "unknown Gavel policy 'nope'"),
    (["solve", TINY, "-s", "gurobi"], "unknown solver 'gurobi'"),
    (["solve", TINY, "-o", "bogus=1"], "has no option(s) bogus"),
    (["solve", TINY, "-o", "novalue"], "expects KEY=VALUE"),
    (["solve", "/nonexistent/file.json"], "/nonexistent/file.json"),
])
def test_user_errors_are_one_line_with_exit_2(args, message):
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_infeasible_slos_are_named_and_exit_1(tmp_path):
    doc = json.loads(Path(TINY).read_text())
    doc["jobs"][0]["deadline"] = 1.0  # needs total_steps steps/s: impossible
    path = tmp_path / "late.json"
    path.write_text(json.dumps(doc))
    result = run("solve", str(path), "-p", "min_cost", "--json")
    assert result.exit_code == 1
    out = json.loads(result.output)
    assert out["status"] == "infeasible" and "a" in out["infeasible_slos"]


def test_policies_lists_every_policy_and_alias():
    text = run("policies").output
    for name in registered():
        assert name in text
    listing = json.loads(run("policies", "--json").output)
    aliases = {a for p in listing for a in p["gavel_aliases"]}
    assert aliases == {f"gavel:{name}" for name in GAVEL_ALIASES}


def test_validate_reports_ok_for_bundled_instances():
    files = sorted(str(p) for p in (ROOT / "instances").glob("*.*") if p.suffix in (".json", ".yaml"))
    result = run("validate", *files)
    assert result.exit_code == 0 and result.output.count(": ok (") == len(files) == 8


def test_demo_runs_from_the_installed_console_script():
    done = subprocess.run([sys.executable, "-m", "schedopt.cli.main", "demo"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "max_min_fairness" in done.stdout and "optimal" in done.stdout
    # every objective shown says what it measures, in which unit
    assert "min_makespan: makespan in seconds" in done.stdout


def test_one_line_errors_and_the_exit_code_are_defined_once():
    from schedopt.cli import errors

    for path in (ROOT / "schedopt" / "cli").glob("*.py"):
        text = path.read_text()
        if path.name != "errors.py":
            assert "class OneLineErrors" not in text, path.name
            assert "EXIT_USER_ERROR = " not in text, path.name
    assert errors.EXIT_USER_ERROR == 2


def test_policies_lists_a_policy_registered_from_user_code():
    import schedopt
    from schedopt.core.registry import unregister_policy

    @schedopt.policy("listed_user_policy_14", summary="a user's policy")
    def listed(problem, model):
        X = schedopt.allocation_variable(model, problem)
        model.maximize(X.sum())
        return X

    try:
        rows = json.loads(run("policies", "--json").stdout)
        assert {"name": "listed_user_policy_14", "summary": "a user's policy"}.items() <= \
            next(r for r in rows if r["name"] == "listed_user_policy_14").items()
        assert run("solve", TINY, "-p", "listed_user_policy_14").exit_code == 0
    finally:
        unregister_policy("listed_user_policy_14")


def test_a_deprecated_solver_name_is_one_warning_line_and_the_same_answer():
    old = subprocess.run([sys.executable, "-m", "schedopt.cli", "solve", TINY,
                          "-s", "decomposition", "--json"], capture_output=True, text=True)
    new = subprocess.run([sys.executable, "-m", "schedopt.cli", "solve", TINY,
                          "-o", "method=decomposition", "--json"], capture_output=True, text=True)
    assert old.returncode == new.returncode == 0
    assert old.stderr.splitlines() == ["warning: solver 'decomposition' is deprecated; use the "
                                       "policy option method=decomposition (-o method=decomposition)"]
    assert new.stderr == ""
    assert json.loads(old.stdout)["objective"] == json.loads(new.stdout)["objective"]


def test_export_mps_of_chronus_writes_the_lease_milp_of_the_boundary(tmp_path):
    import highspy

    out, mps = tmp_path / "r.json", tmp_path / "m.mps"
    result = run("solve", str(ROOT / "instances" / "chronus-leases.json"), "-p", "chronus",
                 "--output", str(out), "--export-mps", str(mps))
    assert result.exit_code == 0
    doc = json.loads(out.read_text())
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(mps))
    lp = h.getLp()
    assert lp.num_col_ > 0
    assert all(kind == highspy.HighsVarType.kInteger for kind in lp.integrality_)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    # The policy's objective is the lease MILP's optimum (status optimal: proven).
    assert doc["status"] == "optimal"
    assert h.getInfo().objective_function_value == pytest.approx(doc["objective"], abs=1e-6)


@pytest.mark.parametrize("instance, policy, field", [
    ("chronus-leases.json", "min_cost", "cluster.gpu_types.v100.cost_per_hour"),
    ("chronus-leases.json", "allox", "jobs[0].scale_factor"),
    ("tiny.json", "max_min_fairness_packed", "performance.colocated"),
    ("tiny.json", "smd", "jobs[0].parameter_server"),
])
def test_what_a_policy_needs_of_the_file_is_one_line_naming_file_and_field(instance, policy,
                                                                           field, tmp_path):
    path = ROOT / "instances" / instance
    out = tmp_path / "result.json"
    result = CliRunner().invoke(main, ["solve", str(path), "-p", policy, "--output", str(out)])
    assert result.exit_code == 2 and not out.exists()
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: {field}: "), lines
