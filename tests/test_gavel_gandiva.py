"""schedopt.gavel's `gandiva`: what Gavel's Gandiva policy does, pinned on runs of Gavel's own
policy object (seeded as Gavel's utils.get_policy seeds it) called the way its scheduler
calls it, three rounds in a row. Cluster: 2 K80s, 1 P100, 1 V100 (4 GPUs); jobs of 1 and
2 GPUs asking for 11, so pairs are formed; every pair of equal scale factor is offered,
sharing at 0.6 of each job's solo steps/s (normalized throughput 3.6, kept) or, where
marked slow, at 0.1 (0.6, below 1: dissolved at the next round)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from schedopt.gavel import GavelGandiva, get_policy
from test_gavel_dropin import TYPES, FakeGavelScheduler, JobId, JobPair

SIZES = {0: 1, 1: 1, 2: 2, 3: 1, 4: 2, 5: 1, 6: 1, 7: 2}
CLUSTER = {"k80": 2, "p100": 1, "v100": 1}
SOLO = {"k80": 1.0, "p100": 2.0, "v100": 4.0}


def state(gone=(), slow=()) -> dict:
    jobs = [n for n in SIZES if n not in gone]
    pairs = {JobPair(a, b): {t: [(0.1 if (a, b) in slow else 0.6) * SOLO[t]] * 2
                             for t in TYPES}
             for a, b in itertools.combinations(jobs, 2) if SIZES[a] == SIZES[b]}
    return {"throughputs": {JobId(n): dict(SOLO) for n in jobs},
            "scale_factors": {JobId(n): SIZES[n] for n in jobs},
            "cluster_spec": dict(CLUSTER), "pairs": pairs}


def used(allocation: dict) -> set:
    """The combinations given time: job numbers and (a, b) pairs."""
    return {(key.a, key.b) if isinstance(key, JobPair) else key.n
            for key, row in allocation.items() if max(row.values()) > 0}


def split(allocation: dict) -> None:
    """Every combination given time gets c_j / (K s) of type j, its row capped at 1."""
    c = np.array([CLUSTER[t] for t in TYPES], float)
    rows = [key for key, row in allocation.items() if max(row.values()) > 0]
    for key in rows:
        share = c / len(rows) / SIZES[key.singletons()[0].n]
        np.testing.assert_allclose([allocation[key][t] for t in TYPES],
                                   share / max(share.sum(), 1.0), rtol=1e-15)


# Gavel's GandivaPolicy(seed) on the three rounds of `rounds`: the combinations given time
GAVEL_RUNS = {
    0: [{1, 4, (0, 6), (2, 7), (3, 5)},
        {4, (0, 6), (1, 5), (2, 7)},
        {1, 5, 7, (0, 6), (2, 4)}],
    1: [{6, 7, (0, 3), (1, 5), (2, 4)},
        {7, (0, 6), (1, 5), (2, 4)},
        {4, (0, 5), (1, 6), (2, 7)}],
}


@pytest.mark.parametrize("seed", sorted(GAVEL_RUNS))
def test_three_rounds_give_what_gavels_gandiva_gives_with_the_same_seed(seed):
    policy = get_policy("gandiva", seed=seed)
    # round 1: pairs drawn; round 2: job 3 has left (its pair dissolves, job 5 is redrawn);
    # round 3: every pair then formed runs slow, so all dissolve and are redrawn
    rounds = [state(), state(gone=(3,))]
    allocations = [FakeGavelScheduler(policy, r).compute_allocation() for r in rounds]
    slow = {(key.a, key.b) for key, _ in policy._gandiva.assigned.values()
            if isinstance(key, JobPair)}
    rounds.append(state(gone=(3,), slow=slow))
    allocations.append(FakeGavelScheduler(policy, rounds[-1]).compute_allocation())
    assert [used(a) for a in allocations] == GAVEL_RUNS[seed]
    for offered, allocation in zip(rounds, allocations):
        assert set(allocation) == set(offered["throughputs"]) | set(offered["pairs"])
        split(allocation)


def test_jobs_that_fit_split_the_cluster_equally_and_keep_their_pairs():
    policy = get_policy("gandiva", seed=0)
    FakeGavelScheduler(policy, state()).compute_allocation()  # pairs (0, 6), (2, 7), (3, 5)
    few = state(gone=(1, 2, 3, 4, 7))  # jobs 0, 5 and 6, 1 GPU each: 3 of 4 GPUs
    allocation = FakeGavelScheduler(policy, few).compute_allocation()
    assert used(allocation) == {0, 5, 6}
    split(allocation)
    # (0, 6) is kept for later rounds (normalized throughput 3.6); (3, 5) lost job 3
    pair = JobPair(0, 6)
    assert policy._gandiva.assigned == {JobId(0): (pair, JobId(6)), JobId(6): (pair, JobId(0))}


def test_normalized_throughput_by_hand():
    pair = JobPair(0, 1)
    throughputs = {JobId(0): {"k80": 2.0, "v100": 4.0}, JobId(1): {"k80": 1.0, "v100": 5.0},
                   pair: {"k80": [1.0, 0.5], "v100": [2.0, 1.0]}}
    # 1/2 + 0.5/1 + 2/4 + 1/5
    assert GavelGandiva.normalized_throughput(throughputs, pair, ["k80", "v100"]) == \
        pytest.approx(1.7, rel=1e-15)
    throughputs[pair]["v100"] = [2.0, 0.0]  # stalls paired on one type
    assert GavelGandiva.normalized_throughput(throughputs, pair, ["k80", "v100"]) == 0.0
    assert GavelGandiva.normalized_throughput(throughputs, JobId(0), ["k80", "v100"]) == 0.0


def test_a_drawn_pair_without_an_entry_is_a_one_line_error():
    from schedopt.errors import PolicyError

    two = state(gone=(2, 3, 4, 5, 6, 7))  # jobs 0 and 1 on a 1-GPU cluster
    two["cluster_spec"] = {"k80": 1, "p100": 0, "v100": 0}
    two["pairs"] = {}
    with pytest.raises(PolicyError, match="no entry for the pair"):
        FakeGavelScheduler(get_policy("gandiva"), two).compute_allocation()
