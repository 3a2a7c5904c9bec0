"""Jobs and throughput matrices as tables: CSV or Parquet files an instance names, and DataFrames.

An instance may give `"jobs": {"table": "jobs.parquet"}` and `"performance": {"throughput":
{"table": "throughput.csv"}}`; paths are relative to the instance file's folder. A jobs table
has a column `id` and any of a job's keys (type, scale_factor, weight, arrival_time,
total_steps, steps_done, deadline, user, isolated_time) as columns, plus one column per GPU type
for jobs with their own row (steps/s); an empty cell means the key is absent (its default). A
throughput table has a column `type` and one column per GPU type. Reading never executes code
(CSV through pandas' parser, Parquet through pyarrow). Every bad cell is a `Problem` naming the
file, `row N, column C` (N counts data rows from 1, after the header) and what was expected.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from schedopt.errors import InstanceError, Problem
from schedopt.instance.build import build_instance
from schedopt.instance.model import Instance
from schedopt.instance.table import JobTable, is_table, keeps_rule
from schedopt.instance.validate import _resolve, describe, job_rule, schema
from schedopt.instance.values import show

_STRINGS = ("id", "type", "user")
_NUMBERS = ("scale_factor", "weight", "arrival_time", "total_steps", "steps_done", "deadline",
            "isolated_time")
_DEFAULTS = {"scale_factor": 1.0, "weight": 1.0, "arrival_time": 0.0, "steps_done": 0.0,
             "isolated_time": 0.0, "total_steps": np.nan, "deadline": np.nan}
JOB_COLUMNS = _STRINGS + _NUMBERS
SUFFIXES = (".csv", ".parquet", ".pq")


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """The table in a .csv or .parquet file; InstanceError (one problem) when it cannot be read.
    CSV cells are read as text where a column holds text (ids, types, users keep leading zeros
    and never become numbers)."""
    path = Path(path)
    suffix = path.suffix.lower()

    def fail(message: str) -> InstanceError:
        return InstanceError([Problem(str(path), "", message)])

    if suffix not in SUFFIXES:
        raise fail(f"unknown table suffix {suffix!r}; expected .csv or .parquet")
    arrow = _pyarrow()
    try:
        if path.stat().st_size == 0:
            raise fail("the table is empty (expected a header row naming the columns)")
        if suffix == ".csv" and arrow is None:
            return pd.read_csv(path, dtype={c: str for c in _STRINGS}, skipinitialspace=True)
        if suffix == ".csv":  # pyarrow's reader: about 2x faster than pandas' at 1,000,000 rows
            from pyarrow import csv

            options = csv.ConvertOptions(column_types={c: arrow.string() for c in _STRINGS},
                                         strings_can_be_null=True)
            return csv.read_csv(path, convert_options=options).to_pandas()
        if arrow is None:
            raise fail("reading Parquet needs pyarrow: pip install 'schedopt[tables]'")
        from pyarrow import parquet

        return parquet.read_table(path).to_pandas()
    except InstanceError:
        raise
    except OSError as e:
        raise fail(f"cannot read the table: {e.strerror or e}") from None
    except pd.errors.EmptyDataError:
        raise fail("the table is empty (expected a header row naming the columns)") from None
    except (ValueError, pd.errors.ParserError) as e:  # malformed CSV, not a Parquet file
        raise fail(f"not a readable {suffix[1:].upper()} table: {' '.join(str(e).split())}") \
            from None
    except Exception as e:  # pyarrow's own errors (ArrowInvalid, ...)
        raise fail(f"not a readable table: {' '.join(str(e).split())}") from None


def _pyarrow():
    """The pyarrow module, or None when it is not installed (CSV then goes through pandas'
    own parser; Parquet needs it)."""
    try:
        import pyarrow
    except ImportError:
        return None
    return pyarrow


class _Cells:
    """Problems with the cells of one table (file, `row N, column C`, message)."""

    def __init__(self, file: str):
        self.file, self.problems = file, []

    def add(self, rows: np.ndarray, column: str | None, message) -> None:
        """One problem per row in `rows` (0-based), message(row) -> text."""
        for row in np.flatnonzero(rows) if rows.dtype == bool else rows:
            where = f"row {row + 1}" + (f", column {column}" if column else "")
            self.problems.append(Problem(self.file, where, message(int(row))))

    def column(self, column: str, message: str) -> None:
        self.problems.append(Problem(self.file, f"column {column}", message))

    def check(self) -> None:
        if self.problems:
            raise InstanceError(self.problems)


def _cell(series: pd.Series, row: int) -> object:
    value = series.iloc[row]
    return value.item() if isinstance(value, np.generic) else value


def _strings(frame: pd.DataFrame, column: str, cells: _Cells, required: bool = False):
    """(M,) object array of str or None (empty cell); bad cells reported."""
    if column not in frame:
        return None
    series = frame[column]
    given = series.notna().to_numpy()
    values = series.to_numpy(dtype=object, copy=True)
    values[~given] = None
    bad = np.zeros(len(values), dtype=bool)
    if pd.api.types.infer_dtype(values, skipna=True) not in ("string", "empty"):
        text = np.fromiter((isinstance(v, str) for v in values[given]), dtype=bool,
                           count=int(given.sum()))
        bad[np.flatnonzero(given)[~text]] = True
    empty = values == ""
    expected = "a non-empty string" if column == "id" else "a string"
    cells.add(bad | (empty & (column == "id")), column,
              lambda r: f"expected {expected}, got {show(_cell(series, r))}")
    if required:
        cells.add(~given, column, lambda r: f"required key is missing (expected {expected})")
    return values


def _numbers(frame: pd.DataFrame, column: str, rule: dict, cells: _Cells,
             default: float = np.nan) -> np.ndarray:
    """(M,) float: the column's numbers (empty cell -> `default`), each checked against the
    schema's `rule` for that key; bad cells reported with the schema's words."""
    if column not in frame:
        return np.full(len(frame), default)
    series = frame[column]
    given = series.notna().to_numpy()
    if pd.api.types.is_bool_dtype(series):
        values, ok = np.zeros(len(series)), np.zeros(len(series), dtype=bool)
    else:
        values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        ok = keeps_rule(values, rule)
    cells.add(given & ~ok, column,
              lambda r: f"expected {describe(rule)}, got {show(_cell(series, r))}")
    return np.where(given, values, default)


def throughput_rows(frame: pd.DataFrame, file: str, types: tuple[str, ...]) -> dict:
    """performance.throughput from a table: job type -> {GPU type: steps/s}."""
    cells = _Cells(file)
    step = _resolve(schema()["$defs"]["steps"])
    for column in frame.columns:
        if column != "type" and column not in types:
            cells.column(column, f"unknown column {column!r}; expected 'type' or a GPU type of "
                                 f"cluster.gpu_types ({', '.join(types)})")
    for t in ("type", *types):
        if t not in frame:
            cells.column(t, f"missing; the table needs a column 'type' and one per GPU type "
                            f"({', '.join(types)})")
    cells.check()
    names = _strings(frame, "type", cells, required=True)
    rows = np.column_stack([_numbers(frame, t, step, cells) for t in types]) if len(frame) \
        else np.zeros((0, len(types)))
    seen: dict[str, int] = {}
    for r, name in enumerate(names):
        if name in seen:
            cells.add(np.array([r]), "type",
                      lambda _: f"duplicate type {name!r} (first used at row {seen[name] + 1})")
        elif name is not None:
            seen[name] = r
    cells.add(np.isnan(rows).any(axis=1), None,
              lambda r: f"type {names[r]!r} needs steps/s in every GPU type's column "
                        f"(0 = cannot run there)")
    cells.check()
    return {name: dict(zip(types, row)) for name, row in zip(names, rows.tolist())}


def job_table(frame: pd.DataFrame, file: str, cluster: dict, table_rows: dict) -> JobTable:
    """The jobs of a table as a `JobTable`, every cell checked (the same rules as a job in a
    document: schema bounds, unique ids, a complete row or a known type, progress within the
    total, a GPU type it can run on); InstanceError listing every bad cell."""
    types = tuple(cluster["gpu_types"])
    counts = np.array([cluster["gpu_types"][t]["count"] for t in types], dtype=float)
    cells = _Cells(file)
    for column in frame.columns:
        if column not in JOB_COLUMNS and column not in types:
            cells.column(column, f"unknown column {column!r}; expected a job key "
                                 f"({', '.join(JOB_COLUMNS)}) or a GPU type of "
                                 f"cluster.gpu_types ({', '.join(types)})")
    if "id" not in frame:
        cells.column("id", "required column is missing (expected a non-empty string per job)")
    cells.check()
    M = len(frame)
    ids = _strings(frame, "id", cells, required=True)
    job_type, user = _strings(frame, "type", cells), _strings(frame, "user", cells)
    numbers = {key: _numbers(frame, key, job_rule(key), cells, _DEFAULTS[key])
               for key in _NUMBERS}
    step = _resolve(schema()["$defs"]["steps"])
    own = np.column_stack([_numbers(frame, t, step, cells) for t in types]) if M \
        else np.zeros((0, len(types)))
    cells.check()
    id_list = ids.tolist()
    if len(set(id_list)) < M:
        duplicate = pd.Series(ids, dtype=object).duplicated().to_numpy()
        first = {}
        for r, name in enumerate(ids):
            first.setdefault(name, r)
        cells.add(duplicate, "id", lambda r: f"duplicate job id {ids[r]!r} (first used at row "
                                             f"{first[ids[r]] + 1})")
    missing = np.isnan(own)
    partial = missing.any(axis=1) & ~missing.all(axis=1)
    for k, t in enumerate(types):
        cells.add(partial & missing[:, k], t,
                  lambda r, t=t: f"missing; job {ids[r]!r} needs steps/s on every GPU type "
                                 f"(0 = cannot run on {t}), or none to use its type's row")
    throughput = own.copy()
    rows = np.flatnonzero(missing.all(axis=1))  # jobs that take their type's row
    if len(rows):
        kinds = pd.Series(job_type[rows] if job_type is not None else [None] * len(rows),
                          dtype=object)
        codes, names = pd.factorize(kinds)
        known = np.array([name in table_rows for name in names], dtype=bool)
        resolved = codes >= 0
        resolved[resolved] = known[codes[resolved]]
        cells.add(rows[codes < 0], None,
                  lambda r: f"job {ids[r]!r} has neither throughput columns nor a type")
        cells.add(rows[(codes >= 0) & ~resolved], "type",
                  lambda r: f"job {ids[r]!r} has no own throughput row and its type "
                            f"{job_type[r]!r} is not in performance.throughput")
        matrix = np.array([[table_rows[n][t] for t in types] if n in table_rows
                           else [np.nan] * len(types) for n in names]).reshape(-1, len(types))
        throughput[rows[resolved]] = matrix[codes[resolved]]
    total, done = numbers["total_steps"], numbers["steps_done"]
    cells.add(done > total, "steps_done",
              lambda r: f"expected at most total_steps ({show(float(total[r]))}), got "
                        f"{show(float(done[r]))}")
    scale = numbers["scale_factor"]
    cells.add(scale > counts.max(), "scale_factor",
              lambda r: f"scale_factor {int(scale[r])} is larger than any GPU type's count "
                        f"(max {int(counts.max())})")
    fits = scale[:, None] <= counts[None, :]
    nowhere = fits.any(axis=1) & ~((throughput != 0) & fits).any(axis=1) & ~np.isnan(
        throughput).any(axis=1)
    cells.add(nowhere, None, lambda r: f"job {ids[r]!r} can run nowhere: throughput is 0 on "
                                       f"every GPU type with >= {int(scale[r])} GPUs")
    cells.check()
    return JobTable(id_list, types, throughput, job_type=_or_none(job_type),
                    scale_factor=scale, weight=numbers["weight"],
                    arrival_time=numbers["arrival_time"], total_steps=total, steps_done=done,
                    deadline=numbers["deadline"], user=_or_none(user),
                    isolated_time=numbers["isolated_time"])


def _or_none(values) -> list | None:
    """The column as a list, or None when it is absent or every cell is empty."""
    if values is None:
        return None
    values = values.tolist()
    return None if values.count(None) == len(values) else values


def instance_with_tables(doc: dict, source: str, base: str | os.PathLike | None,
                         jobs: pd.DataFrame | None = None,
                         throughput: pd.DataFrame | None = None) -> Instance:
    """The Instance of a document that passed validation and names table files (read
    relative to `base`), or whose jobs / throughput matrix are given as DataFrames."""
    folder = Path(base) if base is not None else Path(".")
    perf = dict(doc.get("performance", {}))
    types = tuple(doc["cluster"]["gpu_types"])
    if throughput is not None or is_table(perf.get("throughput")):
        file = "<throughput frame>" if throughput is not None else \
            str(folder / perf["throughput"]["table"])
        frame = throughput if throughput is not None else read_table(file)
        perf["throughput"] = throughput_rows(frame, file, types)
    doc = {**doc, "performance": perf}
    if jobs is None and not is_table(doc.get("jobs")):  # a job list with a throughput table
        from schedopt.instance.load import parse_instance

        return parse_instance(doc, source)
    file = "<jobs frame>" if jobs is not None else str(folder / doc["jobs"]["table"])
    frame = jobs if jobs is not None else read_table(file)
    table = job_table(frame, file, doc["cluster"], perf.get("throughput", {}))
    unknown = sorted(set(perf.get("cpu_time", {})) - set(table.ids))
    if unknown:
        raise InstanceError([Problem(source, f"performance.cpu_time.{j}",
                                     f"unknown job id {j!r}; expected the id of a job in {file}")
                             for j in unknown])
    return build_instance(doc, source, jobs=table)
