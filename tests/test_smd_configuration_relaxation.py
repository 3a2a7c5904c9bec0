"""The relaxation of smd_exact's MILP with integer configurations and a fractional placement
(`schedopt.policies.smd.bound.configuration_relaxation`, SCIP) against the same relaxation
enumerated (every configuration choice, its placement an LP by scipy's linprog), against the LP
relaxation and against the brute-force optimum."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from scipy.optimize import linprog

from smd_strategies import ps_instances
from test_smd import brute_force
from schedopt.instance import parse_instance
from schedopt.instance.model import FORMAT
from schedopt.policies.smd.bound import configuration_relaxation, relaxation
from schedopt.policies.smd.milp import exact_program
from schedopt.policies.smd.model import SmdProblem

pytest.importorskip("ortools")


def _most_per_machine(demand: np.ndarray, C: np.ndarray) -> np.ndarray:
    """(n, H) how many whole tasks of each job's `demand` (n, R) one machine holds: the bound
    smd_exact's MILP puts on each x_ih and y_ih, which a fractional placement keeps."""
    with np.errstate(divide="ignore", invalid="ignore"):
        fit = np.where(demand[:, None, :] > 0, C[None, :, :] / demand[:, None, :], np.inf)
    return np.floor(fit.min(axis=2) + 1e-9)


def _fits_fractionally(problem: SmdProblem, workers: np.ndarray, ps: np.ndarray) -> bool:
    """Whether workers[i] workers and ps[i] PSs of every job can be spread over the machines in
    fractional amounts within every capacity, at most as many on one machine as whole tasks
    fit there (an LP feasibility problem, scipy's linprog)."""
    n, H = problem.num_jobs, problem.num_machines
    C = problem.capacity
    most = np.concatenate([_most_per_machine(problem.worker_demand, C).ravel(),
                           _most_per_machine(problem.ps_demand, C).ravel()])
    rows = [(h, r) for h in range(H) for r in range(C.shape[1]) if np.isfinite(C[h, r])]
    A_ub = np.zeros((len(rows), 2 * n * H))  # columns: x[i, h] then y[i, h]
    for k, (h, r) in enumerate(rows):
        A_ub[k, np.arange(n) * H + h] = problem.worker_demand[:, r]
        A_ub[k, n * H + np.arange(n) * H + h] = problem.ps_demand[:, r]
    A_eq = np.zeros((2 * n, 2 * n * H))
    for i in range(n):
        A_eq[i, i * H:(i + 1) * H] = 1
        A_eq[n + i, n * H + i * H:n * H + (i + 1) * H] = 1
    out = linprog(np.zeros(2 * n * H), A_ub=A_ub if rows else None,
                  b_ub=np.array([C[h, r] for h, r in rows]) if rows else None,
                  A_eq=A_eq, b_eq=np.concatenate([workers, ps]),
                  bounds=[(0, None if np.isinf(u) else u) for u in most],
                  method="highs")
    return out.status == 0


def _enumerated(problem: SmdProblem) -> float | None:
    """min over every choice of one configuration per job whose tasks fit fractionally."""
    cfg = problem.configurations()
    choices = [np.flatnonzero(cfg.valid[i]) for i in range(problem.num_jobs)]
    best = None
    for choice in itertools.product(*choices):
        jobs = np.arange(problem.num_jobs)
        w, p = cfg.workers[jobs, choice], cfg.ps[jobs, choice]
        value = float(problem.completion_time(w, p).sum())
        if (best is None or value < best) and _fits_fractionally(problem, w, p):
            best = value
    return best


def _floor(problem: SmdProblem) -> float | None:
    return configuration_relaxation(exact_program(problem, problem.configurations()))


def _one_job_doc(nic_gbps: float) -> dict:
    """One job on one machine of 8 GPUs whose NIC (Gbit/s) holds a worker or a PS of 10 each."""
    ps = {"gpus": 0, "cpus": 1, "memory_gb": 1, "bandwidth_gbps": 10}
    spec = {"epochs": 1, "samples_per_epoch": 100000, "batch_per_worker": 32,
            "compute_s_per_sample": 0.001, "model_size_gb": 0.5,
            "worker": {**ps, "gpus": 1}, "ps": ps, "max_workers": 2, "max_ps": 2}
    return {"format": FORMAT, "name": "one job",
            "cluster": {"gpu_types": {"gpu": {"count": 8}},
                        "nodes": [{"id": "m0", "gpu_type": "gpu", "gpus": 8, "cpus": 64,
                                   "memory_gb": 512, "bandwidth_gbps": nic_gbps}]},
            "jobs": [{"id": "j0", "type": "m", "throughput": {"gpu": 1.0},
                      "parameter_server": spec}]}


def test_a_job_that_cannot_take_its_larger_configuration_is_bounded_by_its_smaller_one():
    # a NIC of 35 Gbit/s holds 3 tasks of 10: (1, 1) and (2, 1) or (1, 2) fit, (2, 2) does not.
    # The LP takes half of (2, 2) and half of a smaller one (35 = 0.5 x 40 + 0.5 x 30); with the
    # configuration integer the bound is the best three-task configuration, the optimum.
    instance = parse_instance(_one_job_doc(35.0))
    problem = SmdProblem.from_instance(instance)
    cfg = problem.configurations()
    T = {(int(w), int(p)): float(t) for w, p, t, ok in
         zip(cfg.workers[0], cfg.ps[0], cfg.time[0], cfg.valid[0]) if ok}
    assert (2, 2) in T and T[(2, 2)] < min(t for k, t in T.items() if sum(k) <= 3)
    best_fitting = min(t for k, t in T.items() if sum(k) <= 3)
    lp, _ = relaxation(exact_program(problem, cfg))
    assert lp < best_fitting - 1e-6
    assert _floor(problem) == pytest.approx(best_fitting, rel=1e-9)
    assert brute_force(instance) == pytest.approx(best_fitting, rel=1e-9)


def test_the_relaxation_keeps_how_many_whole_tasks_fit_on_a_machine():
    # Two machines of 2 GPUs with NICs of 33 and 27 Gbit/s; job j1's workers take 25 each, so
    # one machine holds one of them. With (2 workers, 1 PS) for both jobs, the totals fit
    # (60 of 60 Gbit/s), but only by putting 1.2 of j1's workers on one machine; with at most
    # one there, each machine also gets one of j0's workers and the 27 Gbit/s NIC overflows.
    # So the bound is (2, 1) + (1, 1), the optimum, not the looser 8.1 s of both at (2, 1).
    def job(i, worker_gbps):
        task = {"bandwidth_gbps": 2.5, "gpus": 0, "cpus": 1, "memory_gb": 2}
        return {"id": f"j{i}", "throughput": {"g": 1.0}, "parameter_server": {
            "epochs": 1, "samples_per_epoch": 1000, "batch_per_worker": 16,
            "compute_s_per_sample": 0.0001, "model_size_gb": 0.01,
            "worker": {**task, "gpus": 1, "bandwidth_gbps": worker_gbps}, "ps": task,
            "max_workers": 2, "max_ps": 1}}

    nodes = [{"id": f"m{h}", "gpu_type": "g", "gpus": 2, "cpus": 8, "memory_gb": 16,
              "bandwidth_gbps": nic} for h, nic in enumerate((33, 27))]
    instance = parse_instance({"format": FORMAT, "cluster": {"gpu_types": {"g": {"count": 4}},
                                                             "nodes": nodes},
                               "jobs": [job(0, 2.5), job(1, 25.0)]})
    problem = SmdProblem.from_instance(instance)
    cfg = problem.configurations()
    both_large = float(cfg.time[:, cfg.workers[0] == 2].sum())
    assert both_large == pytest.approx(8.1)
    assert _floor(problem) == pytest.approx(_enumerated(problem), rel=1e-9)
    assert _floor(problem) == pytest.approx(brute_force(instance), rel=1e-9)
    assert _floor(problem) > both_large + 0.01


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ps_instances(max_jobs=3, max_machines=2, max_workers=3, max_ps=2, tight=True))
def test_configuration_relaxation_is_the_enumerated_one_and_between_lp_and_optimum(instance):
    problem = SmdProblem.from_instance(instance)
    expected = _enumerated(problem)
    floor = _floor(problem)
    if expected is None:  # nothing fits even fractionally: no finite bound is claimed
        assert floor is None or floor == np.inf or brute_force(instance) is None
        return
    assert floor == pytest.approx(expected, rel=1e-6)
    lp, _ = relaxation(exact_program(problem, problem.configurations()))
    assert lp is None or lp <= floor * (1 + 1e-9)
    optimum = brute_force(instance)
    assert optimum is None or floor <= optimum * (1 + 1e-9)
