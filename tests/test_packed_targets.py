"""Water filling and makespan with space sharing (`water_filling_packed`, `min_makespan_packed`)
against LPs over every pair column written here with scipy's linprog, against the unpacked
policies where no pair can help, and on what the imported co-location table holds: measured
[0, 0] pairs and multi-GPU pairs."""

from __future__ import annotations

import itertools

from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

from schedopt import solve
from schedopt.backends import Status
from schedopt.core.problem import ThroughputProblem
from schedopt.errors import PolicyError
from schedopt.instance import parse_instance
from schedopt.policies.gavel.lp import min_makespan
from schedopt.policies.gavel.water_filling import water_filling
from schedopt.policies.packed.master import PairTable, max_min_fairness_packed
from schedopt.policies.packed.targets import min_makespan_packed, water_filling_packed
from test_packed import random_case


def with_steps(problem: ThroughputProblem, seed: int) -> ThroughputProblem:
    rng = np.random.default_rng(seed + 1000)
    steps = rng.uniform(100.0, 5000.0, problem.num_jobs)
    steps[rng.random(problem.num_jobs) < 0.15] = 0.0  # some jobs are done
    return ThroughputProblem.from_arrays(problem.throughput, problem.scale_factor, problem.weight,
                                         problem.capacity, remaining_steps=steps)


class FullLP:
    """Every allowed pair column, listed one by one: (j, a, b) with a < b, equal scale
    factors, both runnable on j, both rates in the table and not both 0."""

    def __init__(self, problem: ThroughputProblem, table: PairTable):
        self.p = problem
        M, J = problem.num_jobs, problem.num_types
        self.pairs = []
        for j, a, b in itertools.product(range(J), range(M), range(M)):
            ta, tb = table.job_type[a], table.job_type[b]
            if a >= b or ta < 0 or tb < 0 or problem.scale_factor[a] != problem.scale_factor[b]:
                continue
            if not (problem.runnable[a, j] and problem.runnable[b, j]):
                continue
            qa, qb = table.rate[j, ta, tb], table.rate[j, tb, ta]
            if np.isfinite(qa) and np.isfinite(qb) and qa + qb > 0:
                self.pairs.append((j, a, b, qa, qb))
        self.n = M * J + len(self.pairs)  # columns: X, P (then extra columns per use)

    def rows(self):
        """(time (M, n), gpus (J, n), steps (M, n)) over the columns [X, P]."""
        p, M, J = self.p, self.p.num_jobs, self.p.num_types
        time, gpus, steps = np.zeros((M, self.n)), np.zeros((J, self.n)), np.zeros((M, self.n))
        for m, j in itertools.product(range(M), range(J)):
            c = m * J + j
            time[m, c] = 1.0
            gpus[j, c] = p.scale_factor[m] / p.capacity[j]
            steps[m, c] = p.throughput[m, j] if p.runnable[m, j] else 0.0
        for i, (j, a, b, qa, qb) in enumerate(self.pairs):
            c = M * J + i
            time[a, c] = time[b, c] = 1.0
            gpus[j, c] = p.scale_factor[a] / p.capacity[j]
            steps[a, c], steps[b, c] = qa, qb
        return time, gpus, steps

    def bounds(self):
        X = [(0, None) if self.p.runnable[m, j] else (0, 0)
             for m in range(self.p.num_jobs) for j in range(self.p.num_types)]
        return X + [(0, None)] * len(self.pairs)

    def maximize(self, gains: np.ndarray, floors: np.ndarray, rising: np.ndarray,
                 extra_objective: np.ndarray | None = None):
        """max t (or extra_objective . [X, P]) s.t. time <= 1, GPUs <= 1,
        steps_m >= gains_m t for rising jobs, steps_m >= floors_m for the others."""
        time, gpus, steps = self.rows()
        A = [np.hstack([time, np.zeros((len(time), 1))]), np.hstack([gpus, np.zeros((len(gpus), 1))]),
             np.hstack([-steps, (gains * rising)[:, None]])]
        b = [np.ones(len(time)), np.ones(len(gpus)), np.where(rising, 0.0, -floors)]
        c = np.zeros(self.n + 1)
        if extra_objective is None:
            c[-1] = -1.0
        else:
            c[:-1] = -extra_objective
        res = linprog(c, A_ub=np.vstack(A), b_ub=np.concatenate(b),
                      bounds=self.bounds() + [(0, None)], method="highs")
        assert res.status == 0
        return res


def levels_of(problem: ThroughputProblem, steps: np.ndarray) -> np.ndarray:
    return problem.scale_factor * steps / (problem.weight * problem.equal_share_throughput)


def leximin_by_brute_force(problem: ThroughputProblem, table: PairTable) -> np.ndarray:
    """Progressive filling that tests every rising job by maximizing its own level (no duals)."""
    lp = FullLP(problem, table)
    _, _, steps = lp.rows()
    unit = problem.weight * problem.equal_share_throughput / problem.scale_factor  # level 1
    M = problem.num_jobs
    rising, level = np.ones(M, dtype=bool), np.zeros(M)
    while rising.any():
        t = -lp.maximize(unit, unit * level * (1 - 1e-9), rising).fun
        floors = np.where(rising, unit * t * (1 - 1e-9), unit * level * (1 - 1e-9))
        stuck = []
        for m in np.flatnonzero(rising):
            best = lp.maximize(unit, floors, np.zeros(M, dtype=bool), steps[m])
            if -best.fun / unit[m] <= t * (1 + 1e-6) + 1e-9:
                stuck.append(m)
        assert stuck
        level[stuck] = t
        rising[stuck] = False
    return level


def effective_steps(problem, outcome) -> np.ndarray:
    return np.array([outcome.details["effective_throughput"][job] for job in problem.job_ids])


def assert_proven(outcome) -> None:
    assert outcome.status is Status.OPTIMAL
    assert outcome.gap is not None and outcome.gap <= 1e-6


# ------------------------------------------------------------------------------ water filling

@pytest.mark.parametrize("seed", range(12))
def test_water_filling_packed_is_the_leximin_of_the_full_lp(seed):
    problem, table = random_case(seed)
    expected = leximin_by_brute_force(problem, table)
    for method in ("columns", "dense"):
        outcome = water_filling_packed(problem, table, method=method)
        assert_proven(outcome)
        got = np.array([outcome.details["job_levels"][job] for job in problem.job_ids])
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
        assert outcome.objective == pytest.approx(expected.min(), rel=1e-7)
        np.testing.assert_allclose(levels_of(problem, effective_steps(problem, outcome)), got,
                                   rtol=1e-12)
        assert outcome.objective == pytest.approx(
            max_min_fairness_packed(problem, table, method=method).objective, rel=1e-7)


@pytest.mark.parametrize("seed", range(8))
def test_water_filling_packed_without_helpful_pairs_is_water_filling(seed):
    problem, _ = random_case(seed)
    plain = water_filling(problem, "highs")
    for table in (PairTable.none(problem.num_jobs, problem.num_types),
                  PairTable.from_arrays(np.zeros(problem.num_jobs, dtype=int),
                                        np.full((problem.num_types, 1, 1), 1e-3))):  # all pruned
        packed = water_filling_packed(problem, table)
        assert_proven(packed)
        assert packed.details["pairs"] == []
        for job in problem.job_ids:
            assert packed.details["job_levels"][job] == pytest.approx(
                plain.details["job_levels"][job], rel=1e-6, abs=1e-8)


def test_water_filling_packed_raises_the_second_level():
    # a and b share one GPU at 0.8 each; c alone on the other GPU type, where it is fast
    problem = ThroughputProblem.from_arrays([[1.0, 0.0], [1.0, 0.0], [1.0, 5.0]],
                                            capacity=[1, 1])
    rate = np.full((2, 3, 3), np.nan)
    rate[0, 0, 1] = rate[0, 1, 0] = 0.8
    outcome = water_filling_packed(problem, PairTable.from_arrays([0, 1, 2], rate))
    assert_proven(outcome)
    levels = [outcome.details["job_levels"][j] for j in problem.job_ids]
    thr_eq = problem.equal_share_throughput
    # a, b: 0.8 steps/s each (always paired); c: all of type 2 and nothing else
    assert levels == pytest.approx([0.8 / thr_eq[0], 0.8 / thr_eq[1], 5.0 / thr_eq[2]], rel=1e-8)
    assert outcome.details["stages"] == 2 and levels[2] > levels[0] + 0.05


def test_water_filling_packed_needs_dual_values():
    problem, table = random_case(0)
    with pytest.raises(PolicyError, match="water_filling_packed .*dual values.*'scip'"):
        water_filling_packed(problem, table, "scip", method="dense")


# ------------------------------------------------------------------------------ makespan

@pytest.mark.parametrize("seed", range(15))
def test_min_makespan_packed_matches_the_full_lp(seed):
    problem, table = random_case(seed)
    problem = with_steps(problem, seed)
    lp = FullLP(problem, table)
    R = problem.remaining_steps
    # max w (= 1 / makespan) s.t. steps_m >= R_m w: another scaling than the policy's
    res = lp.maximize(R, np.zeros(problem.num_jobs), R > 0)
    expected = 1.0 / -res.fun
    for method in ("columns", "dense"):
        outcome = min_makespan_packed(problem, table, method=method)
        assert_proven(outcome)
        assert outcome.objective == pytest.approx(expected, rel=1e-7)
        assert outcome.bound <= outcome.objective * (1 + 1e-9)
        steps = effective_steps(problem, outcome)
        active = R > 0
        assert np.max(R[active] / steps[active]) == pytest.approx(outcome.objective, rel=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_min_makespan_packed_with_an_empty_table_is_min_makespan(seed):
    problem = with_steps(random_case(seed)[0], seed)
    packed = min_makespan_packed(problem, PairTable.none(problem.num_jobs, problem.num_types))
    assert_proven(packed)
    assert packed.objective == pytest.approx(min_makespan(problem, "highs").objective, rel=1e-7)


def test_min_makespan_packed_two_jobs_one_gpu_closed_form():
    # 100 steps each at 1 step/s alone; paired 0.8 each: 125 s, against 200 s time-shared
    problem = ThroughputProblem.from_arrays([[1.0], [1.0]], capacity=[1],
                                            remaining_steps=[100.0, 100.0])
    table = PairTable.from_arrays([0, 1], [[[np.nan, 0.8], [0.8, np.nan]]])
    for method in ("columns", "dense"):
        outcome = min_makespan_packed(problem, table, method=method)
        assert outcome.objective == pytest.approx(125.0, rel=1e-9)
        assert outcome.bound == pytest.approx(125.0, rel=1e-9)
    unknown = ThroughputProblem.from_arrays([[1.0], [1.0]], capacity=[1])
    with pytest.raises(PolicyError, match="min_makespan_packed needs total_steps"):
        min_makespan_packed(unknown, table)


# ------------------------------------------------------------------------------ the imported table

def table_instance(colocated, jobs=None, count=1):
    jobs = jobs or [{"id": "a", "type": "A", "total_steps": 100},
                    {"id": "b", "type": "B", "total_steps": 100}]
    throughput = {job["type"]: {"v100": 1.0} for job in jobs}
    return parse_instance({"format": "schedopt-instance/1",
                           "cluster": {"gpu_types": {"v100": {"count": count}}},
                           "jobs": jobs,
                           "performance": {"throughput": throughput, "colocated": colocated}},
                          "test")


@pytest.mark.parametrize("policy", ["max_min_fairness_packed", "water_filling_packed",
                                    "min_makespan_packed"])
def test_a_measured_zero_pair_is_never_chosen_and_adds_no_column(policy):
    zero = {"types": ["A", "B"], "gpu_type": "v100", "throughput": [0.0, 0.0]}
    other = {"types": ["C", "C"], "gpu_type": "v100", "throughput": [0.9, 0.9]}
    with_zero = table_instance([zero, other])
    without = table_instance([other])
    for method in ("columns", "dense"):
        a = solve(with_zero, policy, method=method)
        b = solve(without, policy, method=method)
        assert a.status is Status.OPTIMAL and a.details["pairs"] == []
        assert a.objective == pytest.approx(b.objective, rel=1e-12)
        assert a.details["candidate_pairs"] == b.details["candidate_pairs"] == 0
    shared = solve(table_instance([{**zero, "throughput": [0.9, 0.9]}]), policy)
    assert shared.details["pairs"]  # the same pair at a positive rate is used


@pytest.mark.parametrize("policy", ["max_min_fairness_packed", "water_filling_packed",
                                    "min_makespan_packed"])
def test_multi_gpu_pairs_share_the_same_gpus(policy):
    # two 2-GPU jobs and a 1-GPU one on 2 GPUs: paired, a and b hold the 2 GPUs once, each at
    # 0.8 of its rate; c, of a type the table pairs with A, never joins a (other scale factor)
    jobs = [{"id": "a", "type": "A x2", "scale_factor": 2, "total_steps": 100},
            {"id": "b", "type": "B x2", "scale_factor": 2, "total_steps": 100},
            {"id": "c", "type": "C", "total_steps": 100}]
    colocated = [{"types": ["A x2", "B x2"], "gpu_type": "v100", "throughput": [0.8, 0.8]},
                 {"types": ["A x2", "C"], "gpu_type": "v100", "throughput": [0.9, 0.9]}]
    instance = table_instance(colocated, jobs, count=2)
    problem = ThroughputProblem.from_instance(instance)
    table = PairTable.from_instance(instance)
    lp = FullLP(problem, table)
    assert [(a, b) for _, a, b, _, _ in lp.pairs] == [(0, 1)]
    R = problem.remaining_steps
    outcome = solve(instance, policy)
    assert outcome.status is Status.OPTIMAL
    (pair,) = outcome.details["pairs"]
    assert sorted(pair["jobs"]) == ["a", "b"]
    assert outcome.details["gpus_in_use"]["v100"] <= 2 + 1e-9
    if policy == "min_makespan_packed":
        expected = 1.0 / -lp.maximize(R, np.zeros(3), R > 0).fun
    else:
        unit = problem.weight * problem.equal_share_throughput / problem.scale_factor
        expected = -lp.maximize(unit, np.zeros(3), np.ones(3, dtype=bool)).fun
    assert outcome.objective == pytest.approx(expected, rel=1e-7)


@pytest.mark.parametrize("policy", ["max_min_fairness_packed", "water_filling_packed",
                                    "min_makespan_packed"])
def test_an_instance_without_a_colocation_table_is_one_line(policy):
    with pytest.raises(PolicyError) as error:
        solve(table_instance([]), policy)
    message = str(error.value)
    assert "\n" not in message and policy in message and "co-location table" in message


def test_simulating_a_packed_policy_says_what_it_needs_in_one_line():
    from click.testing import CliRunner

    from schedopt.cli.main import main

    # Packed policies simulate traces that carry a co-location table (test_packed_simulation);
    # on a trace without one they say what they need, in one line.
    tiny = str(Path(__file__).resolve().parents[1] / "instances" / "tiny.json")
    for policy in ("max_min_fairness_packed", "water_filling_packed", "min_makespan_packed",
                   "fifo_packed", "finish_time_fairness_packed", "min_cost_packed"):
        result = CliRunner().invoke(main, ["simulate", tiny, "-p", policy])
        assert result.exit_code == 2
        message = result.output.strip()
        assert "\n" not in message and policy in message and "co-location table" in message
        assert message.startswith(f"error: {tiny}: performance.colocated: policy {policy} ")
        assert "cpu_time" not in message and "CPU machines" not in message


def test_water_filling_packed_stops_at_the_time_limit_with_a_proven_first_level():
    from schedopt.backends import SolveOptions

    problem, table = random_case(1)  # several stages
    full = water_filling_packed(problem, table)
    assert full.details["stages"] > 1
    cut = water_filling_packed(problem, table, options=SolveOptions(time_limit=1e-9))
    assert cut.status is Status.FEASIBLE and cut.details["stages"] == 1
    assert cut.objective <= full.objective + 1e-9 <= cut.bound + 2e-9  # the bound stays proven
