"""The Python entry points: load an instance, solve it with a policy."""

from __future__ import annotations

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

    Policies that read more than the throughput matrix (e.g. `allox`: CPU machines,
    cpu_time; a policy's `instance_data` says what) need an Instance or a path.

    partitions=k solves with POP: `Partitioned(policy, k, ...)`
    (`schedopt.policies.partitioned`): k parts run by `executor` ("serial", "process" or
    "ray"), jobs dealt by `partition_method` ("stratified" or "random") with `partition_seed`;
    `previous_parts` ({job id: part}, e.g. the last result's `details["pop"]["parts"]`) keeps
    jobs in their parts. The objective is the coalesced decision's, on the whole instance.
    exact_gap=True also solves the whole instance: `details["pop"]` gains exact_objective,
    exact_seconds and gap (relative, >= 0 when POP is worse), and `bound` becomes the exact
    solve's bound.
    """
    chosen, fixed = resolve(policy) if isinstance(policy, str) else (policy, {})
    if partitions is not None:
        from schedopt.policies.partitioned import Partitioned  # process pools, only for POP

        chosen = Partitioned(chosen, partitions, executor, partition_method, partition_seed,
                             previous_parts, exact_gap)
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
    outcome = chosen.solve(problem, options, session)
    return Result(policy=chosen.name, status=outcome.status, objective=outcome.objective,
                  bound=outcome.bound, solver=outcome.solver, solve_seconds=outcome.solve_seconds,
                  job_ids=problem.job_ids, gpu_types=problem.gpu_types, X=outcome.allocation,
                  throughput=problem.throughput, details=outcome.details,
                  termination=outcome.termination)

