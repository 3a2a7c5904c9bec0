"""The simulation loop of allocation policies (decision ALLOCATION, mode "default"): the round
mechanism of schedopt/mechanism/rounds.py on the cluster's topology.

Each round: admit arrivals; if the job set changed (and `min_resolve_interval` allows), re-solve
the policy on the active jobs and restart the time-received accounting, carrying each job's
shortfall as a deficit; place jobs with `place_round`; every placed job runs
min(round, time to finish) at its throughput (unconsolidated if its GPUs span nodes); the
round lasts as long as its longest job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from schedopt.errors import SchedoptError
from schedopt.instance.model import Instance
from schedopt.mechanism.rounds import place_round
from schedopt.simulation.checkpoint import checkpointing, copy_memory, prefix, restore
from schedopt.simulation.common import (SimulationConfig, SimulationResult, TraceArrays, finish,
                                        isolated_throughput, progress_bar, solve_policy)
from schedopt.mechanism.topology import Topology

if TYPE_CHECKING:
    from schedopt.core.policy import Policy
    from schedopt.simulation.checkpoint import Checkpoints


def run_default(trace: Instance, policy: "str | Policy", config: SimulationConfig,
                progress: bool = False, checkpoints: "Checkpoints | None" = None
                ) -> SimulationResult:
    """The run; `checkpoints` (schedopt.simulation.checkpoint) resumes it from a saved state
    and writes its state at the start of rounds (and when it is interrupted)."""
    data = TraceArrays(trace, config.perf_error, config.seed)
    topology = Topology.from_cluster(trace.cluster)
    N, J = data.T.shape
    capacity = topology.capacity
    runnable = (data.T > 0) & (data.scale[:, None] <= capacity)
    steps, completion = np.zeros(N), np.full(N, np.nan)
    arrived = np.zeros(N, dtype=bool)
    X, received, deficit = np.zeros((N, J)), np.zeros((N, J)), np.zeros((N, J))
    iso_time, busy = np.zeros(N), np.zeros(J)
    elapsed, last_solve, changed = 0.0, -np.inf, False
    previous: dict[int, tuple[int, ...]] = {}
    solve_seconds: list[float] = []
    memory: dict = {}  # kept between re-solves: POP parts, warm-start prices
    rounds: list[tuple[float, float, int, int]] = []
    t = float(data.arrival.min()) if N else 0.0
    if checkpoints is not None and checkpoints.resumed is not None:
        saved = checkpoints.resumed
        steps, completion, arrived, X, received, deficit, iso_time, busy = restore(
            saved, steps=steps, completion=completion, arrived=arrived, X=X, received=received,
            deficit=deficit, iso_time=iso_time, busy=busy)
        t, elapsed, last_solve = saved["t"], saved["elapsed"], saved["last_solve"]
        changed, previous, memory = saved["changed"], saved["previous"], saved["memory"]
        solve_seconds, rounds = saved["solve_seconds"], [tuple(r) for r in saved["rounds"]]

    def snapshot() -> dict:
        return {"t": t, "steps": steps.copy(), "completion": completion.copy(),
                "arrived": arrived.copy(), "X": X.copy(), "received": received.copy(),
                "deficit": deficit.copy(), "iso_time": iso_time.copy(), "busy": busy.copy(),
                "elapsed": elapsed, "last_solve": last_solve, "changed": changed,
                "previous": previous, "memory": copy_memory(memory),
                "solve_seconds": prefix(solve_seconds), "rounds": prefix(rounds)}

    bar = progress_bar(N, progress)
    bar.update(int(N - np.isnan(completion).sum()))
    with checkpointing(checkpoints):
        while N and np.isnan(completion).any():
            if checkpoints is not None:
                checkpoints.tick(snapshot)
            new = ~arrived & (data.arrival <= t)
            arrived |= new
            changed |= bool(new.any())
            active = np.flatnonzero(arrived & np.isnan(completion))
            if active.size == 0:
                t = float(data.arrival[~arrived].min())
                continue
            if changed and (t - last_solve >= config.min_resolve_interval or not X[active].any()):
                deficit += X * elapsed - received  # the old allocation's shortfall, carried over
                X[:] = 0.0
                X[active] = solve_policy(data, active, capacity, t, steps, iso_time, policy, config,
                                         solve_seconds, memory)
                received[:] = 0.0
                elapsed, last_solve, changed = 0.0, t, False
            position = np.searchsorted(active, list(previous))  # previous jobs' local index
            local = {int(i): g for i, (m, g) in zip(position, previous.items())
                     if i < active.size and active[i] == m}
            placement = place_round(X[active], data.scale[active], topology, received[active],
                                    elapsed, local, deficit[active], runnable[active],
                                    config.work_conserving)
            ran = np.array(sorted(placement.gpus), dtype=int)
            if ran.size == 0:
                waiting = data.arrival[~arrived]
                if waiting.size == 0:
                    raise SchedoptError(f"jobs {', '.join(data.ids[active][:5])} can never run: "
                                        f"no GPU type has room and throughput for them")
                t = max(t + config.round_seconds, float(waiting.min()))
                continue
            jobs = active[ran]
            kinds = np.array([placement.gpu_type[int(i)] for i in ran])
            spread = np.array([placement.nodes_spanned[int(i)] > 1 for i in ran])
            table = np.where(spread[:, None] & config.use_unconsolidated, data.U[jobs],
                             data.T[jobs])
            thr = table[np.arange(jobs.size), kinds]
            to_finish = (data.total[jobs] - steps[jobs]) / thr
            run = np.minimum(config.round_seconds, to_finish)
            iso = isolated_throughput(data.T[active], data.scale[active], capacity)
            iso_time[jobs] += thr * run / iso[ran]
            steps[jobs] += thr * run
            finished = to_finish <= config.round_seconds
            completion[jobs[finished]] = t + to_finish[finished]
            changed |= bool(finished.any())
            received[jobs, kinds] += run
            np.add.at(busy, kinds, data.scale[jobs] * run)
            length = float(run.max())
            elapsed += length
            rounds.append((t, length, int(jobs.size), int(data.scale[jobs].sum())))
            previous = {int(active[i]): g for i, g in placement.gpus.items()}
            t += length
            bar.update(int(finished.sum()))
            bar.simulated_time(t)
    bar.close()
    return finish(policy, config, data, completion, iso_time, steps, busy, capacity,
                  solve_seconds, rounds)
