"""Hypothesis drawing shared by the Chronus tests: random lease-job arrays (test helper)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st


def draw_lease_jobs(draw, num_jobs: int, num_leases: int, max_options: int, max_capacity: int):
    """(gpus, leases needed, option job, option value, option horizon, capacity per lease) for
    `num_jobs` jobs on `num_leases` leases: GPUs from {1, 2, 4}, 1..max_options options each,
    horizons up to num_leases + 1, capacity 0..max_capacity GPUs per lease."""
    n, H = num_jobs, num_leases
    gpus = draw(st.lists(st.sampled_from([1, 2, 4]), min_size=n, max_size=n))
    needed = draw(st.lists(st.integers(1, H), min_size=n, max_size=n))
    num_options = draw(st.lists(st.integers(1, max_options), min_size=n, max_size=n))
    job = np.repeat(np.arange(n), num_options).astype(np.int64)
    value = draw(st.lists(st.integers(1, 10), min_size=job.size, max_size=job.size))
    horizon = draw(st.lists(st.integers(1, H + 1), min_size=job.size, max_size=job.size))
    capacity = draw(st.lists(st.integers(0, max_capacity), min_size=H, max_size=H))
    return gpus, needed, job, value, horizon, capacity
