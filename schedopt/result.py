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


_CHUNK_JOBS = 1 << 14  # jobs written per step: the index arrays (~8 MB) stay in cache


def _gather(source: np.ndarray, starts: np.ndarray, lengths: np.ndarray, out: np.ndarray,
            ramp: np.ndarray) -> None:
    """out[:] = the pieces source[starts[i]:starts[i] + lengths[i]] one after another, with
    one index per byte (`ramp`: 0, 1, 2, ... at least len(out) long); no Python object per
    piece. Indexes are int32 (sources under 2 GiB)."""
    ends = np.cumsum(lengths, dtype=np.int32)
    index = np.repeat(starts - (ends - lengths), lengths)
    np.add(index, ramp[:len(index)], out=index)
    np.take(source, index, out=out, mode="clip")  # in range by construction; "clip" skips the check


def _number_spans(text: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(starts, lengths) of the items of `text`, a JSON list of numbers (a number's text holds
    no comma)."""
    at = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == ord(","))
    starts = np.concatenate(([1], at + 1))
    return starts, np.concatenate((at, [len(text) - 1])) - starts


def _key_spans(ids) -> tuple[bytes, np.ndarray, np.ndarray]:
    """(text, starts, lengths): the ids as one JSON list and where each encoded id (with its
    quotes) sits in it. An id's encoding is len(id) + 2 bytes unless it holds a character
    JSON escapes or a non-ASCII one, which only lengthen it, so one total tells whether the
    lengths can be read off the strings; else each id is encoded alone."""
    text = _json(list(ids))
    length = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids)) + 2
    if int(length.sum()) + len(ids) + 1 != len(text):
        length = np.fromiter(map(len, map(_json, ids)), dtype=np.int64, count=len(ids))
    starts = np.concatenate(([1], 1 + np.cumsum(length[:-1] + 1)))[:len(ids)]
    return text, starts, length


def _keyed(keys: tuple[bytes, np.ndarray, np.ndarray], values: np.ndarray,
           names: tuple[str, ...] | None) -> np.ndarray:
    """The JSON object {key: value} (names None) or {key: {name: value}} for (M,) or (M, J)
    `values` (`keys` from `_key_spans`) as uint8 text, written from whole arrays: one dump of
    every number, split at its commas by position, then each job's key, numbers and
    punctuation gathered in order, a block of jobs at a time; no per-job object is built."""
    key_text, key_start, key_length = keys
    M = len(key_start)
    if M == 0:
        return np.frombuffer(b"{}", dtype=np.uint8)
    flat = np.ascontiguousarray(values, dtype=float).ravel()
    number_text = _json(flat)
    number_start, number_length = _number_spans(number_text)
    J = 1 if names is None else len(names)
    glue = [b":"] if names is None else \
        [(b":{" if k == 0 else b",") + _json(name) + b":" for k, name in enumerate(names)]
    glue.append(b"," if names is None else b"},")
    source = np.frombuffer(b"".join([key_text, number_text, *glue]), dtype=np.uint8)
    if len(source) >= 2**31:
        raise ValueError("result document too large to write (2 GiB of ids and numbers)")
    glue_start = len(key_text) + len(number_text) + np.cumsum([0] + [len(g) for g in glue])
    glue_length = np.array([len(g) for g in glue])
    # One row per job: key, then (glue, number) per GPU type, then the closing glue.
    starts = np.empty((M, 2 * J + 2), dtype=np.int32)
    lengths = np.empty_like(starts)
    starts[:, 0], lengths[:, 0] = key_start, key_length
    starts[:, 1:-1:2], lengths[:, 1:-1:2] = glue_start[:J], glue_length[:J]
    starts[:, 2::2] = number_start.reshape(M, J) + len(key_text)
    lengths[:, 2::2] = number_length.reshape(M, J)
    starts[:, -1], lengths[:, -1] = glue_start[J], glue_length[J]
    row_bytes = lengths.sum(axis=1, dtype=np.int64)
    row_end = np.cumsum(row_bytes) + 1
    out = np.empty(int(row_end[-1]) + 1, dtype=np.uint8)
    out[0] = ord("{")
    ramp = np.arange(int(row_bytes.max()) * min(M, _CHUNK_JOBS), dtype=np.int32)
    for a in range(0, M, _CHUNK_JOBS):
        b = min(a + _CHUNK_JOBS, M)
        _gather(source, starts[a:b].ravel(), lengths[a:b].ravel(),
                out[row_end[a] - row_bytes[a]:row_end[b - 1]], ramp)
    out[-2] = ord("}")  # the last job's trailing comma
    return out[:-1]


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
        return b"".join(self.json_parts())

    def json_parts(self) -> list:
        """`to_json()` as consecutive pieces (bytes and uint8 arrays) to write one after
        another, which spares a copy of a large document."""
        if self.X is None or any(key in self.details for key in _BASE_KEYS):  # e.g. given rates
            return [_json(self.to_dict())]
        head, tail = self._head(), self._tail()
        keys = _key_spans(self.job_ids)
        parts = [_json(head)[:-1], b',"allocation":', _keyed(keys, self.X, self.gpu_types),
                 b',"effective_throughput":', _keyed(keys, self.effective_rates, None)]
        if tail:
            parts += [b",", _json(tail)[1:]]
        else:
            parts.append(b"}")
        return parts
