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

    def __post_init__(self):
        if self.width is None:  # built directly (not from_arrays): one lease per slot
            object.__setattr__(self, "width", np.ones(self.capacity.shape[0], dtype=np.int64))

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
                    sigma: float = 1.0, admitted=None, width=None) -> LeaseProblem:
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
        w = np.ones(cap.size, dtype=np.int64) if width is None else ints(width, "width", 1)
        if w.shape != cap.shape:
            raise PolicyError(f"width has shape {w.shape}, capacity {cap.shape}")
        return cls(g, n, job, value, horizon, cap, adm, float(sigma), w)
