"""Gavel's measured throughput table -> the `performance` section of schedopt-instance/1.

Gavel's `simulation_throughputs.json` (stanford-futuredata/gavel, scheduler/, MIT) maps
worker type (v100, p100, k80 and `<type>_unconsolidated`) -> "('<model>', <scale factor>)" ->
{"null": steps/s alone, "('<other model>', <s>)": [steps/s of this job, of the other] when the
two share the GPUs}. Units everywhere: steps per second of one job on `scale_factor` GPUs.

Job-type labels (instances/README.md): ('<model>', 1) is labelled '<model>' exactly as Gavel
spells it; ('<model>', s) with s > 1 is labelled '<model> x<s>'.
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

from schedopt.errors import InstanceError, Problem

GAVEL_GPU_TYPES = ("v100", "p100", "k80")  # fastest first
UNCONSOLIDATED = "_unconsolidated"
_SCALED = re.compile(r"(.*) x(\d+)")

GavelKey = tuple[str, int]
GavelTable = dict[str, dict[GavelKey, dict]]  # worker type -> (model, s) -> {"null"|(m, s): ...}


def label(model: str, scale_factor: int) -> str:
    """Our job-type label of Gavel's (model, scale factor): '<model>' or '<model> x<s>'."""
    return model if scale_factor == 1 else f"{model} x{scale_factor}"


def parse_label(text: str) -> GavelKey:
    """(model, scale factor) of a label: 'LM (batch size 20) x4' -> ('LM (batch size 20)', 4)."""
    m = _SCALED.fullmatch(text)
    return (m.group(1), int(m.group(2))) if m and int(m.group(2)) > 1 else (text, 1)


def _gavel_key(text: str) -> GavelKey | None:
    try:
        key = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    ok = (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str)
          and isinstance(key[1], int) and not isinstance(key[1], bool) and key[1] >= 1)
    return (key[0], key[1]) if ok else None


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < float("inf")


def read_gavel_throughputs(path: str | os.PathLike) -> GavelTable:
    """Gavel's throughput file parsed like Gavel's `read_all_throughputs_json_v2`:
    {worker type: {(model, s): {"null": steps/s, (model2, s2): [steps/s, steps/s2]}}}.

    Raises InstanceError (file, key path, what was expected) for anything malformed.
    """
    source = str(path)
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise InstanceError([Problem(source, "", f"cannot read the file: {e.strerror or e}")]) from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InstanceError([Problem(source, "", f"not a JSON throughput file: {e}")]) from None
    if not isinstance(raw, dict) or not raw or not all(isinstance(v, dict) for v in raw.values()):
        msg = "expected Gavel's throughput table: {worker type: {\"('<model>', <s>)\": {...}}}"
        raise InstanceError([Problem(source, "", msg)])
    problems, table = [], {}
    for gpu, entries in raw.items():
        table[gpu] = {}
        for key_text, entry in entries.items():
            where, key = f"{gpu}[{key_text!r}]", _gavel_key(key_text)
            if key is None:
                msg = "expected a key like \"('<model>', <scale factor>)\""
                problems.append(Problem(source, where, msg))
                continue
            if not isinstance(entry, dict) or not _number(entry.get("null")):
                problems.append(Problem(source, where, "expected {\"null\": steps/s >= 0, ...}"))
                continue
            row = {"null": float(entry["null"])}
            for other_text, pair in entry.items():
                if other_text == "null":
                    continue
                other = _gavel_key(other_text)
                if other is None or not (isinstance(pair, list) and len(pair) == 2
                                         and all(_number(v) for v in pair)):
                    msg = "expected \"('<model>', <s>)\": [steps/s, steps/s of the other job]"
                    problems.append(Problem(source, f"{where}[{other_text!r}]", msg))
                    continue
                row[other] = [float(pair[0]), float(pair[1])]
            table[gpu][key] = row
    if problems:
        raise InstanceError(problems)
    return table


def single_gpu_models(table: GavelTable, gpu_types=GAVEL_GPU_TYPES) -> list[str]:
    """Gavel's single-GPU job templates: models whose (model, 1) entry has nonzero isolated
    throughput on every one of `gpu_types` (26 in Gavel's file), sorted."""
    return sorted(m for (m, s) in table[gpu_types[0]]
                  if s == 1 and all(table[g].get((m, 1), {}).get("null", 0) > 0 for g in gpu_types))


def gavel_performance(source: str | os.PathLike | GavelTable, gpu_types=None, *,
                      labels=None, colocation: bool = True) -> dict:
    """The `performance` section from Gavel's table (a path, or `read_gavel_throughputs`' result).

    `throughput[label][gpu]`: isolated steps/s ("null"); `unconsolidated[label][gpu]`: the same
    from `<gpu>_unconsolidated`, for s > 1 where present; colocated: `colocated_pairs`.
    `gpu_types` default: every worker type in the file except *_unconsolidated, v100, p100,
    k80 first. `labels` (optional) keeps only those job types.
    """
    name = "<table>" if isinstance(source, dict) else str(source)
    table = source if isinstance(source, dict) else read_gavel_throughputs(source)
    order = {g: i for i, g in enumerate(GAVEL_GPU_TYPES)}
    base = sorted((g for g in table if not g.endswith(UNCONSOLIDATED)),
                  key=lambda g: order.get(g, len(order)))
    gpu_types = list(gpu_types or base)
    missing = [g for g in gpu_types if g not in base]
    if missing:
        msg = f"no worker type {', '.join(map(repr, missing))} in the file; it has {', '.join(base)}"
        raise InstanceError([Problem(name, "", msg)])
    keys = list(dict.fromkeys(k for g in gpu_types for k in table[g]))
    if labels is not None:
        wanted = set(labels)
        keys = [k for k in keys if label(*k) in wanted]
    throughput, unconsolidated = {}, {}
    for key in keys:
        throughput[label(*key)] = {g: table[g][key]["null"] for g in gpu_types if key in table[g]}
        rows = {g: table[g + UNCONSOLIDATED][key]["null"] for g in gpu_types
                if key[1] > 1 and key in table.get(g + UNCONSOLIDATED, {})}
        if rows:
            unconsolidated[label(*key)] = rows
    section = {"throughput": throughput}
    if unconsolidated:
        section["unconsolidated"] = unconsolidated
    pairs = colocated_pairs(table, gpu_types, keys) if colocation else []
    if pairs:
        section["colocated"] = pairs
    return section


def _pair_rates(rows: dict, a: GavelKey, b: GavelKey) -> list[float] | None:
    """[a's steps/s, b's steps/s] sharing, from a's entry or else b's (reversed); None if neither."""
    if b in rows.get(a, {}):
        return list(rows[a][b])
    if a in rows.get(b, {}):
        return list(reversed(rows[b][a]))
    return None


def colocated_pairs(table: GavelTable, gpu_types, keys) -> list[dict]:
    """Every pair entry of Gavel's table among `keys`, on each of `gpu_types`, as
    `performance.colocated` entries: each unordered pair of job types once (labels sorted,
    same-type pairs included), only pairs of equal scale factor (the only ones Gavel pairs).

    Gavel's [0, 0] is a measurement, "these two jobs cannot share these GPUs" (Gavel measured
    no multi-GPU pair that can), and is kept as [0, 0]. A pair's entry in `<gpu>_unconsolidated`
    that differs from its `<gpu>` one is kept as the entry's `unconsolidated` rates (never the
    case in Gavel's file, where the two tables hold the same pairs)."""
    out = []
    for g in gpu_types:
        rows, loose = table[g], table.get(g + UNCONSOLIDATED, {})
        present = sorted((k for k in keys if k in rows), key=lambda k: label(*k))
        for i, a in enumerate(present):
            for b in present[i:]:
                if b[1] != a[1]:
                    continue
                rates = _pair_rates(rows, a, b)
                if rates is None:
                    continue
                entry = {"types": [label(*a), label(*b)], "gpu_type": g, "throughput": rates}
                other = _pair_rates(loose, a, b)
                if other is not None and other != rates:
                    entry["unconsolidated"] = other
                out.append(entry)
    return out


def subset_performance(performance: dict, labels=None, gpu_types=None, *,
                       colocation: bool = True) -> dict:
    """`performance` restricted to the job types `labels` and the GPU types `gpu_types` (None:
    all): throughput, unconsolidated, and the colocated pairs among them. cpu_time is dropped
    (it is keyed by job id, not job type)."""
    def keep(k: str) -> bool:
        return labels is None or k in labels

    def rows(table: dict) -> dict:
        out = {k: {g: x for g, x in r.items() if gpu_types is None or g in gpu_types}
               for k, r in table.items() if keep(k)}
        return {k: r for k, r in out.items() if r}

    labels = None if labels is None else set(labels)
    out = {"throughput": rows(performance.get("throughput", {}))}
    uncons = rows(performance.get("unconsolidated", {}))
    pairs = [dict(p) for p in performance.get("colocated", []) if colocation and all(map(keep, p["types"]))
             and (gpu_types is None or p["gpu_type"] in gpu_types)]
    return out | ({"unconsolidated": uncons} if uncons else {}) | ({"colocated": pairs} if pairs else {})


def load_performance(path: str | os.PathLike, gpu_types=None, colocation: bool = True) -> dict:
    """The performance section in `path`: Gavel's throughput file, or a schedopt instance file
    (e.g. written by `schedopt import gavel-throughputs`), restricted to `gpu_types`."""
    from schedopt.instance import instance_to_dict, load_instance
    from schedopt.instance.load import read_document

    doc = read_document(path)
    if not (isinstance(doc, dict) and "format" in doc):
        return gavel_performance(path, gpu_types, colocation=colocation)
    perf = instance_to_dict(load_instance(path)).get("performance", {})
    table = perf.get("throughput", {})
    missing = [g for g in gpu_types or () if all(g not in row for row in table.values())]
    if missing or not table:
        msg = f"expected steps/s on GPU type(s) {', '.join(map(repr, missing or gpu_types or ['any']))}"
        raise InstanceError([Problem(str(path), "performance.throughput", msg)])
    return subset_performance(perf, None, gpu_types, colocation=colocation)


def reference_gpu(performance: dict, gpu_types=None) -> str:
    """The fastest GPU type on average: the largest mean over job types of steps/s divided by
    that job type's best steps/s (so fast models do not dominate). Gavel's table gives v100."""
    rows = [r for r in performance["throughput"].values() if max(r.values(), default=0) > 0]
    gpu_types = list(gpu_types or dict.fromkeys(g for r in rows for g in r))
    speed = {g: sum(r.get(g, 0) / max(r.values()) for r in rows) for g in gpu_types}
    return max(gpu_types, key=lambda g: speed[g])


def job_types_by_scale_factor(performance: dict, counts: dict, reference: str) -> dict[int, list[str]]:
    """{s: sorted labels} of the job types a generator may draw for a job of s GPUs: the
    labels '<model>' / '<model> x<s>' of single-GPU templates (models whose scale-factor-1 row
    is > 0 on every GPU type in `counts`) whose row is > 0 on `reference` and on some GPU type
    with at least s GPUs (so the job can run somewhere and its total_steps are defined)."""
    table = performance["throughput"]
    templates = {k for k, r in table.items() if parse_label(k)[1] == 1
                 and all(r.get(g, 0) > 0 for g in counts)}
    out: dict[int, list[str]] = {}
    for k in sorted(table):
        model, s = parse_label(k)
        row = table[k]
        if model in templates and row.get(reference, 0) > 0 and any(
                row.get(g, 0) > 0 and n >= s for g, n in counts.items()):
            out.setdefault(s, []).append(k)
    return out
