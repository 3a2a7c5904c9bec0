"""Loading a large instance: parser and schema validator choices, side by side in one run.

    python benchmarks/loading.py [--jobs 100000] [--repeats 3]

Writes a random JSON instance of JOBS jobs on 3 GPU types to a temporary file, then times (best
of REPEATS, wall seconds): parsing with json and orjson; schema validation with jsonschema (the
detailed checker that reports every problem), fastjsonschema and jsonschema-rs; and
`load_instance` end to end. fastjsonschema is measured only if installed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

from schedopt.instance.load import load_instance
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
        rows.append(("load_instance", "end to end", best(lambda: load_instance(path),
                                                          args.repeats)))
    print(f"{args.jobs:,} jobs x 3 GPU types ({len(raw) / 1e6:.1f} MB of JSON)\n")
    print(f"| step | choice | seconds |\n|---|---|---:|")
    for step, choice, seconds in rows:
        print(f"| {step} | {choice} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
