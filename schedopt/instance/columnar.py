"""The columnar fast path: a `.json` instance's jobs decoded straight into a `JobTable`.

`columnar_instance(raw, source)` decodes the jobs with msgspec into typed, untracked records
(their fields and bounds are those `schema.json` gives a job, or stricter), reads each field as
one array and checks the cross-field rules on whole arrays; the rest of the document (cluster,
performance, users: small) goes through the compiled schema validator and the ordinary rules.
The records' row type (which GPU types a row holds) is guessed from the first row written out
near the start of the file, so that the whole document is decoded in one pass; where that guess
is not the cluster's GPU types, the cluster is read first (skipping the jobs) and the jobs
after. The records of that one pass hold only the optional job fields whose keys are written
near the start of the file; a job further on that gives another one fails that decode (unknown
field), and the jobs are then decoded with every field. A field the records do not hold is
every job's default, with no pass over the jobs.
It answers None whenever the document needs the ordinary path: jobs with `deadline_options` or
`parameter_server`, a value the typed decoder does not take (e.g. a scale factor written 2.0),
or any rule broken; the detailed checker then reports every problem with today's messages.
Units as in `model`: steps/s, seconds.
"""

from __future__ import annotations

import re
from functools import lru_cache
from operator import attrgetter
from typing import Annotated

import msgspec
import numpy as np

from schedopt.instance.build import build_instance
from schedopt.instance.checks import cross_field_problems
from schedopt.instance.model import Instance
from schedopt.instance.table import JobTable
from schedopt.instance.table import is_table
from schedopt.instance.validate import passes_schema

UNSET = msgspec.UNSET
_AtLeast0 = Annotated[float, msgspec.Meta(ge=0)]


def _top(jobs: object) -> type:
    """The top level, its jobs decoded as `jobs` (the rest as plain values)."""
    return msgspec.defstruct("Top", [
        ("format", object), ("cluster", object), ("jobs", jobs), ("name", object, UNSET),
        ("now", object, UNSET), ("performance", object, UNSET), ("users", object, UNSET),
    ], forbid_unknown_fields=True)


# The top level, jobs left undecoded (their row type depends on the GPU types).
_HEAD = _top(msgspec.Raw)


# A job's own row written out (no nested object), looked for near the start of the document.
_ROW = re.compile(rb'"throughput"\s*:\s*(\{[^{}]*\})')
_ROW_SEARCHED = 1 << 20  # bytes


# A job's optional fields: (type, default), bounds as schema.json gives them (or stricter).
_OPTIONAL = {
    "type": (str | None, None),
    "scale_factor": (Annotated[int, msgspec.Meta(ge=1)], 1),
    "weight": (Annotated[float, msgspec.Meta(gt=0)], 1.0),
    "arrival_time": (_AtLeast0, 0.0),
    "total_steps": (_AtLeast0 | None, None),
    "steps_done": (_AtLeast0, 0.0),
    "deadline": (_AtLeast0 | None, None),
    "user": (str | None, None),
    "isolated_time": (_AtLeast0, 0.0),
}
_EVERY_FIELD = tuple(_OPTIONAL)
_KEY = re.compile(rb'"(' + b"|".join(k.encode() for k in _OPTIONAL) + rb')"\s*:')


@lru_cache(maxsize=8)
def _whole_type(gpu_types: tuple[str, ...], fields: tuple[str, ...]) -> type:
    """The top level with the jobs decoded as `_job_type(gpu_types, fields)`."""
    return _top(list[_job_type(gpu_types, fields)])


def _in_one_pass(raw: bytes) -> tuple[object, list, tuple[str, ...], tuple[str, ...]] | None:
    """(top level, jobs, the GPU types of their rows, the optional fields their records hold)
    decoded in one pass over `raw`: the row type guessed from the first row written out in it
    and kept only when its GPU types are the cluster's, the fields those whose keys are written
    in its first `_ROW_SEARCHED` bytes; None otherwise (then the cluster is read first, the
    jobs after, with every field)."""
    first = _ROW.search(raw, 0, _ROW_SEARCHED)
    row = first and _decode(first.group(1), dict[str, object])
    if not row:
        return None
    guess = tuple(row)
    written = {key.decode() for key in _KEY.findall(raw, 0, _ROW_SEARCHED)}
    fields = tuple(k for k in _OPTIONAL if k in written)
    whole = _decode(raw, _whole_type(guess, fields))
    if whole is None or not isinstance(whole.cluster, dict):
        return None
    types = whole.cluster.get("gpu_types")
    if not isinstance(types, dict) or len(types) != len(guess) or set(types) != set(guess):
        return None
    return whole, whole.jobs, guess, fields


@lru_cache(maxsize=8)
def _job_type(gpu_types: tuple[str, ...], fields: tuple[str, ...] = _EVERY_FIELD) -> type:
    """The record of one job whose row holds exactly `gpu_types`, with the optional `fields`
    (any other key fails the decode)."""
    row = msgspec.defstruct("Row", [(f"t{k}", _AtLeast0) for k in range(len(gpu_types))],
                            rename={f"t{k}": t for k, t in enumerate(gpu_types)},
                            forbid_unknown_fields=True, gc=False)
    return msgspec.defstruct("Job", [
        ("id", Annotated[str, msgspec.Meta(min_length=1)]),
        *((k, *_OPTIONAL[k]) for k in fields),
        ("throughput", row | msgspec.UnsetType, UNSET),
    ], forbid_unknown_fields=True, gc=False)


def _strings(jobs: list, key: str, fields: tuple[str, ...]) -> list | None:
    """Each job's `key` (None where null), or None when no job has one."""
    if key not in fields:
        return None
    values = list(map(attrgetter(key), jobs))
    return None if values.count(None) == len(values) else values


def _numbers(jobs: list, key: str, fields: tuple[str, ...], dtype: type = float) -> np.ndarray:
    """(M,) each job's `key`, never null."""
    if key not in fields:
        return np.full(len(jobs), _OPTIONAL[key][1], dtype=dtype)
    return np.fromiter(map(attrgetter(key), jobs), dtype=dtype, count=len(jobs))


def _optional(jobs: list, key: str, fields: tuple[str, ...]) -> np.ndarray:
    """(M,) float: each job's `key` (null -> nan)."""
    if key not in fields:
        return np.full(len(jobs), np.nan)
    try:  # no job leaves it null: one pass, no list (np.array looks at each value's type)
        return np.fromiter(map(attrgetter(key), jobs), dtype=float, count=len(jobs))
    except TypeError:  # a null
        return np.array(list(map(attrgetter(key), jobs)), dtype=float)


def _own_rows(rows: list, row_types: tuple[str, ...], types: tuple[str, ...]) -> np.ndarray:
    """(len(rows), len(types)) the decoded rows' values (fields in the order of `row_types`,
    the same GPU types) in the order of `types`, one pass per GPU type."""
    T = np.empty((len(rows), len(types)))
    for k, name in enumerate(row_types):
        T[:, types.index(name)] = np.fromiter(map(attrgetter(f"t{k}"), rows), dtype=float,
                                              count=len(rows))
    return T


def _throughput(jobs: list, row_types: tuple[str, ...], types: tuple[str, ...],
                job_type: list | None, table: dict) -> np.ndarray | None:
    """(M, J) each job's row (decoded with fields in the order of `row_types`) in the order
    of `types`: its own, else its type's in performance.throughput (None when some job has
    neither, or the table's row lacks a GPU type)."""
    rows = list(map(attrgetter("throughput"), jobs))
    M, J = len(jobs), len(types)
    if UNSET not in rows:
        return _own_rows(rows, row_types, types)
    if job_type is None:
        return None
    resolved = [row if isinstance(row, dict) else None
                for row in (table.get(t) if isinstance(t, str) else None for t in job_type)]
    own = np.array([r is not UNSET for r in rows])
    if any(r is None for r, mine in zip(resolved, own) if not mine):
        return None
    T = np.empty((M, J))
    T[own] = _own_rows([r for r in rows if r is not UNSET], row_types, types)
    try:
        T[~own] = np.array([[row[t] for t in types] for row, mine in zip(resolved, own)
                            if not mine], dtype=float).reshape(-1, J)
    except KeyError:
        return None
    return T


def _decode(raw: bytes, kind: type) -> object | None:
    """`raw` decoded as `kind`, or None when it is not (bad JSON, wrong type, too deep, not
    UTF-8): the ordinary path then reports it."""
    try:
        return msgspec.json.decode(raw, type=kind)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return None


def columnar_instance(raw: bytes, source: str) -> Instance | None:
    """The Instance in the JSON text `raw`, its jobs as a `JobTable`; None when the document
    needs the ordinary path (see the module docstring)."""
    decoded = _in_one_pass(raw)
    head = decoded[0] if decoded else _decode(raw, _HEAD)
    if head is None:
        return None
    rest = {k: getattr(head, k) for k in head.__struct_fields__
            if getattr(head, k) is not UNSET and k != "jobs"}
    if not isinstance(rest.get("performance", {}), dict) or \
            is_table(rest.get("performance", {}).get("throughput")):
        return None  # the throughput matrix is a table file: `tables` reads it
    rest["jobs"] = []
    if not passes_schema(rest):
        return None
    perf = rest.get("performance", {})
    # Every rule that does not look at jobs, on the small rest of the document.
    if cross_field_problems({**rest, "performance": {k: v for k, v in perf.items()
                                                     if k != "cpu_time"}}):
        return None
    types = tuple(rest["cluster"]["gpu_types"])
    jobs, row_types, fields = decoded[1:] if decoded else (
        _decode(head.jobs, list[_job_type(types)]), types, _EVERY_FIELD)
    if jobs is None:
        return None
    ids = list(map(attrgetter("id"), jobs))
    distinct = set(ids)
    if len(distinct) != len(ids) or not set(perf.get("cpu_time", {})) <= distinct:
        return None
    job_type = _strings(jobs, "type", fields)
    throughput = _throughput(jobs, row_types, types, job_type, perf.get("throughput", {}))
    if throughput is None or not np.isfinite(throughput).all():
        return None
    scale = _numbers(jobs, "scale_factor", fields, np.int64)
    total, done = _optional(jobs, "total_steps", fields), _numbers(jobs, "steps_done", fields)
    counts = np.array([rest["cluster"]["gpu_types"][t]["count"] for t in types], dtype=float)
    if (done > total).any() or not ((throughput != 0) & (scale[:, None] <= counts)).any(1).all():
        return None  # progress past the total, or a job that can run nowhere
    table = JobTable(ids, types, throughput, job_type=job_type, scale_factor=scale,
                     weight=_numbers(jobs, "weight", fields),
                     arrival_time=_numbers(jobs, "arrival_time", fields),
                     total_steps=total, steps_done=done,
                     deadline=_optional(jobs, "deadline", fields),
                     user=_strings(jobs, "user", fields),
                     isolated_time=_numbers(jobs, "isolated_time", fields))
    return build_instance(rest, source, jobs=table)
