"""A drop-in for Gavel's policy objects, so Gavel-based simulators can swap schedopt in.

    from schedopt.gavel import get_policy
    policy = get_policy("max_min_fairness_perf")          # Gavel's names, as in its utils.py
    allocation = policy.get_allocation(throughputs, scale_factors, priority_weights, cluster_spec)

Arguments keep Gavel's shapes: `throughputs[job_id][worker_type]` in steps/s,
`scale_factors[job_id]`, `priority_weights[job_id]`, `cluster_spec[worker_type]` = GPU count,
`num_steps_remaining[job_id]`, `times_since_start[job_id]` (s), `instance_costs[worker_type]`
($/h), `SLOs[job_id]` (seconds left). The result is `{job_id: {worker_type: fraction}}`.
Job ids may be any sortable keys (Gavel's JobIdPair included); only single jobs are supported.
"""

from __future__ import annotations

import inspect

import numpy as np

from schedopt.api import solve
from schedopt.errors import PolicyError
from schedopt.policies.gavel.lp import isolated_throughput
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.catalog import GAVEL_ALIASES

# Gavel's positional get_allocation signature for each policy, after `throughputs`.
_SIGNATURES = {
    "max_min_fairness": ("scale_factors", "priority_weights", "cluster_spec"),
    "max_min_fairness_perf": ("scale_factors", "priority_weights", "cluster_spec"),
    "max_min_fairness_water_filling": ("scale_factors", "priority_weights", "cluster_spec"),
    "max_min_fairness_water_filling_perf": ("scale_factors", "priority_weights", "cluster_spec"),
    "finish_time_fairness": ("scale_factors", "priority_weights", "times_since_start",
                             "num_steps_remaining", "cluster_spec"),
    "finish_time_fairness_perf": ("scale_factors", "priority_weights", "times_since_start",
                                  "num_steps_remaining", "cluster_spec"),
    "min_total_duration": ("scale_factors", "num_steps_remaining", "cluster_spec"),
    "min_total_duration_perf": ("scale_factors", "num_steps_remaining", "cluster_spec"),
    "max_sum_throughput_perf": ("scale_factors", "cluster_spec"),
    "max_sum_throughput_normalized_by_cost_perf": ("scale_factors", "cluster_spec",
                                                   "instance_costs"),
    "max_sum_throughput_normalized_by_cost_perf_SLOs": ("scale_factors", "cluster_spec",
                                                        "instance_costs", "SLOs",
                                                        "num_steps_remaining"),
    "isolated": ("scale_factors", "cluster_spec"),
    "fifo": ("scale_factors", "cluster_spec"),
    "fifo_perf": ("scale_factors", "cluster_spec"),
}


def _column(mapping, keys, default=np.nan) -> np.ndarray:
    if mapping is None:
        return np.full(len(keys), default, dtype=float)
    return np.array([mapping.get(k, default) for k in keys], dtype=float)


def build_problem(throughputs, cluster_spec, scale_factors=None, priority_weights=None,
                  num_steps_remaining=None, times_since_start=None, instance_costs=None,
                  SLOs=None, isolated_time=None) -> tuple[list, ThroughputProblem]:
    """Gavel's dicts -> (sorted job ids, ThroughputProblem); types sorted as Gavel does."""
    job_ids = sorted(throughputs)
    types = sorted(cluster_spec)
    T = np.array([[throughputs[job][t] for t in types] for job in job_ids], dtype=float)
    problem = ThroughputProblem.from_arrays(
        T.reshape(len(job_ids), len(types)), _column(scale_factors, job_ids, 1.0),
        _column(priority_weights, job_ids, 1.0), [cluster_spec[t] for t in types],
        job_ids=[str(job) for job in job_ids], gpu_types=types,
        cost_per_hour=_column(instance_costs, types), time_to_deadline=_column(SLOs, job_ids),
        remaining_steps=_column(num_steps_remaining, job_ids),
        time_since_arrival=_column(times_since_start, job_ids, 0.0),
        isolated_time=_column(isolated_time, job_ids, 0.0))
    return job_ids, problem


class GavelPolicy:
    """One Gavel policy by its Gavel name; `get_allocation` takes Gavel's arguments.

    Like Gavel's finish-time-fairness policy it remembers, across calls, each job's isolated
    time credited so far (steps done since the last call / isolated throughput then).
    """

    def __init__(self, name: str, solver: str | None = None, **options):
        if name not in _SIGNATURES:
            raise PolicyError(f"unsupported Gavel policy {name!r}; supported: "
                              f"{', '.join(sorted(_SIGNATURES))}")
        self.name = name
        self.solver = solver
        self.options = options
        self._isolated_time: dict = {}
        self._previous: dict = {}  # job -> (steps remaining, isolated steps/s) at the last call

    def get_allocation(self, throughputs, *args, **kwargs) -> dict | None:
        params = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                    for n in _SIGNATURES[self.name]])
        bound = params.bind(*args, **kwargs).arguments
        if not throughputs:
            self._previous = {}
            return None
        remaining = bound.get("num_steps_remaining")
        self._credit_isolated_time(remaining)
        job_ids, problem = build_problem(throughputs, isolated_time=self._isolated_time, **bound)
        slos = {"slos": True} if self.name.endswith("_SLOs") else {}
        result = solve(problem, f"gavel:{self.name}", self.solver, **slos, **self.options)
        if result.X is None:
            raise PolicyError(f"{self.name}: no allocation ({result.status.value})")
        if remaining is not None:
            iso = isolated_throughput(problem)  # as the FTF policy's own denominator uses
            self._previous = {job: (remaining[job], iso[m]) for m, job in enumerate(job_ids)}
        return {job: dict(zip(problem.gpu_types, row)) for job, row in zip(job_ids, result.X.tolist())}

    def _credit_isolated_time(self, remaining) -> None:
        if remaining is None:
            return
        for job, (before, iso) in self._previous.items():
            if job in remaining and iso > 0:
                credit = float((before - remaining[job]) / iso)
                self._isolated_time[job] = self._isolated_time.get(job, 0.0) + credit


def get_policy(name: str, solver: str | None = None, **options) -> GavelPolicy:
    """A Gavel-compatible policy object for Gavel's policy `name` (see GAVEL_ALIASES)."""
    if name not in GAVEL_ALIASES:
        raise PolicyError(f"unknown Gavel policy {name!r}")
    return GavelPolicy(name, solver, **options)


def get_allocation(policy: str, throughputs, *args, solver: str | None = None,
                   **kwargs) -> dict | None:
    """One-shot: `get_policy(policy, solver).get_allocation(throughputs, *args, **kwargs)`."""
    return get_policy(policy, solver).get_allocation(throughputs, *args, **kwargs)
