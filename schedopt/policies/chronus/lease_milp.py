"""Chronus: the lease MILP of one lease boundary (docs/formulations.md §3).

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

Slots (docs/formulations.md §3, the window in time): with `LeaseProblem.width` a_t > 1, t
indexes slots, x_kt = 1 holds every lease of slot t and gives a_t leases of work; the count row
is then n_k s_k <= sum_t a_t x_kt <= (n_k + A_k - 1) s_k (A_k: the largest a_t the option can
use; only options with A_k > 1 get the upper `overfill` row), the equality when every a_t = 1.

Overhead once per run (`LeaseProblem.per_run`): the count row becomes sum_t a_t x_kt -
overhead * sum_t y_kt >= work_j s_k, with y_kt >= x_kt - x_k,t-1 (y_k0 >= x_k0 - held_j) marking
where option k starts a run, and overfill on every option (`_run_rows`). An option with a tail
(`LeaseProblem.option_tail`: the part of the lease its deadline falls in) has one more column,
the slot at its horizon, whose a_t is the tail.

sigma = +1 pulls guaranteed work into lease 0 (run early), sigma = -1 pushes it out (run late);
|sigma term| <= C_0 / max C_t <= 1, so it only breaks ties between equal values in practice.
Columns: x of option 0 (min(D_0, H) leases), x of option 1, ..., then s_0..s_{K-1}.
x_kt also gets upper bound 0 when g_k > C_t and s_k when D_k < n_k (the rows would force it).
`lease_model` states it with `schedopt.modeling`: x is one block over the (option, slot) pairs
that exist, and each row block is a group-by sum of it (per option, per slot, per job).

Solving (`solve_lease_problem`), one time limit (default 5 s) for all stages:

1. LP: `lease_relaxation` (the LP relaxation tightened by x_kt <= s_k) with HiGHS. Its optimum
   is the bound; an integral LP solution is an optimal plan at once.
2. Rounding: `chronus_rounding.lp_roundings` turns the LP solution into plans (milliseconds).
3. Restricted MILP (RINS): `solver` on the MILP with s_k fixed wherever the LP's s_k is
   integral and the rounded plan agrees, started from the rounded plan (a MIP start on cpsat
   and scip; cbc ignores it), until it proves that neighbourhood optimal or the time is up.
4. Full MILP: `solver` on the whole MILP, started from the best plan so far (else from the
   rounding's incomplete one), for whatever time stage 3 left (on contended instances usually
   none); its bound can only lower the LP's.

The plan is the best of stages 1-4 (objective recomputed from the integral plan; `details`
names its stage: "lp", "lp_rounding", "restricted" or "solver"); bound = min(LP bound, full
MILP bound). Status optimal only when proven: the full MILP says so, or objective and bound
agree to PROVEN_GAP; otherwise feasible. Stages 3-4 are skipped once the gap is proven or within
`mip_gap`, or (with a plan in hand) when no time is left; each MILP stage leaves STOP_SECONDS
of the budget for its solver to stop in. Stage 3's proof covers only its neighbourhood, so it
never makes the status optimal. The pipeline and `DEFAULT_SOLVER` were picked by
benchmarks/chronus_scaling.py (tables in benchmarks/README.md). The stages after 1 use the LP
only when it is solved to optimality (a limit or error skips stages 1-3). Without any plan, the
plan comes from `latest_fit_greedy` and `used_fallback` is True (solver errors such as an
unknown name raise SolveError, no fallback); if the greedy cannot place every admitted job, the
status is infeasible and the plan holds what it placed (bound None).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field, replace

import numpy as np

from schedopt.backends import SolveResult, Status
from schedopt.backends.base import LinearProgram, relative_gap
from schedopt.backends.session import Solver
from schedopt.core.capabilities import Capability
from schedopt.modeling import Constraint, Expr, Model, Variable
from schedopt.policies.chronus.problem import LeaseProblem  # re-exported
from schedopt.policies.chronus.rounding import lp_roundings
from schedopt.core.sparse_import import scipy_sparse

sp = scipy_sparse()

DEFAULT_SOLVER = "cpsat"
LP_SOLVER = "highs"  # the LP relaxation's backend (stage 1)
# Seconds a MILP stage runs past its solver's time limit (building and reading the model,
# presolve, stopping threads): 0.07-0.21 s measured on the 400-job model with cpsat and scip.
# Each MILP stage's limit leaves this much of the budget unused, so that the whole solve ends
# within time_limit. (cbc runs seconds past its limit on that model; it is not the default.)
STOP_SECONDS = 0.25
# Objective and bound this close (relative gap) count as a proof of optimality.
PROVEN_GAP = 1e-9
# Leases of work the lease_count rows (overhead per run) may leave a job short of its need:
# exact fits (90 s of work in two 60 s leases with a 30 s overhead) stay feasible, and each
# plan a solver returns is checked on its integral values (`serves`, `_Best.offer`).
RUN_MARGIN = -1e-9
# Leases of work a plan may fall short of a job's need by (float sums): 1e-10 of a lease.
WORK_TOLERANCE = 1e-10
# LP column values this close to an integer count as integral (HiGHS's primal feasibility
# tolerance is 1e-7).
INTEGRALITY_TOLERANCE = 1e-6


@dataclass
class ChronusPlan:
    """The outcome of one lease solve.

    `leases[j]`: lease indices job j holds (empty when not scheduled); `chosen[j]`: index of its
    chosen option into the option arrays, -1 when not scheduled. `objective` is the MILP
    objective of this plan (recomputed from the integral plan), `bound` a proven upper bound on
    the optimum (the smaller of the LP relaxation's and the full MILP solver's; None without
    one), `gap` their relative gap. `used_fallback`: the plan came from the latest-fit greedy
    because no stage had a plan. `unplaced`: admitted jobs the plan does not schedule (only
    possible with the fallback; then status is infeasible). `details`: see
    `solve_lease_problem`.
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
    length = np.minimum(problem.option_horizon, problem.num_leases) + (problem.tail_slot >= 0)
    start = np.concatenate(([0], np.cumsum(length)))
    option = np.repeat(np.arange(problem.num_options), length)
    lease = np.arange(start[-1]) - start[option]
    return option, lease, start


@dataclass(frozen=True, eq=False)
class LeaseModel:
    """The lease MILP stated with `schedopt.modeling`: x (the X columns, one per option and
    slot before its horizon, option by option; `option` and `lease` say whose and which slot
    each is) and s (K,) the option choices."""

    model: Model
    x: Variable
    s: Variable
    option: np.ndarray
    lease: np.ndarray


def _sum_by(var: Variable, label: np.ndarray, size: int, weight=1.0) -> Expr:
    """(size,) expression: entry r = sum of weight[i] var[i] over the i with label[i] == r
    (entries labelled -1 are left out): a group-by sum of a 1-D block, term by term."""
    coefs = np.broadcast_to(np.asarray(weight, dtype=float), var.shape)
    if label.size and label.min() < 0:
        keep = np.flatnonzero(label >= 0)
        return Expr(label[keep], var.cols[keep], coefs[keep], 0.0, (size,))
    return Expr(label, var.cols, coefs, 0.0, (size,))


def _at(var: Variable, index: np.ndarray) -> Expr:
    """(len(index),) expression: entry i = var[index[i]] (numpy's var[index], one term each)."""
    return Expr(np.arange(index.size), var.cols[index], np.ones(index.size), 0.0, index.shape)


def lease_model(problem: LeaseProblem, runs: bool = True) -> LeaseModel:
    """The MILP of the module docstring (x columns, then s; rows lease_count, capacity,
    one_option, then overfill where an option reaches a slot wider than one lease). With the
    overhead counted per run (`LeaseProblem.per_run`), y columns follow s and the rows are
    those of `_run_rows`; runs=False leaves y out and counts one run per chosen option
    (`_one_run_rows`: a relaxation, for the LP stage)."""
    K, H, J = problem.num_options, problem.num_leases, problem.num_jobs
    option, lease, _ = _option_columns(problem)
    g = problem.gpus[problem.option_job].astype(float)  # (K,) GPUs of each option's job
    n = problem.leases_needed[problem.option_job].astype(float)  # (K,) leases it needs
    a = problem.width[lease].astype(float)  # leases of work in each x column's slot
    tail = lease == problem.tail_slot[option]  # the part of a lease before the deadline
    a[tail] = problem.option_tail[option[tail]]
    # W_k: the widest slot option k can use (every horizon is >= 1 slot)
    last = np.minimum(problem.option_horizon, H) + (problem.tail_slot >= 0) - 1
    widest = np.maximum.accumulate(problem.width)[last]
    over = np.flatnonzero(widest > 1) if not problem.per_run else np.arange(K)
    in_over = np.full(K, -1)
    in_over[over] = np.arange(over.size)

    m = Model()
    x = m.variable("x", option.size, upper=(g[option] <= problem.capacity[lease]).astype(float),
                   integer=True)
    s = m.variable("s", K, upper=_servable(problem).astype(float), integer=True)
    if problem.per_run and runs:
        _run_rows(m, problem, x, s, option, lease, a)
    elif problem.per_run:
        _one_run_rows(m, problem, x, s, option, a)
    else:
        m.add("lease_count", Constraint(_sum_by(x, option, K, a) - n * s, 0.0,
                                        np.where(widest > 1, np.inf, 0.0)))
    m.add("capacity", _sum_by(x, lease, H, g[option]) <= problem.capacity)
    m.add("one_option", Constraint(_sum_by(s, problem.option_job, J),
                                   problem.admitted.astype(float), 1.0))
    if over.size:
        m.add("overfill", _sum_by(x, in_over[option], over.size, a)
              - _sum_by(s, in_over, over.size, n + widest - 1) <= 0.0)
    first = np.where(lease == 0, problem.sigma * g[option] / max(problem.capacity.max(), 1), 0.0)
    m.maximize((problem.option_value * s).sum() + (first * x).sum())
    return LeaseModel(m, x, s, option, lease)


def _servable(problem: LeaseProblem) -> np.ndarray:
    """(K,) bool: every slot before option k's horizon, held, serves its job."""
    leases = problem.leases_within(problem.option_horizon)
    job = problem.option_job
    if not problem.per_run:
        return leases >= problem.leases_needed[job]
    tail = problem.option_tail * (problem.tail_slot >= 0)
    one_run = leases + tail - problem.overhead * ~problem.held[job]
    return (leases + tail > 0) & (one_run >= problem.work[job] + RUN_MARGIN)


def _one_run_rows(m: Model, problem: LeaseProblem, x: Variable, s: Variable, option: np.ndarray,
                  a: np.ndarray) -> None:
    """lease_count rows of a relaxation of `_run_rows` without y: a chosen option starts at
    least one run (sum_t y_kt >= s_k - held_j: its first slot held starts one, unless it is
    slot 0 of a job that held its GPUs), so

        sum_t a_t x_kt >= (work_j + overhead (1 - held_j) + RUN_MARGIN) s_k.

    Every plan of the MILP meets it, so its LP optimum bounds the MILP's. Its y columns are in
    no row (the MILP's columns, so that solutions read alike), and it has no run_start rows:
    about half the size of the MILP's LP relaxation."""
    m.variable("y", option.size, upper=1.0, integer=True)
    job = problem.option_job
    need = problem.work[job] + problem.overhead * ~problem.held[job] + RUN_MARGIN
    m.add("lease_count", Constraint(_sum_by(x, option, problem.num_options, a) - need * s,
                                    0.0, np.inf))


def _run_rows(m: Model, problem: LeaseProblem, x: Variable, s: Variable, option: np.ndarray,
              lease: np.ndarray, a: np.ndarray) -> Variable:
    """The rows of the overhead counted once per run: y_kt = 1 where option k starts a run at
    slot t,

        y_kt >= x_kt - x_k,t-1  (t >= 1),   y_k0 >= x_k0 - held_j          (run_start rows)
        sum_t a_t x_kt - overhead * sum_t y_kt >= (work_j + RUN_MARGIN) s_k  (lease_count rows)

    and overfill (added by the caller) caps sum_t a_t x_kt at (n_k + A_k - 1) s_k for every
    option, so that x_kt = 0 when s_k = 0. y only appears with a negative coefficient in
    lease_count, so an optimum can always take y = max(0, x_kt - x_k,t-1): integral."""
    K = problem.num_options
    y = m.variable("y", option.size, upper=1.0, integer=True)
    later = np.flatnonzero(lease > 0)
    previous = Expr(later, x.cols[later - 1], np.ones(later.size), 0.0, (option.size,))
    before = np.where(lease == 0, problem.held[problem.option_job[option]], 0.0)
    m.add("run_start", Constraint(y - x + previous, -before, np.inf))
    work = (problem.work + RUN_MARGIN)[problem.option_job]
    m.add("lease_count", Constraint(_sum_by(x, option, K, a)
                                    - _sum_by(y, option, K, problem.overhead)
                                    - work * s, 0.0, np.inf))
    return y


def lease_milp(problem: LeaseProblem) -> LinearProgram:
    """The MILP of the module docstring as a LinearProgram (x columns, then s columns)."""
    return lease_model(problem).model.compile()


def lease_relaxation(problem: LeaseProblem) -> LinearProgram:
    """The LP relaxation of `lease_milp` (same columns, no integer ones) with one more row per x
    column: x_kt - s_k <= 0 ("within").

    The rows are valid for the MILP: in an integral solution s_k = 0 forces every x_kt of
    option k to 0 (lease_count: sum_t x_kt = n_k s_k = 0), and otherwise x_kt <= 1 = s_k. They cut
    fractional points that put more of an option into one lease than the option is chosen
    (e.g. x_kt = 1 with s_k = 1/n_k); on the 400-job benchmark they lower the bound by 0.3-0.7%.
    """
    return lease_programs(problem)[1]


def lease_programs(problem: LeaseProblem) -> tuple[LinearProgram, LinearProgram]:
    """(`lease_milp`, `lease_relaxation`) from one compile: the MILP is the relaxation's rows
    before "within" (its last block), with every column integer. With the overhead counted per
    run, the relaxation is that of `lease_model(problem, runs=False)` (the MILP's columns, y in
    no row), and the MILP is compiled on its own."""
    if problem.per_run:
        relaxed = lease_model(problem, runs=False)
        relaxed.model.add("within", relaxed.x - _at(relaxed.s, relaxed.option) <= 0.0)
        return lease_milp(problem), replace(relaxed.model.compile(), integer=None)
    lease = lease_model(problem)
    rows = max(block.stop for block in lease.model.row_slices().values())
    lease.model.add("within", lease.x - _at(lease.s, lease.option) <= 0.0)
    relaxation = replace(lease.model.compile(), integer=None)
    A = relaxation.A
    end = A.indptr[rows]  # the first rows of a CSR matrix, as views of its arrays
    first = sp.csr_matrix((A.data[:end], A.indices[:end], A.indptr[:rows + 1]),
                          shape=(rows, A.shape[1]))
    milp = replace(relaxation, A=first, row_lower=relaxation.row_lower[:rows],
                   row_upper=relaxation.row_upper[:rows],
                   integer=np.ones(relaxation.num_cols, dtype=bool))
    return milp, relaxation


def plan_objective(problem: LeaseProblem, chosen: np.ndarray,
                   leases: dict[int, tuple[int, ...]]) -> float:
    """The MILP objective of a plan: chosen values plus the sigma term of jobs holding lease 0."""
    held = np.zeros((problem.num_jobs, problem.num_leases), dtype=bool)
    jobs = np.repeat(np.fromiter(leases, dtype=np.int64, count=len(leases)),
                     [len(t) for t in leases.values()])
    held[jobs, np.fromiter(itertools.chain.from_iterable(leases.values()), dtype=np.int64)] = True
    return _objective(problem, chosen, held)


def _objective(problem: LeaseProblem, chosen: np.ndarray, held: np.ndarray) -> float:
    """`plan_objective` of a plan given as held[j, t] (n, H) bool."""
    value = float(problem.option_value[chosen[chosen >= 0]].sum())
    scale = max(int(problem.capacity.max()), 1)
    return value + problem.sigma * float(problem.gpus[held[:, 0]].sum()) / scale


def latest_fit_greedy(problem: LeaseProblem) -> tuple[np.ndarray, dict[int, tuple[int, ...]], tuple[int, ...]]:
    """Latest-fit packing: (chosen, leases, unplaced admitted jobs).

    Jobs in index order; for each job its options in the order given; an option fits when at
    least n_j leases t < min(D_k, H) (and its tail slot, which gives the tail:
    `LeaseProblem.option_tail`) still have g_j GPUs free, and then the job takes the n_j
    LATEST such leases and no further option is tried. A job none of whose options fits is not
    scheduled (chosen -1); if it was admitted it is listed in `unplaced`. Sequential by nature
    (each placement changes what is free), one numpy step per option.
    """
    free = problem.capacity.astype(np.int64).copy()
    chosen = np.full(problem.num_jobs, -1, dtype=np.int64)
    leases: dict[int, tuple[int, ...]] = {}
    order = np.argsort(problem.option_job, kind="stable")
    width = problem.width if problem.width.max(initial=1) > 1 or problem.per_run else None
    need = problem.work if problem.per_run else problem.leases_needed
    for k in order:
        j = int(problem.option_job[k])
        if chosen[j] >= 0:
            continue
        g = problem.gpus[j]
        tail = problem.tail_slot[k]
        end = min(problem.option_horizon[k], problem.num_leases) + (tail >= 0)
        fits = np.flatnonzero(free[:end] >= g)
        gives = width
        if tail >= 0:
            gives = width.astype(float)
            gives[tail] = problem.option_tail[k]
        take = latest_slots(fits, gives, need[j], problem.overhead, bool(problem.held[j]))
        if take is not None:
            free[take] -= g
            chosen[j] = k
            leases[j] = tuple(int(t) for t in take)
    unplaced = tuple(int(j) for j in np.flatnonzero(problem.admitted & (chosen < 0)))
    return chosen, leases, unplaced


def latest_slots(fits: np.ndarray, width: np.ndarray | None, needed,
                 overhead: float = 0.0, held_before: bool = False) -> np.ndarray | None:
    """The latest of the slots `fits` (ascending) whose widths add up to `needed` leases, or
    None when all of them hold fewer (width None: one lease per slot). With overhead > 0
    (`LeaseProblem.per_run`), `needed` is leases of work and each run of consecutive slots
    taken loses `overhead`, except a run from slot 0 when `held_before`: taken latest first,
    a slot that starts a new run (the slot after it is not taken) adds its width less the
    overhead, one that extends the run after it adds its width."""
    if overhead > 0:
        latest = fits[::-1]
        w = np.ones(latest.size) if width is None else width[latest].astype(float)
        extends = np.zeros(latest.size, dtype=bool)
        extends[1:] = latest[1:] + 1 == latest[:-1]
        gain = w - overhead * ~extends + overhead * ((latest == 0) & held_before)
        count = int(np.searchsorted(np.cumsum(gain), needed - WORK_TOLERANCE))
        return None if count >= fits.size else fits[fits.size - count - 1:]
    if width is None:  # one lease per slot
        return fits[fits.size - needed:] if fits.size >= needed else None
    held = np.cumsum(width[fits[::-1]])
    count = int(np.searchsorted(held, needed))
    if count >= fits.size:
        return None
    return fits[fits.size - count - 1:]


def serves(problem: LeaseProblem, chosen: np.ndarray, held: np.ndarray) -> bool:
    """Every scheduled job of the plan gets its need (per run: the work itself, checked on the
    integral plan, whatever tolerance the solver met its rows to)."""
    on = np.flatnonzero(chosen >= 0)
    return bool(np.all(gets_its_work(problem, held[on], on, chosen[on])))


def gets_its_work(problem: LeaseProblem, held: np.ndarray, jobs: np.ndarray,
                  chosen: np.ndarray) -> np.ndarray:
    """(m,) bool: the plan rows held (m, H) give jobs `jobs` under options `chosen` their work
    (per run; without the per-run count every row does: its rows need whole leases only)."""
    if not problem.per_run:
        return np.ones(len(jobs), dtype=bool)
    return problem.progress(held, jobs, chosen) >= problem.work[jobs] - WORK_TOLERANCE


def _read_plan(problem: LeaseProblem, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(chosen, held) of a 0/1 column vector of `lease_milp` (held[j, t]: (n, H) bool)."""
    option, lease, _ = _option_columns(problem)
    X = option.shape[0]
    s = x[X:X + problem.num_options] > 0.5
    chosen = np.full(problem.num_jobs, -1, dtype=np.int64)
    chosen[problem.option_job[s]] = np.flatnonzero(s)
    on = (x[:X] > 0.5) & s[option]
    held = np.zeros((problem.num_jobs, problem.num_leases), dtype=bool)
    held[problem.option_job[option[on]], lease[on]] = True
    return chosen, held


def _plan_vector(problem: LeaseProblem, chosen: np.ndarray, held: np.ndarray) -> np.ndarray:
    """The 0/1 column vector of `lease_milp` for a plan (inverse of `_read_plan`)."""
    option, lease, start = _option_columns(problem)
    X = option.shape[0]
    vector = np.zeros(X + problem.num_options + (X if problem.per_run else 0))
    jobs, leases = np.nonzero(held & (chosen >= 0)[:, None])
    vector[start[chosen[jobs]] + leases] = 1.0
    vector[X + chosen[chosen >= 0]] = 1.0
    if problem.per_run:  # y: the run starts of the plan
        x = vector[:X]
        before = np.where(lease == 0, problem.held[problem.option_job[option]], 0.0)
        before[1:] = np.where(lease[1:] > 0, x[:-1], before[1:])
        vector[X + problem.num_options:] = np.maximum(x - before, 0.0)
    return vector


def _lp_values(problem: LeaseProblem, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s (K,), x (K, H)) of a column vector of `lease_milp`, x 0 past each horizon."""
    option, lease, _ = _option_columns(problem)
    X = option.shape[0]
    by_lease = np.zeros((problem.num_options, problem.num_leases))
    by_lease[option, lease] = x[:X]
    return x[X:X + problem.num_options], by_lease


def _restricted(problem: LeaseProblem, milp: LinearProgram, x_lp: np.ndarray,
                plan: np.ndarray) -> LinearProgram:
    """`milp` with each s_k fixed to the plan's value where the LP's s_k already equals it
    (RINS: the option choices the LP and the rounding agree on stay, the rest is searched)."""
    fixed = np.zeros(milp.num_cols, dtype=bool)
    X, K = _option_columns(problem)[0].shape[0], problem.num_options
    fixed[X:X + K] = np.abs(x_lp[X:X + K] - plan[X:X + K]) <= INTEGRALITY_TOLERANCE
    return replace(milp, col_lower=np.where(fixed, plan, milp.col_lower),
                   col_upper=np.where(fixed, plan, milp.col_upper))


@dataclass
class _Best:
    """The best complete plan offered so far (every admitted job scheduled) and its stage."""

    problem: LeaseProblem
    source: str = ""
    objective: float = -np.inf
    chosen: np.ndarray | None = None
    held: np.ndarray | None = None

    def offer(self, source: str, chosen: np.ndarray, held: np.ndarray) -> None:
        if np.any(chosen[self.problem.admitted] < 0) or not serves(self.problem, chosen, held):
            return
        objective = _objective(self.problem, chosen, held)
        if objective > self.objective:
            self.source, self.objective, self.chosen, self.held = source, objective, chosen, held

    def offer_result(self, source: str, result: SolveResult) -> None:
        if result.status.has_solution and result.x is not None:
            self.offer(source, *_read_plan(self.problem, result.x))

    def stop_reason(self, bound: float | None, mip_gap: float | None, left: float | None) -> str:
        """Why stages 3-4 can be skipped, or "" while they cannot (always "" without a plan)."""
        gap = relative_gap(self.objective if self.chosen is not None else None, bound)
        if gap is not None and gap <= PROVEN_GAP:
            return "optimal: the plan attains the LP bound"
        if gap is not None and mip_gap is not None and gap <= mip_gap:
            return f"gap {gap:.3g} <= mip_gap {mip_gap:g} against the LP bound"
        if self.chosen is not None and left == 0.0:
            return "time limit reached before the full MILP"
        return ""


def solve_lease_problem(problem: LeaseProblem, solver: Solver | str = DEFAULT_SOLVER,
                        time_limit: float | None = 5.0, mip_gap: float | None = None,
                        threads: int | None = None, search: bool = True) -> ChronusPlan:
    """Solve one lease boundary by the stages of the module docstring.

    solver: the Solver session of the MILP stages (a backend name builds one); the LP stage
    runs on HiGHS through the same session (`with_backend`), so its program record holds every
    stage, and it ends with the lease MILP (`Solver.last_program`, what MPS export writes) even
    when stage 4 did not run. time_limit: seconds for all stages together (None: no limit);
    mip_gap: relative gap to the bound at which the MILP stages stop; threads: solver threads
    (mip_gap and threads None: the session's). `details` holds incumbent_from, lp_bound,
    solver_bound and stage_end (seconds from the start at which each stage that ran ended).
    search False: stages 1-2 only, the LP without a time limit, so that the plan does not
    depend on the machine's speed or load (the same problem gives the same plan)."""
    start = time.perf_counter()
    session = solver if isinstance(solver, Solver) else Solver(solver)
    if not search:
        time_limit = None
        session.require(Capability.MILP, "the lease MILP")  # a wrong name fails even unused
    threads = session.settings.threads if threads is None else threads
    mip_gap = session.settings.mip_gap if mip_gap is None else mip_gap

    def left(reserve: float = 0.0) -> float | None:
        """Seconds of the budget left after `reserve` more (None: no limit)."""
        if time_limit is None:
            return None
        return max(time_limit - (time.perf_counter() - start) - reserve, 0.0)

    def stage(limit: float | None, hint: np.ndarray | None = None) -> Solver:
        return session.with_settings(time_limit=limit, mip_gap=mip_gap, threads=threads,
                                     start=hint)

    milp, relaxed = lease_programs(problem)
    best = _Best(problem)
    stage_end: dict[str, float] = {}
    lp_bound = hint = full = None
    relaxation = session.with_backend(LP_SOLVER).with_settings(
        time_limit=left(), mip_gap=None, threads=threads, start=None).solve(relaxed)
    stage_end["lp"] = time.perf_counter() - start
    if relaxation.status is Status.OPTIMAL:
        lp_bound, x = relaxation.objective, relaxation.x
        if np.all(np.abs(x - np.round(x)) <= INTEGRALITY_TOLERANCE):
            best.offer("lp", *_read_plan(problem, x))
        rounded = lp_roundings(problem, *_lp_values(problem, x))
        for plan in rounded:
            best.offer("lp_rounding", *plan)
        hint = _plan_vector(problem, *(rounded[0] if best.chosen is None else (best.chosen,
                                                                             best.held)))
        stage_end["lp_rounding"] = time.perf_counter() - start
        if search and left(STOP_SECONDS) != 0.0 and not best.stop_reason(lp_bound, mip_gap,
                                                                           left()):
            best.offer_result("restricted", stage(left(STOP_SECONDS), hint).solve(
                _restricted(problem, milp, x, hint)))
            stage_end["restricted"] = time.perf_counter() - start
    stopped = best.stop_reason(lp_bound, mip_gap, left(STOP_SECONDS))
    if not stopped and not search:
        stopped = "search off: the LP and its roundings only"
    if not stopped:
        if best.chosen is not None:
            hint = _plan_vector(problem, best.chosen, best.held)
        full = stage(left(STOP_SECONDS), hint).solve(milp)
        best.offer_result("solver", full)
        stage_end["solver"] = time.perf_counter() - start
    if full is None:  # the program of this solve, for MPS export, is the MILP all the same
        session.record(milp)
    solver_bound = None if full is None else full.bound
    bounds = [b for b in (lp_bound, solver_bound) if b is not None]
    bound = min(bounds) if bounds else None
    details = {"incumbent_from": best.source, "lp_bound": lp_bound, "solver_bound": solver_bound,
               "stage_end": stage_end}
    termination = stopped or full.detail
    if best.chosen is None:
        chosen, leases, unplaced = latest_fit_greedy(problem)
        status = Status.INFEASIBLE if unplaced else Status.FEASIBLE
        return ChronusPlan(status=status, objective=plan_objective(problem, chosen, leases),
                           bound=bound if status is Status.FEASIBLE else None, leases=leases,
                           chosen=chosen, used_fallback=True, solver=session.name,
                           solve_seconds=time.perf_counter() - start, termination=termination,
                           unplaced=unplaced, details=details)
    gap = relative_gap(best.objective, bound)
    proven = (full is not None and full.status is Status.OPTIMAL) or (gap is not None
                                                                      and gap <= PROVEN_GAP)
    leases = {int(j): tuple(np.flatnonzero(best.held[j]).tolist())
              for j in np.flatnonzero(best.chosen >= 0)}
    return ChronusPlan(status=Status.OPTIMAL if proven else Status.FEASIBLE,
                       objective=best.objective,
                       bound=best.objective if proven and bound is None else bound, leases=leases,
                       chosen=best.chosen, used_fallback=False, solver=session.name,
                       solve_seconds=time.perf_counter() - start, termination=termination,
                       details=details)


def chronus_lease_milp(gpus, leases_needed, option_job, option_value, option_horizon, capacity,
                       sigma: float = 1.0, solver: Solver | str = DEFAULT_SOLVER,
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
