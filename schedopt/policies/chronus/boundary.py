"""One Chronus lease boundary from job state: who holds GPUs in the next lease (docs/formulations.md §3).

The shared step of `schedopt solve --policy chronus` (one boundary, from an instance) and of the
lease-based simulator (every boundary). A boundary at time `now` (s) sees the active jobs as a
`LeaseJobs`: GPUs (rounded up for consolidation), seconds of running left, and deadline options
as absolute times (s) with values. Leases are `lease_seconds` long; a job that starts or resumes
loses `resume_overhead_s` of its lease to restoring its checkpoint.

- Work needed (`resume_overhead_per="run"`, the default): r_j = remaining_s / lease_seconds
  leases of running, the overhead (a = resume_overhead_s / lease_seconds of a lease) paid once
  per run of consecutive leases the plan gives the job, and not at the start of the window by a
  job in `held` (it held its GPUs in the last lease and keeps them); see `LeaseProblem`. With
  "lease": n_j = ceil(remaining_s / (lease_seconds - resume_overhead_s)) leases, as if every
  lease paid the overhead (conservative).
- Horizon of an option due at A: the slots of `lease_grid` that end by A (single leases near
  now, aligned blocks of 2, 4, 8... leases farther, over `horizon_seconds`; with one lease per
  slot, floor((A - now) / lease_seconds) capped at the window). An option whose slots cannot
  serve the job (one run over all of them) is unreachable; counting per lease, unless the job
  is tight (`plan_inputs`).
- `demote_hopeless`: admitted jobs none of whose options is reachable any more lose their
  guarantee and become best effort; so do admitted jobs the lease MILP cannot place
  (`BoundaryDecision.unplaced`; only when the solver found no plan, the greedy and rounding
  fallbacks failed and the reservations, when given, are not a plan). A latest-fit packing is not used to demote: it is a heuristic, and in simulation every
  job it demoted would have met its deadline.
- `admit_arrivals`: arriving SLO jobs, in order, through `chronus_admission.admit` against the
  GPUs the admitted jobs' reservations leave free (every GPU of the pool in every lease of the
  window is for SLO jobs). Reservations are the leases the last lease MILP gave each admitted
  job, plus the latest-fit placement of each job admitted since: together a feasible plan for
  every admitted job, so admission never rejects a job because a re-packing of the admitted
  ones happens to fail. A job they cannot hold gets a second chance: a latest-fit packing of
  the admitted jobs and it together, which, when it places all, becomes the reservations
  (option `repack`). In a simulation, SLO jobs turned away may try again at later boundaries
  (`policy.ChronusOptions.readmit`). Both are off by default (measured: mixed).
- Tails (`option_tails`, overhead per run): an option may also use the part of the lease its
  deadline falls in, up to the deadline (when that lease is planned on its own); without it a
  deadline 2.9 leases away counts as 2, and a guaranteed job runs up to a lease earlier than
  it must, taking GPUs from jobs due sooner. Admission still packs whole leases.
- `plan_boundary`: the lease MILP over the admitted jobs (must get an option) and the other SLO
  jobs with a reachable option (may; `others`: all, none, or those an earliest-deadline-first
  projection says would miss, `edf_meets`). With `lazy`, lease 0 goes to every waiting job in
  the fill's order instead whenever the admitted jobs' rest of work still fits in the leases
  after it (`_lazy_plan`): a guaranteed job then runs only as early as it must, and its
  guarantee stays a plan. Then the GPUs the MILP leaves free in lease 0 go to
  every other waiting job: SLO jobs that can still meet a deadline first (earliest deadline first),
  then shortest remaining service (GPU-seconds) first (`fill_order`, `fill_in_order`).
  sigma "adaptive" is -1 (guaranteed jobs run late, leaving lease 0 to others) when a job that
  is not guaranteed waits, else +1 (run guaranteed jobs early).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from schedopt.errors import PolicyError, SchedoptError
from schedopt.backends import Status
from schedopt.backends.session import Solver
from schedopt.backends.base import relative_gap
from schedopt.policies.chronus.lease_milp import (
    DEFAULT_SOLVER,
    PROVEN_GAP,
    WORK_TOLERANCE,
    ChronusPlan,
    LeaseProblem,
    gets_its_work,
    plan_objective,
    serves,
    solve_lease_problem,
)
from schedopt.policies.chronus.admission import (
    JobSet,
    NewJob,
    admit,
    latest_fit_packing,
    round_up_gpus,
)
from schedopt.instance.model import Instance
from schedopt.policies.chronus.problem import lease_count
from schedopt.policies.chronus.rounding import lp_roundings


@dataclass(frozen=True)
class LeaseInstance:
    """An instance (or trace) as arrays over N jobs (file order) on one homogeneous pool:
    `capacity` GPUs of `gpu_type` (default: the type with the most GPUs). gpus: scale_factor
    rounded up to 1, 2, 4, 8n on the pool's nodes (`round_up`; kept as requested when the
    rounded count exceeds the pool); run_s: seconds of running left (remaining_steps /
    steps/s on the pool); option_* (K,): deadline options (`Job.slo_options`) with absolute
    deadlines (arrival + after_s, s), by job and increasing deadline."""

    ids: np.ndarray
    arrival: np.ndarray
    gpus: np.ndarray
    run_s: np.ndarray
    option_job: np.ndarray
    option_deadline_s: np.ndarray
    option_value: np.ndarray
    gpu_type: str
    capacity: int

    @classmethod
    def from_instance(cls, trace: Instance, gpu_type: str | None = None,
                      round_up: bool = True) -> LeaseInstance:
        types = trace.cluster.gpu_types
        if gpu_type is None:
            gpu_type = max(types.values(), key=lambda t: t.count).name if types else None
        if gpu_type == "all" and len(types) > 1:
            raise SchedoptError("gpu_type=all plans every GPU type at one boundary (schedopt "
                                "solve --policy chronus); lease by lease, one type is "
                                f"replayed: pick one of {', '.join(types)}")
        if gpu_type == "all":
            gpu_type = next(iter(types))
        if gpu_type not in types:
            raise SchedoptError(f"unknown GPU type {gpu_type!r} for the lease pool; expected one "
                                f"of {', '.join(types)}")
        pool = types[gpu_type]
        jobs = trace.jobs
        where = trace.source or "trace"
        trace.require_total_steps("planned in leases")
        speed = np.array([j.throughput[gpu_type] for j in jobs], dtype=float)
        requested = np.array([j.scale_factor for j in jobs], dtype=np.int64)
        bad = [j.id for j, s, g in zip(jobs, speed, requested) if s <= 0 or g > pool.count]
        if bad:
            raise SchedoptError(f"{where}: job(s) {', '.join(bad[:5])} cannot run on the "
                                f"{pool.count} {gpu_type} GPUs of the lease pool (throughput 0 "
                                f"there or more GPUs than it has); pick another gpu_type")
        gpus = requested
        if round_up and requested.size:
            rounded = round_up_gpus(requested, pool.gpus_per_node)
            gpus = np.where(rounded <= pool.count, rounded, requested)
        remaining = np.array([j.remaining_steps for j in jobs], dtype=float)
        options = [(m, j.arrival_time + o.after_s, o.value)
                   for m, j in enumerate(jobs) for o in j.slo_options]
        opt = np.array(options, dtype=float).reshape(-1, 3)
        return cls(np.array(trace.job_ids, dtype=object),
                   np.array([j.arrival_time for j in jobs], dtype=float), gpus,
                   remaining / np.where(speed > 0, speed, 1.0), opt[:, 0].astype(np.int64),
                   opt[:, 1], opt[:, 2], gpu_type, pool.count)

    @property
    def num_jobs(self) -> int:
        return self.ids.shape[0]

    def lease_jobs(self, active: np.ndarray, remaining_s: np.ndarray) -> LeaseJobs:
        """The `active` jobs (indices) with their current seconds of running left."""
        full = LeaseJobs(self.gpus, remaining_s, self.option_job, self.option_deadline_s,
                         self.option_value)
        return full.subset(active)

    def first_deadline(self) -> np.ndarray:
        """(N,) each job's SLO deadline (absolute s; inf for best effort)."""
        out = np.full(self.num_jobs, np.inf)
        np.minimum.at(out, self.option_job, self.option_deadline_s)
        return out


DEFAULT_LEASE_SECONDS = 1200.0
DEFAULT_FINE_LEASES = 96
DEFAULT_HORIZON_SECONDS = 115_200.0  # 32 h: 96 leases of 20 min, Chronus's artifact window
DEFAULT_SLOTS_PER_DOUBLING = 16
# Share of a lease the resume overhead must reach for tight jobs to be planned by default: at
# 20-min leases and 30 s (2.5%) counting the overhead in every lease is close to exact, and
# Chronus decides as it always has.
RUN_THROUGH_OVERHEAD = 0.05
FILLS = ("deadline", "service")
OTHERS = ("plan", "fill", "auto")
# lazy "auto": lease 0 in the fill's order only while the median admitted job could still wait
# this share of its running time left (benchmarks/chronus_lease_lengths.py: at deadlines of
# 1.3x a job's duration lazy guarantees missed more than the lease MILP's lease 0, at 2x and 3x
# fewer).
LAZY_SLACK = 0.5
# lazy and search set to DEFAULT take the default of the entry point: lease by lease (a run,
# `LeaseSettings`) a plan that does not depend on the machine's load; one boundary on its own
# (`policy.chronus_policy`, schedopt solve) the lease MILP's own plan, solved as far as the time
# limit allows.
DEFAULT = "default"
RUN_DEFAULTS = {"lazy": "auto", "search": False}
BOUNDARY_DEFAULTS = {"lazy": False, "search": True}


def entry_default(value, name: str, defaults: dict):
    """Option `name`'s `value`, or its default in `defaults` (an entry point's) when DEFAULT."""
    if name in defaults and isinstance(value, str) and value == DEFAULT:
        return defaults[name]
    return value


@dataclass(frozen=True)
class LeaseSettings:
    """lease_seconds: lease length (s, Chronus's artifact: 20 min); resume_overhead_s: seconds a
    job loses each time it starts or resumes; horizon_leases: leases planned one by one (full
    resolution) from now; horizon_seconds: the planning window (s; None: exactly
    horizon_leases leases), planned in coarser slots past the first horizon_leases
    (`lease_grid`); slots_per_doubling: slots of one width before widths double there;
    run_through: plan tight jobs (`plan_inputs`; None: when the resume overhead is at least
    RUN_THROUGH_OVERHEAD of a lease, where counting it in every lease is far from exact);
    sigma: +1, -1 or "adaptive"; solver / time_limit (s): for the lease MILP;
    resume_overhead_per: "run" counts the resume overhead once per run of consecutive leases a
    job holds (as the simulator charges it; a job that held its GPUs in the lease before now
    and keeps them pays nothing), "lease" in every lease (Chronus's artifact: conservative,
    far from exact at short leases; run_through applies only there); work_conserving: in a
    simulation, GPUs idle between boundaries (a job finished, none was planned) go at once to
    waiting jobs, arrivals included, until the next boundary (`LeaseBoundary.until`); fill: the
    order in which the GPUs the lease MILP leaves free go to the other jobs (`fill_order`):
    "deadline" (SLO jobs that can still meet a deadline first, earliest first, then the rest
    by shortest remaining service) or "service" (shortest remaining service for all, as in
    Chronus's artifact); repack: admission's second chance, a latest-fit packing of the
    admitted jobs and the new one together when the GPUs the reservations leave cannot hold it
    (off by default: measured, it admits more jobs at tight deadlines but misses more at loose
    ones, benchmarks/chronus_lease_lengths.py); others: which SLO jobs without a guarantee the
    lease MILP plans (`plan_boundary`): "plan" every one with a reachable option (by value),
    "fill" none (they get the GPUs the admitted jobs leave, in the fill's earliest-deadline
    order), "auto" those that earliest deadline first, projected from now, would miss
    (`edf_meets`; the default); tails: with the overhead counted per run, plans may use the
    part of the lease a deadline falls in before the deadline (`option_tails`; default true);
    lazy: the next lease goes to the jobs in the fill's order (earliest deadline first)
    whenever the admitted jobs' rest of work still packs after it (`plan_boundary`), "auto"
    (the default) only at boundaries where every admitted job has slack (`lazy_now`); search:
    true runs the lease MILP's solver stages within time_limit (wall clock, so a plan can
    depend on the machine's load), false (the default) the LP relaxation and its roundings
    only (`solve_lease_problem`), the same plan on any machine. lazy and search DEFAULT: a
    run's, RUN_DEFAULTS (one boundary on its own resolves DEFAULT to BOUNDARY_DEFAULTS before
    it builds its settings)."""

    lease_seconds: float = 1200.0
    resume_overhead_s: float = 30.0
    horizon_leases: int | None = None
    sigma: float | str = "adaptive"
    solver: str = DEFAULT_SOLVER
    time_limit: float | None = 5.0
    horizon_seconds: float | None = DEFAULT_HORIZON_SECONDS
    slots_per_doubling: int = DEFAULT_SLOTS_PER_DOUBLING
    run_through: bool | None = None
    resume_overhead_per: str = "run"
    work_conserving: bool = True
    fill: str = "deadline"
    repack: bool = False
    others: str = "auto"
    tails: bool = True
    lazy: bool | str = "auto"
    search: bool = False

    def __post_init__(self):
        for name in RUN_DEFAULTS:
            object.__setattr__(self, name, entry_default(getattr(self, name), name, RUN_DEFAULTS))
        if self.others not in OTHERS:
            raise PolicyError(f"others must be one of {', '.join(OTHERS)}, got {self.others!r}")
        if self.fill not in FILLS:
            raise PolicyError(f"fill must be one of {', '.join(FILLS)}, got {self.fill!r}")
        for name in ("work_conserving", "tails", "search"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise PolicyError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if not isinstance(self.lazy, (bool, np.bool_)) and self.lazy != "auto":
            raise PolicyError(f"lazy must be true, false or 'auto', got {self.lazy!r}")
        for name in ("lease_seconds", "resume_overhead_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not np.isfinite(value):
                raise PolicyError(f"{name} must be a finite number of seconds, got {value!r}")
        if not self.lease_seconds > 0:
            raise PolicyError(f"lease_seconds must be > 0, got {self.lease_seconds!r}")
        if not (0 <= self.resume_overhead_s < self.lease_seconds):
            raise PolicyError(f"resume_overhead_s must be in [0, lease_seconds), got "
                              f"{self.resume_overhead_s!r}")
        if self.horizon_leases is not None and (
                isinstance(self.horizon_leases, bool)
                or not isinstance(self.horizon_leases, (int, float))
                or int(self.horizon_leases) != self.horizon_leases or self.horizon_leases < 1):
            raise PolicyError(f"horizon_leases must be an integer >= 1, got {self.horizon_leases!r}")
        if self.sigma != "adaptive" and self.sigma not in (1, -1):
            raise PolicyError(f"sigma must be 1, -1 or 'adaptive', got {self.sigma!r}")
        if self.horizon_seconds is not None and (
                isinstance(self.horizon_seconds, bool)
                or not isinstance(self.horizon_seconds, (int, float))
                or not np.isfinite(self.horizon_seconds) or self.horizon_seconds <= 0):
            raise PolicyError(f"horizon_seconds must be a finite number of seconds > 0 or None, "
                              f"got {self.horizon_seconds!r}")
        if self.resume_overhead_per not in ("run", "lease"):
            raise PolicyError(f"resume_overhead_per must be 'run' or 'lease', got "
                              f"{self.resume_overhead_per!r}")
        if self.run_through not in (None, True, False):
            raise PolicyError(f"run_through must be true, false or null, got {self.run_through!r}")
        rho = self.slots_per_doubling
        if isinstance(rho, bool) or not isinstance(rho, (int, float)) or int(rho) != rho \
                or rho < 1:
            raise PolicyError(f"slots_per_doubling must be an integer >= 1, got {rho!r}")

    @property
    def plans_tight_jobs(self) -> bool:
        if self.run_through is not None:
            return bool(self.run_through)
        return self.resume_overhead_s >= RUN_THROUGH_OVERHEAD * self.lease_seconds

    @property
    def fine_leases(self) -> int:
        """Leases planned one by one: horizon_leases, or when None 96 x lease_seconds / 1,200 s
        within [2 x slots_per_doubling, 96] (96 at 20-min leases, the whole default window)."""
        if self.horizon_leases is not None:
            return int(self.horizon_leases)
        auto = int(np.ceil(DEFAULT_FINE_LEASES * self.lease_seconds / DEFAULT_LEASE_SECONDS - 1e-9))
        return min(DEFAULT_FINE_LEASES, max(2 * int(self.slots_per_doubling), auto))

    @property
    def window_leases(self) -> int:
        """Leases the planning window spans (at least fine_leases)."""
        if self.horizon_seconds is None:
            return self.fine_leases
        return max(self.fine_leases,
                   int(np.floor(self.horizon_seconds / self.lease_seconds + 1e-9)))

    @property
    def overhead(self) -> float:
        """The resume overhead as a share of a lease when it is counted once per run (else 0:
        `LeaseProblem.per_run`)."""
        if self.resume_overhead_per != "run":
            return 0.0
        return self.resume_overhead_s / self.lease_seconds

    @property
    def useful_seconds(self) -> float:
        """Seconds of progress a lease is sure to give (s)."""
        return self.lease_seconds - self.resume_overhead_s


@dataclass(frozen=True)
class LeaseJobs:
    """Active jobs at a boundary. gpus (n,) GPUs held while running; remaining_s (n,) seconds of
    running left; service order key `remaining_s * gpus`; option_job / option_deadline_s
    (absolute, s) / option_value (K,) deadline options, by job and increasing deadline. Jobs
    without options are best effort."""

    gpus: np.ndarray
    remaining_s: np.ndarray
    option_job: np.ndarray
    option_deadline_s: np.ndarray
    option_value: np.ndarray

    @property
    def num_jobs(self) -> int:
        return self.gpus.shape[0]

    @property
    def is_slo(self) -> np.ndarray:
        return np.bincount(self.option_job, minlength=self.num_jobs) > 0

    def first_deadline(self) -> np.ndarray:
        """(n,) each job's first deadline (absolute s; inf for best effort)."""
        out = np.full(self.num_jobs, np.inf)
        np.minimum.at(out, self.option_job, self.option_deadline_s)
        return out

    def options_of(self, keep: np.ndarray, among: np.ndarray | None = None):
        """(new job index of every old job (-1 if dropped), indices of the options of the jobs
        `keep`, ordered by new job index, restricted to the `among` mask when given)."""
        new_index = np.full(self.num_jobs, -1, dtype=np.int64)
        new_index[keep] = np.arange(len(keep))
        mine = new_index[self.option_job] >= 0
        opt = np.flatnonzero(mine if among is None else mine & among)
        return new_index, opt[np.argsort(new_index[self.option_job[opt]], kind="stable")]

    def subset(self, keep: np.ndarray) -> LeaseJobs:
        """The jobs at indices `keep`, renumbered 0..len(keep)-1 in that order."""
        keep = np.asarray(keep, dtype=np.int64)
        new_index, opt = self.options_of(keep)
        return LeaseJobs(self.gpus[keep], self.remaining_s[keep], new_index[self.option_job[opt]],
                         self.option_deadline_s[opt], self.option_value[opt])


@functools.lru_cache(maxsize=64)
def _grid(first: int, fine: int, window: int, rho: int) -> np.ndarray:
    """Widths of the slots from absolute lease `first` on (see `lease_grid`)."""
    widths = []
    pos, end = first, first + window
    while pos < end:
        d = pos - first
        cap = 1 if d < fine else 1 << max(int(d // rho).bit_length() - 1, 0)
        w = 1
        while w * 2 <= cap and pos % (w * 2) == 0:
            w *= 2
        widths.append(w)
        pos += w
    out = np.array(widths, dtype=np.int64)
    out.setflags(write=False)
    return out


def lease_grid(now: float, settings: LeaseSettings) -> np.ndarray:
    """(H,) widths (leases) of the planning window's slots from `now` (docs/formulations.md,
    Chronus: the window in time).

    The first `fine_leases` slots are single leases. Farther, at distance d leases from now,
    a slot is the widest aligned block [p, p + w) of absolute lease numbers (p a multiple of
    w, w a power of two) with w <= W(d) = largest power of two <= max(1, d /
    slots_per_doubling): about slots_per_doubling slots per doubling of the distance. W grows
    with d and aligned blocks nest, so the grid one lease later refines this one over the leases
    both cover: a plan stays a plan as time advances. The last slot may end past the window.
    Counting the overhead in every lease, a slot of w leases counts w of a job's
    `leases_needed`, each as if it paid the resume overhead: counting it once per slot would be
    valid now, but the pieces of a slot
    split later would count less than the whole and plans would stop being plans (measured: 39
    of 68 admitted jobs missed their deadline at 60 s leases).
    """
    first = int(np.floor(now / settings.lease_seconds + 1e-9))
    return _grid(first, settings.fine_leases, settings.window_leases,
                 int(settings.slots_per_doubling))


def slot_leases(width: np.ndarray, slots) -> tuple[int, ...]:
    """Lease offsets from now covered by the given slot indices."""
    start = np.concatenate(([0], np.cumsum(width)))
    slots = np.asarray(slots, dtype=np.int64)
    if slots.size == 0:
        return ()
    counts = width[slots]
    offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return tuple(int(t) for t in np.repeat(start[slots], counts) + offsets)


def slot_free(free: np.ndarray, width: np.ndarray) -> np.ndarray:
    """(H,) GPUs free in every lease of each slot, from (L,) GPUs free per lease (L >= sum of
    widths' start of the last slot; leases past the end count as free as the last one)."""
    start = np.concatenate(([0], np.cumsum(width)[:-1]))
    need = int(width.sum())
    if free.shape[0] < need:
        free = np.concatenate((free, np.full(need - free.shape[0], free[-1])))
    return np.minimum.reduceat(free[:need], start)


def leases_needed(remaining_s: np.ndarray, settings: LeaseSettings) -> np.ndarray:
    """(n,) leases each job needs, at least 1 (see the module docstring)."""
    return np.maximum(np.ceil(remaining_s / settings.useful_seconds - 1e-9), 1).astype(np.int64)


def option_horizons(jobs: LeaseJobs, now: float, settings: LeaseSettings) -> np.ndarray:
    """(K,) slots of `lease_grid` that end by each option's deadline (leases when the window is
    all single leases), capped at the window; may be <= 0 for deadlines already too close."""
    leases = np.floor((jobs.option_deadline_s - now) / settings.lease_seconds + 1e-9)
    width = lease_grid(now, settings)
    if np.all(width == 1):
        return np.minimum(leases, width.size).astype(np.int64)
    slots = np.searchsorted(np.cumsum(width), np.maximum(leases, 0), side="right")
    return np.where(leases <= 0, np.minimum(leases, 0), slots).astype(np.int64)


def option_tails(jobs: LeaseJobs, now: float, settings: LeaseSettings) -> np.ndarray:
    """(K,) leases of work each option can take from the lease its deadline falls in (the
    part before the deadline, `LeaseProblem.option_tail`) when that lease is planned on its
    own (one of the first `fine_leases`) and the overhead is counted per run; else 0."""
    if settings.overhead == 0:
        return np.zeros(jobs.option_deadline_s.shape[0])
    leases = (jobs.option_deadline_s - now) / settings.lease_seconds
    whole = np.floor(leases + 1e-9)
    inside = (whole >= 0) & (whole < min(settings.fine_leases, settings.window_leases))
    return np.where(inside, np.clip(leases - whole, 0.0, None), 0.0)


def plan_inputs(jobs: LeaseJobs, now: float, settings: LeaseSettings,
                arriving: bool = False,
                held: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(need (n,) leases of work each job is planned with, horizon (K,) slots, reachable (K,)
    options the plan may choose); a slot of w leases gives w of the leases needed.

    An option is reachable when the slots before its deadline give the job's `leases_needed`.
    A job none of whose options is reachable so, but that could still meet one by running
    every lease from now (horizon x lease_seconds >= remaining + one resume overhead), is
    *tight*: it keeps only its loosest such option, and its need becomes every slot of that
    option (it runs without a break, so it pays the overhead at most once). Without tight jobs
    a job that is running, and will finish in time if it keeps running, would look hopeless
    whenever leases are not much longer than the overhead. `arriving` (admission) asks for
    two overheads of room: a boundary cannot tell a running job from a waiting one, so one
    lease after it starts the job is checked against one more overhead than it paid.

    With the overhead counted once per run (`LeaseSettings.overhead` > 0) need is the leases of
    running left (remaining_s / lease_seconds, `LeaseProblem.work`) and an option is reachable
    when one run over every slot before its deadline serves it: leases - overhead, the
    overhead waived for a job in `held` ((n,) bool: it held its GPUs in the lease before now).
    No job is tight then: running through is a plan like any other.
    """
    width = lease_grid(now, settings)
    leases = np.concatenate(([0], np.cumsum(width)))
    horizon = option_horizons(jobs, now, settings)
    h = np.clip(horizon, 0, width.size)
    if settings.overhead > 0:
        work = np.maximum(jobs.remaining_s / settings.lease_seconds, WORK_TOLERANCE)
        prior = np.zeros(jobs.num_jobs, dtype=bool) if held is None else held
        tail = option_tails(jobs, now, settings) if settings.tails else 0.0
        one_run = leases[h] + tail - settings.overhead * ~prior[jobs.option_job]
        reachable = (((horizon >= 1) | ((horizon == 0) & (tail > 0)))
                     & (one_run >= work[jobs.option_job] - WORK_TOLERANCE))
        return work, horizon, reachable
    need = leases_needed(jobs.remaining_s, settings)
    reachable = (horizon >= 1) & (leases[h] >= need[jobs.option_job])
    n = jobs.num_jobs
    has = np.bincount(jobs.option_job[reachable], minlength=n) > 0
    run_through = (horizon >= 1) & (leases[h] * settings.lease_seconds
                                    >= jobs.remaining_s[jobs.option_job]
                                    + settings.resume_overhead_s * (2 if arriving else 1) - 1e-9)
    tight = run_through & ~has[jobs.option_job] & settings.plans_tight_jobs
    if tight.any():
        k = np.flatnonzero(tight)
        # Per tight job its loosest option (largest horizon; ties: larger value, earlier).
        k = k[np.lexsort((k, -jobs.option_value[k], -horizon[k], jobs.option_job[k]))]
        first = np.ones(k.size, dtype=bool)
        first[1:] = jobs.option_job[k[1:]] != jobs.option_job[k[:-1]]
        k = k[first]
        reachable[k] = True
        need = need.copy()
        need[jobs.option_job[k]] = leases[h[k]]
    return need, horizon, reachable


def _reachable(jobs: LeaseJobs, now: float, settings: LeaseSettings,
               held: np.ndarray | None = None) -> np.ndarray:
    """(K,) options the plan may choose (`plan_inputs`)."""
    return plan_inputs(jobs, now, settings, held=held)[2]


def _job_set(jobs: LeaseJobs, members: np.ndarray, now: float, settings: LeaseSettings,
             need: np.ndarray, horizon: np.ndarray,
             reachable: np.ndarray) -> tuple[JobSet, np.ndarray]:
    """(the `members` jobs with their reachable options as a JobSet, their indices)."""
    idx = np.flatnonzero(members)
    new_index, opt = jobs.options_of(idx, among=reachable)
    return JobSet(jobs.gpus[idx], need[idx], new_index[jobs.option_job[opt]],
                  jobs.option_value[opt], horizon[opt]), idx


def demote_hopeless(jobs: LeaseJobs, admitted: np.ndarray, now: float,
                    settings: LeaseSettings, held: np.ndarray | None = None) -> np.ndarray:
    """(n,) bool: admitted jobs none of whose deadline options is reachable any more (held: see
    `plan_inputs`)."""
    reachable = _reachable(jobs, now, settings, held)
    return admitted & ~(np.bincount(jobs.option_job[reachable], minlength=jobs.num_jobs) > 0)


def free_gpus(jobs: LeaseJobs, reserved: dict[int, tuple[int, ...]], capacity: int,
              settings: LeaseSettings, now: float = 0.0) -> np.ndarray:
    """(H,) GPUs of each lease of the window (of `lease_grid` at `now`) not reserved.
    `reserved`: job index -> lease offsets from now that it holds (offsets outside the window
    are ignored)."""
    H = int(lease_grid(now, settings).sum())
    if not reserved:
        return np.full(H, capacity, dtype=np.int64)
    counts = np.array([len(v) for v in reserved.values()], dtype=np.int64)
    offsets = np.concatenate([np.asarray(v, dtype=np.int64) for v in reserved.values()])
    gpus = np.repeat(jobs.gpus[np.fromiter(reserved, dtype=np.int64, count=len(reserved))], counts)
    inside = (offsets >= 0) & (offsets < H)
    used = np.bincount(offsets[inside], weights=gpus[inside], minlength=H)
    return capacity - used.astype(np.int64)


def admit_arrivals(jobs: LeaseJobs, admitted: np.ndarray, arriving: np.ndarray,
                   reserved: dict[int, tuple[int, ...]], capacity: int, now: float,
                   settings: LeaseSettings,
                   held: np.ndarray | None = None) -> tuple[np.ndarray, dict[int, tuple[int, ...]]]:
    """Admission control of `arriving` (job indices, in arrival order), one by one, against the
    GPUs that the admitted jobs' reservations leave free (`free_gpus`): a job is admitted when
    its latest-fit placement fits before a deadline (`chronus_admission.admit`), and then
    reserves the leases of that placement. When those GPUs cannot hold it, a latest-fit
    packing of the admitted jobs and it together (each within its loosest reachable option)
    is its second chance (`repack`): if it places every one, it is admitted and that packing
    becomes every admitted job's reservations. Returns (admitted mask, reservations including
    the new ones). Best-effort arrivals and jobs with no reachable option are not admitted. held:
    see `plan_inputs`."""
    admitted = admitted.copy()
    reserved = dict(reserved)
    need, horizons, reachable = plan_inputs(jobs, now, settings, arriving=True, held=held)
    width = lease_grid(now, settings)
    free = free_gpus(jobs, reserved, capacity, settings, now)
    overhead = settings.overhead
    count = lease_count(need, overhead) if overhead > 0 else need
    for j in arriving:
        mine = reachable & (jobs.option_job == j) & (horizons >= 1)  # admission: whole leases
        if not mine.any():
            continue
        new = NewJob.from_values(jobs.gpus[j], count[j], jobs.option_value[mine], horizons[mine])
        if overhead > 0:
            new = replace(new, work=float(need[j]), held=bool(held is not None and held[j]))
        decision = admit(new, JobSet.empty(), slot_free(free, width), width, overhead)
        if decision.admitted:
            admitted[j] = True
            reserved[int(j)] = slot_leases(width, decision.leases[decision.new_index])
            free[list(reserved[int(j)])] -= jobs.gpus[j]
            continue
        repacked = _repacked(jobs, admitted, j, need, count, horizons, reachable, capacity,
                             width, settings, held) if settings.repack else None
        if repacked is not None:
            admitted[j] = True
            reserved = repacked
            free = free_gpus(jobs, reserved, capacity, settings, now)
    return admitted, reserved


def _repacked(jobs: LeaseJobs, admitted: np.ndarray, j: int, need: np.ndarray,
              count: np.ndarray, horizons: np.ndarray, reachable: np.ndarray, capacity: int,
              width: np.ndarray, settings: LeaseSettings,
              held: np.ndarray | None) -> dict[int, tuple[int, ...]] | None:
    """Reservations of the admitted jobs and job `j` together when a latest-fit packing of all
    of them (each within its loosest reachable option) places every one, else None: the
    second chance of a job the GPUs left by the current reservations cannot hold (those were
    packed one arrival at a time, and moving them may make room)."""
    loosest = np.zeros(jobs.num_jobs, dtype=np.int64)
    np.maximum.at(loosest, jobs.option_job[reachable], horizons[reachable])
    members = np.append(np.flatnonzero(admitted), j)
    if np.any(loosest[members] < 1):
        return None
    per_run = settings.overhead > 0
    leases, unplaced, _ = latest_fit_packing(
        jobs.gpus[members], count[members], loosest[members], np.full(width.size, capacity),
        width=width, overhead=settings.overhead, work=need[members] if per_run else None,
        held=(held[members] if held is not None else np.zeros(members.size, dtype=bool))
        if per_run else None)
    if unplaced:
        return None
    return {int(g): slot_leases(width, leases[i]) for i, g in enumerate(members)}


@dataclass
class BoundaryDecision:
    """running (n,) bool: jobs holding GPUs in the next lease; plan: the lease MILP's outcome
    over `planned` (job indices; plan job i is jobs[planned[i]]), None when no SLO job could be
    planned; sigma: the sigma used; unplaced: admitted jobs (indices) the plan could not place;
    reserved: job index -> lease offsets from now the plan gives each admitted job (the
    reservations the next boundary admits against); credited: admitted jobs (indices) that the
    plan starts in lease 0 on the GPUs jobs finishing in it free (`lease_zero_credit`): between
    the boundaries such GPUs go to them before any other job (`policy.chronus_between`)."""

    running: np.ndarray
    plan: ChronusPlan | None
    planned: np.ndarray
    sigma: float
    unplaced: np.ndarray
    reserved: dict[int, tuple[int, ...]]
    credited: np.ndarray


def plan_boundary(jobs: LeaseJobs, admitted: np.ndarray, capacity: int, now: float,
                  settings: LeaseSettings, solver: Solver | None = None,
                  held: np.ndarray | None = None,
                  reserved: dict[int, tuple[int, ...]] | None = None) -> BoundaryDecision:
    """The lease MILP over admitted jobs and reachable SLO jobs, then shortest-remaining-service
    fill of the GPUs it leaves free in lease 0 (module docstring). solver: the Solver session
    of the lease MILP (None: one of the backend `settings.solver`); held: see `plan_inputs`;
    reserved: the admitted jobs' reservations (job index -> lease offsets from now, as
    `admit_arrivals` returns them), together a plan for every admitted job: the plan when the
    solver finds none in time and neither the greedy nor the roundings place every admitted
    job."""
    need, horizon, reachable = plan_inputs(jobs, now, settings, held=held)
    has_option = np.bincount(jobs.option_job[reachable], minlength=jobs.num_jobs) > 0
    others = has_option & ~admitted
    if settings.others == "fill":
        others[:] = False
    elif settings.others == "auto":
        others &= ~edf_meets(jobs, np.flatnonzero(has_option | admitted), capacity, now,
                             settings, held)
    planned_mask = others | admitted
    planned = np.flatnonzero(planned_mask)
    waiting_outside = bool(np.any(~admitted))
    sigma = float(settings.sigma if settings.sigma != "adaptive" else
                  (-1.0 if waiting_outside else 1.0))
    running = np.zeros(jobs.num_jobs, dtype=bool)
    plan = None
    credit = np.zeros(planned.size)
    if planned.size:
        job_set, _ = _job_set(jobs, planned_mask, now, settings, need, horizon, reachable)
        width = lease_grid(now, settings)
        per_run = settings.overhead > 0
        tail = None
        if per_run and settings.tails:
            tail = option_tails(jobs, now, settings)[
                jobs.options_of(planned, among=reachable)[1]]
        problem = LeaseProblem.from_arrays(
            job_set.gpus, None if per_run else job_set.leases_needed, job_set.option_job,
            job_set.option_value, job_set.option_horizon, np.full(width.size, capacity),
            sigma=sigma, admitted=admitted[planned] & has_option[planned],
            width=width, overhead=settings.overhead,
            held=None if held is None else held[planned],
            work=job_set.leases_needed if per_run else None, option_tail=tail)
        plan = solve_lease_problem(problem, solver=solver or settings.solver,
                                   time_limit=settings.time_limit, search=settings.search)
        if plan.unplaced:
            plan = _rescue(problem, plan)
        if plan.unplaced and reserved:
            plan = _reserved_plan(problem, plan, planned, reserved)
        if lazy_now(jobs, admitted, now, settings) and not plan.unplaced:
            plan, credit = _lazy_credited(jobs, admitted, capacity, now, settings, held,
                                          problem, plan, planned, solver or settings.solver)
        holds_first = np.array([0 in plan.leases.get(i, ()) for i in range(planned.size)],
                               dtype=bool)
        running[planned[holds_first]] = True
    free = capacity - int(jobs.gpus[running].sum())
    order = fill_order(jobs, np.flatnonzero(~running), now, settings, held)
    running[fill_in_order(jobs.gpus, order, free)] = True
    unplaced = planned[list(plan.unplaced)] if plan is not None else np.zeros(0, dtype=np.int64)
    reserved = {} if plan is None else {
        int(planned[i]): slot_leases(width, slots)
        for i, slots in _latest_reservations(problem, plan, admitted[planned], credit).items()}
    return BoundaryDecision(running, plan, planned, sigma, unplaced, reserved,
                            planned[np.flatnonzero(credit)])


def _lazy_credited(jobs: LeaseJobs, admitted: np.ndarray, capacity: int, now: float,
                   settings: LeaseSettings, held: np.ndarray | None, problem: LeaseProblem,
                   plan: ChronusPlan, planned: np.ndarray, solver: Solver | str):
    """(plan, credit over the plan jobs: leases of running in lease 0 without holding it from
    the boundary) of lazy guarantees (`_lazy_plan`). Lease 0 in the fill's order as it is;
    else the same crediting admitted jobs with the GPUs that jobs finishing in it free
    (`lease_zero_credit`: in the fill's order, else to the admitted jobs first; with the
    resume overhead counted once per run, in a work-conserving run only); else with the k
    admitted jobs of least slack (first deadline - now - running left, s) ahead of the fill's
    order and the credit, the least such k found by bisection (the jobs EDF would run in lease
    0 give way only to the admitted jobs that must start now). (`plan`, zeros) when none
    places every admitted job: the lease MILP's lease 0."""
    none = np.zeros(planned.size)
    mine = admitted[planned]
    order = fill_order(jobs, np.arange(jobs.num_jobs), now, settings, held)
    first = fill_in_order(jobs.gpus, order, capacity)
    lazy = _lazy_plan(problem, plan, planned, mine, first, settings, solver)
    if lazy is not plan or not (settings.overhead > 0 and settings.work_conserving):
        return lazy, none

    def credited(first: np.ndarray):
        for among in (None, np.flatnonzero(admitted)):
            credit = np.where(mine, lease_zero_credit(jobs, first, capacity, now, settings,
                                                      held, among)[planned], 0.0)
            if credit.any():
                lazy = _lazy_plan(problem, plan, planned, mine, first, settings, solver, credit)
                if lazy is not plan:
                    return lazy, credit
        return None

    found = credited(first)
    if found is not None:
        return found
    mine_all = np.flatnonzero(admitted)
    slack = jobs.first_deadline()[mine_all] - now - jobs.remaining_s[mine_all]
    urgent = mine_all[np.lexsort((mine_all, slack))]
    lo, hi, best = 1, urgent.size, None
    while lo <= hi:
        k = (lo + hi) // 2
        ahead = np.concatenate([urgent[:k], order[~np.isin(order, urgent[:k])]])
        found = credited(fill_in_order(jobs.gpus, ahead, capacity))
        if found is None:
            lo = k + 1
        else:
            best, hi = found, k - 1
    return best if best is not None else (plan, none)


def lease_zero_credit(jobs: LeaseJobs, first: np.ndarray, capacity: int, now: float,
                      settings: LeaseSettings, held: np.ndarray | None = None,
                      among: np.ndarray | None = None) -> np.ndarray:
    """(n,) leases of running (after the resume overhead) each waiting job (not in `first`)
    gets in lease 0 from the GPUs the jobs `first` (indices, holding GPUs from the boundary)
    free when they finish in it, 0 for the rest: earliest deadline first in continuous time
    within the lease. The GPUs go out as between two boundaries of a work-conserving run: each
    time jobs finish, to the waiting jobs in the fill's order (`fill_order`, `fill_in_order`),
    a start only while more than the resume overhead is left of the lease; a job started keeps
    its GPUs to the end of the lease. A job started at t (s) gets
    (min(now + lease_seconds, its last deadline) - t - resume_overhead_s) / lease_seconds, none
    when that is not positive (work after its last deadline meets no option). among: the
    waiting jobs that may take the GPUs (None: all). Only the jobs known at the boundary take
    part; in a run the credited jobs take freed GPUs before any other (`chronus_between`), so
    each starts no later than counted here (a job of several GPUs may wait for more to free)."""
    L, o = settings.lease_seconds, settings.resume_overhead_s
    credit = np.zeros(jobs.num_jobs)
    first = np.asarray(first, dtype=np.int64)
    lost = np.full(first.size, o)
    if held is not None:
        lost[held[first]] = 0.0
    finish = now + lost + jobs.remaining_s[first]
    inside = finish < now + L - o
    waiting = np.arange(jobs.num_jobs) if among is None else among
    order = fill_order(jobs, np.setdiff1d(waiting, first), now, settings, held)
    taken = np.zeros(jobs.num_jobs, dtype=bool)
    free = capacity - int(jobs.gpus[first].sum())
    last = np.full(jobs.num_jobs, -np.inf)
    np.maximum.at(last, jobs.option_job, jobs.option_deadline_s)
    for t in np.unique(finish[inside]):
        free += int(jobs.gpus[first[inside & (finish == t)]].sum())
        took = fill_in_order(jobs.gpus, order[~taken[order]], free)
        if took.size:
            credit[took] = np.maximum(np.minimum(now + L, last[took]) - t - o, 0.0) / L
            free -= int(jobs.gpus[took].sum())
            taken[took] = True
    return credit


def lazy_now(jobs: LeaseJobs, admitted: np.ndarray, now: float,
             settings: LeaseSettings) -> bool:
    """Whether lease 0 goes to the jobs in the fill's order at this boundary (`_lazy_plan`):
    lazy True always, False never, "auto" when the median over the admitted jobs of slack
    (first deadline - now - seconds of running left, s) less LAZY_SLACK times the seconds of
    running left is >= 0 (or no job is admitted). Not the least slack: lazy guarantees run
    admitted jobs late, so some always have little left."""
    if settings.lazy != "auto":
        return bool(settings.lazy)
    mine = np.flatnonzero(admitted)
    left = jobs.remaining_s[mine]
    slack = jobs.first_deadline()[mine] - now - left
    return bool(mine.size == 0 or np.median(slack - LAZY_SLACK * left) >= 0)


def _reserved_plan(problem: LeaseProblem, plan: ChronusPlan, planned: np.ndarray,
                   reserved: dict[int, tuple[int, ...]]) -> ChronusPlan:
    """The admitted jobs on their reservations (each a union of whole slots of this grid, as
    the grid refines the one they were made on; each job's most valuable option whose horizon
    covers them); `plan` as it is if they do not make a plan of every admitted job."""
    start = np.concatenate(([0], problem.slot_end))
    position = {int(g): i for i, g in enumerate(planned)}
    chosen = np.full(problem.num_jobs, -1, dtype=np.int64)
    held = np.zeros((problem.num_jobs, problem.num_leases), dtype=bool)
    for g, offsets in reserved.items():
        i = position.get(int(g), -1)
        if i < 0 or not problem.admitted[i]:
            continue
        t = np.unique(np.asarray(offsets, dtype=np.int64))
        t = t[(t >= 0) & (t < start[-1])]  # leases already past are not part of the plan
        slots = np.unique(np.searchsorted(start, t, side="right") - 1)
        if t.size != int(problem.width[slots].sum()):
            return plan  # not whole slots
        last = slots.max() if slots.size else -1
        mine = np.flatnonzero((problem.option_job == i) & ((problem.option_horizon > last)
                                                           | (problem.tail_slot == last)))
        if mine.size == 0:
            return plan
        held[i, slots] = True
        chosen[i] = _most_valuable_serving(problem, i, held[i], mine)
    used = held.astype(np.int64).T @ problem.gpus
    if (np.any(chosen[problem.admitted] < 0) or np.any(used > problem.capacity)
            or not serves(problem, chosen, held)):
        return plan
    leases = {int(j): tuple(np.flatnonzero(held[j]).tolist()) for j in np.flatnonzero(chosen >= 0)}
    return replace(plan, status=Status.FEASIBLE, objective=plan_objective(problem, chosen, leases),
                   leases=leases, chosen=chosen, unplaced=(),
                   details={**plan.details, "incumbent_from": "reservations"})


def _most_valuable_serving(problem: LeaseProblem, job: int, held: np.ndarray,
                           options: np.ndarray) -> int:
    """Of the job's `options`, the most valuable whose horizon gives the job its work on the
    slots `held` (a tail slot gives only its tail); the most valuable when none does (then
    `serves` rejects the plan). A reservation made within a later, less valuable option may
    end in the earlier option's tail slot, where that option gives too little."""
    ranked = options[np.lexsort((options, -problem.option_value[options]))]
    serving = ranked[gets_its_work(problem, np.repeat(held[None], ranked.size, axis=0),
                                   np.full(ranked.size, job), ranked)]
    return int(serving[0] if serving.size else ranked[0])


def _rescue(problem: LeaseProblem, plan: ChronusPlan) -> ChronusPlan:
    """`plan` when its fallback greedy left admitted jobs out (the solver found no plan in
    time): the better of the LP roundings run with LP values 0, which place the admitted jobs
    as admission packs them, if one places them all; else `plan` as it is."""
    zeros = np.zeros((problem.num_options, problem.num_leases))
    best = None
    for chosen, held in lp_roundings(problem, zeros[:, 0], zeros):
        if np.all(chosen[problem.admitted] >= 0) and serves(problem, chosen, held):
            leases = {int(j): tuple(np.flatnonzero(held[j]).tolist())
                      for j in np.flatnonzero(chosen >= 0)}
            objective = plan_objective(problem, chosen, leases)
            if best is None or objective > best[0]:
                best = (objective, chosen, leases)
    if best is None:
        return plan
    objective, chosen, leases = best
    return replace(plan, status=Status.FEASIBLE, objective=objective, leases=leases,
                   chosen=chosen, unplaced=(),
                   details={**plan.details, "incumbent_from": "fallback_rounding"})


def _latest_reservations(problem: LeaseProblem, plan: ChronusPlan, admitted: np.ndarray,
                         credit: np.ndarray | None = None) -> dict[int, tuple[int, ...]]:
    """Reservations of the admitted plan jobs: lease 0 where the plan runs them, their other
    leases re-packed within their chosen option's horizon (`_pack_after_first`: on from lease
    1 for a job that holds GPUs at the end of lease 0, latest-fit for the others, so that early
    leases stay free for jobs that arrive later); the plan's own leases when that packing
    fails. credit:
    leases of running each plan job gets in lease 0 without holding it from the boundary
    (`lease_zero_credit`)."""
    keep = np.flatnonzero(admitted & (plan.chosen >= 0))
    own = {int(i): plan.leases[int(i)] for i in keep}
    first = np.array([0 in own[int(i)] for i in keep], dtype=bool)
    packed = _pack_after_first(problem, keep, plan.chosen[keep], first,
                               None if credit is None else credit[keep])
    if packed is None or not any(t > 0 for held in packed.values() for t in held):
        return own  # the packing failed, or lease 0 serves them all: the plan's leases
    return packed


def _pack_after_first(problem: LeaseProblem, keep: np.ndarray, chosen: np.ndarray,
                      first: np.ndarray, credit: np.ndarray | None = None
                      ) -> dict[int, tuple[int, ...]] | None:
    """Slots of the plan jobs `keep` with options `chosen`: slot 0 where `first`, the rest of
    their work (less `credit`, see `_after_lease_zero`) after it within each option's horizon
    (whole leases: tails are not used); None when that packing does not place them all.

    A job that holds GPUs at the end of lease 0 keeps running from slot 1 until done
    (`_run_on`; no second resume overhead); the others are packed latest-fit in the GPUs left.
    When that does not place every job, all of the rest is packed latest-fit. (Latest-fit for
    all leaves the GPUs near now free in a block and fills the leases before the admitted
    jobs' deadlines: on the all-SLO trace of docs/guide/chronus.md, jobs arriving due just
    after the admitted ones, each needing more leases than that block spans, were turned away
    and missed.)"""
    need, rest = _after_lease_zero(problem, keep, first, credit)
    out = {int(i): (0,) if f else () for i, f in zip(keep, first)}
    if not rest.any():
        return out
    # Window shifted by one lease: offsets 1..H-1 of the plan are 0..H-2 here (a job that holds
    # lease 0 has held its GPUs in the lease before the shifted window).
    horizon = np.minimum(problem.option_horizon[chosen], problem.num_leases) - 1
    if np.any(horizon[rest] < 1):  # the rest of the work is in the deadline's lease only
        return None
    held = _in_lease_zero(first, credit)
    run_slots, capacity = _run_on(problem, keep, need, rest & held, horizon)
    tries = [(run_slots, capacity)]
    if run_slots.any():
        tries.append((np.zeros(keep.size, dtype=np.int64), problem.capacity[1:]))
    for runs_on in tries:
        late = rest & (runs_on[0] == 0)
        count = lease_count(need[late], problem.overhead) if problem.per_run else need[late]
        packed, unplaced, _ = latest_fit_packing(problem.gpus[keep[late]], count, horizon[late],
                                                 runs_on[1], width=problem.width[1:],
                                                 overhead=problem.overhead, work=need[late],
                                                 held=held[late])
        if not unplaced:
            break
    else:
        return None
    for i in np.flatnonzero(runs_on[0]):
        out[int(keep[i])] += tuple(range(1, runs_on[0][i] + 1))
    for i, leases in packed.items():
        job = int(keep[late][i])
        out[job] = out[job] + tuple(t + 1 for t in leases)
    return out


def _run_on(problem: LeaseProblem, keep: np.ndarray, need: np.ndarray, candidates: np.ndarray,
            horizon: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(per job of `keep`, the slots 1..n it runs on for, from slot 1 until its `need` is done,
    0 for a job that does not; GPUs per slot 1.. left after them): of the `candidates`, in order
    of horizon, each whose run ends within its horizon and fits in the GPUs left."""
    capacity = problem.capacity[1:].astype(np.int64).copy()
    ends = np.cumsum(problem.width[1:])
    run_slots = np.zeros(keep.size, dtype=np.int64)
    for i in sorted(np.flatnonzero(candidates), key=lambda i: (horizon[i], i)):
        slots = int(np.searchsorted(ends, need[i] - WORK_TOLERANCE)) + 1
        gpus = problem.gpus[keep[i]]
        if slots <= horizon[i] and np.all(capacity[:slots] >= gpus):
            capacity[:slots] -= gpus
            run_slots[i] = slots
    return run_slots, capacity


def _after_lease_zero(problem: LeaseProblem, keep: np.ndarray, first: np.ndarray,
                      credit: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(need, rest) of the plan jobs `keep` after lease 0, which the jobs `first` hold: leases
    of work (overhead per run) or leases still needed, and whether any is left. credit (per_run
    only): leases of work the other jobs of `keep` get in lease 0 on GPUs freed in it."""
    if problem.per_run:  # what lease 0 gives: a lease, less the overhead unless held before
        gain = problem.width[0] - problem.overhead * ~problem.held[keep]
        gain = np.where(first, gain, 0.0 if credit is None else credit)
        need = problem.work[keep] - gain
        return need, need > WORK_TOLERANCE
    need = problem.leases_needed[keep] - first
    return need, need > 0


def _in_lease_zero(first: np.ndarray, credit: np.ndarray | None) -> np.ndarray:
    """Whether each job holds GPUs at the end of lease 0: from the boundary (`first`) or from
    a start in it (`credit` > 0)."""
    return first if credit is None else first | (credit > 0)


def _lazy_plan(problem: LeaseProblem, plan: ChronusPlan, planned: np.ndarray,
               admitted: np.ndarray, first: np.ndarray, settings: LeaseSettings,
               solver: Solver | str, credit: np.ndarray | None = None) -> ChronusPlan:
    """The plan that gives lease 0 to the jobs `first` (job indices of the boundary, in the
    fill's earliest-deadline order) and the admitted plan jobs the rest of their work after it
    (the other plan jobs are left out of it): latest-fit within the option `plan` chose for
    each, else the lease MILP over the slots after lease 0 (`_after_first`); `plan` as it is
    when neither places every admitted job (earliest deadline first would then break a
    guarantee that the plan keeps). credit: leases of running each plan job gets in lease 0
    on GPUs freed in it (`lease_zero_credit`), counted as done."""
    keep = np.flatnonzero(admitted & (plan.chosen >= 0))
    runs = np.isin(planned[keep], first)
    mine = None if credit is None else credit[keep]
    chosen = np.full(problem.num_jobs, -1, dtype=np.int64)
    chosen[keep] = plan.chosen[keep]
    packed = _pack_after_first(problem, keep, plan.chosen[keep], runs, mine)
    if packed is None:
        packed, options = _after_first(problem, keep, runs, settings, solver, mine)
        if packed is None:
            return plan
        chosen[keep] = np.where(options >= 0, options, chosen[keep])
    objective = plan_objective(problem, chosen, packed)
    gap = relative_gap(objective, plan.bound)
    return replace(plan, status=Status.OPTIMAL if gap is not None and gap <= PROVEN_GAP
                   else Status.FEASIBLE, objective=objective, leases=packed, chosen=chosen,
                   details={**plan.details, "incumbent_from": "edf"})


def _after_first(problem: LeaseProblem, keep: np.ndarray, first: np.ndarray,
                 settings: LeaseSettings, solver: Solver | str,
                 credit: np.ndarray | None = None):
    """(slots of the plan jobs `keep`: slot 0 where `first`, the rest of their work where the
    lease MILP over slots 1.. places it, any of their options (tails included); option chosen
    per job, -1 for jobs that lease 0 serves), or (None, None) when that MILP places not all.
    credit: as in `_after_lease_zero`."""
    need, rest = _after_lease_zero(problem, keep, first, credit)
    out = {int(i): (0,) if f else () for i, f in zip(keep, first)}
    options = np.full(keep.size, -1, dtype=np.int64)
    if not rest.any():
        return out, options
    if problem.num_leases < 2:
        return None, None
    position = np.full(problem.num_jobs, -1, dtype=np.int64)
    position[keep[rest]] = np.arange(int(rest.sum()))
    opt = np.flatnonzero(position[problem.option_job] >= 0)
    horizon = np.minimum(problem.option_horizon[opt], problem.num_leases) - 1
    tail = np.where(problem.tail_slot[opt] >= 0, problem.option_tail[opt], 0.0)
    usable = (horizon >= 1) | ((horizon == 0) & (tail > 0))
    opt, horizon, tail = opt[usable], horizon[usable], tail[usable]
    job = position[problem.option_job[opt]]
    if np.unique(job).size < rest.sum():
        return None, None
    per_run = problem.per_run
    shifted = LeaseProblem.from_arrays(
        problem.gpus[keep[rest]], None if per_run else need[rest], job,
        problem.option_value[opt], horizon, problem.capacity[1:], sigma=-1.0,
        admitted=np.ones(int(rest.sum()), dtype=bool), width=problem.width[1:],
        overhead=problem.overhead, held=_in_lease_zero(first, credit)[rest],
        work=need[rest] if per_run else None,
        option_tail=tail if tail.any() else None)
    found = solve_lease_problem(shifted, solver=solver, time_limit=settings.time_limit,
                                search=settings.search)
    if found.unplaced or np.any(found.chosen < 0):
        return None, None
    for m, i in enumerate(np.flatnonzero(rest)):
        out[int(keep[i])] += tuple(t + 1 for t in found.leases[m])
        options[i] = opt[found.chosen[m]]
    return out, options


def edf_meets(jobs: LeaseJobs, candidates: np.ndarray, capacity: int, now: float,
              settings: LeaseSettings, held: np.ndarray | None = None) -> np.ndarray:
    """(n,) bool: the jobs of `candidates` (SLO job indices) that earliest deadline first, run
    from `now` in continuous time on `capacity` GPUs, finishes by their first deadline: each
    job in deadline order starts when the earliest g of the GPUs are free (list scheduling,
    no preemption, the GPUs as one pool) and runs remaining_s plus the resume overhead (none
    for `held` jobs). A projection of the known jobs: later arrivals are not in it."""
    meets = np.zeros(jobs.num_jobs, dtype=bool)
    candidates = np.asarray(candidates, dtype=np.int64)
    due = jobs.first_deadline()
    order = candidates[np.lexsort((candidates, due[candidates]))]
    lost = np.full(jobs.num_jobs, settings.resume_overhead_s)
    if held is not None:
        lost[held] = 0.0
    free_at = np.full(capacity, float(now))  # when each GPU is next free, ascending
    for j in order:
        g = int(jobs.gpus[j])
        if g > capacity:  # never runs on this pool
            continue
        end = free_at[g - 1] + jobs.remaining_s[j] + lost[j]
        meets[j] = end <= due[j] + 1e-9
        free_at[:g] = end
        free_at.sort()
    return meets


def fill_order(jobs: LeaseJobs, candidates: np.ndarray, now: float, settings: LeaseSettings,
               held: np.ndarray | None = None) -> np.ndarray:
    """`candidates` (job indices) in the order the GPUs left free go to them. fill "service":
    shortest remaining service (remaining_s x GPUs) first. fill "deadline": first the SLO jobs
    that can still meet a deadline option by running from now (remaining_s plus the resume
    overhead, waived for `held` jobs, fits before it), earliest such deadline first; then the
    others (best effort, and SLO jobs past hope) by shortest remaining service. Ties: index."""
    candidates = np.asarray(candidates, dtype=np.int64)
    service = jobs.remaining_s * jobs.gpus
    if settings.fill == "service":
        return candidates[np.argsort(service[candidates], kind="stable")]
    lost = np.full(jobs.num_jobs, settings.resume_overhead_s)
    if held is not None:
        lost[held] = 0.0
    k = jobs.option_job
    meets = jobs.option_deadline_s - now >= jobs.remaining_s[k] + lost[k] - 1e-9
    due = np.full(jobs.num_jobs, np.inf)
    np.minimum.at(due, k[meets], jobs.option_deadline_s[meets])
    return candidates[np.lexsort((candidates, service[candidates], due[candidates]))]


def fill_in_order(gpus: np.ndarray, order: np.ndarray, free: int) -> np.ndarray:
    """Job indices that start, taking `order` in turn and skipping a job that does not fit in
    the GPUs still free (later smaller jobs may). Vectorized per pass: each pass takes the
    longest prefix of the remaining candidates that fits, then drops candidates larger than
    what is left, so there are at most as many passes as distinct GPU counts."""
    gpus = np.asarray(gpus, dtype=np.int64)
    candidates = np.asarray(order, dtype=np.int64)
    taken = []
    candidates = candidates[gpus[candidates] <= free]
    while candidates.size and free > 0:
        fits = np.cumsum(gpus[candidates]) <= free
        prefix = candidates[: int(np.argmin(fits)) if not fits.all() else candidates.size]
        taken.append(prefix)
        free -= int(gpus[prefix].sum())
        candidates = candidates[prefix.size:]
        candidates = candidates[gpus[candidates] <= free]
    return np.concatenate(taken) if taken else np.zeros(0, dtype=np.int64)
