"""Chronus: the lease MILP of one lease boundary (formulations.md 3).

Time is cut into leases t = 0..H-1 (lease 0 starts now); lease t has C_t GPUs free. Job j needs
g_j GPUs (already rounded up to 1, 2, 4, 8n) in each of n_j more leases, not necessarily
consecutive. Each job has deadline options k = (j, v): value u_k if the job finishes within the
first D_k leases (D_k, the horizon, counts leases from now). With x_kt = 1 when option k holds
lease t and s_k = 1 when option k is chosen:

    max  sum_k u_k s_k + sigma * sum_k (g_k / max_t C_t) x_k0
    s.t. sum_{t < D_k} x_kt = n_k s_k          per option k      (lease_count rows)
         sum_k g_k x_kt    <= C_t              per lease t       (capacity rows)
         sum_v s_(j,v)      = 1                per admitted job  (one_option rows)
         sum_v s_(j,v)     <= 1                per other job
         x_kt, s_k in {0, 1};  x_kt = 0 for t >= D_k (those columns are not created)

sigma = +1 pulls guaranteed work into lease 0 (run early), sigma = -1 pushes it out (run late);
|sigma term| < max u when values are >= 1, so it only breaks ties between equal values in
practice. Columns: x of option 0 (min(D_0, H) leases), x of option 1, ..., then s_0..s_{K-1}.
x_kt also gets upper bound 0 when g_k > C_t and s_k when D_k < n_k (the rows would force it).

Solving: any MILP backend (`scip`, `cbc`, `cpsat`; the model is pure 0/1). `DEFAULT_SOLVER` was
picked by benchmarks/chronus_scaling.py (table in benchmarks/README.md). On a time limit the
incumbent is returned with the solver's bound (status feasible). Without an incumbent (a limit
before the first solution, or a solver error) the plan comes from `latest_fit_greedy` and
`used_fallback` is True (solver errors such as an unknown name raise SolveError, no fallback);
if the greedy cannot place every admitted job, the status is infeasible
and the plan holds what it placed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from schedopt.backends import SolveOptions, Status, solve_lp
from schedopt.backends.base import LinearProgram, relative_gap
from schedopt.errors import PolicyError

DEFAULT_SOLVER = "cpsat"


@dataclass(frozen=True)
class LeaseProblem:
    """One lease boundary, validated. Units: GPUs (gpus, capacity), leases (leases_needed,
    option_horizon: leases from now, so option k may use leases 0..option_horizon[k]-1), value
    (option_value: any unit, larger is better).

    gpus (n,), leases_needed (n,), admitted (n,) bool: jobs that must get one option;
    option_job (K,) job of each option, option_value (K,), option_horizon (K,);
    capacity (H,) GPUs free in lease t. A job's options are tried by the greedy in the order
    they appear here.
    """

    gpus: np.ndarray
    leases_needed: np.ndarray
    option_job: np.ndarray
    option_value: np.ndarray
    option_horizon: np.ndarray
    capacity: np.ndarray
    admitted: np.ndarray
    sigma: float = 1.0

    @property
    def num_jobs(self) -> int:
        return self.gpus.shape[0]

    @property
    def num_options(self) -> int:
        return self.option_job.shape[0]

    @property
    def num_leases(self) -> int:
        return self.capacity.shape[0]

    @classmethod
    def from_arrays(cls, gpus, leases_needed, option_job, option_value, option_horizon, capacity,
                    sigma: float = 1.0, admitted=None) -> LeaseProblem:
        def ints(value, name, minimum):
            arr = np.asarray(value)
            if arr.ndim != 1:
                raise PolicyError(f"{name} must be a 1-D array, got shape {arr.shape}")
            if arr.size and (not np.all(np.isfinite(arr.astype(float)))
                             or np.any(arr != np.round(arr)) or np.any(arr < minimum)):
                raise PolicyError(f"{name} must hold integers >= {minimum}")
            return arr.astype(np.int64)

        g = ints(gpus, "gpus", 1)
        n = ints(leases_needed, "leases_needed", 1)
        job = ints(option_job, "option_job", 0)
        horizon = ints(option_horizon, "option_horizon", 1)
        cap = ints(capacity, "capacity", 0)
        value = np.asarray(option_value, dtype=np.float64)
        if n.shape != g.shape:
            raise PolicyError(f"leases_needed has shape {n.shape}, gpus {g.shape}")
        if value.shape != job.shape or horizon.shape != job.shape:
            raise PolicyError("option_job, option_value and option_horizon must have the same shape")
        if not np.all(np.isfinite(value)):
            raise PolicyError("option_value must be finite")
        if job.size and job.max() >= g.size:
            raise PolicyError(f"option_job refers to job {job.max()}, but there are {g.size} jobs")
        if cap.size == 0:
            raise PolicyError("capacity needs at least one lease")
        if not np.isfinite(sigma):
            raise PolicyError("sigma must be finite")
        adm = np.ones(g.size, dtype=bool) if admitted is None else np.asarray(admitted, dtype=bool)
        if adm.shape != g.shape:
            raise PolicyError(f"admitted has shape {adm.shape}, gpus {g.shape}")
        missing = np.flatnonzero(adm & (np.bincount(job, minlength=g.size) == 0))
        if missing.size:
            raise PolicyError(f"admitted job(s) {missing.tolist()} have no deadline option")
        return cls(g, n, job, value, horizon, cap, adm, float(sigma))


@dataclass
class ChronusPlan:
    """The outcome of one lease solve.

    `leases[j]`: lease indices job j holds (empty when not scheduled); `chosen[j]`: index of its
    chosen option into the option arrays, -1 when not scheduled. `objective` is the MILP
    objective of this plan (recomputed from the integral plan), `bound` the solver's proven bound
    (None without one), `gap` their relative gap. `used_fallback`: the plan came from the
    latest-fit greedy because the solver had no incumbent. `unplaced`: admitted jobs the plan
    does not schedule (only possible with the fallback; then status is infeasible).
    """

    status: Status
    objective: float | None
    bound: float | None
    leases: dict[int, tuple[int, ...]]
    chosen: np.ndarray
    used_fallback: bool
    solver: str
    solve_seconds: float
    termination: str = ""
    unplaced: tuple[int, ...] = ()
    details: dict = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        return relative_gap(self.objective, self.bound)


def _option_columns(problem: LeaseProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(option of each x column, lease of each x column, start offset of each option)."""
    length = np.minimum(problem.option_horizon, problem.num_leases)
    start = np.concatenate(([0], np.cumsum(length)))
    option = np.repeat(np.arange(problem.num_options), length)
    lease = np.arange(start[-1]) - start[option]
    return option, lease, start


def lease_milp(problem: LeaseProblem) -> LinearProgram:
    """The MILP of the module docstring as a LinearProgram (x columns, then s columns)."""
    K, H, J = problem.num_options, problem.num_leases, problem.num_jobs
    option, lease, _ = _option_columns(problem)
    X = option.shape[0]
    n_cols = X + K
    g_opt = problem.gpus[problem.option_job]
    n_opt = problem.leases_needed[problem.option_job]

    # lease_count: sum_t x_kt - n_k s_k = 0
    lease_count = sp.csr_matrix(
        (np.concatenate((np.ones(X), -n_opt.astype(float))),
         (np.concatenate((option, np.arange(K))), np.arange(n_cols))), shape=(K, n_cols))
    # capacity: sum_k g_k x_kt <= C_t
    capacity = sp.csr_matrix((g_opt[option].astype(float), (lease, np.arange(X))), shape=(H, n_cols))
    # one_option: sum_v s_(j,v) = 1 (admitted) or <= 1
    one_option = sp.csr_matrix((np.ones(K), (problem.option_job, X + np.arange(K))),
                               shape=(J, n_cols))
    A = sp.vstack([lease_count, capacity, one_option], format="csr")
    row_lower = np.concatenate((np.zeros(K), np.full(H, -np.inf), problem.admitted.astype(float)))
    row_upper = np.concatenate((np.zeros(K), problem.capacity.astype(float), np.ones(J)))

    c = np.zeros(n_cols)
    c[X:] = problem.option_value
    first = lease == 0
    c[np.flatnonzero(first)] = problem.sigma * g_opt[option[first]] / max(problem.capacity.max(), 1)
    col_upper = np.ones(n_cols)
    col_upper[:X] = (g_opt[option] <= problem.capacity[lease]).astype(float)
    col_upper[X:] = (np.minimum(problem.option_horizon, H) >= n_opt).astype(float)
    return LinearProgram(c=c, A=A, row_lower=row_lower, row_upper=row_upper,
                         col_lower=np.zeros(n_cols), col_upper=col_upper, maximize=True,
                         integer=np.ones(n_cols, dtype=bool))


def plan_objective(problem: LeaseProblem, chosen: np.ndarray,
                   leases: dict[int, tuple[int, ...]]) -> float:
    """The MILP objective of a plan: chosen values plus the sigma term of jobs holding lease 0."""
    scheduled = chosen >= 0
    value = float(problem.option_value[chosen[scheduled]].sum())
    in_first = np.array([0 in leases.get(j, ()) for j in range(problem.num_jobs)], dtype=bool)
    scale = max(int(problem.capacity.max()), 1)
    return value + problem.sigma * float(problem.gpus[in_first].sum()) / scale


def latest_fit_greedy(problem: LeaseProblem) -> tuple[np.ndarray, dict[int, tuple[int, ...]], tuple[int, ...]]:
    """Latest-fit packing: (chosen, leases, unplaced admitted jobs).

    Jobs in index order; for each job its options in the order given; an option fits when at
    least n_j leases t < min(D_k, H) still have g_j GPUs free, and then the job takes the n_j
    LATEST such leases and no further option is tried. A job none of whose options fits is not
    scheduled (chosen -1); if it was admitted it is listed in `unplaced`. Sequential by nature
    (each placement changes what is free), one numpy step per option.
    """
    free = problem.capacity.astype(np.int64).copy()
    chosen = np.full(problem.num_jobs, -1, dtype=np.int64)
    leases: dict[int, tuple[int, ...]] = {}
    order = np.argsort(problem.option_job, kind="stable")
    for k in order:
        j = int(problem.option_job[k])
        if chosen[j] >= 0:
            continue
        g, n = problem.gpus[j], problem.leases_needed[j]
        fits = np.flatnonzero(free[: min(problem.option_horizon[k], problem.num_leases)] >= g)
        if fits.size >= n:
            take = fits[fits.size - n:]
            free[take] -= g
            chosen[j] = k
            leases[j] = tuple(int(t) for t in take)
    unplaced = tuple(int(j) for j in np.flatnonzero(problem.admitted & (chosen < 0)))
    return chosen, leases, unplaced


def _read_plan(problem: LeaseProblem, x: np.ndarray):
    option, lease, _ = _option_columns(problem)
    X = option.shape[0]
    s = x[X:] > 0.5
    chosen = np.full(problem.num_jobs, -1, dtype=np.int64)
    chosen[problem.option_job[s]] = np.flatnonzero(s)
    held = x[:X] > 0.5
    leases = {int(j): () for j in np.flatnonzero(chosen >= 0)}
    for j, k in zip(np.flatnonzero(chosen >= 0), chosen[chosen >= 0]):
        leases[int(j)] = tuple(int(t) for t in lease[held & (option == k)])
    return chosen, leases


def solve_lease_problem(problem: LeaseProblem, solver: str = DEFAULT_SOLVER,
                        time_limit: float | None = 5.0, mip_gap: float | None = None,
                        threads: int | None = None) -> ChronusPlan:
    """Solve one lease boundary; see the module docstring for the fallback rules."""
    start = time.perf_counter()
    lp = lease_milp(problem)
    result = solve_lp(lp, solver, SolveOptions(time_limit=time_limit, mip_gap=mip_gap,
                                               threads=threads))
    termination = result.termination
    if result.status.has_solution and result.x is not None:
        chosen, leases = _read_plan(problem, result.x)
        objective = plan_objective(problem, chosen, leases)
        bound = result.bound
        status = result.status
        if status is Status.OPTIMAL:
            bound = objective if bound is None else bound
        return ChronusPlan(status=status, objective=objective, bound=bound, leases=leases,
                           chosen=chosen, used_fallback=False, solver=solver,
                           solve_seconds=time.perf_counter() - start, termination=termination)
    chosen, leases, unplaced = latest_fit_greedy(problem)
    status = Status.INFEASIBLE if unplaced else Status.FEASIBLE
    bound = None
    return ChronusPlan(status=status, objective=plan_objective(problem, chosen, leases),
                       bound=bound, leases=leases, chosen=chosen, used_fallback=True, solver=solver,
                       solve_seconds=time.perf_counter() - start, termination=termination,
                       unplaced=unplaced)


def chronus_lease_milp(gpus, leases_needed, option_job, option_value, option_horizon, capacity,
                       sigma: float = 1.0, solver: str = DEFAULT_SOLVER,
                       time_limit: float | None = 5.0, mip_gap: float | None = None,
                       admitted=None, threads: int | None = None) -> ChronusPlan:
    """Solve the Chronus lease MILP from arrays (units in `LeaseProblem`).

    gpus (n,) GPUs per job, rounded up to 1, 2, 4, 8n; leases_needed (n,) leases each job still
    needs; option_job / option_value / option_horizon (K,) one entry per deadline option (job
    index, value u, horizon D in leases from now); capacity (H,) GPUs free in lease t = 0..H-1;
    admitted (n,) bool, default all: jobs that must get exactly one option (others at most one).
    time_limit in seconds (None: no limit). Returns a `ChronusPlan`.
    """
    problem = LeaseProblem.from_arrays(gpus, leases_needed, option_job, option_value,
                                       option_horizon, capacity, sigma=sigma, admitted=admitted)
    return solve_lease_problem(problem, solver=solver, time_limit=time_limit, mip_gap=mip_gap,
                               threads=threads)
