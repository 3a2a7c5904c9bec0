"""LP-guided rounding for the Chronus lease MILP: a plan from an LP relaxation solution.

Units as in `chronus.LeaseProblem`: GPUs (gpus, capacity), leases (leases_needed, width),
slots (horizons; a slot is width[t] >= 1 leases, one lease in the classic window), value
(option_value). Below, "lease t" reads "slot t", and taking it gives a job width[t] leases. A plan is `chosen` (n,), each job's option or -1, and `held` (n, H) bool,
held[j, t] when job j holds lease t. Inputs from the LP: `s` (K,) its s_k and `x` (K, H) its
x_kt (0 past the horizon); both only steer the choices, any values give a feasible plan.

1. Options: each job tries the option of largest s_k (the first on ties) when that s_k >= 1/2
   or the job is admitted; the others wait for step 3.
2. Placement, a backward pass over leases t = H-1 .. 0. Candidates at t: trying jobs whose
   horizon covers t and that still need r_j > 0 leases, at most E_t of them (E_t: leases in
   slots 0..t, t + 1 with one lease per slot; more cannot fit in slots 0..t). They are taken while their GPUs fit in C_t, in the order: by boost (0 at
   first); then, in the LP-first order only, those the LP puts in t (x_kt = 1); then those that
   must take t (r_j = E_t); then by LP x_kt, slack E_t - r_j, GPUs (widest first). Jobs
   short of leases after a pass are repaired and the pass rerun, at most PASSES times: a job
   moves to its next looser option (`_next_looser`); at its loosest, an admitted job gains a
   boost and another is dropped. If jobs are still short, `_admission_pass` places the admitted
   jobs alone, as Chronus admission packs them, and step 3 starts from that.
3. Improvement, job by job in what the placement left free: a scheduled job moves to a more
   valuable option where that fits (its own leases included); then unscheduled jobs are
   inserted by LP s_k (their largest), then value per GPU-lease. Leases are picked by LP x_kt,
   then latest first.

Both lease orders are run (`lp_roundings`, the caller keeps the better plan): on 28 instances
of the 400-job benchmark (20 seeds and 8 boundaries of a trace) the LP-first order alone ends
0.62% below the LP bound (median; max 1.4%), the other 0.72% (max 2.6%) but better on 16 of
the 28, the better of the two 0.61% (max 1.4%); both together take ~35 ms.
"""

from __future__ import annotations

import numpy as np

from schedopt.policies.chronus.problem import LeaseProblem

# Placement passes before the admission pass takes over (the 400-job benchmark needs <= ~20).
PASSES = 30
# Lease orders tried (see the module docstring): with LP-integral holdings first, and without.
LP_FIRST = (True, False)
# An LP x_kt within this of 1 counts as an integral holding.
LP_ONE = 1e-6
# Leases of work a job may fall short of its need by (float sums), with the overhead per run.
TOLERANCE = 1e-10


def lp_roundings(problem: LeaseProblem, s: np.ndarray,
                 x: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Plans (chosen, held), one per lease order (LP_FIRST), each respecting capacity, horizons
    and lease counts and scheduling every admitted job whenever they pack latest-fit (see
    `_admission_pass`). The caller keeps the better one."""
    return [_rounding(problem, s, x, lp_first) for lp_first in LP_FIRST]


def _rounding(problem: LeaseProblem, s: np.ndarray, x: np.ndarray,
              lp_first: bool) -> tuple[np.ndarray, np.ndarray]:
    option = _first_options(problem, s)
    looser = _next_looser(problem)
    boost = np.zeros(problem.num_jobs)
    for _ in range(PASSES):
        held, short = _backward_pass(problem, option, x, boost, lp_first)
        if not short.any():
            return _improve(problem, option, held, s, x)
        moves = short & (_of_option(looser, option) >= 0)
        option[moves] = looser[option[moves]]
        boost[short & ~moves & problem.admitted] += 1
        option[short & ~moves & ~problem.admitted] = -1
    loosest = _best_per_job(problem, problem.option_horizon.astype(float))
    option, held = _admission_pass(problem, loosest, x)
    return _improve(problem, option, held, s, x)


def _next_looser(problem: LeaseProblem) -> np.ndarray:
    """(K,) the job's option after each in the order horizon ascending, value descending; -1
    for the last (loosest)."""
    order = np.lexsort((-problem.option_value, problem.option_horizon, problem.option_job))
    same = problem.option_job[order[1:]] == problem.option_job[order[:-1]]
    looser = np.full(problem.num_options, -1, dtype=np.int64)
    looser[order[:-1][same]] = order[1:][same]
    return looser


def _admission_pass(problem: LeaseProblem, loosest: np.ndarray,
                    x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The placement when the repairs run out: admitted jobs alone at their loosest options, in
    Chronus's admission order (loosest horizon first, then job index; chronus_admission) as
    strictly decreasing boosts. Lease by lease, each job then takes lease t when it fits after
    the jobs before it, which gives every job its latest leases with room left by those jobs:
    the admission's latest-fit packing, so every admitted job is placed when that packing
    places them all (the admission invariant). Jobs it cannot place stay unscheduled."""
    J = problem.num_jobs
    option = np.where(problem.admitted, loosest, -1)
    order = np.lexsort((np.arange(J), -_of_option(problem.option_horizon, loosest)))
    boost = np.empty(J)
    boost[order] = J - np.arange(J)
    held, short = _backward_pass(problem, option, x, boost, lp_first=False)
    option[short] = -1
    held[short] = False
    return option, held


def _best_per_job(problem: LeaseProblem, key: np.ndarray) -> np.ndarray:
    """Per job, its option of largest `key` (the first on ties); -1 for a job without options."""
    order = np.lexsort((np.arange(problem.num_options), -key, problem.option_job))
    jobs = problem.option_job[order]
    first = np.ones(jobs.size, dtype=bool)
    first[1:] = jobs[1:] != jobs[:-1]
    best = np.full(problem.num_jobs, -1, dtype=np.int64)
    best[jobs[first]] = order[first]
    return best


def _of_option(values: np.ndarray, option: np.ndarray) -> np.ndarray:
    """values[option] per job, 0 where option is -1."""
    out = np.zeros(option.shape[0], dtype=values.dtype)
    out[option >= 0] = values[option[option >= 0]]
    return out


def _first_options(problem: LeaseProblem, s: np.ndarray) -> np.ndarray:
    best = _best_per_job(problem, s)
    tries = (best >= 0) & (problem.admitted | (_of_option(s, best) >= 0.5))
    return np.where(tries, best, -1)


def _backward_pass(problem: LeaseProblem, option: np.ndarray, x: np.ndarray, boost: np.ndarray,
                   lp_first: bool) -> tuple[np.ndarray, np.ndarray]:
    """One placement pass: (held, short), short[j] when trying job j got fewer than n_j leases."""
    H = problem.num_leases
    trying = np.flatnonzero(option >= 0)
    k = option[trying]
    g = problem.gpus[trying]
    left = problem.need[trying].copy()
    horizon = np.minimum(problem.option_horizon[k], H)
    held = np.zeros((problem.num_jobs, H), dtype=bool)
    end, width = problem.slot_end, problem.width
    # Per run (see LeaseProblem): a slot taken right before one already taken extends that
    # run (its whole width counts), any other starts a run (less the overhead), and slot 0
    # continues the lease before it for a job that held its GPUs there.
    ov = problem.overhead
    refund = ov * problem.held[trying]
    took_next = np.zeros(trying.size, dtype=bool)
    done = TOLERANCE if problem.per_run else 0
    # No job may take a slot at or past every horizon: the pass starts below the largest.
    for t in range(min(int(horizon.max(initial=0)), H) - 1, -1, -1):
        starts = ov * ~took_next
        reach = end[t] - starts + refund  # the most slots 0..t can still give
        cand = np.flatnonzero((horizon > t) & (left > done) & (left <= reach + done))
        if cand.size == 0:
            took_next[:] = False
            continue
        slack = reach[cand] - left[cand]
        lp = x[k[cand], t]
        keys = (-g[cand], slack, -lp, slack > done, *((lp < 1 - LP_ONE,) if lp_first else ()),
                -boost[trying[cand]])
        order = cand[np.lexsort(keys)]
        take = order[_take_while_fits(g[order], int(problem.capacity[t]))]
        gain = width[t] - starts[take] + (refund[take] if t == 0 else 0.0)
        left[take] = np.maximum(left[take] - gain, 0)
        held[trying[take], t] = True
        took_next[:] = False
        took_next[take] = True
    short = np.zeros(problem.num_jobs, dtype=bool)
    short[trying[left > done]] = True
    return held, short


def _take_while_fits(width: np.ndarray, free: int) -> np.ndarray:
    """Indices the sequential greedy takes (each item in order when its width fits in what is
    left). Vectorized by rounds: drop items wider than what is left (they never fit again), then
    take the longest prefix that fits; the item after it no longer fits, so each round takes at
    least one item and the loop ends."""
    idx = np.arange(width.size)
    taken = [idx[:0]]
    while idx.size and free > 0:
        idx = idx[width[idx] <= free]
        total = np.cumsum(width[idx])
        n = int(np.searchsorted(total, free, side="right"))
        taken.append(idx[:n])
        free -= int(total[n - 1]) if n else 0
        idx = idx[n:]
    return np.concatenate(taken)


def _pick(problem: LeaseProblem, j: int, k: int, free: np.ndarray,
          x: np.ndarray) -> np.ndarray | None:
    """Slots t < D_k with g_j GPUs free, by largest LP x_kt (then latest), until they hold the
    n_j leases; None when all of them hold fewer."""
    horizon = min(int(problem.option_horizon[k]), problem.num_leases)
    fits = np.flatnonzero(free[:horizon] >= problem.gpus[j])
    n = int(problem.leases_needed[j])  # per run: enough even if every slot starts a run
    if problem.width.max(initial=1) == 1 and not problem.per_run:  # one lease per slot
        return fits[np.lexsort((-fits, -x[k, fits]))[:n]] if fits.size >= n else None
    ranked = fits[np.lexsort((-fits, -x[k, fits]))]
    if problem.per_run:  # a slot of width a gives at least a - overhead
        held = np.cumsum(problem.width[ranked] - problem.overhead)
        count = int(np.searchsorted(held, problem.work[j] - TOLERANCE))
        return None if count >= ranked.size else ranked[:count + 1]
    held = np.cumsum(problem.width[ranked])
    count = int(np.searchsorted(held, n))
    if count >= ranked.size:
        return None
    return ranked[:count + 1]


def _improve(problem: LeaseProblem, chosen: np.ndarray, held: np.ndarray, s: np.ndarray,
             x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step 3 of the module docstring (a sequential greedy: each move changes what is free)."""
    g, value = problem.gpus, problem.option_value
    free = problem.capacity - g @ held
    # Each job's options, most valuable first: by_value[first[j]:first[j + 1]].
    by_value = np.lexsort((-value, problem.option_job))
    first = np.searchsorted(problem.option_job[by_value], np.arange(problem.num_jobs + 1))
    best_value = _of_option(value, _best_per_job(problem, value))
    for j in np.flatnonzero((chosen >= 0) & (_of_option(value, chosen) < best_value)):
        options = by_value[first[j]:first[j + 1]]
        free[held[j]] += g[j]
        for k in options[value[options] > value[chosen[j]]]:
            leases = _pick(problem, j, k, free, x)
            if leases is not None:
                chosen[j] = k
                held[j] = False
                held[j, leases] = True
                break
        free[held[j]] -= g[j]
    density = best_value / (g * problem.need)
    best_s = _of_option(s, _best_per_job(problem, s))
    out = np.flatnonzero(chosen < 0)
    for j in out[np.lexsort((-density[out], -best_s[out]))]:
        for k in by_value[first[j]:first[j + 1]]:
            leases = _pick(problem, j, k, free, x)
            if leases is not None:
                chosen[j] = k
                held[j, leases] = True
                free[leases] -= g[j]
                break
    return chosen, held
