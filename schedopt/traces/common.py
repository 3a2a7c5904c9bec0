"""Pieces every importer shares: the cluster section, job ids, and validating the result.

A trace is an instance document whose jobs have future `arrival_time`s (seconds) and
`total_steps`; it is checked by `parse_instance` like any instance file.
"""

from __future__ import annotations

import re

from schedopt.errors import InstanceError, Problem, SchedoptError
from schedopt.instance import parse_instance
from schedopt.instance.model import FORMAT, Instance
from schedopt.traces.performance import job_types_by_scale_factor, reference_gpu

# Gavel's physical cluster (OSDI'20 section 7): 8 V100 (4 per server), 16 P100 (4 per server),
# 24 K80 (8 per server). Costs in $/GPU-hour as in docs/instance-format.md's example.
GAVEL_CLUSTER = {"v100": 8, "p100": 16, "k80": 24}
GAVEL_GPUS_PER_NODE = {"v100": 4, "p100": 4, "k80": 8}
GAVEL_COST_PER_HOUR = {"v100": 2.48, "p100": 1.46, "k80": 0.45}
_JOB_PATH = re.compile(r"jobs\[(\d+)\](?:\.(.*))?")


def parse_gpu_map(text: str, option: str) -> dict[str, int]:
    """'v100=8,p100=16' -> {'v100': 8, 'p100': 16} (integers >= 1); SchedoptError otherwise."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip().isdigit() or int(value) < 1:
            raise SchedoptError(f"{option}: expected TYPE=COUNT[,TYPE=COUNT...] with counts >= 1, "
                                f"got {text!r}")
        out[name.strip()] = int(value)
    if not out:
        raise SchedoptError(f"{option}: expected TYPE=COUNT[,TYPE=COUNT...], got {text!r}")
    return out


def gavel_cluster(counts: dict | None = None, gpus_per_node: dict | None = None,
                  cost_per_hour: dict | None = None) -> dict:
    """A `cluster` section: `counts` GPUs per type (default Gavel's 8 v100 / 16 p100 / 24 k80),
    `gpus_per_node` per type (default Gavel's 4/4/8 for those names, else all in one node),
    `cost_per_hour` $/GPU-hour (default Gavel's names' prices; other types get none)."""
    counts = dict(counts or GAVEL_CLUSTER)
    per_node = gpus_per_node or {}
    unknown = [t for t in per_node if t not in counts]
    if unknown:
        raise SchedoptError(f"--gpus-per-node names {', '.join(unknown)}, which the cluster lacks "
                            f"(cluster: {', '.join(counts)})")
    cost = GAVEL_COST_PER_HOUR if cost_per_hour is None else cost_per_hour
    gpu_types = {}
    for t, n in counts.items():
        entry = {"count": n, "gpus_per_node": min(n, per_node.get(t, GAVEL_GPUS_PER_NODE.get(t, n)))}
        if t in cost:
            entry["cost_per_hour"] = cost[t]
        gpu_types[t] = entry
    return {"gpu_types": gpu_types}


def counts_of(cluster: dict) -> dict[str, int]:
    """GPU type -> count of a cluster section."""
    return {t: e["count"] for t, e in cluster["gpu_types"].items()}


def job_type_pool(performance: dict, cluster: dict, reference: str | None = None
                  ) -> tuple[str, dict[int, list[str]]]:
    """The reference GPU type (default: the fastest on average) and {s: job types a generator
    may draw for an s-GPU job on this cluster}; SchedoptError if the reference is not in it."""
    counts = counts_of(cluster)
    reference = reference or reference_gpu(performance, list(counts))
    if reference not in counts:
        raise SchedoptError(f"reference GPU type {reference!r} is not in the cluster "
                            f"({', '.join(counts)})")
    return reference, job_types_by_scale_factor(performance, counts, reference)


def job_id(index: int, num_jobs: int) -> str:
    """'j' + index zero-padded to at least 3 digits, so ids sort like the jobs (j000, j001...)."""
    return f"j{index:0{max(3, len(str(num_jobs - 1)))}d}"


def build_trace(jobs: list[dict], performance: dict, cluster: dict, name: str, source: str,
                where: list[str] | None = None) -> Instance:
    """Validate the trace document (jobs, the given performance section, cluster) and build it.

    `where[i]` (optional) names job i's origin, e.g. 'max_min_fairness.trace:17'; a problem at
    `jobs[i].<field>` is then reported as `<where[i]>: <field>: ...`.
    """
    doc = {"format": FORMAT, "name": name, "cluster": cluster, "jobs": jobs, "performance": performance}
    try:
        return parse_instance(doc, source)
    except InstanceError as e:
        if where is None:
            raise
        problems = []
        for p in e.problems:
            m = _JOB_PATH.fullmatch(p.path)
            problems.append(Problem(where[int(m.group(1))], m.group(2) or "", p.message) if m else p)
        raise InstanceError(problems) from None


def summary(instance: Instance) -> str:
    """'96 jobs, 48 GPUs (8 v100, 16 p100, 24 k80), arrivals 0 s to 46317 s (12.9 h)'."""
    gpus = instance.cluster.gpu_types.values()
    text = (f"{len(instance.jobs)} jobs, {sum(t.count for t in gpus)} GPUs ("
            + ", ".join(f"{t.count} {t.name}" for t in gpus) + ")")
    if instance.jobs:
        first = min(j.arrival_time for j in instance.jobs)
        last = max(j.arrival_time for j in instance.jobs)
        text += f", arrivals {first:.0f} s to {last:.0f} s ({(last - first) / 3600:.1f} h)"
    return text
