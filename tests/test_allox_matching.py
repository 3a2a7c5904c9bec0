"""AlloX (docs/formulations.md §4): the exact matching, its slot-cap reduction, the fairness
filter, processing times from an instance, and the `allox` policy through the API and CLI."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import schedopt
from schedopt.cli.main import main
from schedopt.errors import PolicyError, SolveError
from schedopt.policies.allox.matching import (METHODS, allox_assignment, allox_processing_times,
                                         allox_schedule, fairness_filter,
                                         schedule_from_assignment)
from schedopt.instance import load_instance

INF = np.inf
# docs/formulations.md §4: p(GPU, CPU) per job, all at t = 0, one GPU and one CPU free at 0.
WORKED = np.array([[2, 10], [3, 6], [4, 5], [1, 12], [6, 7], [5, 20]], dtype=float)
EXACT_METHODS = [m for m in METHODS if m != "auto"]


def assert_consistent(s, P, A, a):
    """Every job in exactly one queue; positions, SPT order, back-to-back run from free_at."""
    n, K = P.shape
    assert sorted(j for queue in s.queues for j in queue) == list(range(n))
    assert len(s.queues) == K
    for k, queue in enumerate(s.queues):
        jobs = np.array(queue, dtype=int)
        assert (s.machine[jobs] == k).all()
        assert (s.position[jobs] == np.arange(jobs.size)).all()
        p = P[jobs, k]
        assert np.isfinite(p).all()
        assert (np.diff(p) >= 0).all()  # shortest processing time first
        np.testing.assert_allclose(s.completion[jobs], s.start[jobs] + p, rtol=1e-12, atol=1e-9)
        if jobs.size:
            assert s.start[jobs[0]] == pytest.approx(A[k])
            np.testing.assert_allclose(s.start[jobs[1:]], s.completion[jobs[:-1]], rtol=1e-12,
                                       atol=1e-9)  # no overlap, no idle gap
    assert s.total_completion == pytest.approx(float(np.sum(s.completion - a)), rel=1e-12, abs=1e-9)


def brute_force(P, A, a) -> float:
    """min over every machine-per-job assignment, SPT order per machine, of sum (C - a)."""
    n, K = P.shape
    rows = P.tolist()
    best = INF
    for assign in itertools.product(range(K), repeat=n):
        total = 0.0
        for k in range(K):
            clock = A[k]
            for p in sorted(rows[m][k] for m in range(n) if assign[m] == k):
                clock += p
                total += clock
        best = min(best, total)
    return best - float(np.sum(a))


def random_instance(rng, n, K, inf_share=0.3):
    P = rng.exponential(5.0, (n, K))
    P[rng.random((n, K)) < inf_share] = INF
    P[np.arange(n), rng.integers(0, K, n)] = rng.exponential(5.0, n)  # runnable somewhere
    return P, rng.uniform(0, 10, K), rng.uniform(-5, 5, n)


# --- the worked example -----------------------------------------------------------------------

@pytest.mark.parametrize("method", METHODS)
def test_worked_example_total_completion_is_38_with_the_stated_queues(method):
    s = allox_schedule(WORKED, np.zeros(2), np.zeros(6), method=method)
    assert s.total_completion == pytest.approx(38.0)
    assert s.queues == ((3, 0, 1, 5), (2, 4))
    np.testing.assert_allclose(s.start, [1, 3, 0, 0, 5, 6])
    np.testing.assert_allclose(s.completion, [3, 6, 5, 1, 12, 11])
    np.testing.assert_array_equal(s.machine, [0, 0, 1, 0, 1, 0])
    np.testing.assert_array_equal(s.position, [1, 2, 0, 0, 1, 3])
    assert_consistent(s, WORKED, np.zeros(2), np.zeros(6))


def worked_instance_file(tmp_path, **extra_job_fields):
    """One GPU type (count 1, 1 step/s, total_steps = GPU seconds), one CPU machine, cpu_time."""
    jobs = [{"id": f"J{m}", "throughput": {"gpu": 1.0}, "total_steps": float(gpu),
             **{key: value[m] for key, value in extra_job_fields.items()}}
            for m, gpu in enumerate(WORKED[:, 0])]
    doc = {"format": "schedopt-instance/1",
           "cluster": {"gpu_types": {"gpu": {"count": 1}},
                       "cpu_machines": [{"id": "cpu0", "cores": 16}]},
           "jobs": jobs,
           "performance": {"cpu_time": {f"J{m}": float(c) for m, c in enumerate(WORKED[:, 1])}}}
    path = tmp_path / "allox-worked.json"
    path.write_text(json.dumps(doc))
    return path


def test_worked_example_through_an_instance_file_and_the_cli_json(tmp_path):
    path = worked_instance_file(tmp_path)
    result = CliRunner().invoke(main, ["solve", str(path), "--policy", "allox", "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["policy"] == "allox" and doc["status"] == "optimal"
    assert doc["total_completion_time"] == pytest.approx(38.0)
    assert doc["average_jct"] == pytest.approx(38.0 / 6)
    assert doc["objective"] == pytest.approx(38.0) and doc["bound"] == pytest.approx(38.0)
    assert doc["queues"] == {"gpu-n0/0": ["J3", "J0", "J1", "J5"], "cpu0": ["J2", "J4"]}
    assert doc["schedule"]["J5"] == {"machine": "gpu-n0/0", "position": 3, "start": 6.0,
                                     "completion": 11.0}
    assert doc["schedule"]["J4"]["start"] == 5.0 and doc["schedule"]["J4"]["completion"] == 12.0
    assert doc["allocation"] is None and doc["waiting"] == []


def test_worked_example_through_the_python_api_and_the_table(tmp_path):
    path = worked_instance_file(tmp_path)
    result = schedopt.solve(load_instance(path), "allox")
    assert result.X is None and result.allocation is None
    assert result.details["total_completion_time"] == pytest.approx(38.0)
    assert result.details["queues"]["cpu0"] == ["J2", "J4"]
    text = CliRunner().invoke(main, ["solve", str(path), "-p", "allox"]).output
    assert "objective  38" in text and "J3, J0, J1, J5" in text and "J2, J4" in text


def test_instance_now_shifts_start_and_arrival_counts_in_jct(tmp_path):
    path = worked_instance_file(tmp_path, arrival_time=[0, 0, 0, 0, 0, 0])
    doc = json.loads(path.read_text())
    doc["now"] = 100.0
    path.write_text(json.dumps(doc))
    result = schedopt.solve(path, "allox")
    assert result.details["schedule"]["J3"]["start"] == 100.0
    assert result.details["total_completion_time"] == pytest.approx(38.0 + 6 * 100.0)


# --- exactness against brute force --------------------------------------------------------------

@st.composite
def tiny_instances(draw):
    n = draw(st.integers(1, 7))
    K = draw(st.integers(1, 3))
    value = st.one_of(st.integers(0, 30).map(lambda v: v / 2), st.just(INF))
    P = np.array(draw(st.lists(st.lists(value, min_size=K, max_size=K), min_size=n, max_size=n)),
                 dtype=float)
    fallback = draw(st.lists(st.integers(0, K - 1), min_size=n, max_size=n))
    stuck = ~np.isfinite(P).any(axis=1)
    P[stuck, np.array(fallback)[stuck]] = 1.0 + np.arange(n)[stuck]  # runnable somewhere
    A = np.array(draw(st.lists(st.integers(0, 20), min_size=K, max_size=K)), dtype=float)
    a = np.array(draw(st.lists(st.integers(-10, 10), min_size=n, max_size=n)), dtype=float)
    return P, A, a


@settings(max_examples=150, deadline=None)
@given(tiny_instances())
def test_matching_equals_brute_force_on_tiny_instances(data):
    P, A, a = data
    s = allox_schedule(P, A, a)
    assert s.total_completion == pytest.approx(brute_force(P, A, a), rel=1e-12, abs=1e-9)
    assert_consistent(s, P, A, a)


@pytest.mark.parametrize("method", EXACT_METHODS)
def test_every_method_equals_brute_force_on_seeded_tiny_instances(method):
    rng = np.random.default_rng(7)
    for _ in range(25):
        P, A, a = random_instance(rng, int(rng.integers(1, 8)), int(rng.integers(1, 4)))
        s = allox_schedule(P, A, a, method=method)
        assert s.total_completion == pytest.approx(brute_force(P, A, a), rel=1e-9)
        assert_consistent(s, P, A, a)


# --- the slot-cap reduction ---------------------------------------------------------------------

@pytest.mark.parametrize("method", ["scipy", "scipy-sparse", "ortools"])
@pytest.mark.parametrize("seed", range(6))
def test_capped_matching_equals_the_full_n_by_nK_matching(method, seed):
    """Up to 40 jobs x 5 machines, with greedy caps and with caps of 1 (which forces the growth
    steps, including capped problems that have no full matching), zero and equal processing
    times, free times and arrivals spread out."""
    rng = np.random.default_rng(seed)
    for trial in range(12):
        n, K = int(rng.integers(1, 41)), int(rng.integers(1, 6))
        P, A, a = random_instance(rng, n, K)
        if trial % 3 == 0:
            P[rng.random((n, K)) < 0.2] = 0.0
        if trial % 4 == 0:
            P = np.round(P)  # ties
        full = schedule_from_assignment(P, A, a, allox_assignment(P, A, "full")[0])
        for caps in (None, np.ones(K, dtype=int)):
            machine, stats = allox_assignment(P, A, method, initial_caps=caps)
            s = schedule_from_assignment(P, A, a, machine)
            assert s.total_completion == pytest.approx(full.total_completion, rel=1e-9, abs=1e-9)
            assert_consistent(s, P, A, a)
            # accepted only when each machine's last slot is free (or it has all n slots, or
            # none because no job can run there)
            counts = np.bincount(machine, minlength=K)
            unusable = ~np.isfinite(P).any(axis=0)
            assert ((counts < stats.caps) | (stats.caps == n) | unusable).all()


def test_caps_grow_until_the_last_slot_is_free():
    # One machine 100x faster: every job belongs there, far beyond a cap of 1.
    P = np.column_stack([np.arange(1.0, 11.0), 100 * np.arange(1.0, 11.0)])
    machine, stats = allox_assignment(P, np.zeros(2), "scipy", initial_caps=np.ones(2, int))
    assert stats.matchings > 1 and stats.caps[0] == 10
    assert np.bincount(machine, minlength=2).tolist() == [10, 0]
    machine, stats = allox_assignment(P, np.zeros(2), "scipy")
    assert stats.matchings == 1  # the greedy's caps already suffice


def test_machines_nobody_can_use_get_empty_queues():
    P = np.array([[1.0, INF, 2.0], [3.0, INF, 1.0], [2.0, INF, 2.0]])
    s = allox_schedule(P, np.zeros(3), np.zeros(3))
    assert s.queues[1] == ()
    assert s.total_completion == pytest.approx(brute_force(P, np.zeros(3), np.zeros(3)))


def test_empty_queue_and_input_errors():
    s = allox_schedule(np.zeros((0, 2)), np.zeros(2), np.zeros(0))
    assert s.queues == ((), ()) and s.total_completion == 0.0
    with pytest.raises(PolicyError, match="job.* 1 can run on no machine"):
        allox_schedule(np.array([[1.0], [INF]]), np.zeros(1), np.zeros(2))
    with pytest.raises(PolicyError, match=">= 0"):
        allox_schedule(np.array([[-1.0]]), np.zeros(1), np.zeros(1))
    with pytest.raises(PolicyError, match="shape"):
        allox_schedule(np.ones((2, 2)), np.zeros(3), np.zeros(2))
    with pytest.raises(SolveError, match="unknown AlloX method"):
        allox_schedule(np.ones((2, 2)), np.zeros(2), np.zeros(2), method="highs")


def test_one_thousand_jobs_on_one_hundred_machines_completes():
    rng = np.random.default_rng(0)
    n, gpus, cpus = 1000, 90, 10
    base = rng.lognormal(7, 1, n)
    P = np.hstack([base[:, None] / rng.choice([1.0, 0.5, 0.25], gpus)[None, :],
                   np.repeat((base * rng.lognormal(1.5, 0.7, n))[:, None], cpus, axis=1)])
    P[rng.random(n) < 0.2, gpus:] = INF
    A, a = rng.uniform(0, 600, gpus + cpus), np.zeros(n)
    s = allox_schedule(P, A, a)
    assert_consistent(s, P, A, a)
    assert sum(map(len, s.queues)) == n


# --- fairness -----------------------------------------------------------------------------------

def test_fairness_filter_keeps_the_lowest_share_users_ties_by_name():
    users = np.array(["bob", "ann", "cat", "ann", "bob"], dtype=object)
    share = np.array([0.5, 0.2, 0.2, 0.2, 0.5])
    # 3 users; ann and cat tie at 0.2, ann first by name
    assert fairness_filter(users, share, 0.3).tolist() == [False, True, False, True, False]
    assert fairness_filter(users, share, 0.5).tolist() == [False, True, True, True, False]
    assert fairness_filter(users, share, 0.34).tolist() == [False, True, True, True, False]
    assert fairness_filter(users, share, 1.0).tolist() == [True] * 5
    low_bob = np.array([0.1, 0.2, 0.2, 0.2, 0.1])
    assert fairness_filter(users, low_bob, 0.3).tolist() == [True, False, False, False, True]


def test_fairness_filter_rounds_alpha_times_users_before_the_ceiling():
    users = np.array([f"u{i}" for i in range(10)], dtype=object)
    assert fairness_filter(users, np.zeros(10), 0.7).sum() == 7  # 0.7 * 10 = 7.000000000000001


@pytest.mark.parametrize("alpha", [0, -0.5, 1.5, float("nan"), True, "0.5"])
def test_fairness_filter_rejects_alpha_outside_zero_one(alpha):
    with pytest.raises(PolicyError, match="alpha"):
        fairness_filter(np.array(["a"], dtype=object), np.zeros(1), alpha)


def test_fairness_filter_needs_one_share_per_user():
    with pytest.raises(PolicyError, match="same for every job of a user"):
        fairness_filter(np.array(["a", "a"], dtype=object), np.array([0.1, 0.2]), 0.5)


def test_allox_policy_alpha_leaves_other_users_waiting(tmp_path):
    path = worked_instance_file(tmp_path, user=["zoe", "amy", "amy", "zoe", "max", "max"])
    result = schedopt.solve(path, "allox", alpha=0.5)  # ceil(1.5) = 2 users: amy, max (shares 0)
    assert result.details["waiting"] == ["J0", "J3"]
    assert sorted(result.details["schedule"]) == ["J1", "J2", "J4", "J5"]
    P = WORKED[[1, 2, 4, 5]]
    assert result.details["total_completion_time"] == pytest.approx(
        brute_force(P, np.zeros(2), np.zeros(4)))
    with pytest.raises(PolicyError, match="alpha"):
        schedopt.solve(path, "allox", alpha=0)


# --- processing times from an instance ----------------------------------------------------------

def hybrid_doc():
    return {"format": "schedopt-instance/1",
            "cluster": {"gpu_types": {"v100": {"count": 3, "gpus_per_node": 2},
                                      "k80": {"count": 1}},
                        "cpu_machines": [{"id": "c0", "cores": 32}, {"id": "c1", "cores": 8}]},
            "jobs": [{"id": "a", "throughput": {"v100": 4.0, "k80": 1.0}, "total_steps": 400,
                      "steps_done": 200},
                     {"id": "b", "throughput": {"v100": 2.0, "k80": 0}, "total_steps": 100}],
            "performance": {"cpu_time": {"b": 900.0}}}


def test_processing_times_one_machine_per_gpu_and_per_cpu_machine(tmp_path):
    path = tmp_path / "hybrid.json"
    path.write_text(json.dumps(hybrid_doc()))
    P, names = allox_processing_times(load_instance(path))
    assert names == ("v100-n0/0", "v100-n0/1", "v100-n1/0", "k80-n0/0", "c0", "c1")
    np.testing.assert_array_equal(P, [[50, 50, 50, 200, INF, INF],
                                      [50, 50, 50, INF, 900, 900]])


def test_processing_times_refuse_multi_gpu_jobs_and_unknown_work(tmp_path):
    doc = hybrid_doc()
    doc["jobs"][1]["scale_factor"] = 2
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(PolicyError, match="job\\(s\\) b have scale_factor > 1"):
        allox_processing_times(load_instance(path))
    doc = hybrid_doc()
    del doc["jobs"][0]["total_steps"]
    path.write_text(json.dumps(doc))
    with pytest.raises(PolicyError, match="total_steps .* missing for a"):
        allox_processing_times(load_instance(path))


# --- registry and CLI ---------------------------------------------------------------------------

def test_allox_is_listed_and_needs_an_instance():
    listing = json.loads(CliRunner().invoke(main, ["policies", "--json"]).output)
    allox = next(p for p in listing if p["name"] == "allox")
    assert allox["options"] == ["alpha", "method"] and allox["default_solver"] is None
    assert allox["decision"] == "queues"
    assert "allox" in CliRunner().invoke(main, ["policies"]).output
    problem = schedopt.ThroughputProblem.from_arrays([[1.0]], capacity=[1])
    with pytest.raises(PolicyError, match="needs an instance"):
        schedopt.solve(problem, "allox")


def test_cli_solver_picks_the_matching_method_and_rejects_lp_backends(tmp_path):
    path = str(worked_instance_file(tmp_path))
    runner = CliRunner()
    doc = json.loads(runner.invoke(main, ["solve", path, "-p", "allox", "-s", "ortools",
                                          "--json"]).output)
    assert doc["solver"] == "ortools" and doc["total_completion_time"] == pytest.approx(38.0)
    bad = runner.invoke(main, ["solve", path, "-p", "allox", "-s", "highs"])
    assert bad.exit_code == 2 and "unknown AlloX method 'highs'" in bad.stderr


def test_option_method_picks_the_matching_and_a_method_as_solver_is_deprecated(tmp_path):
    path = worked_instance_file(tmp_path)
    for method in ("scipy", "scipy-sparse", "ortools", "full"):
        result = schedopt.solve(path, "allox", method=method)
        assert result.solver == method and result.objective == pytest.approx(38.0)
    assert schedopt.solve(path, "allox").solver == "scipy"  # auto
    with pytest.warns(FutureWarning, match="-o method=ortools"):
        old = schedopt.solve(path, "allox", solver="ortools")
    assert old.solver == "ortools" and old.objective == pytest.approx(38.0)
    with pytest.raises(PolicyError, match="option method expects one of"):
        schedopt.solve(path, "allox", method="highs")
    doc = json.loads(CliRunner().invoke(main, ["solve", str(path), "-p", "allox", "-o",
                                               "method=scipy-sparse", "--json"]).output)
    assert doc["solver"] == "scipy-sparse" and doc["total_completion_time"] == pytest.approx(38.0)


def test_the_decision_is_the_machine_queues_of_the_details(tmp_path):
    from schedopt.core.decisions import MachineQueues
    from schedopt.policies.allox.policy import Allox

    path = worked_instance_file(tmp_path, user=["zoe", "amy", "amy", "zoe", "max", "max"])
    policy = Allox()
    problem = schedopt.ThroughputProblem.from_instance(load_instance(path))
    options = policy.parse_options({"alpha": 0.5})
    outcome = policy.solve(problem, options, None)
    decision = outcome.decision
    assert isinstance(decision, MachineQueues)
    assert decision.queues == outcome.details["queues"]
    assert decision.schedule == outcome.details["schedule"] and decision.waiting == ["J0", "J3"]
    assert policy.objective(problem, decision, options) == pytest.approx(outcome.objective,
                                                                         rel=1e-12)
