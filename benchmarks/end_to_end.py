"""`schedopt solve FILE --json --output R` end to end, side by side with the in-process solve.

    python benchmarks/end_to_end.py [--jobs 100000 1000000] [--repeats 2] [--formats json parquet]

For each size, draws a contended instance (`exact_at_scale.contended`: random rows on 3 GPU
types, 3/8 of a GPU per job, seed 0), writes it to a temporary folder (a JSON file; with
`parquet`, the same jobs as a Parquet table named by a small JSON file), then measures, best of
REPEATS (wall seconds):
- in process: `schedopt.solve` on the same problem built from arrays (the modules already
  imported: the solve alone);
- end to end: the command in a fresh process, from its start until it has exited with the
  result document written (interpreter start, imports, loading, solving, writing), stdout
  thrown away; and the process's peak resident memory.
Nothing is kept: the instances are generated at run time and deleted afterwards.
"""

from __future__ import annotations

import argparse
import shutil
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


def end_to_end(path: Path, output: Path) -> tuple[float, float, int]:
    """(wall seconds, peak MB, exit code) of one `schedopt solve` in a fresh process."""
    script = shutil.which("schedopt")  # the console script users run
    start_cli = [script] if script else [sys.executable, "-c",
                                         "from schedopt.cli.entry import run; run()"]
    command = [*start_cli, "solve", str(path), "--json", "--output", str(output)]
    # GNU time reports the command's own peak; a child's rusage would count the pages it shared
    # with this (large) process between fork and exec.
    memory = output.with_suffix(".rss")
    timer = ["/usr/bin/time", "-f", "%M", "-o", str(memory)] if Path("/usr/bin/time").exists() \
        else []
    start = time.perf_counter()
    child = subprocess.run([*timer, *command], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
    seconds = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {child.stderr.decode()}")
    peak = float(memory.read_text().split()[-1]) / 1024 if timer else float("nan")
    return seconds, peak, child.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--formats", nargs="+", default=["json"], choices=["json", "parquet"])
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for jobs in args.jobs:
            problem = contended(jobs)
            inside = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                result = schedopt.solve(problem)
                inside.append(time.perf_counter() - start)
            for kind in args.formats:
                path = Path(folder) / f"instance-{jobs}-{kind}.json"
                (write_json if kind == "json" else write_parquet)(problem, path)
                runs = [end_to_end(path, Path(folder) / "result.json") for _ in range(args.repeats)]
                written = orjson.loads((Path(folder) / "result.json").read_bytes())
                assert abs(written["objective"] - result.objective) <= 1e-9 * abs(result.objective)
                size = sum(p.stat().st_size for p in Path(folder).glob(f"instance-{jobs}-{kind}*"))
                seconds = min(r[0] for r in runs)
                rows.append((jobs, kind, size / 1e6, min(inside), seconds, seconds / min(inside),
                             max(r[1] for r in runs)))
                for p in Path(folder).glob(f"instance-{jobs}-{kind}*"):
                    p.unlink()
    print("| jobs | jobs from | file MB | in-process solve s | end to end s | ratio | peak MB |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for jobs, kind, mb, inside, outside, ratio, peak in rows:
        print(f"| {jobs:,} | {kind} | {mb:.1f} | {inside:.2f} | {outside:.2f} | {ratio:.2f}x "
              f"| {peak:,.0f} |")


if __name__ == "__main__":
    main()
