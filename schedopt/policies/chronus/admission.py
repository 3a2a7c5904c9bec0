"""Chronus admission control and GPU round-up (docs/formulations.md §3; Gao et al., SoCC'21).

Units as in `chronus.LeaseProblem`: GPUs (gpus, capacity), leases (leases_needed, horizons:
a horizon D lets a job use leases 0..D-1 of the capacity window), value (any unit).

Latest-fit packing (`latest_fit_packing`): every admitted job is packed with the horizon of its
LOOSEST deadline option (an admitted job is owed some option, so the loosest one is all that is
guaranteed). Packing order: admitted jobs by that horizon, LATEST first (ties by job index), so
the loosest jobs take the late leases that tighter jobs cannot use; the new job is packed LAST,
so it only uses what the guaranteed jobs leave and never displaces them. Each job takes the
n_j latest leases t < min(D_j, H) that still have g_j GPUs free (`chronus.latest_fit_greedy`
semantics, which this module calls); a job with fewer such leases is unplaced.

Admission (`admit`), for a new job with options (value u_v, horizon D_v):

    1. the admitted jobs alone must pack, else reject (ADMITTED_DO_NOT_FIT);
    2. direct: pack admitted + new with the new job's TIGHTEST horizon min_v D_v; fits -> admit;
    3. else binary-search the smallest H* in [n_new, H] (H = capacity window) at which the packing
       fits; none -> reject (NO_FIT_IN_WINDOW); H* > max_v D_v (its loosest deadline) -> reject
       (BEYOND_LAST_DEADLINE); otherwise admit. A new job that needs more leases than its loosest
       deadline (or the window) allows is rejected first (TOO_FEW_LEASES).

The search is exact: admitted jobs are packed before the new job, so their leases do not depend
on H, and the new job fits at H iff at least n_new leases t < H have g_new GPUs left; that
count only grows with H. On admission the reachable option recorded is the one of highest
value among options with D_v >= H* (ties: the tighter one, then the earlier option).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from schedopt.errors import PolicyError
from schedopt.policies.chronus.lease_milp import WORK_TOLERANCE, LeaseProblem, latest_fit_greedy


def round_up_gpus(requested: np.ndarray, gpus_per_node: int = 8) -> np.ndarray:
    """GPU demands rounded up for consolidation on `gpus_per_node`-GPU nodes (Chronus rounds to
    1, 2, 4, 8n on 8-GPU nodes): up to a node, the next power of two (capped at a node); above,
    the next multiple of `gpus_per_node`. With 8 per node: 3 -> 4, 5 -> 8, 9 -> 16. Vectorized.
    """
    if isinstance(gpus_per_node, bool) or int(gpus_per_node) != gpus_per_node or gpus_per_node < 1:
        raise PolicyError(f"gpus_per_node must be an integer >= 1, got {gpus_per_node!r}")
    node = int(gpus_per_node)
    req = np.asarray(requested)
    if req.size and (not np.all(np.isfinite(req.astype(float)))
                     or np.any(req != np.round(req)) or np.any(req < 1)):
        raise PolicyError("requested GPUs must be integers >= 1")
    req = req.astype(np.int64)
    small = np.minimum(np.left_shift(np.int64(1), _ceil_log2(np.minimum(req, node))), node)
    large = -(-req // node) * node
    return np.where(req <= node, small, large)


def _ceil_log2(x: np.ndarray) -> np.ndarray:
    """ceil(log2(x)) for integers 1 <= x (exact for x below 2**52)."""
    return np.ceil(np.log2(np.maximum(x, 1).astype(np.float64))).astype(np.int64)


@dataclass(frozen=True)
class NewJob:
    """An arriving SLO job: gpus (already rounded, see `round_up_gpus`), leases_needed, and its
    deadline options as option_value (V,) and option_horizon (V,) leases from now. work: leases
    of running left when the overhead is counted per run (`admit`'s overhead > 0; then
    leases_needed only bounds the leases a plan holds, `problem.lease_count`); held: it held its
    GPUs in the lease before now."""

    gpus: int
    leases_needed: int
    option_value: np.ndarray
    option_horizon: np.ndarray
    work: float | None = None
    held: bool = False

    def need(self, overhead: float):
        """Leases of work (per run, overhead > 0) or leases (otherwise) the job needs."""
        return float(self.work) if overhead > 0 else self.leases_needed

    @classmethod
    def from_values(cls, gpus, leases_needed, option_value, option_horizon) -> NewJob:
        value = np.atleast_1d(np.asarray(option_value, dtype=np.float64))
        # LeaseProblem.from_arrays validates one job with V options.
        LeaseProblem.from_arrays([gpus], [leases_needed], np.zeros(value.size, dtype=np.int64),
                                 value, np.atleast_1d(option_horizon), [1])
        if value.size == 0:
            raise PolicyError("the new job needs at least one deadline option")
        return cls(int(gpus), int(leases_needed), value,
                   np.atleast_1d(np.asarray(option_horizon)).astype(np.int64))


@dataclass(frozen=True)
class JobSet:
    """Admitted jobs as arrays consistent with `LeaseProblem`: gpus (n,), leases_needed (n,),
    option_job / option_value / option_horizon (K,). Every job needs at least one option."""

    gpus: np.ndarray
    leases_needed: np.ndarray
    option_job: np.ndarray
    option_value: np.ndarray
    option_horizon: np.ndarray

    @property
    def num_jobs(self) -> int:
        return self.gpus.shape[0]

    @classmethod
    def from_arrays(cls, gpus, leases_needed, option_job, option_value, option_horizon) -> JobSet:
        p = LeaseProblem.from_arrays(gpus, leases_needed, option_job, option_value,
                                     option_horizon, [1])
        return cls(p.gpus, p.leases_needed, p.option_job, p.option_value, p.option_horizon)

    @classmethod
    def empty(cls) -> JobSet:
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z, z, np.zeros(0), z)

    def loosest_horizon(self) -> np.ndarray:
        """(n,) the largest option horizon of each job, in leases."""
        out = np.zeros(self.num_jobs, dtype=np.int64)
        np.maximum.at(out, self.option_job, self.option_horizon)
        return out


def packing_order(horizon: np.ndarray) -> np.ndarray:
    """Job indices in packing order: horizon descending, ties by job index ascending."""
    return np.lexsort((np.arange(horizon.shape[0]), -np.asarray(horizon)))


def latest_fit_packing(gpus, leases_needed, horizon, capacity, order=None, width=None,
                       overhead: float = 0.0, work=None, held=None):
    """Latest-fit packing of jobs with one horizon each: (leases, unplaced, free).

    Jobs go in `order` (default `packing_order(horizon)`); each takes its n_j latest leases
    t < min(D_j, H) with g_j GPUs still free (via `latest_fit_greedy`). `leases[j]` holds job
    j's leases (original indices), `unplaced` the jobs that did not fit, `free` (H,) the GPUs
    left per lease. Horizons must be >= 1. width (H,): leases per slot (default 1; then
    horizons and `leases` count slots, and capacity is per lease of each slot). overhead,
    work, held: the resume overhead counted once per run (`LeaseProblem`).
    """
    g = np.asarray(gpus, dtype=np.int64)
    n = np.asarray(leases_needed, dtype=np.int64)
    d = np.asarray(horizon, dtype=np.int64)
    cap = np.asarray(capacity, dtype=np.int64)
    perm = packing_order(d) if order is None else np.asarray(order, dtype=np.int64)
    if perm.size == 0:
        return {}, (), cap.copy()
    per_run = overhead > 0
    sub = LeaseProblem.from_arrays(
        g[perm], n[perm], np.arange(perm.size), np.zeros(perm.size), d[perm], cap, width=width,
        overhead=overhead, work=np.asarray(work, dtype=float)[perm] if per_run else None,
        held=np.asarray(held, dtype=bool)[perm] if per_run and held is not None else None)
    chosen, held, _ = latest_fit_greedy(sub)
    free = cap.copy()
    leases: dict[int, tuple[int, ...]] = {}
    for i, j in enumerate(perm):
        if chosen[i] >= 0:
            leases[int(j)] = held[i]
            free[list(held[i])] -= g[j]
    unplaced = tuple(sorted(int(perm[i]) for i in np.flatnonzero(chosen < 0)))
    return leases, unplaced, free


class AdmissionReason(str, enum.Enum):
    """Why `admit` decided as it did."""

    FITS_FIRST_DEADLINE = "fits_first_deadline"
    FITS_LATER_DEADLINE = "fits_later_deadline"
    ADMITTED_DO_NOT_FIT = "admitted_do_not_fit"
    TOO_FEW_LEASES = "too_few_leases"
    NO_FIT_IN_WINDOW = "no_fit_in_window"
    BEYOND_LAST_DEADLINE = "beyond_last_deadline"


@dataclass
class AdmissionDecision:
    """The outcome of `admit`.

    `option`: index into the new job's options that becomes reachable (-1 when rejected);
    `horizon`: the horizon, in leases, the new job was packed with: its tightest horizon when it
    fit directly, else H* from the search (also reported on a BEYOND_LAST_DEADLINE rejection;
    None when no horizon was found). `searched`: the binary search ran. `leases`: the latest-fit
    packing at `horizon`, admitted jobs by their index, the new job under key `new_index`
    (= number of admitted jobs); empty when the new job is rejected without a horizon.
    """

    admitted: bool
    reason: AdmissionReason
    option: int
    horizon: int | None
    searched: bool
    new_index: int
    leases: dict[int, tuple[int, ...]] = field(default_factory=dict)


def _new_job_fits(free: np.ndarray, gpus: int, needed, horizon: int,
                  width: np.ndarray | None = None, overhead: float = 0.0,
                  held: bool = False) -> bool:
    fits = free[:horizon] >= gpus
    if overhead > 0:  # every fitting slot: whole widths, less the overhead of each run
        w = np.ones(fits.size) if width is None else width[:horizon]
        starts = np.count_nonzero(fits[1:] & ~fits[:-1]) + int(fits.size > 0 and fits[0]
                                                               and not held)
        return float(w[fits].sum()) - overhead * starts >= needed - WORK_TOLERANCE
    if width is None:
        return int(np.count_nonzero(fits)) >= needed
    return int(width[:horizon][fits].sum()) >= needed


def earliest_fitting_horizon(free: np.ndarray, gpus: int, needed,
                             width: np.ndarray | None = None, overhead: float = 0.0,
                             held: bool = False) -> int | None:
    """Binary search for the smallest H in [1, len(free)] such that the slots t < H with `gpus`
    GPUs free hold at least `needed` leases (one lease per slot by default; monotone in H);
    None when even H = len(free) fails. With overhead > 0, `needed` is leases of work and each
    run of those slots loses the overhead (`LeaseProblem`); still monotone, since a slot added
    at the end adds its width less at most one overhead."""
    if overhead > 0:
        lo = 1
    else:
        lo = needed if width is None else int(np.searchsorted(np.cumsum(width), needed)) + 1
    hi = free.shape[0]

    def fits(h):
        return _new_job_fits(free, gpus, needed, h, width, overhead, held)

    if lo > hi or not fits(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def admit(new_job: NewJob, admitted_jobs: JobSet, capacity_per_lease,
          width=None, overhead: float = 0.0) -> AdmissionDecision:
    """Admission control of one arriving SLO job (rules in the module docstring).

    capacity_per_lease (H,) GPUs free in lease t = 0..H-1 for SLO jobs; horizons in leases from
    now. With width (H,) (leases per slot, see `LeaseProblem`), t indexes slots: horizons and
    the decision's leases count slots, capacity is per lease of each slot, and a slot gives a
    job width[t] leases. overhead > 0: the resume overhead counted once per run, as a share of
    a lease (`LeaseProblem`); only the new job then has work (admitted_jobs must be empty).
    Returns an `AdmissionDecision`.
    """
    if overhead > 0 and admitted_jobs.num_jobs:
        raise PolicyError("admission with the overhead counted per run takes no admitted jobs "
                          "(admit against the GPUs their reservations leave free)")
    grid = LeaseProblem.from_arrays([1], [1], [0], [0.0], [1], capacity_per_lease, width=width)
    cap = grid.capacity
    width = None if width is None else grid.width
    H = cap.shape[0]
    new_index = admitted_jobs.num_jobs
    first = int(new_job.option_horizon.min())
    last = int(new_job.option_horizon.max())

    def decision(reason, admitted=False, option=-1, horizon=None, searched=False, leases=None):
        return AdmissionDecision(admitted, reason, option, horizon, searched, new_index,
                                 leases or {})

    horizons = admitted_jobs.loosest_horizon()
    _, unplaced, free = latest_fit_packing(admitted_jobs.gpus, admitted_jobs.leases_needed,
                                           horizons, cap, width=width)
    if unplaced:
        return decision(AdmissionReason.ADMITTED_DO_NOT_FIT)
    g, n = new_job.gpus, new_job.need(overhead)
    within = float(grid.leases_within(min(last, H)))
    if overhead > 0:  # at most: one run over every slot
        within -= overhead * (not new_job.held)
    if n > within + (WORK_TOLERANCE if overhead > 0 else 0):
        return decision(AdmissionReason.TOO_FEW_LEASES)

    def packed_at(h):
        order = np.append(packing_order(horizons), new_index)
        # The admitted jobs pack as above and the new job, last, fits at h: nothing is unplaced.
        full, _, _ = latest_fit_packing(np.append(admitted_jobs.gpus, g),
                                        np.append(admitted_jobs.leases_needed,
                                                  new_job.leases_needed),
                                        np.append(horizons, h), cap, order=order,
                                        width=width, overhead=overhead, work=[n],
                                        held=[new_job.held])
        return full

    if _new_job_fits(free, g, n, first, width, overhead, new_job.held):
        return decision(AdmissionReason.FITS_FIRST_DEADLINE, True,
                        _reachable_option(new_job, first), first, False, packed_at(first))
    h_star = earliest_fitting_horizon(free, g, n, width, overhead, new_job.held)
    if h_star is None:
        return decision(AdmissionReason.NO_FIT_IN_WINDOW, searched=True)
    if h_star > last:
        return decision(AdmissionReason.BEYOND_LAST_DEADLINE, horizon=h_star, searched=True)
    return decision(AdmissionReason.FITS_LATER_DEADLINE, True, _reachable_option(new_job, h_star),
                    h_star, True, packed_at(h_star))


def _reachable_option(new_job: NewJob, horizon: int) -> int:
    """Highest-value option with D_v >= horizon; ties: smaller D_v, then earlier option."""
    ok = np.flatnonzero(new_job.option_horizon >= horizon)
    best = np.lexsort((ok, new_job.option_horizon[ok], -new_job.option_value[ok]))[0]
    return int(ok[best])

