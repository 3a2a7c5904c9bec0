"""share_fairness (time-averaged Jain index of the active users' shares) against a direct
evaluation, interval by interval and job by job."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedopt.simulation.metrics import share_fairness


def direct(jobs: pd.DataFrame) -> float:
    events = sorted(set(jobs["arrival_s"]) | set(jobs["start_s"]) | set(jobs["completion_s"]))
    total = weight = 0.0
    for left, right in zip(events[:-1], events[1:]):
        mid = (left + right) / 2
        shares = {}
        for row in jobs.itertuples():
            if row.arrival_s <= mid < row.completion_s:
                shares.setdefault(row.user, 0.0)
        if not shares:
            continue
        for row in jobs.itertuples():
            if row.user in shares:
                shares[row.user] += min(max(mid - row.start_s, 0.0), row.processing_s)
        x = np.array(list(shares.values()))
        index = x.sum() ** 2 / (x.size * (x ** 2).sum()) if (x ** 2).sum() > 0 else 1.0
        total += index * (right - left)
        weight += right - left
    return total / weight if weight > 0 else 1.0


@pytest.mark.parametrize("seed", range(40))
def test_matches_the_direct_evaluation(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 25))
    arrival = np.round(rng.uniform(0, 100, n), 1)
    start = arrival + np.round(rng.uniform(0, 50, n), 1) * (rng.random(n) < 0.7)
    processing = np.round(rng.uniform(0, 30, n), 1)
    jobs = pd.DataFrame({"arrival_s": arrival, "start_s": start, "completion_s": start + processing,
                         "processing_s": processing, "user": rng.choice(list("abcd"), n)})
    assert share_fairness(jobs) == pytest.approx(direct(jobs), rel=1e-12, abs=1e-12)


def test_hand_worked_two_users():
    # a runs [0, 10), b arrives at 0 and runs [10, 20): shares (t, 0) then (10, t - 10)
    jobs = pd.DataFrame({"arrival_s": [0.0, 0.0], "start_s": [0.0, 10.0],
                         "completion_s": [10.0, 20.0], "processing_s": [10.0, 10.0],
                         "user": ["a", "b"]})
    # on [0, 10) both are active and b has nothing: index 1/2; on [10, 20) only b is active: 1
    assert share_fairness(jobs) == pytest.approx((0.5 * 10 + 1.0 * 10) / 20)
