"""Cross-field rules of `schedopt-instance/1` that JSON Schema cannot express.

Runs on the raw document next to the schema check, so it must not assume the structure is valid:
every rule looks only at values of the right type and leaves wrong types to the schema's report.
Returns `(path, message)` pairs; paths are tuples of keys and list indices.
"""

from __future__ import annotations

from schedopt.instance.values import Path, format_path, is_integer, is_number, show

MAX_GPUS = 1_000_000  # per GPU type; a sanity bound so derived node lists stay small


def _dict(x: object) -> dict:
    return x if isinstance(x, dict) else {}


def _list(x: object) -> list:
    return x if isinstance(x, list) else []


def _counts(gpu_types: dict) -> dict[str, int] | None:
    """GPU type -> count, or None when some entry is malformed (the schema reports it)."""
    counts = {t: _dict(e).get("count") for t, e in gpu_types.items()}
    ok = all(is_integer(c) and c >= 1 for c in counts.values())
    return {t: int(c) for t, c in counts.items()} if ok else None


def _unique_ids(path: Path, items: list, what: str) -> list[tuple[Path, str]]:
    found, seen = [], {}
    for i, item in enumerate(items):
        ident = _dict(item).get("id")
        if isinstance(ident, str) and ident in seen:
            first = format_path(path + (seen[ident],))
            found.append((path + (i, "id"), f"duplicate {what} id {ident!r} (first used at {first})"))
        elif isinstance(ident, str):
            seen[ident] = i
    return found


def _unknown_gpu(name: str, types: list[str]) -> str:
    return f"unknown GPU type {name!r}; expected one of cluster.gpu_types: {', '.join(types)}"


def _node_problems(cluster: dict, types: list[str], counts: dict | None) -> list[tuple[Path, str]]:
    nodes = cluster.get("nodes")
    if not isinstance(nodes, list):
        return []
    found, held, sums_ok = [], dict.fromkeys(types, 0), counts is not None
    for i, node in enumerate(nodes):
        gpu_type, gpus = _dict(node).get("gpu_type"), _dict(node).get("gpus")
        if isinstance(gpu_type, str) and gpu_type not in types:
            found.append((("cluster", "nodes", i, "gpu_type"), _unknown_gpu(gpu_type, types)))
        if isinstance(gpu_type, str) and gpu_type in held and is_integer(gpus):
            held[gpu_type] += int(gpus)
        else:
            sums_ok = False
    for t in types if sums_ok else []:
        if held[t] > counts[t]:
            msg = (f"count is {counts[t]} but cluster.nodes hold {held[t]} {t} GPU(s); "
                   f"nodes may list at most count GPUs (the rest are derived)")
            found.append((("cluster", "gpu_types", t, "count"), msg))
    return found


def _rows(doc: dict) -> list[tuple[Path, dict]]:
    """Every GPU type -> value row in the document, with its path."""
    perf = _dict(doc.get("performance"))
    jobs = enumerate(_list(doc.get("jobs")))
    rows = [(("jobs", i, "throughput"), _dict(job).get("throughput")) for i, job in jobs]
    for table in ("throughput", "unconsolidated"):
        rows += [(("performance", table, k), row) for k, row in _dict(perf.get(table)).items()]
    return [(path, row) for path, row in rows if isinstance(row, dict)]


def _job_row(i: int, job: dict, perf: dict) -> tuple[Path, dict | None, list[tuple[Path, str]]]:
    """The row job `i` resolves to (own `throughput` first, else its `type` in the table), its
    path, and any problem resolving it; row None when it cannot be resolved."""
    jtype, table = job.get("type"), perf.get("throughput")
    if isinstance(table, dict) and isinstance(table.get("table"), str) and "throughput" not in job:
        return (), None, []  # the type's row is in a table file: checked once it is read
    if "throughput" in job:
        row = job["throughput"]
        return ("jobs", i, "throughput"), row if isinstance(row, dict) else None, []
    if isinstance(jtype, str) and jtype in _dict(table):
        row = table[jtype]
        return ("performance", "throughput", jtype), row if isinstance(row, dict) else None, []
    if isinstance(jtype, str) and (table is None or isinstance(table, dict)):
        msg = (f"job {show(job.get('id'))} has no own throughput row and its type {jtype!r} is not "
               f"in performance.throughput")
        return (), None, [(("jobs", i, "type"), msg)]
    if jtype is None:
        msg = f"job {show(job.get('id'))} has neither a throughput row nor a type; expected one of them"
        return (), None, [(("jobs", i), msg)]
    return (), None, []


def _job_problems(doc: dict, types: list[str], counts: dict | None) -> list[tuple[Path, str]]:
    """Row resolution, scale_factor against the cluster, and jobs that can run nowhere."""
    found, perf = [], _dict(doc.get("performance"))
    for i, job in enumerate(_list(doc.get("jobs"))):
        if not isinstance(job, dict):
            continue
        path, row, problems = _job_row(i, job, perf)
        found += problems
        sf = job.get("scale_factor", 1)
        missing = [t for t in types if t not in row] if row is not None else []
        if missing:
            name = show(job.get("id"))
            label = (f"job {name}" if path[:1] == ("jobs",)
                     else f"job {name} (type {job.get('type')!r})")
            need = "missing; {} needs steps/s on every GPU type (0 = cannot run on {})"
            found += [(path + (t,), need.format(label, t)) for t in missing]
        if counts is None or not is_integer(sf):
            continue
        if sf > max(counts.values()):
            msg = f"scale_factor {int(sf)} is larger than any GPU type's count (max {max(counts.values())})"
            found.append((("jobs", i, "scale_factor"), msg))
        fits = [t for t in types if counts[t] >= sf]
        if row is not None and fits and not missing and all(is_number(row[t]) and row[t] == 0 for t in fits):
            where = f"every GPU type with >= {int(sf)} GPUs ({', '.join(fits)})"
            msg = f"job {show(job.get('id'))} can run nowhere: throughput is 0 on {where}"
            found.append((("jobs", i), msg))
    return found


def _progress_problems(jobs: list) -> list[tuple[Path, str]]:
    found = []
    for i, job in enumerate(jobs):
        done, total = _dict(job).get("steps_done"), _dict(job).get("total_steps")
        if is_number(done) and is_number(total) and done > total:
            msg = f"expected at most total_steps ({show(total)}), got {show(done)}"
            found.append((("jobs", i, "steps_done"), msg))
    return found


def _deadline_problems(jobs: list) -> list[tuple[Path, str]]:
    """deadline_options strictly increasing in after_s; `deadline`, when also given, equals the
    first option's after_s (the SLO deadline is the tightest option)."""
    found = []
    for i, job in enumerate(jobs):
        options = [o for o in _list(_dict(job).get("deadline_options")) if isinstance(o, dict)]
        after = [o.get("after_s") for o in options]
        if not options or not all(is_number(a) for a in after):
            continue
        for k in range(1, len(after)):
            if after[k] <= after[k - 1]:
                msg = (f"expected after_s larger than the previous option's ({show(after[k - 1])}); "
                       f"options go by increasing deadline, got {show(after[k])}")
                found.append((("jobs", i, "deadline_options", k, "after_s"), msg))
        deadline = _dict(job).get("deadline")
        if is_number(deadline) and deadline != after[0]:
            msg = (f"expected the first deadline option's after_s ({show(after[0])}): the deadline "
                   f"is the tightest option, got {show(deadline)}")
            found.append((("jobs", i, "deadline"), msg))
    return found


MAX_TASKS = 1024  # max_workers / max_ps: a sanity bound on the (w, p) configurations
_TASK_NAMES = {"worker": "a worker", "ps": "a parameter server"}


def _largest_node(cluster: dict) -> dict[str, float]:
    """Per resource (gpus, cpus, memory_gb, bandwidth_gbps), the most any node has; a resource
    no node states is left out (GPUs count derived nodes too: gpus_per_node, default count)."""
    nodes = [_dict(n) for n in _list(cluster.get("nodes"))]
    derived = [_dict(t).get("gpus_per_node", _dict(t).get("count"))
               for t in _dict(cluster.get("gpu_types")).values()]
    largest = {}
    for key in ("gpus", "cpus", "memory_gb", "bandwidth_gbps"):
        values = [n[key] for n in nodes if key in n] + (derived if key == "gpus" else [])
        if values and all(is_number(v) and v >= 0 for v in values):  # else the schema reports
            largest[key] = max(values)
    return largest


def _parameter_server_problems(doc: dict) -> list[tuple[Path, str]]:
    """parameter_server: per-layer lists with a positive total, max_workers / max_ps at most
    MAX_TASKS, and one worker and one parameter server each fit the largest node's resources."""
    found, largest = [], _largest_node(_dict(doc.get("cluster")))
    # A job without parameter_server can only fail the worker's default 1 GPU: check it once.
    gpu_short = "gpus" in largest and largest["gpus"] < 1
    for i, job in enumerate(_list(doc.get("jobs"))):
        if not gpu_short and not (isinstance(job, dict) and "parameter_server" in job):
            continue
        ps = _dict(_dict(job).get("parameter_server"))
        base = ("jobs", i, "parameter_server")
        for key in ("compute_s_per_sample", "model_size_gb"):
            layers = ps.get(key)
            if isinstance(layers, list) and layers and all(is_number(v) for v in layers) \
                    and not any(v > 0 for v in layers):
                msg = f"expected a positive total (some layer > 0), got {len(layers)} layer(s) of 0"
                found.append((base + (key,), msg))
        for key in ("max_workers", "max_ps"):
            if is_integer(ps.get(key)) and ps[key] > MAX_TASKS:
                found.append((base + (key,), f"expected at most {MAX_TASKS}, got {show(ps[key])}"))
        for task, name in _TASK_NAMES.items():
            demand = _dict(ps.get(task))
            for key, most in largest.items():
                need = demand.get(key, 1 if key == "gpus" and task == "worker" else 0)
                if is_number(need) and need > most:
                    msg = (f"{name} needs {show(need)} {key} but no node has more than "
                           f"{show(most)}; expected at most {show(most)}")
                    found.append((base + (task, key), msg))
    return found


def _reference_problems(doc: dict) -> list[tuple[Path, str]]:
    """Job ids in `cpu_time` must exist. (Job types in `colocated`/`unconsolidated` need not:
    a performance model may describe job types that no queued job has.)"""
    if isinstance(doc.get("jobs"), dict):  # a jobs table: checked against it when read
        return []
    perf, jobs = _dict(doc.get("performance")), [_dict(j) for j in _list(doc.get("jobs"))]
    ids = {j.get("id") for j in jobs if isinstance(j.get("id"), str)}
    return [(("performance", "cpu_time", j), f"unknown job id {j!r}; expected the id of a job in jobs")
            for j in _dict(perf.get("cpu_time")) if j not in ids]


def cross_field_problems(doc: dict) -> list[tuple[Path, str]]:
    """Every cross-field problem of `doc` (ids, GPU types, row resolution, node sums, progress)."""
    cluster, jobs = _dict(doc.get("cluster")), _list(doc.get("jobs"))
    found = _unique_ids(("jobs",), jobs, "job") + _progress_problems(jobs) + _reference_problems(doc)
    found += _deadline_problems(jobs) + _parameter_server_problems(doc)
    found += _unique_ids(("cluster", "nodes"), _list(cluster.get("nodes")), "node")
    found += _unique_ids(("cluster", "cpu_machines"), _list(cluster.get("cpu_machines")), "CPU machine")
    gpu_types = cluster.get("gpu_types")
    if not isinstance(gpu_types, dict) or not gpu_types:
        return found
    types, counts = list(gpu_types), _counts(gpu_types)
    found += [(("cluster", "gpu_types", t, "count"), f"expected at most {MAX_GPUS} GPUs per type, got {c}")
              for t, c in (counts or {}).items() if c > MAX_GPUS]
    found += _node_problems(cluster, types, counts)
    found += [(path + (t,), _unknown_gpu(t, types))
              for path, row in _rows(doc) for t in row if t not in types]
    for i, pair in enumerate(_list(_dict(doc.get("performance")).get("colocated"))):
        gpu_type = _dict(pair).get("gpu_type")
        if isinstance(gpu_type, str) and gpu_type not in types:
            found.append((("performance", "colocated", i, "gpu_type"), _unknown_gpu(gpu_type, types)))
    return found + _job_problems(doc, types, counts)
