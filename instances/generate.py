#!/usr/bin/env python3
"""Regenerate the bundled example instances (schedopt-instance/1) in this folder.

    python instances/generate.py /path/to/gavel/simulation_throughputs.json [--out DIR]

The throughput file is Gavel's measured table (stanford-futuredata/gavel,
scheduler/simulation_throughputs.json, MIT licence; Narayanan et al., OSDI'20). It is read only
here: the generated files are committed, so nothing in schedopt needs it at run time.

Output is deterministic: fixed seeds (numpy default_rng), sorted keys, floats rounded to 6
significant digits, no timestamps. Re-running on the same input reproduces the files byte for byte.

Type-label convention (performance.throughput is keyed by job type, one row per type, and a row
is the throughput of ONE scale factor): a scale-factor-1 entry ('<model>', 1) is labelled exactly
'<model>' as Gavel spells it (e.g. "ResNet-50 (batch size 64)", "A3C"); an entry ('<model>', s)
with s > 1 is labelled '<model> x<s>' (e.g. "ResNet-50 (batch size 64) x4").

Only needs numpy and PyYAML.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import sys

import numpy as np
import yaml

FORMAT = "schedopt-instance/1"
GPU_TYPES = ("v100", "p100", "k80")  # Gavel's worker types, fastest first
# $/GPU-hour, as in docs/instance-format.md's example.
COST_PER_HOUR = {"v100": 2.48, "p100": 1.46, "k80": 0.45}
SOURCE = "Gavel OSDI'20 measured throughputs"


# ---------------------------------------------------------------------------------------------
# helpers

def r6(x: float) -> float:
    """Round to 6 significant digits (and make -0.0 plain 0.0)."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"non-finite number {x!r}")
    y = float(f"{x:.6g}")
    return 0.0 if y == 0 else y


def label(model: str, sf: int) -> str:
    """Job-type label for Gavel entry (model, sf); see the module docstring."""
    return model if sf == 1 else f"{model} x{sf}"


def gavel_key(model: str, sf: int) -> str:
    return str((model, sf))


def load_gavel(path: str) -> dict:
    """Gavel table as {gpu_type: {(model, sf): {"null": x, (model2, sf2): [a, b]}}}."""
    with open(path) as f:
        raw = json.load(f)
    out = {}
    for gpu, table in raw.items():
        out[gpu] = {}
        for key, entry in table.items():
            model, sf = ast.literal_eval(key)
            row = {}
            for other, val in entry.items():
                row["null" if other == "null" else ast.literal_eval(other)] = val
            out[gpu][(model, int(sf))] = row
    return out


def isolated(g: dict, model: str, sf: int, gpu: str) -> float | None:
    entry = g.get(gpu, {}).get((model, sf))
    return None if entry is None else entry["null"]


def row(g: dict, model: str, sf: int, suffix: str = "") -> dict | None:
    """Isolated steps/s on every GPU type, or None if any entry is missing."""
    out = {}
    for gpu in GPU_TYPES:
        x = isolated(g, model, sf, gpu + suffix)
        if x is None:
            return None
        out[gpu] = r6(x)
    return out


def complete(g: dict, model: str, sf: int, *, nonzero: bool = True, uncons: bool = False) -> bool:
    r = row(g, model, sf)
    if r is None or (nonzero and min(r.values()) <= 0):
        return False
    if uncons:
        u = row(g, model, sf, "_unconsolidated")
        if u is None or (nonzero and min(u.values()) <= 0):
            return False
    return True


def single_gpu_models(g: dict) -> list[str]:
    """Gavel's single-GPU job templates: distinct (model, 1) keys with nonzero isolated
    throughput on all of v100/p100/k80 (26 in the Gavel file), sorted."""
    return sorted(m for (m, sf) in g["v100"] if sf == 1 and complete(g, m, 1))


def gavel_duration(rng) -> float:
    """Gavel's job-duration distribution (seconds of isolated runtime on a V100)."""
    if rng.random() < 0.8:
        return 60.0 * 10 ** rng.uniform(1.5, 3)
    return 60.0 * 10 ** rng.uniform(3, 4)


def gavel_scale_factor(rng) -> int:
    """s = 1/2/4/8 with probability 0.7/0.1/0.15/0.05 (Gavel's Philly-derived distribution)."""
    r = rng.uniform()
    if r < 0.7:
        return 1
    if r < 0.8:
        return 2
    if r < 0.95:
        return 4
    return 8


def dumps_json(obj, indent: int = 0, width: int = 150) -> str:
    """JSON with sorted keys; a container is written on one line when that line is short
    (so each job / row / pair is one line), else expanded."""
    flat = json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False)
    if not isinstance(obj, (dict, list)) or len(flat) + indent <= width or not obj:
        return flat
    pad = " " * (indent + 2)
    if isinstance(obj, dict):
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {dumps_json(obj[k], indent + 2, width)}"
                 for k in sorted(obj)]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + dumps_json(v, indent + 2, width) for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def write(out_dir: str, name: str, doc: dict) -> None:
    path = os.path.join(out_dir, name)
    if name.endswith(".json"):
        text = dumps_json(doc) + "\n"
    else:
        header = ("# Generated by instances/generate.py from Gavel's measured throughputs\n"
                  "# (Narayanan et al., OSDI'20; MIT licence). Do not edit by hand; see README.md.\n")
        text = header + yaml.safe_dump(doc, sort_keys=True, default_flow_style=None,
                                       width=200, allow_unicode=True)
    with open(path, "w", newline="\n") as f:
        f.write(text)
    print(f"wrote {path} ({len(text.encode())} bytes, {len(doc['jobs'])} jobs)")


def gpu_types(counts: dict, per_node: dict, cost: dict | None = COST_PER_HOUR) -> dict:
    out = {}
    for gpu, n in counts.items():
        d = {"count": n, "gpus_per_node": per_node[gpu]}
        if cost is not None:
            d["cost_per_hour"] = cost[gpu]
        out[gpu] = d
    return out


# ---------------------------------------------------------------------------------------------
# 1. tiny.json: hand-made, hand-checkable (README works out its max-min optimum: 5/4)

def tiny() -> dict:
    return {
        "format": FORMAT,
        "name": "tiny (hand-made numbers, not measured; max-min optimum 5/4, see README)",
        "cluster": {"gpu_types": {
            "fast": {"count": 2, "gpus_per_node": 2, "cost_per_hour": 3.0},
            "slow": {"count": 2, "gpus_per_node": 2, "cost_per_hour": 1.0},
        }},
        "jobs": [
            {"id": "a", "throughput": {"fast": 3, "slow": 1}, "total_steps": 3600},
            {"id": "b", "throughput": {"fast": 2, "slow": 1}, "total_steps": 1800,
             "deadline": 1800},
            {"id": "c", "throughput": {"fast": 4, "slow": 1}, "scale_factor": 2,
             "total_steps": 7200},
        ],
    }


# ---------------------------------------------------------------------------------------------
# 2. small-heterogeneous.yaml: 30 Gavel jobs on 8 V100 + 8 P100 + 8 K80

def small(g: dict) -> dict:
    rng = np.random.default_rng(1)
    n_jobs, now = 30, 3600.0
    counts = {"v100": 8, "p100": 8, "k80": 8}
    users = ("alice", "bob", "carol")
    sf_of = {4: 2, 13: 2, 21: 2, 28: 2, 9: 4, 18: 4, 26: 4}
    weight_of = {3: 2, 11: 2, 22: 2}
    # Gavel's SLO factors (x isolated V100 runtime), used as deadlines after arrival.
    deadline_factor = {2: 1.2, 7: 2.0, 15: 10.0, 23: 2.0}
    singles = single_gpu_models(g)
    multi = {s: sorted(m for (m, sf) in g["v100"] if sf == s and complete(g, m, s, uncons=True))
             for s in (2, 4)}
    late = sorted(float(round(t)) for t in rng.uniform(0, now, size=n_jobs - 12))
    arrivals = [0.0] * 12 + late

    jobs, throughput, uncons = [], {}, {}
    M = n_jobs
    for i in range(n_jobs):
        sf = sf_of.get(i, 1)
        model = str(rng.choice(singles if sf == 1 else multi[sf]))
        lab = label(model, sf)
        throughput[lab] = row(g, model, sf)
        if sf > 1:
            uncons[lab] = row(g, model, sf, "_unconsolidated")
        duration = gavel_duration(rng)
        t_v100 = isolated(g, model, sf, "v100")
        total = int(round(duration * t_v100))
        job = {"id": f"j{i:02d}", "type": lab, "scale_factor": sf, "weight": weight_of.get(i, 1),
               "arrival_time": arrivals[i], "total_steps": total, "user": users[i % 3]}
        if i in deadline_factor:
            job["deadline"] = r6(deadline_factor[i] * duration)
        waited = now - arrivals[i]
        if waited > 0 and i % 2 == 0:
            # Some progress so far, at most half of what a V100 could have done meanwhile.
            done = int(min(rng.uniform(0.05, 0.4) * total, 0.5 * waited * t_v100))
            if done > 0:
                job["steps_done"] = done
                # Gavel's finish-time-fairness bookkeeping: steps done / isolated-share
                # throughput, X^iso[m,j] = (c_j / M) / s_m (rows sum to <= 1 here).
                thr_iso = sum(throughput[lab][gpu] * counts[gpu] / M / sf for gpu in GPU_TYPES)
                job["isolated_time"] = r6(done / thr_iso)
        jobs.append(job)

    return {
        "format": FORMAT,
        "name": f"small-heterogeneous ({SOURCE})",
        "now": now,
        "cluster": {"gpu_types": gpu_types(counts, {"v100": 4, "p100": 4, "k80": 4})},
        "jobs": jobs,
        "performance": {"throughput": throughput, "unconsolidated": uncons},
    }


# ---------------------------------------------------------------------------------------------
# 3. colocation.json: 12 single-GPU jobs over 5 types, with Gavel's co-location table

COLOC_MODELS = ("A3C", "LM (batch size 20)", "Recommendation (batch size 2048)",
                "ResNet-50 (batch size 64)", "Transformer (batch size 32)")


def colocation(g: dict) -> dict:
    rng = np.random.default_rng(2)
    per_model = (3, 3, 2, 2, 2)
    jobs, i = [], 0
    for model, n in zip(COLOC_MODELS, per_model):
        for _ in range(n):
            total = int(round(gavel_duration(rng) * isolated(g, model, 1, "v100")))
            jobs.append({"id": f"j{i:02d}", "type": model, "total_steps": total})
            i += 1
    throughput = {m: row(g, m, 1) for m in COLOC_MODELS}
    colocated = []
    models = sorted(COLOC_MODELS)
    for gpu in GPU_TYPES:
        for a_i, a in enumerate(models):
            for b in models[a_i:]:
                pair = g[gpu][(a, 1)].get((b, 1))
                if pair is None or (pair[0] == 0 and pair[1] == 0):
                    continue  # not measured (Gavel stores failed pairs as [0, 0])
                colocated.append({"types": [a, b], "gpu_type": gpu,
                                  "throughput": [r6(pair[0]), r6(pair[1])]})
    return {
        "format": FORMAT,
        "name": f"colocation ({SOURCE} incl. co-location pairs)",
        "cluster": {"gpu_types": gpu_types({"v100": 4, "p100": 4, "k80": 4},
                                           {"v100": 4, "p100": 4, "k80": 4})},
        "jobs": jobs,
        "performance": {"throughput": throughput, "colocated": colocated},
    }


# ---------------------------------------------------------------------------------------------
# 4. large-2000.json: 2,000 jobs drawn like Gavel's trace generator, 256 GPUs of each type

def large(g: dict) -> dict:
    rng = np.random.default_rng(0)
    n_jobs = 2000
    singles = single_gpu_models(g)
    jobs, throughput = [], {}
    for i in range(n_jobs):
        sf = gavel_scale_factor(rng)
        duration = gavel_duration(rng)
        # Job type uniform over the single-GPU templates; for s > 1 redraw until the model has
        # an (model, s) entry (as Gavel's generator redraws for a distributed-capable template).
        while True:
            model = singles[int(rng.integers(len(singles)))]
            if sf == 1 or row(g, model, sf) is not None:
                break
        lab = label(model, sf)
        throughput[lab] = row(g, model, sf)
        total = int(round(duration * isolated(g, model, sf, "v100")))
        jobs.append({"id": f"j{i:04d}", "type": lab, "scale_factor": sf, "weight": 1,
                     "arrival_time": 0, "total_steps": total})
    return {
        "format": FORMAT,
        "name": f"large-2000 ({SOURCE}, Gavel-generator-like)",
        "cluster": {"gpu_types": gpu_types({"v100": 256, "p100": 256, "k80": 256},
                                           {"v100": 4, "p100": 4, "k80": 8})},
        "jobs": jobs,
        "performance": {"throughput": throughput},
    }


# ---------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("throughputs", help="Gavel's simulation_throughputs.json")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)),
                    help="output folder (default: the folder holding this script)")
    args = ap.parse_args(argv)
    g = load_gavel(args.throughputs)
    os.makedirs(args.out, exist_ok=True)
    write(args.out, "tiny.json", tiny())
    write(args.out, "small-heterogeneous.yaml", small(g))
    write(args.out, "colocation.json", colocation(g))
    write(args.out, "large-2000.json", large(g))
    return 0


if __name__ == "__main__":
    sys.exit(main())
