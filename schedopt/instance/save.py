"""Writing an `Instance` back as a `schedopt-instance/1` document; `load_instance` round-trips it.

Each job is written with its resolved `throughput` row (steps/s per GPU type) and its `type`
label, and nodes are written explicitly, so the file needs no lookups to be read back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from schedopt.files import write_atomically
from schedopt.errors import InstanceError, Problem
from schedopt.instance.model import FORMAT, Instance, Job, ParameterServerSpec, TaskDemand


def _some(d: dict) -> dict:
    """Drop None values: an absent key means the default."""
    return {k: v for k, v in d.items() if v is not None}


def _floats(row) -> dict:
    return {k: float(v) for k, v in row.items()}


def _opt(x) -> float | None:
    return None if x is None else float(x)


def _per_layer(values: tuple[float, ...]) -> float | list[float]:
    return float(values[0]) if len(values) == 1 else [float(v) for v in values]


def _task(t: TaskDemand) -> dict:
    return {"bandwidth_gbps": float(t.bandwidth_gbps), "gpus": int(t.gpus), "cpus": float(t.cpus),
            "memory_gb": float(t.memory_gb)}


def _parameter_server(ps: ParameterServerSpec | None) -> dict | None:
    if ps is None:
        return None
    return {
        "epochs": int(ps.epochs), "samples_per_epoch": float(ps.samples_per_epoch),
        "batch_per_worker": int(ps.batch_per_worker),
        "compute_s_per_sample": _per_layer(ps.compute_s_per_sample),
        "model_size_gb": _per_layer(ps.model_size_gb),
        "worker": _task(ps.worker), "ps": _task(ps.ps),
        "max_workers": int(ps.max_workers), "max_ps": int(ps.max_ps),
    }


def _job(j: Job) -> dict:
    return _some({
        "id": j.id, "type": j.type, "scale_factor": int(j.scale_factor), "weight": float(j.weight),
        "arrival_time": float(j.arrival_time), "total_steps": _opt(j.total_steps),
        "steps_done": float(j.steps_done), "deadline": _opt(j.deadline), "user": j.user,
        "isolated_time": float(j.isolated_time), "throughput": _floats(j.throughput),
        "deadline_options": [{"after_s": float(o.after_s), "value": float(o.value)}
                             for o in j.deadline_options] or None,
        "parameter_server": _parameter_server(j.parameter_server),
    })


def instance_to_dict(instance: Instance) -> dict:
    """The instance as a plain document (dicts, lists, str, int, float) in format `schedopt-instance/1`."""
    c, p = instance.cluster, instance.performance
    gpu_types = {
        t.name: _some({"count": int(t.count), "gpus_per_node": int(t.gpus_per_node),
                       "cost_per_hour": _opt(t.cost_per_hour)})
        for t in c.gpu_types.values()
    }
    nodes = [_some({"id": n.id, "gpu_type": n.gpu_type, "gpus": int(n.gpus), "rack": n.rack,
                    "cpus": _opt(n.cpus), "memory_gb": _opt(n.memory_gb),
                    "bandwidth_gbps": _opt(n.bandwidth_gbps)}) for n in c.nodes]
    cpus = [{"id": m.id, "cores": int(m.cores)} for m in c.cpu_machines]
    performance = {
        "throughput": {jt: _floats(row) for jt, row in p.throughput.items()},
        "colocated": [
            _some({"types": list(x.types), "gpu_type": x.gpu_type,
                   "throughput": [float(v) for v in x.throughput],
                   "unconsolidated": None if x.unconsolidated is None
                   else [float(v) for v in x.unconsolidated]})
            for x in p.colocated
        ],
        "unconsolidated": {jt: _floats(row) for jt, row in p.unconsolidated.items()},
        "cpu_time": _floats(p.cpu_time),
    }
    return _some({
        "format": FORMAT, "name": instance.name, "now": float(instance.now),
        "cluster": _some({"gpu_types": gpu_types, "nodes": nodes, "cpu_machines": cpus or None}),
        "jobs": [_job(j) for j in instance.jobs],
        "performance": {k: v for k, v in performance.items() if v},
        "users": {name: {"weight": float(w)} for name, w in instance.users.items()} or None,
    })


def save_instance(instance: Instance, path: str | os.PathLike) -> None:
    """Write `instance` to `path` as JSON (`.json`) or YAML (`.yaml`/`.yml`)."""
    write_document(instance_to_dict(instance), path)


def write_document(doc: dict, path: str | os.PathLike, indent: int = 2) -> None:
    """Write a document as JSON (`.json`) or YAML (`.yaml`/`.yml`), by the path's suffix."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        text = json.dumps(doc, indent=indent, allow_nan=False) + "\n"
    elif suffix in (".yaml", ".yml"):
        import yaml  # only for YAML files: reading or writing JSON need not load it

        text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    else:
        message = f"unknown suffix {suffix!r}; expected .json, .yaml or .yml"
        raise InstanceError([Problem(str(path), "", message)])
    write_atomically(path, text)
