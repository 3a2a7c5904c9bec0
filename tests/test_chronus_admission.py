"""Chronus admission control, demotion and GPU round-up (docs/formulations.md §3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lease_strategies import draw_lease_jobs

from schedopt.errors import PolicyError
from schedopt.policies.chronus.lease_milp import LeaseProblem, latest_fit_greedy
from schedopt.policies.chronus.admission import (
    AdmissionReason,
    JobSet,
    NewJob,
    admit,
    earliest_fitting_horizon,
    latest_fit_packing,
    round_up_gpus,
)

# --- round-up -----------------------------------------------------------------------------------

def test_round_up_table_on_8_gpu_nodes():
    requested = np.arange(1, 18)
    expected = [1, 2, 4, 4, 8, 8, 8, 8, 16, 16, 16, 16, 16, 16, 16, 16, 24]
    assert round_up_gpus(requested).tolist() == expected
    assert round_up_gpus(np.array([3, 5, 9, 64, 65])).tolist() == [4, 8, 16, 64, 72]


def test_round_up_other_node_sizes_and_shapes():
    assert round_up_gpus(np.array([1, 2, 3, 4, 5, 9]), gpus_per_node=4).tolist() == [1, 2, 4, 4,
                                                                                       8, 12]
    assert round_up_gpus(np.array([3, 5, 7]), gpus_per_node=6).tolist() == [4, 6, 12]
    assert round_up_gpus(np.array([[3, 9]])).tolist() == [[4, 16]]
    assert round_up_gpus(np.array([], dtype=int)).tolist() == []


def test_round_up_rejects_bad_input():
    with pytest.raises(PolicyError, match="requested"):
        round_up_gpus(np.array([0, 1]))
    with pytest.raises(PolicyError, match="requested"):
        round_up_gpus(np.array([1.5]))
    with pytest.raises(PolicyError, match="gpus_per_node"):
        round_up_gpus(np.array([1]), gpus_per_node=0)


# --- packing order ------------------------------------------------------------------------------

def test_packing_order_is_loosest_horizon_first_then_job_index():
    # A (D=2, n=1), B (D=3, n=2), 1 GPU per lease: B first takes (1, 2), A then takes 0.
    # (Earliest-deadline-first would give A lease 1 and B leases (0, 2).)
    leases, unplaced, free = latest_fit_packing([1, 1], [1, 2], [2, 3], [1, 1, 1])
    assert leases == {0: (0,), 1: (1, 2)} and unplaced == () and free.tolist() == [0, 0, 0]
    # Equal horizons: lower index first, so job 0 gets the later lease.
    leases, _, _ = latest_fit_packing([1, 1], [1, 1], [2, 2], [1, 1])
    assert leases == {0: (1,), 1: (0,)}


# --- admission: hand examples -------------------------------------------------------------------

CAP = [8, 8, 8, 8, 8]
# One admitted job: 8 GPUs, 2 leases, a single option with D=2 -> it holds leases (0, 1).
BLOCKER = JobSet.from_arrays(gpus=[8], leases_needed=[2], option_job=[0], option_value=[10],
                             option_horizon=[2])


def brute_force_min_horizon(jobs: JobSet, new: NewJob, capacity) -> int | None:
    """Smallest H at which latest_fit_greedy (admitted by loosest D desc, then new) places all."""
    loosest = jobs.loosest_horizon()
    order = sorted(range(jobs.num_jobs), key=lambda j: (-loosest[j], j))
    for h in range(1, len(capacity) + 1):
        problem = LeaseProblem.from_arrays(
            np.append(jobs.gpus[order], new.gpus),
            np.append(jobs.leases_needed[order], new.leases_needed),
            np.arange(jobs.num_jobs + 1), np.zeros(jobs.num_jobs + 1),
            np.append(loosest[order], h), capacity)
        _, _, unplaced = latest_fit_greedy(problem)
        if not unplaced:
            return h
    return None


def test_new_job_that_fits_its_first_deadline_is_admitted_directly():
    jobs = JobSet.from_arrays(gpus=[4], leases_needed=[2], option_job=[0], option_value=[1],
                              option_horizon=[4])
    new = NewJob.from_values(gpus=4, leases_needed=2, option_value=[10, 5], option_horizon=[2, 4])
    d = admit(new, jobs, [8, 8, 8, 8])
    assert d.admitted and d.reason is AdmissionReason.FITS_FIRST_DEADLINE
    assert d.option == 0 and d.horizon == 2 and not d.searched
    assert d.new_index == 1
    assert d.leases == {0: (2, 3), 1: (0, 1)}  # admitted job packed late, new job early


def test_new_job_rejected_at_first_deadline_is_admitted_at_a_later_option_by_search():
    new = NewJob.from_values(gpus=4, leases_needed=2, option_value=[10, 6, 3],
                             option_horizon=[2, 4, 5])
    d = admit(new, BLOCKER, CAP)
    assert d.admitted and d.reason is AdmissionReason.FITS_LATER_DEADLINE and d.searched
    assert d.horizon == 4 == brute_force_min_horizon(BLOCKER, new, CAP)
    assert d.option == 1  # D=4 is now reachable (value 6 beats D=5's 3)
    assert d.leases == {0: (0, 1), 1: (2, 3)}


def test_reachable_option_is_the_highest_value_among_those_past_the_horizon():
    new = NewJob.from_values(gpus=4, leases_needed=2, option_value=[10, 2, 7],
                             option_horizon=[2, 4, 5])
    d = admit(new, BLOCKER, CAP)
    assert d.admitted and d.horizon == 4 and d.option == 2


def test_new_job_rejected_outright_with_reasons():
    # Fits only at H*=5 (3 leases, free leases 2, 3, 4) but its loosest deadline is 4.
    new = NewJob.from_values(gpus=8, leases_needed=3, option_value=[10, 5], option_horizon=[2, 4])
    d = admit(new, BLOCKER, CAP)
    assert not d.admitted and d.reason is AdmissionReason.BEYOND_LAST_DEADLINE
    assert d.horizon == 5 == brute_force_min_horizon(BLOCKER, new, CAP)
    assert d.option == -1 and d.leases == {}
    # Wider than any lease: no horizon in the window fits.
    wide = NewJob.from_values(gpus=16, leases_needed=1, option_value=[1], option_horizon=[5])
    d = admit(wide, BLOCKER, CAP)
    assert not d.admitted and d.reason is AdmissionReason.NO_FIT_IN_WINDOW and d.horizon is None
    # Needs more leases than its loosest deadline leaves.
    long = NewJob.from_values(gpus=1, leases_needed=4, option_value=[1], option_horizon=[3])
    assert admit(long, BLOCKER, CAP).reason is AdmissionReason.TOO_FEW_LEASES
    # The admitted jobs alone already overflow.
    over = JobSet.from_arrays(gpus=[8, 8], leases_needed=[2, 1], option_job=[0, 1],
                              option_value=[1, 1], option_horizon=[2, 2])
    tiny = NewJob.from_values(gpus=1, leases_needed=1, option_value=[1], option_horizon=[5])
    assert admit(tiny, over, CAP).reason is AdmissionReason.ADMITTED_DO_NOT_FIT


def test_admission_with_no_admitted_jobs_and_invalid_inputs():
    new = NewJob.from_values(gpus=2, leases_needed=1, option_value=[1], option_horizon=[1])
    d = admit(new, JobSet.empty(), [2])
    assert d.admitted and d.leases == {0: (0,)} and d.new_index == 0
    with pytest.raises(PolicyError):
        NewJob.from_values(gpus=2, leases_needed=1, option_value=[], option_horizon=[])
    with pytest.raises(PolicyError, match="capacity"):
        admit(new, JobSet.empty(), [])


# --- admission: properties ----------------------------------------------------------------------

@st.composite
def admission_cases(draw):
    H = draw(st.integers(1, 6))
    n = draw(st.integers(0, 4))
    gpus, needed, job, value, horizon, capacity = draw_lease_jobs(draw, n, H, max_options=3,
                                                                  max_capacity=8)
    v = draw(st.integers(1, 3))
    new = NewJob.from_values(
        gpus=draw(st.sampled_from([1, 2, 4, 8])), leases_needed=draw(st.integers(1, H + 1)),
        option_value=draw(st.lists(st.integers(1, 10), min_size=v, max_size=v)),
        option_horizon=draw(st.lists(st.integers(1, H + 1), min_size=v, max_size=v)))
    if n:
        jobs = JobSet.from_arrays(gpus, needed, job, value, horizon)
    else:
        jobs = JobSet.empty()
    return jobs, new, np.array(capacity)


@settings(max_examples=200, deadline=None)
@given(admission_cases())
def test_admitted_packing_fits_capacity_and_horizons(case):
    jobs, new, capacity = case
    d = admit(new, jobs, capacity)
    if not d.admitted:
        return
    H = capacity.size
    horizon = np.append(jobs.loosest_horizon(), d.horizon)
    gpus = np.append(jobs.gpus, new.gpus)
    needed = np.append(jobs.leases_needed, new.leases_needed)
    used = np.zeros(H, dtype=np.int64)
    assert sorted(d.leases) == list(range(jobs.num_jobs + 1))
    for j, held in d.leases.items():
        assert len(set(held)) == len(held) == needed[j]
        assert all(0 <= t < min(horizon[j], H) for t in held)
        used[list(held)] += gpus[j]
    assert np.all(used <= capacity)
    assert new.option_horizon[d.option] >= d.horizon
    assert max(d.leases[d.new_index]) < new.option_horizon[d.option]


@settings(max_examples=200, deadline=None)
@given(admission_cases())
def test_admission_search_equals_a_linear_scan_over_horizons(case):
    jobs, new, capacity = case
    d = admit(new, jobs, capacity)
    h_min = brute_force_min_horizon(jobs, new, capacity)
    first, last = int(new.option_horizon.min()), int(new.option_horizon.max())
    assert d.admitted == (h_min is not None and h_min <= last)
    if d.reason is AdmissionReason.FITS_FIRST_DEADLINE:
        assert h_min <= first and d.horizon == first
    elif d.reason in (AdmissionReason.FITS_LATER_DEADLINE, AdmissionReason.BEYOND_LAST_DEADLINE):
        assert h_min > first and d.horizon == h_min


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 8), min_size=1, max_size=10), st.sampled_from([1, 2, 4, 8]),
       st.integers(1, 11))
def test_earliest_fitting_horizon_equals_linear_scan(free, gpus, needed):
    free = np.array(free)
    linear = next((h for h in range(1, free.size + 1)
                   if np.count_nonzero(free[:h] >= gpus) >= needed), None)
    assert earliest_fitting_horizon(free, gpus, needed) == linear
