"""schedopt.gavel's `fifo`: what Gavel's base-mode FIFO does, pinned on runs of Gavel's own
policy object (seeded as Gavel's utils.get_policy seeds it), called the way its scheduler
calls it. Cluster: 2 GPUs of each type; steps/s 3 on v100, 2 on p100, 1 on k80 unless noted.

What those runs show: each new job is given the last type, in name order, of those with free
GPUs (v100 first), even past its GPU count; a type drops out of that list only when the type
given reaches exactly 0 free GPUs, and then the one dropped is a type drawn at random among
those the job fits; a job that runs at 0 steps/s on the type it is given gets nothing."""

from __future__ import annotations

import numpy as np

from schedopt.gavel import get_policy
from test_gavel_dropin import FakeGavelScheduler, JobId

CLUSTER = {"v100": 2, "p100": 2, "k80": 2}
RATES = {"v100": 3.0, "p100": 2.0, "k80": 1.0}


def state(scale_factors: dict, rates: dict | None = None) -> dict:
    """Jobs JobId(n) -> their steps/s per type (RATES unless `rates` names the job)."""
    return {"throughputs": {JobId(n): dict((rates or {}).get(n, RATES)) for n in scale_factors},
            "scale_factors": {JobId(n): s for n, s in scale_factors.items()},
            "cluster_spec": dict(CLUSTER)}


def placed(allocation: dict) -> dict:
    """{job number: the type it holds, or None}: each job gets all of one type or nothing."""
    out = {}
    for job, row in allocation.items():
        held = [gpu for gpu, x in row.items() if x == 1.0]
        assert len(held) <= 1 and sum(row.values()) == len(held)
        out[job.n] = held[0] if held else None
    return out


def test_every_job_goes_to_v100_past_its_count_and_a_finished_jobs_place_is_taken():
    policy = get_policy("fifo", seed=0)
    first = FakeGavelScheduler(policy, state(dict.fromkeys(range(5), 1))).compute_allocation()
    assert placed(first) == dict.fromkeys(range(5), "v100")  # five 1-GPU jobs on 2 V100s
    later = state(dict.fromkeys(range(1, 6), 1))  # job 0 ended, job 5 arrived
    assert placed(FakeGavelScheduler(policy, later).compute_allocation()) == \
        dict.fromkeys(range(1, 6), "v100")


def test_the_draw_decides_which_type_drops_out_and_the_queue_stops_at_a_misfit():
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 2}
    # seed 1: when the V100s are full, v100 itself is dropped, so job 2 goes to p100; then
    # the draw drops k80, and the 2-GPU jobs 3 and 4 fit no type left: the queue stops
    policy = get_policy("fifo", seed=1)
    assert placed(FakeGavelScheduler(policy, state(sizes)).compute_allocation()) == \
        {0: "v100", 1: "v100", 2: "p100", 3: None, 4: None}
    # job 2 ends: the queue's head (3) takes its two P100s; job 4 then gets the last type
    # left with free GPUs, k80, whose count reaches 0, and job 5 finds no type
    later = state({0: 1, 1: 1, 3: 2, 4: 2, 5: 1})
    assert placed(FakeGavelScheduler(policy, later).compute_allocation()) == \
        {0: "v100", 1: "v100", 3: "p100", 4: "k80", 5: None}
    # seed 0 draws another type to drop: every job stays on v100
    assert placed(FakeGavelScheduler(get_policy("fifo", seed=0), state(sizes))
                  .compute_allocation()) == dict.fromkeys(range(5), "v100")


def test_only_the_given_types_speed_matters():
    no_k80 = {"v100": 3.0, "p100": 2.0, "k80": 0.0}
    no_v100 = {"v100": 0.0, "p100": 2.0, "k80": 1.0}
    run = FakeGavelScheduler(get_policy("fifo", seed=0),
                             state(dict.fromkeys(range(3), 1), {1: no_k80})).compute_allocation()
    assert placed(run) == dict.fromkeys(range(3), "v100")
    run = FakeGavelScheduler(get_policy("fifo", seed=0),
                             state(dict.fromkeys(range(3), 1), {1: no_v100})).compute_allocation()
    assert placed(run) == {0: "v100", 1: None, 2: "v100"}


def test_a_round_without_jobs_forgets_the_placements():
    policy = get_policy("fifo", seed=1)
    sizes = {0: 1, 1: 1, 2: 2}
    assert placed(FakeGavelScheduler(policy, state(sizes)).compute_allocation())[2] == "p100"
    assert FakeGavelScheduler(policy, state({})).compute_allocation() == {}
    # nothing is held any more, so job 3 is not handed job 2's P100s: it gets v100
    assert placed(FakeGavelScheduler(policy, state({3: 2})).compute_allocation()) == {3: "v100"}


def test_intended_fifo_stays_within_every_types_count():
    policy = get_policy("fifo", intended=True)
    allocation = FakeGavelScheduler(policy, state(dict.fromkeys(range(8), 1))).compute_allocation()
    held = placed(allocation)
    counts = {gpu: sum(1 for g in held.values() if g == gpu) for gpu in CLUSTER}
    assert counts == CLUSTER  # six of the eight jobs run, two GPUs of each type
    assert [n for n, g in held.items() if g is None] == [6, 7]  # first come, first served
    assert np.isclose(sum(sum(row.values()) for row in allocation.values()), 6)
