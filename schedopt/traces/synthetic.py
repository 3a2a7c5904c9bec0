"""Synthetic traces drawn like Gavel's job generator (Narayanan et al., OSDI'20, section 7).

Per job, with one seeded `numpy.random.default_rng(seed)`:
- scale factor s = 1/2/4/8 with probability 0.7/0.1/0.15/0.05 (Gavel's Philly-derived mix), or
  always 1 with `single_gpu` (Gavel's generate_multi_gpu_jobs=False);
- duration (isolated runtime on the reference GPU type, seconds) 60 * 10^U(1.5, 3) with
  probability 0.8, else 60 * 10^U(3, 4);
- job type uniform over the single-GPU templates that have an s-GPU version (Gavel draws a
  template and draws again until it has one: the same distribution), see
  `performance.job_types_by_scale_factor`;
- arrivals: Poisson at `jobs_per_hour` (exponential gaps with mean 3600 / rate s), the first
  job at 0 s; rate 0 puts every job at 0 s.
total_steps = round(duration * steps/s on the reference type), weight 1, and with
`deadline_factor` F a deadline of F * duration seconds after arrival.
"""

from __future__ import annotations

import numpy as np

from schedopt.errors import SchedoptError
from schedopt.instance.model import Instance
from schedopt.traces.common import build_trace, counts_of, job_id, job_type_pool
from schedopt.traces.performance import subset_performance

SCALE_FACTORS = (1, 2, 4, 8)
SCALE_FACTOR_PROBABILITIES = (0.7, 0.1, 0.15, 0.05)


def gavel_duration(rng) -> float:
    """Gavel's job-duration distribution, seconds: 60 * 10^U(1.5,3) w.p. 0.8, else 60 * 10^U(3,4)."""
    if rng.random() < 0.8:
        return 60.0 * 10 ** rng.uniform(1.5, 3)
    return 60.0 * 10 ** rng.uniform(3, 4)


def gavel_scale_factor(rng) -> int:
    """s = 1/2/4/8 with probability 0.7/0.1/0.15/0.05 (Gavel's Philly-derived distribution)."""
    r = rng.uniform()
    if r < 0.7:
        return 1
    if r < 0.8:
        return 2
    if r < 0.95:
        return 4
    return 8


def synthetic_trace(performance: dict, cluster: dict, num_jobs: int, jobs_per_hour: float,
                    seed: int = 0, *, reference: str | None = None, single_gpu: bool = False,
                    deadline_factor: float | None = None, colocation: bool = True) -> Instance:
    """`num_jobs` jobs drawn as the module docstring says, as a validated Instance.

    performance: a `performance` section (e.g. `gavel_performance(...)`); cluster: a `cluster`
    section; reference: GPU type whose steps/s define total_steps (default: the fastest on
    average, v100 for Gavel's table). Ids j000.. in arrival order. Same seed, same trace.
    """
    if num_jobs < 1:
        raise SchedoptError(f"the number of jobs must be at least 1, got {num_jobs}")
    if jobs_per_hour < 0:
        raise SchedoptError(f"the arrival rate must be >= 0 jobs/hour, got {jobs_per_hour}")
    if deadline_factor is not None and not deadline_factor > 0:
        raise SchedoptError(f"the deadline factor must be > 0, got {deadline_factor}")
    reference, candidates = job_type_pool(performance, cluster, reference)
    counts = counts_of(cluster)
    for s in (1,) if single_gpu else SCALE_FACTORS:
        if not candidates.get(s):
            hint = "" if s == 1 else "; use a larger cluster or single-GPU jobs only"
            raise SchedoptError(f"no job type in the performance model runs on {s} GPU(s) of this "
                                f"cluster ({', '.join(f'{n} {t}' for t, n in counts.items())}){hint}")
    rng = np.random.default_rng(seed)
    jobs, now = [], 0.0
    for i in range(num_jobs):
        s = 1 if single_gpu else gavel_scale_factor(rng)
        duration = gavel_duration(rng)
        kind = candidates[s][int(rng.integers(len(candidates[s])))]
        if i > 0 and jobs_per_hour > 0:
            now += float(rng.exponential(3600.0 / jobs_per_hour))
        steps = max(1, round(duration * performance["throughput"][kind][reference]))
        job = {"id": job_id(i, num_jobs), "type": kind, "scale_factor": s, "weight": 1.0,
               "arrival_time": now, "total_steps": steps}
        if deadline_factor is not None:
            job["deadline"] = deadline_factor * duration
        jobs.append(job)
    perf = subset_performance(performance, {j["type"] for j in jobs}, list(cluster["gpu_types"]),
                              colocation=colocation)
    name = f"synthetic (Gavel-style, {num_jobs} jobs, {jobs_per_hour:g} jobs/h, seed {seed})"
    return build_trace(jobs, perf, cluster, name, "<synthetic>")
