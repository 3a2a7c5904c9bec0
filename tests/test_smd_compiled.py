"""The compiled loops (numba) against the numpy versions they replace: the tabu search gives
the same counts, or the same failure, and leaves the random generator in the same state,
search by search; the packing rules give the same placements and the same resources left,
bit for bit, step by step; smd the same answer; and when a process switches to them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smd_strategies import benchmark_instance, regime_instances
from schedopt.policies.smd import jit
from schedopt.policies.smd.algorithm import smd
from schedopt.policies.smd.model import SmdProblem
from schedopt.policies.smd.packing import Packing
from schedopt.policies.smd.repack import _Cluster, relieve

pytest.importorskip("numba")


def _both(monkeypatch, cluster, counts, iterations, seed):
    """relieve's answer and the generator's state after it, numpy first, then compiled."""
    out = []
    monkeypatch.setattr(jit, "NUMPY_FIRST", 0)
    for compiled in (False, True):
        monkeypatch.setattr(jit, "COMPILED", compiled)
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


def test_the_loops_compile():
    assert jit.load() is not None


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
    monkeypatch.setattr(jit, "NUMPY_FIRST", 0)
    for compiled in (False, True):
        monkeypatch.setattr(jit, "COMPILED", compiled)
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
    monkeypatch.setattr(jit, "NUMPY_FIRST", 0)
    jit.load.cache_clear()
    try:
        assert jit.kernels() is None
        problem = benchmark_instance("cpu", 0)
        counts = _scrambled(problem, 0, 2)
        found = relieve(_Cluster(problem), counts, 300, np.random.default_rng(0))
        assert found is not None and not (problem.usage(found[:problem.num_jobs],
                                                        found[problem.num_jobs:])
                                          > problem.capacity + 1e-9).any()
        np.testing.assert_array_equal(found.sum(axis=1), counts.sum(axis=1))
    finally:
        monkeypatch.undo()
        jit.load.cache_clear()
    assert jit.load() is not None


def test_a_process_runs_numpy_first_then_the_compiled_loops(monkeypatch):
    asked = []
    load = jit.load
    monkeypatch.setattr(jit, "load", lambda: asked.append(True) or load())
    monkeypatch.setattr(jit, "NUMPY_FIRST", 100)
    monkeypatch.setattr(jit, "numpy_iterations", [0])
    problem = benchmark_instance("nic", 1)  # 47 jobs; these scrambles are never placed
    cluster = _Cluster(problem)
    for seed in range(3):
        assert not asked
        assert relieve(cluster, _scrambled(problem, seed, 2), 60, np.random.default_rng(seed)) is None
    # 60 + 60 iterations in numpy before the third search reach 100: it loads the compiled loops
    assert jit.numpy_iterations[0] == 120 and len(asked) == 1
    assert jit.kernels() is not None  # the packing rules too, from here on


def _packing_steps(monkeypatch, problem, steps, compiled: bool, relocate: bool):
    """Every state of a packing along `steps` ((job, workers, PSs) to add), and each room();
    with `relocate`, tasks that do not fit move others (`Packing._place_one`)."""
    monkeypatch.setattr(jit, "NUMPY_FIRST", 0)
    monkeypatch.setattr(jit, "COMPILED", compiled)
    pack = Packing(problem)
    pack.relocate = relocate
    states = []
    for i, dw, dp in steps:
        states.append((pack.room(i), pack.add(i, dw, dp), pack.workers.copy(), pack.ps.copy(),
                       pack.w.copy(), pack.p.copy(), pack.left.copy()))
    return states


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(regime_instances(max_jobs=12, max_machines=6), st.booleans(), st.data())
def test_the_same_packing_rules_as_numpy(monkeypatch, instance, relocate, data):
    problem = SmdProblem.from_instance(instance)
    n = problem.num_jobs
    steps = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 3),
                                         st.integers(0, 3)), min_size=1, max_size=30))
    numpy_states = _packing_steps(monkeypatch, problem, steps, False, relocate)
    compiled_states = _packing_steps(monkeypatch, problem, steps, True, relocate)
    for a, b in zip(numpy_states, compiled_states):
        assert a[0] == b[0] and a[1] == b[1]  # room (workers, PSs) and whether add placed
        for x, y in zip(a[2:], b[2:]):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("relocate", [False, True])
def test_the_packing_rules_place_and_refuse_alike_on_a_binding_cluster(monkeypatch, relocate):
    # a 50-job NIC-bound cluster filled until adds fail: both outcomes, the same states
    problem = benchmark_instance("nic", 0)
    rng = np.random.default_rng(3)
    steps = [(int(rng.integers(problem.num_jobs)), int(rng.integers(0, 3)), int(rng.integers(0, 3)))
             for _ in range(300)]
    numpy_states = _packing_steps(monkeypatch, problem, steps, False, relocate)
    compiled_states = _packing_steps(monkeypatch, problem, steps, True, relocate)
    placed = [state[1] for state in numpy_states]
    assert any(placed) and not all(placed)
    for a, b in zip(numpy_states, compiled_states):
        assert a[:2] == b[:2]
        for x, y in zip(a[2:], b[2:]):
            np.testing.assert_array_equal(x, y)
