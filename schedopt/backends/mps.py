"""Write a `LinearProgram` as free-format MPS, vectorized (no Python loop over rows or columns).

Columns are named ``x0 .. x{n-1}``, rows ``r0 .. r{m-1}`` and the objective row ``obj``, so a
solver's solution file maps back to indices. Conventions a reader must share with us:

- the objective offset is the objective row's RHS with the opposite sign (objective = c x - RHS);
- a two-sided row is a ``G`` row (RHS = lower bound) with RANGES = upper - lower;
- a row with no finite bound is an extra ``N`` (free) row; some readers drop those;
- integer columns sit between ``'MARKER' 'INTORG'`` / ``'INTEND'`` lines and always get explicit
  bounds (``PL`` for an infinite upper bound), because some readers make unbounded integers binary;
- the NAME card ends in ``FREE``: without it CBC guesses the format and may parse lines as fixed;
- a maximization gets an ``OBJSENSE MAX`` section. HiGHS, Gurobi, CPLEX and SCIP honour it; CBC 2.10
  ignores it and minimizes, so the CBC backend writes the negated (minimization) model instead.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from schedopt.backends.base import LinearProgram
from schedopt.files import write_atomically

_INTORG = "    MARKER 'MARKER' 'INTORG'\n"
_INTEND = "    MARKER 'MARKER' 'INTEND'\n"


def _names(prefix: str, count: int) -> np.ndarray:
    return np.char.add(prefix, np.arange(count).astype(str))


def _num(values: np.ndarray) -> np.ndarray:
    """Shortest round-trip decimal text of float64 values (each distinct value formatted once)."""
    distinct, index = np.unique(np.asarray(values, dtype=np.float64), return_inverse=True)
    return distinct.astype(str)[index]


def _join(*fields) -> np.ndarray:
    """One indented line per element of the equal-length string arrays (or scalars) `fields`."""
    joined = functools.reduce(lambda a, b: np.char.add(np.char.add(a, " "), b), fields)
    return np.char.add(np.char.add("    ", joined), "\n")


def _text(lines: np.ndarray) -> str:
    return "".join(lines.tolist())


def _rows_section(lp: LinearProgram, row_names: np.ndarray) -> tuple[str, str, str]:
    """ROWS, RHS and RANGES sections (without the objective's RHS entry)."""
    lower, upper = lp.row_lower, lp.row_upper
    has_lower, has_upper = np.isfinite(lower), np.isfinite(upper)
    equal = has_lower & (lower == upper)
    kind = np.where(equal, "E", np.where(has_lower, "G", np.where(has_upper, "L", "N")))
    rhs = np.where(has_lower, lower, np.where(has_upper, upper, 0.0))
    with_rhs = (kind != "N") & (rhs != 0)
    ranged = has_lower & has_upper & ~equal
    return ("    N obj\n" + _text(_join(kind, row_names)),
            _text(_join("RHS", row_names[with_rhs], _num(rhs[with_rhs]))),
            _text(_join("RNG", row_names[ranged], _num(upper[ranged] - lower[ranged]))))


def _columns_section(lp: LinearProgram, col_names: np.ndarray, row_names: np.ndarray) -> str:
    """COLUMNS: objective then matrix entries per column, integer runs wrapped in MARKER lines."""
    A = lp.A.tocsc(copy=True)
    A.sum_duplicates()
    per_column = np.diff(A.indptr)
    c = np.asarray(lp.c, dtype=np.float64)
    # Every column needs one entry to exist in the file: an explicit 0 objective if it has none.
    obj_cols = np.flatnonzero((c != 0) | (per_column == 0))
    cols = np.concatenate([obj_cols, np.repeat(np.arange(lp.num_cols), per_column)])
    rows = np.concatenate([np.full(obj_cols.size, "obj"), row_names[A.indices]])
    values = np.concatenate([c[obj_cols], A.data])
    order = np.argsort(cols, kind="stable")
    cols, rows, values = cols[order], rows[order], values[order]
    lines = _join(col_names[cols], rows, _num(values))
    if lp.is_mip:
        integer = np.asarray(lp.integer, dtype=bool)
        run_starts = integer & ~np.concatenate([[False], integer[:-1]])
        run_ends = integer & ~np.concatenate([integer[1:], [False]])
        new_column = np.concatenate([[True], cols[1:] != cols[:-1]])
        opens = new_column & run_starts[cols]
        closes = np.concatenate([new_column[1:], [True]]) & run_ends[cols]
        lines = np.char.add(np.char.add(np.where(opens, _INTORG, ""), lines),
                            np.where(closes, _INTEND, ""))
    return _text(lines)


def _bounds_section(lp: LinearProgram, col_names: np.ndarray) -> str:
    lower = np.asarray(lp.col_lower, dtype=np.float64)
    upper = np.asarray(lp.col_upper, dtype=np.float64)
    integer = np.zeros(lp.num_cols, dtype=bool) if lp.integer is None else np.asarray(lp.integer, bool)
    has_lower, has_upper = np.isfinite(lower), np.isfinite(upper)
    fixed = has_lower & (lower == upper)
    free = ~has_lower & ~has_upper
    minus_inf = ~has_lower & has_upper
    lo = has_lower & ~fixed & ((lower != 0) | integer)
    up = has_upper & ~fixed
    plus_inf = has_lower & ~has_upper & integer
    # Order matters to some readers: MI and LO before UP, so a negative UP never resets LO.
    return "".join(_text(_join(kind, col_names[mask], *values)) for kind, mask, values in (
        ("FX BND", fixed, [_num(lower[fixed])]), ("FR BND", free, []), ("MI BND", minus_inf, []),
        ("LO BND", lo, [_num(lower[lo])]), ("UP BND", up, [_num(upper[up])]), ("PL BND", plus_inf, [])))


def write_mps(lp: LinearProgram, path: str | os.PathLike) -> None:
    """Write `lp` to `path` as free-format MPS (see the module docstring for the conventions)."""
    col_names, row_names = _names("x", lp.num_cols), _names("r", lp.num_rows)
    rows, rhs, ranges = _rows_section(lp, row_names)
    if lp.objective_offset:
        rhs = f"    RHS obj {-float(lp.objective_offset)!r}\n" + rhs
    parts = ["NAME schedopt FREE\n",  # "FREE" makes CBC's reader take free format for sure
             "OBJSENSE\n    MAX\n" if lp.maximize else "",
             "ROWS\n", rows,
             "COLUMNS\n", _columns_section(lp, col_names, row_names),
             "RHS\n", rhs,
             "RANGES\n" if ranges else "", ranges,
             "BOUNDS\n", _bounds_section(lp, col_names),
             "ENDATA\n"]
    write_atomically(path, "".join(parts).encode("ascii"), what="MPS file")
