"""The parameter-server policies on an instance: `smd`, `smd_exact`, `smd_equal_split`,
`smd_greedy` (as `schedopt solve FILE --policy smd` and `schedopt.solve(instance, "smd")` run
them). Every job needs `parameter_server`, every node the resources tasks ask for
(docs/instance-format.md); the model and algorithms are in docs/smd.md.

Outcome: no allocation (the decision is counts and a placement, not time fractions); objective
= sum over jobs of the completion time T_i(w_i, p_i), seconds, all jobs starting now; bound:
a proven lower bound, seconds (smd_exact's from the solver, smd's the larger of its Lagrangian
one and the LP relaxation's, checked from HiGHS's duals; None for the baselines). details: `workers`, `ps` {job id:
int}, `placement` {job id: {machine id: {"workers": n, "ps": m}}} (machines holding some of
its tasks), `completion_time_s` {job id: seconds}, `machines` (ids, in order) and each
method's own statistics.
"""

from __future__ import annotations

import dataclasses

from schedopt.backends import SolveOptions
from schedopt.errors import PolicyError
from schedopt.core.capabilities import Capability
from schedopt.core.decisions import DecisionKind, PsConfiguration
from schedopt.core.outcome import Outcome
from schedopt.core.policy import Policy
from schedopt.policies.smd.algorithm import (DEFAULT_EPSILON, DEFAULT_MAX_ITERATIONS,
                                             DEFAULT_LNS_STEPS, DEFAULT_SEARCH_STEPS, DEFAULT_TIME_LIMIT,
                                             DEFAULT_UPGRADE_TRIES, PLACE_WORK, REPACK_PATIENCE,
                                             SmdSolution, smd)
from schedopt.policies.smd.baselines import equal_split, optimus_greedy
from schedopt.policies.smd.exact import DEFAULT_SOLVER, smd_exact
from schedopt.policies.smd.model import SmdProblem
from schedopt.instance.model import Instance

HEURISTIC = "numpy"  # the `solver` of the policies that call no solver


def _outcome(problem: SmdProblem, result: SmdSolution, solver: str) -> Outcome:
    details = dict(result.details)
    if result.placement is not None:
        ids, machines = problem.job_ids, problem.machine_ids
        X, Y = result.placement.workers, result.placement.ps
        T = problem.completion_time(result.workers, result.ps)
        details["workers"] = {job: int(w) for job, w in zip(ids, result.workers)}
        details["ps"] = {job: int(p) for job, p in zip(ids, result.ps)}
        details["placement"] = {
            job: {m: {"workers": int(X[i, h]), "ps": int(Y[i, h])}
                  for h, m in enumerate(machines) if X[i, h] or Y[i, h]}
            for i, job in enumerate(ids)}
        details["completion_time_s"] = {job: float(t) for job, t in zip(ids, T)}
    details["machines"] = list(problem.machine_ids)
    return Outcome.from_status(None, result.status, result.objective, result.bound, result.solve_seconds,
                   solver, details)


def _no_solver(policy: str, solver: str) -> None:
    if solver not in (HEURISTIC, "auto"):
        raise PolicyError(f"policy {policy} calls no solver (it is numpy code); got solver "
                          f"{solver!r}. smd_exact takes a MILP solver (cpsat, scip, cbc)")


def smd_policy(instance: Instance, solver: str, options: SolveOptions,
               epsilon: float = DEFAULT_EPSILON, max_iterations: int = DEFAULT_MAX_ITERATIONS,
               search_steps: int = DEFAULT_SEARCH_STEPS, seed: int = 0,
               place_limit: float = PLACE_WORK, lns_steps: int = DEFAULT_LNS_STEPS,
               upgrade_tries: int = DEFAULT_UPGRADE_TRIES,
               repack_patience: int = REPACK_PATIENCE) -> Outcome:
    """SMD (schedopt.policies.smd.algorithm): epsilon is the stopping tolerance of the sum-of-ratios
    residuals (0 < epsilon < 1), max_iterations caps its Newton iterations, search_steps the
    ruin-and-recreate steps after the paper's method, seed its random choices, place_limit the
    work CP-SAT may do to place the Lagrangian bound's choice where first fit and a tabu search
    cannot, in its deterministic time (about seconds of one core; the same answer whatever the
    machine's load; 0, the default: not tried; then CP-SAT runs only when nothing else places
    one worker and one PS per job), lns_steps the
    steps of the large-neighbourhood search over the exact MILP (CP-SAT; 0: none), upgrade_tries
    the CP-SAT placements of one job's extra task after it (0, the default: none),
    repack_patience the changes of one task in a row that the repacking step tries without
    placing one before it stops (0: no repacking). options.time_limit
    (CPU seconds of the whole call, default DEFAULT_TIME_LIMIT) stops the search early."""
    _no_solver("smd", solver)
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not 0 < epsilon < 1:
        raise PolicyError(f"epsilon must be a number in (0, 1), got {epsilon!r}")
    for name, value, least in (("max_iterations", max_iterations, 1),
                               ("search_steps", search_steps, 0), ("seed", seed, 0),
                               ("lns_steps", lns_steps, 0), ("upgrade_tries", upgrade_tries, 0),
                               ("repack_patience", repack_patience, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise PolicyError(f"{name} must be an integer >= {least}, got {value!r}")
    if isinstance(place_limit, bool) or not isinstance(place_limit, (int, float)) \
            or not 0 <= place_limit < float("inf"):
        raise PolicyError(f"place_limit must be a number >= 0 (CP-SAT deterministic time), got {place_limit!r}")
    problem = SmdProblem.from_instance(instance)
    limit = DEFAULT_TIME_LIMIT if options.time_limit is None else options.time_limit
    return _outcome(problem, smd(problem, float(epsilon), max_iterations, search_steps, seed,
                                 time_limit=limit, place_limit=min(float(place_limit), limit),
                                 lns_steps=lns_steps, upgrade_tries=upgrade_tries,
                                 repack_patience=repack_patience),
                    HEURISTIC)


def equal_split_policy(instance: Instance, solver: str, options: SolveOptions) -> Outcome:
    """Baseline: a fixed equal split of every resource (schedopt.policies.smd.baselines)."""
    _no_solver("smd_equal_split", solver)
    problem = SmdProblem.from_instance(instance)
    return _outcome(problem, equal_split(problem), HEURISTIC)


def greedy_policy(instance: Instance, solver: str, options: SolveOptions) -> Outcome:
    """Baseline: Optimus-style greedy, one task at a time by marginal gain per dominant share."""
    _no_solver("smd_greedy", solver)
    problem = SmdProblem.from_instance(instance)
    return _outcome(problem, optimus_greedy(problem), HEURISTIC)


@dataclasses.dataclass(frozen=True)
class SmdOptions:
    """epsilon: stopping tolerance of the sum-of-ratios residuals, in (0, 1); max_iterations:
    cap on its Newton iterations; search_steps: ruin-and-recreate steps after the paper's
    method; seed: the search's random choices; place_limit: CP-SAT deterministic time (about
    seconds of one core) to place the Lagrangian bound's configuration choice where first fit
    and a tabu search cannot (0, the default: not tried); lns_steps: steps
    of the large-neighbourhood search over the exact MILP after the numpy search (CP-SAT, a few
    jobs at a time; 0: none); upgrade_tries: CP-SAT placements of one job's extra task after
    it (0, the default: none); repack_patience: changes of one task in a row the repacking
    step tries without placing one (numpy tabu search; 0: none)."""

    epsilon: float = DEFAULT_EPSILON
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    search_steps: int = DEFAULT_SEARCH_STEPS
    seed: int = 0
    place_limit: float = PLACE_WORK
    lns_steps: int = DEFAULT_LNS_STEPS
    upgrade_tries: int = DEFAULT_UPGRADE_TRIES
    repack_patience: int = REPACK_PATIENCE


class _SmdPolicy(Policy):
    """A parameter-server policy: the decision is a `PsConfiguration` (no allocation)."""

    objective_doc = "sum of completion times, seconds"
    decision = DecisionKind.PS_CONFIGURATION
    needs = Capability.none()
    default_solver = None
    instance_data = "machines, leases or parameter servers"
    run = None

    def solve(self, problem, options, solver) -> Outcome:
        # For one release the pseudo-solver names "numpy" / "auto" are accepted (no solver).
        name = HEURISTIC if solver.name is None else solver.name
        return _with_decision(type(self).run(problem.instance, name, solver.settings,
                                             **dataclasses.asdict(options)))


def _with_decision(outcome: Outcome) -> Outcome:
    d = outcome.details
    if "workers" in d:
        outcome.decision = PsConfiguration(d["workers"], d["ps"], d["placement"],
                                           d["completion_time_s"])
    return outcome


class Smd(_SmdPolicy):
    name = "smd"
    summary = ("Parameter-server jobs: workers and PSs per job and their placement, min total "
               "completion time (SMD: sum-of-ratios + knapsack decomposition; option epsilon).")
    Options = SmdOptions
    run = smd_policy


class SmdExact(_SmdPolicy):
    name = "smd_exact"
    summary = ("Parameter-server jobs, exact: MILP over (w, p) configuration binaries "
               "with placement.")
    needs = Capability.MILP
    default_solver = DEFAULT_SOLVER

    def solve(self, problem, options, solver) -> Outcome:
        """The exact MILP over configuration binaries (schedopt.policies.smd.exact), on the
        MILP backend `solver` (refused in one line when it has no MILP)."""
        try:
            solver.require(Capability.MILP, self.name)
        except PolicyError as err:
            raise PolicyError(f"smd_exact is a MILP; {err}") from None
        data = SmdProblem.from_instance(problem.instance)
        outcome = _outcome(data, smd_exact(data, solver), solver.name)
        return _with_decision(outcome)


class SmdEqualSplit(_SmdPolicy):
    name = "smd_equal_split"
    summary = ("Parameter-server baseline: every job its fastest (w, p) within 1/n of every "
               "resource.")
    run = equal_split_policy


class SmdGreedy(_SmdPolicy):
    name = "smd_greedy"
    summary = ("Parameter-server baseline (Optimus-style): add the worker or PS with the largest "
               "marginal gain per dominant share.")
    run = greedy_policy

