"""smd's answer for a fixed seed does not depend on how fast the machine runs it: every CP-SAT
call it makes is limited by CP-SAT's deterministic time, never by wall-clock time. A child
process runs smd and announces each CP-SAT call; the test stops the child (SIGSTOP) inside
every one of them for longer than any wall-clock limit smd ever used (1 s per neighbourhood
step, 0.25 s for the placement of the bound's choice). Its answer must be the unpaused one,
bit for bit."""

from __future__ import annotations

import dataclasses
import itertools
import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.sparse as sp

from schedopt.backends import LinearProgram, SolveOptions
from schedopt.backends.ortools import MathOptBackend
from schedopt.backends.session import Solver
from schedopt.errors import SolveError
from schedopt.policies.smd import cpsat
from schedopt.policies.smd import algorithm
from schedopt.policies.smd.algorithm import smd
from schedopt.policies.smd.model import SmdProblem
from schedopt.traces.parameter_server import parameter_server_instance

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP (POSIX)")

# 24 jobs on 8 NIC-bound machines: first fit cannot place the bound's configuration choice;
# with the tabu search that places it by default switched off, CP-SAT places it (0.3-0.4 CPU
# s), then neighbourhood steps (CP-SAT, 20-60 ms each)
CASE = (24, 8, 1, "nic")
OPTIONS = dict(seed=5, search_steps=5, lns_steps=6, place_limit=0.15)
CHILD = f"""
import json, sys
from schedopt.backends.ortools import MathOptBackend
from schedopt.backends.session import Solver
from schedopt.policies.smd.algorithm import smd
from schedopt.policies.smd.model import SmdProblem
from schedopt.traces.parameter_server import parameter_server_instance
solve = MathOptBackend.solve
def announced(self, *args, **kwargs):
    print("solve", flush=True)
    return solve(self, *args, **kwargs)
MathOptBackend.solve = announced
import schedopt.policies.smd.algorithm
schedopt.policies.smd.algorithm.tabu_placement = lambda *args, **kwargs: None
problem = SmdProblem.from_instance(parameter_server_instance({CASE[0]}, {CASE[1]}, seed={CASE[2]},
                                                             regime={CASE[3]!r}))
result = smd(problem, **{OPTIONS!r})
print(json.dumps({{"workers": result.placement.workers.tolist(), "ps": result.placement.ps.tolist(),
                  "objective": result.objective}}), flush=True)
"""
LAG, PAUSE = 0.005, 1.5  # seconds from a call's announcement to the pause, seconds paused


def _paused_run() -> tuple[dict, int]:
    """(smd's answer in the child, how many CP-SAT calls were paused)."""
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    answer, paused = None, 0
    try:
        for line in child.stdout:
            if line.strip() == "solve":
                time.sleep(LAG)
                child.send_signal(signal.SIGSTOP)
                time.sleep(PAUSE)
                child.send_signal(signal.SIGCONT)
                paused += 1
            else:
                answer = json.loads(line)
        child.wait(timeout=600)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0
    return answer, paused


def test_smd_gives_the_same_answer_when_each_cp_sat_call_is_paused(monkeypatch):
    problem = SmdProblem.from_instance(parameter_server_instance(CASE[0], CASE[1], seed=CASE[2],
                                                                 regime=CASE[3]))
    calls, solve = [], MathOptBackend.solve

    def counted(self, *args, **kwargs):
        calls.append(self.solver)
        return solve(self, *args, **kwargs)

    monkeypatch.setattr(MathOptBackend, "solve", counted)
    monkeypatch.setattr(algorithm, "tabu_placement", lambda *args, **kwargs: None)
    alone = smd(problem, **OPTIONS)
    monkeypatch.undo()
    # the placement of the bound's choice and every neighbourhood step
    assert calls == ["cpsat"] * (1 + OPTIONS["lns_steps"])
    answer, paused = _paused_run()
    assert paused == len(calls)
    np.testing.assert_array_equal(answer["workers"], alone.placement.workers)
    np.testing.assert_array_equal(answer["ps"], alone.placement.ps)
    assert answer["objective"] == alone.objective


def test_cp_sat_with_a_deterministic_limit_reaches_the_brute_force_optimum():
    # max 3a + 2b + 4c over a + b + c <= 2 and a + c <= 1, binary a, b, c
    c = np.array([-3.0, -2.0, -4.0])
    A = sp.csr_matrix(np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]]))
    lp = LinearProgram(c=c, A=A, row_lower=np.full(2, -np.inf), row_upper=np.array([2.0, 1.0]),
                       col_lower=np.zeros(3), col_upper=np.ones(3), integer=np.ones(3, dtype=bool))
    best = min(c @ v for v in itertools.product((0, 1), repeat=3)
               if (A @ np.array(v) <= lp.row_upper).all())
    result = cpsat.solve(lp, 1.0)
    assert result.status.value == "optimal" and result.objective == pytest.approx(best)
    with pytest.raises(SolveError, match="deterministic_time is a CP-SAT limit"):
        Solver("glop", SolveOptions(deterministic_time=1.0)).solve(
            dataclasses.replace(lp, integer=None))
