"""The simulation loop of allocation policies (decision ALLOCATION, mode "default"): the round
mechanism of schedopt/mechanism/rounds.py on the cluster's topology.

Each round: admit arrivals; if the job set changed (and `min_resolve_interval` allows), re-solve
the policy on the active jobs and restart the time-received accounting, carrying each job's
shortfall as a deficit; place jobs with `place_round`; every placed job runs
min(round, time to finish) at its throughput (unconsolidated if its GPUs span nodes); the
round lasts as long as its longest job.

Packed (space-sharing) policies: the policy is given the trace's co-location table (or, when
throughputs are learned, the current estimate: `schedopt.simulation.learning`) and decides each
job's time alone and the pairs that share GPUs (`PairedAllocation`). The mechanism places a pair
as one entry on s GPUs (`schedopt.mechanism.rounds.Pairs`); both of its jobs then run for
min(round, time to finish) at their true pair rates, and the pair holds its GPUs as long as the
longer of the two. Pairs with a job that finished are dropped until the next re-solve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from schedopt.errors import SchedoptError
from schedopt.instance.model import Instance
from schedopt.mechanism.rounds import Pairs, place_round
from schedopt.simulation.checkpoint import checkpointing, copy_memory, prefix, restore
from schedopt.simulation.common import (SimulationConfig, SimulationResult, TraceArrays,
                                        check_packed, check_round_budget, check_rounds_run, decide,
                                        finish, isolated_throughput, learner_for, no_pairs,
                                        progress_bar)
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
    packed = check_packed(data, policy, config)
    check_round_budget(trace, data, config, packed)
    learner = learner_for(trace, data, config, packed, policy, checkpoints)
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
    # Packed policies: the pairs of the last solve over global job indices (first, second,
    # GPU type, fraction, seconds run together) and the GPUs each pair held last round.
    pairs = no_pairs("received")
    previous_pairs: dict[tuple[int, int], tuple[int, ...]] = {}
    t = float(data.arrival.min()) if N else 0.0
    if checkpoints is not None and checkpoints.resumed is not None:
        saved = checkpoints.resumed
        steps, completion, arrived, X, received, deficit, iso_time, busy = restore(
            saved, steps=steps, completion=completion, arrived=arrived, X=X, received=received,
            deficit=deficit, iso_time=iso_time, busy=busy)
        t, elapsed, last_solve = saved["t"], saved["elapsed"], saved["last_solve"]
        changed, previous, memory = saved["changed"], saved["previous"], saved["memory"]
        solve_seconds, rounds = saved["solve_seconds"], [tuple(r) for r in saved["rounds"]]
        if packed is not None:
            pairs = {key: np.asarray(value) for key, value in saved["pairs"].items()}
            previous_pairs = {tuple(key): value for key, value in saved["previous_pairs"]}

    def snapshot() -> dict:
        return {"t": t, "steps": steps.copy(), "completion": completion.copy(),
                "arrived": arrived.copy(), "X": X.copy(), "received": received.copy(),
                "deficit": deficit.copy(), "iso_time": iso_time.copy(), "busy": busy.copy(),
                "elapsed": elapsed, "last_solve": last_solve, "changed": changed,
                "previous": previous, "memory": copy_memory(memory),
                "solve_seconds": prefix(solve_seconds), "rounds": prefix(rounds),
                **({} if packed is None else {
                    "pairs": {key: value.copy() for key, value in pairs.items()},
                    "previous_pairs": [[list(key), value]
                                       for key, value in previous_pairs.items()]})}

    # Incremental state: arrivals are read off the trace sorted by arrival time, the active set
    # changes only where jobs arrive or finish, and a re-solve resets only the rows of jobs that
    # ran or held an allocation since the last one (`since`): per round the work grows with the
    # active jobs, not with the trace.
    by_arrival = np.argsort(data.arrival, kind="stable")
    sorted_arrival = data.arrival[by_arrival]
    admitted = int(arrived.sum())  # arrivals form a prefix of `by_arrival`
    unfinished = int(np.isnan(completion).sum())
    active = np.flatnonzero(arrived & np.isnan(completion))
    since = np.flatnonzero(X.any(axis=1) | received.any(axis=1) | (arrived & np.isnan(completion)))
    iso = None  # isolated throughputs of `active`, recomputed when it changes
    bar = progress_bar(N, progress)
    bar.update(N - unfinished)
    with checkpointing(checkpoints):
        while unfinished:
            if checkpoints is not None:
                checkpoints.tick(snapshot)
            check_rounds_run(rounds, config, t)
            upto = int(np.searchsorted(sorted_arrival, t, side="right"))
            if upto > admitted:
                new = by_arrival[admitted:upto]
                admitted = upto
                arrived[new] = True
                active = np.union1d(active, new)
                since = np.union1d(since, new)
                changed, iso = True, None
            if active.size == 0:
                t = float(sorted_arrival[admitted])
                continue
            allocated = X[active].any() or pairs["first"].size > 0
            if changed and (t - last_solve >= config.min_resolve_interval or not allocated):
                deficit[since] += X[since] * elapsed - received[since]  # the old shortfall, carried
                X[since] = 0.0
                received[since] = 0.0
                X[active], decided = decide(data, active, capacity, t, steps, iso_time, policy,
                                            config, solve_seconds, memory, packed, learner)
                if decided is not None:
                    pairs = {key: decided[key] for key in ("first", "second", "gpu", "fraction")}
                    pairs["received"] = np.zeros(decided["fraction"].size)
                since = active
                elapsed, last_solve, changed = 0.0, t, False
            held = np.fromiter(previous, dtype=int, count=len(previous))
            position = np.searchsorted(active, held)  # previous jobs' local index
            keep = position < active.size
            keep[keep] = active[position[keep]] == held[keep]
            local = dict(zip(position[keep].tolist(), (previous[m] for m in held[keep].tolist())))
            together = None
            if packed is not None:
                alive = np.isnan(completion[pairs["first"]]) & np.isnan(completion[pairs["second"]])
                pairs = {key: value[alive] for key, value in pairs.items()}
                together = Pairs(np.searchsorted(active, pairs["first"]),
                                 np.searchsorted(active, pairs["second"]), pairs["gpu"],
                                 pairs["fraction"], pairs["received"])
                keys = zip(pairs["first"].tolist(), pairs["second"].tolist())
                local.update((active.size + p, previous_pairs[key]) for p, key in enumerate(keys)
                             if key in previous_pairs)
            placement = place_round(X[active], data.scale[active], topology, received[active],
                                    elapsed, local, deficit[active], runnable[active],
                                    config.work_conserving, together)
            if not placement.gpus:
                if admitted == N:
                    raise SchedoptError(f"jobs {', '.join(data.ids[active][:5])} can never run: "
                                        f"no GPU type has room and throughput for them")
                t = max(t + config.round_seconds, float(sorted_arrival[admitted]))
                continue
            active_before = active
            entries = np.fromiter(placement.gpu_type, dtype=int, count=len(placement.gpu_type))
            entry_type = np.fromiter(placement.gpu_type.values(), dtype=int, count=entries.size)
            spans = np.fromiter(placement.nodes_spanned.values(), dtype=int, count=entries.size)
            alone = entries < active.size
            shared = entries[~alone] - active.size  # the pairs that run, by index
            placed = entries[alone]
            order = np.argsort(placed)
            ran = placed[order]
            kinds = entry_type[alone][order]
            spread = spans[alone][order] > 1
            jobs = active[ran]
            table = np.where(spread[:, None] & config.use_unconsolidated, data.U[jobs],
                             data.T[jobs])
            thr = table[np.arange(jobs.size), kinds]
            partner = np.full(jobs.size, -1)
            if shared.size:  # both jobs of each pair, at their true pair rates
                a, b = pairs["first"][shared], pairs["second"][shared]
                pair_type = entry_type[~alone]
                partner = np.concatenate([partner, b, a])
                jobs = np.concatenate([jobs, a, b])
                kinds = np.concatenate([kinds, pair_type, pair_type])
                thr = np.concatenate([thr, data.pairs.rate_of(pair_type, a, b),
                                      data.pairs.rate_of(pair_type, b, a)])
                order = np.argsort(jobs)
                jobs, kinds, thr, partner = jobs[order], kinds[order], thr[order], partner[order]
                ran = np.searchsorted(active, jobs)
            with np.errstate(divide="ignore"):  # a job paired where it makes 0 steps/s
                to_finish = np.where(thr > 0, (data.total[jobs] - steps[jobs]) / thr, np.inf)
            run = np.minimum(config.round_seconds, to_finish)
            if learner is not None and learner.observe(jobs, kinds, thr, partner):
                changed = True
            if iso is None:
                iso = isolated_throughput(data.T[active], data.scale[active], capacity)
            iso_time[jobs] += thr * run / iso[ran]
            steps[jobs] += thr * run
            finished = to_finish <= config.round_seconds
            completion[jobs[finished]] = t + to_finish[finished]
            if finished.any():
                changed, iso = True, None
                unfinished -= int(finished.sum())
                active = np.setdiff1d(active, jobs[finished], assume_unique=True)
            solo = partner < 0
            gpu_seconds = data.scale[jobs] * run
            if shared.size:
                held_for = np.maximum(run[np.searchsorted(jobs, a)], run[np.searchsorted(jobs, b)])
                pairs["received"][shared] += held_for
                gpu_seconds = np.where(solo, gpu_seconds, 0.0)
                np.add.at(busy, pair_type, data.scale[a] * held_for)
            received[jobs[solo], kinds[solo]] += run[solo]
            np.add.at(busy, kinds, gpu_seconds)
            length = float(run.max())
            elapsed += length
            gpus_held = data.scale[jobs].sum() - (data.scale[a].sum() if shared.size else 0)
            rounds.append((t, length, int(jobs.size), int(gpus_held)))
            gpus = list(placement.gpus.values())
            previous = dict(zip(active_before[placed].tolist(),
                                (gpus[i] for i in np.flatnonzero(alone).tolist())))
            if packed is not None:
                previous_pairs = {(int(x), int(y)): gpus[i] for x, y, i in zip(
                    pairs["first"][shared].tolist(), pairs["second"][shared].tolist(),
                    np.flatnonzero(~alone).tolist())}
            t += length
            bar.update(int(finished.sum()))
            bar.simulated_time(t)
    bar.close()
    return finish(policy, config, data, completion, iso_time, steps, busy, capacity,
                  solve_seconds, rounds, learner)

