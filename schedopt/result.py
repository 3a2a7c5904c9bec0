"""The result of one policy solve, as users and the `schedopt-result/1` document see it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from schedopt.backends import Status
from schedopt.backends.base import relative_gap
from schedopt.core.outcome import Termination

RESULT_FORMAT = "schedopt-result/1"


def _finite_or_none(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


@dataclass
class Result:
    """An allocation and how good it is.

    allocation: DataFrame (jobs x GPU types) of time fractions; each job holds `scale_factor`
    GPUs of a type for that fraction of wall time. effective_throughput: Series, steps/s.
    objective / bound: see the policy's `objective` description; solve_seconds: wall seconds.
    details: policy-specific extras (e.g. `infeasible_slos` for min_cost).
    termination: why the solve stopped (e.g. time_limit with a feasible status); the
    document's "termination" key names it whenever it is not "optimal".
    """

    policy: str
    status: Status
    objective: float | None
    bound: float | None
    solver: str
    solve_seconds: float
    job_ids: tuple[str, ...]
    gpu_types: tuple[str, ...]
    X: np.ndarray | None
    throughput: np.ndarray
    details: dict = field(default_factory=dict)
    termination: Termination | None = None

    @property
    def allocation(self) -> pd.DataFrame | None:
        if self.X is None:
            return None
        return pd.DataFrame(self.X, index=pd.Index(self.job_ids, name="job"),
                            columns=pd.Index(self.gpu_types, name="gpu_type"))

    @property
    def effective_throughput(self) -> pd.Series | None:
        """steps/s: sum_j T[m,j] X[m,j], or details["effective_throughput"] where a policy
        gives it (space sharing: paired time runs at the pair's rates, not T)."""
        if self.X is None:
            return None
        given = self.details.get("effective_throughput")
        values = (np.einsum("mj,mj->m", self.throughput, self.X) if given is None
                  else [given[job] for job in self.job_ids])
        return pd.Series(values, index=pd.Index(self.job_ids, name="job"), name="steps_per_s")

    @property
    def gap(self) -> float | None:
        """Relative gap between objective and bound (None if either is unknown)."""
        return relative_gap(self.objective, self.bound)

    def to_dict(self) -> dict:
        """The `schedopt-result/1` document (JSON-serializable)."""
        doc = {
            "format": RESULT_FORMAT,
            "policy": self.policy,
            "status": self.status.value,
            "objective": _finite_or_none(self.objective),
            "bound": _finite_or_none(self.bound),
            "solver": self.solver,
            "solve_seconds": round(float(self.solve_seconds), 6),
        }
        if self.X is None:
            doc["allocation"] = None
            doc["effective_throughput"] = None
        else:
            doc["allocation"] = {job: dict(zip(self.gpu_types, row))
                                 for job, row in zip(self.job_ids, self.X.tolist())}
            doc["effective_throughput"] = dict(zip(self.job_ids,
                                                   self.effective_throughput.tolist()))
        for key, value in self.details.items():
            doc[key] = value
        if self.termination not in (None, Termination.OPTIMAL):
            doc.setdefault("termination", self.termination.value)
        return doc
