"""The Python entry points: load an instance, solve it with a policy."""

from __future__ import annotations

import time
from pathlib import Path

from schedopt.backends import SolveOptions
from schedopt.errors import PolicyError
from schedopt.core.problem import ThroughputProblem
from schedopt.instance import load_instance
from schedopt.instance.model import Instance
from schedopt.backends.session import Solver
from schedopt.core.registry import resolve
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
          threads: int | None = None, verbose: bool = False, partitions: int | None = None,
          executor: str = "serial", partition_seed: int = 0,
          partition_method: str = "stratified", previous_parts: dict[str, int] | None = None,
          exact_gap: bool = False, **policy_options) -> Result:
    """Solve `instance` with `policy` (a name from `schedopt policies` or `gavel:NAME`).

    solver: backend name (highs, highs-ipm, clarabel, glop, pdlp, scip, cbc, cvxpy[:SOLVER]);
    None picks the policy's default (chosen by measurement). time_limit: seconds per solver
    call. Extra keyword arguments are the policy's own options (e.g. `slos=False` for min_cost,
    `seed` for fifo_agnostic, `tolerance` for finish_time_fairness, `alpha` for allox).

    `allox` needs an Instance or a path (CPU machines, cpu_time); its solver is the assignment
    method (auto, scipy, scipy-sparse, ortools, full), its Result has X = None and the schedule
    in `details` (see schedopt.policies.allox.matching.allox_policy).

    partitions=k solves with POP (`schedopt.policies.pop`): k parts, each with its share of every type,
    run by `executor` ("serial", "process" or "ray"), partitioned by `partition_method`
    ("stratified" or "random") with `partition_seed`; `previous_parts` ({job id: part}, e.g.
    the last result's details["pop"]["parts"]) keeps jobs in their parts. The objective is
    the coalesced allocation's, on the whole instance. exact_gap=True also solves the whole
    instance: details["pop"] gains exact_objective, exact_seconds and gap (relative, >= 0
    when POP is worse), and `bound` becomes the exact solve's bound.
    """
    chosen, fixed = resolve(policy) if isinstance(policy, str) else (policy, {})
    options = chosen.parse_options({**fixed, **policy_options})
    settings = SolveOptions(time_limit=time_limit, mip_gap=mip_gap, threads=threads,
                            verbose=verbose)
    session = solver if isinstance(solver, Solver) else Solver(solver or chosen.default_solver,
                                                                  settings)
    if isinstance(instance, ThroughputProblem):
        problem = instance
    else:
        problem = ThroughputProblem.from_instance(as_instance(instance))
    chosen.check_instance(problem)
    if partitions is None:
        outcome = chosen.solve(problem, options, session)
    elif getattr(chosen, "reads_instance", False):
        if not chosen.partitions_itself:
            raise PolicyError(f"POP (partitions) works with throughput-matrix policies and "
                              f"allox; {chosen.name} is neither")
        if executor != "serial":
            raise PolicyError(f"{chosen.name}'s POP parts run serially (executor 'serial')")
        outcome = chosen.run(problem.instance, session.name, session.settings, **options,
                             partitions=partitions, partition_seed=partition_seed)
    else:
        from schedopt.policies.pop import solve_pop

        outcome = solve_pop(problem, chosen.name, partitions, session.name, session.settings,
                            options, executor=executor, seed=partition_seed,
                            method=partition_method, previous=previous_parts,
                            evaluate=chosen.evaluate)
    if partitions is not None and exact_gap and outcome.objective is not None:
        _add_exact_gap(outcome, lambda: chosen.solve(problem, options, session))
    return Result(policy=chosen.name, status=outcome.status, objective=outcome.objective,
                  bound=outcome.bound, solver=outcome.solver, solve_seconds=outcome.solve_seconds,
                  job_ids=problem.job_ids, gpu_types=problem.gpu_types, X=outcome.allocation,
                  throughput=problem.throughput, details=outcome.details)


def _add_exact_gap(outcome, run_exact) -> None:
    """Solve exactly too: exact_objective, exact_seconds and gap in details["pop"]; the exact
    solve's bound becomes the outcome's."""
    start = time.perf_counter()
    exact = run_exact()
    report = outcome.details["pop"]
    report["exact_seconds"] = time.perf_counter() - start
    report["exact_objective"] = exact.objective
    if exact.objective is not None:
        report["gap"] = abs(outcome.objective - exact.objective) / max(abs(exact.objective), 1e-12)
    outcome.bound = exact.bound
