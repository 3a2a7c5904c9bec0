"""schedopt.gavel as a drop-in for Gavel's policy objects, checked without Gavel's code.

`FakeGavelScheduler` calls a policy the way Gavel's scheduler does (scheduler.py,
`_compute_allocation`, as its documentation and behaviour describe it): the arguments it passes
depend only on `policy.name` (AlloX_Perf; names starting FinishTimeFairness, MaxMinFairness,
MinTotalDuration, ThroughputNormalizedByCostSum (with SLOs when the name holds 'SLO', the cost
arguments by keyword); Isolated; anything else gets throughputs, scale factors, cluster spec),
and None becomes {}. Every name Gavel's utils.get_policy accepts is called.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import gavel_reference as ref
from schedopt.api import solve
from schedopt.core.problem import ThroughputProblem
from schedopt.errors import PolicyError
from schedopt.gavel import (FTF_LEXIMIN, PACKED, SIGNATURES, SPEED_BLIND, UNSUPPORTED, V100_PRICED,
                            get_policy, spread_over_types)
from schedopt.policies.gavel.lp import finish_time_ratios
from schedopt.policies.packed.master import PairTable
from test_packed_targets import FullLP, leximin_by_brute_force

TYPES = ["k80", "p100", "v100"]

# Gavel's utils.get_policy names -> the class-style name its policy object carries.
GAVEL_CLASS_NAMES = {
    "allox": "AlloX_Perf", "fifo": "FIFO", "fifo_perf": "FIFO_Perf",
    "fifo_packed": "FIFO_Packing", "gandiva": "Gandiva_Packing", "isolated": "Isolated",
    "max_min_fairness": "MaxMinFairness", "max_min_fairness_perf": "MaxMinFairness_Perf",
    "max_min_fairness_packed": "MaxMinFairness_Packing",
    "max_min_fairness_water_filling": "MaxMinFairnessWaterFilling",
    "max_min_fairness_water_filling_perf": "MaxMinFairnessWaterFilling_Perf",
    "max_min_fairness_water_filling_packed": "MaxMinFairnessWaterFilling_Packing",
    "min_total_duration": "MinTotalDuration", "min_total_duration_perf": "MinTotalDuration_Perf",
    "min_total_duration_packed": "MinTotalDuration_Packing",
    "finish_time_fairness": "FinishTimeFairness",
    "finish_time_fairness_perf": "FinishTimeFairness_Perf",
    "finish_time_fairness_packed": "FinishTimeFairness_Packing",
    "max_sum_throughput_perf": "ThroughputSumWithPerf",
    "max_sum_throughput_normalized_by_cost_perf": "ThroughputNormalizedByCostSum_Perf",
    "max_sum_throughput_normalized_by_cost_perf_SLOs": "ThroughputNormalizedByCostSum_PerfSLOs",
    "max_sum_throughput_normalized_by_cost_packed_SLOs":
        "ThroughputNormalizedByCostSum_PackingSLOs",
}
SUPPORTED = sorted(set(GAVEL_CLASS_NAMES) - set(UNSUPPORTED))
# AlloX decides whole GPUs (a matching, tests/test_gavel_dropin_packed.py), not an LP's optimum.
UNPACKED = [name for name in SUPPORTED if name not in PACKED and name != "allox"]
# The packed names whose policies are the max-min family's LPs (the others: test_gavel_dropin_packed).
PACKED_LPS = ["max_min_fairness_packed", "max_min_fairness_water_filling_packed",
              "min_total_duration_packed"]


@functools.total_ordering
class JobId:
    """Like Gavel's JobIdPair for a single job: sortable, hashable, singletons(), is_pair()."""

    def __init__(self, n: int):
        self.n = n

    def singletons(self):
        return (self,)

    def is_pair(self) -> bool:
        return False

    def __eq__(self, other):
        return isinstance(other, JobId) and self.n == other.n

    def __lt__(self, other):
        return self.n < other.n

    def __hash__(self):
        return hash(self.n)

    def __str__(self):
        return str(self.n)


class JobPair:
    """Like Gavel's JobIdPair for two jobs: is_pair(), singletons() (the two JobIds)."""

    def __init__(self, a: int, b: int):
        self.a, self.b = a, b

    def singletons(self):
        return (JobId(self.a), JobId(self.b))

    def is_pair(self) -> bool:
        return True

    def __eq__(self, other):
        return isinstance(other, JobPair) and (self.a, self.b) == (other.a, other.b)

    def __hash__(self):
        return hash((self.a, self.b))

    def __str__(self):
        return f"({self.a}, {self.b})"


class FakeGavelScheduler:
    """The allocation step of Gavel's scheduler: state dicts in, `policy.name` picks the call."""

    def __init__(self, policy, state: dict):
        self.policy = policy
        self.state = state
        self.calls: list[tuple] = []

    def compute_allocation(self) -> dict:
        s, name = self.state, self.policy.name
        throughputs = s["throughputs"]
        if self.job_packing():  # Gavel adds its pairs' entries for a packing policy
            throughputs = {**throughputs, **s.get("pairs", {})}
        head = (throughputs, s["scale_factors"])
        keywords = {}
        if name == "AlloX_Perf":
            args = head + (s["times_since_start"], s["num_steps_remaining"], s["cluster_spec"])
        elif name.startswith("FinishTimeFairness"):
            args = head + (s["priority_weights"], s["times_since_start"],
                           s["num_steps_remaining"], s["cluster_spec"])
        elif name == "Isolated":
            args = head + (s["cluster_spec"],)
        elif name.startswith("MaxMinFairness"):
            args = head + (s["priority_weights"], s["cluster_spec"])
        elif name.startswith("MinTotalDuration"):
            args = head + (s["num_steps_remaining"], s["cluster_spec"])
        elif name.startswith("ThroughputNormalizedByCostSum"):
            args = head + (s["cluster_spec"],)
            keywords["instance_costs"] = s["instance_costs"]
            if "SLO" in name:
                keywords.update(SLOs=s["SLOs"], num_steps_remaining=s["num_steps_remaining"])
        else:
            args = head + (s["cluster_spec"],)
        self.calls.append((name, len(args), tuple(keywords)))
        allocation = self.policy.get_allocation(*args, **keywords)
        return {} if allocation is None else allocation

    def job_packing(self) -> bool:
        return "Packing" in self.policy.name  # how Gavel's scheduler decides to offer job pairs


def gavel_state(seed: int, num_jobs: int = 7) -> dict:
    rng = np.random.default_rng(seed)
    ids = [JobId(n) for n in range(num_jobs)]
    T = rng.uniform(0.2, 5.0, (num_jobs, len(TYPES)))
    return {
        "ids": ids, "T": T,
        "throughputs": {job: dict(zip(TYPES, row)) for job, row in zip(ids, T)},
        "scale_factors": {job: int(s) for job, s in zip(ids, rng.choice([1, 2], num_jobs))},
        "priority_weights": {job: float(w) for job, w in zip(ids, rng.choice([1.0, 2.0], num_jobs))},
        "times_since_start": {job: float(t) for job, t in zip(ids, rng.uniform(0, 3600, num_jobs))},
        "num_steps_remaining": {job: float(r) for job, r in zip(ids, rng.uniform(1e4, 1e6, num_jobs))},
        "cluster_spec": {"k80": 4, "p100": 3, "v100": 2},
        "instance_costs": {"k80": 0.45, "p100": 1.46, "v100": 2.48},
        "SLOs": {ids[0]: 1e9, ids[1]: 5e8},
    }


def problem_of(state: dict, given=None) -> ThroughputProblem:
    """The same arrays, built here by hand (not through schedopt.gavel.build_problem); given:
    the state keys the policy receives (a job's arrival order is unknown to Gavel's FIFO)."""
    ids = state["ids"]
    if given is not None and "times_since_start" not in given:
        state = {**state, "times_since_start": dict.fromkeys(ids, 0.0)}
    col = lambda key: [state[key][j] for j in ids]  # noqa: E731
    return ThroughputProblem.from_arrays(
        state["T"], col("scale_factors"), col("priority_weights"),
        [state["cluster_spec"][t] for t in TYPES], job_ids=[str(j) for j in ids],
        gpu_types=TYPES, cost_per_hour=[state["instance_costs"][t] for t in TYPES],
        remaining_steps=col("num_steps_remaining"), time_since_arrival=col("times_since_start"),
        time_to_deadline=[state["SLOs"].get(j, np.nan) for j in ids])


def as_matrix(allocation: dict, ids) -> np.ndarray:
    return np.array([[allocation[job][t] for t in TYPES] for job in ids])


def test_every_gavel_name_is_known_with_gavels_class_style_name():
    assert set(SIGNATURES) == set(GAVEL_CLASS_NAMES)
    for name in SUPPORTED:
        policy = get_policy(name)
        assert policy.name == GAVEL_CLASS_NAMES[name] and policy.gavel_name == name


def test_every_gavel_name_is_offered():
    assert UNSUPPORTED == {}
    assert PACKED == {name for name, style in GAVEL_CLASS_NAMES.items() if "Packing" in style}


def test_inputs_a_policy_cannot_take_say_why_in_one_line():
    state = gavel_state(5)  # scale factors 1 and 2: AlloX runs one-GPU jobs only, as Gavel's
    with pytest.raises(PolicyError) as error:
        FakeGavelScheduler(get_policy("allox"), state).compute_allocation()
    message = str(error.value)
    assert "\n" not in message and "AlloX_Perf" in message and "one GPU" in message


@pytest.mark.parametrize("name", UNPACKED)
def test_fake_scheduler_gets_schedopts_allocation_for_every_name(name):
    state = gavel_state(5)
    scheduler = FakeGavelScheduler(get_policy(name), state)
    allocation = scheduler.compute_allocation()
    assert not scheduler.job_packing()
    ids = state["ids"]
    assert list(allocation) == ids and all(list(a) == TYPES for a in allocation.values())
    X = as_matrix(allocation, ids)
    if name == "fifo":  # as Gavel's base-mode FIFO: all on v100, past its count (test_gavel_fifo)
        np.testing.assert_array_equal(X, np.broadcast_to([0, 0, 1], X.shape))
        return
    p = problem_of(state, scheduler.policy.signature.parameters)
    ref.assert_base_constraints(p, X)
    options = {"slos": True} if name.endswith("_SLOs") else {}
    expected = solve(p, f"gavel:{name}", **options).X
    if name in V100_PRICED:  # Gavel's V100-priced LP: tests/test_gavel_centered.py
        assert np.all(X > 0)
    elif name in SPEED_BLIND:  # at least the same time per job, split over types by GPU count
        assert np.all(X.sum(1) >= expected.sum(1) - 1e-9)
        capacity = np.array([state["cluster_spec"][t] for t in TYPES], dtype=float)
        np.testing.assert_allclose(X, X.sum(1, keepdims=True) * capacity / capacity.sum(),
                                   atol=1e-12)
    elif name.startswith("max_sum_throughput"):  # Clarabel's optimum, same objective value
        weight = state["T"] / (1.0 if name == "max_sum_throughput_perf"
                               else np.asarray(p.cost_per_hour)[None, :])
        assert (weight * X).sum() == pytest.approx((weight * expected).sum(), rel=1e-6)
    elif name in FTF_LEXIMIN:  # the leximin optimum: the same largest ratio, none above it
        ratios = finish_time_ratios(p, X)
        assert ratios.max() == pytest.approx(finish_time_ratios(p, expected).max(), rel=1e-6)
    else:
        np.testing.assert_allclose(X, expected, atol=1e-9)


def test_interchangeable_jobs_share_time_under_the_throughput_sums():
    state = gavel_state(8, num_jobs=4)
    ids = state["ids"] + [JobId(n) for n in range(4, 10)]
    twin = {job: state["throughputs"][state["ids"][job.n % 2]] for job in ids}
    state = {**state, "ids": ids, "throughputs": twin,
             "scale_factors": dict.fromkeys(ids, 1), "priority_weights": dict.fromkeys(ids, 1.0)}
    X = as_matrix(get_policy("max_sum_throughput_perf").get_allocation(
        state["throughputs"], state["scale_factors"], state["cluster_spec"]), ids)
    np.testing.assert_allclose(X[0::2], np.broadcast_to(X[0], X[0::2].shape), atol=1e-9)
    np.testing.assert_allclose(X[1::2], np.broadcast_to(X[1], X[1::2].shape), atol=1e-9)
    T = np.array([[twin[j][t] for t in TYPES] for j in ids])
    p = ThroughputProblem.from_arrays(T, None, None, [state["cluster_spec"][t] for t in TYPES])
    assert (T * X).sum() == pytest.approx(ref.max_total_throughput(p).value, rel=1e-6)


def test_speed_blind_spread_keeps_the_agnostic_optimum():
    state = gavel_state(12)
    p, ids = problem_of(state), state["ids"]
    X = as_matrix(FakeGavelScheduler(get_policy("max_min_fairness"), state).compute_allocation(),
                  ids)
    s, w = np.asarray(p.scale_factor), np.asarray(p.weight)
    assert np.min(s * X.sum(1) / w) == pytest.approx(ref.max_min_fairness(p, agnostic=True).value,
                                                     rel=1e-6)


def test_fake_scheduler_calls_use_gavels_argument_counts():
    state = gavel_state(1)
    counts = {}
    for name in SUPPORTED:
        one_gpu = {**state, "scale_factors": dict.fromkeys(state["ids"], 1)}
        scheduler = FakeGavelScheduler(get_policy(name), one_gpu if name == "allox" else state)
        scheduler.compute_allocation()
        counts[name] = scheduler.calls[-1][1:]
    assert counts["finish_time_fairness_perf"] == (6, ())
    assert counts["min_total_duration_perf"] == (4, ())
    assert counts["max_sum_throughput_normalized_by_cost_perf_SLOs"] == (
        3, ("instance_costs", "SLOs", "num_steps_remaining"))
    assert counts["fifo_perf"] == (3, ()) and counts["isolated"] == (3, ())
    assert counts["allox"] == (5, ()) and counts["gandiva"] == (3, ())
    assert counts["finish_time_fairness_packed"] == (6, ())


def test_allocations_reach_the_independent_optima():
    """Values against cvxpy models written separately (tests/gavel_reference.py)."""
    state = gavel_state(9)
    p, ids = problem_of(state), state["ids"]
    T = state["T"]

    def run(name):
        return as_matrix(FakeGavelScheduler(get_policy(name), state).compute_allocation(), ids)

    s, w = np.asarray(p.scale_factor), np.asarray(p.weight)
    X = run("max_min_fairness_perf")
    got = np.min(s * (T * X).sum(1) / (w * ref.equal_share_throughput(T, p.capacity)))
    assert got == pytest.approx(ref.max_min_fairness(p).value, rel=1e-5)
    X = run("min_total_duration_perf")
    makespan = np.max(np.asarray(p.remaining_steps) / (T * X).sum(1))
    assert makespan == pytest.approx(ref.min_makespan(p).value, rel=1e-5)
    X = run("max_sum_throughput_perf")
    assert (T * X).sum() == pytest.approx(ref.max_total_throughput(p).value, rel=1e-5)
    X = run("max_sum_throughput_normalized_by_cost_perf")
    assert (T / p.cost_per_hour * X).sum() == pytest.approx(ref.min_cost(p, slos=False).value,
                                                            rel=1e-5)
    X = run("finish_time_fairness_perf")
    rho = ref.finish_time_ratio(T, s, p.capacity, p.remaining_steps, p.time_since_arrival,
                                np.zeros(len(ids)), X)
    assert rho.max() == pytest.approx(ref.finish_time_fairness(p).value, rel=1e-4)


def test_gavel_keywords_and_defaults_are_accepted():
    state = gavel_state(2)
    policy = get_policy("max_min_fairness_water_filling_perf")
    by_keyword = policy.get_allocation(
        unflattened_throughputs=state["throughputs"], scale_factors=state["scale_factors"],
        unflattened_priority_weights=state["priority_weights"],
        cluster_spec=state["cluster_spec"], verbose=True)
    positional = policy.get_allocation(state["throughputs"], state["scale_factors"],
                                       state["priority_weights"], state["cluster_spec"])
    np.testing.assert_allclose(as_matrix(by_keyword, state["ids"]),
                               as_matrix(positional, state["ids"]))
    assert list(policy.signature.parameters)[-4:] == [
        "entity_weights", "entity_to_job_mapping", "verbose", "return_effective_throughputs"]
    slo = get_policy("max_sum_throughput_normalized_by_cost_perf_SLOs")
    no_slos = slo.get_allocation(state["throughputs"], state["scale_factors"],
                                 state["cluster_spec"], instance_costs=state["instance_costs"])
    cost = get_policy("max_sum_throughput_normalized_by_cost_perf").get_allocation(
        state["throughputs"], state["scale_factors"], state["cluster_spec"],
        state["instance_costs"])
    np.testing.assert_allclose(as_matrix(no_slos, state["ids"]), as_matrix(cost, state["ids"]),
                               atol=1e-9)
    unit_costs = get_policy("max_sum_throughput_normalized_by_cost_perf").get_allocation(
        state["throughputs"], state["scale_factors"], state["cluster_spec"], None)
    X = as_matrix(unit_costs, state["ids"])
    p = problem_of(state)
    assert (state["T"] * X).sum() == pytest.approx(ref.max_total_throughput(p).value, rel=1e-6)


@pytest.mark.parametrize("name", ["max_min_fairness_water_filling",
                                  "max_min_fairness_water_filling_perf"])
def test_hierarchical_water_filling_takes_gavels_entities(name):
    state = gavel_state(4, num_jobs=12)
    ids = state["ids"]
    mapping = {"alice": ids[:2], "bob": ids[2:]}
    entity_weights = {"alice": 3.0, "bob": 1.0}
    allocation = get_policy(name).get_allocation(
        state["throughputs"], state["scale_factors"], state["priority_weights"],
        state["cluster_spec"], entity_weights=entity_weights, entity_to_job_mapping=mapping)
    p = problem_of(state)
    users = ThroughputProblem.from_arrays(
        p.throughput, p.scale_factor, p.weight, p.capacity, job_ids=p.job_ids,
        gpu_types=p.gpu_types, user=["alice"] * 2 + ["bob"] * 10, user_weight=entity_weights)
    ours = "hierarchical_water_filling" + ("" if name.endswith("_perf") else "_agnostic")
    expected = solve(users, ours).X
    if name in SPEED_BLIND:
        expected = spread_over_types(users, expected)
    np.testing.assert_allclose(as_matrix(allocation, ids), expected, atol=1e-9)
    flat = get_policy(name).get_allocation(state["throughputs"], state["scale_factors"],
                                           state["priority_weights"], state["cluster_spec"])
    assert not np.allclose(as_matrix(allocation, ids), as_matrix(flat, ids), atol=1e-6)


def test_no_jobs_is_none_and_the_scheduler_reads_it_as_empty():
    state = {**gavel_state(0), "throughputs": {}}
    for name in SUPPORTED:
        assert FakeGavelScheduler(get_policy(name), state).compute_allocation() == {}


def test_bad_inputs_are_one_line_errors():
    state = gavel_state(3)
    policy = get_policy("max_min_fairness_perf")
    with pytest.raises(PolicyError, match="worker type") as error:
        policy.get_allocation(state["throughputs"], state["scale_factors"],
                              state["priority_weights"], {"k80": 4})
    assert "\n" not in str(error.value)
    with pytest.raises(TypeError, match="MaxMinFairness_Perf.get_allocation"):
        policy.get_allocation(state["throughputs"], state["scale_factors"])
    with pytest.raises(PolicyError, match="return_effective_throughputs"):
        get_policy("max_min_fairness_water_filling_perf").get_allocation(
            state["throughputs"], state["scale_factors"], state["priority_weights"],
            state["cluster_spec"], return_effective_throughputs=True)
    impossible = {**state, "SLOs": {state["ids"][0]: 1e-3}}
    with pytest.raises(PolicyError) as error:
        FakeGavelScheduler(get_policy("max_sum_throughput_normalized_by_cost_perf_SLOs"),
                           impossible).compute_allocation()
    message = str(error.value)
    assert "\n" not in message and "ThroughputNormalizedByCostSum_PerfSLOs" in message
    assert "SLOs of jobs 0 cannot be met" in message


def test_gavels_cvxpy_solver_names_mean_schedopts_default():
    state = gavel_state(6)
    ecos = get_policy("max_min_fairness_perf", solver="ECOS", seed=0)
    assert ecos.solver is None
    allocation = FakeGavelScheduler(ecos, state).compute_allocation()
    expected = FakeGavelScheduler(get_policy("max_min_fairness_perf"), state).compute_allocation()
    np.testing.assert_allclose(as_matrix(allocation, state["ids"]),
                               as_matrix(expected, state["ids"]))


def test_intended_fifo_keeps_running_jobs_on_their_types_within_the_counts():
    state = gavel_state(10, num_jobs=9)
    policy = get_policy("fifo", intended=True)
    first = FakeGavelScheduler(policy, state).compute_allocation()
    ids = state["ids"]
    running = {job: max(a, key=a.get) for job, a in first.items() if max(a.values()) == 1.0}
    assert running and sum(state["scale_factors"][j] for j in running) <= 9
    gone = ids[0] if ids[0] in running else next(iter(running))
    later = {**state, "throughputs": {j: t for j, t in state["throughputs"].items() if j != gone}}
    second = FakeGavelScheduler(policy, later).compute_allocation()
    for job, gpu in running.items():
        if job != gone:
            assert second[job][gpu] == 1.0 and sum(second[job].values()) == 1.0
    X = np.array([[second[j][t] for t in TYPES] for j in ids if j != gone])
    sf = np.array([state["scale_factors"][j] for j in ids if j != gone])
    assert np.all(sf @ X <= np.array([state["cluster_spec"][t] for t in TYPES]))


# ------------------------------------------------------------------------------ packed names

def packed_state(seed: int, num_jobs: int = 6) -> dict:
    """gavel_state plus Gavel's pair entries: every pair of equal scale factor, [a, b] steps/s
    per worker type (0.3-0.95 of each job's solo rate), some measured [0, 0] (cannot share)."""
    state = gavel_state(seed, num_jobs)
    rng = np.random.default_rng(seed + 500)
    ids, T = state["ids"], state["T"]
    pairs, zero = {}, []
    for a in range(num_jobs):
        for b in range(a + 1, num_jobs):
            if state["scale_factors"][ids[a]] != state["scale_factors"][ids[b]]:
                continue
            share = rng.uniform(0.3, 0.95, (2, len(TYPES)))
            if rng.random() < 0.25:
                share[:] = 0.0
                zero.append(JobPair(a, b))
            pairs[JobPair(a, b)] = {t: [share[0, j] * T[a, j], share[1, j] * T[b, j]]
                                    for j, t in enumerate(TYPES)}
    cluster = {"k80": 2, "p100": 1, "v100": 1}  # fewer GPUs than the jobs ask for: pairs help
    return {**state, "cluster_spec": cluster, "pairs": pairs, "zero_pairs": zero}


def hand_table(state: dict) -> PairTable:
    """The pair entries as a table with one label per job, built here by hand."""
    M = len(state["ids"])
    rate = np.full((len(TYPES), M, M), np.nan)
    for pair, per_type in state["pairs"].items():
        for j, t in enumerate(TYPES):
            rate[j, pair.a, pair.b], rate[j, pair.b, pair.a] = per_type[t]
    return PairTable.from_arrays(np.arange(M), rate)


def read_back(state: dict, allocation: dict, p: ThroughputProblem) -> np.ndarray:
    """(M,) steps/s of each job from Gavel's allocation (solo + pairs), checking the base
    constraints: time per job <= 1, GPUs per type <= its count, pairs of equal scale factor."""
    ids = state["ids"]
    solo = as_matrix(allocation, ids)
    steps = (state["T"] * solo).sum(1)
    time = solo.sum(1)
    gpus = np.asarray(p.scale_factor) @ solo
    for pair, per_type in state["pairs"].items():
        for j, t in enumerate(TYPES):
            f = allocation[pair][t]
            assert f >= -1e-12
            if f > 1e-12:
                assert p.scale_factor[pair.a] == p.scale_factor[pair.b]
                steps[pair.a] += f * per_type[t][0]
                steps[pair.b] += f * per_type[t][1]
                time[pair.a] += f
                time[pair.b] += f
                gpus[j] += p.scale_factor[pair.a] * f
    assert solo.min() >= -1e-12 and time.max() <= 1 + 1e-9
    assert np.all(gpus <= np.asarray(p.capacity) + 1e-9)
    return steps


@pytest.mark.parametrize("seed", range(4))
def test_packed_names_take_gavels_pairs_and_reach_the_full_lp(seed):
    state = packed_state(seed)
    p, table = problem_of(state), hand_table(state)
    lp = FullLP(p, table)
    unit = np.asarray(p.weight) * p.equal_share_throughput / np.asarray(p.scale_factor)
    M = len(state["ids"])
    used = set()
    for name in PACKED_LPS:
        scheduler = FakeGavelScheduler(get_policy(name), state)
        allocation = scheduler.compute_allocation()
        assert scheduler.job_packing()
        assert set(allocation) == set(state["ids"]) | set(state["pairs"])
        steps = read_back(state, allocation, p)
        levels = steps / unit
        if name == "max_min_fairness_packed":
            best = -lp.maximize(unit, np.zeros(M), np.ones(M, dtype=bool)).fun
            assert levels.min() == pytest.approx(best, rel=1e-6)
        elif name == "max_min_fairness_water_filling_packed":
            np.testing.assert_allclose(levels, leximin_by_brute_force(p, table), rtol=1e-6)
        else:
            R = np.asarray(p.remaining_steps)
            best = 1.0 / -lp.maximize(R, np.zeros(M), R > 0).fun
            assert np.max(R / steps) == pytest.approx(best, rel=1e-6)
        for pair in state["zero_pairs"]:  # measured [0, 0]: never given time
            assert all(v == 0.0 for v in allocation[pair].values())
        used |= {pair for pair in state["pairs"] if max(allocation[pair].values()) > 1e-9}
    assert used  # the pairs matter on these instances


def test_packed_names_without_pairs_are_the_unpacked_policies():
    state = gavel_state(3)
    p = problem_of(state)
    unit = np.asarray(p.weight) * p.equal_share_throughput / np.asarray(p.scale_factor)
    X = as_matrix(FakeGavelScheduler(get_policy("max_min_fairness_packed"), state)
                  .compute_allocation(), state["ids"])
    assert ((state["T"] * X).sum(1) / unit).min() == pytest.approx(
        solve(p, "max_min_fairness").objective, rel=1e-7)
    X = as_matrix(FakeGavelScheduler(get_policy("min_total_duration_packed"), state)
                  .compute_allocation(), state["ids"])
    R = np.asarray(p.remaining_steps)
    assert np.max(R / (state["T"] * X).sum(1)) == pytest.approx(
        solve(p, "min_makespan").objective, rel=1e-7)


def test_packed_water_filling_with_entities_and_bad_pairs_are_one_line_errors():
    state = packed_state(1)
    policy = get_policy("max_min_fairness_water_filling_packed")
    with pytest.raises(PolicyError, match="MaxMinFairnessWaterFilling_Packing.*entities") as error:
        policy.get_allocation({**state["throughputs"], **state["pairs"]}, state["scale_factors"],
                              state["priority_weights"], state["cluster_spec"],
                              entity_to_job_mapping={"u": state["ids"]})
    assert "\n" not in str(error.value)
    stray = {JobPair(0, 99): {t: [1.0, 1.0] for t in TYPES}}
    with pytest.raises(PolicyError, match="pair entry") as error:
        get_policy("max_min_fairness_packed").get_allocation(
            {**state["throughputs"], **stray}, state["scale_factors"],
            state["priority_weights"], state["cluster_spec"])
    assert "\n" not in str(error.value)
