"""The `chronus` policy: one lease boundary of an instance, as `schedopt solve --policy chronus`
and `schedopt.solve(instance, "chronus")` run it (and a simulator can call every lease).

Every queued job is active at `instance.now`. The SLO jobs go through admission control in
arrival order (ties: file order) against an empty reservation map; then the lease MILP and the
shortest-remaining-service fill of `chronus_boundary.plan_boundary` decide the next lease.
"""

from __future__ import annotations

import dataclasses
import functools
import time

import numpy as np

from schedopt.backends import SolveOptions, Status
from schedopt.backends.session import Solver
from schedopt.core.capabilities import Capability
from schedopt.core.decisions import DecisionKind, LeasePlan
from schedopt.core.events import LeaseBoundary, event_of
from schedopt.core.outcome import Outcome
from schedopt.core.policy import Policy
from schedopt.policies.chronus.boundary import (
    BOUNDARY_DEFAULTS,
    DEFAULT,
    DEFAULT_HORIZON_SECONDS,
    DEFAULT_SLOTS_PER_DOUBLING,
    LeaseInstance,
    LeaseSettings,
    admit_arrivals,
    demote_hopeless,
    entry_default,
    fill_in_order,
    fill_order,
    lease_grid,
    plan_boundary,
    slot_leases,
)
from schedopt.instance.model import Instance
from schedopt.policies.chronus.lease_milp import DEFAULT_SOLVER
from schedopt.policies.chronus.pools import plan_pools

ALL_TYPES = "all"  # gpu_type option: every GPU type, the lease MILP choosing each job's type

DEFAULT_TIME_LIMIT = 5.0  # seconds per lease MILP, as in Chronus's artifact


def chronus_policy(instance: Instance, solver: Solver | str, options: SolveOptions | None = None,
                   lease_seconds: float = 1200.0, resume_overhead_s: float = 30.0,
                   horizon_leases: int | None = None, sigma: float | str = "adaptive",
                   gpu_type: str | None = None, round_up: bool = True,
                   horizon_seconds: float | None = DEFAULT_HORIZON_SECONDS,
                   slots_per_doubling: int = DEFAULT_SLOTS_PER_DOUBLING,
                   run_through: bool | None = None,
                   resume_overhead_per: str = "run", work_conserving: bool = True,
                   fill: str = "deadline", readmit: bool = False,
                   repack: bool = False, others: str = "auto", tails: bool = True,
                   lazy: bool | str = DEFAULT, search: bool | str = DEFAULT) -> Outcome:
    """Who holds the pool's GPUs in the next lease (options: `LeaseSettings`, `LeaseInstance`).

    Outcome: allocation (M, J) = 1 on the pool's GPU type for the jobs holding GPUs in lease 0,
    else 0; objective / bound: the lease MILP's (sum of chosen option values + sigma term), 0
    when no SLO job can be planned; status: the MILP's. details: `leases` {job id: lease
    indices held, 0 = the next lease} for every job the plan schedules and the best-effort jobs
    that get lease 0, `admitted` and `rejected` (SLO job ids), `running` (job ids in lease 0),
    `lease_seconds`, `gpu_type`, `gpus` (pool size), `sigma` (as used), `gap`,
    `used_fallback`, `milp_seconds`. solver: the Solver session every lease MILP runs on (a
    backend name builds one with `options`); its time limit defaults to 5 s per lease MILP.
    work_conserving concerns the time between boundaries of a simulation (nothing here). lazy
    and search DEFAULT ("default"): `boundary.BOUNDARY_DEFAULTS` (False and True), the lease
    MILP's own plan of the boundary, solved as far as the time limit allows.
    """
    clock = time.perf_counter()
    session = solver if isinstance(solver, Solver) else Solver(solver, options)
    lazy = entry_default(lazy, "lazy", BOUNDARY_DEFAULTS)
    search = entry_default(search, "search", BOUNDARY_DEFAULTS)
    settings = _settings(session, lease_seconds, resume_overhead_s, horizon_leases, sigma,
                         horizon_seconds, slots_per_doubling, run_through, resume_overhead_per,
                         fill, repack, others, tails, lazy, search)
    if gpu_type == ALL_TYPES and len(instance.cluster.gpu_types) > 1:
        return _pools_outcome(instance, settings, round_up, session, clock)
    if gpu_type == ALL_TYPES:
        gpu_type = None
    data = LeaseInstance.from_instance(instance, gpu_type, round_up)
    everyone = np.arange(data.num_jobs)
    jobs = data.lease_jobs(everyone, data.run_s)
    arriving = np.lexsort((everyone, data.arrival))
    admitted, reserved = admit_arrivals(jobs, np.zeros(data.num_jobs, dtype=bool), arriving,
                                        {}, data.capacity, instance.now, settings)
    decision = plan_boundary(jobs, admitted, data.capacity, instance.now, settings, session,
                             reserved=reserved)
    plan = decision.plan
    ids = data.ids
    leases = {ids[i]: [0] for i in np.flatnonzero(decision.running)}
    if plan is not None:
        width = lease_grid(instance.now, settings)
        leases.update({ids[decision.planned[i]]: list(slot_leases(width, held))
                       for i, held in plan.leases.items() if held})
    X = np.zeros((data.num_jobs, len(instance.cluster.gpu_types)))
    X[decision.running, list(instance.cluster.gpu_types).index(data.gpu_type)] = 1.0
    slo = jobs.is_slo
    details = {
        "leases": leases,
        "admitted": ids[admitted].tolist(),
        "rejected": ids[slo & ~admitted].tolist(),
        "running": ids[decision.running].tolist(),
        "lease_seconds": settings.lease_seconds, "gpu_type": data.gpu_type,
        "gpus": int(data.capacity), "sigma": decision.sigma,
        "gap": None if plan is None else plan.gap,
        "used_fallback": False if plan is None else plan.used_fallback,
        "milp_seconds": None if plan is None else plan.solve_seconds,
    }
    return _outcome(X, plan, details, session, clock)


def _settings(session: Solver, lease_seconds, resume_overhead_s, horizon_leases, sigma,
              horizon_seconds, slots_per_doubling, run_through,
              resume_overhead_per, fill="deadline", repack=False, others="plan",
              tails=True, lazy=False, search=True) -> LeaseSettings:
    """The lease settings of the options, the MILP on the session's backend within its time
    limit (DEFAULT_TIME_LIMIT s when it has none)."""
    limit = session.settings.time_limit
    return LeaseSettings(lease_seconds, resume_overhead_s, horizon_leases, sigma,
                         session.name or DEFAULT_SOLVER,
                         DEFAULT_TIME_LIMIT if limit is None else limit, horizon_seconds,
                         slots_per_doubling, run_through, resume_overhead_per, fill=fill,
                         repack=repack, others=others, tails=tails, lazy=lazy, search=search)


def _grown(memory: dict, key: str, size: int, dtype=bool) -> np.ndarray:
    """memory[key], an array over the run's jobs, grown to at least `size` entries."""
    have = memory.get(key)
    if have is None or have.size < size:
        grown = np.zeros(max(size, 2 * (0 if have is None else have.size)), dtype=dtype)
        if have is not None:
            grown[:have.size] = have
        memory[key] = have = grown
    return have


@functools.lru_cache(maxsize=16)
def _online_settings(options: "ChronusOptions", solver_name: str | None,
                     time_limit: float | None) -> LeaseSettings:
    """The lease settings of a run's options (the same at every boundary: kept here rather
    than in the run's memory, which holds only what a checkpoint can write)."""
    fields = {f.name: getattr(options, f.name) for f in dataclasses.fields(ChronusOptions)
              if f.name not in ("gpu_type", "round_up", "readmit")}
    limit = DEFAULT_TIME_LIMIT if time_limit is None else time_limit
    return LeaseSettings(**fields, solver=solver_name or DEFAULT_SOLVER, time_limit=limit)


def chronus_online(boundary: LeaseBoundary, options: ChronusOptions, solver: Solver) -> Outcome:
    """Chronus at one boundary of a run (`LeaseBoundary` with its run state): admitted jobs
    that can no longer meet any deadline option are demoted (best effort from then on), the
    SLO jobs that arrived go through admission control against the reservations of the
    admitted ones, then the lease MILP and the shortest-remaining-service fill decide the next
    lease (`plan_boundary`). Kept in `boundary.memory` from one boundary to the next: admitted
    and demoted (bool over the run's jobs, by `run_index`), reserved ({run index: absolute
    lease numbers}) and credited ((lease number, run indices): `chronus_between`). The allocation (n, 1) marks the jobs holding GPUs in the next lease;
    details: gap, used_fallback and milp_seconds of the lease MILP, demoted (job ids)."""
    clock = time.perf_counter()
    memory = {} if boundary.memory is None else boundary.memory  # None: a boundary on its own
    n = boundary.jobs.num_jobs
    index = np.arange(n) if boundary.run_index is None else boundary.run_index
    settings = _online_settings(options, solver.name, solver.settings.time_limit)
    jobs, now = boundary.jobs, boundary.now
    size = int(index.max()) + 1 if n else 0
    ever_admitted = _grown(memory, "admitted", size)
    ever_demoted = _grown(memory, "demoted", size)
    reserved_run: dict[int, tuple[int, ...]] = memory.setdefault("reserved", {})
    lease = int(np.floor(now / settings.lease_seconds + 1e-9))
    held = boundary.held
    admitted = ever_admitted[index]
    demote = demote_hopeless(jobs, admitted, now, settings, held)
    admitted &= ~demote
    position = np.full(size, -1, dtype=np.int64)
    position[index] = np.arange(n)
    reserved = {}
    for g, leases in reserved_run.items():
        i = int(position[g]) if g < size else -1
        if i >= 0 and admitted[i]:
            reserved[i] = tuple(t - lease for t in leases if t >= lease)
    new = np.arange(n) if boundary.arrived is None else np.flatnonzero(boundary.arrived)
    arriving = new[np.lexsort((new, boundary.arrival[new]))]
    if options.readmit and boundary.arrived is not None:
        # SLO jobs turned away before (never admitted, not demoted) try again after the
        # arrivals, earliest deadline first: capacity freed since (jobs that ran early or
        # finished) may now hold them without touching any reservation.
        again = np.flatnonzero(jobs.is_slo & ~ever_admitted[index] & ~ever_demoted[index]
                               & ~boundary.arrived)
        arriving = np.concatenate([arriving,
                                   again[np.lexsort((again, boundary.deadline[again]))]])
    admitted, reserved = admit_arrivals(jobs, admitted, arriving, reserved, boundary.capacity,
                                        now, settings, held)
    decision = plan_boundary(jobs, admitted, boundary.capacity, now, settings, solver, held,
                             reserved)
    demote[decision.unplaced] = True
    ever_demoted[index[demote]] = True
    admitted &= ~demote
    ever_admitted[index] = admitted
    memory["reserved"] = {int(index[i]): tuple(int(t) + lease for t in leases)
                          for i, leases in decision.reserved.items()}
    memory["credited"] = (lease, tuple(int(g) for g in index[decision.credited]))
    ids, running, plan = boundary.ids, decision.running, decision.plan
    leases = {ids[i]: [0] for i in np.flatnonzero(running)}
    leases.update({ids[i]: list(t) for i, t in decision.reserved.items() if t})
    details = {"gap": None if plan is None else plan.gap,
               "used_fallback": None if plan is None else plan.used_fallback,
               "milp_seconds": None if plan is None else plan.solve_seconds,
               "demoted": ids[demote].tolist()}
    outcome = _outcome(running[:, None].astype(float), plan, details, solver, clock)
    outcome.decision = LeasePlan(leases, ids[running].tolist(), ids[admitted].tolist(),
                                 ids[jobs.is_slo & ~admitted].tolist(), settings.lease_seconds,
                                 boundary.gpu_type)
    return outcome


def chronus_between(boundary: LeaseBoundary, options: ChronusOptions,
                     solver: Solver) -> Outcome:
    """Chronus between two boundaries (`LeaseBoundary.until` set): the idle GPUs go to the
    waiting jobs in the order of the boundary's fill (`fill_order`: by default SLO jobs that
    can still meet a deadline, earliest first, then shortest remaining service); a job that
    does not fit is skipped. Admitted jobs the boundary's plan credited with GPUs freed in this
    lease (`boundary.lease_zero_credit`; their guarantee counts on it) come first, in that
    order, and while one of them waits no other job starts. No admission, no MILP: the
    admitted jobs' reservations are untouched (the GPUs are idle until the next boundary, and a
    job that runs early only needs less later)."""
    clock = time.perf_counter()
    jobs, n = boundary.jobs, boundary.jobs.num_jobs
    settings = _online_settings(options, solver.name, solver.settings.time_limit)
    running = np.zeros(n, dtype=bool)
    first = fill_order(jobs, _credited_waiting(boundary, settings), boundary.now, settings)
    running[fill_in_order(jobs.gpus, first, boundary.capacity)] = True
    if running.sum() == first.size:  # no credited job waits: the fill's order
        order = fill_order(jobs, np.flatnonzero(~running), boundary.now, settings)
        free = boundary.capacity - int(jobs.gpus[running].sum())
        running[fill_in_order(jobs.gpus, order, free)] = True
    ids = boundary.ids
    outcome = Outcome.from_status(running[:, None].astype(float), Status.FEASIBLE, None, None,
                                  time.perf_counter() - clock, "chronus", {})
    outcome.decision = LeasePlan({ids[i]: [0] for i in np.flatnonzero(running)},
                                 ids[running].tolist(), [], [], boundary.lease_seconds,
                                 boundary.gpu_type)
    return outcome


def _credited_waiting(boundary: LeaseBoundary, settings: LeaseSettings) -> np.ndarray:
    """Indices of the boundary's waiting jobs that the last boundary's plan credited with
    GPUs freed in this lease (`BoundaryDecision.credited`)."""
    lease, credited = (boundary.memory or {}).get("credited", (-1, ()))
    if not credited or lease != int(np.floor(boundary.now / settings.lease_seconds + 1e-9)):
        return np.zeros(0, dtype=np.int64)
    index = np.arange(boundary.jobs.num_jobs) if boundary.run_index is None \
        else np.asarray(boundary.run_index)
    where = {int(g): i for i, g in enumerate(index)}
    return np.array([where[g] for g in credited if g in where], dtype=np.int64)


def _outcome(X: np.ndarray, plan, details: dict, session: Solver, clock: float) -> Outcome:
    """The Outcome of a boundary's plan (a `ChronusPlan` or `PoolPlan`; None: no SLO job could
    be planned, optimal with objective 0)."""
    if plan is None:
        return Outcome.from_status(X, Status.OPTIMAL, 0.0, 0.0, time.perf_counter() - clock,
                                   session.name, details)
    return Outcome.from_status(X, plan.status, plan.objective, plan.bound,
                               time.perf_counter() - clock, session.name, details)


def _pools_outcome(instance: Instance, settings: LeaseSettings, round_up: bool, session: Solver,
                   clock: float) -> Outcome:
    """`chronus_policy` over every GPU type (`pools.plan_pools`); details as there, plus `pools`
    {job id: GPU type} for the jobs of `leases`, and `gpu_type` the types joined by ",". """
    d = plan_pools(instance, settings, round_up, session)
    ids, plan = d.ids, d.plan
    X = np.zeros((ids.size, len(d.types)))
    X[d.running, d.pool[d.running]] = 1.0
    details = {
        "leases": {ids[j]: list(held) for j, held in sorted(d.leases.items()) if held},
        "pools": {ids[j]: d.types[d.pool[j]] for j in sorted(d.leases) if d.leases[j]},
        "admitted": ids[d.admitted].tolist(), "rejected": ids[d.slo & ~d.admitted].tolist(),
        "running": ids[d.running].tolist(), "lease_seconds": settings.lease_seconds,
        "gpu_type": ",".join(d.types), "gpus": int(sum(t.count for t in
                                                       instance.cluster.gpu_types.values())),
        "sigma": d.sigma,
        "gap": None if plan is None else plan.gap,
        "used_fallback": False if plan is None else plan.source == "greedy",
        "milp_seconds": None if plan is None else plan.solve_seconds,
    }
    return _outcome(X, plan, details, session, clock)


@dataclasses.dataclass(frozen=True)
class ChronusOptions:
    """lease_seconds, resume_overhead_s: seconds; horizon_leases: leases planned one by one
    from now (full resolution; None: 96 at 20-min leases, fewer for shorter ones, see
    `LeaseSettings.fine_leases`); horizon_seconds: the planning window in seconds (default 32 h;
    None: exactly horizon_leases leases, the window before it was set in time), past the first
    horizon_leases leases planned in slots of 2, 4, 8... leases; slots_per_doubling: slots of
    one width before the width doubles; sigma: weight of the GPUs of SLO jobs in the next
    lease, or "adaptive"; run_through: plan a job that can only meet its deadline by running
    every lease from now (None: when the resume overhead is >= 5% of a lease); gpu_type: the
    pool (None: the type with the most GPUs; "all": every type, the lease MILP choosing each
    job's type by its steps/s there);
    round_up: round GPU counts up to 1, 2, 4, 8n; resume_overhead_per: "run" counts the resume
    overhead once per run of consecutive leases a job holds, as a simulation charges it,
    "lease" in every lease (conservative; see `LeaseSettings`); work_conserving: in a simulation,
    GPUs idle between boundaries go at once to waiting jobs (`chronus_between`); fill: who
    gets the GPUs the lease MILP leaves free, "deadline" (SLO jobs that can still meet a
    deadline, earliest first, then shortest remaining service) or "service" (shortest
    remaining service, Chronus's artifact; `boundary.fill_order`); readmit: in a simulation,
    SLO jobs admission turned away try again at every later boundary (default False: only when
    they arrive, as in Chronus's artifact); repack: admission may re-pack the admitted jobs'
    reservations to make room (`boundary.admit_arrivals`; default False). Measured on
    benchmarks/chronus_lease_lengths.py, both admit more jobs at tight deadlines and miss more
    at loose ones. others: which SLO jobs without a guarantee the lease MILP plans, "plan"
    (all, by value), "fill" (none: the earliest-deadline fill runs them) or "auto" (the
    default: those an earliest-deadline-first projection says would miss); tails: with the
    overhead counted per run, plans may use the part of the lease a deadline falls in
    (default True; `LeaseSettings`); lazy: the next lease goes to the jobs in the fill's
    earliest-deadline order whenever the admitted jobs' rest of work still fits after it (a
    latest-fit packing, else the lease MILP over the leases after it), else as the lease MILP
    plans it (`boundary.plan_boundary`); "auto" only while the median admitted job's slack is
    at least half its running time left (`boundary.lazy_now`); search: True runs the lease
    MILP's solver stages within the time limit (wall clock), False its LP and roundings only, a
    plan that does not depend on the machine's load (`LeaseSettings`). lazy and search "default"
    (`boundary.DEFAULT`, the defaults) take the entry point's: in a run (lease by lease)
    `boundary.RUN_DEFAULTS`, "auto" and False, so that a run is the same at any load; for one
    boundary (`chronus_policy`, schedopt solve) `boundary.BOUNDARY_DEFAULTS`, False and True,
    the lease MILP's plan solved as far as the time limit allows. With lazy guarantees in a
    work-conserving run, admitted jobs may be counted to start in the next lease on GPUs that
    jobs finishing in it free (`boundary.lease_zero_credit`); such GPUs then go to them
    first."""

    lease_seconds: float = 1200.0
    resume_overhead_s: float = 30.0
    horizon_leases: int | None = None
    sigma: float | str = "adaptive"
    gpu_type: str | None = None
    round_up: bool = True
    horizon_seconds: float | None = DEFAULT_HORIZON_SECONDS
    slots_per_doubling: int = DEFAULT_SLOTS_PER_DOUBLING
    run_through: bool | None = None
    resume_overhead_per: str = "run"
    work_conserving: bool = True
    fill: str = "deadline"
    readmit: bool = False
    repack: bool = False
    others: str = "auto"
    tails: bool = True
    lazy: bool | str = DEFAULT
    search: bool | str = DEFAULT


class Chronus(Policy):
    """Deadline-aware leases on one GPU type (see `chronus_policy`); the decision is a
    `LeasePlan`, the allocation (M, J) marks the jobs holding GPUs in the next lease.

    The planning window is set in time (`horizon_seconds`, 32 h by default) at any lease
    length L (s): the first `horizon_leases` leases are planned one by one, farther ones in
    aligned slots of w = 2, 4, 8... leases, about `slots_per_doubling` slots per doubling of
    the distance (w <= distance / slots_per_doubling). A job holding a slot holds its GPUs
    for all of it; the slot counts w of the leases it needs (each as if it paid the resume
    overhead). At 20-min leases the default window is the 96 single leases of Chronus's
    artifact. With gpu_type="all" the lease MILP plans every GPU type and picks each job's
    (`pools`). docs/formulations.md §3 has the MILPs.
    """

    name = "chronus"
    summary = ("Deadline-aware leases (Chronus): admission control, lease MILP for SLO jobs, "
               "shortest remaining service for the rest, on one GPU type or (gpu_type=all) all.")
    objective_doc = ("sum of chosen deadline-option values + sigma x (GPUs of SLO jobs in the "
                     "next lease) / pool size")
    Options = ChronusOptions
    decision = DecisionKind.LEASES
    needs = Capability.MILP
    default_solver = DEFAULT_SOLVER
    instance_data = "machines, leases or parameter servers"

    def solve(self, problem, options: ChronusOptions, solver) -> Outcome:
        boundary = event_of(problem, LeaseBoundary)
        if boundary is not None and boundary.until is not None:
            return chronus_between(boundary, options, solver)
        if boundary is not None:
            return chronus_online(boundary, options, solver)
        outcome = chronus_policy(problem.instance, solver, **dataclasses.asdict(options))
        d = outcome.details
        outcome.decision = LeasePlan(d["leases"], d["running"], d["admitted"], d["rejected"],
                                     d["lease_seconds"], d["gpu_type"])
        return outcome
