"""scipy.sparse is imported where it is first needed, without numpy.f2py, numpy.testing,
numpy.ma or numpy.polynomial, which stay importable (also through scipy's copy of numpy's
namespace); `schedopt solve` with max-min fairness imports no scipy at all; the console
script ends without tearing down its modules, after the atexit handlers ran and
the output was flushed."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
from schedopt.core.sparse_import import scipy_sparse

assert scipy_sparse() is sys.modules["scipy.sparse"]
for name in ("f2py", "testing", "ma", "polynomial"):
    assert "numpy." + name not in sys.modules, name + " was imported"
import numpy
for name in ("f2py", "testing", "ma", "polynomial", "ctypeslib", "char", "rec"):
    assert name not in vars(numpy) or vars(numpy)[name] is sys.modules["numpy." + name], name
import scipy.sparse as sp
assert (sp.csr_matrix(numpy.eye(3)) @ numpy.ones(3)).tolist() == [1.0, 1.0, 1.0]
# scipy's copy of numpy's namespace reads the real modules once they are used
from scipy._lib.array_api_compat import numpy as xp
assert xp.ma.masked_array is sys.modules["numpy.ma"].masked_array
assert numpy.ma is sys.modules["numpy.ma"] and numpy.ma.masked_array([1, 2]).sum() == 3
assert xp.polynomial.Polynomial([1, 2])(3) == 7
import numpy.f2py
assert numpy.f2py is sys.modules["numpy.f2py"] and callable(numpy.f2py.run_main)
import numpy.testing
numpy.testing.assert_array_equal(numpy.ones(2), [1, 1])
assert xp.testing.assert_array_equal is numpy.testing.assert_array_equal
"""


def test_scipy_sparse_without_unused_numpy_modules_which_stay_importable():
    # A fresh interpreter: this one has imported scipy.sparse (and maybe f2py) already.
    run = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


SOLVE_AND_CHECK_MODULES = """
import sys
sys.argv = ["schedopt", "solve", *sys.argv[1:], "--json"]
from schedopt.cli.entry import run
from schedopt.cli import interrupts
interrupts.end_process = lambda code: None  # so that the checks below run
try:
    run()
except SystemExit as e:
    assert not e.code, e.code
print("imported:", " ".join(m for m in sys.modules
                            if m.split(".")[0] in ("scipy", "yaml") or m.startswith("numpy.")))
"""


def _solve_imports(*arguments: str) -> tuple[str, set[str]]:
    """(stdout, modules of scipy, yaml and numpy's submodules imported) of `schedopt solve
    ARGUMENTS --json` in a fresh interpreter."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "-c", SOLVE_AND_CHECK_MODULES, *arguments],
                         capture_output=True, text=True, cwd=root)
    assert run.returncode == 0, run.stderr
    document, _, imported = run.stdout.rpartition("imported:")
    return document, set(imported.split())


def test_max_min_solve_imports_neither_scipy_nor_numpys_unused_modules():
    document, imported = _solve_imports("instances/tiny.json")
    assert '"status":"optimal"' in document
    assert not {m for m in imported if m.split(".")[0] in ("scipy", "yaml")}, imported
    assert not imported & {"numpy.f2py", "numpy.testing", "numpy.ma"}, imported


def test_a_policy_that_needs_scipy_sparse_imports_it_without_f2py():
    document, imported = _solve_imports("instances/tiny.json", "--policy", "max_total_throughput")
    assert '"status":"optimal"' in document
    assert "scipy.sparse" in imported
    assert not imported & {"numpy.f2py", "numpy.testing"}, imported


POLICY_WITH_ATEXIT = """
import atexit
from pathlib import Path
from schedopt.core.registry import resolve

atexit.register(lambda: Path("atexit-ran").write_text("yes"))
POLICY = resolve("max_min_fairness")[0]
"""


def test_console_script_runs_atexit_handlers_and_flushes_before_it_ends(tmp_path):
    import json
    import os
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    (tmp_path / "policy_with_atexit.py").write_text(POLICY_WITH_ATEXIT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(tmp_path)])}
    run = subprocess.run([sys.executable, "-m", "schedopt.cli", "solve",
                          str(root / "instances" / "tiny.json"), "--json",
                          "--policy", "policy_with_atexit:POLICY"],
                         capture_output=True, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["status"] == "optimal"  # the whole document, flushed
    assert (tmp_path / "atexit-ran").read_text() == "yes"
    missing = subprocess.run([sys.executable, "-m", "schedopt.cli", "solve",
                              str(tmp_path / "missing.json")], capture_output=True, text=True,
                             cwd=tmp_path, env=env)
    assert missing.returncode == 2 and missing.stderr.strip().count("\n") == 0, missing.stderr



KEPT = """
import sys
import numpy as np
from schedopt.cli.startup import keep_freed_memory

def resident():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096

if sys.argv[1] == "keep":
    keep_freed_memory()
array = np.ones(1 << 24)  # 128 MiB, faulted in
before = resident()
del array
print(before - resident())
"""


def test_freed_memory_stays_with_the_process():
    import platform

    import pytest

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's mallopt only")
    released = {how: int(subprocess.run([sys.executable, "-c", KEPT, how], capture_output=True,
                                         text=True, check=True).stdout)
                for how in ("keep", "default")}
    assert released["default"] > 100 << 20  # handed back to the kernel at once
    assert released["keep"] < 8 << 20, released  # kept for the next array
