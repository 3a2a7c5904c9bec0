"""The part of a lease before a deadline (`LeaseProblem.option_tail`): a hand-worked trace where
Chronus without it missed a deadline that EDF met, the lease MILP with tails against brute
force, and the EDF projection that leaves jobs without a guarantee to the earliest-deadline
fill (`others="auto"`)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedopt.backends import Status
from schedopt.errors import PolicyError
from schedopt.instance import parse_instance
from schedopt.policies.chronus.boundary import (
    LeaseJobs,
    LeaseSettings,
    edf_meets,
    option_tails,
    plan_boundary,
)
from schedopt.policies.chronus.lease_milp import (
    LeaseProblem,
    latest_fit_greedy,
    serves,
    solve_lease_problem,
)
from schedopt.simulation import SimulationConfig, simulate


def two_job_trace():
    """One GPU. a: 150 s of work, due 290 s after arriving at 0 (listed first, so admission
    takes it first); b: 50 s of work, due at 100 s."""
    return parse_instance({
        "format": "schedopt-instance/1",
        "cluster": {"gpu_types": {"v100": {"count": 1, "gpus_per_node": 1}}},
        "jobs": [{"id": "a", "throughput": {"v100": 1.0}, "total_steps": 150, "deadline": 290},
                 {"id": "b", "throughput": {"v100": 1.0}, "total_steps": 50, "deadline": 100}]})


def run(scheduler: str, **options):
    """100 s leases, 10 s to start or resume, work-conserving between boundaries."""
    return simulate(two_job_trace(), scheduler, SimulationConfig(policy_options={
        "lease_seconds": 100.0, "resume_overhead_s": 10.0, **options})).jobs


def test_the_deadlines_lease_lets_an_admitted_job_wait_for_an_earlier_deadline():
    # EDF: b runs first (0 -> 10 + 50 = 60); the idle GPU goes to a at 60 (10 s to start,
    # 150 s of work): 220 <= 290. Both met.
    edf = run("edf")
    assert edf["completion_s"].tolist() == pytest.approx([220.0, 60.0])
    assert edf["met_deadline"].tolist() == [True, True]
    # Without tails (the default before) a is admitted first and, its deadline at 2.9 leases
    # counted as 2, must run in leases 0 and 1 (1.5 + 0.1 leases of work): it ends at 160 and b, not
    # admitted, finds no GPU before its deadline (it then runs 160 -> 220).
    old = run("chronus", tails=False, others="plan", lazy=False)  # the options of before
    assert old.loc["a", "admitted"] and not old.loc["b", "admitted"]
    assert old["completion_s"].tolist() == pytest.approx([160.0, 220.0])
    assert old["met_deadline"].tolist() == [True, False]
    # With the 0.9 of lease 2 before a's deadline, leases 1 and 2 serve a (1 + 0.9 - 0.1 >=
    # 1.5): lease 0 goes to b, a starts when b ends, and the run is EDF's. At 200 a (20 s
    # left) is due within lease 2: the tail keeps its guarantee.
    for others in ("plan", "fill", "auto"):
        new = run("chronus", tails=True, others=others)
        assert new["completion_s"].tolist() == pytest.approx([220.0, 60.0])
        assert new["met_deadline"].tolist() == [True, True]
        assert bool(new.loc["a", "admitted"]) and not new["demoted"].any()


def test_option_tails_are_the_part_of_the_deadlines_lease_before_it():
    s = LeaseSettings(lease_seconds=100.0, resume_overhead_s=10.0, tails=True)
    jobs = LeaseJobs(np.ones(4, dtype=np.int64), np.full(4, 50.0), np.arange(4),
                     np.array([290.0, 300.0, 50.0, 1e9]), np.ones(4))
    # 2.9 leases: 0.9 of lease 2; 3 leases: none; 0.5 lease: half of lease 0; past the
    # leases planned one by one: none.
    assert option_tails(jobs, 0.0, s) == pytest.approx([0.9, 0.0, 0.5, 0.0])
    per_lease = LeaseSettings(lease_seconds=100.0, resume_overhead_s=10.0,
                              resume_overhead_per="lease")
    assert not option_tails(jobs, 0.0, per_lease).any()


def test_tails_need_the_overhead_counted_per_run():
    with pytest.raises(PolicyError, match="option_tail"):
        LeaseProblem.from_arrays([1], [1], [0], [1.0], [1], [1, 1], option_tail=[0.5])
    with pytest.raises(PolicyError, match="option_tail"):
        LeaseProblem.from_arrays([1], None, [0], [1.0], [1], [1, 1], overhead=0.1, work=[1.0],
                                 option_tail=[1.0])


def progress(held: tuple[int, ...], tail_slot: int, tail: float, overhead: float,
             was_running: bool) -> float:
    """Leases of work single-lease slots `held` give: one per slot, `tail` for the tail slot,
    less the overhead per run of consecutive slots (none for a run from slot 0 of a job that
    was running)."""
    work = sum(tail if t == tail_slot else 1.0 for t in held)
    runs = sum(1 for i, t in enumerate(held) if i == 0 or held[i - 1] != t - 1)
    if was_running and held and held[0] == 0:
        runs -= 1
    return work - overhead * runs


def brute_force(problem: LeaseProblem) -> float:
    """Best objective over every (option or none, slots) per job that serves it and fits."""
    choices = []
    for j in range(problem.num_jobs):
        mine = [] if problem.admitted[j] else [(-1, ())]
        for k in np.flatnonzero(problem.option_job == j):
            h = int(problem.option_horizon[k])
            tail = float(problem.option_tail[k]) if h < problem.num_leases else 0.0
            slots = range(h + (tail > 0))
            for r in range(1, len(slots) + 1):
                for held in itertools.combinations(slots, r):
                    if progress(held, h, tail, problem.overhead, bool(problem.held[j])) \
                            >= problem.work[j] - 1e-9:
                        mine.append((int(k), held))
        choices.append(mine)
    best = -np.inf
    for plan in itertools.product(*choices):
        used = np.zeros(problem.num_leases, dtype=np.int64)
        for j, (_, held) in enumerate(plan):
            used[list(held)] += problem.gpus[j]
        if np.all(used <= problem.capacity):
            value = sum(problem.option_value[k] for k, _ in plan if k >= 0)
            value += problem.sigma * sum(problem.gpus[j] for j, (_, held) in enumerate(plan)
                                         if 0 in held) / problem.capacity.max()
            best = max(best, value)
    return best


@st.composite
def tail_problems(draw):
    H = draw(st.integers(2, 4))
    n = draw(st.integers(1, 3))
    gpus = draw(st.lists(st.sampled_from([1, 2]), min_size=n, max_size=n))
    work = draw(st.lists(st.sampled_from([0.3, 0.8, 1.2, 1.7, 2.4]), min_size=n, max_size=n))
    option_job = np.arange(n)
    horizon = draw(st.lists(st.integers(1, H), min_size=n, max_size=n))
    tail = draw(st.lists(st.sampled_from([0.0, 0.25, 0.6, 0.9]), min_size=n, max_size=n))
    value = draw(st.lists(st.sampled_from([1.0, 2.0, 3.0]), min_size=n, max_size=n))
    capacity = draw(st.lists(st.integers(1, 3), min_size=H, max_size=H))
    held = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    sigma = draw(st.sampled_from([1.0, -1.0]))
    free = LeaseProblem.from_arrays(gpus, None, option_job, value, horizon, capacity,
                                    sigma=sigma, admitted=np.zeros(n, dtype=bool),
                                    overhead=0.1, held=held, work=work, option_tail=tail)
    # Admitted: jobs the greedy places (admission's invariant: the admitted jobs have a plan).
    admitted = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    admitted &= latest_fit_greedy(free)[0] >= 0
    return LeaseProblem.from_arrays(gpus, None, option_job, value, horizon, capacity,
                                    sigma=sigma, admitted=admitted, overhead=0.1, held=held,
                                    work=work, option_tail=tail)


@settings(max_examples=60, deadline=None)
@given(tail_problems())
def test_lease_milp_with_tails_matches_brute_force(problem):
    plan = solve_lease_problem(problem, solver="scip", time_limit=None)
    assert plan.status is Status.OPTIMAL
    assert plan.objective == pytest.approx(brute_force(problem), abs=1e-6)
    held = np.zeros((problem.num_jobs, problem.num_leases), dtype=bool)
    for j, leases in plan.leases.items():
        held[j, list(leases)] = True
        k = plan.chosen[j]
        assert progress(tuple(leases), int(problem.option_horizon[k]),
                        float(problem.option_tail[k]), problem.overhead,
                        bool(problem.held[j])) >= problem.work[j] - 1e-9
    assert serves(problem, plan.chosen, held)
    assert np.all(problem.gpus @ held <= problem.capacity)
    assert np.all(plan.chosen[problem.admitted] >= 0)


def test_greedy_takes_the_tail_and_counts_it_as_the_tail():
    # One GPU, 1.5 leases of work, horizon 1 lease and 0.7 of the next: 0 and the tail give
    # 1 + 0.7 - 0.1 = 1.6 >= 1.5 (without the tail: no plan).
    problem = LeaseProblem.from_arrays([1], None, [0], [1.0], [1], [1, 1, 1], overhead=0.1,
                                       work=[1.5], option_tail=[0.7])
    chosen, leases, unplaced = latest_fit_greedy(problem)
    assert leases == {0: (0, 1)} and not unplaced
    short = LeaseProblem.from_arrays([1], None, [0], [1.0], [1], [1, 1, 1], overhead=0.1,
                                     work=[1.65], option_tail=[0.7])
    assert latest_fit_greedy(short)[2] == (0,)


def test_edf_projection_by_hand():
    # 2 GPUs from t = 0, 10 s to start. By deadline: c (1 GPU, 100 s, due 120) 0 -> 110;
    # a (2 GPUs, 50 s, due 200) waits for c: 110 -> 170; b (1 GPU, 100 s, due 210) 170 -> 280,
    # late; d (1 GPU, 30 s, due 300, running: no overhead) 170 -> 200.
    s = LeaseSettings(lease_seconds=100.0, resume_overhead_s=10.0)
    jobs = LeaseJobs(np.array([2, 1, 1, 1]), np.array([50.0, 100.0, 100.0, 30.0]),
                     np.arange(4), np.array([200.0, 210.0, 120.0, 300.0]), np.ones(4))
    held = np.array([False, False, False, True])
    assert edf_meets(jobs, np.arange(4), 2, 0.0, s, held).tolist() == [True, False, True, True]
    # Without c, b runs beside nothing: a 0 -> 60, b 60 -> 170.
    assert edf_meets(jobs, np.array([0, 1]), 2, 0.0, s).tolist() == [True, True, False, False]
    # A job wider than the pool never runs and holds no GPU: the others are as before.
    wide = LeaseJobs(np.array([2, 1, 1, 1, 4]), np.append(jobs.remaining_s, 10.0),
                     np.arange(5), np.append(jobs.option_deadline_s, 50.0), np.ones(5))
    assert edf_meets(wide, np.arange(5), 2, 0.0, s, np.append(held, False)).tolist() == \
        [True, False, True, True, False]


def test_others_sets_which_jobs_without_a_guarantee_the_lease_milp_plans():
    # One GPU, none admitted. Earliest deadline first: job 0 (50 s, due 100) 0 -> 60, then job
    # 1 (50 s, due 110) 60 -> 120, late. Both have a reachable option.
    jobs = LeaseJobs(np.array([1, 1]), np.array([50.0, 50.0]), np.arange(2),
                     np.array([100.0, 110.0]), np.ones(2))
    none = np.zeros(2, dtype=bool)
    planned = {}
    for others in ("plan", "fill", "auto"):
        s = LeaseSettings(lease_seconds=100.0, resume_overhead_s=10.0, others=others)
        decision = plan_boundary(jobs, none, 1, 0.0, s)
        planned[others] = decision.planned.tolist()
        assert decision.running.sum() == 1
    assert planned == {"plan": [0, 1], "fill": [], "auto": [1]}
    # "fill" runs them in deadline order.
    s = LeaseSettings(lease_seconds=100.0, resume_overhead_s=10.0, others="fill")
    assert plan_boundary(jobs, none, 1, 0.0, s).running.tolist() == [True, False]
    with pytest.raises(PolicyError, match="others"):
        LeaseSettings(others="edf")
