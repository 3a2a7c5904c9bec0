"""Speed-blind finish-time fairness through ECOS, as Gavel's scheduler asks for it
(`get_policy("finish_time_fairness", solver="ECOS")` with the `ecos` package installed): the
answer is optimal for Gavel's program (every GPU type priced at the job's V100 steps/s, also
types where the job runs at 0 steps/s), checked against a bisection over scipy's linprog
written out here; without ECOS the name means the default, as before."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

import schedopt.gavel as adapter

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


def test_only_ecos_and_only_finish_time_fairness_take_the_ecos_route():
    assert not adapter.get_policy("finish_time_fairness", solver="SCS")._ecos
    assert not adapter.get_policy("finish_time_fairness")._ecos
    assert not adapter.get_policy("max_min_fairness", solver="ECOS")._ecos
