"""The unused end of a part-used lease (`lease_zero_credit`): when the admitted jobs' rest of work
does not fit after the next lease in whole leases, lazy guarantees count what an admitted job
runs in it on GPUs that jobs finishing in it free, and between the boundaries those GPUs go to
that job first. A hand-worked trace where Chronus without it missed a deadline that EDF met, the
credit checked against a hand count, and random small traces on which no admitted job misses."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedopt.policies.chronus.boundary import (LeaseJobs, LeaseSettings, lease_zero_credit,
                                                plan_boundary)

from test_chronus_lazy import assert_admitted_jobs_meet_deadlines, instance, run, small_traces

# Two GPUs, 100 s leases, 10 s to start or resume; every job on one GPU, all arriving at 0.
# a (150 s, due 250) is admitted first, then b2 (180 s, due 200); b1 (40 s, due 100) no longer
# fits the reservations and is turned away; c (50 s, due 1,000) is admitted (with its slack the
# median admitted job has slack enough for lazy guarantees). Earliest deadline first runs b1 and
# b2 from 0 and a from 50, when b1 is done: a then ends at 50 + 10 + 150 = 210, b2 at 190, b1
# at 50, all in time. In whole leases a must hold lease 0 (after it: 90 s in lease 1 and the 50 s to its
# deadline, 140 s < 150 s), so the lease MILP ran a and b2 in lease 0 and b1 missed. With the
# credit a gets 100 - 50 - 10 = 40 s of lease 0, and its 110 s left fit in lease 1 (held: no
# overhead) and the 50 s before its deadline.
TRACE = [{"id": "a", "total_steps": 150, "deadline": 250.0},
         {"id": "b2", "total_steps": 180, "deadline": 200.0},
         {"id": "b1", "total_steps": 40, "deadline": 100.0},
         {"id": "c", "total_steps": 50, "deadline": 1000.0}]


def jobs_at_zero():
    return LeaseJobs(np.array([1, 1, 1]), np.array([150.0, 180.0, 40.0]), np.arange(3),
                     np.array([250.0, 200.0, 100.0]), np.ones(3))


def test_credit_is_the_rest_of_the_lease_after_a_freed_gpu_less_the_overhead():
    s = LeaseSettings(lease_seconds=100.0, resume_overhead_s=10.0)
    # b2 and b1 hold the GPUs from 0; b1 is done at 10 + 40 = 50 s, a starts then: 40 s.
    credit = lease_zero_credit(jobs_at_zero(), np.array([1, 2]), 2, 0.0, s)
    assert credit.tolist() == [0.4, 0.0, 0.0]
    # b1 held its GPU in the lease before (no overhead): done at 40 s, a gets 50 s.
    held = np.array([False, True, True])
    assert lease_zero_credit(jobs_at_zero(), np.array([1, 2]), 2, 0.0, s, held)[0] == 0.5
    # A GPU freed with no more than the overhead left of the lease starts nobody.
    late = LeaseJobs(np.array([1, 1]), np.array([150.0, 85.0]), np.arange(2),
                     np.array([250.0, 100.0]), np.ones(2))
    assert lease_zero_credit(late, np.array([1]), 1, 0.0, s).tolist() == [0.0, 0.0]


def test_a_freed_gpu_goes_to_the_earliest_deadline_first():
    s = LeaseSettings(lease_seconds=100.0, resume_overhead_s=10.0)
    # One GPU, held by a 30 s job (done at 40 s): of the two waiting jobs the one due first
    # (job 2, due 150) takes it, job 1 (due 400) gets nothing in lease 0.
    jobs = LeaseJobs(np.array([1, 1, 1]), np.array([30.0, 200.0, 100.0]), np.arange(3),
                     np.array([50.0, 400.0, 150.0]), np.ones(3))
    assert lease_zero_credit(jobs, np.array([0]), 1, 0.0, s).tolist() == [0.0, 0.0, 0.5]


def test_the_credited_job_keeps_its_guarantee_and_lease_zero_is_earliest_deadline_first():
    s = LeaseSettings(lease_seconds=100.0, resume_overhead_s=10.0, horizon_seconds=None,
                      horizon_leases=4, lazy=True)
    admitted = np.array([True, True, False])
    d = plan_boundary(jobs_at_zero(), admitted, 2, 0.0, s)
    assert d.running.tolist() == [False, True, True]
    assert d.credited.tolist() == [0]
    assert d.reserved[0] == (1, 2)  # lease 1 and the 50 s of lease 2 before its deadline
    # Without work handed out between boundaries there is nothing to credit: a runs from 0.
    d = plan_boundary(jobs_at_zero(), admitted, 2, 0.0, replace(s, work_conserving=False))
    assert d.running[0] and d.credited.size == 0


def test_the_trace_meets_every_deadline_as_edf_does():
    # (The lease MILP's lease 0 of before: a and b2 from 0, a done at 160 s, b1 at 210 s.)
    trace = instance(TRACE, 2)
    edf = run(trace, "edf")
    assert edf["met_deadline"].all()
    chronus = run(trace, "chronus")  # the default options
    assert chronus["admitted"].to_dict() == {"a": True, "b2": True, "b1": False, "c": True}
    assert chronus["met_deadline"].all()
    done = chronus["completion_s"]
    assert (done["a"], done["b2"], done["b1"]) == (210.0, 190.0, 50.0)
    # Without starts between boundaries (work_conserving=false) there is no credit: b1 misses.
    before = run(trace, "chronus", work_conserving=False)
    assert not before.loc["b1", "met_deadline"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_traces(arrivals=(0, 0, 10, 30, 120)), st.sampled_from([True, "auto"]))
def test_admitted_jobs_never_miss_with_the_credit(trace, lazy):
    # Bursts (most jobs arrive in the first lease), where GPUs freed in a lease are credited.
    assert_admitted_jobs_meet_deadlines(trace, run(trace, "chronus", lazy=lazy))
