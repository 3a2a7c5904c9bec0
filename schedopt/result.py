"""The result of one policy solve, as users and the `schedopt-result/1` document see it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import orjson

if TYPE_CHECKING:
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


def _padded(pieces: list[bytes]) -> np.ndarray:
    """(N, W) uint8: each piece's bytes, NUL-padded to the longest (W)."""
    text = np.array(pieces, dtype="S")
    return text.view(np.uint8).reshape(len(pieces), text.dtype.itemsize)


def _names(strings) -> np.ndarray:
    """(M, W) each string JSON-encoded without its quotes (`_padded`), from one dump: inside
    an encoded string every quote is escaped, so `","` occurs only between two of them."""
    if not len(strings):
        return np.zeros((0, 1), dtype=np.uint8)
    return _padded(_json(list(strings))[2:-2].split(b'","'))


def _keyed(keys: np.ndarray, values: np.ndarray, names: tuple[str, ...] | None) -> bytes:
    """The JSON object {key: value} (names None) or {key: {name: value}} for (M,) or (M, J)
    `values` (`keys` from `_names`), written from whole arrays: one dump of all the numbers
    split at its commas, laid out one job per row next to the keys and the punctuation,
    NUL padding dropped. JSON text never holds a NUL byte (strings escape it), and no per-job
    object is built."""
    M = len(keys)
    if M == 0:
        return b"{}"
    numbers = _padded(_json(np.ascontiguousarray(values, dtype=float).ravel())[1:-1]
                      .split(b",")).reshape(M, -1)

    def text(piece: bytes) -> np.ndarray:
        return np.broadcast_to(np.frombuffer(piece, dtype=np.uint8), (M, len(piece)))

    if names is None:
        columns = [keys, text(b'":'), numbers, text(b',"')]
    else:
        width = numbers.shape[1] // len(names)
        columns = [keys]
        for k, name in enumerate(names):
            columns += [text((b'":{' if k == 0 else b",") + _json(name) + b":"),
                        numbers[:, k * width:(k + 1) * width]]
        columns.append(text(b'},"'))
    return b'{"' + np.hstack(columns).tobytes().replace(b"\0", b"")[:-2] + b"}"


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
        import pandas as pd

        return pd.DataFrame(self.X, index=pd.Index(self.job_ids, name="job"),
                            columns=pd.Index(self.gpu_types, name="gpu_type"))

    def to_frame(self) -> pd.DataFrame | None:
        """One row per job (index `job`): the time fraction on each GPU type (one column per
        type) and `effective_throughput` (steps/s); None without an allocation."""
        if self.X is None:
            return None
        return self.allocation.assign(effective_throughput=self.effective_throughput)

    @property
    def effective_throughput(self) -> pd.Series | None:
        """steps/s per job, a Series indexed by job (`effective_rates` as an array)."""
        values = self.effective_rates
        if values is None:
            return None
        import pandas as pd

        return pd.Series(values, index=pd.Index(self.job_ids, name="job"), name="steps_per_s")

    @property
    def effective_rates(self) -> np.ndarray | None:
        """(M,) steps/s: sum_j T[m,j] X[m,j], or details["effective_throughput"] where a policy
        gives it (space sharing: paired time runs at the pair's rates, not T)."""
        if self.X is None:
            return None
        given = self.details.get("effective_throughput")
        if given is None:
            return np.einsum("mj,mj->m", self.throughput, self.X)
        return np.array([given[job] for job in self.job_ids], dtype=float)

    @property
    def gap(self) -> float | None:
        """Relative gap between objective and bound (None if either is unknown)."""
        return relative_gap(self.objective, self.bound)

    def _head(self) -> dict:
        """The document's keys before the allocation."""
        return {"format": RESULT_FORMAT, "policy": self.policy, "status": self.status.value,
                "objective": _finite_or_none(self.objective),
                "bound": _finite_or_none(self.bound), "solver": self.solver,
                "solve_seconds": round(float(self.solve_seconds), 6)}

    def _tail(self) -> dict:
        """The document's keys after the effective throughput: the policy's details, and the
        termination when it is not optimal."""
        tail = dict(self.details)
        if self.termination not in (None, Termination.OPTIMAL):
            tail.setdefault("termination", self.termination.value)
        return tail

    def to_dict(self) -> dict:
        """The `schedopt-result/1` document (JSON-serializable)."""
        doc = self._head()
        if self.X is None:
            doc["allocation"] = None
            doc["effective_throughput"] = None
        else:
            doc["allocation"] = {job: dict(zip(self.gpu_types, row))
                                 for job, row in zip(self.job_ids, self.X.tolist())}
            doc["effective_throughput"] = dict(zip(self.job_ids,
                                                   self.effective_rates.tolist()))
        doc.update(self._tail())
        return doc

    def to_json(self) -> bytes:
        """`to_dict()` as compact JSON text (UTF-8), written with orjson; the allocation and
        effective throughput go from arrays to text without a Python object per job (1,000,000
        jobs x 3 types: benchmarks/README.md, "End to end")."""
        if self.X is None or any(key in self.details for key in _BASE_KEYS):  # e.g. given rates
            return _json(self.to_dict())
        head, tail = self._head(), self._tail()
        keys = _names(self.job_ids)
        parts = [_json(head)[:-1], b',"allocation":', _keyed(keys, self.X, self.gpu_types),
                 b',"effective_throughput":', _keyed(keys, self.effective_rates, None)]
        if tail:
            parts += [b",", _json(tail)[1:]]
        else:
            parts.append(b"}")
        return b"".join(parts)
