"""Chronus at one lease boundary from job state: leases needed, horizons, admission against
reservations, the MILP + shortest-remaining-service fill, and the `chronus` policy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedopt import solve
from schedopt.backends import Status
from schedopt.errors import PolicyError, SchedoptError
from schedopt.policies.chronus.boundary import (
    LeaseInstance,
    LeaseJobs,
    LeaseSettings,
    admit_arrivals,
    demote_hopeless,
    fill_in_order,
    free_gpus,
    leases_needed,
    option_horizons,
    plan_boundary,
)
from schedopt.instance import parse_instance

L = 100.0  # lease length used below, seconds


def fill_reference(gpus, order, free):
    """The skip-what-does-not-fit greedy, one job at a time."""
    taken = []
    for j in order:
        if gpus[j] <= free:
            taken.append(j)
            free -= gpus[j]
    return taken


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([1, 2, 4, 8, 3]), min_size=0, max_size=30), st.integers(0, 40),
       st.randoms(use_true_random=False))
def test_fill_in_order_equals_the_one_job_at_a_time_greedy(gpus, free, rnd):
    order = list(range(len(gpus)))
    rnd.shuffle(order)
    got = fill_in_order(np.array(gpus, dtype=np.int64), np.array(order, dtype=np.int64), free)
    assert got.tolist() == fill_reference(gpus, order, free)


def test_leases_needed_pay_the_resume_overhead_in_every_lease():
    s = LeaseSettings(lease_seconds=L, resume_overhead_s=10.0)
    # 90 s of progress per lease: 90 -> 1, 91 -> 2, 180 -> 2, 1 -> 1, 0 -> 1 (at least one).
    assert leases_needed(np.array([90.0, 91.0, 180.0, 1.0, 0.0]), s).tolist() == [1, 2, 2, 1, 1]


def test_option_horizons_count_leases_that_end_by_the_deadline_and_are_capped():
    s = LeaseSettings(lease_seconds=L, resume_overhead_s=0.0, horizon_leases=5, horizon_seconds=None)
    jobs = LeaseJobs(np.array([1]), np.array([50.0]), np.zeros(5, dtype=np.int64),
                     np.array([349.9, 350.0, 250.0, 60.0, 10_000.0]), np.ones(5))
    # now = 50: leases end at 150, 250, 350, ...
    assert option_horizons(jobs, 50.0, s).tolist() == [2, 3, 2, 0, 5]


def test_settings_reject_bad_values():
    with pytest.raises(PolicyError, match="resume_overhead_s"):
        LeaseSettings(lease_seconds=60, resume_overhead_s=60)
    with pytest.raises(PolicyError, match="sigma"):
        LeaseSettings(sigma=0.5)
    with pytest.raises(PolicyError, match="horizon_leases"):
        LeaseSettings(horizon_leases=0)
    with pytest.raises(PolicyError, match="lease_seconds must be a finite number"):
        LeaseSettings(lease_seconds="abc")
    with pytest.raises(PolicyError, match="horizon_leases"):
        LeaseSettings(horizon_leases="many")


def test_demote_only_admitted_jobs_without_a_reachable_option():
    s = LeaseSettings(lease_seconds=L, resume_overhead_s=0.0)
    # Job 0 needs 3 leases before t=250 (2 leases): hopeless. Job 1 fits. Job 2 is hopeless
    # but not admitted. Job 3 is best effort.
    jobs = LeaseJobs(np.array([1, 1, 1, 1]), np.array([300.0, 100.0, 300.0, 50.0]),
                     np.array([0, 1, 2]), np.array([250.0, 250.0, 250.0]), np.ones(3))
    admitted = np.array([True, True, False, False])
    assert demote_hopeless(jobs, admitted, 0.0, s).tolist() == [True, False, False, False]


def test_free_gpus_subtracts_reservations_inside_the_window():
    s = LeaseSettings(lease_seconds=L, horizon_leases=4, horizon_seconds=None)
    jobs = LeaseJobs(np.array([2, 4, 1]), np.ones(3), np.zeros(0, dtype=np.int64), np.zeros(0),
                     np.zeros(0))
    free = free_gpus(jobs, {0: (0, 1), 1: (1, 3, 7), 2: ()}, 8, s)
    assert free.tolist() == [6, 2, 8, 4]


@st.composite
def boundary_states(draw):
    """Jobs at a boundary (now = 0): GPUs 1/2/4/8, 1-5 leases of work, 0-3 options each."""
    n = draw(st.integers(1, 8))
    gpus = np.array(draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=n, max_size=n)))
    need = np.array(draw(st.lists(st.integers(1, 5), min_size=n, max_size=n)))
    option_job, deadline, value = [], [], []
    for j in range(n):
        d = 0
        for _ in range(draw(st.integers(0, 3))):
            d += draw(st.integers(1, 4))
            option_job.append(j)
            deadline.append(d * L)
            value.append(draw(st.sampled_from([1.0, 2.0, 5.0])))
    capacity = draw(st.sampled_from([4, 8, 12]))
    jobs = LeaseJobs(gpus, need * L, np.array(option_job, dtype=np.int64), np.array(deadline),
                     np.array(value))
    return jobs, capacity


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(boundary_states())
def test_admission_reservations_are_a_feasible_plan_and_the_boundary_honours_them(state):
    jobs, capacity = state
    # The lease MILP solved to optimality (its solver stages without a time limit), and its
    # lease 0 (not the lazy one, which need not be optimal).
    s = LeaseSettings(lease_seconds=L, resume_overhead_s=0.0, horizon_leases=12,
                      solver="scip", time_limit=None, horizon_seconds=None, search=True,
                      lazy=False)
    admitted, reserved = admit_arrivals(jobs, np.zeros(jobs.num_jobs, dtype=bool),
                                        np.arange(jobs.num_jobs), {}, capacity, 0.0, s)
    assert set(reserved) == set(np.flatnonzero(admitted).tolist())
    need = leases_needed(jobs.remaining_s, s)
    horizon = option_horizons(jobs, 0.0, s)
    used = np.zeros(s.horizon_leases, dtype=np.int64)
    for j, held in reserved.items():
        loosest = horizon[jobs.option_job == j].max()
        assert len(set(held)) == len(held) == need[j]
        assert all(0 <= t < loosest for t in held)
        used[list(held)] += jobs.gpus[j]
    assert np.all(used <= capacity)
    assert np.array_equal(free_gpus(jobs, reserved, capacity, s), capacity - used)

    decision = plan_boundary(jobs, admitted, capacity, 0.0, s)
    assert decision.plan is None or decision.plan.status is Status.OPTIMAL
    assert decision.unplaced.size == 0
    running = decision.running
    assert jobs.gpus[running].sum() <= capacity
    # Every admitted job is in the plan with an option; its reservation for the next boundary
    # is feasible again (count, horizon of the chosen option, capacity).
    used = np.zeros(s.horizon_leases, dtype=np.int64)
    for j, held in decision.reserved.items():
        assert admitted[j]
        assert len(set(held)) == len(held) == need[j]
        assert 0 not in held or running[j]  # (the fill may also run it early)
        used[list(held)] += jobs.gpus[j]
    assert set(decision.reserved) == set(np.flatnonzero(admitted).tolist())
    assert np.all(used <= capacity)
    # The fill leaves no waiting job that would still fit.
    left = capacity - jobs.gpus[running].sum()
    assert np.all(jobs.gpus[~running] > left)


def test_fill_goes_by_shortest_remaining_service():
    s = LeaseSettings(lease_seconds=L, resume_overhead_s=0.0)
    # Best-effort only: service = seconds x GPUs = 800, 200, 300, 100 -> 3, 1, 2, then 0.
    jobs = LeaseJobs(np.array([4, 2, 1, 1]), np.array([200.0, 100.0, 300.0, 100.0]),
                     np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0))
    decision = plan_boundary(jobs, np.zeros(4, dtype=bool), 4, 0.0, s)
    assert decision.plan is None
    assert decision.running.tolist() == [False, True, True, True]
    assert decision.sigma == -1.0  # jobs without a guarantee wait


# --- the `chronus` policy on an instance -------------------------------------------------------

def worked_example(**extra):
    """docs/formulations.md §3's example as an instance: leases of 1200 s, 8 GPUs, 1 step/s."""
    return parse_instance({
        "format": "schedopt-instance/1",
        "cluster": {"gpu_types": {"v100": {"count": 8, "gpus_per_node": 8}}},
        "jobs": [
            {"id": "A", "scale_factor": 4, "total_steps": 2400, "throughput": {"v100": 1.0},
             "deadline_options": [{"after_s": 2400, "value": 10}, {"after_s": 3600, "value": 8}]},
            {"id": "B", "scale_factor": 8, "total_steps": 1200, "throughput": {"v100": 1.0},
             "deadline": 2400, "weight": 10},
            *extra.get("more", []),
        ]})


# The worked example is the lease MILP's optimal plan as docs/formulations.md §3 states it: every
# SLO job planned by value, whole leases, the solver stages run (by default only the LP and its
# roundings, which miss B here), lease 0 as the plan has it (not the lazy, earliest-deadline one).
MILP_PLAN = {"others": "plan", "tails": False, "lazy": False, "search": True}


@pytest.mark.parametrize("sigma, objective, leases", [
    (1, 19.0, {"A": [1, 2], "B": [0]}),
    (-1, 17.5, {"A": [0, 2], "B": [1]}),
])
def test_policy_reproduces_the_worked_example(sigma, objective, leases):
    result = solve(worked_example(), "chronus", resume_overhead_s=0, sigma=sigma, **MILP_PLAN)
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(objective, abs=1e-9)
    assert result.bound == pytest.approx(objective, abs=1e-6)
    doc = result.to_dict()
    assert doc["leases"] == leases
    running = [job for job, held in leases.items() if 0 in held]
    assert doc["running"] == running
    assert {job: row["v100"] for job, row in doc["allocation"].items()} == \
        {job: float(job in running) for job in leases}


def test_policy_gives_best_effort_jobs_the_leftover_gpus_and_reports_classes():
    more = [{"id": "C", "scale_factor": 2, "total_steps": 5000, "throughput": {"v100": 1.0}},
            {"id": "D", "scale_factor": 8, "total_steps": 10, "throughput": {"v100": 1.0}}]
    doc = solve(worked_example(more=more), "chronus", resume_overhead_s=0, sigma=-1,
                **MILP_PLAN).to_dict()
    # A is admitted first (arrival ties go by file order); B then fits nowhere before its
    # deadline in the latest-fit map and is rejected, yet the MILP may still schedule it.
    assert doc["admitted"] == ["A"] and doc["rejected"] == ["B"]
    assert doc["leases"]["A"] == [0, 2] and doc["leases"]["B"] == [1]
    # Lease 0: A holds 4 GPUs; of the rest, C (10,000 GPU-s) fits in 4, D (80) needs 8.
    assert doc["running"] == ["A", "C"]
    assert doc["leases"]["C"] == [0] and "D" not in doc["leases"]


def test_policy_errors_name_the_problem():
    with pytest.raises(SchedoptError, match="unknown GPU type 'k80'"):
        solve(worked_example(), "chronus", gpu_type="k80")
    bad = parse_instance({"format": "schedopt-instance/1",
                          "cluster": {"gpu_types": {"v100": {"count": 8}}},
                          "jobs": [{"id": "x", "throughput": {"v100": 1.0}, "deadline": 60}]})
    with pytest.raises(SchedoptError, match="need total_steps.*x"):
        solve(bad, "chronus")


def test_fill_order_puts_slo_jobs_that_can_still_meet_a_deadline_first():
    from schedopt.policies.chronus.boundary import fill_order

    # now = 1000 s, overhead 10 s. a: best effort, 50 s x 1 GPU (service 50). b: SLO due at
    # 1300, 280 s left: 290 <= 300, meetable. c: SLO due at 1100, 95 s left: 105 > 100, past
    # hope unless held (then 95 <= 100). d: SLO with options due 1050 (40 + 10 <= 50: meetable)
    # and 2000. e: SLO due 1200, 100 s x 4 GPUs.
    jobs = LeaseJobs(np.array([1, 1, 1, 1, 4]), np.array([50.0, 280.0, 95.0, 40.0, 100.0]),
                     np.array([1, 2, 3, 3, 4]),
                     np.array([1300.0, 1100.0, 1050.0, 2000.0, 1200.0]),
                     np.ones(5))
    deadline = LeaseSettings(L, 10.0)
    everyone = np.arange(5)
    # meetable by due time: d (1050), e (1200), b (1300); then a (service 50), c (95)
    assert fill_order(jobs, everyone, 1000.0, deadline).tolist() == [3, 4, 1, 0, 2]
    held = np.array([False, False, True, False, False])
    assert fill_order(jobs, everyone, 1000.0, deadline, held).tolist() == [3, 2, 4, 1, 0]
    # "service": GPU-seconds left, a 50, d 40, c 95, b 280, e 400
    service = LeaseSettings(L, 10.0, fill="service")
    assert fill_order(jobs, everyone, 1000.0, service).tolist() == [3, 0, 2, 1, 4]
    assert fill_order(jobs, np.array([4, 0]), 1000.0, deadline).tolist() == [4, 0]
    with pytest.raises(PolicyError, match="fill must be one of"):
        LeaseSettings(L, 10.0, fill="random")


def test_admission_repacks_the_reservations_when_the_free_gpus_cannot_hold_a_job():
    # 1 GPU, leases of 100 s, no overhead. a (admitted, 1 lease of work, due in 3 leases) holds
    # a reservation in lease 0; b arrives needing lease 0 (due in 1 lease). The GPUs a's
    # reservation leaves cannot hold b; packed together latest-fit, a moves to lease 2 and b
    # takes lease 0.
    jobs = LeaseJobs(np.array([1, 1]), np.array([100.0, 100.0]), np.array([0, 1]),
                     np.array([300.0, 100.0]), np.ones(2))
    admitted = np.array([True, False])
    for repack, expect, reserved in ((True, [True, True], {0: (2,), 1: (0,)}),
                                     (False, [True, False], {0: (0,)})):
        settings_ = LeaseSettings(L, 0.0, repack=repack)
        got, held = admit_arrivals(jobs, admitted, np.array([1]), {0: (0,)}, 1, 0.0, settings_)
        assert got.tolist() == expect and held == reserved


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from([1, 2, 4]), st.integers(1, 6), st.integers(1, 12)),
                min_size=1, max_size=8),
       st.sampled_from([0.0, 30.0]))
def test_admitted_reservations_are_a_plan_for_every_admitted_job(specs, overhead):
    # every job arrives now; whatever admission (with re-packing) admits, the reservations fit
    # the pool in every lease and give each admitted job its work before its deadline
    gpus = np.array([g for g, _, _ in specs])
    remaining = np.array([n * 90.0 for _, n, _ in specs])
    due = np.array([d * L for _, _, d in specs])
    n = len(specs)
    jobs = LeaseJobs(gpus, remaining, np.arange(n), due, np.ones(n))
    cfg = LeaseSettings(L, overhead, repack=True)
    admitted, reserved = admit_arrivals(jobs, np.zeros(n, dtype=bool), np.arange(n), {}, 4,
                                        0.0, cfg)
    assert set(reserved) == set(np.flatnonzero(admitted).tolist())
    used = np.zeros(200)
    for j, leases in reserved.items():
        leases = np.array(leases, dtype=np.int64)
        used[leases] += gpus[j]
        assert leases.size and leases.max() < due[j] / L  # within the deadline
        runs = 1 + np.count_nonzero(np.diff(np.sort(leases)) > 1)
        assert leases.size * L - runs * overhead >= remaining[j] - 1e-6  # enough running
    assert used.max() <= 4


def test_each_jobs_first_deadline_is_its_arrival_plus_its_first_option():
    trace = parse_instance({
        "format": "schedopt-instance/1",
        "cluster": {"gpu_types": {"v100": {"count": 4, "gpus_per_node": 4}}},
        "jobs": [{"id": "a", "total_steps": 10, "throughput": {"v100": 1.0},
                  "arrival_time": 5.0, "deadline_options": [{"after_s": 20.0, "value": 2.0},
                                                            {"after_s": 40.0, "value": 1.0}]},
                 {"id": "b", "total_steps": 10, "throughput": {"v100": 1.0}},
                 {"id": "c", "total_steps": 10, "throughput": {"v100": 1.0},
                  "arrival_time": 1.0, "deadline": 7.5}]})
    assert LeaseInstance.from_instance(trace).first_deadline().tolist() == [25.0, np.inf, 8.5]
