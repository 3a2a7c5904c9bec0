"""`schedopt solve` imports scipy.sparse without numpy.f2py, and leaves numpy.f2py importable."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
from schedopt.cli.startup import import_scipy_sparse

import_scipy_sparse()
assert "scipy.sparse" in sys.modules
assert "numpy.f2py" not in sys.modules, "f2py was imported"
import numpy
assert "f2py" not in vars(numpy), "the placeholder was left on numpy"
import scipy.sparse as sp
assert (sp.csr_matrix(numpy.eye(3)) @ numpy.ones(3)).tolist() == [1.0, 1.0, 1.0]
import numpy.f2py
assert numpy.f2py is sys.modules["numpy.f2py"] and callable(numpy.f2py.run_main)
"""


def test_scipy_sparse_without_f2py_and_f2py_still_importable():
    # A fresh interpreter: this one has imported scipy.sparse (and maybe f2py) already.
    run = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_solve_command_does_not_import_f2py():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    tiny = root / "instances" / "tiny.json"
    code = ("import sys\nsys.argv = ['schedopt', 'solve', sys.argv[1], '--json']\n"
            "from schedopt.cli.entry import run\n"
            "try:\n    run()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "assert 'numpy.f2py' not in sys.modules and 'yaml' not in sys.modules\n")
    run = subprocess.run([sys.executable, "-c", code, str(tiny)], capture_output=True, text=True,
                         cwd=root)
    assert run.returncode == 0, run.stderr
    assert '"status":"optimal"' in run.stdout
