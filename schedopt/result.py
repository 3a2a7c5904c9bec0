"""The result of one policy solve, as users and the `schedopt-result/1` document see it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import orjson
import pandas as pd

from schedopt.backends import Status
from schedopt.backends.base import relative_gap
from schedopt.core.outcome import Termination

RESULT_FORMAT = "schedopt-result/1"


_BASE_KEYS = ("format", "policy", "status", "objective", "bound", "solver", "solve_seconds",
              "allocation", "effective_throughput")
_JSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def _finite_or_none(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def _json(value: object) -> bytes:
    """`value` as compact JSON (numpy values as numbers and lists, non-finite floats as null)."""
    return orjson.dumps(value, option=_JSON_OPTIONS)


def _names(strings) -> list[bytes]:
    """Each string JSON-encoded without its quotes, from one dump: inside an encoded string
    every quote is escaped, so `","` occurs only between two of them."""
    return _json(list(strings))[2:-2].split(b'","') if len(strings) else []


def _keyed(keys: list[bytes], values: np.ndarray, names: tuple[str, ...] | None) -> bytes:
    """The JSON object {key: value} (names None) or {key: {name: value}} for (M,) or (M, J)
    `values`, written from whole arrays (`keys` from `_names`): numbers never hold `,`, so one
    dump of all values split at the commas gives each one's text; no per-job dict is built."""
    M = len(keys)
    if M == 0:
        return b"{}"
    numbers = _json(np.ascontiguousarray(values, dtype=float).ravel())[1:-1].split(b",")
    if names is None:  # key ": value ,"
        pieces = np.empty((M, 4), dtype=object)
        pieces[:, 1], pieces[:, 2] = b'":', numbers
    else:  # key ":{"name": value ,"name": value } ,"
        J = len(names)
        pieces = np.empty((M, 2 * J + 3), dtype=object)
        for k, name in enumerate(names):
            pieces[:, 1 + 2 * k] = (b'":{' if k == 0 else b",") + _json(name) + b":"
            pieces[:, 2 + 2 * k] = numbers[k::J]
        pieces[:, -2] = b"}"
    pieces[:, 0] = keys
    pieces[:, -1] = b',"'
    pieces[-1, -1] = b""
    return b'{"' + b"".join(pieces.ravel().tolist()) + b"}"


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

    def to_json(self) -> bytes:
        """`to_dict()` as compact JSON text (UTF-8), written with orjson; the allocation and
        effective throughput go from arrays to text without a Python object per job (1,000,000
        jobs x 3 types: benchmarks/README.md, "End to end")."""
        if self.X is None or any(key in self.details for key in _BASE_KEYS):  # e.g. given rates
            return _json(self.to_dict())
        head = {"format": RESULT_FORMAT, "policy": self.policy, "status": self.status.value,
                "objective": _finite_or_none(self.objective),
                "bound": _finite_or_none(self.bound), "solver": self.solver,
                "solve_seconds": round(float(self.solve_seconds), 6)}
        tail = dict(self.details)
        if self.termination not in (None, Termination.OPTIMAL):
            tail.setdefault("termination", self.termination.value)
        keys = _names(self.job_ids)
        rates = np.einsum("mj,mj->m", self.throughput, self.X)
        parts = [_json(head)[:-1], b',"allocation":', _keyed(keys, self.X, self.gpu_types),
                 b',"effective_throughput":', _keyed(keys, rates, None)]
        if tail:
            parts += [b",", _json(tail)[1:]]
        else:
            parts.append(b"}")
        return b"".join(parts)
