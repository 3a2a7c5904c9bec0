"""Active measurement (schedopt.perf.active, `schedopt perf suggest`): the max-min plumbing
against an independent LP, the maxmin score against a brute-force regret, the uncertainty
order, pairs counted once, and the command."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.optimize import linprog

from schedopt.cli.main import main
from schedopt.perf import PerformanceModel, model_from_arrays, write_model
from schedopt.perf.active import SCENARIO_Z, maxmin_allocation, maxmin_level, suggest


def lp_level(T: np.ndarray, s: np.ndarray, cap: np.ndarray) -> float:
    """Max-min fairness written out for scipy: maximize t subject to
    s_m T[m].X[m] / (T[m].q) >= t, sum_j X[m, j] <= 1, sum_m s_m X[m, j] <= cap_j, X >= 0."""
    M, J = T.shape
    q = cap / cap.sum()
    a = s[:, None] * T / (T @ q)[:, None]  # normalized throughput per unit time share
    n = M * J + 1
    c = np.zeros(n)
    c[-1] = -1.0
    rows, rhs = [], []
    for m in range(M):
        r = np.zeros(n)
        r[m * J:(m + 1) * J] = -a[m]
        r[-1] = 1.0
        rows.append(r), rhs.append(0.0)
        r = np.zeros(n)
        r[m * J:(m + 1) * J] = 1.0
        rows.append(r), rhs.append(1.0)
    for j in range(J):
        r = np.zeros(n)
        r[j:M * J:J] = s
        rows.append(r), rhs.append(cap[j])
    # a job cannot use a type with fewer GPUs than its scale factor
    bounds = [(0, 0 if s[m] > cap[j] else None) for m in range(M) for j in range(J)] + [(0, None)]
    got = linprog(c, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=bounds, method="highs")
    assert got.status == 0
    return -got.fun


@pytest.mark.parametrize("seed", range(4))
def test_maxmin_level_of_its_allocation_is_the_lp_optimum(seed):
    rng = np.random.default_rng(seed)
    T = rng.uniform(0.2, 5.0, (7, 3))
    s = rng.choice([1.0, 2.0, 4.0], 7)
    cap = rng.integers(2, 6, 3).astype(float)
    X = maxmin_allocation(T, s, cap)
    assert maxmin_level(T, X, s, cap) == pytest.approx(lp_level(T, s, cap), rel=1e-5)


def completed_pair(values, known, uncertainty) -> tuple[PerformanceModel, PerformanceModel]:
    names = tuple(f"job{i}" for i in range(len(values)))
    v = np.array(values, dtype=float)
    seen = PerformanceModel(names, ("g0", "g1"), (), np.where(known, v, np.nan), known)
    done = seen.with_values(v, np.where(known, 0.0, uncertainty))
    return seen, done


def test_maxmin_scores_are_the_brute_force_regret_of_deciding_without_each_cell():
    values = [[4.0, 1.0], [1.0, 3.0], [2.0, 2.5], [3.0, 0.8]]
    known = np.array([[True, False], [False, True], [True, False], [True, True]])
    u = np.array([[0, 0.6], [0.3, 0], [0, 0.45], [0, 0]])
    seen, done = completed_pair(values, known, u)
    cap, s = np.array([2.0, 1.0]), np.ones(4)
    picks = suggest(seen, 3, "maxmin", capacity=cap, completed=done)
    E = np.array(values)
    X = maxmin_allocation(E, s, cap)
    expected = {}
    for (m, g) in zip(*np.nonzero(~known)):
        regret = []
        for sign in (-1, 1):
            S = E.copy()
            S[m, g] *= np.exp(sign * SCENARIO_Z * u[m, g])
            best = lp_level(S, s, cap)
            regret.append(max(0.0, best - maxmin_level(S, X, s, cap)) / best)
        expected[(f"job{m}", f"g{g}")] = np.mean(regret)
    got = {(p.job_type, p.gpu_type): p.score for p in picks}
    assert got.keys() == expected.keys()
    for key in expected:
        assert got[key] == pytest.approx(expected[key], abs=1e-5)
    scores = [p.score for p in picks]
    assert scores == sorted(scores, reverse=True) and max(scores) > 0


def test_uncertainty_strategy_orders_by_uncertainty_and_counts_a_pair_once():
    rng = np.random.default_rng(2)
    R, J = 6, 2
    names = tuple(f"t{i}" for i in range(R))
    iso = rng.uniform(1, 5, (R, J))
    pairs = iso[:, :, None] * rng.uniform(0.4, 0.9, (R, J, R))
    model = model_from_arrays(names, ("a", "b"), iso, pairs, names)
    hidden = np.zeros(model.shape, dtype=bool)
    hidden[1, 0] = True  # an isolated cell
    c = model.column("b", "t3")
    hidden[2, c] = hidden[3, model.column("b", "t2")] = True  # one pair: both sides
    seen = model.hide(hidden)
    u = np.zeros(model.shape)
    u[1, 0], u[2, c], u[3, model.column("b", "t2")] = 0.2, 0.5, 0.1
    done = seen.with_values(model.values, np.where(hidden, u, 0.0))
    picks = suggest(seen, 5, "uncertainty", completed=done)
    assert [(p.job_type, p.gpu_type, p.partner) for p in picks] == [("t2", "b", "t3"), ("t1", "a", None)]
    assert [p.uncertainty for p in picks] == [0.5, 0.2]
    cells = lambda picks: [(p.job_type, p.gpu_type, p.partner) for p in picks]  # noqa: E731
    randomly = suggest(seen, 5, "random", seed=3)
    assert len(randomly) == 2 and cells(randomly) == cells(suggest(seen, 5, "random", seed=3))


def test_perf_suggest_command(tmp_path):
    values = [[4.0, 1.0], [1.0, 3.0], [2.0, 2.5], [3.0, 0.8], [2.2, 1.9], [1.5, 2.8]]
    known = np.ones((6, 2), dtype=bool)
    known[[0, 2, 4], [1, 1, 0]] = False
    seen, _ = completed_pair(values, known, 0.0)
    write_model(seen, tmp_path / "m.json")
    runner = CliRunner()
    got = runner.invoke(main, ["perf", "suggest", str(tmp_path / "m.json"), "--budget", "2",
                               "--gpus", "g0=3,g1=2", "--ensemble", "3", "--ranks", "1", "--json"])
    assert got.exit_code == 0, got.output
    rows = json.loads(got.stdout)
    assert len(rows) == 2 and {(r["job_type"], r["gpu_type"]) for r in rows} <= {
        ("job0", "g1"), ("job2", "g1"), ("job4", "g0")}
    bad = runner.invoke(main, ["perf", "suggest", str(tmp_path / "m.json"), "--budget", "2",
                               "--gpus", "g0=3,v100=2"])
    assert bad.exit_code == 2 and "name every GPU type" in bad.stderr
