"""Building the frozen `Instance` from a validated `schedopt-instance/1` document.

Applies the format's defaults: `gpus_per_node` = count, derived nodes for GPUs `nodes` omits,
job defaults (scale_factor 1, weight 1, times 0 s), `now` = latest arrival, user weight 1. Numbers become
Python floats (steps/s, seconds, $/GPU-hour) and counts ints.
"""

from __future__ import annotations

from collections.abc import Sequence

from schedopt.instance.model import (
    Cluster, Colocation, CpuMachine, DeadlineOption, GpuType, Instance, Job, Node,
    ParameterServerSpec, Performance, TaskDemand, frozen_map,
)


def _float(x: object) -> float | None:
    return None if x is None else float(x)


def _row(row: dict) -> dict:
    return frozen_map({gpu: float(v) for gpu, v in row.items()})


def _derived_nodes(gpu_types: dict[str, GpuType], listed: tuple[Node, ...]) -> tuple[Node, ...]:
    """Nodes for the GPUs `listed` nodes leave out: `gpus_per_node` each (the last one partial),
    ids `<type>-n<k>` (skipping ids already taken), all in rack r0."""
    taken = {n.id for n in listed}
    nodes = []
    for t in gpu_types.values():
        left = t.count - sum(n.gpus for n in listed if n.gpu_type == t.name)
        full, rest = divmod(left, t.gpus_per_node)
        sizes = [t.gpus_per_node] * full + ([rest] if rest else [])
        ids = (f"{t.name}-n{k}" for k in range(len(taken) + len(sizes) + 1))
        free_ids = [i for i in ids if i not in taken][: len(sizes)]
        nodes += [Node(i, t.name, gpus) for i, gpus in zip(free_ids, sizes)]
    return tuple(nodes)


def _per_layer(x: object) -> tuple[float, ...]:
    """A total (one number) or one number per layer, as a tuple of floats."""
    return tuple(float(v) for v in x) if isinstance(x, list) else (float(x),)


def _task(t: dict, gpus: int) -> TaskDemand:
    return TaskDemand(float(t["bandwidth_gbps"]), int(t.get("gpus", gpus)), float(t.get("cpus", 0.0)),
                      float(t.get("memory_gb", 0.0)))


def _parameter_server(ps: dict | None) -> ParameterServerSpec | None:
    """Defaults: a worker holds 1 GPU, a parameter server none; cpus and memory 0; at most 8
    workers and 8 parameter servers."""
    if ps is None:
        return None
    return ParameterServerSpec(
        epochs=int(ps["epochs"]), samples_per_epoch=float(ps["samples_per_epoch"]),
        batch_per_worker=int(ps["batch_per_worker"]),
        compute_s_per_sample=_per_layer(ps["compute_s_per_sample"]),
        model_size_gb=_per_layer(ps["model_size_gb"]),
        worker=_task(ps["worker"], 1), ps=_task(ps["ps"], 0),
        max_workers=int(ps.get("max_workers", 8)), max_ps=int(ps.get("max_ps", 8)),
    )


def _job(j: dict, table: dict, types: list[str]) -> Job:
    row = j["throughput"] if "throughput" in j else table[j["type"]]
    options = tuple(DeadlineOption(float(o["after_s"]), float(o["value"]))
                    for o in j.get("deadline_options", []))
    deadline = _float(j.get("deadline"))
    if deadline is None and options:
        deadline = options[0].after_s
    return Job(
        id=j["id"], throughput=frozen_map({t: float(row[t]) for t in types}), type=j.get("type"),
        scale_factor=int(j.get("scale_factor", 1)), weight=float(j.get("weight", 1.0)),
        arrival_time=float(j.get("arrival_time", 0.0)), total_steps=_float(j.get("total_steps")),
        steps_done=float(j.get("steps_done", 0.0)), deadline=deadline,
        user=j.get("user"), isolated_time=float(j.get("isolated_time", 0.0)),
        deadline_options=options, parameter_server=_parameter_server(j.get("parameter_server")),
    )


def build_instance(doc: dict, source: str, jobs: Sequence[Job] | None = None) -> Instance:
    """The dataclasses of a document that passed validation (it is trusted here). `jobs`, when
    given (a `table.JobTable`), replaces the document's job list."""
    c, p = doc["cluster"], doc.get("performance", {})
    gpu_types = {
        name: GpuType(name, int(e["count"]), int(e.get("gpus_per_node", e["count"])),
                      _float(e.get("cost_per_hour")))
        for name, e in c["gpu_types"].items()
    }
    listed = tuple(Node(n["id"], n["gpu_type"], int(n["gpus"]), n.get("rack", "r0"),
                        _float(n.get("cpus")), _float(n.get("memory_gb")),
                        _float(n.get("bandwidth_gbps")))
                   for n in c.get("nodes", []))
    nodes = listed + _derived_nodes(gpu_types, listed)
    cpus = tuple(CpuMachine(m["id"], int(m["cores"])) for m in c.get("cpu_machines", []))
    table = {jt: _row(row) for jt, row in p.get("throughput", {}).items()}
    if jobs is None:
        jobs = tuple(_job(j, table, list(gpu_types)) for j in doc["jobs"])
    performance = Performance(
        throughput=frozen_map(table),
        colocated=tuple(
            Colocation(tuple(x["types"]), x["gpu_type"], tuple(float(v) for v in x["throughput"]),
                       tuple(float(v) for v in x["unconsolidated"]) if "unconsolidated" in x else None)
            for x in p.get("colocated", [])
        ),
        unconsolidated=frozen_map({jt: _row(row) for jt, row in p.get("unconsolidated", {}).items()}),
        cpu_time=frozen_map({jid: float(s) for jid, s in p.get("cpu_time", {}).items()}),
    )
    arrivals = getattr(jobs, "arrival_time", None)  # a JobTable's column
    if "now" in doc:
        now = float(doc["now"])
    elif arrivals is not None:
        now = float(arrivals.max()) if len(arrivals) else 0.0
    else:
        now = max((j.arrival_time for j in jobs), default=0.0)
    cluster = Cluster(frozen_map(gpu_types), nodes, cpus)
    users = frozen_map({name: float(u.get("weight", 1.0)) for name, u in doc.get("users", {}).items()})
    return Instance(cluster, jobs, performance, doc.get("name"), now, source, users)
