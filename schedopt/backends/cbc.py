"""CBC through the binary that PuLP bundles.

The model goes over as MPS (negated when maximizing: CBC 2.10 ignores OBJSENSE; free rows left out:
CBC drops them). The answer comes back in two files: the text solution file, whose first line is the
status, and the binary ``-saveSolution`` file, which holds every number at full double precision
(the text file prints 8 significant digits). CBC prints its MILP lower bound only in its log, to 3
decimals; we round it outward so it stays a valid bound. MILP preprocessing is off (see `_command`).
"""

from __future__ import annotations

import dataclasses
import decimal
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from schedopt.backends.base import (LinearProgram, SolutionStatus, SolveOptions, SolveResult,
                                    Termination, read_status)
from schedopt.backends.mps import write_mps
from schedopt.core.capabilities import Capability
from schedopt.errors import SolveError

_T, _S = Termination, SolutionStatus
# First words of the status line -> (termination, solution when the line has one). "Optimal
# (within gap tolerance)" counts as optimal, like HiGHS; "Stopped on <limit> - objective value"
# has a solution, other "Stopped ..." lines (no integer solution yet) have none.
_STATUS_WORDS = {"Optimal": (_T.OPTIMAL, _S.OPTIMAL), "Infeasible": (_T.INFEASIBLE, _S.NONE),
                 "Integer infeasible": (_T.INFEASIBLE, _S.NONE),
                 "Unbounded": (_T.UNBOUNDED, _S.NONE),
                 "Stopped on time": (_T.TIME_LIMIT, _S.FEASIBLE),
                 "Stopped on iterations": (_T.ITERATION_LIMIT, _S.FEASIBLE),
                 "Stopped on nodes": (_T.ITERATION_LIMIT, _S.FEASIBLE),
                 "Stopped on solutions": (_T.ITERATION_LIMIT, _S.FEASIBLE),
                 "Stopped on ctrl-c": (_T.INTERRUPTED, _S.FEASIBLE),
                 "Stopped on difficulties": (_T.NUMERICAL, _S.FEASIBLE),
                 "Stopped": (_T.FEASIBLE, _S.FEASIBLE)}  # any other limit
_STOPPED_WITH_SOLUTION = re.compile(r"Stopped on [\w ]+ - objective value")
_LOWER_BOUND = re.compile(r"^Lower bound:\s+(\S+)", re.MULTILINE)
# Seconds CBC may run past its own time limit before we kill it.
_GRACE_SECONDS = 60.0


def cbc_path() -> str:
    """The CBC executable: the one PuLP ships, else ``cbc`` on PATH; SolveError if neither."""
    import pulp

    bundled = getattr(pulp.PULP_CBC_CMD, "pulp_cbc_path", None)
    if bundled and os.access(bundled, os.X_OK):
        return bundled
    found = shutil.which("cbc")
    if found is None:
        raise SolveError("no CBC binary found: PuLP ships none for this platform and `cbc` is not on "
                         "PATH; install one (e.g. apt-get install coinor-cbc) or use another solver")
    return found


def _status(status_line: str, timed: bool = False) -> tuple[Termination, SolutionStatus]:
    """(termination, solution) of CBC's status line. Clp says "Stopped on iterations" when its
    time runs out, and schedopt sets no limit but the time limit, so under one (`timed`) any
    iteration, node or solution limit is the time limit."""
    words = next((words for words in _STATUS_WORDS if status_line.startswith(words)), None)
    stopped = status_line.startswith("Stopped")
    has_solution = bool(_STOPPED_WITH_SOLUTION.match(status_line)) if stopped else True
    reason, solution = read_status(_STATUS_WORDS, words, has_solution)
    if timed and reason is Termination.ITERATION_LIMIT:
        reason = Termination.TIME_LIMIT
    return reason, solution


def _read_saved_solution(path: str, num_rows: int, num_cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Column values and row duals from a ``-saveSolution`` file: int32 rows, int32 columns, then
    float64 objective, row activities, row duals, column values, reduced costs."""
    raw = np.fromfile(path, dtype=np.uint8)
    shape = tuple(np.frombuffer(raw[:8].tobytes(), dtype=np.int32))
    if shape != (num_rows, num_cols):
        raise SolveError(f"cbc saved a solution of shape {shape}, expected {(num_rows, num_cols)}")
    values = np.frombuffer(raw[8:].tobytes(), dtype=np.float64)
    return values[1 + 2 * num_rows:1 + 2 * num_rows + num_cols], values[1 + num_rows:1 + 2 * num_rows]


def _lower_bound(log: str) -> float | None:
    """CBC's printed MILP lower bound minus half its last printed digit, or None if not printed."""
    match = _LOWER_BOUND.search(log)
    if match is None:
        return None
    printed = decimal.Decimal(match.group(1))
    return float(printed) - 0.5 * 10.0 ** printed.as_tuple().exponent


class CbcBackend:
    """CBC 2.10: LPs (with row duals) and MILPs (with CBC's lower bound when it prints one)."""

    name = "cbc"
    capabilities = Capability.LP | Capability.MILP | Capability.DUALS

    def _command(self, mps: str, status_file: str, saved: str, lp: LinearProgram,
                 options: SolveOptions) -> list[str]:
        """CBC's command line: read `mps`, solve, write the status file and the saved solution."""
        # CBC 2.10.3's MILP preprocessing (CglPreProcess) returned a wrong "Optimal" on ~0.3% of
        # small random MILPs in our tests, and none with it off; correctness first.
        args = [cbc_path(), mps, "-preprocess", "off", "-timeMode", "elapsed"]
        if options.time_limit is not None:
            args += ["-sec", repr(float(options.time_limit))]
        if options.mip_gap is not None:
            args += ["-ratioGap", repr(float(options.mip_gap))]
        if options.threads is not None:
            args += ["-threads", str(int(options.threads))]
        return args + ["-solve" if lp.is_mip else "-initialSolve",
                       "-solution", status_file, "-saveSolution", saved]

    def _run(self, sent: LinearProgram, options: SolveOptions):
        """Run CBC on the minimization `sent`: (status line, x, row duals, log, seconds)."""
        timeout = None if options.time_limit is None else options.time_limit + _GRACE_SECONDS
        with tempfile.TemporaryDirectory(prefix="schedopt-cbc-") as tmp:
            mps, status_file, saved = (os.path.join(tmp, f) for f in ("model.mps", "status", "x.bin"))
            write_mps(sent, mps)
            start = time.perf_counter()
            try:
                run = subprocess.run(self._command(mps, status_file, saved, sent, options),
                                     capture_output=True, text=True, timeout=timeout, check=False)
            except subprocess.TimeoutExpired as exc:
                raise SolveError(f"cbc ran {timeout:.0f} s, far past its time limit; killed it") from exc
            seconds = time.perf_counter() - start
            if options.verbose:
                sys.stdout.write(run.stdout)
            if not os.path.exists(status_file):
                tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-5:])
                raise SolveError(f"cbc wrote no solution (exit code {run.returncode}):\n{tail}")
            with open(status_file, encoding="ascii") as f:
                status_line = f.readline().strip()
            x = duals = None
            if _status(status_line)[1] is not SolutionStatus.NONE:
                x, duals = _read_saved_solution(saved, sent.num_rows, sent.num_cols)
        return status_line, x, duals, run.stdout, seconds

    def solve(self, lp: LinearProgram, options: SolveOptions) -> SolveResult:
        sign = -1.0 if lp.maximize else 1.0
        kept = np.flatnonzero(np.isfinite(lp.row_lower) | np.isfinite(lp.row_upper))
        sent = dataclasses.replace(lp, c=sign * np.asarray(lp.c, dtype=np.float64), maximize=False,
                                   objective_offset=sign * lp.objective_offset, A=lp.A.tocsr()[kept],
                                   row_lower=lp.row_lower[kept], row_upper=lp.row_upper[kept],
                                   row_names=None)
        status_line, x, sent_duals, log, seconds = self._run(sent, options)
        reason, found = _status(status_line, timed=options.time_limit is not None)
        result = SolveResult(reason=reason, solution=found, solve_seconds=seconds,
                             backend=self.name, detail=status_line)
        if found is SolutionStatus.NONE:
            return result
        result.x = x.copy()
        result.objective = float(np.dot(lp.c, x) + lp.objective_offset)
        if lp.is_mip:
            lower = _lower_bound(log)  # of the minimization we sent
            if lower is not None:
                result.bound = sign * min(lower, sign * result.objective)
            elif found is SolutionStatus.OPTIMAL:
                result.bound = result.objective
        elif found is SolutionStatus.OPTIMAL:
            result.bound = result.objective
            result.row_duals = np.zeros(lp.num_rows)
            result.row_duals[kept] = sign * sent_duals
        return result
