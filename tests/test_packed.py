"""Space-sharing max-min fairness (`max_min_fairness_packed`): column generation against the
plain LP with every pair column, pruning, the proven bound, closed forms and the CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from schedopt import solve
from schedopt.backends import SolveOptions, Status, solve_lp
from schedopt.backends.session import Solver
from schedopt.cli.main import main
from schedopt.policies.gavel.lp import max_min_fairness
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.packed.master import Candidates, PairTable, max_min_fairness_packed
from schedopt.errors import PolicyError
from schedopt.instance import load_instance, parse_instance

ROOT = Path(__file__).resolve().parents[1]
COLOCATION = str(ROOT / "instances" / "colocation.json")


def random_case(seed: int) -> tuple[ThroughputProblem, PairTable]:
    """3-12 jobs, 1-3 GPU types, scale factors 1/2, weights 1/2, some jobs untyped, some
    types unable to share, some jobs unable to run on some types."""
    rng = np.random.default_rng(seed)
    M, J, K = int(rng.integers(3, 13)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    T = rng.uniform(0.5, 3.0, (M, J)) * (rng.random((M, J)) > 0.15)
    T[:, 0] = rng.uniform(0.5, 3.0, M)  # every job runs somewhere
    capacity = rng.integers(1, 5, J).astype(float)
    capacity[0] = max(capacity[0], 2.0)
    problem = ThroughputProblem.from_arrays(T, rng.choice([1, 2], M, p=[0.7, 0.3]),
                                            rng.choice([1.0, 2.0], M), capacity)
    rate = rng.uniform(0.2, 2.0, (J, K, K))
    rate[rng.random((J, K, K)) < 0.1] = 0.0  # one job of the pair makes no progress
    rate[rng.random((J, K, K)) < 0.2] = np.nan
    return problem, PairTable.from_arrays(rng.integers(-1, K, M), rate)


def typed_case(seed: int, jobs: int = 40) -> tuple[ThroughputProblem, PairTable]:
    """Gavel-like: every job one of 5 types (its solo row is its type's), pairs 0.3-0.9 of solo,
    so jobs come in classes of interchangeable ones (the seed's exact case)."""
    rng = np.random.default_rng(seed)
    solo = rng.uniform(0.5, 2.0, (5, 2)) * np.array([1.0, 2.5])
    job_type = rng.integers(0, 5, jobs)
    rate = rng.uniform(0.3, 0.9, (2, 5, 5)) * solo.T[:, :, None]
    problem = ThroughputProblem.from_arrays(solo[job_type], capacity=[jobs // 4, jobs // 4])
    return problem, PairTable.from_arrays(job_type, rate)


def reference_objective(problem, table, outcome) -> float:
    """min_m s_m thr_m / (w_m thr^eq_m) from the returned allocation and pairs alone, checking
    the constraints on the way (time <= 1, GPUs <= capacity, pairs allowed by the table)."""
    ids = {job: m for m, job in enumerate(problem.job_ids)}
    types = {name: j for j, name in enumerate(problem.gpu_types)}
    solo = outcome.allocation.copy()
    steps = np.zeros(problem.num_jobs)
    gpus = np.zeros(problem.num_types)
    for pair in outcome.details["pairs"]:
        a, b = (ids[job] for job in pair["jobs"])
        j, f = types[pair["gpu_type"]], pair["fraction"]
        assert a != b and problem.scale_factor[a] == problem.scale_factor[b] and f > 0
        ta, tb = table.rate[j, table.job_type[a], table.job_type[b]], \
            table.rate[j, table.job_type[b], table.job_type[a]]
        assert table.job_type[a] >= 0 and table.job_type[b] >= 0 and np.isfinite(ta + tb)
        assert problem.runnable[a, j] and problem.runnable[b, j]
        steps[a] += f * ta
        steps[b] += f * tb
        solo[a, j] -= f
        solo[b, j] -= f
        gpus[j] += problem.scale_factor[a] * f
    assert solo.min() >= -1e-9 and np.all(solo[~problem.runnable] <= 1e-9)
    assert outcome.allocation.sum(axis=1).max() <= 1 + 1e-9
    gpus += problem.scale_factor @ solo
    assert np.all(gpus <= problem.capacity + 1e-9)
    steps += np.einsum("mj,mj->m", problem.throughput, solo)
    return float(np.min(problem.scale_factor * steps / (problem.weight * problem.equal_share_throughput)))


def assert_proven(outcome) -> None:
    assert outcome.status is Status.OPTIMAL
    assert outcome.bound >= outcome.objective - 1e-12
    assert (outcome.bound - outcome.objective) / outcome.bound <= 1e-6


@pytest.mark.parametrize("seed", range(25))
def test_column_generation_matches_the_dense_lp_and_the_unpruned_lp(seed):
    problem, table = random_case(seed)
    dense = max_min_fairness_packed(problem, table, method="dense")
    unpruned = max_min_fairness_packed(problem, table, method="dense", prune=False)
    assert dense.status is Status.OPTIMAL and unpruned.status is Status.OPTIMAL
    assert dense.objective == pytest.approx(unpruned.objective, abs=1e-7)
    assert unpruned.details["candidate_pairs"] == dense.details["candidate_pairs"] + \
        dense.details["pruned_pairs"]
    for seeded in (True, False):
        columns = max_min_fairness_packed(problem, table, seed=seeded)
        assert_proven(columns)
        assert columns.objective == pytest.approx(dense.objective, abs=1e-7)
        assert columns.bound >= unpruned.objective - 1e-9
        assert reference_objective(problem, table, columns) == pytest.approx(columns.objective, abs=1e-9)
    assert reference_objective(problem, table, unpruned) == pytest.approx(unpruned.objective, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_interchangeable_jobs_seeded_from_the_class_lp(seed):
    problem, table = typed_case(seed)
    dense = max_min_fairness_packed(problem, table, method="dense")
    columns = max_min_fairness_packed(problem, table)
    assert_proven(columns)
    assert columns.details["seed_columns"] > 0
    assert columns.objective == pytest.approx(dense.objective, abs=1e-7)
    assert columns.objective > max_min_fairness(problem).objective + 1e-3  # sharing helps here
    assert reference_objective(problem, table, columns) == pytest.approx(columns.objective, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_jobs_with_their_own_rows_seeded_from_coarse_classes(seed):
    problem, table = typed_case(seed)
    noisy = dataclasses.replace(problem, throughput=problem.throughput * np.random.default_rng(
        seed).uniform(0.9, 1.1, problem.throughput.shape))
    dense = max_min_fairness_packed(noisy, table, method="dense")
    columns = max_min_fairness_packed(noisy, table)
    assert_proven(columns)
    assert columns.details["seed_columns"] > 0
    assert columns.objective == pytest.approx(dense.objective, abs=1e-7)


@pytest.mark.parametrize("seed", range(6))
def test_every_round_bound_is_valid_before_convergence(seed):
    problem, table = typed_case(seed, jobs=30)
    optimum = max_min_fairness_packed(problem, table, method="dense", prune=False).objective
    for rounds in (1, 2, 3):
        partial = max_min_fairness_packed(problem, table, seed=False, max_iterations=rounds, batch=5)
        assert partial.bound >= optimum - 1e-9
        assert partial.objective <= optimum + 1e-9
        assert partial.status is (Status.OPTIMAL if partial.bound - partial.objective <= 1e-6 *
                                  partial.bound else Status.FEASIBLE)


def test_no_pairs_gives_max_min_fairness():
    for seed in range(10):
        problem, _ = random_case(seed)
        plain = max_min_fairness(problem)
        for table in (PairTable.none(problem.num_jobs, problem.num_types),
                      PairTable.from_arrays(np.zeros(problem.num_jobs, dtype=int),
                                            np.full((problem.num_types, 1, 1), 1e-3))):  # all pruned
            packed = max_min_fairness_packed(problem, table)
            assert_proven(packed)
            assert packed.objective == pytest.approx(plain.objective, abs=1e-7)
            assert packed.details["pairs"] == []


@pytest.mark.parametrize("rates, expected", [
    ((0.8, 0.8), 0.8),     # always paired: each job 0.8 of its solo rate, vs 1/2 time-shared
    ((0.9, 0.3), 9 / 16),  # paired 5/8 of the time, job b alone the rest: 0.9 f = 0.3 f + 1 - f
    ((0.4, 0.4), 0.5),     # 0.4 + 0.4 <= 1: pruned, time sharing wins
])
def test_two_jobs_one_gpu_closed_form(rates, expected):
    problem = ThroughputProblem.from_arrays([[1.0], [1.0]], capacity=[1])
    table = PairTable.from_arrays([0, 1], [[[np.nan, rates[0]], [rates[1], np.nan]]])
    for method in ("columns", "dense"):
        outcome = max_min_fairness_packed(problem, table, method=method)
        assert outcome.objective == pytest.approx(expected, abs=1e-9)
        assert outcome.bound == pytest.approx(expected, abs=1e-9)
    assert outcome.details["pruned_pairs"] == (1 if sum(rates) <= 1 else 0)


def test_dense_runs_on_other_backends():
    problem, table = typed_case(7, jobs=16)
    highs = max_min_fairness_packed(problem, table, method="dense")
    clarabel = max_min_fairness_packed(problem, table, "clarabel", method="dense")
    assert clarabel.objective == pytest.approx(highs.objective, rel=1e-6)


def test_pair_table_reads_the_instance_both_ways_round():
    doc = json.loads(Path(COLOCATION).read_text())
    doc["jobs"].append({"id": "untyped", "throughput": {"k80": 1.0, "p100": 1.0, "v100": 1.0}})
    instance = parse_instance(doc)
    table = PairTable.from_instance(instance)
    a3c, lm = table.labels.index("A3C"), table.labels.index("LM (batch size 20)")
    v100 = instance.cluster.type_names.index("v100")
    assert table.rate[v100, a3c, lm] == pytest.approx(3.59496)
    assert table.rate[v100, lm, a3c] == pytest.approx(41.8232)
    resnet = table.labels.index("ResNet-50 (batch size 64)")
    k80 = instance.cluster.type_names.index("k80")
    assert table.rate[k80, resnet, resnet] == 0.0  # Gavel measured [0, 0]: cannot share
    assert table.job_type[-1] == -1 and table.job_type[0] == a3c
    Q = table.pair_rates(k80)
    assert np.isnan(Q[-1]).all() and np.isnan(Q[:, -1]).all()  # untyped: never paired
    pair = Candidates.build(ThroughputProblem.from_instance(instance), table, prune=False)
    twins = np.flatnonzero(table.job_type == resnet)
    assert twins.size == 2 and not pair.mask[k80][np.ix_(twins, twins)].any()  # no column
    assert pair.mask[v100][twins[0], twins[1]]  # the same two share a v100 (measured > 0)


def test_policy_beats_time_sharing_on_the_bundled_instance_and_reports_pairs():
    instance = load_instance(COLOCATION)
    packed = solve(instance, "max_min_fairness_packed")
    plain = solve(instance, "max_min_fairness")
    assert packed.status is Status.OPTIMAL and packed.objective > plain.objective + 0.05
    dense = solve(instance, "max_min_fairness_packed", method="dense", prune=False)
    assert packed.objective == pytest.approx(dense.objective, abs=1e-7)
    arrays_only = dataclasses.replace(ThroughputProblem.from_instance(instance), instance=None)
    with pytest.raises(Exception, match="needs an instance"):  # no co-location table in arrays
        solve(arrays_only, "gavel:max_min_fairness_packed")


def test_cli_solves_with_space_sharing_as_json():
    result = CliRunner().invoke(main, ["solve", COLOCATION, "--policy", "max_min_fairness_packed",
                                       "--json"], catch_exceptions=False)
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert doc["policy"] == "max_min_fairness_packed" and doc["status"] == "optimal"
    assert doc["bound"] >= doc["objective"] and doc["pairs"]
    instance = load_instance(COLOCATION)
    problem = ThroughputProblem.from_instance(instance)
    X = np.array([[doc["allocation"][job][t] for t in problem.gpu_types] for job in problem.job_ids])

    class Returned:  # the document read back as an outcome
        allocation, details = X, {"pairs": doc["pairs"]}

    assert reference_objective(problem, PairTable.from_instance(instance), Returned) == \
        pytest.approx(doc["objective"], abs=1e-9)
    thr = np.array([doc["effective_throughput"][job] for job in problem.job_ids])
    assert thr.min() > 0 and np.all(thr <= (problem.throughput * X).sum(axis=1) + 1e-9)
    listing = CliRunner().invoke(main, ["policies"]).output
    assert "max_min_fairness_packed" in listing and "gavel:max_min_fairness_packed" in listing


def test_time_limit_stops_the_loop_with_a_bound():
    problem, table = typed_case(1, jobs=60)
    outcome = max_min_fairness_packed(problem, table, options=SolveOptions(time_limit=1e-9),
                                      seed=False)
    assert outcome.details["iterations"] == 1
    optimum = max_min_fairness_packed(problem, table).objective
    assert outcome.objective <= optimum + 1e-9 <= outcome.bound + 2e-9


def test_export_mps_writes_the_final_master_lp(tmp_path):
    highspy = pytest.importorskip("highspy")
    path = tmp_path / "master.mps"
    result = CliRunner().invoke(main, ["solve", COLOCATION, "-p", "max_min_fairness_packed",
                                       "--export-mps", str(path), "--json"], catch_exceptions=False)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    h.run()
    assert abs(h.getInfo().objective_function_value) == pytest.approx(
        json.loads(result.output)["objective"], abs=1e-7)


def test_column_generation_asks_for_a_backend_that_adds_columns_not_for_a_name():
    problem, table = typed_case(2, jobs=12)
    for name in ("glop", "highs-ipm", "clarabel"):
        with pytest.raises(PolicyError, match="adds columns.*use -o method=dense"):
            max_min_fairness_packed(problem, table, name)


def test_the_solver_keeps_the_final_master_lp_without_a_global_recorder(tmp_path):
    problem, table = typed_case(3, jobs=30)
    solver = Solver("highs", keep_programs=True)
    outcome = max_min_fairness_packed(problem, table, solver, seed=False)
    last = solver.last_program
    assert last is solver.programs[-1]
    assert last.num_cols == problem.num_jobs * problem.num_types + 1 + \
        outcome.details["columns_generated"]
    assert solve_lp(last, "highs").objective == pytest.approx(outcome.objective, abs=1e-7)
