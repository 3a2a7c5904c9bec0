"""The packed (space-sharing) policies on an instance: its throughputs and its co-location
table (`performance.colocated`, keyed by the jobs' `type` labels). Max-min fairness, water
filling and makespan, each solved by column generation or as one LP with every pair column
(`master.py` has the LP, `columns.py` the loop, `targets.py` water filling and makespan).

Each emits an ALLOCATION (each job's total time on each type, solo plus paired) and, as
`Outcome.decision`, a `PairedAllocation` (solo time and pairs with their rates), which
`objective()` evaluates and POP merges (`merge_parts`)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal

import numpy as np

from schedopt.core.capabilities import Capability
from schedopt.core.decisions import DecisionKind
from schedopt.core.outcome import Outcome
from schedopt.core.policy import Policy
from schedopt.core.problem import ThroughputProblem
from schedopt.errors import PolicyError
from schedopt.policies.packed.decision import PairedAllocation
from schedopt.policies.packed.master import PairTable, max_min_fairness_packed
from schedopt.policies.packed.targets import min_makespan_packed, water_filling_packed


@dataclasses.dataclass(frozen=True)
class PackedOptions:
    """method: "columns" (column generation, on a backend that adds columns to a loaded LP and
    gives duals) or "dense" (one LP with every candidate pair column, any LP backend; water
    filling: one with duals); prune: drop the pair columns that cannot help (an optimum never
    needs them); seed: start column generation from the pairs of the LP over classes of
    interchangeable jobs."""

    method: Literal["columns", "dense"] = "columns"
    prune: bool = True
    seed: bool = True


def paired(allocation: Any) -> PairedAllocation:
    """A PairedAllocation as it is, or an (M, J) array read as solo time only (no pairs)."""
    if isinstance(allocation, PairedAllocation):
        return allocation
    return PairedAllocation.solo_only(np.asarray(allocation, dtype=float))


def normalized_levels(problem: ThroughputProblem, steps: np.ndarray) -> np.ndarray:
    """(M,) s_m steps_m / (w_m thr^eq_m), dimensionless: max-min fairness' level of each job."""
    return problem.scale_factor * steps / (problem.weight * problem.equal_share_throughput)


class PackedPolicy(Policy):
    """What the packed policies share: options, decision, needs, the instance data they read
    (one-line errors when it is missing), the evaluation of a PairedAllocation and POP's merge."""

    Options = PackedOptions
    decision = DecisionKind.ALLOCATION
    # What the default method (columns) needs; method=dense needs an LP backend only.
    needs = Capability.LP | Capability.DUALS | Capability.ADD_COLUMNS
    default_solver = "highs"
    instance_data = "the co-location table (performance.colocated) and the jobs' type labels"
    formulation: ClassVar = staticmethod(max_min_fairness_packed)

    def check_instance(self, problem: ThroughputProblem) -> None:
        if problem.instance is None:
            raise PolicyError(f"policy {self.name} needs an instance with a co-location table "
                              f"(performance.colocated) and the jobs' type labels, and was given "
                              f"throughput arrays alone")
        if not problem.instance.performance.colocated:
            raise PolicyError(problem.instance.located(
                "performance.colocated", f"policy {self.name} needs a co-location table "
                f"(steps/s of pairs of job types sharing a GPU type), and the instance has none"))

    def solve(self, problem: ThroughputProblem, options: PackedOptions, solver) -> Outcome:
        self.check_instance(problem)
        return self.solve_with_table(problem, PairTable.from_instance(problem.instance), options,
                                     solver)

    def solve_with_table(self, problem: ThroughputProblem, table: PairTable,
                         options: PackedOptions, solver) -> Outcome:
        """Solve with a pair table given directly (e.g. one label per job, as the Gavel adapter
        builds from Gavel's per-pair throughputs)."""
        return type(self).formulation(problem, table, solver, method=options.method,
                                      prune=options.prune, seed=options.seed)

    def objective(self, problem: ThroughputProblem, allocation: Any,
                  options: Any) -> float | None:
        """The objective of a PairedAllocation (an array counts as solo time only)."""
        if problem.num_jobs == 0:
            return None
        return self.evaluate(problem, paired(allocation).steps(problem))

    def evaluate(self, problem: ThroughputProblem, steps: np.ndarray) -> float:
        return float(normalized_levels(problem, steps).min())

    def merge_parts(self, problem: ThroughputProblem, rows: list[np.ndarray],
                    outcomes: list[Outcome]) -> tuple[PairedAllocation, dict]:
        """POP: the parts' decisions (rows: each part's jobs in `problem`) as one decision of
        the whole problem, and its pairs, effective throughputs and GPUs in use."""
        decision = PairedAllocation.merged(
            [(r, paired(o.decision if o.decision is not None else o.allocation))
             for r, o in zip(rows, outcomes)], (problem.num_jobs, problem.num_types))
        steps = decision.steps(problem)
        return decision, {
            "pairs": decision.pairs(problem),
            "effective_throughput": dict(zip(problem.job_ids, steps.tolist())),
            "gpus_in_use": dict(zip(problem.gpu_types, decision.gpus_in_use(problem).tolist()))}


LEVEL = ("min over jobs of s*throughput/(weight*equal-share throughput), throughput counting "
         "paired time (dimensionless)")


class MaxMinFairnessPacked(PackedPolicy):
    """Max-min fairness with space sharing (details: pairs, effective_throughput, gpus_in_use,
    bound, gap and the method's statistics)."""

    name = "max_min_fairness_packed"
    summary = ("Max-min fairness with space sharing: pairs of jobs co-located on the same GPUs "
               "(co-location table), exact by column generation.")
    objective_doc = LEVEL
    formulation = staticmethod(max_min_fairness_packed)


class WaterFillingPacked(PackedPolicy):
    """Lexicographic max-min fairness with space sharing (details as max_min_fairness_packed's,
    plus job_levels, levels and stages)."""

    name = "water_filling_packed"
    summary = ("Lexicographic max-min fairness (water filling) with space sharing "
               "(co-location table), exact by column generation per level.")
    objective_doc = LEVEL + "; each job's in job_levels"
    formulation = staticmethod(water_filling_packed)


class MinMakespanPacked(PackedPolicy):
    """Minimum makespan with space sharing (needs every job's total_steps)."""

    name = "min_makespan_packed"
    summary = ("Minimize the time until every job finishes, with space sharing (co-location "
               "table), exact by column generation.")
    objective_doc = "makespan in seconds, throughput counting paired time"
    formulation = staticmethod(min_makespan_packed)

    def evaluate(self, problem: ThroughputProblem, steps: np.ndarray) -> float:
        """max over jobs with work left of remaining steps / steps/s (seconds)."""
        active = problem.remaining_steps > 0
        if not active.any():
            return 0.0
        with np.errstate(divide="ignore"):
            return float(np.max(problem.remaining_steps[active] / steps[active]))
