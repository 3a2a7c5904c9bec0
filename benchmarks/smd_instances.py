"""The parameter-server instance instances/smd-small.json, and its numbers under every policy.

    python benchmarks/smd_instances.py                                  # policy table
    python benchmarks/smd_instances.py --write instances/smd-small.json  # regenerate the file

The instance is `schedopt.traces.parameter_server.parameter_server_document(8, 4, seed=6)`:
8 jobs (five model templates) on 4 machines, drawn with numpy default_rng(6) by the rules in
that module's docstring (machines of 8/4/2 GPUs with CPUs, memory and NIC bandwidth; workers of
1 GPU, PSs of none; at most 8 workers and 4 PSs per job). Floats are rounded to 6 significant
digits, so the file is the same byte for byte on every run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from schedopt.api import solve
from schedopt.instance import parse_instance
from schedopt.traces.parameter_server import parameter_server_document

ROOT = Path(__file__).resolve().parents[1]
INSTANCE = ROOT / "instances" / "smd-small.json"
SEED, JOBS, MACHINES = 6, 8, 4
POLICIES = ("smd", "smd_exact", "smd_greedy", "smd_equal_split")


def smd_small_document() -> dict:
    doc = parameter_server_document(JOBS, MACHINES, seed=SEED)
    doc["name"] = f"smd-small: {JOBS} parameter-server jobs on {MACHINES} machines (synthetic, seed {SEED})"
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, default=None, help="write the instance here")
    args = parser.parse_args()
    doc = smd_small_document()
    if args.write is not None:
        args.write.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.write}")
        return
    instance = parse_instance(doc, str(INSTANCE))
    print("| policy | status | sum of completion times (s) | seconds | workers | PSs |")
    print("|---|---|---:|---:|---:|---:|")
    for policy in POLICIES:
        result = solve(instance, policy)
        d = result.details
        print(f"| {policy} | {result.status.value} | {result.objective:,.1f} | "
              f"{result.solve_seconds:.3f} | {sum(d['workers'].values())} | {sum(d['ps'].values())} |")


if __name__ == "__main__":
    main()
