"""The `max_min_fairness_packed` policy on an instance: its throughputs and its co-location
table (`performance.colocated`, keyed by the jobs' `type` labels), solved by column generation
or as one LP with every pair column (`master.py` has the LP, `columns.py` the loop)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from schedopt.core.capabilities import Capability
from schedopt.core.decisions import DecisionKind
from schedopt.core.outcome import Outcome
from schedopt.core.policy import Policy
from schedopt.policies.packed.master import PairTable, max_min_fairness_packed


@dataclasses.dataclass(frozen=True)
class PackedOptions:
    """method: "columns" (column generation, on a backend that adds columns to a loaded LP and
    gives duals) or "dense" (one LP with every candidate pair column, any LP backend); prune:
    drop the pair columns that cannot help (an optimum never needs them); seed: start column
    generation from the pairs of the LP over classes of interchangeable jobs."""

    method: Literal["columns", "dense"] = "columns"
    prune: bool = True
    seed: bool = True


class MaxMinFairnessPacked(Policy):
    """Max-min fairness with space sharing (decision ALLOCATION: each job's total time on each
    type, solo plus paired; details: pairs, effective_throughput, gpus_in_use, bound, gap and
    the method's statistics)."""

    name = "max_min_fairness_packed"
    summary = ("Max-min fairness with space sharing: pairs of jobs co-located on the same GPUs "
               "(co-location table), exact by column generation.")
    objective_doc = ("min over jobs of s*throughput/(weight*equal-share throughput), throughput "
                     "counting paired time (dimensionless)")
    Options = PackedOptions
    decision = DecisionKind.ALLOCATION
    # What the default method (columns) needs; method=dense needs an LP backend only.
    needs = Capability.LP | Capability.DUALS | Capability.ADD_COLUMNS
    default_solver = "highs"
    instance_data = "the co-location table (performance.colocated) and the jobs' type labels"

    def solve(self, problem, options: PackedOptions, solver) -> Outcome:
        return max_min_fairness_packed(problem, PairTable.from_instance(problem.instance), solver,
                                       method=options.method, prune=options.prune,
                                       seed=options.seed)
