"""Philly-derived CSV traces (Pollux's simulator/traces/philly.csv) -> a schedopt trace.

Columns used: timestamp (submit time, 'YYYY-MM-DD HH:MM:SS' or seconds), duration (s),
num_gpus; gpu_time and cluster (the Philly virtual cluster) are ignored. Rows are sorted by
timestamp (stable), and arrival_time = timestamp - the earliest kept timestamp, in seconds.

Philly has no job types. Each job gets one drawn uniformly (seeded) from the performance
model's job types for its scale factor (`performance.job_types_by_scale_factor`), and
total_steps = round(duration * steps/s on the reference GPU type), so the job runs `duration`
seconds there alone, as Philly measured it.

Jobs whose num_gpus no job type can serve on this cluster (no '<model> x<num_gpus>' label, or
more GPUs than any type that can run it has) are dropped and counted; with `clip` they get the
largest scale factor below num_gpus that can be served instead (and are counted as clipped).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from schedopt.errors import InstanceError, Problem, SchedoptError
from schedopt.instance.model import Instance
from schedopt.traces.common import build_trace, job_id, job_type_pool
from schedopt.traces.performance import subset_performance

COLUMNS = ("timestamp", "duration", "num_gpus")


class PhillyTrace(NamedTuple):
    instance: Instance
    dropped: int  # rows whose num_gpus cannot be served (not clipped)
    clipped: int  # rows given a smaller scale factor (clip=True)


def _read(csv_path: str | os.PathLike) -> tuple[pd.DataFrame, np.ndarray]:
    """The rows and their arrival seconds (not yet shifted); InstanceError at file:line, column."""
    source = str(csv_path)
    try:
        df = pd.read_csv(csv_path, skipinitialspace=True, dtype=str, keep_default_na=False)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        why = getattr(e, "strerror", None) or e
        raise InstanceError([Problem(source, "", f"cannot read the CSV: {why}")]) from None
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        msg = (f"missing column(s) {', '.join(missing)}; expected {', '.join(COLUMNS)} "
               f"(found {', '.join(map(str, df.columns))})")
        raise InstanceError([Problem(source, "", msg)])
    seconds = pd.to_numeric(df["timestamp"], errors="coerce").to_numpy(float)
    if np.isnan(seconds).any():  # date-times rather than seconds
        stamps = pd.to_datetime(df["timestamp"], errors="coerce", format="ISO8601")
        seconds = (stamps - pd.Timestamp("1970-01-01")).dt.total_seconds().to_numpy(float)
    duration = pd.to_numeric(df["duration"], errors="coerce").to_numpy(float)
    gpus = pd.to_numeric(df["num_gpus"], errors="coerce").to_numpy(float)
    checks = [("timestamp", ~np.isfinite(seconds), "a date-time 'YYYY-MM-DD HH:MM:SS' or seconds"),
              ("duration", ~(np.isfinite(duration) & (duration >= 0)), "seconds >= 0"),
              ("num_gpus", ~(np.isfinite(gpus) & (gpus >= 1) & (gpus == np.round(gpus))),
               "an integer >= 1")]
    problems = [Problem(f"{source}:{row + 2}", column, f"expected {what}, got {df[column].iloc[row]!r}")
                for column, bad, what in checks for row in np.flatnonzero(bad)]
    if problems:
        raise InstanceError(sorted(problems, key=lambda p: int(p.file.rsplit(":", 1)[1])))
    if df.empty:
        raise InstanceError([Problem(source, "", "the CSV holds no rows")])
    return df.assign(duration=duration, num_gpus=gpus.astype(int)), seconds


def read_philly(csv_path: str | os.PathLike, performance: dict, cluster: dict, seed: int = 0, *,
                reference: str | None = None, limit: int | None = None, clip: bool = False,
                colocation: bool = True) -> PhillyTrace:
    """The Philly CSV as a validated trace (see the module docstring), with drop/clip counts.

    performance: a `performance` section (e.g. `gavel_performance(...)`); cluster: a `cluster`
    section; reference: GPU type whose steps/s define total_steps (default: the fastest on
    average, v100 for Gavel's table); limit: keep only the first `limit` jobs by arrival.
    Ids j000.. in arrival order; job types drawn with numpy default_rng(seed).
    """
    source = str(csv_path)
    df, seconds = _read(csv_path)
    reference, candidates = job_type_pool(performance, cluster, reference)
    served = sorted(candidates)
    if not served:
        raise SchedoptError("no job type of the performance model can run on this cluster")
    kept, dropped, clipped = [], 0, 0
    for row in np.argsort(seconds, kind="stable"):
        want = int(df["num_gpus"].iloc[row])
        s = want if want in candidates else max((x for x in served if x < want), default=None)
        if s is None or (s != want and not clip):
            dropped += 1
            continue
        clipped += s != want
        kept.append((row, s))
        if limit is not None and len(kept) >= limit:
            break
    if not kept:
        raise SchedoptError(f"{source}: every job was dropped (no job type serves their GPU counts)")
    rng, start = np.random.default_rng(seed), seconds[kept[0][0]]
    jobs, where = [], []
    for i, (row, s) in enumerate(kept):
        kind = candidates[s][int(rng.integers(len(candidates[s])))]
        speed = performance["throughput"][kind][reference]
        work = float(df["duration"].iloc[row]) * speed
        if not np.isfinite(work):
            raise InstanceError([Problem(
                f"{source}:{row + 2}", "duration",
                f"expected seconds whose steps at {speed:g} steps/s ({kind} on {reference}) are "
                f"finite, got {df['duration'].iloc[row]:g}")])
        steps = max(1, round(work))
        jobs.append({"id": job_id(i, len(kept)), "type": kind, "scale_factor": s, "weight": 1.0,
                     "arrival_time": float(seconds[row] - start), "total_steps": steps})
        where.append(f"{source}:{row + 2}")
    perf = subset_performance(performance, {j["type"] for j in jobs}, list(cluster["gpu_types"]),
                              colocation=colocation)
    name = f"{Path(csv_path).name} (Philly-derived, {len(jobs)} jobs, seed {seed})"
    return PhillyTrace(build_trace(jobs, perf, cluster, name, source, where), dropped, clipped)


def read_philly_deadlines(csv_path: str | os.PathLike, gpus: int = 64, gpus_per_node: int = 8,
                          deadline_factor: float = 2.0, slo_fraction: float = 1.0, seed: int = 0,
                          *, gpu_type: str = "gpu", limit: int | None = None,
                          max_duration: float | None = None) -> PhillyTrace:
    """The Philly CSV as a deadline trace on one homogeneous pool (for `schedopt leases`).

    Pool: `gpus` GPUs of `gpu_type`, `gpus_per_node` per node. Each kept job runs exactly its
    Philly `duration` (throughput 1 step/s, total_steps = duration, s) on scale_factor =
    num_gpus GPUs; a fraction `slo_fraction` of them (drawn with numpy default_rng(seed)) gets
    deadline = deadline_factor x duration (s after arrival), the rest are best effort.
    Jobs asking for more than `gpus` GPUs, or running longer than `max_duration` s, are dropped
    (counted in `dropped`); `limit` keeps the first N kept jobs by arrival. Arrivals are
    seconds after the earliest kept timestamp; ids j000.. in arrival order.
    """
    if not deadline_factor > 0:
        raise SchedoptError(f"the deadline factor must be > 0, got {deadline_factor}")
    if not 0 <= slo_fraction <= 1:
        raise SchedoptError(f"the SLO fraction must be in [0, 1], got {slo_fraction}")
    source = str(csv_path)
    df, seconds = _read(csv_path)
    order = np.argsort(seconds, kind="stable")
    duration = df["duration"].to_numpy(float)[order]
    want = df["num_gpus"].to_numpy(int)[order]
    keep = (want <= gpus) & (duration > 0)
    if max_duration is not None:
        keep &= duration <= max_duration
    kept = np.flatnonzero(keep)[:limit]
    rows = order[kept]
    if rows.size == 0:
        raise SchedoptError(f"{source}: every job was dropped (more than {gpus} GPUs, zero "
                            f"duration or longer than max_duration)")
    slo = np.random.default_rng(seed).random(rows.size) < slo_fraction
    start = seconds[rows[0]]
    jobs = []
    for i, row in enumerate(rows):
        run = float(df["duration"].iloc[row])
        job = {"id": job_id(i, rows.size), "scale_factor": int(df["num_gpus"].iloc[row]),
               "arrival_time": float(seconds[row] - start), "total_steps": run,
               "throughput": {gpu_type: 1.0}}
        if slo[i]:
            job["deadline"] = deadline_factor * run
        jobs.append(job)
    cluster = {"gpu_types": {gpu_type: {"count": gpus, "gpus_per_node": gpus_per_node}}}
    name = (f"{Path(csv_path).name} (Philly-derived deadlines, {len(jobs)} jobs, "
            f"factor {deadline_factor:g}, seed {seed})")
    where = [f"{source}:{row + 2}" for row in rows]
    read = keep.size if limit is None else int(kept[-1]) + 1  # rows looked at before the cut
    return PhillyTrace(build_trace(jobs, {}, cluster, name, source, where), read - rows.size, 0)
