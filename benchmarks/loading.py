"""Loading a large instance: parser, validator and table reader choices, side by side in one run.

    python benchmarks/loading.py [--jobs 100000] [--repeats 3]

Writes a random JSON instance of JOBS jobs on 3 GPU types to a temporary file, then times (best
of REPEATS, wall seconds): parsing with json, orjson (with and without the cyclic garbage
collector running) and msgspec's typed decoding into the columnar loader's job records; schema
validation with jsonschema (the detailed checker that reports every problem), fastjsonschema
and jsonschema-rs; building the Instance one Job object per job (the path before the columnar
one); `load_instance` end to end; and the same jobs as a CSV and a Parquet table: pandas' CSV
parser, pyarrow's, pyarrow's Parquet reader, and `load_instance` of an instance naming each;
and the Parquet jobs table through the pandas reader against the pyarrow-only path.
fastjsonschema and pyarrow are measured only if installed.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

import msgspec
import pandas as pd

from schedopt.instance.arrow import arrow_jobs
from schedopt.instance.build import build_instance
from schedopt.instance.columnar import _job_type
from schedopt.instance.load import load_instance
from schedopt.instance.tables import instance_with_tables
from schedopt.instance.validate import _schema_problems, passes_schema, schema


def instance_document(num_jobs: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    rates = rng.random((num_jobs, 3)) * [10.0, 5.0, 2.0]
    scale = rng.choice([1, 2, 4, 8], num_jobs)
    return {"format": "schedopt-instance/1",
            "cluster": {"gpu_types": {t: {"count": num_jobs // 3} for t in ("v100", "p100", "k80")}},
            "jobs": [{"id": f"j{i}", "scale_factor": int(s),
                      "throughput": {"v100": float(a), "p100": float(b), "k80": float(c)}}
                     for i, ((a, b, c), s) in enumerate(zip(rates, scale))]}


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def without_gc(fn):
    gc.disable()
    try:
        return fn()
    finally:
        gc.enable()


def table_rows(doc: dict, folder: Path, repeats: int) -> list[tuple[str, str, float]]:
    """The same jobs as CSV and Parquet tables: readers side by side, and load_instance."""
    frame = pd.DataFrame([{"id": j["id"], "scale_factor": j["scale_factor"], **j["throughput"]}
                          for j in doc["jobs"]])
    frame.to_csv(folder / "jobs.csv", index=False)
    rows = [("read CSV", "pandas (C parser)",
             best(lambda: pd.read_csv(folder / "jobs.csv", dtype={"id": str}), repeats))]
    try:
        from pyarrow import csv, parquet
    except ImportError:
        return rows
    frame.to_parquet(folder / "jobs.parquet", index=False)
    rows += [("read CSV", "pyarrow", best(lambda: csv.read_csv(folder / "jobs.csv").to_pandas(),
                                          repeats)),
             ("read Parquet", "pyarrow",
              best(lambda: parquet.read_table(folder / "jobs.parquet").to_pandas(), repeats))]
    for suffix in ("csv", "parquet"):
        path = folder / f"tables-{suffix}.json"
        path.write_bytes(orjson.dumps({**doc, "jobs": {"table": f"jobs.{suffix}"}}))
        rows.append(("load_instance", f"end to end (jobs from {suffix.upper()})",
                     best(lambda: load_instance(path), repeats)))
    # The Parquet table through the pandas reader, as every table went before the pyarrow-only
    # path (`schedopt.instance.arrow`), against that path.
    path = folder / "tables-parquet.json"
    table_doc = orjson.loads(path.read_bytes())
    rows.append(("jobs table", "Parquet, pandas reader (tables.instance_with_tables)",
                 best(lambda: instance_with_tables(table_doc, str(path), folder), repeats)))
    rows.append(("jobs table", "Parquet, pyarrow only (arrow.arrow_jobs)",
                 best(lambda: arrow_jobs(table_doc, folder), repeats)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    doc = instance_document(args.jobs)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "instance.json"
        path.write_bytes(orjson.dumps(doc))
        raw = path.read_bytes()
        rows = [("parse", "json", best(lambda: json.loads(raw), args.repeats)),
                ("parse", "orjson", best(lambda: orjson.loads(raw), args.repeats)),
                ("validate", "jsonschema (detailed)", best(lambda: _schema_problems(doc), 1)),
                ("validate", "jsonschema-rs", best(lambda: passes_schema(doc), args.repeats))]
        try:
            import fastjsonschema

            check = fastjsonschema.compile(schema())
            rows.append(("validate", "fastjsonschema", best(lambda: check(doc), args.repeats)))
        except ImportError:
            pass
        rows.append(("parse", "orjson, garbage collector paused",
                     best(lambda: without_gc(lambda: orjson.loads(raw)), args.repeats)))
        jobs = msgspec.json.encode(doc["jobs"])
        kind = list[_job_type(("v100", "p100", "k80"))]
        rows.append(("parse jobs", "msgspec typed records (columnar path)",
                     best(lambda: msgspec.json.decode(jobs, type=kind), args.repeats)))
        rows.append(("build", "one Job object per job (previous path)",
                     best(lambda: build_instance(doc, "x"), args.repeats)))
        rows.append(("load_instance", "end to end (JSON)", best(lambda: load_instance(path),
                                                                 args.repeats)))
        rows += table_rows(doc, Path(folder), args.repeats)
    print(f"{args.jobs:,} jobs x 3 GPU types ({len(raw) / 1e6:.1f} MB of JSON)\n")
    print(f"| step | choice | seconds |\n|---|---|---:|")
    for step, choice, seconds in rows:
        print(f"| {step} | {choice} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
