"""Space sharing: max-min fairness with pairs of jobs co-located on the same GPUs
(docs/space-sharing.md; Gavel's `max_min_fairness_packed`). `targets.py` reuses the LP with
other fairness rows (`Target`) for water filling and makespan.

Columns: solo X[m,j] (job m alone on s_m GPUs of type j, a time fraction, as in max-min
fairness) and pair P[p], p = (m, m', j) with m < m': both jobs share s GPUs of type j, where
s = s_m = s_m', both can run on j, and the co-location table has their pair of job types on j.
Job m then makes Q_j[m,m'] steps/s (`PairTable`). With Tmax_m = max_j T[m,j] and
k_m = w_m thr^eq_m / (s_m Tmax_m):

    max t
    s.t. sum_j X[m,j] + sum_{p ∋ m} P[p]                           <= 1   time of job m   (u_m)
         sum_m (s_m/c_j) X[m,j] + sum_{p on j} (s/c_j) P[p]         <= 1   GPUs of type j  (v_j)
         (sum_j T[m,j] X[m,j] + sum_{p ∋ m} Q_p,m P[p]) / Tmax_m
              - k_m t                                               >= 0   fairness of m   (y_m)
         X, P, t >= 0;  X[m,j] = 0 where job m cannot run on type j

The fairness rows are max-min fairness' s_m thr_m / (w_m thr^eq_m) >= t divided by
1 / k_m, so every coefficient is O(1). `allocation[m, j]` is job m's total time on type j,
solo plus paired; a pair holds s GPUs once.

Normalizer: ours, thr^eq_m = sum_j T[m,j] c_j / sum_j c_j from solo throughputs, the same as
`max_min_fairness`, so with no pairs the two policies agree. Gavel's packed policy normalizes
by the same capacity-weighted equal share (the throughput of its proportional policy;
docs/gavel-adapter.md). Both scale a job's paired throughput like its solo one.

Pruning. A pair with Q_j[m,m'] / T[m,j] + Q_j[m',m] / T[m',j] <= 1 never helps: replace
P[p] = f by solo time X[m,j] += f Q_j[m,m'] / T[m,j] and X[m',j] += f Q_j[m',m] / T[m',j].
Each job keeps its throughput exactly, each job's time does not grow (each share <= f), and
the GPUs used fall from s f to s f (sum of the shares) <= s f. So some optimum uses no such
pair, and dropping those columns keeps the optimum.

Table details: an entry (A, B, type, [a, b]) also gives (B, A) -> [b, a]; a pair of types missing
from the table cannot share that GPU type; a job without a type label (or one the table does
not name) is never paired; an entry for two jobs of the same type with a != b gives each job
min(a, b) (a conservative reading: which job gets which rate is not recorded). The table is
keyed by type labels only, so it applies to pairs of any (equal) scale factor.

Methods: `columns` (column generation, `columns.py`, the default, on a backend that adds
columns to a loaded LP; started from the pairs of the LP over classes of interchangeable jobs,
`seed.py`) and `dense` (every candidate pair column in one LP, any LP backend; with
prune=False every pair at all).
The LP is stated with `schedopt.modeling` (`space_sharing_model`); column generation adds pair
columns to the loaded master as sparse column blocks (`pair_columns`) built from the same pair
terms (`pair_terms`). docs/space-sharing.md has the proofs and the measurements.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from schedopt.backends import SolveOptions, Status, backends_with
from schedopt.backends.base import LinearProgram
from schedopt.backends.session import Solver
from schedopt.core.capabilities import Capability
from schedopt.errors import PolicyError
from schedopt.core.outcome import Outcome
from schedopt.core.problem import ThroughputProblem
from schedopt.instance.model import Instance
from schedopt.modeling import Expr, Model, Variable
from schedopt.policies.gavel.models import row_max
from schedopt.policies.packed.decision import PairedAllocation
from schedopt.core.sparse_import import scipy_sparse

sp = scipy_sparse()

GAP_TOLERANCE = 1e-6  # relative gap (bound - objective) / bound for status optimal


@dataclass(frozen=True, eq=False)
class PairTable:
    """Co-location throughputs by job-type label, vectorized.

    labels: (K,) job-type labels. job_type: (M,) int, each job's index into `labels` (-1: the
    job is never paired). rate: (J, K, K) steps/s; rate[j, a, b] is what a job of type a makes
    while it shares GPUs of type j with a job of type b (nan: the two cannot share type j).
    """

    labels: tuple[str, ...]
    job_type: np.ndarray
    rate: np.ndarray

    def __post_init__(self) -> None:
        K = len(self.labels)
        if self.rate.ndim != 3 or self.rate.shape[1:] != (K, K):
            raise PolicyError(f"pair rates must have shape (GPU types, {K}, {K}), "
                              f"got {self.rate.shape}")
        if self.job_type.ndim != 1 or np.any((self.job_type < -1) | (self.job_type >= K)):
            raise PolicyError(f"job_type must be a vector of indices in [-1, {K})")
        if np.any(self.rate < 0):
            raise PolicyError("pair rates must be >= 0 steps/s (nan = cannot share)")

    @classmethod
    def from_arrays(cls, job_type, rate, labels=None) -> "PairTable":
        """From (M,) job-type indices and (J, K, K) rates (labels default to "t0", "t1", ...)."""
        rate = np.asarray(rate, dtype=float)
        labels = tuple(labels) if labels is not None else tuple(f"t{k}" for k in range(rate.shape[-1]))
        return cls(labels, np.asarray(job_type, dtype=np.int64), rate)

    @classmethod
    def none(cls, num_jobs: int, num_types: int) -> "PairTable":
        """A table with no pairs at all (space sharing reduces to max-min fairness)."""
        return cls((), np.full(num_jobs, -1, dtype=np.int64), np.zeros((num_types, 0, 0)))

    @classmethod
    def from_instance(cls, instance: Instance) -> "PairTable":
        """The instance's `performance.colocated` table, indexed by its jobs' `type` labels."""
        return cls.from_entries(instance.performance.colocated, instance.cluster.type_names,
                                [job.type for job in instance.jobs])

    @classmethod
    def from_entries(cls, entries, gpu_types, job_labels) -> "PairTable":
        """A table from `performance.colocated` entries (types, gpu_type, throughput), for jobs
        labelled `job_labels` (None or a label the entries never name: never paired)."""
        labels = sorted({label for entry in entries for label in entry.types})
        index = {label: k for k, label in enumerate(labels)}
        gpu = {name: j for j, name in enumerate(gpu_types)}
        rate = np.full((len(gpu), len(labels), len(labels)), np.nan)
        for entry in entries:  # the table's size, not the jobs'
            a, b = index[entry.types[0]], index[entry.types[1]]
            ta, tb = entry.throughput
            rate[gpu[entry.gpu_type], a, b] = min(ta, tb) if a == b else ta
            rate[gpu[entry.gpu_type], b, a] = min(ta, tb) if a == b else tb
        job_type = [index.get(label, -1) for label in job_labels]  # read once, as M rows
        return cls(tuple(labels), np.array(job_type, dtype=np.int64).reshape(-1), rate)

    def rows(self, index: np.ndarray) -> "PairTable":
        """The same table for the jobs `index` (e.g. a simulation's active jobs)."""
        return PairTable(self.labels, self.job_type[index], self.rate)

    def rate_of(self, j: np.ndarray, m: np.ndarray, partner: np.ndarray) -> np.ndarray:
        """Steps/s of jobs m while paired with jobs `partner` on GPU types j (arrays of equal
        length; nan where the two cannot share or either is untyped)."""
        a, b = self.job_type[m], self.job_type[partner]
        if not self.labels:
            return np.full(np.shape(m), np.nan)
        out = self.rate[j, np.maximum(a, 0), np.maximum(b, 0)]
        return np.where((a >= 0) & (b >= 0), out, np.nan)

    def pair_rates(self, j: int) -> np.ndarray:
        """(M, M) steps/s of job m while paired with job m' on GPU type j (nan: no such pair)."""
        M = self.job_type.shape[0]
        if not self.labels:
            return np.full((M, M), np.nan)
        k = np.maximum(self.job_type, 0)
        Q = self.rate[j][np.ix_(k, k)]
        untyped = self.job_type < 0
        Q[untyped, :] = np.nan
        Q[:, untyped] = np.nan
        return Q


@dataclass(frozen=True, eq=False)
class Candidates:
    """The pair columns an optimum may use. Q: (J, M, M) steps/s of job m paired with m' on
    type j (0 outside the candidates); mask: (J, M, M) bool, symmetric, True for candidates.
    pairs / pruned: how many pairs the table allows / how many of them pruning dropped."""

    Q: np.ndarray
    mask: np.ndarray
    pairs: int
    pruned: int

    @classmethod
    def build(cls, problem: ThroughputProblem, table: PairTable, prune: bool = True) -> "Candidates":
        M, J = problem.num_jobs, problem.num_types
        if table.job_type.shape != (M,) or table.rate.shape[0] != J:
            raise PolicyError(f"the pair table is for {table.job_type.shape[0]} jobs and "
                              f"{table.rate.shape[0]} GPU types, the problem has {M} and {J}")
        s, run, T = problem.scale_factor, problem.runnable, problem.throughput
        Q, mask = np.zeros((J, M, M)), np.zeros((J, M, M), dtype=bool)
        same_size = (s[:, None] == s[None, :]) & ~np.eye(M, dtype=bool)
        allowed = dropped = 0
        for j in range(J):  # GPU types; every step below is (M, M) numpy
            q = table.pair_rates(j)
            ok = same_size & run[:, j, None] & run[None, :, j] & np.isfinite(q) & np.isfinite(q.T)
            q = np.where(ok, q, 0.0)
            ok &= (q + q.T) > 0
            allowed += int(ok.sum()) // 2
            if prune:
                share = q / np.where(run[:, j], T[:, j], 1.0)[:, None]
                helps = ok & (share + share.T > 1.0)
                dropped += (int(ok.sum()) - int(helps.sum())) // 2
                ok = helps
            Q[j], mask[j] = np.where(ok, q, 0.0), ok
        return cls(Q, mask, allowed, dropped)

    def upper_pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(j, m, m') of every candidate with m < m'."""
        return np.nonzero(np.triu(self.mask, k=1))


# ---------------------------------------------------------------- the LP's pieces

def scaling(problem: ThroughputProblem,
            solo: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(Tmax, k): each job's best solo steps/s and its t coefficient (see module docstring).
    solo: T * runnable when the caller has it."""
    Tmax = row_max(problem.throughput * problem.runnable if solo is None else solo)
    k = problem.weight * problem.equal_share_throughput / (problem.scale_factor * Tmax)
    return Tmax, k


def by_group(expr: Expr, groups: np.ndarray, size: int) -> Expr:
    """(size,) expression whose entry g is the sum of the entries i of `expr` with
    groups[i] == g (a scatter-add: sum_{p ∋ m} P[p] is by_group(P, pm, M) + by_group(P, pq, M)).
    expr: 1-d and without a constant term (a variable block, scaled entry by entry)."""
    rows = groups if expr.diagonal else groups[expr.rows]
    return Expr(rows, expr.cols, expr.coefs, 0.0, (size,))


def pair_terms(problem: ThroughputProblem, cand: Candidates, P: Expr, pj, pm, pq):
    """What the pair columns P[p], p = (pj, pm, pq), add to the master's rows: (time (M,),
    GPUs (J,), fairness (M,)) expressions (module docstring)."""
    M, J = problem.num_jobs, problem.num_types
    Tmax, _ = scaling(problem)
    time_rows = by_group(P, pm, M) + by_group(P, pq, M)
    gpu_rows = by_group((problem.scale_factor[pm] / problem.capacity[pj]) * P, pj, J)
    fair_rows = (by_group((cand.Q[pj, pm, pq] / Tmax[pm]) * P, pm, M)
                 + by_group((cand.Q[pj, pq, pm] / Tmax[pq]) * P, pq, M))
    return time_rows, gpu_rows, fair_rows


def space_sharing_model(problem: ThroughputProblem, cand: Candidates | None = None,
                        pairs: tuple | None = None, k: np.ndarray | None = None,
                        floor: np.ndarray | None = None) -> tuple[Model, Variable, Variable]:
    """The LP of the module docstring as a Model over [X (M, J), t, P (pairs)]: every solo
    column and the pair columns `pairs` = (j, m, m') of `cand` (none when None). Rows in order:
    time (M), GPUs (J), fairness (M), the order `columns.py` reads the duals in.
    k: (M,) the t coefficients of the fairness rows (default: max-min fairness' k_m); floor:
    (M,) their right-hand sides (default 0), in units of Tmax_m: the rows read
    steps_m / Tmax_m - k_m t >= floor_m (`targets.py` uses both)."""
    M, J = problem.num_jobs, problem.num_types
    runnable = problem.runnable
    solo = problem.throughput * runnable
    Tmax, k_fair = scaling(problem, solo)
    k = k_fair if k is None else k
    model = Model()
    X = model.variable("X", (M, J), upper=np.where(runnable, np.inf, 0.0))
    t = model.variable("t")
    share = problem.scale_factor[:, None] / np.maximum(problem.capacity, 1e-300)[None, :]
    solo = solo / Tmax[:, None]  # not in place: with one GPU type Tmax is a view of solo
    time_rows, gpu_rows = X.sum(axis=1), (share * X).sum(axis=0)
    fair_rows = (solo * X).sum(axis=1) - k * t
    if pairs is not None:
        P = model.variable("P", pairs[0].size)
        pair_time, pair_gpus, pair_fair = pair_terms(problem, cand, P, *pairs)
        time_rows, gpu_rows, fair_rows = (time_rows + pair_time, gpu_rows + pair_gpus,
                                          fair_rows + pair_fair)
    model.add("time", time_rows <= 1.0)
    model.add("gpus", gpu_rows <= 1.0)
    model.add("fairness", fair_rows >= (0.0 if floor is None else floor))
    model.maximize(t)
    return model, X, t


def master_lp(problem: ThroughputProblem, k: np.ndarray | None = None,
              floor: np.ndarray | None = None) -> LinearProgram:
    """The LP over [X (M*J), t] with every solo column and no pair column (k, floor: as for
    `space_sharing_model`)."""
    return space_sharing_model(problem, k=k, floor=floor)[0].compile()


def pair_columns(problem: ThroughputProblem, cand: Candidates, pj, pm, pq) -> sp.csc_matrix:
    """(2M + J, n) coefficients of the pair columns (pj, pm, pq) in the rows of `master_lp`
    (`pair_terms` on a block of n columns of their own), for `IncrementalProgram.add_columns`."""
    M, J, n = problem.num_jobs, problem.num_types, pj.shape[0]
    P = Model().variable("P", n)
    blocks = pair_terms(problem, cand, P, pj, pm, pq)
    offset = np.cumsum([0] + [rows.size for rows in blocks[:-1]])
    A = sp.csc_matrix((np.concatenate([rows.coefs for rows in blocks]),
                       (np.concatenate([rows.rows + o for rows, o in zip(blocks, offset)]),
                        np.concatenate([rows.cols for rows in blocks]))), shape=(2 * M + J, n))
    A.eliminate_zeros()
    A.sort_indices()
    return A


@dataclass(frozen=True, eq=False)
class Target:
    """What the fairness rows ask (module docstring, with k and floor general):
    steps_m / Tmax_m - k_m t >= floor_m. The policy's objective is `report(t)` of the largest
    t an allocation reaches: t itself (max-min fairness), or scale / t (makespan, seconds)."""

    k: np.ndarray
    floor: np.ndarray | None = None
    inverse: bool = False
    scale: float = 1.0

    @classmethod
    def max_min(cls, problem: ThroughputProblem) -> "Target":
        return cls(scaling(problem)[1])

    def report(self, t: float | None) -> float | None:
        if t is None or not self.inverse:
            return t
        return self.scale / t if t > 0 else float("inf")

    def level(self, problem: ThroughputProblem, steps: np.ndarray) -> float:
        """The largest t the rows allow at these (M,) steps/s (floors aside)."""
        Tmax = scaling(problem)[0]
        rising = self.k > 0
        return float(np.min(steps[rising] / (Tmax[rising] * self.k[rising]), initial=np.inf))


@dataclass
class Stage:
    """One solve of the LP of a `Target`. x = [X, t, P] (None: no solution); pairs: (j, m, m')
    of x's pair columns; bound: proven upper bound on t (None: none); converged: optimal to
    the method's tolerance; y: (M,) fairness-row duals scaled so that sum_m -y_m k_m = 1
    (None: not available); result: the backend's last answer; details: the method's
    statistics."""

    x: np.ndarray | None
    pairs: tuple
    bound: float | None
    converged: bool
    y: np.ndarray | None
    result: object
    details: dict


def paired_allocation(problem: ThroughputProblem, cand: Candidates, x: np.ndarray,
                      pj, pm, pq) -> PairedAllocation:
    """The decision in an LP solution x = [X, t, P] (entries under 1e-12 dropped)."""
    M, J = problem.num_jobs, problem.num_types
    X = np.clip(x[: M * J].reshape(M, J), 0.0, 1.0)
    X[X < 1e-12] = 0.0
    P = np.clip(x[M * J + 1:], 0.0, 1.0)
    used = P >= 1e-12
    pj, pm, pq, P = pj[used], pm[used], pq[used], P[used]
    return PairedAllocation(X, pm, pq, pj, P, cand.Q[pj, pm, pq], cand.Q[pj, pq, pm])


def outcome_of(problem: ThroughputProblem, decision: PairedAllocation, target: Target,
               bound: float | None, converged: bool, seconds: float, solver: str | None,
               details: dict) -> Outcome:
    """Outcome of a decision: objective `target.report` of its own level (recomputed from
    the decision, not the LP's t), status optimal only when converged and the relative gap
    to `bound` (on t) is at most GAP_TOLERANCE; details gain bound, gap, pairs,
    effective_throughput and gpus_in_use."""
    steps = decision.steps(problem)
    level = target.level(problem, steps)
    gap = None if bound is None else (bound - level) / max(abs(bound), 1e-12)
    status = Status.OPTIMAL if converged and gap is not None and gap <= GAP_TOLERANCE \
        else Status.FEASIBLE
    details.update(
        bound=target.report(bound), gap=gap, pairs=decision.pairs(problem),
        effective_throughput=dict(zip(problem.job_ids, steps.tolist())),
        gpus_in_use=dict(zip(problem.gpu_types, decision.gpus_in_use(problem).tolist())))
    return Outcome.from_status(decision.total(), status, target.report(level),
                               target.report(bound), seconds, solver, details,
                               decision=decision)


def failed(stage: Stage, seconds: float, solver: str | None) -> Outcome:
    """The outcome of a stage without a solution (the backend's status and reason)."""
    result = stage.result
    return Outcome.from_status(None, result.status, None, None, seconds, solver,
                               stage.details | {"termination": result.detail},
                               termination=result.reason)


def fairness_duals(pi: np.ndarray | None, problem: ThroughputProblem,
                   k: np.ndarray) -> np.ndarray | None:
    """The fairness rows' duals (y <= 0) scaled so that sum_m -y_m k_m = 1 (None: no duals)."""
    if pi is None:
        return None
    M, J = problem.num_jobs, problem.num_types
    y = np.minimum(pi[M + J:], 0.0)
    S = float(-(y @ k))
    return y / S if S > 0 else None


def dense_stage(problem: ThroughputProblem, cand: Candidates, solver: Solver,
                target: Target) -> Stage:
    """Every candidate pair column in one LP (the reference for column generation)."""
    pj, pm, pq = cand.upper_pairs()
    model = space_sharing_model(problem, cand, (pj, pm, pq), target.k, target.floor)[0]
    result = solver.solve(model.compile())
    details = {"method": "dense", "candidate_pairs": cand.pairs - cand.pruned,
               "pruned_pairs": cand.pruned, "columns_generated": pj.shape[0]}
    return Stage(result.x, (pj, pm, pq), result.bound, result.status is Status.OPTIMAL,
                 fairness_duals(result.row_duals, problem, target.k), result, details)


# What column generation asks of a backend: a loaded LP that takes columns, and its duals.
COLUMN_GENERATION = Capability.ADD_COLUMNS | Capability.DUALS


def prepared(problem: ThroughputProblem, table: PairTable, solver: Solver | str,
             options: SolveOptions, method: str, prune: bool) -> tuple[Solver, Candidates | None]:
    """(the Solver, the candidate pairs; None for a problem without jobs), after checking the
    method, the backend it needs and that every job can run somewhere."""
    if not isinstance(solver, Solver):
        solver = Solver(solver, options)
    if method not in ("columns", "dense"):
        raise PolicyError(f"method must be 'columns' or 'dense', got {method!r}")
    if method == "columns" and not solver.supports(COLUMN_GENERATION):
        raise PolicyError(f"column generation needs a solver that adds columns to a loaded LP "
                          f"({', '.join(backends_with(COLUMN_GENERATION))}), not "
                          f"{solver.name!r}; use -o method=dense for other solvers")
    if problem.num_jobs == 0:
        return solver, None
    problem.require_runnable()
    return solver, Candidates.build(problem, table, prune)


def solve_stage(problem: ThroughputProblem, cand: Candidates, solver: Solver, target: Target,
                method: str, start: tuple | None, **column_options) -> Stage:
    """The LP of `target` by `method` (columns: started from the pair columns `start`)."""
    if method == "dense":
        return dense_stage(problem, cand, solver, target)
    from schedopt.policies.packed.columns import column_generation

    return column_generation(problem, cand, solver, target, start, **column_options)


def empty(problem: ThroughputProblem, solver: Solver) -> Outcome:
    """The outcome for a problem without jobs."""
    return Outcome.from_status(np.zeros((0, problem.num_types)), Status.OPTIMAL, None, None,
                               0.0, solver.name)


def solve_target(problem: ThroughputProblem, table: PairTable, target_of, solver: Solver | str,
                 options: SolveOptions, method: str, prune: bool, seed: bool,
                 **column_options) -> Outcome:
    """One LP of the `Target` `target_of(problem)` with space sharing, by `method`."""
    start = time.perf_counter()
    solver, cand = prepared(problem, table, solver, options, method, prune)
    if cand is None:
        return empty(problem, solver)
    target = target_of(problem)
    first = None
    if method == "columns" and seed:
        from schedopt.policies.packed.seed import class_seed

        first = class_seed(problem, cand, table.job_type, solver)
    stage = solve_stage(problem, cand, solver, target, method, first, **column_options)
    seconds = time.perf_counter() - start
    if stage.x is None:
        return failed(stage, seconds, solver.name)
    decision = paired_allocation(problem, cand, stage.x, *stage.pairs)
    return outcome_of(problem, decision, target, stage.bound, stage.converged, seconds,
                      solver.name, stage.details)


def max_min_fairness_packed(problem: ThroughputProblem, table: PairTable,
                            solver: Solver | str = "highs", options: SolveOptions = SolveOptions(),
                            method: str = "columns", prune: bool = True, seed: bool = True,
                            **column_options) -> Outcome:
    """Max-min fairness with space sharing (module docstring). `solver`: a `Solver`, or a
    backend name solved with `options` (options are ignored with a Solver, which has its own
    settings). `method`: "columns" (column generation on a backend with ADD_COLUMNS,
    `columns.column_generation`; options `batch`, `max_iterations`, `tolerance`), started from
    the pairs of the LP over classes of interchangeable jobs (`seed.class_seed`; seed=False
    starts from no pair), or "dense" (one LP with every candidate pair, any LP backend).
    `prune=False` keeps the pairs that cannot help."""
    return solve_target(problem, table, Target.max_min, solver, options, method, prune, seed,
                        **column_options)
