"""Performance models from measurements on disk: Gavel's throughput table and Pollux/Sia-style
per-placement profiles.

Gavel (stanford-futuredata/gavel, `scheduler/simulation_throughputs.json`): read by
`schedopt.traces.performance` (the same parser `schedopt import gavel-throughputs` uses); every
(model, scale factor) becomes a job type ('<model>' or '<model> x<s>'), every pair measured
sharing a GPU a pair of cells.

Pollux (petuum/adaptdl, `simulator/traces/<app>/placements.csv`): one row per (placement,
local_bsz) with `step_time` and `sync_time` in seconds. A placement is a digit string, the
GPUs used on each node ("112" = 1 + 1 + 2 GPUs on three nodes), so replicas = the digit sum and
nodes = the string's length. In adaptdl's simulator (`applications.py`, `simulator.py`)
`step_time` is the whole synchronous iteration, gradient synchronization included:
compute time = step_time - sync_time, and a step with k accumulation steps lasts
step_time + k (step_time - sync_time). So one iteration processes replicas x local_bsz
samples in `step_time` seconds (not step_time + sync_time).

Steps: as in Gavel's table, where a data-parallel job on s GPUs makes about s times the steps/s
of one GPU when it scales well (ResNet-50 (batch size 64): 4.39 steps/s on one V100, 17.3 on
eight), a "step" is one local batch of `local_bsz` samples: steps/s = replicas / step_time
(= samples/s / local_bsz). The job type '<app> (batch size <local_bsz>) x<replicas>' (no
suffix for one replica) gets, on `gpu_type`, the steps/s of its most consolidated placement
(fewest nodes; the fastest of those), and in `unconsolidated` the steps/s of its most spread
placement in the file (most nodes; the fastest of those) when that uses more nodes.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from schedopt.errors import InstanceError, Problem
from schedopt.instance.model import frozen_map
from schedopt.perf.model import PerformanceModel
from schedopt.traces.performance import gavel_performance, label

POLLUX_COLUMNS = ("placement", "local_bsz", "step_time", "sync_time")


def gavel_model(source, gpu_types=None, *, labels=None, colocation: bool = True) -> PerformanceModel:
    """The model of Gavel's throughput file `source` (a path or a parsed table); `gpu_types`,
    `labels`, `colocation` as in `schedopt.traces.performance.gavel_performance`."""
    name = "<table>" if isinstance(source, dict) else Path(source).name
    section = gavel_performance(source, gpu_types, labels=labels, colocation=colocation)
    return PerformanceModel.from_section(section, f"{name} (Gavel measured throughputs)")


def read_pollux_placements(path: str | os.PathLike) -> pd.DataFrame:
    """A Pollux placements CSV with derived columns: num_nodes, num_replicas, steps_per_s
    (replicas / step_time: local batches per second) and samples_per_s (x local_bsz).

    Raises InstanceError naming the file and what is wrong (missing columns, bad values)."""
    source = str(path)
    try:
        frame = pd.read_csv(path, dtype={"placement": str})
    except (OSError, ValueError, pd.errors.ParserError) as e:
        raise InstanceError([Problem(source, "", f"cannot read a CSV: {e}")]) from None
    lacking = [c for c in POLLUX_COLUMNS if c not in frame.columns]
    if lacking:
        msg = f"expected columns {', '.join(POLLUX_COLUMNS)}; missing {', '.join(lacking)}"
        raise InstanceError([Problem(source, "", msg)])
    if frame.empty:
        raise InstanceError([Problem(source, "", "expected at least one placement row; found "
                                     "only the header")])
    placement = frame["placement"].astype(str).str.strip()
    bad = ~placement.str.fullmatch(r"[1-9]+")
    times = frame[["local_bsz", "step_time", "sync_time"]].apply(pd.to_numeric, errors="coerce")
    bad |= ~(times["local_bsz"] > 0) | ~(times["step_time"] > 0) | ~(times["sync_time"] >= 0)
    bad |= times["sync_time"] > times["step_time"]
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        msg = ("expected a placement of digits 1-9, local_bsz > 0 and 0 <= sync_time <= "
               f"step_time (s); found {frame.iloc[i].to_dict()}")
        raise InstanceError([Problem(source, f"row {i + 2}", msg)])
    out = pd.DataFrame({"placement": placement, "local_bsz": times["local_bsz"].astype(int),
                        "step_time": times["step_time"], "sync_time": times["sync_time"]})
    digits = out["placement"].map(lambda p: [int(ch) for ch in p])
    out["num_nodes"] = digits.map(len)
    out["num_replicas"] = digits.map(sum)
    out["steps_per_s"] = out["num_replicas"] / out["step_time"]
    out["samples_per_s"] = out["steps_per_s"] * out["local_bsz"]
    return out


def pollux_model(path: str | os.PathLike, app: str | None = None, gpu_type: str = "t4") -> PerformanceModel:
    """The model of a Pollux placements CSV (module doc): job types '<app> (batch size b)' and
    '<app> (batch size b) x<r>' on `gpu_type` (Pollux's testbed: 4 NVIDIA T4 per node), steps/s
    of the most consolidated placement, unconsolidated steps/s of the most spread one. `app`
    defaults to the file name's stem before '-' ('cifar10-placements.csv' -> 'cifar10')."""
    frame = read_pollux_placements(path)
    app = app or Path(path).stem.split("-")[0]
    best = (frame.groupby(["local_bsz", "num_replicas", "num_nodes"], sort=True)["steps_per_s"]
            .max().reset_index())
    nodes = best.groupby(["local_bsz", "num_replicas"])["num_nodes"]
    packed = best[best["num_nodes"] == nodes.transform("min")]
    spread = best[(best["num_nodes"] == nodes.transform("max")) & (nodes.transform("nunique") > 1)]

    def labels(rows: pd.DataFrame) -> list[str]:
        return [label(f"{app} (batch size {b})", int(r))
                for b, r in zip(rows["local_bsz"], rows["num_replicas"])]

    job_types = labels(packed)
    values = packed["steps_per_s"].to_numpy(dtype=float)[:, None]
    unconsolidated = {t: {gpu_type: float(x)} for t, x in zip(labels(spread), spread["steps_per_s"])}
    return PerformanceModel(tuple(job_types), (gpu_type,), (), values, np.ones_like(values, dtype=bool),
                            unconsolidated=frozen_map(unconsolidated),
                            name=f"{Path(path).name} (Pollux placement profiles)")


def pollux_placement_model(path: str | os.PathLike, app: str | None = None,
                           gpu_type: str = "t4") -> PerformanceModel:
    """The same CSV as a (local batch size x placement) matrix: job types '<app> (batch size
    b)', one configuration per placement, named '<gpu_type>:<placement>', steps/s as in
    `pollux_model`. Not an instance's performance section (its "GPU types" are placements),
    but a real matrix with holes to complete (cifar10: 5 of 1,188 cells) and to study."""
    frame = read_pollux_placements(path)
    app = app or Path(path).stem.split("-")[0]
    table = frame.pivot_table(index="local_bsz", columns="placement", values="steps_per_s",
                              aggfunc="max")
    table = table[sorted(table.columns, key=lambda p: (sum(map(int, p)), len(p), p))]
    job_types = tuple(f"{app} (batch size {b})" for b in table.index)
    configs = tuple(f"{gpu_type}:{p}" for p in table.columns)
    values = table.to_numpy(dtype=float)
    return PerformanceModel(job_types, configs, (), values, np.isfinite(values),
                            name=f"{Path(path).name} (Pollux, by placement)")
