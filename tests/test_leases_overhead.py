"""The resume overhead counted once per run of consecutive held slots (`LeaseProblem.per_run`):
a hand-worked example, the lease MILP against brute force, and the greedy, the roundings and
admission only returning plans that serve their jobs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lease_strategies import draw_options_and_capacity

from schedopt.backends import Status
from schedopt.policies.chronus.admission import NewJob, JobSet, admit, earliest_fitting_horizon
from schedopt.policies.chronus.lease_milp import (
    LeaseProblem,
    latest_fit_greedy,
    latest_slots,
    serves,
    solve_lease_problem,
)
from schedopt.policies.chronus.rounding import lp_roundings
from test_chronus_window import brute_force


def one_job(work, held=False, width=(1, 1, 1, 1), overhead=0.5):
    return LeaseProblem.from_arrays([1], None, [0], [1.0], [len(width)], [1] * len(width),
                                    width=list(width), overhead=overhead, held=[held],
                                    work=[work])


def test_hand_worked_overhead_once_per_run():
    # 60 s leases, 30 s resume overhead (0.5 of a lease), 90 s of work (1.5 leases of work).
    p = one_job(1.5)
    plans = {(0, 1): 2 - 0.5,        # one run of two leases pays once: 120 - 30 = 90 s
             (0, 2): 2 - 1.0,        # two runs pay twice: 60 s, short of 90
             (1, 2, 3): 3 - 0.5,     # one run of three
             (0, 1, 3): 3 - 1.0}     # two runs
    for held, expected in plans.items():
        mask = np.zeros((1, 4), dtype=bool)
        mask[0, list(held)] = True
        assert p.progress(mask)[0] == pytest.approx(expected)
    assert p.leases_needed[0] == 3  # ceil(1.5 / (1 - 0.5)): what counting every lease needs
    # Held its GPUs in the lease before now: lease 0 continues that run, nothing to pay.
    kept = one_job(1.5, held=True)
    mask = np.array([[True, False, False, False]])
    assert kept.progress(mask)[0] == pytest.approx(1.0)
    assert kept.progress(np.array([[True, True, False, False]]))[0] == pytest.approx(2.0)
    # Latest fit takes the two latest leases (one run), not three as per-lease counting would.
    assert latest_slots(np.arange(4), None, 1.5, 0.5).tolist() == [2, 3]
    # With lease 2 taken by someone else: 3 then 1 is two runs (1.0 < 1.5), so 0 too: 0, 1, 3.
    assert latest_slots(np.array([0, 1, 3]), None, 1.5, 0.5).tolist() == [0, 1, 3]
    # A slot of 4 leases held alone: 4 - 0.5.
    wide = one_job(3.5, width=(1, 1, 2, 4))
    assert wide.progress(np.array([[False, False, False, True]]))[0] == pytest.approx(3.5)
    assert latest_slots(np.arange(4), wide.width, 3.5, 0.5).tolist() == [3]


@st.composite
def run_problems(draw):
    H = draw(st.integers(2, 4))
    width = np.array([1] + draw(st.lists(st.sampled_from([1, 2]), min_size=H - 1,
                                         max_size=H - 1)))
    n = draw(st.integers(1, 3))
    overhead = draw(st.sampled_from([0.5, 0.25, 0.1]))
    gpus = draw(st.lists(st.sampled_from([1, 2, 4]), min_size=n, max_size=n))
    work = draw(st.lists(st.sampled_from([0.3, 0.5, 0.9, 1.5, 1.75, 2.5, 3.2]), min_size=n,
                         max_size=n))
    held = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    option_job, value, horizon, capacity, admitted = draw_options_and_capacity(draw, n, H)
    sigma = draw(st.sampled_from([1.0, -1.0]))

    def build(adm):
        return LeaseProblem.from_arrays(gpus, None, option_job, value, horizon, capacity,
                                        sigma=sigma, admitted=adm, width=width,
                                        overhead=overhead, held=held, work=work)

    placed = latest_fit_greedy(build(np.zeros(n, dtype=bool)))[0] >= 0
    return build(np.array(admitted) & placed)


def check_plan(problem, chosen, held):
    used = held.astype(np.int64).T @ problem.gpus
    assert np.all(used <= problem.capacity)
    assert np.all(chosen[problem.admitted] >= 0)
    assert serves(problem, chosen, held)
    for j in np.flatnonzero(chosen >= 0):
        assert np.all(np.flatnonzero(held[j]) < problem.option_horizon[chosen[j]])
    assert not held[chosen < 0].any()


@settings(max_examples=60, deadline=None)
@given(run_problems(), st.sampled_from(["scip", "cpsat"]))
def test_lease_milp_with_overhead_per_run_matches_brute_force(problem, solver):
    plan = solve_lease_problem(problem, solver=solver, time_limit=None)
    expected = brute_force(problem)
    assert expected is not None
    assert plan.status is Status.OPTIMAL
    assert plan.objective == pytest.approx(expected, abs=1e-6)
    held = np.zeros((problem.num_jobs, problem.num_leases), dtype=bool)
    for j, leases in plan.leases.items():
        held[j, list(leases)] = True
    check_plan(problem, plan.chosen, held)


@settings(max_examples=60, deadline=None)
@given(run_problems(), st.integers(0, 10_000))
def test_greedy_and_roundings_with_overhead_per_run_return_plans_that_serve(problem, seed):
    chosen, leases, unplaced = latest_fit_greedy(problem)
    assert unplaced == ()
    held = np.zeros((problem.num_jobs, problem.num_leases), dtype=bool)
    for j, t in leases.items():
        held[j, list(t)] = True
    check_plan(problem, chosen, held)
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (problem.num_options, problem.num_leases))
    for chosen, held in lp_roundings(problem, rng.uniform(0, 1, problem.num_options), x):
        check_plan(problem, chosen, held)


def test_admission_counts_the_overhead_once_per_run():
    # 8 slots of one lease, 4 GPUs, overhead 0.5 of a lease, 2.5 leases of work.
    free = np.array([4, 4, 0, 0, 4, 4, 4, 4])
    # By horizon 6: runs {0, 1} and {4, 5} give 2 x (2 - 0.5) = 3 >= 2.5; by 5 only 2.
    assert earliest_fitting_horizon(free, 2, 2.5, None, 0.5) == 6
    # Per lease it needs ceil(2.5 / 0.5) = 5 leases: 0, 1, 4, 5, 6, by horizon 7.
    assert earliest_fitting_horizon(free, 2, 5, None) == 7
    late = np.array([0, 0, 0, 0, 4, 4, 4, 4])
    assert earliest_fitting_horizon(late, 2, 2.5, None, 0.5) == 7  # one run: 4, 5, 6
    assert earliest_fitting_horizon(late, 2, 5, None) is None
    new = NewJob.from_values(2, 5, [1.0, 2.0], [6, 8])
    decision = admit(replace(new, work=2.5), JobSet.empty(), free, overhead=0.5)
    assert decision.admitted and decision.horizon == 6
    # Latest first: 5 (0.5), 4 (1.5), 1 (a new run: 2.0), 0 (3.0).
    assert decision.leases[decision.new_index] == (0, 1, 4, 5)
    front = np.array([4, 4, 4, 0, 0, 0, 0, 0])
    kept = admit(replace(new, work=2.75, held=True), JobSet.empty(), front, overhead=0.5)
    assert kept.admitted  # 0, 1, 2 continue the run of the lease before now: 3 >= 2.75
    assert kept.leases[kept.new_index] == (0, 1, 2)
    cold = admit(replace(new, work=2.75), JobSet.empty(), front, overhead=0.5)
    assert not cold.admitted  # starting now: 3 - 0.5 = 2.5 < 2.75


def test_reservations_are_the_plan_when_nothing_else_places_every_admitted_job():
    from schedopt.backends import Status as S
    from schedopt.policies.chronus.boundary import _reserved_plan
    from schedopt.policies.chronus.lease_milp import ChronusPlan

    # Slots of 1, 1, 2 leases; 2 GPUs; overhead 0.5. Job 0 (2 GPUs, 1.5 leases of work) is
    # reserved leases 2-3 (the wide slot: 2 - 0.5), job 1 (1 GPU, 1.5, held its GPUs before)
    # leases 0-1 (one run continuing: 2).
    p = LeaseProblem.from_arrays([2, 1], None, [0, 1, 1], [1.0, 3.0, 1.0], [3, 1, 2], [2, 2, 2],
                                 width=[1, 1, 2], overhead=0.5, held=[False, True],
                                 work=[1.5, 1.5])
    failed = ChronusPlan(S.INFEASIBLE, 0.0, None, {}, np.full(2, -1), True, "cpsat", 0.0,
                         unplaced=(0, 1))
    plan = _reserved_plan(p, failed, np.array([4, 7]), {4: (2, 3), 7: (0, 1)})
    assert plan.unplaced == () and plan.status is S.FEASIBLE
    assert plan.leases == {0: (2,), 1: (0, 1)}
    assert plan.chosen.tolist() == [0, 2]  # job 1: the only option whose horizon covers slot 1
    assert plan.details["incumbent_from"] == "reservations"
    # Half of the wide slot is not a plan of this grid; nor are leases that do not serve.
    assert _reserved_plan(p, failed, np.array([4, 7]), {4: (3,), 7: (0, 1)}) is failed
    assert _reserved_plan(p, failed, np.array([4, 7]), {4: (2, 3), 7: (1,)}) is failed


def test_a_reservation_in_an_options_tail_slot_takes_the_option_it_serves():
    from schedopt.backends import Status as S
    from schedopt.policies.chronus.boundary import _reserved_plan
    from schedopt.policies.chronus.lease_milp import ChronusPlan

    # One job, 1 GPU of 2, 1.26 leases of work, overhead 0.1: option 0 (value 2) due 2.02
    # leases from now (slots 0-1 and 0.02 of slot 2, its tail), option 1 (value 1) due later.
    # Reserved slots 0 and 2 (two runs): as option 0 they give 0.9 + 0.02 - 0.1 = 0.82 < 1.26,
    # as option 1 0.9 + 0.9 = 1.8. The reservation is option 1's plan, not no plan at all.
    p = LeaseProblem.from_arrays([1], None, [0, 0], [2.0, 1.0], [2, 4], [2] * 6, overhead=0.1,
                                 held=[False], work=[1.26], option_tail=[0.02, 0.54])
    failed = ChronusPlan(S.INFEASIBLE, 0.0, None, {}, np.full(1, -1), True, "cpsat", 0.0,
                         unplaced=(0,))
    plan = _reserved_plan(p, failed, np.array([5]), {5: (0, 2)})
    assert plan.unplaced == () and plan.status is S.FEASIBLE
    assert plan.chosen.tolist() == [1] and plan.leases == {0: (0, 2)}
    assert plan.objective == pytest.approx(1.0 + 1 / 2)  # option 1's value + sigma g_0 / C
    # Slots 0 and 1 serve option 0 (one run: 2 - 0.1 = 1.9): the more valuable option stays.
    assert _reserved_plan(p, failed, np.array([5]), {5: (0, 1)}).chosen.tolist() == [0]
