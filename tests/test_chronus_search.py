"""The lease MILP without its solver stages (`search=False`, the default online): a plan that does
not depend on the time limit or the machine's load, checked against exhaustive enumeration on
small problems, and a whole run that is the same with a 1 ms and a 100 s limit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from lease_strategies import assert_feasible, enumerate_optimum, lease_problems

from schedopt.instance import parse_instance
from schedopt.policies.chronus.lease_milp import LeaseProblem, solve_lease_problem
from schedopt.simulation import SimulationConfig, simulate


@settings(max_examples=60, deadline=None)
@given(lease_problems())
def test_without_search_the_plan_is_feasible_below_the_optimum_and_the_same_at_any_limit(drawn):
    gpus, needed, job, value, horizon, capacity, admitted = drawn
    problem = LeaseProblem.from_arrays(gpus, needed, job, value, horizon, capacity,
                                       admitted=admitted)
    best = enumerate_optimum(problem)
    plans = [solve_lease_problem(problem, solver="cpsat", time_limit=limit, search=False)
             for limit in (1e-9, 1.0, None)]
    for plan in plans:
        assert plan.leases == plans[0].leases
        assert plan.chosen.tolist() == plans[0].chosen.tolist()
        assert plan.details["stage_end"].keys() <= {"lp", "lp_rounding"}
    plan = plans[0]
    if best is None:  # no plan places every admitted job: the greedy says which it left out
        assert plan.unplaced
        return
    if plan.unplaced:  # the roundings and the greedy may miss a plan; never invent one
        return
    assert_feasible(problem, plan)
    assert plan.objective <= best + 1e-9
    assert plan.bound is None or plan.bound >= best - 1e-6


def burst():
    """Four GPUs, 14 jobs of 150-900 s on 1-2 GPUs arriving within 400 s, most with a deadline
    of 1.3-3 times their work."""
    rng = np.random.default_rng(7)
    jobs = []
    for i in range(14):
        work = int(rng.integers(150, 900))
        job = {"id": f"j{i}", "total_steps": work, "scale_factor": int(rng.integers(1, 3)),
               "arrival_time": float(rng.integers(0, 400)), "throughput": {"v100": 1.0}}
        if i % 4:
            job["deadline"] = round(work * float(rng.choice([1.3, 2.0, 3.0])), 1)
        jobs.append(job)
    return parse_instance({"format": "schedopt-instance/1",
                           "cluster": {"gpu_types": {"v100": {"count": 4, "gpus_per_node": 4}}},
                           "jobs": jobs})


def test_a_run_is_the_same_whatever_the_time_limit():
    trace = burst()
    runs = [simulate(trace, "chronus", SimulationConfig(
        time_limit=limit, policy_options={"lease_seconds": 100.0, "resume_overhead_s": 10.0}))
        for limit in (1e-3, 100.0)]
    first, second = (r.jobs for r in runs)
    assert first["completion_s"].tolist() == second["completion_s"].tolist()
    assert first["admitted"].tolist() == second["admitted"].tolist()
    assert first["preemptions"].tolist() == second["preemptions"].tolist()
    # and admitted jobs meet their deadlines in both
    for jobs in (first, second):
        admitted = jobs[jobs["admitted"]]
        assert admitted["met_deadline"].all()


def test_default_stands_for_each_entry_points_own_lazy_and_search(monkeypatch):
    # A run's settings: lazy "auto", no search; one boundary on its own: lazy false, search.
    from schedopt.policies.chronus import policy
    from schedopt.policies.chronus.boundary import LeaseSettings

    assert policy.ChronusOptions().lazy == "default" == policy.ChronusOptions().search
    run = policy._online_settings(policy.ChronusOptions(), None, None)
    assert (run.lazy, run.search) == ("auto", False)
    assert (LeaseSettings().lazy, LeaseSettings().search) == ("auto", False)
    seen = []
    monkeypatch.setattr(policy, "_settings", lambda *args: seen.append(args[-2:]) or
                        policy.LeaseSettings(lazy=args[-2], search=args[-1]))
    policy.chronus_policy(burst(), policy.DEFAULT_SOLVER)
    policy.chronus_policy(burst(), policy.DEFAULT_SOLVER, lazy=True, search=False)
    assert seen == [(False, True), (True, False)]
