"""Gavel's `.trace` files -> a schedopt trace (an instance whose jobs arrive over time).

One job per line, 10 tab-separated fields (Gavel's `Job.__str__` + arrival time):
job_type, command, working_dir, num_steps_arg, needs_data_dir (0/1), total_steps,
scale_factor, priority_weight, SLO (-1 = none), arrival_time (s). Gavel's older 9-field lines
(no working_dir) are read too. command, working_dir, num_steps_arg and needs_data_dir only
matter to Gavel's workers and are checked but not kept.

SLO semantics, from Gavel's code (scheduler/scheduler.py @ c4fa40097339, `Scheduler.add_job`):
`self._SLOs[job_id] = job.SLO * job.duration + <time the job is added>`, and `Job` turns a
negative SLO into None. So SLO is a *factor* of the job's duration, not seconds: the job must
finish within SLO x duration seconds of its arrival. Gavel's duration is the isolated runtime
on a V100 (its generator draws the duration, then total_steps = duration x V100 steps/s).
A trace line carries no duration (Gavel's `parse_trace` passes duration=None, so its own SLO
policies cannot use trace SLOs); we recover it as total_steps / steps/s on the reference GPU
type (v100 by default) and set `deadline` = SLO x that duration (seconds after arrival).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from schedopt.errors import InstanceError, Problem
from schedopt.instance.model import Instance
from schedopt.traces.common import build_trace, gavel_cluster, job_id
from schedopt.traces.performance import label, load_performance, subset_performance

FIELDS = ("job_type", "command", "working_dir", "num_steps_arg", "needs_data_dir",
          "total_steps", "scale_factor", "priority_weight", "SLO", "arrival_time")


def _int(text: str, low: int) -> int:
    value = int(text.strip())
    if value < low:
        raise ValueError
    return value


def _flag(text: str) -> int:
    if text.strip() not in ("0", "1"):
        raise ValueError
    return int(text)


def _float(text: str, low: float | None = None, open_low: bool = False) -> float:
    value = float(text.strip())
    if not math.isfinite(value):
        raise ValueError
    if low is not None and (value < low or open_low and value == low):
        raise ValueError
    return value


_PARSERS = {  # field -> (parser, what it expects)
    "needs_data_dir": (_flag, "0 or 1"),
    "total_steps": (lambda t: _int(t, 0), "an integer >= 0"),
    "scale_factor": (lambda t: _int(t, 1), "an integer >= 1"),
    "priority_weight": (lambda t: _float(t, 0.0, open_low=True), "a number > 0"),
    "SLO": (_float, "a number (a factor of the duration; -1 = none)"),
    "arrival_time": (lambda t: _float(t, 0.0), "a number of seconds >= 0"),
}


def parse_gavel_line(text: str, where: str) -> tuple[dict, list[Problem]]:
    """The fields of one trace line as {field: value}, and the problems found (file:line, field)."""
    parts = text.split("\t")
    if len(parts) == 9:  # Gavel's older format, without working_dir
        parts.insert(2, "")
    if len(parts) != 10:
        msg = f"expected 10 tab-separated fields ({', '.join(FIELDS)}), got {len(parts)}"
        return {}, [Problem(where, "", msg)]
    fields, problems = dict(zip(FIELDS, parts)), []
    if not fields["job_type"].strip():
        msg = "expected a job type such as 'ResNet-50 (batch size 64)'"
        problems.append(Problem(where, "job_type", msg))
    for name, (parse, expected) in _PARSERS.items():
        try:
            fields[name] = parse(fields[name])
        except ValueError:
            problems.append(Problem(where, name, f"expected {expected}, got {fields[name]!r}"))
    return fields, problems


def read_gavel_trace(trace_path: str | os.PathLike, throughputs: str | os.PathLike | dict,
                     cluster: dict | None = None, *, reference: str = "v100",
                     colocation: bool = True) -> Instance:
    """A Gavel `.trace` as a validated Instance.

    throughputs: Gavel's simulation_throughputs.json, a schedopt instance file, or an already
    built `performance` section; cluster: a `cluster` section (default Gavel's 48-GPU cluster,
    see `gavel_cluster`). Job i (the i-th non-blank line, in file order) gets id j<i>
    (zero-padded), type = label(job_type, scale_factor), weight = priority_weight,
    arrival_time, total_steps, and deadline = SLO x total_steps / steps/s on `reference`
    (seconds after arrival) when SLO >= 0. The performance section keeps only the job types
    used. Raises InstanceError naming `file:line` and the field for every bad line.
    """
    cluster = cluster or gavel_cluster()
    gpu_types = list(cluster["gpu_types"])
    performance = throughputs if isinstance(throughputs, dict) else load_performance(
        throughputs, gpu_types, colocation)
    table, source = performance["throughput"], str(trace_path)
    try:
        lines = Path(trace_path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        why = getattr(e, "strerror", None) or e
        raise InstanceError([Problem(source, "", f"cannot read the trace: {why}")]) from None
    numbered = [(n, text) for n, text in enumerate(lines, 1) if text.strip()]
    if not numbered:
        raise InstanceError([Problem(source, "", "the trace holds no job lines")])
    jobs, where, problems = [], [], []
    for i, (n, text) in enumerate(numbered):
        at = f"{source}:{n}"
        fields, bad = parse_gavel_line(text, at)
        problems += bad
        if bad:
            continue
        model, s = fields["job_type"], fields["scale_factor"]
        kind = label(model, s)
        if kind not in table:
            msg = f"({model!r}, {s}) is not in the throughput table (expected a Gavel job type, scale factor)"
            problems.append(Problem(at, "job_type", msg))
            continue
        job = {"id": job_id(i, len(numbered)), "type": kind, "scale_factor": s,
               "weight": fields["priority_weight"], "arrival_time": fields["arrival_time"],
               "total_steps": fields["total_steps"]}
        if fields["SLO"] >= 0:
            speed = table[kind].get(reference, 0)
            if speed <= 0:
                msg = f"SLO needs the duration on {reference}, but {kind!r} has no steps/s there"
                problems.append(Problem(at, "SLO", msg))
                continue
            job["deadline"] = fields["SLO"] * fields["total_steps"] / speed
        jobs.append(job)
        where.append(at)
    if problems:
        raise InstanceError(problems)
    perf = subset_performance(performance, {j["type"] for j in jobs}, list(cluster["gpu_types"]),
                              colocation=colocation)
    name = f"{Path(trace_path).name} (Gavel trace, {len(jobs)} jobs)"
    return build_trace(jobs, perf, cluster, name, source, where)
