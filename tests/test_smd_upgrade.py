"""smd's upgrade step (`schedopt.policies.smd.upgrade`) against the same greedy rule with every
placement decided by enumeration instead of CP-SAT, on clusters of two machines small enough to
try every split of every job's tasks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from schedopt.api import solve
from schedopt.errors import PolicyError
from schedopt.policies.smd.algorithm import smd
from schedopt.policies.smd.milp import exact_program
from schedopt.policies.smd.model import Placement, SmdProblem
from schedopt.policies.smd.packing import minimal_packing
from schedopt.policies.smd.upgrade import upgrade
from schedopt.traces.parameter_server import parameter_server_instance


def fits(problem: SmdProblem, workers: np.ndarray, ps: np.ndarray) -> bool:
    """Whether some split of each job's workers and PSs over the two machines fits them."""
    splits = [list(itertools.product(range(w + 1), range(p + 1))) for w, p in zip(workers, ps)]
    finite = np.isfinite(problem.capacity)
    for pick in itertools.product(*splits):
        on_first = np.array(pick)
        X = np.column_stack([on_first[:, 0], workers - on_first[:, 0]])
        Y = np.column_stack([on_first[:, 1], ps - on_first[:, 1]])
        if np.all(~finite | (problem.usage(X, Y) <= problem.capacity + 1e-9)):
            return True
    return False


def greedy_by_enumeration(problem: SmdProblem, workers: np.ndarray, ps: np.ndarray):
    """The upgrade rule (the largest fall of one job's time for one task more, or for a worker
    and a PS more once the job has no one-task step left; pairs that do not fit never tried
    again) with `fits` deciding, until no pair helps."""
    cfg = problem.configurations()
    rows = np.arange(problem.num_jobs)
    choice = (cfg.valid & (cfg.workers == workers[:, None]) & (cfg.ps == ps[:, None])).argmax(axis=1)
    T = np.where(cfg.valid, cfg.time, np.inf)
    failed = np.zeros(cfg.valid.shape, dtype=bool)  # no totals rule here: enumeration decides
    while True:
        W, P = cfg.workers[rows, choice], cfg.ps[rows, choice]
        fall = T[rows, choice][:, None] - T
        steps = []
        for i in rows:
            singles = [k for k in range(T.shape[1]) if cfg.valid[i, k] and not failed[i, k]
                       and fall[i, k] > 0 and (cfg.workers[i, k], cfg.ps[i, k]) in
                       ((W[i] + 1, P[i]), (W[i], P[i] + 1))]
            both = [k for k in range(T.shape[1]) if cfg.valid[i, k] and not failed[i, k]
                    and fall[i, k] > 0 and (cfg.workers[i, k], cfg.ps[i, k]) == (W[i] + 1, P[i] + 1)]
            steps += [(fall[i, k], i, k) for k in (singles or both)]
        if not steps:
            return cfg.workers[rows, choice], cfg.ps[rows, choice]
        _, i, k = max(steps, key=lambda s: (s[0], -s[1], -s[2]))
        trial = choice.copy()
        trial[i] = k
        if fits(problem, cfg.workers[rows, trial], cfg.ps[rows, trial]):
            choice = trial
        else:
            failed[i, k] = True


@pytest.mark.parametrize("regime", ["nic", "mixed"])
def test_upgrade_places_what_enumeration_places(regime):
    placed = refused = cases = 0
    for seed in range(8):
        problem = SmdProblem.from_instance(parameter_server_instance(
            3, 2, seed=seed, max_workers=3, max_ps=2, regime=regime))
        start = minimal_packing(problem)
        if start is None:  # one worker and one PS per job do not fit these two machines
            continue
        cases += 1
        cfg = problem.configurations()
        program = exact_program(problem, cfg, symmetry=False)
        got, stats = upgrade(problem, cfg, program, Placement(start.workers, start.ps),
                             tries=100, work=10.0)
        workers, ps = greedy_by_enumeration(problem, start.workers.sum(axis=1),
                                            start.ps.sum(axis=1))
        np.testing.assert_array_equal(got.total_workers, workers)
        np.testing.assert_array_equal(got.total_ps, ps)
        assert stats["placed"] == int((workers + ps).sum() - 2 * problem.num_jobs)
        finite = np.isfinite(problem.capacity)
        assert np.all(~finite | (problem.usage(got.workers, got.ps) <= problem.capacity + 1e-9))
        placed += stats["placed"]
        refused += stats["tries"] - stats["placed"]
    assert cases >= 4 and placed > 0 and refused > 0  # both outcomes of a try were checked


def test_no_try_falls_below_the_bound():
    """A bound equal to the start's objective leaves no step that could be placed: no call."""
    for seed in range(4):
        problem = SmdProblem.from_instance(parameter_server_instance(
            3, 2, seed=seed, max_workers=3, max_ps=2, regime="nic"))
        start = minimal_packing(problem)
        if start is None:
            continue
        cfg = problem.configurations()
        program = exact_program(problem, cfg, symmetry=False)
        objective = problem.completion_time(start.workers.sum(axis=1), start.ps.sum(axis=1)).sum()
        got, stats = upgrade(problem, cfg, program, Placement(start.workers, start.ps), tries=100,
                             work=10.0, bound=objective)
        assert stats == {"tries": 0, "placed": 0}
        np.testing.assert_array_equal(got.workers, start.workers)
        _, free = upgrade(problem, cfg, program, Placement(start.workers, start.ps), tries=100,
                          work=10.0)
        assert free["tries"] > 0  # without the bound the same start has steps to try


def test_upgrade_stops_at_its_tries_and_smd_reports_them():
    problem = SmdProblem.from_instance(parameter_server_instance(3, 2, seed=0, max_workers=3,
                                                                 max_ps=2, regime="nic"))
    start = minimal_packing(problem)
    cfg = problem.configurations()
    program = exact_program(problem, cfg, symmetry=False)
    _, stats = upgrade(problem, cfg, program, Placement(start.workers, start.ps), tries=1,
                       work=10.0)
    assert stats["tries"] == 1
    result = smd(problem, upgrade_tries=2)
    assert result.status.value == "optimal" or result.details["upgrade"]["tries"] <= 2
    with pytest.raises(ValueError, match="upgrade_tries"):
        smd(problem, upgrade_tries=-1)
    with pytest.raises(PolicyError, match="upgrade_tries must be an integer >= 0"):
        solve(parameter_server_instance(3, 2, seed=0, regime="nic"), "smd", upgrade_tries=-1)


def test_smd_skips_the_upgrade_step_above_its_job_limit(monkeypatch):
    import schedopt.policies.smd.algorithm as algorithm

    problem = SmdProblem.from_instance(parameter_server_instance(6, 2, seed=1, regime="mixed"))
    monkeypatch.setattr(algorithm, "UPGRADE_MAX_JOBS", problem.num_jobs)
    assert "upgrade" in smd(problem, upgrade_tries=6).details
    monkeypatch.setattr(algorithm, "UPGRADE_MAX_JOBS", problem.num_jobs - 1)
    skipped = smd(problem, upgrade_tries=6)
    assert "upgrade" not in skipped.details
    assert skipped.objective == smd(problem, upgrade_tries=0).objective


def test_the_upgrade_step_is_off_by_default():
    # since the repacking step it placed nothing the other steps miss (docs/smd.md)
    problem = SmdProblem.from_instance(parameter_server_instance(6, 2, seed=1, regime="mixed"))
    assert "upgrade" not in smd(problem).details
