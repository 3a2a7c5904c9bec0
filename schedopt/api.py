"""The Python entry points: load an instance, solve it with a policy."""

from __future__ import annotations

from pathlib import Path

from schedopt.backends import SolveOptions
from schedopt.errors import PolicyError
from schedopt.formulations.inputs import ThroughputProblem
from schedopt.instance import load_instance
from schedopt.instance.model import Instance
from schedopt.policies import resolve
from schedopt.result import Result


def as_instance(instance: Instance | str | Path) -> Instance:
    """Accept a path or an Instance and return the Instance."""
    if isinstance(instance, (str, Path)):
        instance = load_instance(instance)
    if not isinstance(instance, Instance):
        raise PolicyError(f"expected an Instance, a ThroughputProblem or a path, "
                          f"got {type(instance).__name__}")
    return instance


def as_problem(instance: Instance | ThroughputProblem | str | Path) -> ThroughputProblem:
    """Accept a path, an Instance or a ThroughputProblem and return the arrays to solve."""
    if isinstance(instance, ThroughputProblem):
        return instance
    return ThroughputProblem.from_instance(as_instance(instance))


def solve(instance: Instance | ThroughputProblem | str | Path, policy: str = "max_min_fairness",
          solver: str | None = None, *, time_limit: float | None = None, mip_gap: float | None = None,
          threads: int | None = None, verbose: bool = False, **policy_options) -> Result:
    """Solve `instance` with `policy` (a name from `schedopt policies` or `gavel:NAME`).

    solver: backend name (highs, highs-ipm, clarabel, glop, pdlp, scip, cbc, cvxpy[:SOLVER]);
    None picks the policy's default (chosen by measurement). time_limit: seconds per solver
    call. Extra keyword arguments are the policy's own options (e.g. `slos=False` for min_cost,
    `seed` for fifo_agnostic, `tolerance` for finish_time_fairness, `alpha` for allox).

    `allox` needs an Instance or a path (CPU machines, cpu_time); its solver is the assignment
    method (auto, scipy, scipy-sparse, ortools, full), its Result has X = None and the schedule
    in `details` (see schedopt.formulations.allox.allox_policy).
    """
    chosen, options = resolve(policy)
    unknown = set(policy_options) - set(chosen.option_names)
    if unknown:
        raise PolicyError(f"policy {chosen.name} has no option(s) {', '.join(sorted(unknown))}; "
                          f"it takes: {', '.join(chosen.option_names) or 'none'}")
    settings = SolveOptions(time_limit=time_limit, mip_gap=mip_gap, threads=threads,
                            verbose=verbose)
    if chosen.reads_instance:  # e.g. allox: needs CPU machines and cpu_time, not just arrays
        if isinstance(instance, ThroughputProblem):
            raise PolicyError(f"policy {chosen.name} needs an instance (a file or an Instance: "
                              f"CPU machines, cpu_time), not a ThroughputProblem")
        instance = as_instance(instance)
        outcome = chosen.run(instance, solver or chosen.solver, settings,
                             **{**options, **policy_options})
        problem = ThroughputProblem.from_instance(instance)
    else:
        problem = as_problem(instance)
        outcome = chosen.run(problem, solver or chosen.solver, settings,
                             **{**options, **policy_options})
    return Result(policy=chosen.name, status=outcome.status, objective=outcome.objective,
                  bound=outcome.bound, solver=outcome.solver, solve_seconds=outcome.solve_seconds,
                  job_ids=problem.job_ids, gpu_types=problem.gpu_types, X=outcome.allocation,
                  throughput=problem.throughput, details=outcome.details)
