"""SMD: workers and parameter servers under bandwidth contention, by sum-of-ratios and
multi-dimensional knapsack decomposition (Yu, Wu, Ji, Liu, INFOCOM'21; docs/formulations.md §5).
A reconstruction: every choice below is argued in docs/smd.md.

    minimize   sum_i T_i(w_i, p_i) = sum_i N_i / D_i          (completion times, smd_model)
    subject to each job one configuration (w, p) with 1 <= w <= max_workers, 1 <= p <= max_ps;
               its w workers and p PSs placed on machines, every machine within each resource.

Phase 1, the sum-of-ratios loop (Jong's Newton-type method). With configuration weights
z[i, k] the ratios are N_i(z) / D_i(z), both linear in z, and for multipliers (beta, gamma)

    min_z  sum_i gamma_i (N_i(z) - beta_i D_i(z))      (the parametric problem)

is a multiple-choice knapsack: linear costs f[i, k] = gamma_i (N_ik - beta_i D_ik). It is
decomposed by Lagrangian prices mu on the cluster's total resources (`resource_prices`) into
one choice per job, argmin_k f[i, k] + mu . share[i, k], scaled up until the totals fit. The
residuals psi = (beta_i D_i - N_i, gamma_i D_i - 1) / (N_i, 1) of that choice drive the Newton
update beta_i <- N_i / D_i, gamma_i <- 1 / D_i, damped (Armijo steps 1/2, 1/4, 1/8) when the
sum of completion times does not fall; the loop stops when max |psi| <= epsilon.
Integer configurations make the parametric problem degenerate (its cost is linear in w, so
an unrestricted choice jumps to extreme configurations and the plain iteration cycles;
docs/smd.md shows it): each choice is restricted to a trust region of +-r workers and PSs
around the incumbent (r starts at 1, doubles after an improvement, halves after a failure),
and the best choice by true completion times is kept.

Phase 2, the knapsack decomposition per machine: starting from one worker and one PS per job,
configurations are upgraded greedily by (decrease of T) / (mu-priced extra resources), each
upgrade placed on the machines at once, then improved by an exchange pass (`smd_knapsack`;
placement rules in `smd_packing`). The result is always a feasible placement.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from schedopt.backends import Status
from schedopt.policies.smd.bound import relaxation
from schedopt.policies.smd.knapsack import REPACK_NODES, exchange_pass, knapsack_step, resource_prices
from schedopt.policies.smd.milp import exact_program
from schedopt.policies.smd.neighbourhood import improve
from schedopt.policies.smd.transfer import transfer
from schedopt.policies.smd.model import Configurations, Placement, SmdProblem
from schedopt.policies.smd.packing import SEARCH_TASKS, Packing, minimal_packing, pack_counts
from schedopt.policies.smd.repack import PATIENCE as REPACK_PATIENCE, repack, tabu_placement
from schedopt.policies.smd.repair import place, repair
from schedopt.policies.smd.search import ruin_and_recreate
from schedopt.policies.smd.upgrade import upgrade

DEFAULT_EPSILON = 0.05
DEFAULT_MAX_ITERATIONS = 50
PRICE_ITERATIONS = 8  # subgradient steps per parametric problem (warm-started)
DEFAULT_SEARCH_STEPS = 30  # ruin-and-recreate steps after the paper's method (at most)
DEFAULT_TIME_LIMIT = 5.0  # CPU seconds: a safety cap on the search (docs/smd.md)
# The searches stop once the objective is within this share of the proven bound (the default
# relative gap of MIP solvers such as HiGHS): at 200 jobs on a loose cluster the answer is
# 4e-5 above its bound after phase 2, and the numpy search spent 3 CPU s finding nothing.
GAP_TOLERANCE = 1e-4
REPAIR_WORK = 30.0  # CP-SAT deterministic time the feasibility repair may take
RELOCATE = True  # phase 2 may move a task to make room for another (Packing._place_one)
# CP-SAT deterministic time to place the bound's configuration choice where first fit and the
# tabu search cannot; 0: not tried. On the regimes benchmark it placed none the tabu search had
# not, in 0.03-0.6 s each (docs/smd.md)
PLACE_WORK = 0.0
BOUND_ITERATIONS = 60  # subgradient steps of the Lagrangian bound
DEFAULT_LNS_STEPS = 20  # steps of the large-neighbourhood search over the exact MILP (neighbourhood.py)
# CP-SAT placements of one job's extra task (upgrade.py); 0 since the repacking step places
# what it did: on the 200 regime instances 6 tries and none give the same answers (docs/smd.md)
DEFAULT_UPGRADE_TRIES = 0
UPGRADE_WORK = 0.05  # CP-SAT deterministic time per upgrade try
# above this many jobs the upgrade step is skipped: a try's UPGRADE_WORK is too little for
# CP-SAT to place the whole cluster (at 60 jobs it needs about 0.2 units just to re-place
# smd's own choice), and no try placed anything there on the benchmark's instances (docs/smd.md)
UPGRADE_MAX_JOBS = 50
# the best starts of phase 2 that the numpy search and the repacking step each run from (the
# better result goes on): a start that is better before them can end worse after them
SEARCHED_STARTS = 2


@dataclass
class SmdSolution:
    """A parameter-server schedule: per job w, p and completion_s (seconds), the placement,
    objective = sum of completion times (s), bound (None when unknown), status, wall seconds,
    method and details (phase statistics)."""

    placement: Placement | None
    status: Status
    objective: float | None
    bound: float | None
    solve_seconds: float
    method: str
    details: dict = field(default_factory=dict)

    @property
    def workers(self) -> np.ndarray | None:
        return None if self.placement is None else self.placement.total_workers

    @property
    def ps(self) -> np.ndarray | None:
        return None if self.placement is None else self.placement.total_ps


def solution(problem: SmdProblem, pack: Packing | Placement | None, method: str, clock: float,
             status: Status = Status.FEASIBLE, bound: float | None = None,
             details: dict | None = None) -> SmdSolution:
    """SmdSolution of a packing (None = no feasible placement found: status infeasible)."""
    if pack is None:
        return SmdSolution(None, Status.INFEASIBLE if status is Status.FEASIBLE else status, None,
                           bound, time.perf_counter() - clock, method, details or {})
    placement = pack if isinstance(pack, Placement) else Placement(pack.workers.copy(), pack.ps.copy())
    objective = float(problem.completion_time(placement.total_workers, placement.total_ps).sum())
    return SmdSolution(placement, status, objective, bound, time.perf_counter() - clock, method,
                       details or {})


def _shares(problem: SmdProblem, cfg: Configurations) -> tuple[np.ndarray, np.ndarray]:
    """(configuration demands / cluster totals (n, K, R), the totals (R,), 1 where unlimited)."""
    total = problem.total_capacity()
    shares = cfg.demand(problem) / total
    shares[:, :, ~np.isfinite(problem.capacity).all(axis=0)] = 0.0
    return shares, total


def _fitting_choice(cost: np.ndarray, shares: np.ndarray, mu: np.ndarray) -> np.ndarray | None:
    """argmin_k cost + s mu . shares per job, with the least price scale s >= 1 (bisection to
    2^-8) at which the cluster totals hold the chosen configurations; None if none does."""
    n, K, R = shares.shape
    rows, flat = np.arange(n), shares.reshape(n * K, R)
    direction = mu if mu.any() else np.ones_like(mu)

    def choose(scale: float) -> tuple[np.ndarray, bool]:
        k = np.argmin(cost + (flat @ (scale * direction)).reshape(n, K), axis=1)
        return k, bool((shares[rows, k].sum(axis=0) <= 1 + 1e-9).all())

    k, fits = choose(1.0)
    if fits:
        return k
    low, high = 1.0, 2.0
    while not choose(high)[1]:
        low, high = high, 2 * high
        if high > 1e15:
            return None
    while high - low > low * 2.0 ** -8:
        middle = (low + high) / 2
        low, high = (low, middle) if choose(middle)[1] else (middle, high)
    return choose(high)[0]


def sum_of_ratios(problem: SmdProblem, cfg: Configurations, shares: np.ndarray,
                  epsilon: float = DEFAULT_EPSILON,
                  max_iterations: int = DEFAULT_MAX_ITERATIONS) -> dict:
    """Phase 1 (module docstring). Returns the best configuration choice `choice` (n,) whose
    cluster totals fit, its sum of completion times `relaxed_objective`, the resource prices
    `mu` (R,) of the last parametric problem, `iterations`, `residual` (max |psi| of the last
    choice) and why it `stopped`: "converged" (residual <= epsilon), "no improving step" (even
    the damped steps at trust radius 1 found no better choice), "max_iterations" or "no choice
    fits the cluster"."""
    W, P, valid, N, D, T = cfg.workers, cfg.ps, cfg.valid, cfg.numerator, cfg.denominator, cfg.time
    n = problem.num_jobs
    rows = np.arange(n)
    widest = int(max(W.max(initial=1), P.max(initial=1)))
    x = np.zeros(n, dtype=np.int64)  # column 0 is (1, 1)
    objective = float(T[rows, x].sum())
    best = (objective, x)
    beta, gamma = T[rows, x], 1.0 / D[rows, x]
    radius, mu, residual, iterations = 1, None, np.inf, 0
    stopped = "max_iterations"

    def parametric(beta, gamma, allowed, start):
        cost = np.where(allowed, gamma[:, None] * (N - beta[:, None] * D), np.inf)
        prices = resource_prices(cost, shares, allowed, start, PRICE_ITERATIONS)
        return _fitting_choice(cost, shares, prices), prices

    while iterations < max_iterations:
        iterations += 1
        allowed = valid & (np.abs(W - W[rows, x][:, None]) <= radius) \
            & (np.abs(P - P[rows, x][:, None]) <= radius)
        y, mu = parametric(beta, gamma, allowed, mu)
        if y is None:
            stopped = "no choice fits the cluster"
            break
        Ty, Dy = T[rows, y], D[rows, y]
        psi = np.concatenate([beta / Ty - 1.0, gamma * Dy - 1.0])
        residual = float(np.abs(psi).max())
        if Ty.sum() < best[0]:
            best = (float(Ty.sum()), y)
        if residual <= epsilon:
            stopped = "converged"
            break
        if Ty.sum() < objective * (1 - 1e-12):  # full Newton step accepted
            x, objective, beta, gamma = y, float(Ty.sum()), Ty, 1.0 / Dy
            radius = min(widest, 2 * radius)
            continue
        if radius > 1:
            radius //= 2
            continue
        for step in (0.5, 0.25, 0.125):  # Armijo-damped Newton step towards (T(y), 1/D(y))
            nb, ng = beta + step * (Ty - beta), gamma + step * (1.0 / Dy - gamma)
            z, prices = parametric(nb, ng, allowed, mu)
            if z is not None and T[rows, z].sum() < objective * (1 - 1e-12):
                x, objective, mu = z, float(T[rows, z].sum()), prices
                beta, gamma = T[rows, z], 1.0 / D[rows, z]
                best = min(best, (objective, z), key=lambda b: b[0])
                break
        else:
            stopped = "no improving step"
            break
    return {"choice": best[1], "relaxed_objective": best[0], "mu": mu, "iterations": iterations,
            "residual": residual, "stopped": stopped}


def _is_small(problem: SmdProblem, cfg: Configurations) -> bool:
    """At most SEARCH_TASKS tasks even with every job at its largest configuration."""
    return int(cfg.workers.max(axis=1, initial=0).sum() + cfg.ps.max(axis=1, initial=0).sum()) \
        <= SEARCH_TASKS


def lagrangian_bound(problem: SmdProblem, cfg: Configurations, shares: np.ndarray,
                     start: np.ndarray | None = None,
                     iterations: int = BOUND_ITERATIONS) -> tuple[float, np.ndarray]:
    """(bound, mu): a proven lower bound (seconds) on every placement's sum of completion times: for prices
    mu >= 0 on the cluster's totals of the resources every machine limits,
    sum_i min_k (T_ik + mu . shares_ik) - sum(mu) (a Lagrangian dual of the configuration
    choice with the placement relaxed to the totals), at the best mu of `resource_prices`."""
    if problem.num_jobs == 0:
        return 0.0, np.zeros(shares.shape[2])
    T = cfg.time
    mu = resource_prices(np.where(cfg.valid, T, np.inf), shares, cfg.valid, start, iterations)
    n, K, R = shares.shape
    L = np.where(cfg.valid, T + (shares.reshape(n * K, R) @ mu).reshape(n, K), np.inf)
    return float(L.min(axis=1).sum() - mu.sum()), mu


def _rounded(problem: SmdProblem, program, values: np.ndarray) -> Packing | None:
    """The LP relaxation's placement with every job's workers and PSs per machine rounded down
    (which keeps every machine within its capacity), then a worker or PS put back for each job
    left without one (None when one cannot be placed)."""
    floor = lambda v: np.floor(values[v.columns].reshape(v.shape) + 1e-7).astype(np.int64)  # noqa: E731
    pack = Packing.of(problem, floor(program.x), floor(program.y))
    pack.relocate = RELOCATE
    for i in np.flatnonzero((pack.w == 0) | (pack.p == 0)).tolist():
        if not pack.add(i, int(pack.w[i] == 0), int(pack.p[i] == 0)):
            return None
    return pack


def _add(details: dict, key: str, stats: dict) -> None:
    """details[key] += stats, field by field (the statistics of a step run from several starts)."""
    mine = details.setdefault(key, {})
    for field_name, number in stats.items():
        mine[field_name] = mine.get(field_name, 0) + number


def smd(problem: SmdProblem, epsilon: float = DEFAULT_EPSILON,
        max_iterations: int = DEFAULT_MAX_ITERATIONS, search_steps: int = DEFAULT_SEARCH_STEPS,
        seed: int = 0, time_limit: float = DEFAULT_TIME_LIMIT,
        place_limit: float = PLACE_WORK, beyond: bool = True,
        lns_steps: int = DEFAULT_LNS_STEPS, lp_start: bool = True,
        upgrade_tries: int = DEFAULT_UPGRADE_TRIES,
        gap_tolerance: float = GAP_TOLERANCE,
        repack_patience: int = REPACK_PATIENCE) -> SmdSolution:
    """SMD (module docstring): phase 1 then the per-machine knapsack and exchange pass, then
    what closes part of the gap on binding instances (docs/smd.md, "Beyond the paper"):
    - a feasibility repair (`schedopt.policies.smd.repair`, CP-SAT) when the first-fit rules
      and the bounded placement search cannot place one worker and one PS per job: it places
      them or proves that nothing can (status infeasible with that reason);
    - the Lagrangian bound's own configuration choice as one more start of phase 2, placed
      first fit or, when that fails, by the tabu search of `schedopt.policies.smd.repack`
      (numpy), and when that fails too by CP-SAT within `place_limit` units of its
      deterministic time (`schedopt.policies.smd.cpsat`; 0, the default: not tried);
    - the LP relaxation's placement (below) rounded down per machine, a worker or PS put back
      where a job has none, as one more start of phase 2 (lp_start=False leaves it out, for
      comparisons);
    - `search_steps` steps of ruin and recreate (`schedopt.policies.smd.search`, numpy, random
      choices from `seed`, stopping after PATIENCE steps without an improvement); the search
      also stops at `time_limit` seconds of CPU time of the whole call, a safety cap; where it
      binds (NIC-bound instances of 55-60 jobs on the measured machine, docs/smd.md) the result
      depends on the machine's speed and load, elsewhere a fixed seed gives the same result run
      to run;
    - one job's task more (alone or for another job's task less), the placement repacked by a
      tabu search over task moves and swaps (`schedopt.policies.smd.repack`, numpy), until
      `repack_patience` changes in a row find no placement (0: none) or the CPU-time cap binds;
    - the search and the repacking step run from each of the SEARCHED_STARTS best starts of
      phase 2 (the better result goes on; their statistics in details are summed, and
      details searched_starts counts the starts; a start is skipped when the result before it
      is within the gap tolerance of the bound, or when it has the same objective as the one
      before it);
    - `lns_steps` steps of the large-neighbourhood search (`schedopt.policies.smd.neighbourhood`);
    - `upgrade_tries` CP-SAT placements of one more task for the job it helps most
      (`schedopt.policies.smd.upgrade`, UPGRADE_WORK units of deterministic time each), on
      problems of at most UPGRADE_MAX_JOBS jobs;
    - task transfers between two jobs on one machine while the sum falls
      (`schedopt.policies.smd.transfer`, numpy).
    The searches and the neighbourhood steps stop early once the objective is within
    `gap_tolerance` (a share) of the proven bound.
    beyond=False is the paper's method alone (none of these; for comparisons).
    `bound` (proven; seconds) is the larger of `lagrangian_bound` and the LP relaxation of
    smd_exact's MILP (`schedopt.policies.smd.bound`, HiGHS; its per-machine rows make it the
    higher one where resources bind), and status is optimal when the objective reaches it.
    details: iterations, residual, stopped (phase 1, see `sum_of_ratios`),
    relaxed_objective (s; phase 1's best choice, whose cluster totals fit but which is not
    placed yet), start ("first fit", "search" or "repair"), bound_start (how the bound's
    choice was placed: "first fit", "tabu search", "cpsat", or None when it was not),
    paper_objective (s, before the search), searched_starts, search (steps, improving steps,
    seconds), repack (steps, tries, seconds), lns (steps, improved, solved, seconds), upgrade
    (tries, placed), transfer (dropped, transfers, exchanges), gap ((objective - bound) /
    objective), bounds (lagrangian, relaxation: None when HiGHS gave no duals),
    phase_seconds [phase 1, phase 2, search]."""
    if not 0 < epsilon < 1:
        raise ValueError(f"epsilon must be in (0, 1), got {epsilon!r}")
    if not time_limit > 0:
        raise ValueError(f"time_limit must be > 0 seconds, got {time_limit!r}")
    if not 0 <= gap_tolerance < 1:
        raise ValueError(f"gap_tolerance must be in [0, 1), got {gap_tolerance!r}")
    if search_steps < 0 or lns_steps < 0 or upgrade_tries < 0 or repack_patience < 0:
        raise ValueError(f"search_steps, lns_steps, upgrade_tries and repack_patience must be "
                         f">= 0, got {search_steps!r}, {lns_steps!r}, {upgrade_tries!r}, "
                         f"{repack_patience!r}")
    clock, cpu = time.perf_counter(), time.process_time()
    cfg = problem.configurations()
    shares, total = _shares(problem, cfg)
    how = "first fit"
    start = minimal_packing(problem)
    if start is None:
        ones = np.ones(problem.num_jobs, dtype=np.int64)
        start, how = pack_counts(problem, ones, ones), "search"
    program = None
    if start is None and beyond:
        program = exact_program(problem, cfg, symmetry=False)
        placed, why = repair(program, REPAIR_WORK)
        if placed is None:
            proven = why == "infeasible"
            reason = ("no placement of one worker and one PS per job exists (proven by CP-SAT)"
                      if proven else f"could not place one worker and one PS per job ({why})")
            return solution(problem, None, "smd", clock,
                            status=Status.INFEASIBLE if proven else Status.ERROR,
                            details={"reason": reason})
        start, how = Packing.of(problem, placed.workers, placed.ps), "repair"
    if start is None:
        return solution(problem, None, "smd", clock, details={
            "reason": "the first-fit rules could not place one worker and one PS per job"})
    phase1 = sum_of_ratios(problem, cfg, shares, epsilon, max_iterations)
    split = time.perf_counter()
    mu = phase1["mu"] if phase1["mu"] is not None else np.zeros(total.size)
    price = mu / total + 1e-6 / total  # per unit of each resource; every resource costs a little
    T, rows, small = cfg.time, np.arange(problem.num_jobs), _is_small(problem, cfg)

    def fill(pk: Packing) -> Packing:  # the knapsack step on true completion times
        return knapsack_step(pk, cfg.workers, cfg.ps, cfg.valid, T,
                             problem.completion_time(pk.w, pk.p),
                             problem.worker_demand @ price, problem.ps_demand @ price)

    start.relocate = RELOCATE
    starts = [fill(start.copy())]  # from one worker and one PS per job
    if small:  # also phase 1's choice, placed (every task searched) and topped up
        choice = phase1["choice"]
        realized = pack_counts(problem, cfg.workers[rows, choice], cfg.ps[rows, choice])
        starts += [] if realized is None else [fill(realized)]
    bound, prices = lagrangian_bound(problem, cfg, shares)
    bounds, lp = {"lagrangian": bound, "relaxation": None}, None
    if problem.num_jobs:
        program = program or exact_program(problem, cfg, symmetry=False)
        bounds["relaxation"], lp = relaxation(program)
        bound = max(bound, bounds["relaxation"] or -np.inf)
    if lp is not None and beyond and lp_start:  # the LP's placement rounded down
        rounded = _rounded(problem, program, lp)
        starts += [] if rounded is None else [fill(rounded)]
    # the bound's own choice (priced up until the cluster totals hold it), placed first fit
    choice = _fitting_choice(np.where(cfg.valid, T, np.inf), shares, prices)
    bound_start = None
    if choice is not None and beyond:
        w, p = cfg.workers[rows, choice], cfg.ps[rows, choice]
        realized, placed_by = pack_counts(problem, w, p), "first fit"
        if realized is None:  # the tabu search, then CP-SAT, places what first fit cannot
            found, placed_by = tabu_placement(problem, w, p, seed=seed), "tabu search"
            if found is None and place_limit > 0:
                found, _ = place(program or exact_program(problem, cfg, symmetry=False), choice,
                                 place_limit)
                placed_by = "cpsat"
            realized = None if found is None else Packing.of(problem, found.workers, found.ps)
            if realized is not None:
                realized.relocate = RELOCATE
        bound_start = placed_by if realized is not None else None
        starts += [] if realized is None else [fill(realized)]
    sizes = (problem.worker_demand @ price, problem.ps_demand @ price)
    # small problems: the passes' placement searches share one node budget
    passes = {"sizes": sizes, "nodes_left": [REPACK_NODES]} if small else \
        {"rounds": 2, "max_trials": problem.num_jobs}
    finals = [exchange_pass(problem, pk, cfg.workers, cfg.ps, T, **passes) for pk in starts]
    value = lambda pk: float(problem.completion_time(pk.w, pk.p).sum())  # noqa: E731
    values = [value(pk) for pk in finals]
    best_first = np.argsort(values, kind="stable")[:SEARCHED_STARTS]
    ranked, values = [finals[k] for k in best_first], [values[k] for k in best_first]
    pack = ranked[0]
    details = {key: phase1[key] for key in ("iterations", "residual", "stopped")}
    details["relaxed_objective"] = phase1["relaxed_objective"]
    details["start"] = how
    details["bound_start"] = bound_start
    details["paper_objective"] = value(pack)
    searched = time.perf_counter()
    target = bound * (1 + gap_tolerance)  # the searches stop once the objective is this close

    def left() -> float:  # CPU seconds left of the cap
        return time_limit - (time.process_time() - cpu)

    for k, start_pack in enumerate(ranked if problem.num_jobs and beyond else []):
        if k and (values[k] == values[k - 1] or value(pack) <= target * (1 + 1e-9)):
            continue  # most likely the same placement, or the first is close enough
        details["searched_starts"] = details.get("searched_starts", 0) + 1
        rest = len(ranked) - k  # the starts still to search share what is left of the cap
        if search_steps:
            # at most half of a start's share, so that the repacking step has time
            start_pack, stats = ruin_and_recreate(
                problem, cfg, start_pack, sizes, search_steps,
                left() / rest / (2 if repack_patience else 1), seed, target)
            _add(details, "search", stats)
        if repack_patience:
            placed, stats = repack(problem, Placement(start_pack.workers, start_pack.ps),
                                   repack_patience, seed=seed, bound=bound, target=target,
                                   time_limit=left() / rest)
            start_pack = Packing.of(problem, placed.workers, placed.ps)
            _add(details, "repack", stats)
        if k == 0 or value(start_pack) < value(pack):
            pack = start_pack
    if lns_steps and problem.num_jobs and beyond:
        guide = None if lp is None else (lp[program.x.columns].reshape(program.x.shape),
                                         lp[program.y.columns].reshape(program.y.shape))
        result, details["lns"] = improve(problem, Placement(pack.workers, pack.ps), lns_steps,
                                         seed, time_limit=left(), target=target, guide=guide)
    else:
        result = Placement(pack.workers, pack.ps)
    if upgrade_tries and 0 < problem.num_jobs <= UPGRADE_MAX_JOBS and beyond \
            and program is not None:
        result, details["upgrade"] = upgrade(problem, cfg, program, result, upgrade_tries,
                                             UPGRADE_WORK, bound)
    if beyond and problem.num_jobs:
        result, details["transfer"] = transfer(problem, result)
    details["phase_seconds"] = [split - clock, searched - split, time.perf_counter() - searched]
    details["bounds"] = bounds
    out = solution(problem, result, "smd", clock, bound=bound, details=details)
    out.details["gap"] = max(out.objective - bound, 0.0) / max(out.objective, 1e-12)
    if out.objective <= bound * (1 + 1e-9):
        out.status = Status.OPTIMAL
    return out
