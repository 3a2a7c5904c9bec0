"""POP: partitions, feasibility of the coalesced allocation for every policy and k, the true
objective, executors agreeing, sticky parts, the CLI, and POP-4 in simulation."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedopt import solve
from schedopt.backends import Status
from schedopt.cli.main import main
from schedopt.errors import PolicyError
from schedopt.policies.gavel import lp as gavel
from schedopt.core.problem import ThroughputProblem
from schedopt.core.registry import registered, resolve

# Every built-in policy that needs only the throughput matrix (POP partitions any of them).
POLICIES = sorted(name for name, entry in registered().items()
                  if entry.builtin and entry.policy.instance_data is None)
from schedopt.policies.partitioned import partition_jobs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from common import random_problem  # noqa: E402


def problem(num_jobs=60, seed=0, **changes) -> ThroughputProblem:
    p = random_problem(num_jobs, 3, seed)
    return ThroughputProblem.from_arrays(
        p.throughput, p.scale_factor, p.weight, changes.get("capacity", p.capacity),
        cost_per_hour=p.cost_per_hour, remaining_steps=p.remaining_steps,
        time_since_arrival=p.time_since_arrival)


@pytest.mark.parametrize("method", ["stratified", "random"])
def test_partitions_are_balanced_seeded_and_differ_by_seed(method):
    p = problem(103)
    parts = partition_jobs(p, 8, seed=1, method=method)
    counts = np.bincount(parts, minlength=8)
    assert counts.sum() == 103 and counts.max() - counts.min() <= 1
    assert np.array_equal(parts, partition_jobs(p, 8, seed=1, method=method))
    assert not np.array_equal(parts, partition_jobs(p, 8, seed=2, method=method))


def test_stratified_parts_get_the_same_mix_of_scale_factors():
    p = problem(400)
    parts = partition_jobs(p, 4)
    for s in np.unique(p.scale_factor):
        counts = np.bincount(parts[p.scale_factor == s], minlength=4)
        # A stratum is a run of the sorted order: whole blocks of 4 plus a partial one per end.
        assert counts.max() - counts.min() <= 2


def test_sticky_parts_keep_jobs_and_fill_the_emptiest_parts():
    p = problem(12)
    previous = {job: 0 for job in p.job_ids[:6]}  # six jobs already in part 0
    parts = partition_jobs(p, 3, previous=previous)
    assert (parts[:6] == 0).all()
    assert np.bincount(parts[6:], minlength=3).tolist() == [0, 3, 3]
    # A stale part number (k shrank) is dealt again.
    assert partition_jobs(p, 2, previous={p.job_ids[0]: 5})[0] in (0, 1)


def assert_feasible(p: ThroughputProblem, X: np.ndarray) -> None:
    assert (X >= -1e-9).all()
    assert (X.sum(axis=1) <= 1 + 1e-6).all()
    assert ((p.scale_factor[:, None] * X).sum(axis=0) <= p.capacity * (1 + 1e-6) + 1e-9).all()
    assert (X[~p.runnable] <= 1e-9).all()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 40), st.integers(1, 6), st.integers(0, 10_000),
       st.sampled_from(POLICIES))
def test_coalesced_allocation_is_feasible_for_every_policy_and_k(num_jobs, k, seed, policy):
    p = problem(num_jobs, seed)
    result = solve(p, policy, partitions=k, partition_seed=seed)
    assert result.X is not None and result.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert_feasible(p, result.X)
    chosen, fixed = resolve(policy)
    value = chosen.objective(p, result.X, chosen.parse_options(fixed))
    if value is not None:  # the reported objective is the allocation's, on the whole problem
        assert result.objective == pytest.approx(value, rel=1e-9)


def test_objective_is_recomputed_on_the_whole_problem_and_gap_is_reported():
    p = problem(300, seed=3)
    result = solve(p, "max_min_fairness", partitions=4, exact_gap=True)
    a = gavel.normalized_throughput(p) * p.runnable
    assert result.objective == pytest.approx(np.min((a * result.X).sum(axis=1)), rel=1e-12)
    pop = result.details["pop"]
    exact = solve(p, "max_min_fairness").objective
    assert pop["exact_objective"] == pytest.approx(exact, rel=1e-7)
    assert result.objective <= exact * (1 + 1e-7)  # POP never beats the optimum
    assert pop["gap"] == pytest.approx((exact - result.objective) / exact, abs=1e-7)
    assert result.bound == pytest.approx(exact, rel=1e-6)
    assert len(pop["part_seconds"]) == 4 and pop["max_part_seconds"] <= pop["wall_seconds"]


def test_one_part_is_the_exact_solve():
    p = problem(50, seed=4)
    one = solve(p, "min_makespan", partitions=1)
    assert one.status is Status.OPTIMAL
    assert one.objective == pytest.approx(solve(p, "min_makespan").objective, rel=1e-6)


def test_a_job_larger_than_a_parts_share_still_runs():
    # 8 GPUs per type; with 4 parts each holds 2 of a type, yet the 8-GPU job gets time.
    p = ThroughputProblem.from_arrays([[1.0, 2.0]] * 7 + [[3.0, 1.0]], [1] * 7 + [8],
                                      capacity=[8.0, 8.0])
    result = solve(p, "max_min_fairness", partitions=4)
    assert result.X[7].sum() > 0.01
    assert_feasible(p, result.X)


def test_serial_parts_keep_the_callers_highs_threads():
    # HiGHS refuses a thread count other than its scheduler's first one: POP must not set one.
    p = problem(30, seed=7)
    assert solve(p, "finish_time_fairness").status is Status.OPTIMAL  # starts HiGHS's scheduler
    result = solve(p, "finish_time_fairness", partitions=3)
    assert result.X is not None and result.status is Status.FEASIBLE


def test_process_executor_gives_the_serial_answer():
    p = problem(80, seed=5)
    serial = solve(p, "max_total_throughput", partitions=3)
    parallel = solve(p, "max_total_throughput", partitions=3, executor="process")
    assert parallel.details["pop"]["executor"] == "process"
    assert parallel.objective == pytest.approx(serial.objective, rel=1e-7)
    assert serial.details["pop"]["parts"] == parallel.details["pop"]["parts"]


def test_ray_executor_gives_the_serial_answer():
    ray = pytest.importorskip("ray")
    p = problem(80, seed=6)
    try:
        on_ray = solve(p, "max_min_fairness", partitions=3, executor="ray")
    finally:
        ray.shutdown()
    serial = solve(p, "max_min_fairness", partitions=3)
    assert on_ray.objective == pytest.approx(serial.objective, rel=1e-6)


def test_bad_pop_arguments_are_reported():
    p = problem(10)
    with pytest.raises(PolicyError, match="partitions must be an integer >= 1"):
        solve(p, "max_min_fairness", partitions=0)
    with pytest.raises(PolicyError, match="unknown executor 'threads'"):
        solve(p, "max_min_fairness", partitions=2, executor="threads")
    with pytest.raises(PolicyError, match="unknown partition method"):
        solve(p, "max_min_fairness", partitions=2, partition_method="greedy")
    with pytest.raises(PolicyError, match="POP .* chronus is neither"):
        solve(ROOT / "instances" / "chronus-leases.json", "chronus", partitions=2)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_allox_by_machines_gives_a_schedule_of_the_whole_cluster(k):
    from schedopt.policies.allox.matching import allox_assignment, allox_processing_times
    from schedopt.policies.allox.matching import schedule_from_assignment
    from schedopt.policies.partitioned import partition_machines
    from schedopt.instance import load_instance

    instance = load_instance(ROOT / "instances" / "allox-40.json")
    result = solve(instance, "allox", partitions=k, exact_gap=True)
    exact = solve(instance, "allox").objective
    schedule = result.details["schedule"]
    assert len(schedule) == len(instance.jobs)
    # Recompute the total completion time from the machines POP chose, on the whole cluster.
    P, machines = allox_processing_times(instance)
    free = np.full(len(machines), instance.now)
    job_part, machine_part = partition_machines(P, k)
    machine = np.empty(len(instance.jobs), dtype=int)
    for q in range(k):  # each part matched alone on its own machines
        rows, cols = np.flatnonzero(job_part == q), np.flatnonzero(machine_part == q)
        machine[rows] = cols[allox_assignment(P[np.ix_(rows, cols)], free[cols])[0]]
    arrival = np.array([j.arrival_time for j in instance.jobs])
    total = schedule_from_assignment(P, free, arrival, machine)
    assert result.objective == pytest.approx(total.total_completion, rel=1e-12)
    assert [schedule[j]["machine"] for j in instance.job_ids] == [machines[m] for m in machine]
    assert result.objective >= exact * (1 - 1e-12)
    assert result.details["pop"]["gap"] == pytest.approx(result.objective / exact - 1, abs=1e-12)
    if k == 1:
        assert result.objective == pytest.approx(exact, rel=1e-12)


def test_allox_parts_run_in_worker_processes_with_the_serial_answer():
    # POP by machines used to run its parts serially only; the parts now go to any executor.
    path = ROOT / "instances" / "allox-40.json"
    serial = solve(path, "allox", partitions=3)
    parallel = solve(path, "allox", partitions=3, executor="process")
    assert parallel.details["pop"]["executor"] == "process"
    assert parallel.details["schedule"] == serial.details["schedule"]
    assert parallel.details["queues"] == serial.details["queues"]
    assert parallel.objective == serial.objective and parallel.status is Status.FEASIBLE


def test_cli_pop_with_gap_as_table_and_json():
    runner = CliRunner()
    path = str(ROOT / "instances" / "small-heterogeneous.yaml")
    out = runner.invoke(main, ["solve", path, "--pop", "3", "--gap"])
    assert out.exit_code == 0, out.output
    assert "POP        3 parts (stratified, serial)" in out.output and "gap" in out.output
    doc = json.loads(runner.invoke(main, ["solve", path, "--pop", "3", "--json"]).output)
    assert doc["pop"]["k"] == 3 and len(doc["pop"]["parts"]) == len(doc["allocation"])
    out = runner.invoke(main, ["solve", path, "--gap"])
    assert out.exit_code == 2 and "give --pop K too" in out.output


def test_pop4_keeps_average_jct_within_two_percent_in_simulation():
    from schedopt.simulation import SimulationConfig, simulate
    from schedopt.traces import gavel_cluster, load_performance, synthetic_trace

    perf = load_performance(ROOT / "instances" / "large-2000.json", ["v100", "p100", "k80"],
                            colocation=False)
    trace = synthetic_trace(perf, gavel_cluster({"v100": 32, "p100": 32, "k80": 32}), 400, 24, 0)
    exact = simulate(trace, "max_min_fairness").summary["average_jct_s"]
    pop = simulate(trace, "max_min_fairness", SimulationConfig(partitions=4)).summary
    assert abs(pop["average_jct_s"] - exact) <= 0.02 * exact
