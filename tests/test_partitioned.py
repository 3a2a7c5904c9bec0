"""Partitioned (POP as a wrapper policy) around any Policy: a policy defined here, serial and
process executors, k = 1, the AlloX split by machines, and the kinds it refuses."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import schedopt
from schedopt.backends import Status
from schedopt.backends.session import Solver
from schedopt.core.capabilities import Capability
from schedopt.core.decisions import DecisionKind
from schedopt.core.outcome import Outcome
from schedopt.core.policy import Policy
from schedopt.core.problem import ThroughputProblem
from schedopt.core.registry import resolve
from schedopt.errors import PolicyError
from schedopt.instance import load_instance
from schedopt.policies.partitioned import Partitioned

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class EqualOptions:
    fraction: float = 1.0  # of the equal share each job takes


class EqualShares(Policy):
    """Every job the same time fraction of every type it can run on:
    X[m, j] = fraction * min(1/J, c_j / (J * sum_m s_m)), so rows sum to <= 1 and type j's
    GPUs in use to <= c_j / J. Objective: the least total steps/s of a job."""

    name = "equal_shares_test"
    objective_doc = "min over jobs of steps/s"
    Options = EqualOptions
    needs = Capability.none()
    default_solver = None

    def solve(self, problem, options, solver):
        J = problem.num_types
        share = np.minimum(1.0 / J, problem.capacity / (J * max(problem.scale_factor.sum(), 1)))
        X = options.fraction * problem.runnable * share[None, :]
        return Outcome.from_status(X, Status.OPTIMAL, self.objective(problem, X, options), None,
                                   0.0, "equal")

    def objective(self, problem, allocation, options):
        steps = (problem.throughput * allocation).sum(axis=1)
        return float(steps.min()) if steps.size else None


def random_problem(num_jobs: int, seed: int) -> ThroughputProblem:
    rng = np.random.default_rng(seed)
    T = rng.uniform(0.5, 4.0, (num_jobs, 3)) * (rng.random((num_jobs, 3)) > 0.2)
    T[:, 0] += 0.1
    return ThroughputProblem.from_arrays(T, rng.choice([1, 2], num_jobs), capacity=[8, 6, 4])


def test_partitioned_wraps_a_policy_defined_here_and_executors_agree():
    problem = random_problem(90, seed=1)
    policy = EqualShares()
    options = policy.parse_options({"fraction": 0.5})
    serial = Partitioned(policy, 3).solve(problem, options, Solver(None))
    parallel = Partitioned(policy, 3, executor="process").solve(problem, options, Solver(None))
    assert np.array_equal(serial.allocation, parallel.allocation)
    assert serial.details["pop"]["parts"] == parallel.details["pop"]["parts"]
    assert parallel.details["pop"]["executor"] == "process"
    assert serial.status is Status.FEASIBLE and serial.bound is None
    # Each part has its share of the jobs' capacity: rows of part q use c_j * n_q / M / J.
    parts = np.array([serial.details["pop"]["parts"][job] for job in problem.job_ids])
    for q in range(3):
        rows = parts == q
        share = rows.sum() / problem.num_jobs
        used = (problem.scale_factor[rows, None] * serial.allocation[rows]).sum(axis=0)
        assert np.all(used <= problem.capacity * share / problem.num_types + 1e-12)
    # The objective is the wrapped policy's, evaluated on the whole problem.
    assert serial.objective == pytest.approx(policy.objective(problem, serial.allocation, options),
                                             rel=1e-15)


def test_one_part_is_the_unwrapped_policy():
    problem = random_problem(40, seed=2)
    policy = EqualShares()
    options = policy.parse_options({})
    alone = policy.solve(problem, options, Solver(None))
    one = Partitioned(policy, 1).solve(problem, options, Solver(None))
    assert np.array_equal(one.allocation, alone.allocation)
    assert one.objective == alone.objective and one.status is Status.OPTIMAL
    builtin = schedopt.solve(problem, "max_total_throughput")
    wrapped = schedopt.solve(problem, Partitioned(resolve("max_total_throughput")[0], 1))
    assert wrapped.objective == pytest.approx(builtin.objective, rel=1e-9)
    assert wrapped.bound == pytest.approx(builtin.objective, rel=1e-6)


def test_the_api_builds_partitioned_and_keeps_sticky_parts():
    problem = random_problem(30, seed=3)
    first = schedopt.solve(problem, EqualShares(), partitions=3, partition_seed=4)
    parts = first.details["pop"]["parts"]
    again = schedopt.solve(problem, EqualShares(), partitions=3, partition_seed=9,
                           previous_parts=parts)
    assert again.details["pop"]["parts"] == parts
    assert first.policy == "equal_shares_test"


# The machines of every job under POP-3 (seed 0) and POP-4 (seed 7) on instances/allox-40.json,
# computed with schedopt.policies.allox.matching.pop_assignment(P, free_at, k, seed) at commit
# acf9eb9 (P, names = allox_processing_times(instance); free_at = instance.now everywhere),
# before POP by machines moved into Partitioned.
ALLOX_POP = {
    (3, 0): [1, 8, 0, 2, 2, 3, 0, 7, 4, 3, 4, 0, 7, 0, 11, 1, 3, 1, 5, 1, 2, 8, 7, 1, 3, 5, 1, 2,
             6, 6, 3, 3, 11, 2, 0, 10, 2, 9, 10, 5],
    (4, 7): [2, 5, 1, 8, 3, 2, 3, 7, 9, 3, 10, 3, 7, 1, 10, 1, 0, 0, 10, 1, 1, 5, 8, 0, 2, 6, 2, 0,
             6, 4, 0, 0, 6, 11, 3, 1, 3, 9, 11, 4],
}


@pytest.mark.parametrize("k, seed", sorted(ALLOX_POP))
def test_allox_split_by_machines_equals_the_former_pop_assignment(k, seed):
    from schedopt.policies.allox.matching import allox_processing_times

    instance = load_instance(ROOT / "instances" / "allox-40.json")
    _, names = allox_processing_times(instance)
    result = schedopt.solve(instance, "allox", partitions=k, partition_seed=seed)
    schedule = result.details["schedule"]
    assert [schedule[job]["machine"] for job in instance.job_ids] == \
        [names[m] for m in ALLOX_POP[k, seed]]
    assert result.details["pop"]["method"] == "by machines"
    assert result.status is Status.FEASIBLE and result.bound is None
    # The whole-cluster queues list every machine, each in shortest-first order.
    assert set(result.details["queues"]) == set(names)
    for machine, jobs in result.details["queues"].items():
        assert [schedule[job]["position"] for job in jobs] == list(range(len(jobs)))


@pytest.mark.parametrize("name", ["chronus", "smd"])
def test_kinds_that_do_not_split_are_one_line(name):
    policy, _ = resolve(name)
    with pytest.raises(PolicyError, match=f"POP .* {name} is neither"):
        Partitioned(policy, 2)


def test_a_queue_policy_without_machine_times_is_refused():
    class Queues(EqualShares):
        name = "queues_test"
        decision = DecisionKind.QUEUES

    with pytest.raises(PolicyError, match="offers no machine_times"):
        Partitioned(Queues(), 2)


def test_bad_arguments_are_one_line():
    with pytest.raises(PolicyError, match="partitions must be an integer >= 1"):
        Partitioned(EqualShares(), 0)
    with pytest.raises(PolicyError, match="unknown executor"):
        Partitioned(EqualShares(), 2, executor="threads")
    with pytest.raises(PolicyError, match="unknown partition method"):
        Partitioned(EqualShares(), 2, method="greedy")


def test_a_policy_that_cannot_travel_to_workers_is_one_line():
    class Local(EqualShares):  # defined in a function: not importable by reference
        name = "local_test"

    problem = random_problem(10, seed=5)
    with pytest.raises(PolicyError, match="cannot be pickled.*executor 'serial'"):
        schedopt.solve(problem, Local(), partitions=2, executor="process")
    assert schedopt.solve(problem, Local(), partitions=2).X is not None  # serial needs no pickle


# ------------------------------------------------------------------ packed policies (merge_parts)

@pytest.mark.parametrize("name", ["max_min_fairness_packed", "water_filling_packed",
                                  "min_makespan_packed"])
def test_packed_policies_under_pop_merge_pairs_and_report_the_whole_objective(name):
    from test_packed import reference_objective
    from schedopt.policies.packed.master import PairTable

    instance = load_instance(ROOT / "instances" / "colocation.json")
    problem = ThroughputProblem.from_instance(instance)
    policy = resolve(name)[0]
    pop = Partitioned(policy, 2, exact_gap=True)
    outcome = pop.solve(problem, policy.parse_options({}), Solver("highs"))
    assert outcome.status is Status.FEASIBLE and outcome.objective is not None
    parts = outcome.details["pop"]["parts"]
    pairs = outcome.details["pairs"]
    assert all(parts[a] == parts[b] for a, b in (p["jobs"] for p in pairs))
    # the objective of the merged allocation and pairs, recomputed here from the document
    if name == "min_makespan_packed":
        steps = np.array([outcome.details["effective_throughput"][j] for j in problem.job_ids])
        active = problem.remaining_steps > 0
        assert outcome.objective == pytest.approx(
            np.max(problem.remaining_steps[active] / steps[active]), rel=1e-9)
        assert outcome.objective >= outcome.details["pop"]["exact_objective"] * (1 - 1e-9)
    else:
        assert pairs  # two parts still share GPUs on this instance
        assert outcome.objective == pytest.approx(
            reference_objective(problem, PairTable.from_instance(instance), outcome), abs=1e-9)
        assert outcome.objective <= outcome.details["pop"]["exact_objective"] + 1e-9
    assert sum(outcome.details["gpus_in_use"].values()) <= problem.capacity.sum() + 1e-9
