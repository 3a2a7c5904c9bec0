"""One lease boundary of Chronus as validated arrays (`LeaseProblem`): the input of the lease
MILP (schedopt/policies/chronus/lease_milp.py) and of its LP roundings
(schedopt/policies/chronus/rounding.py). Its own module so that neither imports the other for
the type (docs/formulations.md, Chronus).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedopt.errors import PolicyError


@dataclass(frozen=True)
class LeaseProblem:
    """One lease boundary, validated. Units: GPUs (gpus, capacity), leases (leases_needed,
    width), slots (option_horizon: slots from now, so option k may use slots
    0..option_horizon[k]-1), value (option_value: any unit, larger is better).

    gpus (n,), leases_needed (n,), admitted (n,) bool: jobs that must get one option;
    option_job (K,) job of each option, option_value (K,), option_horizon (K,);
    capacity (H,) GPUs free in every lease of slot t; width (H,) leases in slot t (default 1:
    one slot per lease, the classic Chronus window). A job holding slot t holds its GPUs for
    all width[t] leases of it. A job's options are tried by the greedy in the order they
    appear here.

    Resume overhead counted once per run (`per_run`, when overhead > 0): overhead is the share
    of a lease (0 <= overhead < 1) a job loses each time it starts or resumes; work (n,) the
    leases of running each job still needs (remaining seconds / lease seconds); held (n,) bool
    the jobs that held their GPUs in the lease before slot 0 (they pay nothing if they keep
    them). Holding slots S then gives `progress` = sum_{t in S} width[t] - overhead x (runs of
    consecutive slots in S, less the one that starts at slot 0 when held), and a job is served
    when that reaches work. leases_needed is then an upper bound (`lease_count`): any plan of a
    job that stops as soon as it is served holds fewer than leases_needed + width of its last
    slot leases. With overhead 0 (the default) a job needs leases_needed leases.

    option_tail (K,), per run only: leases of work (0 <= tail < 1) option k may take from the
    single lease right after its horizon (slot option_horizon[k], the lease its deadline falls
    in: the part of it before the deadline; the horizon may then be 0, a deadline in the next
    lease); 0 leaves that slot out, as without tails. An
    option holding it gets the tail instead of the slot's width (`progress` given `chosen`).
    """

    gpus: np.ndarray
    leases_needed: np.ndarray
    option_job: np.ndarray
    option_value: np.ndarray
    option_horizon: np.ndarray
    capacity: np.ndarray
    admitted: np.ndarray
    sigma: float = 1.0
    width: np.ndarray | None = None
    overhead: float = 0.0
    held: np.ndarray | None = None
    work: np.ndarray | None = None
    option_tail: np.ndarray | None = None

    def __post_init__(self):
        if self.width is None:  # built directly (not from_arrays): one lease per slot
            object.__setattr__(self, "width", np.ones(self.capacity.shape[0], dtype=np.int64))
        if self.held is None:
            object.__setattr__(self, "held", np.zeros(self.gpus.shape[0], dtype=bool))
        if self.option_tail is None:
            object.__setattr__(self, "option_tail", np.zeros(self.option_job.shape[0]))

    @property
    def per_run(self) -> bool:
        """The resume overhead is counted once per run of held slots (overhead > 0)."""
        return self.overhead > 0

    @property
    def need(self) -> np.ndarray:
        """(n,) leases of work each job needs: work when `per_run`, else leases_needed."""
        if self.per_run:
            return self.work
        return self.leases_needed.astype(float)

    @property
    def tail_slot(self) -> np.ndarray:
        """(K,) the slot of option k's tail (its horizon), -1 where it has none."""
        has = (self.option_tail > 0) & (self.option_horizon < self.num_leases)
        return np.where(has, self.option_horizon, -1)

    def progress(self, held: np.ndarray, jobs: np.ndarray | None = None,
                 chosen: np.ndarray | None = None) -> np.ndarray:
        """(m,) leases of work the plans held (m, H) bool give the jobs `jobs` (default all):
        see the class docstring (with overhead 0, the leases held); chosen (m,): each plan's
        option (-1: none), whose tail slot, when held, gives the tail only."""
        held = np.asarray(held, dtype=bool)
        leases = held @ self.width
        if chosen is not None:
            rows = np.flatnonzero(np.asarray(chosen) >= 0)
            slot = self.tail_slot[np.asarray(chosen)[rows]]
            rows, slot = rows[slot >= 0], slot[slot >= 0]
            on = held[rows, slot]
            leases = leases.astype(float)
            leases[rows[on]] -= self.width[slot[on]] - self.option_tail[
                np.asarray(chosen)[rows[on]]]
        if not self.per_run:
            return leases.astype(float)
        before = self.held if jobs is None else self.held[jobs]
        starts = held[:, 0] & ~before
        starts = starts.astype(np.int64) + np.count_nonzero(held[:, 1:] & ~held[:, :-1], axis=1)
        return leases - self.overhead * starts

    @property
    def num_jobs(self) -> int:
        return self.gpus.shape[0]

    @property
    def num_options(self) -> int:
        return self.option_job.shape[0]

    @property
    def num_leases(self) -> int:
        return self.capacity.shape[0]

    @property
    def slot_end(self) -> np.ndarray:
        """(H,) leases from now to the end of slot t (cumulative width)."""
        return np.cumsum(self.width)

    def leases_within(self, horizon: np.ndarray) -> np.ndarray:
        """Leases in the first `horizon` slots (0 for horizon <= 0; capped at the window)."""
        end = np.concatenate(([0], self.slot_end))
        return end[np.clip(np.asarray(horizon, dtype=np.int64), 0, self.num_leases)]

    @classmethod
    def from_arrays(cls, gpus, leases_needed, option_job, option_value, option_horizon, capacity,
                    sigma: float = 1.0, admitted=None, width=None, overhead: float = 0.0,
                    held=None, work=None, option_tail=None) -> LeaseProblem:
        """Validated arrays (see the class). With overhead > 0, work (leases of running left)
        is required and leases_needed may be None (then `lease_count(work, overhead)`)."""
        def ints(value, name, minimum):
            arr = np.asarray(value)
            if arr.ndim != 1:
                raise PolicyError(f"{name} must be a 1-D array, got shape {arr.shape}")
            if arr.size and (not np.all(np.isfinite(arr.astype(float)))
                             or np.any(arr != np.round(arr)) or np.any(arr < minimum)):
                raise PolicyError(f"{name} must hold integers >= {minimum}")
            return arr.astype(np.int64)

        g = ints(gpus, "gpus", 1)
        if isinstance(overhead, bool) or not (0 <= overhead < 1):
            raise PolicyError(f"overhead must be a share of a lease in [0, 1), got {overhead!r}")
        if overhead > 0:
            if work is None:
                raise PolicyError("overhead > 0 needs work (leases of running left per job)")
            work = np.asarray(work, dtype=np.float64)
            if work.shape != g.shape or not np.all(np.isfinite(work)) or np.any(work <= 0):
                raise PolicyError(f"work must be (n,) finite leases > 0, got shape {work.shape}")
            if leases_needed is None:
                leases_needed = lease_count(work, overhead)
        else:
            work = None
        n = ints(leases_needed, "leases_needed", 1)
        job = ints(option_job, "option_job", 0)
        horizon = ints(option_horizon, "option_horizon", 0)
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
        w = np.ones(cap.size, dtype=np.int64) if width is None else ints(width, "width", 1)
        if w.shape != cap.shape:
            raise PolicyError(f"width has shape {w.shape}, capacity {cap.shape}")
        prior = np.zeros(g.size, dtype=bool) if held is None else np.asarray(held, dtype=bool)
        if prior.shape != g.shape:
            raise PolicyError(f"held has shape {prior.shape}, gpus {g.shape}")
        tail = np.zeros(job.size) if option_tail is None else np.asarray(option_tail, float)
        if tail.shape != job.shape or np.any(~(tail >= 0) | ~(tail < 1)) or (
                tail.any() and not overhead > 0):
            raise PolicyError("option_tail must be (K,) leases in [0, 1), with overhead > 0")
        if np.any((horizon < 1) & (tail == 0)):
            raise PolicyError("option_horizon must be >= 1 where an option has no tail")
        return cls(g, n, job, value, horizon, cap, adm, float(sigma), w, float(overhead), prior,
                   work, tail)


def lease_count(work: np.ndarray, overhead: float) -> np.ndarray:
    """(n,) leases enough for `work` leases of running when every lease pays `overhead` (at
    least 1): ceil(work / (1 - overhead)). Any plan that stops once served holds fewer than
    this plus the width of its last slot."""
    work = np.asarray(work, dtype=np.float64)
    return np.maximum(np.ceil(work / (1.0 - overhead) - 1e-9), 1).astype(np.int64)
