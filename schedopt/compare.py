"""Compare policies by simulation: one trace under several policies, or a sweep over load.

    table, jobs = compare(trace, ["max_min_fairness", "max_min_fairness_agnostic"])
    table.loc["max_min_fairness", "average_jct_s"]      # one row per policy, summary metrics
    jobs["max_min_fairness"]                             # that policy's per-job frame

    sweep = load_sweep(performance, cluster, [1, 2, 4], policies, num_jobs=100, seed=0)
    # one row per (rate, policy): average JCT of the same synthetic trace under each policy

Times are seconds unless a column name says hours (`_h`); rates are jobs per hour.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from tqdm import tqdm

from schedopt.errors import PolicyError, SchedoptError
from schedopt.executors import EXECUTORS, connected_ray, drop_pool, process_pool
from schedopt.instance.model import Instance
from schedopt.core.decisions import DecisionKind
from schedopt.core.registry import resolve
from schedopt.simulation import SimulationConfig, SimulationResult, simulate
from schedopt.simulation.checkpoint import (CheckpointError, decode, encode, fingerprint,
                                            read_checkpoint, trace_fingerprint)

__all__ = ["Comparison", "compare", "load_sweep", "run_number", "summary_row", "window_jct",
           "SimulationTask", "run_simulations", "FinishedRuns", "EXECUTORS"]



class Comparison(NamedTuple):
    """table: one row per policy (index `policy`), the columns of `summary_row`;
    jobs: policy -> that run's per-job frame (`SimulationResult.jobs`);
    results: policy -> the whole SimulationResult (rounds, config)."""

    table: pd.DataFrame
    jobs: dict[str, pd.DataFrame]
    results: dict[str, SimulationResult]


def summary_row(summary: dict, gpu_counts: dict[str, int]) -> dict:
    """A run's `summary` as one flat row: every scalar key as is (seconds); for allocation runs
    `utilization_<type>` per GPU type and `utilization`: busy GPU-seconds over (all GPUs x
    makespan), i.e. the per-type utilizations weighted by `gpu_counts` (GPU type -> GPUs).
    Lease runs keep their scalar utilization (of the pool); queue runs their
    utilization_gpu / utilization_cpu. Dict-valued keys other than utilization (per-user JCT)
    are left out."""
    row = {key: value for key, value in summary.items() if not isinstance(value, dict)}
    per_type = summary.get("utilization")
    if not isinstance(per_type, dict):
        return row
    for gpu_type, value in per_type.items():
        row[f"utilization_{gpu_type}"] = value
    weights = np.array([gpu_counts[t] for t in per_type], dtype=float)
    values = np.array(list(per_type.values()), dtype=float)
    row["utilization"] = float(values @ weights / weights.sum()) if weights.sum() else 0.0
    return row


def compare(trace: Instance, policies: list[str], config: SimulationConfig = SimulationConfig(),
            progress: bool = False, executor: str = "serial",
            checkpoint: str | os.PathLike | None = None,
            resume: str | os.PathLike | None = None) -> Comparison:
    """Simulate `trace` under each of `policies` (names as `schedopt policies` lists them,
    gavel:NAME or MODULE:NAME; policies of any decision kind) with the same `config`;
    `progress` shows a bar over the simulations. `executor`: how the independent simulations
    run ("serial", "process": one per core, "ray": on the Ray cluster at RAY_ADDRESS, else a
    local one); the results are the same. `checkpoint`: a file where each finished simulation
    is saved as it ends; `resume`: such a file, whose runs are not simulated again."""
    _check_policies(policies)
    _check_executor(executor)
    tasks = [SimulationTask(policy, trace, policy, config) for policy in policies]
    store = FinishedRuns.open("compare", {"trace": trace_fingerprint(trace), "policies": policies,
                                          "config": _config_fields(config)}, checkpoint, resume)
    with simulations_bar(len(tasks), progress) as bar:
        results = run_simulations(tasks, executor, bar, store)
    return _comparison(trace, results)


def _comparison(trace: Instance, results: dict[str, SimulationResult]) -> Comparison:
    counts = {name: t.count for name, t in trace.cluster.gpu_types.items()}
    table = pd.DataFrame([summary_row(r.summary, counts) for r in results.values()],
                         index=pd.Index(list(results), name="policy"))
    return Comparison(table, {p: r.jobs for p, r in results.items()}, results)


def window_jct(jobs: pd.DataFrame, window: tuple[int, int] | None = None) -> np.ndarray:
    """JCTs (s) of the jobs `window[0]` up to, not including, `window[1]` in arrival order (ties
    in trace order), as Gavel's experiments measure steady state; all jobs when None."""
    jct = jobs.sort_values("arrival_s", kind="stable")["jct_s"].to_numpy()
    if window is None:
        return jct
    _check_window(window, len(jct))
    return jct[window[0]:window[1]]


def load_sweep(performance: dict, cluster: dict, rates_jobs_per_hour: list[float],
               policies: list[str], num_jobs: int, seed: int = 0,
               config: SimulationConfig = SimulationConfig(), window: tuple[int, int] | None = None,
               progress: bool = False, executor: str = "serial",
               checkpoint: str | os.PathLike | None = None,
               resume: str | os.PathLike | None = None, **trace_options) -> pd.DataFrame:
    """Average JCT against load: for each rate, one `synthetic_trace(performance, cluster,
    num_jobs, rate, seed, **trace_options)` simulated under every policy (the same trace for
    each policy; the same seed at every rate, so only the arrival gaps scale with 1/rate).

    `window=(start, end)` averages JCT over jobs start..end-1 in arrival order only (measure
    steady state, leaving out the warm-up and the drain after the last arrival); default all.
    trace_options: `single_gpu`, `reference`, `deadline_factor` of `synthetic_trace`.
    executor, checkpoint and resume as for `compare` (a run is one (rate, policy) simulation).

    Rows (rate, policy) with columns rate_jobs_per_hour, policy, jobs_measured, average_jct_s,
    average_jct_h, p90_jct_s (over the window), makespan_s, utilization, rho_max,
    solve_seconds_mean (over the whole run).
    """
    from schedopt.traces import synthetic_trace

    _check_policies(policies)
    if not rates_jobs_per_hour:
        raise SchedoptError("give at least one arrival rate (jobs/hour)")
    if window is not None:
        _check_window(window, num_jobs)  # before any simulation
    _check_executor(executor)
    trace_options.setdefault("colocation", False)  # the simulator does not co-locate jobs
    traces = {rate: synthetic_trace(performance, cluster, num_jobs, rate, seed, **trace_options)
              for rate in rates_jobs_per_hour}
    tasks = [SimulationTask(f"{rate!r}|{policy}", traces[rate], policy, config)
             for rate in rates_jobs_per_hour for policy in policies]
    store = FinishedRuns.open("sweep", {
        "traces": {repr(rate): trace_fingerprint(trace) for rate, trace in traces.items()},
        "policies": policies, "config": _config_fields(config)}, checkpoint, resume)
    with simulations_bar(len(tasks), progress) as bar:
        results = run_simulations(tasks, executor, bar, store)
    rows = []
    for rate in rates_jobs_per_hour:
        table, jobs, _ = _comparison(traces[rate], {p: results[f"{rate!r}|{p}"] for p in policies})
        for policy in policies:
            jct = window_jct(jobs[policy], window)
            row = table.loc[policy]
            rows.append({
                "rate_jobs_per_hour": float(rate), "policy": policy,
                "jobs_measured": int(jct.size), "average_jct_s": float(jct.mean()),
                "average_jct_h": float(jct.mean()) / 3600.0,
                "p90_jct_s": float(np.percentile(jct, 90)),
                "makespan_s": float(row["makespan_s"]),
                "utilization": run_number(row, "utilization"),
                "rho_max": run_number(row, "rho_max"),
                "solve_seconds_mean": run_number(row, *SOLVE_SECONDS),
            })
    return pd.DataFrame(rows)


# Where a run's summary keeps the policy's calls and their mean / max seconds, by decision kind
# (allocations, leases, queues).
SOLVES = ("policy_solves", "leases", "decisions")
SOLVE_SECONDS = ("solve_seconds_mean", "decide_seconds_mean")
SOLVE_SECONDS_MAX = ("solve_seconds_max", "decide_seconds_max")


def run_number(row, *keys: str) -> float | None:
    """The first of `keys` the row has, as a float (None when none has a number)."""
    for key in keys:
        value = row.get(key)
        if value is not None and not pd.isna(value):
            return float(value)
    return None


def simulations_bar(total: int, enabled: bool) -> tqdm:
    """A tqdm bar (on stderr) over `total` simulations when `enabled`, else a silent one."""
    return tqdm(total=total, unit="sim", desc="simulations", disable=not enabled)


def _check_policies(policies: list[str]) -> None:
    if not policies:
        raise SchedoptError("give at least one policy to compare")
    twice = sorted({p for p in policies if policies.count(p) > 1})
    if twice:
        raise SchedoptError(f"policy listed more than once: {', '.join(twice)}")
    for policy in policies:
        resolve(policy)  # PolicyError (one line) for an unknown name, before any simulation


def _check_window(window: tuple[int, int], num_jobs: int) -> None:
    start, end = window
    if not 0 <= start < end <= num_jobs:
        raise SchedoptError(f"window {start}:{end} must satisfy 0 <= start < end <= the number "
                            f"of jobs ({num_jobs})")


def _check_executor(executor: str) -> None:
    if executor not in EXECUTORS:
        raise SchedoptError(f"unknown executor {executor!r}; expected one of "
                            f"{', '.join(EXECUTORS)}")


def _config_fields(config: SimulationConfig) -> dict:
    """The config's fields that decide a run's numbers (all but the executor)."""
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
            if f.name != "executor"}


# ------------------------------------------------------------ independent simulations as tasks


@dataclass(frozen=True)
class SimulationTask:
    """One simulation: `trace` under `policy` with `config`; `key` names it in the results and
    in a checkpoint of finished runs."""

    key: str
    trace: Instance
    policy: str
    config: SimulationConfig


def run_simulations(tasks: list[SimulationTask], executor: str = "serial",
                    bar: tqdm | None = None, store: "FinishedRuns | None" = None
                    ) -> dict[str, SimulationResult]:
    """{task key: result} in the order of `tasks`. executor: "serial" (here, one after the
    other), "process" (a pool of worker processes, one per core), "ray" (Ray tasks on the
    cluster at RAY_ADDRESS, or a local Ray). Every simulation is deterministic, so the results
    are those of the serial run. `bar` advances as simulations finish; `store` skips the tasks
    it already holds and saves each one that finishes."""
    _check_executor(executor)
    results = {} if store is None else {t.key: _as_run_of(store.done[t.key], t) for t in tasks
                                        if t.key in store.done}
    if bar is not None:
        bar.update(len(results))
    todo = [t for t in tasks if t.key not in results]

    def finished(task: SimulationTask, result: SimulationResult) -> None:
        results[task.key] = result
        if store is not None:
            store.add(task.key, result)
        if bar is not None:
            bar.update(1)

    if executor == "serial" or len(todo) <= 1:
        for task in todo:
            finished(task, simulate(task.trace, task.policy, task.config))
    elif executor == "process":
        _run_in_processes(todo, finished)
    else:
        _run_on_ray(todo, finished)
    return {t.key: results[t.key] for t in tasks}


def _as_run_of(result: SimulationResult, task: SimulationTask) -> SimulationResult:
    """A run read from a checkpoint with its task's config and parsed policy options."""
    options = None
    if result.kind is not DecisionKind.ALLOCATION:
        chosen, fixed = resolve(task.policy)
        options = chosen.parse_options({**fixed, **task.config.policy_options})
    return dataclasses.replace(result, config=task.config, options=options)


def _simulate_document(document: dict, policy: str, config: SimulationConfig) -> SimulationResult:
    """A worker's simulation: the trace travels as its instance document (an Instance holds
    read-only mappings, which do not pickle)."""
    from schedopt.instance import parse_instance

    return simulate(parse_instance(document), policy, config)


def _documents(tasks: list[SimulationTask]) -> list[dict]:
    from schedopt.instance.save import instance_to_dict

    made: dict[int, dict] = {}
    return [made.setdefault(id(t.trace), instance_to_dict(t.trace)) for t in tasks]


def _run_in_processes(tasks: list[SimulationTask], finished) -> None:
    from concurrent.futures import as_completed
    from concurrent.futures.process import BrokenProcessPool

    workers = max(1, min(len(tasks), os.cpu_count() or 1))
    pool = process_pool(workers)
    futures = {pool.submit(_simulate_document, document, task.policy, task.config): task
               for task, document in zip(tasks, _documents(tasks))}
    try:
        for future in as_completed(futures):
            finished(futures[future], future.result())
    except BrokenProcessPool:
        drop_pool(workers)
        raise PolicyError("a simulation worker process died; policies given as MODULE:NAME "
                          "must be importable there, else use executor 'serial'") from None
    finally:
        for future in futures:
            future.cancel()


def _run_on_ray(tasks: list[SimulationTask], finished) -> None:
    ray = connected_ray()
    remote = ray.remote(_simulate_document)
    pending = {remote.remote(document, task.policy, task.config): task
               for task, document in zip(tasks, _documents(tasks))}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for reference in ready:
                finished(pending.pop(reference), ray.get(reference))
    finally:
        for reference in pending:
            ray.cancel(reference)


# ------------------------------------------------------------------ checkpoint of finished runs

RUNS_FORMAT = "schedopt-runs-checkpoint/1"


class FinishedRuns:
    """The simulations of a compare or sweep that have finished, saved (atomically) to `path`
    after each one as a `schedopt-runs-checkpoint/1` JSON document: the command, the sha256 of
    its traces, policies and config, and per run its summary and frames (columns as in
    `schedopt.simulation.checkpoint`, floats bit for bit). Loading it runs no code."""

    def __init__(self, command: str, sha: str, path: Path | None, done: dict):
        self.command, self.sha, self.path = command, sha, path
        self.done: dict[str, SimulationResult] = done
        self._saved: dict[str, dict] = {}

    @classmethod
    def open(cls, command: str, identity: dict, checkpoint, resume) -> "FinishedRuns | None":
        """None when neither `checkpoint` nor `resume` is given; else the runs `resume` holds
        (CheckpointError in one line when it is another command's, traces' or options'), to be
        saved to `checkpoint` (default: the `resume` file)."""
        if checkpoint is None and resume is None:
            return None
        sha = fingerprint(identity)
        store = cls(command, sha, Path(checkpoint if checkpoint is not None else resume), {})
        if resume is not None:
            document = read_checkpoint(resume, RUNS_FORMAT)
            if document.get("command") != command or document.get("sha256") != sha:
                raise CheckpointError(f"{resume}: the checkpoint belongs to another {command} "
                                      f"(other traces, policies or options); resume with the "
                                      f"same ones")
            runs = document.get("runs")
            if not isinstance(runs, dict):
                raise CheckpointError(f"{resume}: corrupt checkpoint (runs missing)")
            for key, saved in runs.items():
                store.done[key] = _result_from(decode(saved), key)
                store._saved[key] = saved
        return store

    def add(self, key: str, result: SimulationResult) -> None:
        self.done[key] = result
        self._saved[key] = encode(_result_to(result))
        if self.path is not None:
            from schedopt.files import write_atomically

            document = {"format": RUNS_FORMAT, "command": self.command, "sha256": self.sha,
                        "runs": self._saved}
            write_atomically(self.path, json.dumps(document, separators=(",", ":")),
                             what="checkpoint")


def _frame_to(frame: pd.DataFrame | None) -> dict | None:
    if frame is None:
        return None
    columns = [frame.index.to_series(), *(frame[c] for c in frame.columns)]
    return {"index": frame.index.name, "names": [str(c) for c in frame.columns],
            "dtypes": [str(c.dtype) for c in columns],
            "columns": [c.to_numpy() if c.dtype.kind in "fiub" and isinstance(c.dtype, np.dtype)
                        else [None if pd.isna(v) else v for v in c.tolist()] for c in columns]}


def _frame_from(saved: dict | None) -> pd.DataFrame | None:
    if saved is None:
        return None
    series = [pd.Series(values).astype(dtype if dtype != "object" else object)
              for values, dtype in zip(saved["columns"], saved["dtypes"])]
    frame = pd.DataFrame({name: s.to_numpy() if isinstance(s.dtype, np.dtype) else s.array
                          for name, s in zip(saved["names"], series[1:])})
    frame.index = pd.Index(series[0].array, name=saved["index"])
    return frame


def _result_to(result: SimulationResult) -> dict:
    return {"policy": result.policy, "kind": result.kind.value, "summary": result.summary,
            "jobs": _frame_to(result.jobs), "rounds": _frame_to(result.rounds),
            "leases": _frame_to(result.leases), "decisions": _frame_to(result.decisions)}


def _result_from(saved: dict, key: str) -> SimulationResult:
    """A saved run as a SimulationResult (its options parsed again from the policy)."""
    try:
        kind = DecisionKind(saved["kind"])
        return SimulationResult(saved["policy"], _frame_from(saved["jobs"]), saved["summary"],
                                _frame_from(saved["rounds"]), None, kind,
                                _frame_from(saved["leases"]), _frame_from(saved["decisions"]))
    except (KeyError, TypeError, ValueError, IndexError):
        raise CheckpointError(f"corrupt checkpoint (run {key!r} cannot be read)") from None
