"""Chronus's planning window in time: single leases near now, aligned coarser slots farther
(`lease_grid`), the lease MILP over slots against brute force, plans that stay plans at the
next boundary, and short leases that plan over deadlines far beyond 96 leases."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from lease_strategies import draw_options_and_capacity

from schedopt.backends import Status
from schedopt.errors import PolicyError
from schedopt.instance import parse_instance
from schedopt.policies.chronus.boundary import (
    LeaseJobs,
    LeaseSettings,
    admit_arrivals,
    demote_hopeless,
    lease_grid,
    plan_boundary,
    plan_inputs,
    slot_leases,
)
from schedopt.policies.chronus.lease_milp import LeaseProblem, latest_fit_greedy, solve_lease_problem


def test_default_window_at_20_minute_leases_is_the_96_single_leases_of_before():
    s = LeaseSettings()
    assert s.fine_leases == 96 and s.window_leases == 96
    assert lease_grid(0.0, s).tolist() == [1] * 96
    assert lease_grid(37 * 1200.0, s).tolist() == [1] * 96


def test_grid_at_60_s_leases_covers_32_hours_in_few_slots():
    s = LeaseSettings(lease_seconds=60.0)
    width = lease_grid(0.0, s)
    assert s.fine_leases == 32  # 96 x 60 / 1200 = 4.8, raised to 2 x slots_per_doubling
    assert width[:32].tolist() == [1] * 32
    assert width.sum() >= 32 * 60  # 32 h of 60 s leases
    assert width.size < 140
    # From distance d = 32 on, widths are the largest power of two <= d / 16: 2 up to 64...
    start = np.concatenate(([0], np.cumsum(width)[:-1]))
    assert width[(start >= 32) & (start < 64)].tolist() == [2] * 16
    assert set(width[(start >= 64) & (start < 128)].tolist()) == {4}


def test_settings_reject_bad_window_values():
    with pytest.raises(PolicyError, match="horizon_seconds"):
        LeaseSettings(horizon_seconds=-5.0)
    with pytest.raises(PolicyError, match="slots_per_doubling"):
        LeaseSettings(slots_per_doubling=0)
    assert LeaseSettings(lease_seconds=60.0, horizon_seconds=None).window_leases == 32


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 8), st.integers(1, 4), st.integers(1, 120), st.integers(0, 300))
def test_grid_is_aligned_and_the_next_boundary_refines_it(fine, rho, extra, first):
    s = LeaseSettings(lease_seconds=1.0, resume_overhead_s=0.0, horizon_leases=fine,
                      horizon_seconds=float(fine + extra), slots_per_doubling=rho)
    now = lease_grid(float(first), s)
    later = lease_grid(float(first + 1), s)
    assert now[:fine].tolist() == [1] * fine
    for width in (now, later):
        assert np.all(width & (width - 1) == 0)  # powers of two
    start = first + np.concatenate(([0], np.cumsum(now)[:-1]))
    assert np.all(start % now == 0)  # aligned on absolute lease numbers
    assert now.sum() >= fine + extra
    # Every slot of the next grid inside this grid's span lies within one slot of this grid.
    end = start + now
    start2 = first + 1 + np.concatenate(([0], np.cumsum(later)[:-1]))
    end2 = start2 + later
    inside = end2 <= end[-1]
    owner = np.searchsorted(end, start2[inside], side="right")
    assert np.all(end2[inside] <= end[owner])


def brute_force(problem: LeaseProblem) -> float | None:
    """Best objective over every choice of (option or none, set of slots before its horizon
    giving at least the job's leases) per job, respecting capacity; None if infeasible. With
    the overhead counted per run, the slots must give the job's work (`LeaseProblem.progress`,
    each run of consecutive slots losing the overhead)."""
    choices = []
    for j in range(problem.num_jobs):
        mine = [(-1, ())] if not problem.admitted[j] else []
        for k in np.flatnonzero(problem.option_job == j):
            slots = range(min(int(problem.option_horizon[k]), problem.num_leases))
            for r in range(1, len(slots) + 1):
                for held in itertools.combinations(slots, r):
                    mask = np.zeros((1, problem.num_leases), dtype=bool)
                    mask[0, list(held)] = True
                    if problem.progress(mask, np.array([j]))[0] >= problem.need[j] - 1e-9:
                        mine.append((int(k), held))
        choices.append(mine)
    best = None
    scale = max(int(problem.capacity.max()), 1)
    for plan in itertools.product(*choices):
        used = np.zeros(problem.num_leases, dtype=np.int64)
        for j, (_, held) in enumerate(plan):
            used[list(held)] += problem.gpus[j]
        if np.any(used > problem.capacity):
            continue
        value = sum(problem.option_value[k] for k, _ in plan if k >= 0)
        value += problem.sigma * sum(problem.gpus[j] for j, (_, held) in enumerate(plan)
                                     if 0 in held) / scale
        best = value if best is None else max(best, value)
    return best


@st.composite
def coarse_problems(draw):
    H = draw(st.integers(2, 4))
    width = np.array([1] + draw(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=H - 1,
                                         max_size=H - 1)))
    n = draw(st.integers(1, 3))
    gpus = draw(st.lists(st.sampled_from([1, 2, 4]), min_size=n, max_size=n))
    need = draw(st.lists(st.integers(1, 6), min_size=n, max_size=n))
    option_job, value, horizon, capacity, admitted = draw_options_and_capacity(draw, n, H)
    candidate = LeaseProblem.from_arrays(gpus, need, option_job, value, horizon, capacity,
                                         sigma=draw(st.sampled_from([1.0, -1.0])),
                                         admitted=np.zeros(n, dtype=bool), width=width)
    # Keep only admitted jobs the latest-fit greedy can place (admission's invariant).
    placed = latest_fit_greedy(candidate)[0] >= 0
    return LeaseProblem.from_arrays(gpus, need, option_job, value, horizon, capacity,
                                    sigma=candidate.sigma,
                                    admitted=np.array(admitted) & placed, width=width)


@settings(max_examples=80, deadline=None)
@given(coarse_problems())
def test_lease_milp_over_coarse_slots_matches_brute_force(problem):
    plan = solve_lease_problem(problem, solver="scip", time_limit=None)
    expected = brute_force(problem)
    assert expected is not None
    assert plan.status is Status.OPTIMAL
    assert plan.objective == pytest.approx(expected, abs=1e-6)
    used = np.zeros(problem.num_leases, dtype=np.int64)
    for j, held in plan.leases.items():
        k = plan.chosen[j]
        assert all(t < problem.option_horizon[k] for t in held)
        assert problem.width[list(held)].sum() >= problem.leases_needed[j]
        used[list(held)] += problem.gpus[j]
    assert np.all(used <= problem.capacity)
    assert np.all(plan.chosen[problem.admitted] >= 0)


def long_jobs() -> LeaseJobs:
    """Three 4-GPU jobs of 2 h, deadlines 5 h, 5.5 h and 30 min after now (the last one
    hopeless), on 8 GPUs."""
    return LeaseJobs(np.array([4, 4, 4]), np.array([7200.0, 7200.0, 7200.0]),
                     np.array([0, 1, 2]), np.array([18_000.0, 19_800.0, 1800.0]), np.ones(3))


def runs(leases) -> int:
    """Runs of consecutive lease numbers in `leases`."""
    t = np.unique(np.asarray(leases))
    return int(t.size and 1 + np.count_nonzero(np.diff(t) > 1))


def admit_long_jobs(settings: LeaseSettings, enough) -> None:
    """`long_jobs` admitted at 0 under `settings`: jobs 0 and 1, each reserved leases before
    its deadline (300 and 330 leases) past the old 96-lease window, that `enough` says serve
    it, within the 8 GPUs; the lease MILP then places both."""
    jobs = long_jobs()
    admitted, reserved = admit_arrivals(jobs, np.zeros(3, dtype=bool), np.arange(3), {}, 8,
                                        0.0, settings)
    assert admitted.tolist() == [True, True, False]
    for j, deadline_leases in ((0, 300), (1, 330)):
        held = reserved[j]
        assert max(held) >= 96 and max(held) < deadline_leases
        assert enough(held)
    used = np.zeros(400, dtype=np.int64)
    for j, held in reserved.items():
        used[list(held)] += 4
    assert used.max() <= 8
    decision = plan_boundary(jobs, admitted, 8, 0.0, settings)
    assert decision.unplaced.size == 0 and set(decision.reserved) == {0, 1}


def test_short_leases_admit_jobs_whose_deadlines_lie_beyond_96_leases():
    jobs = long_jobs()
    old = LeaseSettings(lease_seconds=60.0, horizon_leases=96, horizon_seconds=None,
                        resume_overhead_per="lease")
    admitted, _ = admit_arrivals(jobs, np.zeros(3, dtype=bool), np.arange(3), {}, 8, 0.0, old)
    assert not admitted.any()  # the 96-lease window of before: "no reachable option"
    # 2 h of work at 30 s per lease (60 s less the 30 s resume overhead): 240 leases.
    admit_long_jobs(LeaseSettings(lease_seconds=60.0, resume_overhead_per="lease"),
                    lambda held: len(set(held)) >= 240)
    # Counting the overhead once per run of consecutive leases (the default): 2 h of work =
    # 120 leases plus 30 s per run.
    admit_long_jobs(LeaseSettings(lease_seconds=60.0),
                    lambda held: (len(set(held)) * 60.0 - 30.0 * runs(held) >= 7200.0
                                  and len(set(held)) < 240))


def test_a_running_job_is_not_written_off_near_its_deadline():
    # 20 min of work, deadline in 25 min, 60 s leases with 30 s overhead: lease by lease it
    # would need 40 leases, but running through it needs 21 and 25 remain.
    s = LeaseSettings(lease_seconds=60.0, resume_overhead_per="lease")
    jobs = LeaseJobs(np.array([8]), np.array([1200.0]), np.array([0]), np.array([1500.0]),
                     np.ones(1))
    need, horizon, reachable = plan_inputs(jobs, 0.0, s)
    assert reachable.tolist() == [True]
    assert horizon.tolist() == [25] and need.tolist() == [25]  # every lease up to the deadline
    decision = plan_boundary(jobs, np.array([True]), 8, 0.0, s)
    assert decision.running.tolist() == [True]
    assert decision.reserved[0] == tuple(range(25))


def test_overhead_once_per_run_knows_which_jobs_keep_their_gpus():
    # 20 min of work at 60 s leases with a 30 s overhead: 20 leases of work. Once per run, a
    # job starting now needs 21 leases (one run: 21 - 0.5 >= 20), one that held its GPUs in
    # the last lease 20 (it pays nothing to keep them).
    s = LeaseSettings(lease_seconds=60.0)
    assert s.overhead == 0.5
    for deadline_s, cold, warm in ((1500.0, True, True), (1260.0, True, True),
                                   (1200.0, False, True), (1140.0, False, False)):
        jobs = LeaseJobs(np.array([8]), np.array([1200.0]), np.array([0]),
                         np.array([deadline_s]), np.ones(1))
        need, horizon, reachable = plan_inputs(jobs, 0.0, s)
        assert need.tolist() == [20.0]
        assert reachable.tolist() == [cold]
        assert plan_inputs(jobs, 0.0, s, held=np.array([True]))[2].tolist() == [warm]
    # The deadline in 20 leases: a running job is planned in every one of them and keeps its
    # GPUs; a job that did not run is demoted (it cannot make it any more).
    jobs = LeaseJobs(np.array([8]), np.array([1200.0]), np.array([0]), np.array([1200.0]),
                     np.ones(1))
    decision = plan_boundary(jobs, np.array([True]), 8, 0.0, s, held=np.array([True]))
    assert decision.running.tolist() == [True] and decision.unplaced.size == 0
    assert decision.reserved[0] == tuple(range(20))
    assert demote_hopeless(jobs, np.array([True]), 0.0, s).tolist() == [True]
    assert demote_hopeless(jobs, np.array([True]), 0.0, s, np.array([True])).tolist() == [False]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
@example(seed=436)
def test_reservations_stay_feasible_at_the_next_boundary(seed):
    # Random 60 s-lease boundaries: admit arrivals, plan, run lease 0, move one lease on (the
    # grid refines), and plan again: no admitted job is ever demoted or unplaced. Seed 436:
    # counting the overhead in every lease, job 0 could only finish by running through every
    # lease (a "tight" job, planned with the 64 leases of its coarse window); one lease later
    # the finer grid made it reachable lease by lease with 75 leases, more than its 63
    # reserved, and admitted job 3 no longer fit. Counted once per run, with the jobs that
    # held GPUs in the last lease known, a plan is still a plan one lease later.
    rng = np.random.default_rng(seed)
    s = LeaseSettings(lease_seconds=60.0, resume_overhead_s=30.0, time_limit=None,
                      solver="scip", horizon_leases=4, horizon_seconds=6000.0,
                      slots_per_doubling=2, resume_overhead_per="run")
    n = 5
    gpus = rng.choice([2, 4], n)
    remaining = rng.uniform(600, 2400, n)
    deadline = remaining * rng.uniform(2.2, 4.0, n)
    jobs = LeaseJobs(gpus, remaining, np.arange(n), deadline, np.ones(n))
    admitted, reserved = admit_arrivals(jobs, np.zeros(n, dtype=bool), np.arange(n), {}, 8,
                                        0.0, s)
    now = 0.0
    ran_before = np.zeros(n, dtype=bool)
    for _ in range(3):
        decision = plan_boundary(jobs, admitted, 8, now, s, held=ran_before)
        assert decision.unplaced.size == 0
        assert set(decision.reserved) == set(np.flatnonzero(admitted).tolist())
        ran = decision.running
        # A job that starts or resumes loses 30 s of the lease; one that keeps running does not.
        progress = np.where(ran, np.where(ran_before, 60.0, 30.0), 0.0)
        ran_before = ran
        jobs = LeaseJobs(gpus, np.maximum(jobs.remaining_s - progress, 1.0), jobs.option_job,
                         jobs.option_deadline_s, jobs.option_value)
        now += 60.0
        assert not demote_hopeless(jobs, admitted, now, s, held=ran_before).any()


def test_slot_leases_expands_slots_to_lease_offsets():
    width = np.array([1, 1, 2, 4])
    assert slot_leases(width, [0, 2, 3]) == (0, 2, 3, 4, 5, 6, 7)
    assert slot_leases(width, []) == ()


def simulate(trace, scheduler, lease_seconds):
    from schedopt.simulation.lease_sim import LeaseSimulationConfig, simulate_leases

    config = LeaseSimulationConfig(LeaseSettings(lease_seconds=lease_seconds,
                                                 resume_overhead_s=30.0, time_limit=2.0))
    return simulate_leases(trace, scheduler, config)


def burst_trace():
    """8 GPUs; six 4-GPU jobs of 1.5-2.5 h arriving within 10 min, deadlines 1.5x their
    duration (2.25-3.75 h: beyond 96 leases of 60 s), and two best-effort jobs."""
    runs = [5400, 7200, 9000, 6300, 8100, 5400]
    jobs = [{"id": f"s{i}", "scale_factor": 4, "total_steps": r, "throughput": {"gpu": 1.0},
             "arrival_time": 120.0 * i, "deadline": 1.5 * r} for i, r in enumerate(runs)]
    jobs += [{"id": f"b{i}", "scale_factor": 2, "total_steps": 3000, "throughput": {"gpu": 1.0},
              "arrival_time": 60.0 * i} for i in range(2)]
    return parse_instance({"format": "schedopt-instance/1",
                           "cluster": {"gpu_types": {"gpu": {"count": 8, "gpus_per_node": 8}}},
                           "jobs": jobs})


def test_chronus_at_60_s_leases_admits_far_deadlines_and_admitted_jobs_never_miss():
    trace = burst_trace()
    chronus = simulate(trace, "chronus", 60.0).jobs
    slo = chronus[chronus["slo"]]
    ever = slo[slo["admitted"] | slo["demoted"]]
    assert len(ever) >= 2
    assert (ever["deadline_s"] > 96 * 60).all()
    assert ever["met_deadline"].all()
    edf = simulate(trace, "edf", 60.0).jobs
    assert slo["met_deadline"].sum() >= edf[edf["slo"]]["met_deadline"].sum()


def test_tight_jobs_are_planned_by_default_only_where_the_overhead_is_a_large_share():
    # 3,530 s of work, deadline in 3 leases of 1,200 s: lease by lease it needs
    # ceil(3530 / 1170) = 4 leases, running through it needs 3530 + 30 <= 3600.
    jobs = LeaseJobs(np.array([8]), np.array([3530.0]), np.array([0]), np.array([3600.0]),
                     np.ones(1))
    per_lease = LeaseSettings(resume_overhead_per="lease")
    assert plan_inputs(jobs, 0.0, per_lease)[2].tolist() == [False]  # 30 s is 2.5%
    need, _, reachable = plan_inputs(jobs, 0.0, replace(per_lease, run_through=True))
    assert reachable.tolist() == [True] and need.tolist() == [3]
    assert LeaseSettings(lease_seconds=300.0).plans_tight_jobs  # 30 s is 10% of 300 s
    # Counted once per run (the default), no job is tight: 3 leases less one overhead serve it.
    need, _, reachable = plan_inputs(jobs, 0.0, LeaseSettings())
    assert reachable.tolist() == [True] and need.tolist() == [pytest.approx(3530 / 1200)]
    with pytest.raises(PolicyError, match="run_through"):
        LeaseSettings(run_through="yes")
