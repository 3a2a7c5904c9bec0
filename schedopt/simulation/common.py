"""What the simulation loops share: the configuration, the result, and for allocation policies
the trace as arrays and the re-solve step."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from schedopt.errors import SchedoptError
from schedopt.policies.gavel import lp as gavel
from schedopt.core.decisions import DecisionKind
from schedopt.core.problem import ThroughputProblem
from schedopt.instance.model import Instance
from schedopt.simulation.metrics import summarize

if TYPE_CHECKING:
    from schedopt.core.policy import Policy


@dataclass(frozen=True)
class SimulationConfig:
    """mode: "default" (schedopt's mechanism, schedopt/mechanism/rounds.py) or "gavel" (the conventions of
    Gavel's reference simulator, docs/gavel-simulator.md). round_seconds: round length (s).
    min_resolve_interval: a changed job set triggers a re-solve only once this many seconds
    passed since the last one (gavel mode: 1920 s). work_conserving: idle GPUs go to waiting
    jobs. use_unconsolidated: a job whose GPUs span nodes runs at its `unconsolidated`
    throughput where the instance gives one (Gavel ignores that table). seed: gavel mode's
    GPU-type shuffle for agnostic policies. solver / time_limit / policy_options: passed to
    `schedopt.solve` at every re-solve. partitions / executor: solve with POP (`schedopt.policies.pop`)
    in that many parts, jobs kept in their part from one re-solve to the next (sticky).
    perf_error: mean relative error of the throughput matrix the policy sees (0.1 = 10%): each
    T[n,j] is multiplied by a log-normal factor exp(sigma Z), Z ~ N(0, 1), with sigma such that
    E|factor - 1| = perf_error, drawn once per (job, GPU type) from `seed` (a stable
    misestimate); jobs still progress at the true throughputs (`misestimate`).
    learn_throughputs: a packed policy sees co-location rates learned from what the jobs ran
    at, starting from the trace's table with a share `hide_pairs` of its pair measurements
    hidden (drawn with `seed`; 1 = from the isolated throughputs alone), completed and
    re-completed as measurements arrive (`schedopt.simulation.learning`).

    mode, round_seconds, min_resolve_interval, work_conserving, use_unconsolidated, partitions,
    executor and perf_error apply to allocation policies (decision ALLOCATION); lease and queue
    policies advance by their own events (lease length and pool are the policy's options).
    max_leases: a lease run longer than this many leases is an error. max_rounds: an
    allocation run longer than this many rounds is an error, raised before the first round
    when some job alone needs more (its total_steps at its fastest throughput)."""

    mode: str = "default"
    round_seconds: float = 360.0
    min_resolve_interval: float = 0.0
    work_conserving: bool = True
    use_unconsolidated: bool = True
    seed: int = 0
    solver: str | None = None
    time_limit: float | None = None
    policy_options: dict = field(default_factory=dict)
    partitions: int | None = None
    executor: str = "serial"
    perf_error: float = 0.0
    max_leases: int = 1_000_000
    max_rounds: int = 1_000_000
    learn_throughputs: bool = False
    hide_pairs: float = 1.0

    def __post_init__(self):
        if self.mode not in ("default", "gavel"):
            raise SchedoptError(f"simulation mode must be 'default' or 'gavel', got {self.mode!r}")
        if not 0.0 <= self.hide_pairs <= 1.0:
            raise SchedoptError(f"hide_pairs is a share of the pair measurements in [0, 1], "
                                f"got {self.hide_pairs}")
        if self.max_rounds < 1:
            raise SchedoptError(f"max_rounds must be >= 1, got {self.max_rounds}")
        if not 0.0 <= self.perf_error < 1.0:
            raise SchedoptError(f"perf_error is a mean relative error in [0, 1), "
                                f"got {self.perf_error}")

    @classmethod
    def gavel_compatible(cls, **changes) -> "SimulationConfig":
        """Gavel's reference-simulator conventions (1920 s between re-solves, no unconsolidated
        throughputs), for comparing numbers with it."""
        return cls(**{"mode": "gavel", "min_resolve_interval": 1920.0,
                      "use_unconsolidated": False, **changes})


@dataclass
class SimulationResult:
    """One run. policy: its name; kind: the decision kind it emits; jobs: one row per job
    (index `job`); summary: the run's metrics (`schedopt.simulation.metrics`); config and
    options (the policy's, as parsed) as run. One frame per decision point, by kind:
    rounds (allocations: start s, length s, jobs running, GPUs busy), leases (leases: start s,
    jobs running, GPUs held, decide s, MILP gap, fallback) or decisions (queues: time s, queued,
    candidates, free machines, started, solve s); the others are None. learning: with
    throughputs learned online, how the estimate converged (one row per refresh:
    `schedopt.simulation.learning`)."""

    policy: str
    jobs: pd.DataFrame
    summary: dict
    rounds: pd.DataFrame | None
    config: SimulationConfig
    kind: DecisionKind = DecisionKind.ALLOCATION
    leases: pd.DataFrame | None = None
    decisions: pd.DataFrame | None = None
    options: Any = None
    learning: pd.DataFrame | None = None

    @property
    def scheduler(self) -> str:
        """The policy's name (the lease and queue simulators called it the scheduler)."""
        return self.policy

    @property
    def alpha(self) -> float | None:
        """The policy's fairness knob alpha where it has one (allox)."""
        if isinstance(self.options, dict):
            return self.options.get("alpha", 1.0)
        return getattr(self.options, "alpha", None)


def lognormal_sigma(perf_error: float) -> float:
    """sigma with E|exp(sigma Z) - 1| = perf_error for Z ~ N(0, 1); that mean is
    exp(sigma^2 / 2) erf(sigma / sqrt 2), increasing in sigma."""
    if perf_error <= 0.0:
        return 0.0
    from scipy.optimize import brentq
    from scipy.special import erf

    def excess(sigma):
        return np.exp(sigma ** 2 / 2) * erf(sigma / np.sqrt(2.0)) - perf_error
    return float(brentq(excess, 0.0, 10.0, xtol=1e-14))


def misestimate(T: np.ndarray, perf_error: float, seed: int) -> np.ndarray:
    """T times one seeded log-normal factor per entry, mean relative error `perf_error`
    (zeros stay zero: a job that cannot run on a type is known not to)."""
    if perf_error <= 0.0:
        return T
    rng = np.random.default_rng([seed, 0x9E77])  # its own stream, apart from `seed`'s other uses
    return T * np.exp(lognormal_sigma(perf_error) * rng.standard_normal(T.shape))


class TraceArrays:
    """The trace as arrays over all N jobs (index n, in trace order). T: true steps/s, which
    jobs progress at; seen: the matrix the policy is given (T misestimated by `perf_error`)."""

    def __init__(self, trace: Instance, perf_error: float = 0.0, seed: int = 0):
        trace.require_total_steps("simulated")
        jobs = trace.jobs
        self.types = trace.cluster.type_names
        self.ids = np.array(trace.job_ids, dtype=object)
        self.labels = [job.type for job in jobs]
        self.arrival = np.array([job.arrival_time for job in jobs], dtype=float)
        self.total = np.array([job.remaining_steps for job in jobs], dtype=float)
        self.scale = np.array([job.scale_factor for job in jobs], dtype=int)
        self.weight = np.array([job.weight for job in jobs], dtype=float)
        self.deadline = np.array([np.nan if job.deadline is None else job.deadline for job in jobs])
        self.T = np.array([[job.throughput[t] for t in self.types] for job in jobs],
                          dtype=float).reshape(len(jobs), len(self.types))
        spread = trace.performance.unconsolidated
        self.U = np.array([[spread.get(job.type, {}).get(t, job.throughput[t]) for t in self.types]
                           for job in jobs], dtype=float).reshape(self.T.shape)
        self.seen = misestimate(self.T, perf_error, seed)
        gpu = trace.cluster.gpu_types
        self.cost = np.array([gpu[t].cost_per_hour or 0.0 for t in self.types])
        self.colocated = trace.performance.colocated
        self.located = trace.located
        self._pairs = None
        self.seen_pairs = None  # the pair table packed policies are given (None: the true one)

    @property
    def pairs(self):
        """The true co-location table over all N jobs (a `PairTable`, steps/s): what paired
        jobs progress at."""
        if self._pairs is None:
            from schedopt.policies.packed.master import PairTable

            self._pairs = PairTable.from_entries(self.colocated, self.types, self.labels)
        return self._pairs

    def problem(self, active: np.ndarray, capacity: np.ndarray, now: float, steps: np.ndarray,
                isolated_time: np.ndarray) -> ThroughputProblem:
        """The policy's inputs for the `active` jobs at time `now` (s), with the throughputs
        it sees (`seen`)."""
        return ThroughputProblem.from_arrays(
            self.seen[active], self.scale[active], self.weight[active], capacity,
            job_ids=self.ids[active], gpu_types=self.types, cost_per_hour=self.cost,
            remaining_steps=self.total[active] - steps[active],
            time_since_arrival=now - self.arrival[active], isolated_time=isolated_time[active],
            time_to_deadline=self.arrival[active] + self.deadline[active] - now)

    def frame(self, completion: np.ndarray, isolated_time: np.ndarray,
              steps: np.ndarray) -> pd.DataFrame:
        """One row per job: arrival, completion, JCT (s), steps done, finish-time fairness rho,
        deadline."""
        jct = completion - self.arrival
        missed = pd.array(np.where(np.isnan(self.deadline), None, jct > self.deadline),
                          dtype="boolean")
        return pd.DataFrame({
            "job": self.ids, "type": self.labels, "scale_factor": self.scale,
            "weight": self.weight, "total_steps": self.total, "steps_done": steps,
            "arrival_s": self.arrival, "completion_s": completion,
            "jct_s": jct, "isolated_time_s": isolated_time, "rho": jct / isolated_time,
            "deadline_s": self.deadline, "missed_deadline": missed,
        }).set_index("job")


def check_round_budget(trace: Instance, data: TraceArrays, config: SimulationConfig,
                       packed) -> None:
    """One line, before the first round, when some job alone needs more than
    `config.max_rounds` rounds: its total_steps at the fastest rate any table gives it
    (isolated, unconsolidated and, for packed policies, paired) over whole rounds."""
    fastest = np.maximum(data.T, data.U).max(axis=1, initial=0.0)
    if packed is not None and data.pairs.labels:
        by_label = np.nan_to_num(data.pairs.rate, nan=0.0).max(axis=(0, 2))
        typed = data.pairs.job_type >= 0
        fastest[typed] = np.maximum(fastest[typed], by_label[data.pairs.job_type[typed]])
    with np.errstate(divide="ignore", invalid="ignore"):
        needed = np.where(fastest > 0, data.total / (fastest * config.round_seconds), 0.0)
    over = np.flatnonzero(needed > config.max_rounds)
    if over.size:
        n = int(over[np.argmax(needed[over])])
        raise SchedoptError(trace.located(
            f"jobs[{n}].total_steps",
            f"job {data.ids[n]}: {data.total[n]:.6g} steps at its fastest {fastest[n]:.6g} "
            f"steps/s need at least {needed[n]:.3g} rounds of {config.round_seconds:g} s, more "
            f"than max_rounds={config.max_rounds} (--max-rounds); expected fewer steps or "
            f"longer rounds"))


def check_rounds_run(rounds: list, config: SimulationConfig, now: float) -> None:
    """One line when an allocation run that still has jobs left (the loops call it at the top
    of each round) has used up `config.max_rounds` rounds."""
    if len(rounds) >= config.max_rounds:
        raise SchedoptError(f"the run passed max_rounds={config.max_rounds} rounds of "
                            f"{config.round_seconds:g} s (simulated time {now:.6g} s) with "
                            f"jobs left; lengthen the rounds or raise max_rounds (--max-rounds)")


def solve_policy(data: TraceArrays, active: np.ndarray, capacity: np.ndarray, now: float,
                 steps: np.ndarray, isolated_time: np.ndarray, policy: "str | Policy",
                 config: SimulationConfig, solve_seconds: list[float],
                 memory: dict) -> np.ndarray:
    """The policy's allocation (len(active), J) for the active jobs at `now`; appends the wall
    seconds it took to `solve_seconds`. `memory` (kept by the caller for the run) carries
    what the next solve reuses: with POP the jobs' parts ("parts", {job id: part}), so that
    jobs keep them; for a policy that takes a `start`, the last solve's prices ("start")."""
    from schedopt.api import solve

    clock = time.perf_counter()
    pop = {} if config.partitions is None else {
        "partitions": config.partitions, "executor": config.executor,
        "partition_seed": config.seed, "previous_parts": memory.setdefault("parts", {})}
    warm = {"start": memory["start"]} if "start" in memory else {}
    result = solve(data.problem(active, capacity, now, steps, isolated_time), policy,
                   config.solver, time_limit=config.time_limit, **pop, **warm,
                   **config.policy_options)
    if "pop" in result.details:
        memory["parts"].update(result.details["pop"]["parts"])
    elif "start" in policy_of(policy).option_names and "prices" in result.details:
        memory["start"] = {key: result.details[key] for key in ("prices", "level")}
    solve_seconds.append(time.perf_counter() - clock)
    if result.X is None:
        raise SchedoptError(f"policy {policy_name(policy)} found no allocation at t={now:.0f} s "
                            f"({result.status.value})")
    return result.X


def packed_of(policy: "str | Policy"):
    """The packed (space-sharing) Policy `policy` stands for, or None for any other."""
    from schedopt.policies.packed.policy import PackedPolicy

    chosen = policy_of(policy)
    return chosen if isinstance(chosen, PackedPolicy) else None


def check_packed(data: TraceArrays, policy: "str | Policy", config: SimulationConfig):
    """The packed policy a run simulates with space sharing (None for other policies); a
    SchedoptError in one line when the trace or the configuration cannot run it."""
    packed = packed_of(policy)
    if packed is None:
        return None
    if not data.colocated:
        raise SchedoptError(data.located(
            "performance.colocated", f"policy {packed.name} needs a trace with a co-location "
            f"table (steps/s of job types sharing GPUs), and the trace has none"))
    if config.partitions is not None:
        raise SchedoptError(f"policy {packed.name}: POP partitions are not simulated with "
                            f"space sharing; run it without partitions")
    return packed


def learner_for(trace: Instance, data: TraceArrays, config: SimulationConfig, packed,
                policy: "str | Policy", checkpoints):
    """The run's `Learner` when `config.learn_throughputs` (None otherwise), bound to `data`;
    a SchedoptError in one line when the run cannot learn."""
    if not config.learn_throughputs:
        return None
    if packed is None:
        raise SchedoptError(f"learning throughputs applies to packed policies (it learns the "
                            f"rates of jobs sharing GPUs); {policy_name(policy)} does not "
                            f"share GPUs")
    if checkpoints is not None:
        raise SchedoptError("checkpoints do not cover runs that learn throughputs: run it "
                            "without a checkpoint or resume")
    from schedopt.simulation.learning import Learner

    learner = Learner(trace, config.hide_pairs, config.seed)
    learner.attach(data)
    return learner


def solve_packed(data: TraceArrays, active: np.ndarray, capacity: np.ndarray, now: float,
                 steps: np.ndarray, isolated_time: np.ndarray, policy: "str | Policy",
                 config: SimulationConfig, solve_seconds: list[float]):
    """A packed policy's decision for the `active` jobs at `now` (a `PairedAllocation` over
    their local indices), given the pair table it sees (`data.seen_pairs`, else the true one).
    Pairs in which either job would make 0 steps/s are dropped: a measured 0 never runs as a
    pair. Appends the wall seconds it took to `solve_seconds`."""
    from dataclasses import replace

    from schedopt.backends import SolveOptions
    from schedopt.backends.session import Solver
    from schedopt.core.registry import resolve

    clock = time.perf_counter()
    chosen, fixed = resolve(policy) if isinstance(policy, str) else (policy, {})
    options = chosen.parse_options({**fixed, **config.policy_options})
    session = Solver(config.solver or chosen.default_solver,
                     SolveOptions(time_limit=config.time_limit))
    table = (data.seen_pairs if data.seen_pairs is not None else data.pairs).rows(active)
    outcome = chosen.solve_with_table(data.problem(active, capacity, now, steps, isolated_time),
                                      table, options, session)
    solve_seconds.append(time.perf_counter() - clock)
    decision = outcome.decision
    if decision is None:
        raise SchedoptError(f"policy {chosen.name} found no allocation at t={now:.0f} s "
                            f"({outcome.status.value})")
    keep = (decision.rate_first > 0) & (decision.rate_second > 0) & (decision.fraction > 0)
    return replace(decision, first=decision.first[keep], second=decision.second[keep],
                   gpu=decision.gpu[keep], fraction=decision.fraction[keep],
                   rate_first=decision.rate_first[keep], rate_second=decision.rate_second[keep])


def decide(data: TraceArrays, active: np.ndarray, capacity: np.ndarray, now: float,
           steps: np.ndarray, isolated_time: np.ndarray, policy: "str | Policy",
           config: SimulationConfig, solve_seconds: list[float], memory: dict, packed,
           learner) -> tuple[np.ndarray, dict | None]:
    """A re-solve of an allocation loop: the learner's estimate refreshed (when throughputs
    are learned), then the policy's time fractions (len(active), J) of each job (alone, for a
    packed policy) and, for a packed policy, its pairs over global job indices (first, second,
    gpu, fraction, rate_first, rate_second; None otherwise)."""
    if learner is not None:
        learner.refresh(now)
    if packed is None:
        return solve_policy(data, active, capacity, now, steps, isolated_time, policy, config,
                            solve_seconds, memory), None
    decision = solve_packed(data, active, capacity, now, steps, isolated_time, policy, config,
                            solve_seconds)
    return decision.solo, {"first": active[decision.first], "second": active[decision.second],
                           "gpu": decision.gpu, "fraction": decision.fraction,
                           "rate_first": decision.rate_first,
                           "rate_second": decision.rate_second}


def policy_of(policy: "str | Policy") -> "Policy":
    """The Policy a name (registered, gavel:NAME, MODULE:NAME) or a Policy stands for."""
    from schedopt.core.registry import resolve

    return resolve(policy)[0] if isinstance(policy, str) else policy


def policy_deciding(name: str, kind: DecisionKind, unknown: str) -> "Policy":
    """The registered policy `name`, which must decide `kind`; otherwise SchedoptError with the
    message `unknown` (one line naming what was expected)."""
    from schedopt.core.registry import resolve
    from schedopt.errors import PolicyError

    try:
        policy = resolve(name)[0]
    except PolicyError:
        raise SchedoptError(unknown) from None
    if policy.decision != kind:
        raise SchedoptError(unknown)
    return policy


def policy_name(policy: "str | Policy") -> str:
    """The name a run reports: the name as given, or the Policy's own."""
    return policy if isinstance(policy, str) else policy.name


def finish(policy: "str | Policy", config: SimulationConfig, data: TraceArrays, completion: np.ndarray,
           isolated_time: np.ndarray, steps: np.ndarray, busy: np.ndarray, capacity: np.ndarray,
           solve_seconds: list[float], rounds: list[tuple], learner=None) -> SimulationResult:
    """Assemble the result: job frame, summary metrics, the per-round frame and, when
    throughputs were learned, the learner's convergence frame."""
    frame = data.frame(completion, isolated_time, steps)
    summary = summarize(frame, busy, capacity, data.cost, data.types, solve_seconds)
    round_frame = pd.DataFrame(rounds, columns=["start_s", "length_s", "jobs_running", "gpus_busy"])
    return SimulationResult(policy_name(policy), frame, summary, round_frame, config,
                            learning=None if learner is None else learner.history())


def no_pairs(*fields: str) -> dict[str, np.ndarray]:
    """A packed loop's pairs before its first solve (or for a policy that does not share):
    first, second, gpu (job and type indices), fraction, and the loop's own `fields`, all
    empty."""
    empty = np.zeros(0, dtype=int)
    return {"first": empty, "second": empty, "gpu": empty,
            **{key: np.zeros(0) for key in ("fraction", *fields)}}


def isolated_throughput(T: np.ndarray, scale: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """(M,) steps/s of each active job under Gavel's isolated share of the cluster."""
    return gavel.isolated_throughput(ThroughputProblem.from_arrays(T, scale, None, capacity))


def progress_bar(total: int, enabled: bool):
    """A tqdm bar over completed jobs when `enabled` (and tqdm is installed), else a no-op.
    `bar.simulated_time(t)` (t in simulated seconds) shows the run's rate, simulated seconds
    per wall-clock second."""
    if enabled:
        try:
            from tqdm import tqdm

            return _RateBar(tqdm(total=total, unit="job", desc="simulating"))
        except ImportError:
            pass
    return _NoBar()


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def simulated_time(self, t: float) -> None:
        pass

    def close(self) -> None:
        pass


class _RateBar:
    """A tqdm bar over finished jobs, its postfix the simulated seconds per wall second."""

    def __init__(self, bar):
        self.bar, self.start, self.first, self.shown = bar, time.perf_counter(), None, 0.0

    def update(self, n: int) -> None:
        self.bar.update(n)

    def simulated_time(self, t: float) -> None:
        if self.first is None:
            self.first = t
        now = time.perf_counter()
        if now - self.shown >= 0.5:  # tqdm's own refresh rate; a postfix costs a redraw
            self.shown = now
            self.bar.set_postfix_str(f"{(t - self.first) / max(now - self.start, 1e-9):,.0f} sim s/s",
                                     refresh=False)

    def close(self) -> None:
        self.bar.close()
