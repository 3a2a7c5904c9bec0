"""fifo_packed (Gavel's FIFO with packing) on hand-worked examples."""

from __future__ import annotations

import numpy as np

from schedopt.core.problem import ThroughputProblem
from schedopt.policies.packed.fifo import FifoPacked, fifo_packed
from schedopt.policies.packed.master import PairTable

NAN = np.nan


def table_of(M: int, J: int, entries: dict) -> PairTable:
    """One label per job; entries {(j, a, b): (steps/s of a, of b)}."""
    rate = np.full((J, M, M), NAN)
    for (j, a, b), (qa, qb) in entries.items():
        rate[j, a, b], rate[j, b, a] = qa, qb
    return PairTable.from_arrays(np.arange(M), rate)


def test_waiting_jobs_join_the_running_job_whose_pair_gains_most():
    # types (k80, v100), one GPU each. Job 0 takes the v100 (4 > 1), job 1 the k80 (the v100 is
    # taken), jobs 2 and 3 wait: the cluster is full.
    T = np.array([[1.0, 4.0], [2.0, 3.0], [1.0, 2.0], [1.0, 1.0]])
    p = ThroughputProblem.from_arrays(T, None, None, [1, 1])
    table = table_of(4, 2, {
        (1, 0, 2): (3.0, 1.6),   # job 2 beside job 0 on the v100: 3/4 + 1.6/2 = 1.55
        (0, 1, 2): (1.8, 0.9),   # job 2 beside job 1 on the k80: 1.8/2 + 0.9/1 = 1.8 (best)
        (1, 0, 3): (2.0, 0.5),   # job 3 beside job 0: 2/4 + 0.5/1 = 1.0 <= 1.5: the queue stops
    })
    d = fifo_packed(p, table)
    np.testing.assert_array_equal(d.solo, [[0, 1], [0, 0], [0, 0], [0, 0]])
    assert (d.first.tolist(), d.second.tolist(), d.gpu.tolist()) == ([1], [2], [0])
    np.testing.assert_allclose(d.fraction, [1.0])
    np.testing.assert_allclose([d.rate_first[0], d.rate_second[0]], [1.8, 0.9])
    np.testing.assert_allclose(d.steps(p), [4.0, 1.8, 0.9, 0.0])
    low = fifo_packed(p, table, threshold=1.9)  # no pair is good enough: nobody joins
    assert low.first.size == 0 and low.solo.sum() == 2


def test_a_job_with_no_room_while_gpus_are_free_is_not_paired_and_zeros_count_zero():
    # k80: 1 GPU, v100: 2 GPUs; every job wants 2 GPUs. Job 0 takes the v100s; job 1 finds no
    # type with 2 free GPUs while a k80 is free, so it leaves the queue; job 2 waits and may pair.
    T = np.array([[1.0, 3.0], [1.0, 3.0], [1.0, 2.0], [1.0, 2.0]])
    p = ThroughputProblem.from_arrays(T, [2, 2, 2, 2], None, [1, 2])
    table = table_of(4, 2, {(1, 0, 1): (3.0, 3.0), (1, 0, 2): (2.4, 1.6),
                            (1, 0, 3): (0.0, 2.0)})  # measured 0 for job 0: 0 + 2/2 = 1
    d = fifo_packed(p, table)
    assert (d.first.tolist(), d.second.tolist(), d.gpu.tolist()) == ([0], [2], [1])
    assert d.solo.sum() == 0
    d = fifo_packed(p, table_of(4, 2, {(1, 0, 3): (0.0, 2.0)}))  # job 2 cannot pair: stop
    assert d.first.size == 0 and d.solo.sum() == 1


def test_a_job_that_runs_at_zero_on_its_free_types_is_passed_over():
    T = np.array([[0.0, 2.0], [1.0, 0.0], [1.0, 1.0]])
    p = ThroughputProblem.from_arrays(T, None, None, [1, 1])
    # job 0 takes the v100; job 1's only free type (k80) runs it: 1.0; job 2 waits.
    d = fifo_packed(p, table_of(3, 2, {}))
    np.testing.assert_array_equal(d.solo, [[0, 1], [1, 0], [0, 0]])
    T = np.array([[1.0, 2.0], [1.0, 3.0], [0.0, 1.0], [1.0, 1.0]])
    p = ThroughputProblem.from_arrays(T, None, None, [2, 1])
    # job 0 -> v100, job 1 -> k80 (only room), job 2 -> k80 at 0 steps/s: passed over, job 3 -> k80
    d = fifo_packed(p, table_of(4, 2, {}))
    np.testing.assert_array_equal(d.solo, [[0, 1], [1, 0], [0, 0], [1, 0]])
    outcome = FifoPacked().solve_with_table(p, table_of(4, 2, {}), FifoPacked().parse_options({}),
                                            None)
    np.testing.assert_array_equal(outcome.allocation, d.total())
