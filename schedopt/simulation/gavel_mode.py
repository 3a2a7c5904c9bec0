"""The conventions of Gavel's reference simulator (mode "gavel"), so that JCT and makespan can
be compared with the numbers its own code reports. docs/gavel-simulator.md is the spec; the
section numbers below refer to it.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import numpy as np

from schedopt.errors import SchedoptError
from schedopt.instance.model import Instance
from schedopt.mechanism.rounds import NEVER_RUN_BOOST
from schedopt.simulation.checkpoint import (checkpointing, copy_memory, prefix, restore,
                                            saved_shape, set_random_state)
from schedopt.simulation.common import (SimulationConfig, SimulationResult, TraceArrays, finish,
                                        isolated_throughput, policy_of, progress_bar,
                                        solve_policy)

if TYPE_CHECKING:
    from schedopt.core.policy import Policy
    from schedopt.simulation.checkpoint import Checkpoints

# Policies Gavel treats as heterogeneity-agnostic: GPU types visited in a shuffled order (§3.3).
SHUFFLED = {"max_min_fairness_agnostic", "min_makespan_agnostic", "finish_time_fairness_agnostic",
            "fifo_agnostic", "isolated"}
NOT_WORK_CONSERVING = {"fifo", "fifo_agnostic"}  # FIFO skips priority-0 entries (§3.3)


def choose_jobs(order: list[int], priority: np.ndarray, deficit: np.ndarray, X: np.ndarray,
                T: np.ndarray, scale: np.ndarray, capacity: np.ndarray,
                skip_zero_priority: bool) -> dict[int, int]:
    """§3.3 selection: per type in `order`, jobs sorted by (priority, deficit, X) descending
    (ties by index), lists concatenated and walked greedily; returns {job index: type}."""
    left = capacity.astype(float).copy()
    chosen: dict[int, int] = {}
    for w in order:
        ranked = np.lexsort((-X[:, w], -deficit[:, w], -priority[:, w]))  # stable: ties by index
        for m in ranked:
            if left[w] <= 0:
                break
            m = int(m)
            if m in chosen or T[m, w] <= 0 or scale[m] > left[w]:
                continue
            if skip_zero_priority and priority[m, w] <= 0:
                continue
            chosen[m] = w
            left[w] -= scale[m]
    return chosen


def run_gavel(trace: Instance, policy: "str | Policy", config: SimulationConfig,
              progress: bool = False, checkpoints: "Checkpoints | None" = None
              ) -> SimulationResult:
    """The run; `checkpoints` (schedopt.simulation.checkpoint) resumes it from a saved state
    (the shuffle's random state included) and writes its state at the start of rounds (and
    when it is interrupted)."""
    name = policy_of(policy).name
    data = TraceArrays(trace, config.perf_error, config.seed)
    N, J = data.T.shape
    capacity = np.array([trace.cluster.gpu_types[t].count for t in data.types], dtype=float)
    half = config.round_seconds / 2.0
    # Gavel visits v100, p100, k80 (fastest first); in general: by mean throughput, descending.
    fastest_first = [int(j) for j in np.argsort(-data.T.mean(axis=0), kind="stable")] if N else []
    shuffler = random.Random(config.seed + 5)
    steps, completion = np.zeros(N), np.full(N, np.nan)
    arrived, in_X = np.zeros(N, dtype=bool), np.zeros(N, dtype=bool)
    X, job_time, deficit = np.zeros((N, J)), np.zeros((N, J)), np.zeros((N, J))
    worker_time, busy, iso_time = np.zeros(J), np.zeros(J), np.zeros(N)
    last_reset, need_update = 0.0, False
    solve_seconds: list[float] = []
    memory: dict = {}  # kept between re-solves: POP parts, warm-start prices
    rounds: list[tuple[float, float, int, int]] = []
    running = np.zeros(0, dtype=int)
    run_type, run_steps, run_finish = running, np.zeros(0), np.zeros(0)
    now = float(data.arrival.min()) if N else 0.0
    idle_rounds = 0
    if checkpoints is not None and checkpoints.resumed is not None:
        saved = checkpoints.resumed
        (steps, completion, arrived, in_X, X, job_time, deficit, worker_time, busy, iso_time,
         running, run_type, run_steps, run_finish) = restore(
            saved, steps=steps, completion=completion, arrived=arrived, in_X=in_X, X=X,
            job_time=job_time, deficit=deficit, worker_time=worker_time, busy=busy,
            iso_time=iso_time, running=saved_shape(saved, "running", running),
            run_type=saved_shape(saved, "run_type", run_type),
            run_steps=saved_shape(saved, "run_steps", run_steps),
            run_finish=saved_shape(saved, "run_finish", run_finish))
        last_reset, need_update, now = saved["last_reset"], saved["need_update"], saved["now"]
        idle_rounds, memory = saved["idle_rounds"], saved["memory"]
        solve_seconds, rounds = saved["solve_seconds"], [tuple(r) for r in saved["rounds"]]
        set_random_state(shuffler, saved["shuffler"])

    def snapshot() -> dict:
        return {"steps": steps.copy(), "completion": completion.copy(), "arrived": arrived.copy(),
                "in_X": in_X.copy(), "X": X.copy(), "job_time": job_time.copy(),
                "deficit": deficit.copy(), "worker_time": worker_time.copy(),
                "busy": busy.copy(), "iso_time": iso_time.copy(), "running": running,
                "run_type": run_type, "run_steps": run_steps, "run_finish": run_finish,
                "last_reset": last_reset, "need_update": need_update, "now": now,
                "idle_rounds": idle_rounds, "memory": copy_memory(memory),
                "solve_seconds": prefix(solve_seconds), "rounds": prefix(rounds),
                "shuffler": shuffler.getstate()}

    bar = progress_bar(N, progress)
    bar.update(int(N - np.isnan(completion).sum()))
    with checkpointing(checkpoints):
        while N and np.isnan(completion).any():
            if checkpoints is not None:
                checkpoints.tick(snapshot)
            if running.size:  # §3 steps 2-3: the round ends when its last job ends
                start = now
                now = float(run_finish.max())
                exec_time = run_finish - start
                job_time[running, run_type] += exec_time
                np.add.at(worker_time, run_type, exec_time)
                np.add.at(busy, run_type, data.scale[running] * exec_time)
                steps[running] += run_steps
                done = steps[running] >= data.total[running]
                completion[running[done]] = run_finish[done]
                need_update |= bool(done.any())
                bar.update(int(done.sum()))
                bar.simulated_time(now)
                rounds.append((start, now - start, int(running.size),
                               int(data.scale[running].sum())))
            elif (~arrived).any():
                now = max(now, float(data.arrival[~arrived].min()))
            if not (~arrived).any() and running.size == 0:
                last_reset = 0.0  # §3 step 1: nothing pending or running forces a recompute
            new = ~arrived & (data.arrival <= now)  # §3 step 4
            arrived |= new
            job_time[new] = half
            need_update |= bool(new.any())
            active = np.flatnonzero(arrived & np.isnan(completion))
            if active.size == 0:
                running = np.zeros(0, dtype=int)
                continue
            if need_update and (now - last_reset >= config.min_resolve_interval or last_reset == 0):
                elapsed = now - last_reset  # §3.2 reset, then recompute X
                deficit[active] += X[active] * elapsed - (job_time[active] - half)
                job_time[active] = half
                worker_time[:] = half * active.size
                last_reset = now
                X[:] = 0.0
                X[active] = solve_policy(data, active, capacity, now, steps, iso_time, policy,
                                         config, solve_seconds, memory)
                in_X[:] = False
                in_X[active] = True
                need_update = False
            with np.errstate(divide="ignore", invalid="ignore"):  # §3.3 priorities
                fraction = np.where(worker_time > 0, job_time[active] / worker_time, 0.0)
                priority = np.where(fraction > 0, X[active] / fraction, X[active] * NEVER_RUN_BOOST)
            usable = in_X[active, None] & (X[active] > 0) & (data.T[active] > 0)
            priority = np.where(usable, priority, 0.0)
            order = list(fastest_first)
            if name in SHUFFLED:
                shuffler.shuffle(order)
            chosen = choose_jobs(order, priority, deficit[active], X[active], data.T[active],
                                 data.scale[active], capacity, name in NOT_WORK_CONSERVING)
            placed = [(int(active[i]), w) for i, w in chosen.items() if in_X[active[i]]]  # §3.4
            running = np.array([m for m, _ in placed], dtype=int)
            run_type = np.array([w for _, w in placed], dtype=int)
            thr = data.T[running, run_type]
            remaining = data.total[running] - steps[running]
            run_steps = np.minimum(np.floor(thr * config.round_seconds), remaining)  # §3 step 6
            run_finish = now + run_steps / thr
            iso = isolated_throughput(data.T[active], data.scale[active], capacity)
            iso_time[running] += run_steps / iso[np.searchsorted(active, running)]
            idle_rounds = idle_rounds + 1 if running.size == 0 and not (~arrived).any() else 0
            if idle_rounds > 2:
                raise SchedoptError(f"jobs {', '.join(data.ids[active][:5])} can never run")
    bar.close()
    return finish(policy, config, data, completion, iso_time, steps, busy, capacity,
                  solve_seconds, rounds)
