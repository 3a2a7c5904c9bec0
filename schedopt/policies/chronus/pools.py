"""Chronus on several GPU types: the lease MILP choosing each job's type (docs/formulations.md §3,
heterogeneous pools).

Pools p = 0..P-1 (one per GPU type) share the slot grid t = 0..H-1 of the boundary; pool p has
C_pt GPUs free in every lease of slot t. Job j runs on g_jp GPUs of pool p (0: not there) and
needs n_jp leases of work there (its remaining steps / steps/s on that type, `leases_needed`,
the resume overhead counted in every lease whatever `resume_overhead_per` says);
slot t gives a_t of them (its w_t leases). Options v of job j: value u_jv, horizon D_jv slots. With
x_jvpt = 1 when job j holds slot t of pool p for its option v, and s_jvp = 1 when it takes option
v on pool p:

    max  sum u_jv s_jvp + sigma * sum g_jp x_jvp0 / sum_p max_t C_pt
    s.t. n_jp s_jvp <= sum_{t<D_jv} a_t x_jvpt <= (n_jp + A_jv - 1) s_jvp   (count, overfill)
         sum_jv g_jp x_jvpt <= C_pt                                          (capacity)
         sum_vp s_jvp = 1 per admitted job, <= 1 per other job               (one_option)

A_jv is the largest a_t before D_jv; s_jvp is fixed to 0 where the job cannot run on p or its
slots before D_jv give fewer than n_jp leases. With one pool it is the lease MILP of
`lease_milp` (the same plans and objective; that module's staged solve is used there). Here the
MILP goes to the solver whole, started from `pool_greedy` (latest fit; cpsat and scip read the
start), which is also the plan when the solver finds none in time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from schedopt.backends import Status
from schedopt.backends.base import relative_gap
from schedopt.backends.session import Solver
from schedopt.errors import PolicyError
from schedopt.modeling import Model
from schedopt.policies.chronus.admission import JobSet, NewJob, admit, round_up_gpus
from schedopt.policies.chronus.boundary import (
    LeaseJobs,
    fill_in_order,
    lease_grid,
    leases_needed,
    option_horizons,
    slot_free,
    slot_leases,
)
from schedopt.policies.chronus.lease_milp import DEFAULT_SOLVER, latest_slots


@dataclass(frozen=True)
class PoolProblem:
    """One boundary over P pools, validated. Units: GPUs (gpus, capacity), leases (need,
    width: leases of work per slot), slots (horizon), value (any unit).

    gpus (n, P) GPUs of job j on pool p, 0 where it cannot run; need (n, P) leases of work it
    needs there; value / horizon (n, V) its options (padded: horizon 0 marks no option);
    capacity (P, H); width (H,); admitted (n,) bool; sigma."""

    gpus: np.ndarray
    need: np.ndarray
    value: np.ndarray
    horizon: np.ndarray
    capacity: np.ndarray
    width: np.ndarray
    admitted: np.ndarray
    sigma: float = 1.0

    @classmethod
    def from_arrays(cls, gpus, need, value, horizon, capacity, width=None, admitted=None,
                    sigma: float = 1.0) -> PoolProblem:
        g = np.asarray(gpus, dtype=np.int64)
        n = np.asarray(need, dtype=np.int64)
        u = np.asarray(value, dtype=float)
        d = np.asarray(horizon, dtype=np.int64)
        cap = np.asarray(capacity, dtype=np.int64)
        if g.ndim != 2 or n.shape != g.shape:
            raise PolicyError(f"gpus and need must be (jobs, pools) arrays of one shape, got "
                              f"{g.shape} and {n.shape}")
        if u.ndim != 2 or d.shape != u.shape or u.shape[0] != g.shape[0]:
            raise PolicyError("value and horizon must be (jobs, options) arrays of one shape")
        if cap.ndim != 2 or cap.shape[0] != g.shape[1] or cap.shape[1] == 0:
            raise PolicyError(f"capacity must be (pools, slots) with {g.shape[1]} pools")
        w = np.ones(cap.shape[1], dtype=np.int64) if width is None else \
            np.asarray(width, dtype=np.int64)
        if w.shape != (cap.shape[1],) or np.any(w < 1):
            raise PolicyError("width must hold one integer >= 1 per slot")
        if np.any(g < 0) or np.any(n < 1) or np.any(d < 0) or np.any(cap < 0) \
                or not np.all(np.isfinite(u)):
            raise PolicyError("gpus, horizons and capacity must be >= 0, needs >= 1, values finite")
        adm = np.zeros(g.shape[0], dtype=bool) if admitted is None else \
            np.asarray(admitted, dtype=bool)
        return cls(g, n, u, d, cap, w, adm, float(sigma))

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(jobs, options per job, pools, slots)."""
        return (*self.value.shape, *self.capacity.shape)

    def usable(self) -> np.ndarray:
        """(n, V, P) bool: option v of job j can be met on pool p."""
        end = np.concatenate(([0], np.cumsum(self.width)))
        leases = end[np.minimum(self.horizon, self.width.size)]
        return ((self.horizon[:, :, None] > 0) & (self.gpus[:, None, :] > 0)
                & (leases[:, :, None] >= self.need[:, None, :]))

    def scale(self) -> float:
        """GPUs of the cluster for the sigma term: sum over pools of max_t C_pt (at least 1)."""
        return float(max(int(self.capacity.max(axis=1).sum()), 1))

    def objective(self, choice: np.ndarray, held: np.ndarray) -> float:
        """Objective of a plan: choice (n, 2) (option, pool) or -1; held (n, H) slots held."""
        on = choice[:, 0] >= 0
        jobs = np.flatnonzero(on)
        value = float(self.value[jobs, choice[on, 0]].sum())
        first = jobs[held[jobs, 0]]
        return value + self.sigma * float(self.gpus[first, choice[first, 1]].sum()) / self.scale()


@dataclass
class PoolPlan:
    """choice (n, 2): (option, pool) of each job, -1 when not scheduled; held (n, H) bool slots
    held (in the chosen pool); objective / bound / gap; status; source: "solver" or "greedy";
    unplaced: admitted jobs without a plan (only from the greedy; then status infeasible)."""

    choice: np.ndarray
    held: np.ndarray
    objective: float
    bound: float | None
    status: Status
    source: str
    solve_seconds: float
    unplaced: tuple[int, ...] = ()

    @property
    def gap(self) -> float | None:
        return relative_gap(self.objective, self.bound)


def pool_greedy(problem: PoolProblem) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Latest fit over pools: jobs in index order (admitted ones first), each trying its options
    in order and for each the pools by fewest leases needed (then pool order), taking the latest
    slots of the first pool where they fit. Returns (choice, held, unplaced admitted jobs)."""
    n, V, P, H = problem.shape
    free = problem.capacity.copy()
    choice = np.full((n, 2), -1, dtype=np.int64)
    held = np.zeros((n, H), dtype=bool)
    usable = problem.usable()
    for j in np.argsort(~problem.admitted, kind="stable"):
        pools = np.argsort(problem.need[j], kind="stable")
        for v, p in ((v, p) for v in range(V) for p in pools if usable[j, v, p]):
            window = free[p, :problem.horizon[j, v]]
            take = latest_slots(np.flatnonzero(window >= problem.gpus[j, p]), problem.width,
                                int(problem.need[j, p]))
            if take is not None:
                choice[j] = (v, p)
                held[j, take] = True
                free[p, take] -= problem.gpus[j, p]
                break
    unplaced = tuple(int(j) for j in np.flatnonzero(problem.admitted & (choice[:, 0] < 0)))
    return choice, held, unplaced


@dataclass(frozen=True)
class PoolProgram:
    """The MILP of the module docstring built with schedopt.modeling: X (n, V, P, H), S (n, V, P)."""

    model: Model
    X: object
    S: object


def pool_milp(problem: PoolProblem) -> PoolProgram:
    n, V, P, H = problem.shape
    usable = problem.usable()
    before = np.arange(H)[None, None, None, :] < problem.horizon[:, :, None, None]
    room = problem.gpus[:, None, :, None] <= problem.capacity[None, None, :, :]
    m = Model()
    X = m.variable("X", (n, V, P, H), upper=(usable[..., None] & before & room).astype(float),
                   integer=True)
    S = m.variable("S", (n, V, P), upper=usable.astype(float), integer=True)
    gain = (X * problem.width).sum(axis=3)
    widest = np.where(before, problem.width, 0).max(axis=3)  # (n, V, 1)
    need = problem.need[:, None, :]
    m.add("count", gain >= S * need)
    m.add("overfill", gain <= S * (need + widest - 1))
    m.add("capacity", (X * problem.gpus[:, None, :, None]).sum(axis=(0, 1)) <= problem.capacity)
    m.add("one_option", S.sum(axis=(1, 2)) <= 1)
    if problem.admitted.any():
        m.add("admitted", S.sum(axis=(1, 2))[np.flatnonzero(problem.admitted)] >= 1)
    m.maximize((S * problem.value[:, :, None]).sum()
               + (X[:, :, :, 0] * (problem.sigma * problem.gpus[:, None, :]
                                   / problem.scale())).sum())
    return PoolProgram(m, X, S)


def _start_vector(program: PoolProgram, problem: PoolProblem, choice: np.ndarray,
                  held: np.ndarray) -> np.ndarray:
    n, V, P, H = problem.shape
    x = np.zeros((n, V, P, H))
    s = np.zeros((n, V, P))
    jobs = np.flatnonzero(choice[:, 0] >= 0)
    s[jobs, choice[jobs, 0], choice[jobs, 1]] = 1.0
    x[jobs, choice[jobs, 0], choice[jobs, 1], :] = held[jobs]
    out = np.zeros(program.model.num_cols)
    out[program.X.columns] = x.ravel()
    out[program.S.columns] = s.ravel()
    return out


def solve_pool_problem(problem: PoolProblem, solver: Solver | str = DEFAULT_SOLVER,
                       time_limit: float | None = 5.0, threads: int | None = None) -> PoolPlan:
    """The MILP with the solver (a Solver session, or a backend name that builds one;
    time_limit s for all of it), started from `pool_greedy`; the greedy plan when the solver
    has none and it places every admitted job."""
    clock = time.perf_counter()
    session = solver if isinstance(solver, Solver) else Solver(solver)
    threads = session.settings.threads if threads is None else threads
    choice, held, unplaced = pool_greedy(problem)
    program = pool_milp(problem)
    lp = program.model.compile()
    start = None if unplaced else _start_vector(program, problem, choice, held)
    result = session.with_settings(time_limit=time_limit, threads=threads, start=start).solve(lp)
    if result.status.has_solution and result.x is not None:
        x = np.rint(result.x)
        S = x[program.S.columns].reshape(program.S.shape) > 0.5
        X = x[program.X.columns].reshape(program.X.shape) > 0.5
        jobs, v, p = np.nonzero(S)
        solved = np.full((problem.shape[0], 2), -1, dtype=np.int64)
        solved[jobs] = np.stack((v, p), axis=1)
        solved_held = np.zeros_like(held)
        solved_held[jobs] = X[jobs, v, p]
        objective = problem.objective(solved, solved_held)
        if unplaced or objective >= problem.objective(choice, held) - 1e-9:
            status = result.status if result.status is Status.OPTIMAL else Status.FEASIBLE
            return PoolPlan(solved, solved_held, objective, result.bound, status, "solver",
                            time.perf_counter() - clock)
    if unplaced:
        return PoolPlan(choice, held, problem.objective(choice, held), None, Status.INFEASIBLE,
                        "greedy", time.perf_counter() - clock, unplaced)
    bound = result.bound if result.status.has_solution else None
    return PoolPlan(choice, held, problem.objective(choice, held), bound, Status.FEASIBLE,
                    "greedy", time.perf_counter() - clock)


@dataclass
class PoolDecision:
    """One boundary over every GPU type of an instance: ids, types; pool (N,) each job's type
    index for the plan or lease 0 (-1: none); running (N,) bool; leases {job index: lease
    offsets from now}; admitted / slo (N,) bool; plan (None when no SLO job could be planned)."""

    ids: np.ndarray
    types: list[str]
    pool: np.ndarray
    running: np.ndarray
    leases: dict[int, tuple[int, ...]]
    admitted: np.ndarray
    slo: np.ndarray
    plan: PoolPlan | None
    sigma: float = 1.0


def plan_pools(instance, settings, round_up: bool = True,
               solver: Solver | None = None) -> PoolDecision:
    """Chronus at `instance.now` over all its GPU types (every queued job active): admission of
    the SLO jobs in arrival order, each on the first pool (fewest leases needed first) where
    `admission.admit` accepts it against the reservations so far; the pool MILP over the admitted
    jobs (must get an option) and the other SLO jobs with a usable option (may); then each pool's
    GPUs left in lease 0 go to the other jobs, shortest remaining service (seconds x GPUs on
    their fastest type) first, each on the first pool in type order where it fits.
    `settings`: a `boundary.LeaseSettings`; solver: the Solver session of the pool MILP
    (None: one of the backend `settings.solver`)."""
    instance.require_total_steps("planned in leases")
    types = list(instance.cluster.gpu_types)
    pools = [instance.cluster.gpu_types[t] for t in types]
    jobs = instance.jobs
    N, P = len(jobs), len(types)
    speed = np.array([[j.throughput[t] for t in types] for j in jobs], dtype=float).reshape(N, P)
    requested = np.array([j.scale_factor for j in jobs], dtype=np.int64)
    count = np.array([p.count for p in pools], dtype=np.int64)
    gpus = np.repeat(requested[:, None], P, axis=1)
    if round_up and N:
        for p, pool in enumerate(pools):
            rounded = round_up_gpus(requested, pool.gpus_per_node)
            gpus[:, p] = np.where(rounded <= pool.count, rounded, requested)
    gpus = np.where((speed > 0) & (requested[:, None] <= count[None, :]), gpus, 0)
    remaining = np.array([j.remaining_steps for j in jobs], dtype=float)
    run_s = remaining[:, None] / np.where(speed > 0, speed, 1.0)
    need = leases_needed(run_s.ravel(), settings).reshape(N, P)
    option_job = np.array([m for m, j in enumerate(jobs) for _ in j.slo_options], dtype=np.int64)
    deadline = np.array([j.arrival_time + o.after_s for j in jobs for o in j.slo_options])
    value = np.array([o.value for j in jobs for o in j.slo_options], dtype=float)
    now = instance.now
    width = lease_grid(now, settings)
    horizon = option_horizons(LeaseJobs(requested, remaining, option_job, deadline, value), now,
                              settings)
    V = int(np.bincount(option_job, minlength=N).max()) if option_job.size else 1
    rank = np.arange(option_job.size) - np.searchsorted(option_job, option_job)
    values, horizons = np.zeros((N, V)), np.zeros((N, V), dtype=np.int64)
    values[option_job, rank] = value
    horizons[option_job, rank] = np.maximum(horizon, 0)
    slo = np.bincount(option_job, minlength=N) > 0
    problem = PoolProblem.from_arrays(gpus, need, values, horizons,
                                      np.repeat(count[:, None], width.size, axis=1), width)
    usable = problem.usable()

    free = np.repeat(count[:, None], int(width.sum()), axis=1)
    admitted = np.zeros(N, dtype=bool)
    reserved: dict[int, tuple[int, tuple[int, ...]]] = {}
    for j in np.lexsort((np.arange(N), [job.arrival_time for job in jobs])):
        for p in np.argsort(need[j], kind="stable"):
            ok = usable[j, :, p]
            if not ok.any():
                continue
            decision = admit(NewJob.from_values(gpus[j, p], need[j, p], values[j, ok],
                                                horizons[j, ok]),
                             JobSet.empty(), slot_free(free[p], width), width)
            if decision.admitted:
                admitted[j] = True
                leases = slot_leases(width, decision.leases[decision.new_index])
                free[p, list(leases)] -= gpus[j, p]
                reserved[int(j)] = (int(p), leases)
                break

    pool = np.full(N, -1, dtype=np.int64)
    running = np.zeros(N, dtype=bool)
    leases: dict[int, tuple[int, ...]] = {}
    planned = np.flatnonzero(admitted | usable.any(axis=(1, 2)))
    plan = None
    sigma = float(settings.sigma if settings.sigma != "adaptive" else
                  (-1.0 if np.any(~admitted) else 1.0))
    if planned.size:
        sub = PoolProblem.from_arrays(gpus[planned], need[planned], values[planned],
                                      horizons[planned], problem.capacity, width,
                                      admitted[planned], sigma)
        plan = solve_pool_problem(sub, solver or settings.solver, settings.time_limit)
        for i in np.flatnonzero(plan.choice[:, 0] >= 0):
            j = int(planned[i])
            pool[j] = plan.choice[i, 1]
            leases[j] = slot_leases(width, np.flatnonzero(plan.held[i]))
            running[j] = bool(plan.held[i, 0])
        for i in plan.unplaced:  # only from a failed greedy: keep the admission reservation
            j = int(planned[i])
            pool[j], leases[j] = reserved[j]
            running[j] = 0 in leases[j]
    held = np.zeros(P, dtype=np.int64)
    np.add.at(held, pool[running], gpus[running, pool[running]])
    service = np.min(np.where(gpus > 0, run_s * gpus, np.inf), axis=1)
    order = np.flatnonzero(~running & (pool < 0) & np.isfinite(service))
    order = order[np.argsort(service[order], kind="stable")]
    for p in range(P):
        here = order[(gpus[order, p] > 0) & ~running[order]]
        start = fill_in_order(gpus[:, p], here, int(count[p] - held[p]))
        running[start], pool[start] = True, p
        leases.update({int(j): (0,) for j in start})
    return PoolDecision(np.array(instance.job_ids, dtype=object), types, pool, running, leases,
                        admitted, slo, plan, sigma)
