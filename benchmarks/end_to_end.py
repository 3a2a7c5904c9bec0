"""`schedopt solve FILE --json --output R` end to end, side by side with the in-process solve.

    python benchmarks/end_to_end.py [--jobs 100000 1000000] [--repeats 2] [--formats json parquet]
        [--before PATH] [--breakdown]

For each size, draws a contended instance (`exact_at_scale.contended`: random rows on 3 GPU
types, 3/8 of a GPU per job, seed 0), writes it to a temporary folder (a JSON file; with
`parquet`, the same jobs as a Parquet table named by a small JSON file), then measures, best of
REPEATS (wall seconds, and CPU seconds, which move less on a shared machine):
- in process: `schedopt.solve` on the same problem built from arrays (the modules already
  imported: the solve alone), alternating with the end-to-end runs, in this process, which has
  solved the problem once before (warm: the target's reference);
- first solve: the same, but the first solve of a fresh process (modules imported and the
  problem built beforehand, untimed), which pays what a solve does once per process (highspy's
  first run, memory first touched), as the command does;
- end to end: the command in a fresh process, from its start until it has exited with the
  result document written (interpreter start, imports, loading, solving, writing), stdout
  thrown away; and the process's peak resident memory (GNU time);
- with --before PATH (a folder holding another tree's `schedopt` package, e.g. an exported
  older commit): the same command run on that tree, alternating with this one run by run;
- with --breakdown: in a fresh process per file, the time of each step (imports of the CLI
  and the policy, load_instance, solve, Result.to_json, write_atomically).
The command is the `schedopt` console script installed next to this interpreter (what `pip
install` writes; a version manager's shim in front of it, e.g. pyenv's, would add its own start
of ~0.1 s), and the package's modules are compiled to bytecode once beforehand, as an installed
package's are: the child processes keep bytecode in a temporary folder (PYTHONPYCACHEPREFIX)
even where PYTHONDONTWRITEBYTECODE is set, and one untimed run per file comes first.
Nothing is kept: the instances are generated at run time and deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from exact_at_scale import contended  # noqa: E402

import schedopt  # noqa: E402

TYPES = ("v100", "p100", "k80")


def write_json(problem, path: Path) -> None:
    """The problem as a schedopt-instance/1 JSON file (every job with its own row)."""
    jobs = [{"id": f"j{m}", "scale_factor": int(s), "throughput": dict(zip(TYPES, row)),
             "total_steps": float(r), "arrival_time": float(3600.0 - a)}
            for m, (row, s, r, a) in enumerate(zip(problem.throughput.tolist(),
                                                   problem.scale_factor, problem.remaining_steps,
                                                   problem.time_since_arrival))]
    path.write_bytes(orjson.dumps({"format": "schedopt-instance/1", "cluster": cluster(problem),
                                   "jobs": jobs}))


def cluster(problem) -> dict:
    return {"gpu_types": {t: {"count": int(c)} for t, c in zip(TYPES, problem.capacity)}}


def write_parquet(problem, path: Path) -> None:
    """The same jobs as a Parquet table (one column per field, one per GPU type), named by a
    small JSON instance file at `path`."""
    import pandas as pd

    M = problem.num_jobs
    frame = pd.DataFrame({"id": [f"j{m}" for m in range(M)],
                          "scale_factor": problem.scale_factor.astype(np.int64),
                          **{t: problem.throughput[:, k] for k, t in enumerate(TYPES)},
                          "total_steps": problem.remaining_steps,
                          "arrival_time": 3600.0 - problem.time_since_arrival})
    frame.to_parquet(path.with_suffix(".parquet"), index=False)
    path.write_bytes(orjson.dumps({"format": "schedopt-instance/1", "cluster": cluster(problem),
                                   "jobs": {"table": path.with_suffix(".parquet").name}}))


# A fresh process that times each step of the command (run with --steps FILE OUTPUT).
STEPS = """
import sys, time
clock = lambda: (time.perf_counter(), time.process_time())
start = clock()
from schedopt.cli import main
from schedopt.cli.startup import keep_freed_memory
from schedopt.core.registry import resolve
from schedopt.instance import load_instance
from schedopt.api import solve
from schedopt.files import write_atomically
from pathlib import Path
keep_freed_memory()  # as the command does
policy, _ = resolve("max_min_fairness")
steps, last = {"imports": None}, start
def step(name, work):
    global last
    now = clock(); steps[name] = None
    out = work()
    end = clock(); steps[name] = (end[0] - now[0], end[1] - now[1])
    return out
steps["imports"] = (clock()[0] - start[0], clock()[1] - start[1])
instance = step("load", lambda: load_instance(sys.argv[1]))
result = step("solve", lambda: solve(instance, policy))
document = step("to_json", lambda: [*result.json_parts(), b"\\n"])
step("write", lambda: write_atomically(Path(sys.argv[2]), document, inputs=[sys.argv[1]]))
print(repr(steps))
"""


# A fresh process that times its first solve of the problem built from arrays (run with JOBS).
FIRST_SOLVE = """
import sys, time
sys.path.insert(0, sys.argv[2])
import schedopt
from exact_at_scale import contended
problem = contended(int(sys.argv[1]))
start, cpu = time.perf_counter(), time.process_time()
schedopt.solve(problem)
print(repr((time.perf_counter() - start, time.process_time() - cpu)))
"""


def first_solve(jobs: int) -> tuple[float, float]:
    """(wall s, CPU s) of the first solve of the problem in a fresh process."""
    child = subprocess.run([sys.executable, "-c", FIRST_SOLVE, str(jobs),
                            str(Path(__file__).resolve().parent)],
                           capture_output=True, text=True, check=True, env=child_environment())
    return eval(child.stdout.strip().splitlines()[-1])  # our own repr


def child_environment(tree: str | None = None) -> dict:
    """The environment of the measured processes: bytecode kept (in a temporary folder), and
    PYTHONPATH set to `tree` when given."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "schedopt-end-to-end-pycache")
    if tree:
        env["PYTHONPATH"] = tree
    return env


def console_script() -> list[str]:
    """The `schedopt` console script of this interpreter (else the same entry point run by it)."""
    script = Path(sys.executable).parent / "schedopt"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from schedopt.cli.entry import run; run()"]


def end_to_end(path: Path, output: Path, tree: str | None = None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak MB) of one `schedopt solve` in a fresh process, on
    this tree or on the `schedopt` package under `tree`."""
    command = [*console_script(), "solve", str(path), "--json", "--output", str(output)]
    env = child_environment(tree)
    # GNU time reports the command's own peak and CPU; a child's rusage would count the pages
    # it shared with this (large) process between fork and exec.
    stats = output.with_suffix(".rss")
    timer = ["/usr/bin/time", "-f", "%M %U %S", "-o", str(stats)] \
        if Path("/usr/bin/time").exists() else []
    start = time.perf_counter()
    child = subprocess.run([*timer, *command], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, env=env, cwd=tempfile.gettempdir())
    seconds = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {child.stderr.decode()}")
    if not timer:
        return seconds, float("nan"), float("nan")
    peak, user, system = map(float, stats.read_text().split()[-3:])
    return seconds, user + system, peak / 1024


def breakdown(path: Path, output: Path) -> dict:
    """{step: (wall s, CPU s)} of the command's steps, in a fresh process."""
    child = subprocess.run([sys.executable, "-c", STEPS, str(path), str(output)],
                           capture_output=True, text=True, check=True, env=child_environment())
    return eval(child.stdout.strip().splitlines()[-1])  # our own repr


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--formats", nargs="+", default=["json"], choices=["json", "parquet"])
    parser.add_argument("--before", default=None,
                        help="a folder holding another tree's schedopt package, run alongside")
    parser.add_argument("--breakdown", action="store_true")
    args = parser.parse_args()
    started = os.getloadavg()[0]
    rows, steps = [], []
    with tempfile.TemporaryDirectory() as folder:
        for jobs in args.jobs:
            problem = contended(jobs)
            result = schedopt.solve(problem)
            for kind in args.formats:
                path = Path(folder) / f"instance-{jobs}-{kind}.json"
                (write_json if kind == "json" else write_parquet)(problem, path)
                output = Path(folder) / "result.json"
                trees = [None] + ([args.before] if args.before else [])
                runs = {tree: [] for tree in trees}
                inside = []
                for tree in trees:  # untimed: compiles the package's bytecode where needed
                    end_to_end(path, output, tree)
                first = []
                for _ in range(args.repeats):
                    # In process and end to end alternate, so that both see the same load.
                    start, cpu = time.perf_counter(), time.process_time()
                    schedopt.solve(problem)
                    inside.append((time.perf_counter() - start, time.process_time() - cpu))
                    first.append(first_solve(jobs))
                    for tree in trees:
                        runs[tree].append(end_to_end(path, output, tree))
                        written = orjson.loads(output.read_bytes())
                        assert abs(written["objective"] - result.objective) <= \
                            1e-9 * abs(result.objective)
                if args.breakdown:
                    steps.append((jobs, kind, breakdown(path, output)))
                size = sum(p.stat().st_size for p in Path(folder).glob(f"instance-{jobs}-{kind}*"))
                rows.append((jobs, kind, size / 1e6, inside, first, runs))
                for p in Path(folder).glob(f"instance-{jobs}-{kind}*"):
                    p.unlink()
    print(f"load average {started:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; best "
          f"of {args.repeats}, wall (CPU) seconds; ratios: end to end over the in-process solve "
          f"(warm) and over the first solve of a fresh process")
    print("| jobs | jobs from | file MB | in-process solve s | first solve s | end to end s "
          "| ratio (CPU ratio) | ratio to first solve | peak MB |"
          + (" before s | before / now |" if args.before else ""))
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if args.before else ""))
    for jobs, kind, mb, inside, first, runs in rows:
        wall_in, cpu_in = min(w for w, _ in inside), min(c for _, c in inside)
        wall_first, cpu_first = min(w for w, _ in first), min(c for _, c in first)
        now = runs[None]
        wall, cpu = min(r[0] for r in now), min(r[1] for r in now)
        line = (f"| {jobs:,} | {kind} | {mb:.1f} | {wall_in:.2f} ({cpu_in:.2f}) | "
                f"{wall_first:.2f} ({cpu_first:.2f}) | {wall:.2f} ({cpu:.2f}) | "
                f"{wall / wall_in:.2f}x ({cpu / cpu_in:.2f}x) | "
                f"{wall / wall_first:.2f}x ({cpu / cpu_first:.2f}x) | "
                f"{max(r[2] for r in now):,.0f} |")
        if args.before:
            old = runs[args.before]
            old_wall, old_cpu = min(r[0] for r in old), min(r[1] for r in old)
            line += f" {old_wall:.2f} ({old_cpu:.2f}) | {old_wall / wall:.2f}x ({old_cpu / cpu:.2f}x) |"
        print(line)
        spread = sorted(r[0] for r in now)
        print(f"<!-- {jobs} {kind}: end to end wall {spread[0]:.2f}-{spread[-1]:.2f} s -->")
    if steps:
        print("\n| jobs | jobs from | imports | load_instance | solve | to_json | write |")
        print("|---:|---|---:|---:|---:|---:|---:|")
        for jobs, kind, parts in steps:
            cells = " | ".join(f"{parts[k][0]:.2f} ({parts[k][1]:.2f})"
                               for k in ("imports", "load", "solve", "to_json", "write"))
            print(f"| {jobs:,} | {kind} | {cells} |")


if __name__ == "__main__":
    main()
