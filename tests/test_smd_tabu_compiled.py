"""The compiled tabu search (numba) against the numpy one it replaces: the same counts, or
the same failure, and the random generator left in the same state, search by search."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smd_strategies import benchmark_instance, regime_instances
from schedopt.policies.smd import repack as repack_module
from schedopt.policies.smd.algorithm import smd
from schedopt.policies.smd.model import SmdProblem
from schedopt.policies.smd.repack import _Cluster, relieve
from schedopt.policies.smd.tabu_compiled import compiled_kernel

pytest.importorskip("numba")


def _both(monkeypatch, cluster, counts, iterations, seed):
    """relieve's answer and the generator's state after it, numpy first, then compiled."""
    out = []
    monkeypatch.setattr(repack_module, "NUMPY_FIRST", 0)
    for compiled in (False, True):
        monkeypatch.setattr(repack_module, "COMPILED", compiled)
        rng = np.random.default_rng(seed)
        out.append((relieve(cluster, counts, iterations, rng), rng.bit_generator.state))
    return out


def _assert_same(numpy_run, compiled_run):
    (a, state_a), (b, state_b) = numpy_run, compiled_run
    assert (a is None) == (b is None)
    if a is not None:
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert state_a == state_b


def _scrambled(problem: SmdProblem, seed: int, tasks_per_job: int) -> np.ndarray:
    """Task counts (2n, H) with 1..tasks_per_job workers and PSs per job, each task on a
    random machine: mostly overflowing, so the search has work to do."""
    rng = np.random.default_rng(seed)
    n, H = problem.num_jobs, problem.num_machines
    counts = np.zeros((2 * n, H), dtype=np.int64)
    for kind in range(2 * n):
        for _ in range(int(rng.integers(1, tasks_per_job + 1))):
            counts[kind, rng.integers(H)] += 1
    return counts


def test_the_kernel_compiles():
    assert compiled_kernel() is not None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(regime_instances(max_jobs=12, max_machines=5), st.integers(0, 2**31 - 1),
       st.integers(1, 3), st.sampled_from([0, 1, 5, 60, 200]))
def test_the_same_search_as_numpy_on_small_instances(monkeypatch, instance, seed, tasks, iterations):
    problem = SmdProblem.from_instance(instance)
    counts = _scrambled(problem, seed, tasks)
    _assert_same(*_both(monkeypatch, _Cluster(problem), counts, iterations, seed))


def test_the_same_search_as_numpy_on_benchmark_instances(monkeypatch):
    # binding clusters of 47-50 jobs, placements scrambled three ways each
    outcomes = []
    for regime in ("nic", "cpu", "memory", "mixed"):
        for index in range(2):
            problem = benchmark_instance(regime, index)
            cluster = _Cluster(problem)
            for seed in range(3):
                counts = _scrambled(problem, 100 * index + seed, 2)
                numpy_run, compiled_run = _both(monkeypatch, cluster, counts, 300, seed)
                _assert_same(numpy_run, compiled_run)
                outcomes.append(numpy_run[0] is not None)
    assert 0 < sum(outcomes) < len(outcomes)  # placed and not placed both compared


def test_smd_gives_the_same_answer_either_way(monkeypatch):
    # a memory-bound cluster of 50 jobs, where the repacking step's searches are most of smd
    problem = benchmark_instance("memory", 0)
    answers = []
    monkeypatch.setattr(repack_module, "NUMPY_FIRST", 0)
    for compiled in (False, True):
        monkeypatch.setattr(repack_module, "COMPILED", compiled)
        result = smd(problem, time_limit=1e9)
        answers.append((result.objective, result.placement.workers, result.placement.ps))
    assert answers[0][0] == answers[1][0]
    np.testing.assert_array_equal(answers[0][1], answers[1][1])
    np.testing.assert_array_equal(answers[0][2], answers[1][2])


@pytest.mark.parametrize("how", ["missing", "jit disabled"])
def test_without_numba_the_numpy_search_runs(monkeypatch, how):
    import sys

    import numba

    if how == "missing":
        monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` raises ImportError
    else:
        monkeypatch.setattr(numba.config, "DISABLE_JIT", True)
    monkeypatch.setattr(repack_module, "NUMPY_FIRST", 0)
    compiled_kernel.cache_clear()
    try:
        assert compiled_kernel() is None
        problem = benchmark_instance("cpu", 0)
        counts = _scrambled(problem, 0, 2)
        found = relieve(_Cluster(problem), counts, 300, np.random.default_rng(0))
        assert found is not None and not (problem.usage(found[:problem.num_jobs],
                                                        found[problem.num_jobs:])
                                          > problem.capacity + 1e-9).any()
        np.testing.assert_array_equal(found.sum(axis=1), counts.sum(axis=1))
    finally:
        monkeypatch.undo()
        compiled_kernel.cache_clear()
    assert compiled_kernel() is not None


def test_a_process_runs_numpy_first_then_the_compiled_loop(monkeypatch):
    asked = []
    monkeypatch.setattr(repack_module, "compiled_kernel",
                        lambda: asked.append(True) or compiled_kernel())
    monkeypatch.setattr(repack_module, "NUMPY_FIRST", 100)
    monkeypatch.setattr(repack_module, "_numpy_iterations", [0])
    problem = benchmark_instance("nic", 1)  # 47 jobs; these scrambles are never placed
    cluster = _Cluster(problem)
    for seed in range(3):
        assert not asked
        assert relieve(cluster, _scrambled(problem, seed, 2), 60, np.random.default_rng(seed)) is None
    # 60 + 60 iterations in numpy before the third search reach 100: it loads the compiled loop
    assert repack_module._numpy_iterations[0] == 120 and len(asked) == 1
