"""The price decomposition (`levels.max_level`) against whole LPs solved by a backend, its
Lagrangian bound against the LP optimum, and its warm start."""

import numpy as np
import pytest
import scipy.sparse as sp

from schedopt.backends import solve_lp
from schedopt.backends.base import LinearProgram
from schedopt.errors import PolicyError
from schedopt.policies.gavel import lp as gavel
from schedopt.policies.gavel import levels
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.gavel.level_hull import build_hulls
from schedopt.policies.gavel.levels import LevelProblem, max_level


def whole_lp(problem: LevelProblem) -> float:
    """max t over the whole LP, written directly (one column per (job, type) and t)."""
    gain, s, c = problem.gain, problem.gpus, problem.capacity
    M, J = gain.shape
    rises = problem.rising.astype(float)
    floor = problem.floors
    cols = np.arange(M * J)
    job_of = cols // J
    level_rows = sp.csr_matrix((np.r_[gain.ravel(), -rises], (np.r_[job_of, np.arange(M)],
                                                              np.r_[cols, np.full(M, M * J)])),
                               shape=(M, M * J + 1))
    time_rows = sp.csr_matrix((np.ones(M * J), (job_of, cols)), shape=(M, M * J + 1))
    capacity_rows = sp.csr_matrix((np.repeat(s, J), (cols % J, cols)), shape=(J, M * J + 1))
    rows = sp.vstack([level_rows, time_rows, capacity_rows], format="csr")
    runnable = gain > 0
    lp = LinearProgram(
        c=np.r_[np.zeros(M * J), 1.0], A=rows,
        row_lower=np.r_[floor, np.full(M + J, -np.inf)],
        row_upper=np.r_[np.full(M, np.inf), np.ones(M), c],
        col_lower=np.zeros(M * J + 1),
        col_upper=np.r_[np.where(runnable.ravel(), np.inf, 0.0), np.inf], maximize=True)
    result = solve_lp(lp, "highs")
    assert result.status.value == "optimal"
    return result.objective


def random_problem(rng, M, J, frozen=False):
    """With `frozen`, 30% of the jobs frozen at a floor and every rising job with an offset
    (negative for some: they need nothing until t passes it)."""
    gain = rng.uniform(0.1, 3.0, (M, J)) * (rng.random((M, J)) > 0.2)
    gain[gain.sum(axis=1) == 0, 0] = 1.0
    gpus = rng.choice([1.0, 1.0, 2.0, 4.0], M)
    capacity = rng.uniform(0.1, 0.5, J) * gpus.sum() + 4.0
    rises, floor = None, None
    if frozen:
        rises = rng.random(M) < 0.7
        rises[0] = True
        floor = rng.uniform(0, 0.3, M) * gain.max(axis=1)
        floor[rises] -= rng.uniform(0, 0.4, rises.sum()) * gain.max(axis=1)[rises]
    return LevelProblem(gain, gpus, capacity, rises, floor)


def check_feasible(problem: LevelProblem, solution):
    X = solution.allocation
    assert (X >= 0).all()
    assert (X.sum(axis=1) <= 1 + 1e-12).all()
    assert (problem.gpus @ X <= problem.capacity * (1 + 1e-12)).all()
    level = np.einsum("mj,mj->m", problem.gain, X)
    above = level - problem.floors  # a rising job's floor is its offset
    assert above[problem.rising].min() == pytest.approx(solution.level, rel=1e-12)
    frozen = ~problem.rising
    assert (level[frozen] >= problem.floors[frozen] * (1 - 1e-7)).all()


@pytest.mark.parametrize("seed", range(25))
def test_small_problems_match_the_whole_lp(seed):
    rng = np.random.default_rng(seed)
    problem = random_problem(rng, int(rng.integers(1, 40)), int(rng.integers(1, 5)),
                             frozen=seed % 2 == 1)
    solution = max_level(problem)
    exact = whole_lp(problem)
    assert solution.level == pytest.approx(exact, rel=1e-6)
    assert solution.level <= solution.bound * (1 + 1e-12)
    assert solution.gap <= 1e-6 and solution.status.value == "optimal"
    check_feasible(problem, solution)


@pytest.mark.parametrize("seed", range(6))
def test_sampled_prices_with_fixed_jobs_match_the_whole_lp(seed, monkeypatch):
    """Force the sample-and-fix path (few direct classes) on 1,500 jobs, against the LP."""
    monkeypatch.setattr(levels, "DIRECT_CLASSES", 60)
    rng = np.random.default_rng(100 + seed)
    problem = random_problem(rng, 1500, 3 + seed % 3, frozen=seed >= 4)
    solution = max_level(problem)
    assert solution.details["free_classes"] < 1500
    assert solution.level == pytest.approx(whole_lp(problem), rel=1e-6)
    assert solution.gap <= 1e-6
    check_feasible(problem, solution)


def contended(M: int, seed: int = 3) -> ThroughputProblem:
    """M jobs on 3 types with M/4 GPUs each, Gavel's scale-factor odds, random weights."""
    rng = np.random.default_rng(seed)
    return ThroughputProblem.from_arrays(rng.uniform(0.2, 5.0, (M, 3)),
                                         rng.choice([1, 2, 4, 8], M, p=[0.7, 0.1, 0.15, 0.05]),
                                         rng.uniform(0.5, 2.0, M), np.full(3, M / 4))


def test_max_min_fairness_by_decomposition_equals_the_lp_backends():
    problem = contended(3000)
    ours = gavel.max_min_fairness(problem)
    lp = gavel.max_min_fairness(problem, solver="clarabel")
    assert ours.solver == "decomposition" and ours.status.value == "optimal"
    assert ours.objective == pytest.approx(lp.objective, rel=1e-6)
    assert ours.bound >= ours.objective


def test_the_decomposition_runs_its_restricted_lps_on_a_named_backend_with_duals():
    problem = contended(600)
    default = gavel.max_min_fairness(problem)
    on_clarabel = gavel.max_min_fairness(problem, "clarabel", method="decomposition")
    assert on_clarabel.solver == "decomposition" and on_clarabel.status.value == "optimal"
    assert on_clarabel.objective == pytest.approx(default.objective, rel=1e-6)
    with pytest.raises(PolicyError, match="needs a solver with .*duals"):  # scip gives none
        gavel.max_min_fairness(problem, "scip", method="decomposition")


def test_min_makespan_by_decomposition_equals_the_lp():
    rng = np.random.default_rng(4)
    M = 400
    problem = ThroughputProblem.from_arrays(
        rng.uniform(0.2, 5.0, (M, 3)), rng.choice([1, 2, 4], M), None, np.full(3, M / 6),
        remaining_steps=np.where(rng.random(M) < 0.1, 0.0, rng.uniform(1e3, 1e6, M)))
    ours = gavel.min_makespan(problem)
    lp = gavel.min_makespan(problem, solver="highs")
    assert ours.objective == pytest.approx(lp.objective, rel=1e-6)
    assert ours.bound <= ours.objective * (1 + 1e-9)
    assert (ours.allocation[problem.remaining_steps == 0] == 0).all()


def test_duplicate_jobs_are_merged_and_share_one_allocation():
    rng = np.random.default_rng(5)
    base = random_problem(rng, 30, 3)
    pick = rng.integers(0, 30, 3000)
    problem = LevelProblem(base.gain[pick], base.gpus[pick], base.capacity * 100)
    solution = max_level(problem)
    assert solution.details["classes"] <= 30
    assert solution.level == pytest.approx(whole_lp(problem), rel=1e-6)
    same = pick == pick[0]
    assert np.allclose(solution.allocation[same], solution.allocation[same][0])
    check_feasible(problem, solution)


def test_bound_holds_at_any_prices():
    """The Lagrangian bound is an upper bound on the optimum for every p >= 0."""
    rng = np.random.default_rng(6)
    problem = random_problem(rng, 60, 3, frozen=True)
    exact = whole_lp(problem)
    cls = levels._classes(problem)
    for _ in range(40):
        prices = rng.exponential(1.0, 3) * rng.choice([0.0, 1.0, 0.01], 3)
        hulls = build_hulls(cls.gain, cls.gpus[:, None] * prices[None, :])
        assert levels.lagrangian_bound(cls, problem.capacity, prices, hulls) >= exact - 1e-9


def test_warm_start_after_arrivals_and_departures_gives_the_same_optimum():
    rng = np.random.default_rng(7)
    big = random_problem(rng, 2600, 3)
    first = max_level(LevelProblem(big.gain[:2500], big.gpus[:2500], big.capacity))
    # 100 jobs leave, 100 arrive
    later = LevelProblem(big.gain[100:], big.gpus[100:], big.capacity)
    warm = max_level(later, start=first)
    cold = max_level(later)
    assert warm.level == pytest.approx(cold.level, rel=1e-6)
    assert warm.gap <= 1e-6


def test_bottlenecked_jobs_sit_at_the_level():
    rng = np.random.default_rng(8)
    problem = random_problem(rng, 200, 3)
    solution = max_level(problem)
    level = np.einsum("mj,mj->m", problem.gain, solution.allocation)
    tight = solution.marginal > 1e-9
    assert tight.any()
    assert np.allclose(level[tight], solution.level, rtol=1e-6)


def test_bad_problems_are_reported():
    gain = np.array([[1.0, 0.0], [0.0, 0.0]])
    with pytest.raises(PolicyError, match="run on no GPU type"):
        max_level(LevelProblem(gain, np.ones(2), np.ones(2)))
    with pytest.raises(PolicyError, match="no job rises"):
        max_level(LevelProblem(np.ones((2, 2)), np.ones(2), np.ones(2), np.zeros(2, bool)))
    with pytest.raises(PolicyError, match="floors must be >= 0"):
        max_level(LevelProblem(np.ones((2, 2)), np.ones(2), np.ones(2), np.array([True, False]),
                               np.array([0.0, -1.0])))
    with pytest.raises(PolicyError, match="floor is above"):
        max_level(LevelProblem(np.ones((2, 2)), np.ones(2), np.ones(2),
                               np.array([True, False]), np.array([0.0, 5.0])))


def test_policy_warm_start_from_the_previous_details():
    import schedopt
    rng = np.random.default_rng(9)
    M = 2000
    T = rng.uniform(0.2, 5.0, (M + 20, 3))
    problem = ThroughputProblem.from_arrays(T[:M], None, None, np.full(3, M / 4))
    first = schedopt.solve(problem, "max_min_fairness")
    assert set(first.details) >= {"prices", "level", "gap"}
    later = ThroughputProblem.from_arrays(T[20:], None, None, np.full(3, M / 4))
    warm = schedopt.solve(later, "max_min_fairness", start=first.details)
    cold = schedopt.solve(later, "max_min_fairness", solver="clarabel")
    assert warm.objective == pytest.approx(cold.objective, rel=1e-6)


def test_when_gpus_do_not_bind_the_smallest_top_level_is_the_answer():
    rng = np.random.default_rng(10)
    gain = rng.uniform(0.5, 2.0, (300, 3))
    problem = LevelProblem(gain, np.ones(300), np.full(3, 1000.0))
    solution = max_level(problem)
    assert solution.details["rounds"] == 0
    assert solution.level == solution.bound == pytest.approx(gain.max(axis=1).min())
    assert solution.level == pytest.approx(whole_lp(problem), rel=1e-9)
    check_feasible(problem, solution)
    capped = np.argmin(gain.max(axis=1))
    assert solution.marginal[capped] > 0 and np.count_nonzero(solution.marginal) == 1
