"""The speed-blind makespan and finish-time fairness of schedopt.gavel: Gavel's LP (every GPU
type priced at the job's V100 steps/s), answered as Gavel's interior-point solves answer it
(the makespan: Clarabel's point of Gavel's feasibility LP where Gavel's bisection stops; the
finish-time fairness: the analytic center of its optimal face), and the analytic center of a
speed-blind allocation's total times.

Checked against independent cvxpy solves (tests/gavel_reference.py, CLARABEL) and against the
barrier written out here from its formula."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

import gavel_reference as ref
from schedopt.core.problem import ThroughputProblem
from schedopt.gavel import (analytic_center, center_over_types, gavel_bisection_makespan,
                            get_policy, spread_over_types)

TYPES = ["k80", "p100", "v100"]
CLUSTER = {"k80": 4, "p100": 3, "v100": 2}


def instance(seed: int, num_jobs: int = 6) -> dict:
    """Gavel's arguments; job 0 runs fastest on a P100, so V100 pricing differs from best-type."""
    rng = np.random.default_rng(seed)
    T = rng.uniform(0.2, 5.0, (num_jobs, 3))
    T[0] = [1.0, 4.0, 2.0]
    ids = list(range(num_jobs))
    return {
        "T": T, "ids": ids,
        "throughputs": {m: dict(zip(TYPES, row)) for m, row in zip(ids, T)},
        "scale_factors": {m: int(s) for m, s in zip(ids, rng.choice([1, 2], num_jobs))},
        "priority_weights": dict.fromkeys(ids, 1.0),
        "times_since_start": {m: float(t) for m, t in zip(ids, rng.uniform(0, 3600, num_jobs))},
        "num_steps_remaining": {m: float(r) for m, r in zip(ids, rng.uniform(1e4, 1e6, num_jobs))},
    }


def v100_priced(state: dict, **extra) -> ThroughputProblem:
    """Gavel's speed-blind LP as a problem: every type runs job m at its V100 steps/s."""
    v100 = state["T"][:, TYPES.index("v100")]
    col = lambda key: [state[key][m] for m in state["ids"]]  # noqa: E731
    return ThroughputProblem.from_arrays(
        np.repeat(v100[:, None], 3, axis=1), col("scale_factors"), None,
        [CLUSTER[t] for t in TYPES], gpu_types=TYPES, remaining_steps=col("num_steps_remaining"),
        time_since_arrival=col("times_since_start"), **extra)


def as_matrix(allocation: dict, ids) -> np.ndarray:
    return np.array([[allocation[m][t] for t in TYPES] for m in ids])


def test_gavels_bisection_stops_where_worked_out_by_hand():
    # optimum 300,000 s: midpoints 500,050 (feasible), 250,075, 375,062.5 (f), 312,568.75 (f),
    # 281,321.875, 296,945.3125, 304,757.03125 (f); then 1.05 x 296,945.3 > 304,757: stop
    assert gavel_bisection_makespan(3e5) == 304757.03125
    # optimum 2e6 s: nothing in [100, 1e6] is feasible, then in [1e6, 1e7]: 5.5e6 (f),
    # 3.25e6 (f), 2.125e6 (f), 1.5625e6, 1.84375e6, 1.984375e6, 2.0546875e6 (f): stop
    assert gavel_bisection_makespan(2e6) == 2054687.5
    for optimum in np.geomspace(150.0, 5e7, 57):
        assert optimum <= gavel_bisection_makespan(optimum) < 1.05 * optimum


@pytest.mark.parametrize("seed", range(4))
def test_speed_blind_makespan_is_clarabels_point_of_gavels_feasibility_lp(seed):
    state = instance(seed)
    X = as_matrix(get_policy("min_total_duration").get_allocation(
        state["throughputs"], state["scale_factors"], state["num_steps_remaining"], CLUSTER),
        state["ids"])
    p = v100_priced(state)
    ref.assert_base_constraints(p, X)
    R = np.asarray(p.remaining_steps)
    makespan = np.max(R / ref.thr(np.asarray(p.throughput), X))
    stop = gavel_bisection_makespan(ref.min_makespan(p).value)
    assert makespan <= stop * (1 + 1e-6)
    # the same feasibility LP written in cvxpy, solved by CLARABEL through cvxpy
    T, s, c = (np.asarray(a, dtype=float) for a in (p.throughput, p.scale_factor, p.capacity))
    Y = cp.Variable(T.shape)
    cp.Problem(cp.Maximize(1), [Y >= 0, s @ Y <= c, cp.sum(Y, axis=1) <= 1,
                                cp.sum(cp.multiply(T, Y), axis=1) >= R / stop]).solve(
        solver="CLARABEL")
    np.testing.assert_allclose(X, Y.value.clip(0, 1), atol=1e-6)
    assert np.all(X > 1e-9)  # an interior point: time on every type


@pytest.mark.parametrize("seed", range(4))
def test_speed_blind_finish_time_fairness_is_an_optimum_of_gavels_v100_lp(seed):
    state = instance(seed)
    X = as_matrix(get_policy("finish_time_fairness").get_allocation(
        state["throughputs"], state["scale_factors"], state["priority_weights"],
        state["times_since_start"], state["num_steps_remaining"], CLUSTER), state["ids"])
    p = v100_priced(state)
    ref.assert_base_constraints(p, X)
    T, s, c = (np.asarray(a, dtype=float) for a in (p.throughput, p.scale_factor, p.capacity))
    R, t = np.asarray(p.remaining_steps), np.asarray(p.time_since_arrival)
    worst = ref.finish_time_ratio(T, s, c, R, t, np.zeros_like(R), X).max()
    optimum = ref.finish_time_fairness(p).value
    assert worst == pytest.approx(optimum, rel=1e-4)  # CLARABEL's inv_pos solve: ~1e-5
    assert np.all(X > 1e-9)


def test_speed_blind_finish_time_fairness_credits_isolated_time_at_v100_speed():
    state = instance(0)
    policy = get_policy("finish_time_fairness")
    args = [state["throughputs"], state["scale_factors"], state["priority_weights"],
            state["times_since_start"]]
    policy.get_allocation(*args, state["num_steps_remaining"], CLUSTER)
    done = {m: r - 1000.0 for m, r in state["num_steps_remaining"].items()}
    policy.get_allocation(*args, done, CLUSTER)
    # Gavel's isolated share: (c_j / M) / s_m of every type, the row scaled down to sum <= 1,
    # each type running the job at its V100 steps/s
    M, c = len(state["ids"]), np.array([CLUSTER[t] for t in TYPES], dtype=float)
    for m in state["ids"]:
        share = min(1.0, (c / M).sum() / state["scale_factors"][m])
        iso = share * state["T"][m, TYPES.index("v100")]
        assert policy._isolated_time[m] == pytest.approx(1000.0 / iso, rel=1e-12)


def barrier(p: ThroughputProblem, need: np.ndarray, X: np.ndarray, cone: bool) -> float:
    """The analytic center's objective, written out from its formula (-inf outside)."""
    T, s, c = (np.asarray(a, dtype=float) for a in (p.throughput, p.scale_factor, p.capacity))
    thr = (T * X).sum(axis=1)
    parts = [X.ravel(), 1 - X.sum(axis=1), c - s @ X, (thr - need)[need > 0]]
    if min(part.min() for part in parts) <= 0:
        return -np.inf
    jobs = (2 * np.log(parts[3]) - np.log(thr[need > 0])).sum() if cone else np.log(parts[3]).sum()
    return sum(np.log(part).sum() for part in parts[:3]) + jobs


def small_case(seed: int) -> tuple[ThroughputProblem, np.ndarray, np.ndarray]:
    """A problem, each job's need in steps/s (half of what an equal split gives it) and a point
    strictly inside (the equal split)."""
    rng = np.random.default_rng(seed)
    M = 5
    p = ThroughputProblem.from_arrays(rng.uniform(0.5, 4.0, (M, 3)), rng.choice([1, 2], M), None,
                                      [4, 3, 2])
    start = np.full((M, 3), 0.9 * min(1 / 3, 2 / np.asarray(p.scale_factor).sum()))
    need = 0.5 * (np.asarray(p.throughput) * start).sum(axis=1)
    need[0] = 0.0  # a job without a need constraint
    return p, need, start


@pytest.mark.parametrize("seed", range(3))
def test_analytic_center_matches_cvxpys(seed):
    p, need, start = small_case(seed)
    X = analytic_center(p, need, start)
    T, s, c = (np.asarray(a, dtype=float) for a in (p.throughput, p.scale_factor, p.capacity))
    Y = cp.Variable(T.shape)
    thr = cp.sum(cp.multiply(T, Y), axis=1)
    has = need > 0
    objective = (cp.sum(cp.log(Y)) + cp.sum(cp.log(1 - cp.sum(Y, axis=1)))
                 + cp.sum(cp.log(c - s @ Y)) + cp.sum(cp.log(thr[has] - need[has])))
    cp.Problem(cp.Maximize(objective)).solve(solver="CLARABEL")
    np.testing.assert_allclose(X, Y.value, atol=1e-4)  # CLARABEL's tolerance on the point
    assert barrier(p, need, X, cone=False) >= barrier(p, need, Y.value, cone=False) - 1e-9


@pytest.mark.parametrize("seed", range(3))
def test_cone_analytic_center_beats_every_nearby_point(seed):
    p, need, start = small_case(seed)
    X = analytic_center(p, need, start, cone=True)
    best = barrier(p, need, X, cone=True)
    assert np.isfinite(best) and best > barrier(p, need, start, cone=True)
    rng = np.random.default_rng(seed)
    for _ in range(200):
        assert barrier(p, need, X + 1e-4 * rng.standard_normal(X.shape), cone=True) <= best


def test_analytic_center_refuses_a_start_outside():
    p, need, start = small_case(0)
    outside = start.copy()
    outside[1] = 0.0  # job 1 then misses its need
    assert analytic_center(p, need, outside) is None


def test_center_over_types_keeps_each_jobs_time_and_is_the_center():
    """Job 0 can run on type 0 only; the capacity-proportional split cannot hold every job's
    full time, and the center of {each job's time at least X's} is cvxpy's."""
    p = ThroughputProblem.from_arrays([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0]], [1, 1, 1], None,
                                      [2, 1])
    X = np.array([[1.0, 0.0], [0.5, 0.5], [0.5, 0.5]])  # every job its full time
    C = center_over_types(p, X)
    ref.assert_base_constraints(p, C)
    np.testing.assert_allclose(C.sum(axis=1), 1.0, atol=1e-5)
    assert C[0, 1] == 0.0
    Y = cp.Variable((3, 2))
    need = 1 - 1e-6
    cp.Problem(cp.Maximize(cp.sum(cp.log(cp.hstack([Y[0, 0], Y[1, 0], Y[1, 1], Y[2, 0], Y[2, 1]])))
                           + cp.sum(cp.log(1 - cp.sum(Y, axis=1)))
                           + cp.sum(cp.log(np.array([2.0, 1.0]) - cp.sum(Y, axis=0)))
                           + cp.sum(cp.log(cp.sum(Y, axis=1) - need))),
               [Y[0, 1] == 0]).solve(solver="CLARABEL")
    np.testing.assert_allclose(C, Y.value, atol=1e-5)
    np.testing.assert_array_equal(spread_over_types(p, X), C)  # its fallback
