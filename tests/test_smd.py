"""SMD, its exact reference and its baselines (docs/smd.md), checked against independent routes:
brute force over every placement on the tiniest instances, smd_exact on small random ones,
placement feasibility machine by machine, and the baselines' defined behaviour."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from smd_strategies import ps_instances
from schedopt.api import solve
from schedopt.cli.main import main
from schedopt.errors import PolicyError
from schedopt.policies.smd.algorithm import DEFAULT_EPSILON, smd
from schedopt.policies.smd.baselines import equal_split, optimus_greedy
from schedopt.policies.smd.exact import smd_exact
from schedopt.policies.smd.model import SmdProblem, completion_time
from schedopt.instance import load_instance, parse_instance

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "instances" / "smd-small.json"


def brute_force(instance) -> float | None:
    """min over every placement (each job's workers and PSs per machine) of the sum of
    completion times, or None when nothing fits; T from the job's own spec."""
    nodes = instance.cluster.nodes
    cap = np.array([[n.gpus, n.cpus, n.memory_gb, n.bandwidth_gbps] for n in nodes], dtype=float)
    H = len(nodes)
    usage, total = np.zeros((1, H, 4)), np.zeros(1)
    for job in instance.jobs:
        spec = job.parameter_server
        a = np.array([spec.worker.gpus, spec.worker.cpus, spec.worker.memory_gb, spec.worker.bandwidth_gbps])
        b = np.array([spec.ps.gpus, spec.ps.cpus, spec.ps.memory_gb, spec.ps.bandwidth_gbps])
        options = [(x, y) for x in itertools.product(range(spec.max_workers + 1), repeat=H)
                   if 1 <= sum(x) <= spec.max_workers
                   for y in itertools.product(range(spec.max_ps + 1), repeat=H)
                   if 1 <= sum(y) <= spec.max_ps]
        use = np.array([np.outer(x, a) + np.outer(y, b) for x, y in options])
        T = np.array([float(completion_time(spec, sum(x), sum(y))) for x, y in options])
        usage = (usage[:, None] + use[None]).reshape(-1, H, 4)
        total = (total[:, None] + T[None]).reshape(-1)
        fits = (usage <= cap + 1e-9).all(axis=(1, 2))
        usage, total = usage[fits], total[fits]
        if total.size == 0:
            return None
    return float(total.min())


def assert_valid(problem: SmdProblem, result) -> None:
    """A feasible placement whose objective is the sum of its jobs' completion times."""
    assert result.placement is not None
    assert result.placement.violations(problem) == []
    T = problem.completion_time(result.workers, result.ps)
    assert result.objective == pytest.approx(T.sum(), rel=1e-12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ps_instances(max_jobs=3, max_machines=2, max_workers=3, max_ps=2, tight=True))
def test_smd_exact_and_smd_equal_brute_force_on_the_tiniest_instances(instance):
    # tight machines (1-4 GPUs, 8-16 cores, 25-50 Gbit/s): packing binds
    problem = SmdProblem.from_instance(instance)
    expected = brute_force(instance)
    exact, result = smd_exact(problem), smd(problem)
    if expected is None:
        assert exact.status.value == "infeasible" and exact.placement is None
        assert result.status.value == "infeasible" and result.placement is None
        return
    assert_valid(problem, result)
    assert result.objective == pytest.approx(expected, rel=1e-9)
    assert result.bound <= expected * (1 + 1e-9)
    assert exact.status.value == "optimal"
    assert_valid(problem, exact)
    assert exact.objective == pytest.approx(expected, rel=1e-9)
    assert exact.bound == pytest.approx(expected, rel=1e-6)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ps_instances(max_jobs=6, max_machines=4))
def test_smd_is_within_one_plus_epsilon_of_smd_exact_on_small_instances(instance):
    problem = SmdProblem.from_instance(instance)
    exact = smd_exact(problem)
    result = smd(problem)
    if exact.placement is None:
        assert exact.status.value == "infeasible" and result.placement is None
        return
    assert_valid(problem, exact)
    assert_valid(problem, result)
    assert exact.objective <= result.objective * (1 + 1e-9)
    assert result.objective <= (1 + DEFAULT_EPSILON) * exact.objective


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ps_instances(max_jobs=6, max_machines=4, tight=True))
def test_every_method_places_feasibly_on_tight_machines(instance):
    problem = SmdProblem.from_instance(instance)
    exact = smd_exact(problem)
    for method in (smd, equal_split, optimus_greedy):
        result = method(problem)
        if exact.placement is None:
            assert result.placement is None
            continue
        assert_valid(problem, result)
        assert result.objective >= exact.objective * (1 - 1e-9)
        if method is smd:  # the heuristic's own placement search finds one whenever one exists
            assert result.placement is not None


def test_bundled_instance_smd_matches_the_exact_optimum_and_beats_the_baselines():
    problem = SmdProblem.from_instance(load_instance(SMALL))
    exact, result = smd_exact(problem), smd(problem)
    assert exact.status.value == "optimal"
    assert_valid(problem, result)
    assert result.objective == pytest.approx(exact.objective, rel=1e-9)
    greedy, equal = optimus_greedy(problem), equal_split(problem)
    assert_valid(problem, greedy)
    assert_valid(problem, equal)
    assert result.objective < greedy.objective < equal.objective


def _one_machine(jobs: list[dict], gpus: int = 8, cpus: int = 64, bandwidth: float = 100) -> dict:
    return {"format": "schedopt-instance/1",
            "cluster": {"gpu_types": {"g": {"count": gpus}},
                        "nodes": [{"id": "m", "gpu_type": "g", "gpus": gpus, "cpus": cpus,
                                   "memory_gb": 512, "bandwidth_gbps": bandwidth}]},
            "jobs": jobs}


def _job(name: str, size_gb: float = 0.1, worker_bw: float = 10, ps_bw: float = 10,
         max_workers: int = 8, max_ps: int = 8) -> dict:
    return {"id": name, "throughput": {"g": 1.0}, "parameter_server": {
        "epochs": 1, "samples_per_epoch": 64000, "batch_per_worker": 32,
        "compute_s_per_sample": 0.001, "model_size_gb": size_gb,
        "worker": {"bandwidth_gbps": worker_bw, "cpus": 1}, "ps": {"bandwidth_gbps": ps_bw, "cpus": 1},
        "max_workers": max_workers, "max_ps": max_ps}}


def test_equal_split_gives_each_job_its_fastest_configuration_within_a_share():
    # two identical jobs on 8 GPUs / 100 Gbit/s: a share is 4 GPUs and 50 Gbit/s, i.e. at most
    # 5 tasks of 10 Gbit/s; the fastest such configurations are (3, 2) or (4, 1) -- by T:
    problem = SmdProblem.from_instance(parse_instance(_one_machine([_job("a"), _job("b")])))
    result = equal_split(problem)
    assert_valid(problem, result)
    spec = parse_instance(_one_machine([_job("a")])).jobs[0].parameter_server
    best = min(((w, p) for w in range(1, 5) for p in range(1, 9) if w + p <= 5),
               key=lambda c: float(completion_time(spec, *c)))
    assert list(zip(result.workers, result.ps)) == [best, best]


def test_greedy_adds_the_task_with_the_largest_gain_per_dominant_share():
    # one job with room for exactly one more task (30 Gbit/s, tasks of 10): a worker or a PS.
    # Both tasks' dominant share is bandwidth (10 / 30), so the greedy adds the task with the
    # larger decrease of T, and only that one.
    doc = _one_machine([_job("a", size_gb=1.0)], bandwidth=30)
    problem = SmdProblem.from_instance(parse_instance(doc))
    result = optimus_greedy(problem)
    assert_valid(problem, result)
    spec = parse_instance(doc).jobs[0].parameter_server
    gain_worker = float(completion_time(spec, 1, 1) - completion_time(spec, 2, 1))
    gain_ps = float(completion_time(spec, 1, 1) - completion_time(spec, 1, 2))
    expected = (2, 1) if gain_worker > max(gain_ps, 0) else (1, 2)
    assert (int(result.workers[0]), int(result.ps[0])) == expected
    assert result.details["tasks_added"] == 1


def test_greedy_stops_when_no_task_gains():
    # a worker-side-bound job (PS bandwidth 8x the worker's) with max_ps 1 and max_workers 2 on
    # a big machine: it ends at (2, 1), the only gaining task being the second worker.
    doc = _one_machine([_job("a", worker_bw=10, ps_bw=80, max_workers=2, max_ps=1)])
    result = optimus_greedy(SmdProblem.from_instance(parse_instance(doc)))
    assert (int(result.workers[0]), int(result.ps[0])) == (2, 1)


def test_every_method_reports_infeasible_when_one_worker_and_one_ps_per_job_cannot_fit():
    doc = _one_machine([_job("a"), _job("b"), _job("c")], gpus=2)  # 3 workers need 3 GPUs
    problem = SmdProblem.from_instance(parse_instance(doc))
    for method in (smd, smd_exact, equal_split, optimus_greedy):
        result = method(problem)
        assert result.placement is None and result.objective is None
        assert result.status.value == "infeasible"


def test_policies_return_counts_placement_and_completion_times():
    instance = load_instance(SMALL)
    problem = SmdProblem.from_instance(instance)
    for policy in ("smd", "smd_exact", "smd_equal_split", "smd_greedy"):
        result = solve(instance, policy)
        d = result.details
        assert result.X is None and set(d["workers"]) == set(instance.job_ids)
        assert sum(d["completion_time_s"].values()) == pytest.approx(result.objective, rel=1e-12)
        for job in instance.job_ids:
            where = d["placement"][job]
            assert sum(c["workers"] for c in where.values()) == d["workers"][job]
            assert sum(c["ps"] for c in where.values()) == d["ps"][job]
            i = instance.job_ids.index(job)
            assert d["completion_time_s"][job] == pytest.approx(
                problem.completion_time(np.array(list(d["workers"].values())),
                                        np.array(list(d["ps"].values())))[i])
        json.dumps(result.to_dict(), allow_nan=False)
    exact = solve(instance, "smd_exact")
    assert exact.status.value == "optimal"
    heuristic = solve(instance, "smd")
    # smd's bound is a proven lower bound: never above the exact optimum, and smd says optimal
    # exactly when its objective reaches it
    assert heuristic.bound is not None
    assert heuristic.bound <= exact.objective * (1 + 1e-9)
    assert (heuristic.status.value == "optimal") == (heuristic.objective <= heuristic.bound * (1 + 1e-9))


def test_policy_options_are_checked():
    instance = load_instance(SMALL)
    with pytest.raises(PolicyError, match="epsilon must be a number in \\(0, 1\\)"):
        solve(instance, "smd", epsilon=0)
    with pytest.raises(PolicyError, match="calls no solver"):
        solve(instance, "smd", solver="cpsat")
    with pytest.raises(PolicyError, match="smd_exact is a MILP"):
        solve(instance, "smd_exact", solver="highs")
    with pytest.raises(PolicyError, match="need `parameter_server` on every job"):
        solve(ROOT / "instances" / "tiny.json", "smd")
    result = solve(instance, "smd", epsilon=0.2, max_iterations=2)
    assert result.details["iterations"] <= 2


def test_smd_exact_with_scip_and_cbc_agrees_with_cpsat():
    problem = SmdProblem.from_instance(load_instance(SMALL))
    objective = smd_exact(problem).objective
    for solver in ("scip", "cbc"):
        other = smd_exact(problem, solver)
        assert other.status.value == "optimal"
        assert_valid(problem, other)
        assert other.objective == pytest.approx(objective, rel=1e-7)


def test_cli_solve_prints_the_result_document_and_a_table():
    runner = CliRunner()
    out = runner.invoke(main, ["solve", str(SMALL), "--policy", "smd", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["allocation"] is None
    assert doc["status"] == ("optimal" if doc["objective"] <= doc["bound"] * (1 + 1e-9) else "feasible")
    assert doc["objective"] == pytest.approx(sum(doc["completion_time_s"].values()))
    assert set(doc["workers"]) == set(doc["ps"]) == set(doc["placement"])
    table = runner.invoke(main, ["solve", str(SMALL), "--policy", "smd_greedy"])
    assert table.exit_code == 0, table.output
    assert "sum of completion times" in table.output and "j005" in table.output
    bad = runner.invoke(main, ["solve", str(ROOT / "instances" / "tiny.json"), "--policy", "smd"])
    assert bad.exit_code == 2 and "parameter_server" in bad.output


def test_bundled_instance_is_what_its_generator_writes():
    import importlib.util

    spec = importlib.util.spec_from_file_location("smd_instances", ROOT / "benchmarks" / "smd_instances.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert json.loads(SMALL.read_text()) == module.smd_small_document()


def test_model_arrays_round_trip_through_the_instance_file(tmp_path):
    from schedopt.instance import save_instance

    instance = load_instance(SMALL)
    save_instance(instance, tmp_path / "copy.yaml")
    again = load_instance(tmp_path / "copy.yaml")
    assert again == instance
    a, b = SmdProblem.from_instance(instance), SmdProblem.from_instance(again)
    np.testing.assert_array_equal(a.capacity, b.capacity)
    np.testing.assert_array_equal(a.compute_s, b.compute_s)
    assert copy.deepcopy(a.job_ids) == b.job_ids
