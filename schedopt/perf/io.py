"""Reading and writing performance models.

A model file (format `schedopt-perf/1`, JSON or YAML by suffix) holds an instance's
`performance` section plus the list of cells that are estimates rather than measurements:

    {"format": "schedopt-perf/1", "name": "...",
     "performance": {"throughput": ..., "colocated": [...], "unconsolidated": ...},
     "estimated": [{"job_type": "A3C", "gpu_type": "k80", "partner": "CycleGAN",
                    "uncertainty": 0.12}, ...]}

(`partner` absent for an isolated cell; `uncertainty`: sd of log steps/s, absent when none;
`"unconsolidated": true` marks an estimated entry of `performance.unconsolidated`, the rate of
a multi-GPU job whose GPUs span nodes, rather than a cell of the matrix.)
`read_model` also takes a schedopt instance (its performance section) and Gavel's throughput
file, so every command that needs a model accepts all three. The performance section is checked
by the instance validator, so a bad value is reported at its path as for instances.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np

from schedopt.errors import InstanceError, Problem
from schedopt.instance import parse_instance
from schedopt.instance.load import read_document
from schedopt.instance.model import FORMAT as INSTANCE_FORMAT
from schedopt.instance.model import frozen_map
from schedopt.instance.save import write_document
from schedopt.perf.builders import gavel_model
from schedopt.perf.model import PerformanceModel

PERF_FORMAT = "schedopt-perf/1"


def _gpu_names(section) -> list[str]:
    """GPU types a performance section names (defensively: it is not validated yet)."""
    names: dict[str, None] = {}
    if not isinstance(section, dict):
        return []
    for table in ("throughput", "unconsolidated"):
        rows = section.get(table)
        for row in rows.values() if isinstance(rows, dict) else ():
            keys = row if isinstance(row, dict) else ()
            names.update(dict.fromkeys(g for g in keys if isinstance(g, str)))
    pairs = section.get("colocated")
    for p in pairs if isinstance(pairs, list) else ():
        if isinstance(p, dict) and isinstance(p.get("gpu_type"), str):
            names[p["gpu_type"]] = None
    return list(names)


def checked_performance(section, source: str, cluster: dict | None = None,
                        base: str | os.PathLike | None = None):
    """`section` validated as an instance's performance section (on `cluster`, default one
    GPU of every type it names) and built, a throughput table it names read relative to
    `base` (the file's folder); InstanceError with every problem otherwise. The instance's
    jobs are left out: a model is read before every job finds a complete row."""
    types = {g: {"count": 1} for g in _gpu_names(section)} or {"gpu": {"count": 1}}
    cluster = cluster or {"gpu_types": types}
    doc = {"format": INSTANCE_FORMAT, "cluster": cluster, "jobs": [], "performance": section}
    return parse_instance(doc, source, base).performance


def read_model(path: str | os.PathLike) -> tuple[PerformanceModel, dict | None]:
    """(model, instance document or None) from a model file, a schedopt instance (the
    document is returned so that a completed model can be written back into it), or Gavel's
    throughput file (anything without a "format" key)."""
    source = str(path)
    doc = read_document(path)
    if not isinstance(doc, dict) or "format" not in doc:
        return gavel_model(path), None
    folder = Path(path).parent
    if doc["format"] == INSTANCE_FORMAT:
        cluster = doc.get("cluster") if isinstance(doc.get("cluster"), dict) else None
        performance = checked_performance(doc.get("performance", {}), source, cluster, folder)
        return PerformanceModel.from_performance(performance, doc.get("name")), doc
    if doc["format"] != PERF_FORMAT:
        msg = f"unknown format {doc['format']!r}; expected {PERF_FORMAT!r} or {INSTANCE_FORMAT!r}"
        raise InstanceError([Problem(source, "format", msg)])
    performance = checked_performance(doc.get("performance", {}), source, base=folder)
    model = PerformanceModel.from_performance(performance, doc.get("name"))
    return _mark_estimated(model, doc.get("estimated", []), source), None


def _mark_estimated(model: PerformanceModel, estimated, source: str) -> PerformanceModel:
    if not isinstance(estimated, list):
        raise InstanceError([Problem(source, "estimated", "expected a list of cells")])
    known = model.known.copy()
    uncertainty = np.where(known, 0.0, np.nan)
    loose = {}
    for i, cell in enumerate(estimated):
        try:
            u = cell.get("uncertainty")
            u = float("nan") if u is None else float(u)
            if cell.get("unconsolidated", False) is True:
                key = (cell["job_type"], cell["gpu_type"])
                if cell.get("partner") is not None or key[1] not in model.unconsolidated.get(key[0], {}):
                    raise KeyError(key)
                loose[key] = u
                continue
            r = model.job_types.index(cell["job_type"])
            c = model.column(cell["gpu_type"], cell.get("partner"))
        except (AttributeError, TypeError, KeyError, ValueError):
            msg = ("expected {job_type, gpu_type, partner (optional), uncertainty (optional), "
                   "unconsolidated (optional, true: an entry of performance.unconsolidated)} "
                   "naming an entry of the performance section")
            raise InstanceError([Problem(source, f"estimated[{i}]", msg)]) from None
        known[r, c], uncertainty[r, c] = False, u
    model = replace(model, unconsolidated_estimated=frozen_map(loose))
    return model.with_values(model.values, uncertainty, known)


def model_document(model: PerformanceModel) -> dict:
    """The `schedopt-perf/1` document of `model`."""
    section = model.to_section()
    estimated = []
    for cell in model.entries(model.estimated) + model.unconsolidated_entries():
        item = {"job_type": cell["job_type"], "gpu_type": cell["gpu_type"]}
        if cell["partner"] is not None:
            item["partner"] = cell["partner"]
        if cell["uncertainty"] is not None:
            item["uncertainty"] = cell["uncertainty"]
        if cell["unconsolidated"]:
            item["unconsolidated"] = True
        estimated.append(item)
    doc = {"format": PERF_FORMAT, "name": model.name, "performance": section, "estimated": estimated}
    return {k: v for k, v in doc.items() if v is not None}


def dump(doc: dict, path: str | os.PathLike) -> None:
    """Write a document as JSON (.json) or YAML (.yaml/.yml)."""
    write_document(doc, path, indent=1)


def write_model(model: PerformanceModel, path: str | os.PathLike) -> None:
    """Write `model` as a `schedopt-perf/1` file."""
    dump(model_document(model), path)


def instance_with_model(doc: dict, model: PerformanceModel, source: str):
    """The instance `doc` (read from the file `source`; a jobs table it names is read
    relative to that file's folder) with its performance section replaced by `model`'s
    (cpu_time kept), validated: every job must now find a complete throughput row."""
    section = model.to_section()
    old = doc.get("performance", {})
    if isinstance(old, dict) and "cpu_time" in old:
        section["cpu_time"] = old["cpu_time"]
    return parse_instance({**doc, "performance": section}, source, Path(source).parent)
