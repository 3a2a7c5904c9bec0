"""Gavel's programs through ECOS, as Gavel's scheduler asks for them (`get_policy(name,
solver="ECOS")` with the `ecos` package installed). Speed-blind finish-time fairness: the
answer is optimal for Gavel's program (every GPU type priced at the job's V100 steps/s, also
types where the job runs at 0 steps/s), checked against a bisection over scipy's linprog
written out here. The throughput sums: optimal against scipy's linprog. Packed finish-time
fairness: optimal against the packed program written from its math and solved by Clarabel
(test_packed_finish_time). An ECOS answer short of the optimum is not returned; without ECOS
the names mean the default, as before."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

import schedopt.gavel as adapter
from test_gavel_dropin import TYPES as PACKED_TYPES
from test_gavel_dropin import FakeGavelScheduler, gavel_state, packed_state, problem_of
from test_packed_finish_time import cvxpy_packed_ftf

SUMS = ["max_sum_throughput_perf", "max_sum_throughput_normalized_by_cost_perf"]

TYPES = ["k80", "p100", "v100"]
CLUSTER = {"k80": 4, "p100": 3, "v100": 2}


def instance(seed: int, num_jobs: int = 6) -> dict:
    rng = np.random.default_rng(seed)
    T = rng.uniform(0.2, 5.0, (num_jobs, 3))
    T[0, 0] = 0.0  # job 0 cannot run on a K80: Gavel's program still prices it at V100 speed
    ids = list(range(num_jobs))
    return {"unflattened_throughputs": {m: dict(zip(TYPES, row)) for m, row in zip(ids, T)},
            "scale_factors": {m: int(s) for m, s in zip(ids, rng.choice([1, 2], num_jobs))},
            "unflattened_priority_weights": dict.fromkeys(ids, 1.0),
            "times_since_start": {m: float(t) for m, t in zip(ids, rng.uniform(0, 3600, num_jobs))},
            "num_steps_remaining": {m: float(r)
                                    for m, r in zip(ids, rng.uniform(1e4, 1e6, num_jobs))},
            "cluster_spec": dict(CLUSTER)}


def arrays(state: dict):
    ids = sorted(state["unflattened_throughputs"])
    v = np.array([state["unflattened_throughputs"][m]["v100"] for m in ids])
    s = np.array([state["scale_factors"][m] for m in ids], float)
    R = np.array([state["num_steps_remaining"][m] for m in ids])
    t = np.array([state["times_since_start"][m] for m in ids])
    c = np.array([CLUSTER[k] for k in TYPES], float)
    share = np.tile(c / len(ids), (len(ids), 1)) / s[:, None]  # Gavel's isolated share
    share /= np.maximum(share.sum(axis=1), 1.0)[:, None]
    D = R / (v * share.sum(axis=1))  # isolated finish time, s (first call: nothing credited)
    return ids, v, s, R, t, c, D


def feasible(rho: float, v, s, R, t, c, D) -> bool:
    """Is there X with v_m sum_j X_mj >= R_m / (rho D_m - t_m) for every job?"""
    room = rho * D - t
    if (room <= 0).any():
        return False
    M, J = len(v), len(c)
    rows = [np.kron(np.eye(M)[m], np.ones(J)) for m in range(M)]  # sum_j X_mj
    A = np.vstack([-v[:, None] * np.array(rows), np.array(rows),
                   np.kron(s[None, :], np.eye(J))])  # capacity: sum_m s_m X_mj <= c_j
    b = np.concatenate([-R / room, np.ones(M), c])
    return linprog(np.zeros(M * J), A_ub=A, b_ub=b, bounds=(0, None), method="highs").status == 0


def optimum(v, s, R, t, c, D) -> float:
    low, high = 0.0, 1.0
    while not feasible(high, v, s, R, t, c, D):
        low, high = high, 2 * high
    while high - low > 1e-10 * high:
        mid = (low + high) / 2
        low, high = (low, mid) if feasible(mid, v, s, R, t, c, D) else (mid, high)
    return high


@pytest.mark.parametrize("seed", range(4))
def test_ecos_answer_is_optimal_for_gavels_program(seed):
    pytest.importorskip("ecos")
    state = instance(seed)
    policy = adapter.get_policy("finish_time_fairness", solver="ECOS")
    assert policy._ecos
    allocation = policy.get_allocation(**state)
    ids, v, s, R, t, c, D = arrays(state)
    X = np.array([[allocation[m][k] for k in TYPES] for m in ids])
    assert (X >= -1e-9).all() and (X.sum(axis=1) <= 1 + 1e-6).all()
    assert (s @ X <= c + 1e-6).all()
    ratios = (t + R / (v * X.sum(axis=1))) / D
    assert ratios.max() == pytest.approx(optimum(v, s, R, t, c, D), rel=2e-5)


def test_without_ecos_the_name_means_the_default(monkeypatch):
    monkeypatch.setattr(adapter, "ecos_installed", lambda: False)
    state = instance(0)
    named = adapter.get_policy("finish_time_fairness", solver="ECOS")
    assert not named._ecos
    default = adapter.get_policy("finish_time_fairness")
    a, b = named.get_allocation(**state), default.get_allocation(**state)
    assert all(a[m][k] == pytest.approx(b[m][k], abs=1e-9) for m in a for k in TYPES)


def test_only_ecos_and_only_the_ecos_names_take_the_ecos_route():
    assert not adapter.get_policy("finish_time_fairness", solver="SCS")._ecos
    assert not adapter.get_policy("finish_time_fairness")._ecos
    assert not adapter.get_policy("max_sum_throughput_perf", solver="SCS")._ecos
    assert not adapter.get_policy("max_min_fairness", solver="ECOS")._ecos
    assert not adapter.get_policy("finish_time_fairness_perf", solver="ECOS")._ecos


def sum_optimum(state: dict, name: str) -> tuple[np.ndarray, float]:
    """(value per cell, the optimum of sum value . X) by scipy's linprog, written out here."""
    ids = state["ids"]
    value = np.array(state["T"], float)
    if name.endswith("_by_cost_perf"):
        value = value / np.array([state["instance_costs"][t] for t in PACKED_TYPES])
    s = np.array([state["scale_factors"][j] for j in ids], float)
    c = np.array([state["cluster_spec"][t] for t in PACKED_TYPES], float)
    M, J = value.shape
    A = np.vstack([np.kron(np.eye(M), np.ones(J)), np.kron(s[None, :], np.eye(J))])
    result = linprog(-value.ravel(), A_ub=A, b_ub=np.concatenate([np.ones(M), c]),
                     bounds=(0, None), method="highs")
    return value, -result.fun


@pytest.mark.parametrize("name", SUMS)
@pytest.mark.parametrize("seed", range(3))
def test_throughput_sums_through_ecos_are_optimal(name, seed):
    pytest.importorskip("ecos")
    state = gavel_state(seed, num_jobs=9)
    policy = adapter.get_policy(name, solver="ECOS")
    assert policy._ecos
    allocation = FakeGavelScheduler(policy, state).compute_allocation()
    X = np.array([[allocation[j][t] for t in PACKED_TYPES] for j in state["ids"]])
    s = np.array([state["scale_factors"][j] for j in state["ids"]], float)
    c = np.array([state["cluster_spec"][t] for t in PACKED_TYPES], float)
    assert X.min() >= 0 and (X.sum(axis=1) <= 1 + 1e-6).all() and (s @ X <= c + 1e-6).all()
    value, best = sum_optimum(state, name)
    assert (value * X).sum() == pytest.approx(best, rel=1e-5)


def test_an_ecos_answer_short_of_the_optimum_is_not_returned(monkeypatch):
    pytest.importorskip("ecos")
    state = gavel_state(0, num_jobs=9)
    default = FakeGavelScheduler(adapter.get_policy("max_sum_throughput_perf"),
                                 state).compute_allocation()
    policy = adapter.get_policy("max_sum_throughput_perf", solver="ECOS")
    monkeypatch.setattr(adapter, "max_throughput_sum_ecos",
                        lambda value, s, c: np.full(value.shape, 0.01))
    allocation = FakeGavelScheduler(policy, state).compute_allocation()
    assert all(allocation[j][t] == pytest.approx(default[j][t], abs=1e-9)
               for j in state["ids"] for t in PACKED_TYPES)


def packed_ratio(state: dict, allocation: dict, p) -> float:
    """The largest (t + w R / steps) / D of Gavel's packed allocation, steps counting pairs;
    checks the base constraints (to 1e-6: ECOS's tolerance)."""
    ids = state["ids"]
    X = np.array([[allocation[j][t] for t in PACKED_TYPES] for j in ids])
    steps, time, gpus = (np.asarray(state["T"]) * X).sum(1), X.sum(1), p.scale_factor @ X
    for pair, per_type in state["pairs"].items():
        f = np.array([allocation[pair][t] for t in PACKED_TYPES])
        assert f.min() >= 0
        if f.max() > 1e-7:
            assert p.scale_factor[pair.a] == p.scale_factor[pair.b]
        steps[pair.a] += f @ [per_type[t][0] for t in PACKED_TYPES]
        steps[pair.b] += f @ [per_type[t][1] for t in PACKED_TYPES]
        time[pair.a] += f.sum()
        time[pair.b] += f.sum()
        gpus += p.scale_factor[pair.a] * f
    assert time.max() <= 1 + 1e-6 and np.all(gpus <= p.capacity + 1e-6)
    c = np.asarray(p.capacity, float)
    share = np.tile(c / len(ids), (len(ids), 1)) / p.scale_factor[:, None]
    share /= np.maximum(share.sum(axis=1), 1.0)[:, None]  # Gavel's isolated share
    R, t, w = p.remaining_steps, p.time_since_arrival, p.weight
    D = R / (np.asarray(state["T"]) * share).sum(1)  # first call: nothing credited
    return float(np.max((t + w * R / steps) / D))


@pytest.mark.parametrize("seed", range(3))
def test_packed_finish_time_fairness_through_ecos_is_optimal(seed):
    pytest.importorskip("ecos")
    # every job fits every type (Gavel's program, unlike schedopt's, gives a 2-GPU job time
    # on a type of 1 GPU)
    state = {**packed_state(seed), "cluster_spec": {"k80": 3, "p100": 2, "v100": 2}}
    policy = adapter.get_policy("finish_time_fairness_packed", solver="ECOS")
    assert policy._ecos
    allocation = FakeGavelScheduler(policy, state).compute_allocation()
    assert set(allocation) == set(state["ids"]) | set(state["pairs"])
    p = problem_of(state)
    assert packed_ratio(state, allocation, p) == pytest.approx(cvxpy_packed_ftf(p, state),
                                                               rel=2e-5)


def test_without_ecos_the_packed_name_means_the_default(monkeypatch):
    monkeypatch.setattr(adapter, "ecos_installed", lambda: False)
    state = packed_state(0)
    named = adapter.get_policy("finish_time_fairness_packed", solver="ECOS")
    assert not named._ecos
    a = FakeGavelScheduler(named, state).compute_allocation()
    b = FakeGavelScheduler(adapter.get_policy("finish_time_fairness_packed"),
                           state).compute_allocation()
    assert all(a[k][t] == pytest.approx(b[k][t], abs=1e-9) for k in a for t in PACKED_TYPES)


def water_levels(state: dict, allocation: dict) -> np.ndarray:
    """(M,) s_m / w_m x time_m, the speed-blind water filling's levels, jobs in id order:
    Gavel's proportional share (c_j / M of every type, rows scaled to sum to 1) gives every
    job a total time of 1, the level's denominator."""
    ids = state["ids"]
    X = np.array([[allocation[j][t] for t in PACKED_TYPES] for j in ids])
    s = np.array([state["scale_factors"][j] for j in ids], float)
    w = np.array([state["priority_weights"][j] for j in ids], float)
    return s / w * X.sum(axis=1)


@pytest.mark.parametrize("seed", range(3))
def test_speed_blind_water_filling_through_ecos_and_glpk_is_the_leximin_allocation(seed):
    pytest.importorskip("ecos")
    pytest.importorskip("cvxopt")
    # every job runs on every type, so Gavel's view (every type) and schedopt's coincide
    state = {**gavel_state(seed, num_jobs=8), "cluster_spec": {"k80": 4, "p100": 2, "v100": 2}}
    policy = adapter.get_policy("max_min_fairness_water_filling", solver="ECOS")
    assert policy._ecos
    allocation = FakeGavelScheduler(policy, state).compute_allocation()
    ids = state["ids"]
    X = np.array([[allocation[j][t] for t in PACKED_TYPES] for j in ids])
    s = np.array([state["scale_factors"][j] for j in ids], float)
    c = np.array([state["cluster_spec"][t] for t in PACKED_TYPES], float)
    assert X.min() >= 0 and (X.sum(axis=1) <= 1 + 1e-6).all() and (s @ X <= c + 1e-6).all()
    levels = water_levels(state, allocation)
    # the lowest level is the max-min optimum: max u with s_m / w_m X_m. / p >= u (linprog)
    w = np.array([state["priority_weights"][j] for j in ids], float)
    M, J = X.shape
    unit = s / w
    A = np.vstack([np.hstack([-np.kron(np.diag(unit), np.ones(J)), np.ones((M, 1))]),
                   np.hstack([np.kron(np.eye(M), np.ones(J)), np.zeros((M, 1))]),
                   np.hstack([np.kron(s[None, :], np.eye(J)), np.zeros((J, 1))])])
    b = np.concatenate([np.zeros(M), np.ones(M), c])
    best = -linprog(-np.eye(M * J + 1)[-1], A_ub=A, b_ub=b, bounds=(0, None),
                    method="highs").fun
    assert levels.min() == pytest.approx(best, rel=1e-5)
    # and every level is the leximin one, as schedopt's own water filling finds it (Gavel's
    # bottleneck test allows a relative 1e-4)
    default = FakeGavelScheduler(adapter.get_policy("max_min_fairness_water_filling"),
                                 state).compute_allocation()
    np.testing.assert_allclose(np.sort(levels), np.sort(water_levels(state, default)),
                               rtol=1e-3)


def test_without_glpk_mi_water_filling_takes_no_ecos_route(monkeypatch):
    monkeypatch.setattr(adapter, "glpk_mi_installed", lambda: False)
    assert not adapter.get_policy("max_min_fairness_water_filling", solver="ECOS")._ecos


@pytest.mark.parametrize("seed", range(3))
def test_gavels_isolated_throughput_is_schedopts_to_the_last_bits(seed):
    p = problem_of(gavel_state(seed, num_jobs=7))
    np.testing.assert_allclose(adapter.gavel_isolated_throughput(p),
                               adapter.isolated_throughput(p), rtol=1e-14)
    # by hand for job 0: c_j / (M s_0) of each type, the row scaled to sum to at most 1
    share = np.asarray(p.capacity, float) / (p.num_jobs * p.scale_factor[0])
    assert adapter.gavel_isolated_throughput(p)[0] == pytest.approx(
        p.throughput[0] @ share / max(share.sum(), 1.0), rel=1e-14)
