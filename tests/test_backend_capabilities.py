"""Each backend's declared capabilities against what it does, its status maps, and the
incremental (column generation) interface of HiGHS."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from test_backends import INF, lp_of, market_split, run_python

from schedopt.backends import (Capability, LinearProgram, SolutionStatus, SolveOptions, SolveResult,
                               Status, Termination, backends_with, get_backend, solve_lp)
from schedopt.backends.highs import mip_is_broken
from schedopt.backends.mps import write_mps
from schedopt.backends.session import Solver
from schedopt.errors import PolicyError, SolveError

C = Capability
NAMES = ("highs", "highs-ipm", "clarabel", "glop", "pdlp", "cpsat", "scip", "cbc", "cvxpy",
         "cvxpy:CLARABEL", "cvxpy:SCS", "cvxpy:SCIPY", "cvxpy:HIGHS")
HIGHS_MILP = C.none() if mip_is_broken() else C.MILP
EXPECTED = {
    "highs": C.LP | C.DUALS | C.WARM_START | C.ADD_COLUMNS | HIGHS_MILP | C.PRESOLVE_OFF,
    "highs-ipm": C.LP | C.DUALS | C.PRESOLVE_OFF,
    "clarabel": C.LP | C.DUALS,
    "glop": C.LP | C.DUALS | C.PRESOLVE_OFF,
    "pdlp": C.LP | C.DUALS,
    "cpsat": C.MILP | C.MIP_START | C.DETERMINISTIC_TIME | C.PRESOLVE_OFF,
    "scip": C.LP | C.MILP | C.MIP_START | C.PRESOLVE_OFF,
    "cbc": C.LP | C.MILP | C.DUALS,
    "cvxpy": C.LP | C.MILP | C.DUALS,
    "cvxpy:CLARABEL": C.LP | C.DUALS,
    "cvxpy:SCS": C.LP | C.DUALS,
    "cvxpy:SCIPY": C.LP | C.MILP | C.DUALS,
    "cvxpy:HIGHS": C.LP | C.DUALS | HIGHS_MILP,
}

# Nondegenerate, unique duals (tests/test_backends.py): every row kind, maximize, an offset.
DUAL_LP = lp_of([[1, 1, 0], [1, -1, 1], [0, 1, 2], [1, 0, 0]], [-INF, 1, 2, -INF], [4, INF, 2, 3],
                [0, 0, 0], [10, 10, 10], [3, 2, 1], maximize=True, objective_offset=2.0)
# min y + 1.5 z  s.t.  2y + z >= 7,  y in [0, 2],  z integer: 6.5 at (2, 3).
MIXED = lp_of([[2, 1]], [7], [INF], [0, 0], [2, INF], [1, 1.5], integer=np.array([False, True]))
# The same with y integer too (for pure-integer solvers): 6.5 at (2, 3).
PURE = lp_of([[2, 1]], [7], [INF], [0, 0], [2, INF], [1, 1.5], integer=np.array([True, True]))


def test_every_backend_declares_its_capabilities():
    assert {name: get_backend(name).capabilities for name in NAMES} == EXPECTED


def test_backends_with_lists_exactly_the_registered_backends_that_have_the_flags():
    for needed in (C.LP, C.MILP, C.DUALS, C.MIP_START, C.ADD_COLUMNS, C.DETERMINISTIC_TIME,
                   C.PRESOLVE_OFF, C.MILP | C.MIP_START,
                   C.LP | C.MILP):
        expected = [name for name in EXPECTED if ":" not in name and needed in EXPECTED[name]]
        assert backends_with(needed) == expected, needed
    assert backends_with(C.ADD_COLUMNS | C.DUALS) == ["highs"]


@pytest.mark.parametrize("name", NAMES)
def test_a_backend_returns_duals_exactly_when_it_claims_them(name):
    if C.LP not in EXPECTED[name]:
        pytest.skip(f"{name} solves no LP")
    reference = solve_lp(DUAL_LP, "highs")
    result = solve_lp(DUAL_LP, name)
    assert result.status is Status.OPTIMAL and result.reason is Termination.OPTIMAL
    assert result.objective == pytest.approx(reference.objective, rel=1e-6)
    if C.DUALS in EXPECTED[name]:
        np.testing.assert_allclose(result.row_duals, reference.row_duals, atol=1e-5)
    else:
        assert result.row_duals is None


@pytest.mark.parametrize("name", NAMES)
def test_a_backend_that_claims_milp_solves_a_tiny_one_right_and_one_that_does_not_refuses(name):
    lp = PURE if C.LP not in EXPECTED[name] else MIXED
    if C.MILP in EXPECTED[name]:
        result = solve_lp(lp, name, SolveOptions(mip_gap=0.0))
        assert result.status is Status.OPTIMAL and result.solution is SolutionStatus.OPTIMAL
        assert result.objective == pytest.approx(6.5, abs=1e-9)
        np.testing.assert_allclose(result.x, [2.0, 3.0], atol=1e-9)
    else:
        with pytest.raises(SolveError) as refused:
            solve_lp(lp, name)
        assert "\n" not in str(refused.value)


@pytest.mark.parametrize("name", [name for name in NAMES if C.LP not in EXPECTED[name]])
def test_a_backend_without_lp_refuses_continuous_columns_in_one_line(name):
    with pytest.raises(SolveError) as refused:
        solve_lp(MIXED, name)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("name", [name for name in NAMES if C.MILP in EXPECTED[name]])
def test_a_backend_reads_a_mip_start_exactly_when_it_claims_mip_start(name):
    """A start is only a hint, so the optimum is the same with one; a backend that takes it
    checks it (a wrong shape is a SolveError), one that does not never looks at it."""
    lp = PURE if C.LP not in EXPECTED[name] else MIXED
    result = solve_lp(lp, name, SolveOptions(mip_gap=0.0, start=np.array([2.0, 3.0])))
    assert result.status is Status.OPTIMAL and result.objective == pytest.approx(6.5, abs=1e-9)
    wrong = SolveOptions(start=np.zeros(3))
    if C.MIP_START in EXPECTED[name]:
        with pytest.raises(SolveError, match="start has shape"):
            solve_lp(lp, name, wrong)
    else:
        assert solve_lp(lp, name, wrong).objective == pytest.approx(6.5, abs=1e-9)


def test_only_a_backend_with_add_columns_gives_an_incremental_program():
    for name in NAMES:
        solver = Solver(name)
        if C.ADD_COLUMNS in EXPECTED[name]:
            assert solver.incremental(DUAL_LP).program is DUAL_LP
            continue
        with pytest.raises(PolicyError) as refused:
            solver.incremental(DUAL_LP)
        assert "add_columns" in str(refused.value)
        assert "use one of highs" in str(refused.value) and "\n" not in str(refused.value)


# ---------------------------------------------------------------- statuses

@pytest.mark.parametrize("name", ("scip", "cpsat", "cbc", "cvxpy"))
def test_a_time_limit_is_the_termination_with_a_solution_or_none(name):
    result = solve_lp(market_split(), name, SolveOptions(time_limit=0.5))
    assert result.reason is Termination.TIME_LIMIT, result.detail
    assert result.solution in (SolutionStatus.FEASIBLE, SolutionStatus.NONE)
    assert result.status is (Status.FEASIBLE if result.solution is SolutionStatus.FEASIBLE
                             else Status.ERROR)
    assert (result.x is None) == (result.solution is SolutionStatus.NONE)


def big_lp() -> LinearProgram:
    rng = np.random.default_rng(0)
    n, m = 3000, 1500
    return LinearProgram(c=rng.uniform(0, 1, n), A=sp.random(m, n, density=0.01, random_state=1,
                                                             format="csr"),
                         row_lower=np.full(m, -INF), row_upper=np.ones(m), col_lower=np.zeros(n),
                         col_upper=np.ones(n), maximize=True)


@pytest.mark.parametrize("name", ("highs", "highs-ipm", "glop", "pdlp", "clarabel", "scip", "cbc",
                                  "cvxpy"))
def test_an_lp_stopped_by_its_time_limit_says_so(name):
    result = solve_lp(big_lp(), name, SolveOptions(time_limit=1e-6))
    assert result.reason is Termination.TIME_LIMIT, result.detail
    assert result.solution in (SolutionStatus.FEASIBLE, SolutionStatus.NONE)
    assert result.status is not Status.OPTIMAL and result.detail


@pytest.mark.parametrize("name", ("highs", "glop", "clarabel", "cbc", "cvxpy:CLARABEL"))
def test_infeasible_and_unbounded_lps_have_no_solution_and_say_why(name):
    infeasible = solve_lp(lp_of([[1, 1], [1, 1]], [-INF, 3], [2, INF], [0, 0], [INF, INF], [1, 1]),
                          name)
    assert (infeasible.reason, infeasible.solution) == (Termination.INFEASIBLE, SolutionStatus.NONE)
    unbounded = solve_lp(lp_of([[1, -1]], [-INF], [2], [0, 0], [INF, INF], [1, 1], maximize=True),
                         name)
    assert (unbounded.reason, unbounded.solution) == (Termination.UNBOUNDED, SolutionStatus.NONE)
    assert infeasible.detail and unbounded.detail


def test_a_solve_result_built_the_old_way_keeps_its_status_and_text():
    result = SolveResult(status=Status.ERROR, objective=None, bound=None, x=None,
                         solve_seconds=0.0, backend="x", termination="no incumbent")
    assert (result.reason, result.solution, result.status) == \
        (Termination.ERROR, SolutionStatus.NONE, Status.ERROR)
    assert result.termination == result.detail == "no incumbent"
    result.status = Status.FEASIBLE
    assert (result.reason, result.solution) == (Termination.FEASIBLE, SolutionStatus.FEASIBLE)
    typed = SolveResult(reason=Termination.TIME_LIMIT, solution=SolutionStatus.FEASIBLE,
                        objective=1.0, detail="Time limit reached")
    assert typed.status is Status.FEASIBLE and typed.termination == "Time limit reached"
    with pytest.raises(TypeError):
        SolveResult(status=Status.OPTIMAL, reason=Termination.OPTIMAL,
                    solution=SolutionStatus.OPTIMAL)
    with pytest.raises(TypeError):
        SolveResult(reason=Termination.OPTIMAL)


# ---------------------------------------------------------------- incremental programs

def restricted() -> tuple[LinearProgram, sp.csc_matrix, np.ndarray]:
    """max c x, A x <= 1, 0 <= x <= 1 over random columns: the first 30 loaded, 20 to add."""
    rng = np.random.default_rng(3)
    A = sp.random(15, 50, density=0.3, random_state=4, format="csc")
    c = rng.uniform(0.1, 1.0, 50)
    lp = LinearProgram(c[:30], A[:, :30].tocsr(), np.full(15, -INF), np.ones(15), np.zeros(30),
                       np.ones(30), maximize=True)
    return lp, A[:, 30:], c


def test_added_columns_re_solve_warm_to_the_cold_optimum_with_its_duals():
    lp, more, c = restricted()
    solver = Solver("highs", keep_programs=True)
    program = solver.incremental(lp)
    first = program.solve()
    assert first.status is Status.OPTIMAL and program.num_cols == 30
    program.add_columns(c[30:], 0.0, 1.0, more)
    warm = program.solve()
    cold = solve_lp(program.program, "highs")
    assert program.num_cols == 50 and program.program.num_cols == 50
    assert warm.objective == pytest.approx(cold.objective, abs=1e-9)
    assert warm.objective >= first.objective - 1e-12
    np.testing.assert_allclose(warm.row_duals, cold.row_duals, atol=1e-9)
    assert solver.programs == [lp, program.program] and solver.last_program is program.program
    again = program.solve()  # nothing changed: the basis is still optimal
    assert again.extra["simplex_iterations"] == 0
    assert again.objective == pytest.approx(warm.objective, abs=1e-12)


def test_a_column_that_cannot_help_costs_no_simplex_iteration():
    lp, more, c = restricted()
    program = Solver("highs").incremental(lp)
    before = program.solve()
    program.add_columns([-1.0], 0.0, 1.0, sp.csc_matrix(np.ones((15, 1))))
    after = program.solve()
    assert after.extra["simplex_iterations"] == 0
    assert after.objective == pytest.approx(before.objective, abs=1e-12)
    assert after.x[-1] == 0.0


def test_column_bounds_and_options_change_the_loaded_program():
    lp, more, c = restricted()
    program = Solver("highs").incremental(lp)
    program.set_option("simplex_strategy", 4)
    best = program.solve()
    used = int(np.argmax(best.x))
    program.set_column_bounds([used], 0.0, 0.0)
    capped = program.solve()
    assert capped.x[used] == 0.0 and capped.objective <= best.objective + 1e-12
    assert capped.objective == pytest.approx(solve_lp(program.program, "highs").objective, abs=1e-9)
    assert lp.col_upper[used] == 1.0  # the program given is never changed
    with pytest.raises(SolveError, match="no option 'no_such_option'"):
        program.set_option("no_such_option", 1)
    with pytest.raises(SolveError, match="rows"):
        program.add_columns([1.0], 0.0, 1.0, sp.csc_matrix(np.ones((3, 1))))
    with pytest.raises(SolveError, match="out of range"):
        program.set_column_bounds([99], 0.0, 1.0)


def test_the_last_program_exports_to_mps_with_the_same_optimum(tmp_path):
    lp, more, c = restricted()
    solver = Solver("highs")
    program = solver.incremental(lp)
    program.add_columns(c[30:], 0.0, 1.0, more)
    result = program.solve()
    write_mps(solver.last_program, tmp_path / "last.mps")
    highspy = pytest.importorskip("highspy")
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(tmp_path / "last.mps"))
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(result.objective, abs=1e-9)


def test_reading_capabilities_imports_no_solver_package():
    out = run_python("""
        import json, sys
        from schedopt.backends import Capability, backends_with, get_backend
        for name in ("highs", "highs-ipm", "clarabel", "glop", "pdlp", "cpsat", "scip", "cbc",
                     "cvxpy", "cvxpy:SCIPY", "cvxpy:HIGHS"):
            get_backend(name).capabilities
        backends_with(Capability.MILP)
        solvers = {"ortools", "cvxpy", "pulp", "highspy", "clarabel", "scs"}
        print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & solvers)))
    """)
    assert json.loads(out) == []


def test_there_is_no_global_recorder_the_solver_session_keeps_the_programs():
    import schedopt
    import schedopt.backends

    root = Path(schedopt.__file__).parent
    feeders = sorted(path.relative_to(root).as_posix() for path in root.rglob("*.py")
                     if "_feed_recorders(" in path.read_text(encoding="utf-8"))
    assert feeders == []
    assert not hasattr(schedopt.backends, "record")
    assert not hasattr(schedopt.backends, "recording")
