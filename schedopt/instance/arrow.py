"""The Parquet fast path: a jobs table read by pyarrow straight into a `JobTable`, no pandas.

`arrow_jobs(doc, base)` answers the JobTable of a document (already validated) whose jobs are
a Parquet file, when the table is plain: an `id` column of strings, numeric job columns, one
numeric column per GPU type with a value in every row (each job its own throughput row), no
`type` or `user` column, and every cell within the rules `tables.job_table` checks. Anything
else (a CSV file, a throughput table, a bad cell, pyarrow missing) answers None, and the
pandas reader (`tables`) then builds the instance or reports every problem with its row and
column. Units as in `model`: steps/s, seconds.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from schedopt.instance.table import JobTable, is_table, keeps_rule
from schedopt.instance.validate import job_rule, schema, _resolve

_NUMBERS = ("scale_factor", "weight", "arrival_time", "total_steps", "steps_done", "deadline",
            "isolated_time")
_DEFAULTS = {"scale_factor": 1.0, "weight": 1.0, "arrival_time": 0.0, "steps_done": 0.0,
             "isolated_time": 0.0, "total_steps": np.nan, "deadline": np.nan}


def _read(path: Path):
    """The pyarrow Table in `path`, or None (no pyarrow, unreadable: the pandas reader says
    why). The pandas metadata is not read, so pandas is not imported."""
    try:
        from pyarrow import parquet
    except ImportError:
        return None
    try:
        return parquet.ParquetFile(path).read(use_pandas_metadata=False)
    except Exception:  # any reading problem is reported by the pandas reader
        return None


def _values(data) -> np.ndarray | None:
    """(M,) float: a numeric column read from its buffers (pyarrow's own to_numpy imports
    pandas), null -> NaN; None for a column of another type."""
    import pyarrow.types as types

    kind = "f" if types.is_floating(data.type) else "i" if types.is_signed_integer(data.type) \
        else "u" if types.is_unsigned_integer(data.type) else None
    if kind is None:
        return None
    dtype = np.dtype(f"{kind}{data.type.bit_width // 8}")
    parts = []
    for chunk in data.chunks:
        validity, buffer = chunk.buffers()[:2]
        values = np.frombuffer(buffer, dtype=dtype, count=len(chunk),
                               offset=chunk.offset * dtype.itemsize).astype(float)
        if chunk.null_count:
            given = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
            values[~given[chunk.offset:chunk.offset + len(chunk)].astype(bool)] = np.nan
        parts.append(values)
    return np.concatenate(parts) if parts else np.zeros(0)


def _numbers(table, column: str, rule: dict, default: float) -> np.ndarray | None:
    """(M,) float: the column (null or NaN -> `default`, as an empty cell), or None when a
    cell breaks `rule` (the schema's rule for that key) or the column is not numeric."""
    if column not in table.column_names:
        return np.full(table.num_rows, default)
    values = _values(table.column(column))
    if values is None:
        return None
    given = ~np.isnan(values)
    ok = keeps_rule(values, rule)
    if (given & ~ok).any():
        return None
    return np.where(given, values, default)


def arrow_jobs(doc: dict, base: str | os.PathLike | None) -> JobTable | None:
    """The jobs of `doc` (validated; `"jobs": {"table": FILE.parquet}`, FILE relative to
    `base`) as a JobTable, or None when the pandas reader must take it (module docstring)."""
    jobs, perf = doc.get("jobs"), doc.get("performance", {})
    if not is_table(jobs) or is_table(perf.get("throughput")) or \
            Path(jobs["table"]).suffix.lower() not in (".parquet", ".pq"):
        return None
    table = _read((Path(base) if base is not None else Path(".")) / jobs["table"])
    if table is None:
        return None
    types = tuple(doc["cluster"]["gpu_types"])
    known = {"id", *_NUMBERS, *types}
    if not set(table.column_names) <= known or "id" not in table.column_names or \
            len(set(table.column_names)) != len(table.column_names):
        return None
    import pyarrow.types as arrow_types

    id_column = table.column("id")
    if not (arrow_types.is_string(id_column.type) or arrow_types.is_large_string(id_column.type)) \
            or id_column.null_count:
        return None
    ids = id_column.to_pylist()
    M = len(ids)
    distinct = set(ids)
    if len(distinct) != M or "" in distinct or not set(perf.get("cpu_time", {})) <= distinct:
        return None
    numbers = {key: _numbers(table, key, job_rule(key), _DEFAULTS[key]) for key in _NUMBERS}
    step = _resolve(schema()["$defs"]["steps"])
    rows = [_numbers(table, t, step, np.nan) if t in table.column_names else None
            for t in types]
    if any(v is None for v in (*numbers.values(), *rows)):
        return None
    throughput = np.column_stack(rows) if M else np.zeros((0, len(types)))
    if np.isnan(throughput).any():
        return None  # jobs without their own row take their type's: the pandas reader
    total, done, scale = numbers["total_steps"], numbers["steps_done"], numbers["scale_factor"]
    counts = np.array([doc["cluster"]["gpu_types"][t]["count"] for t in types], dtype=float)
    if (done > total).any() or (scale > counts.max()).any() or \
            not ((throughput != 0) & (scale[:, None] <= counts)).any(axis=1).all():
        return None
    return JobTable(ids, types, throughput, scale_factor=scale, weight=numbers["weight"],
                    arrival_time=numbers["arrival_time"], total_steps=total, steps_done=done,
                    deadline=numbers["deadline"], isolated_time=numbers["isolated_time"])
