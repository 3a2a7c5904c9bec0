"""`schedopt solve FILE --json --output R` imports what its policy and backend need, and no
more: not pandas, not the detailed checker (jsonschema), not the other commands nor the
other policy families, whether the jobs are a JSON list or a Parquet table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "instances" / "tiny.json"
NEVER = ("pandas", "jsonschema", "schedopt.simulation", "schedopt.cli.simulate",
         "schedopt.cli.compare", "schedopt.policies.partitioned", "matplotlib")


def _loaded_by(*argv: str) -> tuple[int, set[str]]:
    """(exit code, modules loaded) of `schedopt ARGV...` in a fresh interpreter."""
    probe = ("import sys\nfrom schedopt.cli.entry import run\nfrom schedopt.cli import interrupts\n"
             "interrupts.end_process = lambda code: None\n"  # the probe reads sys.modules after

             f"sys.argv = ['schedopt', *{list(argv)!r}]\ncode = 0\n"
             "try:\n    run()\nexcept SystemExit as e:\n    code = e.code or 0\n"
             "sys.stderr.write('\\n' + repr((code, sorted(sys.modules))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    code, modules = eval(done.stderr.strip().splitlines()[-1])  # our own repr
    return code, set(modules)


def _families(modules: set[str]) -> set[str]:
    return {m for m in modules if m.endswith(("builtin", "builtin_events"))}


def test_solve_json_output_imports_only_its_policy_family(tmp_path):
    out = tmp_path / "r.json"
    code, modules = _loaded_by("solve", str(TINY), "--json", "--output", str(out))
    assert code == 0 and json.loads(out.read_bytes())["status"] == "optimal"
    assert not {m for m in modules if m.split(".")[0] in NEVER or m in NEVER}, \
        sorted(m for m in modules if m.startswith(NEVER))
    assert _families(modules) == {"schedopt.policies.gavel.builtin"}


def test_solve_with_a_baseline_imports_no_gavel_family(tmp_path):
    code, modules = _loaded_by("solve", str(TINY), "-p", "isolated", "--json")
    assert code == 0
    assert _families(modules) == {"schedopt.policies.baselines.builtin"}
    assert "pandas" not in modules and "jsonschema" not in modules


def test_solve_of_a_parquet_table_imports_no_pandas(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    M = 30
    rng = np.random.default_rng(1)
    pd.DataFrame({"id": [f"j{m}" for m in range(M)], "v100": rng.random(M) + 0.1,
                  "k80": rng.random(M), "total_steps": rng.random(M) * 1e4}
                 ).to_parquet(tmp_path / "jobs.parquet", index=False)
    path = tmp_path / "instance.json"
    path.write_text(json.dumps({"format": "schedopt-instance/1",
                                "cluster": {"gpu_types": {"v100": {"count": 2},
                                                          "k80": {"count": 3}}},
                                "jobs": {"table": "jobs.parquet"}}))
    out = tmp_path / "r.json"
    code, modules = _loaded_by("solve", str(path), "--json", "--output", str(out))
    assert code == 0 and len(json.loads(out.read_bytes())["allocation"]) == M
    assert "pandas" not in modules and "jsonschema" not in modules


def test_a_malformed_file_still_gets_the_detailed_checker():
    bad = sorted((ROOT / "tests" / "malformed").glob("*.json"))[0]
    code, modules = _loaded_by("solve", str(bad))
    assert code == 2 and "jsonschema" in modules
