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
from schedopt.mechanism.rounds import NEVER_RUN_BOOST, Pairs
from schedopt.simulation.checkpoint import (checkpointing, copy_memory, prefix, restore,
                                            saved_shape, set_random_state)
from schedopt.simulation.common import (SimulationConfig, SimulationResult, TraceArrays,
                                        check_packed, check_round_budget, check_rounds_run, decide,
                                        finish, isolated_throughput, learner_for, no_pairs,
                                        policy_of, progress_bar)

if TYPE_CHECKING:
    from schedopt.core.policy import Policy
    from schedopt.simulation.checkpoint import Checkpoints

# Policies Gavel treats as heterogeneity-agnostic: GPU types visited in a shuffled order (§3.3).
SHUFFLED = {"max_min_fairness_agnostic", "min_makespan_agnostic", "finish_time_fairness_agnostic",
            "fifo_agnostic", "isolated"}
NOT_WORK_CONSERVING = {"fifo", "fifo_agnostic"}  # FIFO skips priority-0 entries (§3.3)


def choose_jobs(order: list[int], priority: np.ndarray, deficit: np.ndarray, X: np.ndarray,
                T: np.ndarray, scale: np.ndarray, capacity: np.ndarray,
                skip_zero_priority: bool, pairs: Pairs | None = None) -> dict[int, int]:
    """§3.3 selection: per type in `order`, entries sorted by (priority, deficit, X) descending
    (ties by index), lists concatenated and walked greedily; returns {entry index: type}. The
    entries are the jobs, then with `pairs` (§3.5) one row per pair (rows M.. of the arrays; a
    pair's T is the smaller of its two rates), taken only when neither of its jobs is yet."""
    left = capacity.astype(float).copy()
    chosen: dict[int, int] = {}
    M = T.shape[0] - (0 if pairs is None else pairs.size)
    first = [] if pairs is None else pairs.first.tolist()
    second = [] if pairs is None else pairs.second.tolist()
    busy: set[int] = set()
    for w in order:
        ranked = np.lexsort((-X[:, w], -deficit[:, w], -priority[:, w]))  # stable: ties by index
        for e in ranked:
            if left[w] <= 0:
                break
            e = int(e)
            members = (e,) if e < M else (first[e - M], second[e - M])
            if not busy.isdisjoint(members) or T[e, w] <= 0 or scale[e] > left[w]:
                continue
            if skip_zero_priority and priority[e, w] <= 0:
                continue
            chosen[e] = w
            busy.update(members)
            left[w] -= scale[e]
    return chosen


def run_gavel(trace: Instance, policy: "str | Policy", config: SimulationConfig,
              progress: bool = False, checkpoints: "Checkpoints | None" = None
              ) -> SimulationResult:
    """The run; `checkpoints` (schedopt.simulation.checkpoint) resumes it from a saved state
    (the shuffle's random state included) and writes its state at the start of rounds (and
    when it is interrupted)."""
    name = policy_of(policy).name
    data = TraceArrays(trace, config.perf_error, config.seed)
    packed = check_packed(data, policy, config)
    check_round_budget(trace, data, config, packed)
    learner = learner_for(trace, data, config, packed, policy, checkpoints)
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
    # §3.5 packed policies: the allocation's pairs (global job indices, GPU type, fraction,
    # seconds run since the reset, as job_time), and for each running job its pair (-1: alone)
    pairs = no_pairs("time", "rate")
    run_pair = running
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
        run_pair = np.full(running.size, -1)
        if packed is not None:
            pairs = {key: np.asarray(value) for key, value in saved["pairs"].items()}
            run_pair = restore(saved, run_pair=saved_shape(saved, "run_pair", run_pair))[0]
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
                "shuffler": shuffler.getstate(),
                **({} if packed is None else {
                    "pairs": {key: value.copy() for key, value in pairs.items()},
                    "run_pair": run_pair})}

    bar = progress_bar(N, progress)
    bar.update(int(N - np.isnan(completion).sum()))
    with checkpointing(checkpoints):
        while N and np.isnan(completion).any():
            if checkpoints is not None:
                checkpoints.tick(snapshot)
            check_rounds_run(rounds, config, now)
            if running.size:  # §3 steps 2-3: the round ends when its last job ends
                start = now
                now = float(run_finish.max())
                exec_time = run_finish - start
                alone = run_pair < 0
                job_time[running[alone], run_type[alone]] += exec_time[alone]
                np.add.at(worker_time, run_type[alone], exec_time[alone])
                np.add.at(busy, run_type[alone], data.scale[running[alone]] * exec_time[alone])
                if not alone.all():  # a pair counts once, for as long as its longer job ran
                    held = np.zeros(pairs["time"].size)
                    np.maximum.at(held, run_pair[~alone], exec_time[~alone])
                    ran = np.unique(run_pair[~alone])
                    pairs["time"][ran] += held[ran]
                    np.add.at(worker_time, pairs["gpu"][ran], held[ran])
                    np.add.at(busy, pairs["gpu"][ran], data.scale[pairs["first"][ran]] * held[ran])
                steps[running] += run_steps
                done = steps[running] >= data.total[running]
                completion[running[done]] = run_finish[done]
                need_update |= bool(done.any())
                bar.update(int(done.sum()))
                bar.simulated_time(now)
                gpus_held = data.scale[running].sum() - data.scale[running[~alone]].sum() / 2
                rounds.append((start, now - start, int(running.size), int(gpus_held)))
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
                worker_time[:] = half * (active.size + _equal_scale_pairs(data.scale[active])
                                         if packed is not None else active.size)
                last_reset = now
                X[:] = 0.0
                X[active], decided = decide(data, active, capacity, now, steps, iso_time, policy,
                                            config, solve_seconds, memory, packed, learner)
                if decided is not None:
                    pairs = {key: decided[key] for key in ("first", "second", "gpu", "fraction")}
                    pairs["time"] = np.full(decided["fraction"].size, half)
                    pairs["rate"] = np.minimum(decided["rate_first"], decided["rate_second"])
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
            *entries, together, alive = _entries(pairs, active, completion, worker_time,
                                                 priority, deficit[active], X[active],
                                                 data.T[active], data.scale[active])
            chosen = choose_jobs(order, *entries, capacity, name in NOT_WORK_CONSERVING,
                                 together)
            M = active.size
            placed = [(int(active[i]), w, -1) for i, w in chosen.items()
                      if i < M and in_X[active[i]]]  # §3.4
            if together is not None:
                for e in [e for e in chosen if e >= M]:  # both jobs of a pair, §3.5
                    p = int(alive[e - M])  # the pair's index in `pairs`
                    placed += [(int(pairs["first"][p]), chosen[e], p),
                               (int(pairs["second"][p]), chosen[e], p)]
            running = np.array([m for m, _, _ in placed], dtype=int)
            run_type = np.array([w for _, w, _ in placed], dtype=int)
            run_pair = np.array([p for _, _, p in placed], dtype=int)
            thr = data.T[running, run_type]
            paired = run_pair >= 0
            partner = np.full(running.size, -1)
            if paired.any():
                partner[paired] = np.where(running[paired] == pairs["first"][run_pair[paired]],
                                           pairs["second"][run_pair[paired]],
                                           pairs["first"][run_pair[paired]])
                thr[paired] = data.pairs.rate_of(run_type[paired], running[paired],
                                                 partner[paired])
            if learner is not None and learner.observe(running, run_type, thr, partner):
                need_update = True
            remaining = data.total[running] - steps[running]
            run_steps = np.minimum(np.floor(thr * config.round_seconds), remaining)  # §3 step 6
            with np.errstate(divide="ignore", invalid="ignore"):  # 0 steps/s: the round's length
                run_finish = np.where(thr > 0, now + run_steps / thr, now + config.round_seconds)
            iso = isolated_throughput(data.T[active], data.scale[active], capacity)
            iso_time[running] += run_steps / iso[np.searchsorted(active, running)]
            idle_rounds = idle_rounds + 1 if running.size == 0 and not (~arrived).any() else 0
            if idle_rounds > 2:
                raise SchedoptError(f"jobs {', '.join(data.ids[active][:5])} can never run")
    bar.close()
    return finish(policy, config, data, completion, iso_time, steps, busy, capacity,
                  solve_seconds, rounds, learner)


def _equal_scale_pairs(scale: np.ndarray) -> int:
    """How many pairs of jobs have equal scale factors: Gavel keeps a time account for each
    (§3.5), and they count in the worker time of a reset."""
    counts = np.bincount(scale)
    return int((counts * (counts - 1) // 2).sum())


def _entries(pairs: dict, active: np.ndarray, completion: np.ndarray, worker_time: np.ndarray,
             priority: np.ndarray, deficit: np.ndarray, X: np.ndarray, T: np.ndarray,
             scale: np.ndarray) -> tuple:
    """choose_jobs' (priority, deficit, X, T, scale, pairs) over the active jobs and, §3.5,
    the allocation's pairs whose jobs are both unfinished: a pair's priority is its fraction
    over its share of the worker time, its deficit 0. Then the pairs as `Pairs` over local
    indices (None: no pair) and each one's index into `pairs`."""
    alive = np.flatnonzero(np.isnan(completion[pairs["first"]])
                           & np.isnan(completion[pairs["second"]]))
    if alive.size == 0:
        return priority, deficit, X, T, scale, None, alive
    gpu, fraction = pairs["gpu"][alive], pairs["fraction"][alive]
    together = Pairs(np.searchsorted(active, pairs["first"][alive]),
                     np.searchsorted(active, pairs["second"][alive]), gpu, fraction,
                     pairs["time"][alive])
    share = np.divide(pairs["time"][alive], worker_time[gpu], out=np.zeros(alive.size),
                      where=worker_time[gpu] > 0)
    pair_priority = np.where(share > 0, fraction / np.where(share > 0, share, 1.0),
                             fraction * NEVER_RUN_BOOST)
    return (together.entry_matrix(priority, pair_priority),
            together.entry_matrix(deficit, np.zeros(alive.size)),
            together.entry_matrix(X, fraction),
            together.entry_matrix(T, pairs["rate"][alive]),
            np.concatenate([scale, scale[together.first]]), together, alive)
