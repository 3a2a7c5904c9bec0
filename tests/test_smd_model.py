"""The parameter-server completion-time model (docs/smd.md): hand-computed closed forms, its
parts, the configurations kept, the arrays read from an instance and placement checks."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from schedopt.errors import PolicyError
from schedopt.policies.smd.model import (
    Placement, SmdProblem, completion_time, completion_time_parts,
)
from schedopt.instance import parse_instance
from schedopt.instance.model import ParameterServerSpec, TaskDemand

# One job by hand: 2 epochs of 6,400 samples, batch 32 per worker, 0.01 s per sample,
# gradient 0.5 GB (= 4 Gbit), workers at 10 Gbit/s, PSs at 20 Gbit/s.
SPEC = ParameterServerSpec(epochs=2, samples_per_epoch=6400.0, batch_per_worker=32,
                           compute_s_per_sample=(0.004, 0.006), model_size_gb=(0.2, 0.3),
                           worker=TaskDemand(10.0, gpus=1), ps=TaskDemand(20.0), max_workers=8,
                           max_ps=4)

DOC = {
    "format": "schedopt-instance/1",
    "cluster": {"gpu_types": {"g": {"count": 6}},
                "nodes": [{"id": "a", "gpu_type": "g", "gpus": 4, "cpus": 16, "memory_gb": 64,
                           "bandwidth_gbps": 40},
                          {"id": "b", "gpu_type": "g", "gpus": 2, "cpus": 8, "memory_gb": 32,
                           "bandwidth_gbps": 25}]},
    "jobs": [{"id": "x", "throughput": {"g": 1.0}, "parameter_server": {
        "epochs": 2, "samples_per_epoch": 6400, "batch_per_worker": 32,
        "compute_s_per_sample": [0.004, 0.006], "model_size_gb": [0.2, 0.3],
        "worker": {"bandwidth_gbps": 10, "cpus": 4, "memory_gb": 8},
        "ps": {"bandwidth_gbps": 20, "cpus": 2, "memory_gb": 4}, "max_workers": 8, "max_ps": 4}}],
}


def test_completion_time_matches_the_hand_computed_closed_form():
    # per iteration: compute 32 x 0.01 = 0.32 s; worker side 2 x 4 Gbit / 10 = 0.8 s;
    # PS side 2 x 4 x w / (p x 20) = 0.4 w / p s; communication = the larger of the two.
    # iterations: 2 x 6400 / (32 w) = 400 / w.
    # (1, 1): tau = 0.32 + max(0.8, 0.4) = 1.12 s, T = 400 x 1.12 = 448 s
    # (4, 1): tau = 0.32 + max(0.8, 1.6) = 1.92 s, T = 100 x 1.92 = 192 s
    # (4, 2): tau = 0.32 + max(0.8, 0.8) = 1.12 s, T = 100 x 1.12 = 112 s
    # (8, 1): tau = 0.32 + 3.2 = 3.52 s, T = 50 x 3.52 = 176 s
    T = completion_time(SPEC, [1, 4, 4, 8], [1, 1, 2, 1])
    np.testing.assert_allclose(T, [448.0, 192.0, 112.0, 176.0], rtol=1e-12)


def test_parts_add_up_and_broadcast():
    parts = completion_time_parts(SPEC, np.arange(1, 9)[:, None], np.array([1, 2, 4])[None, :])
    assert parts.completion_s.shape == (8, 3)
    np.testing.assert_allclose(parts.compute_s, 0.32)
    np.testing.assert_allclose(parts.worker_comm_s, 0.8)
    np.testing.assert_allclose(parts.ps_comm_s, 0.4 * np.arange(1, 9)[:, None] / np.array([1, 2, 4]))
    tau = parts.compute_s + np.maximum(parts.worker_comm_s, parts.ps_comm_s)
    np.testing.assert_allclose(parts.iteration_s, tau)
    np.testing.assert_allclose(parts.iterations, 400.0 / np.arange(1, 9)[:, None] * np.ones(3))
    np.testing.assert_allclose(parts.completion_s, parts.iterations * tau)


def test_more_workers_or_ps_never_slow_a_job_down():
    T = completion_time(SPEC, np.arange(1, 33)[:, None], np.arange(1, 17)[None, :])
    assert (np.diff(T, axis=0) <= 1e-9).all() and (np.diff(T, axis=1) <= 1e-9).all()


def test_completion_time_needs_a_worker_and_a_ps():
    with pytest.raises(PolicyError, match="at least 1 worker and 1 parameter server"):
        completion_time(SPEC, 0, 1)


def test_problem_arrays_and_its_completion_time_agree_with_the_spec():
    problem = SmdProblem.from_instance(parse_instance(copy.deepcopy(DOC)))
    assert problem.machine_ids == ("a", "b")
    np.testing.assert_array_equal(problem.capacity, [[4, 16, 64, 40], [2, 8, 32, 25]])
    np.testing.assert_array_equal(problem.worker_demand, [[1, 4, 8, 10]])
    np.testing.assert_array_equal(problem.ps_demand, [[0, 2, 4, 20]])
    assert problem.completion_time(np.array([4]), np.array([2]))[0] == pytest.approx(112.0)
    assert problem.numerator(np.array([4]), np.array([2]))[0] == pytest.approx(12800 * 1.12)
    assert problem.denominator(np.array([4]))[0] == 128.0


def test_configurations_leave_out_exactly_the_dominated_ones():
    problem = SmdProblem.from_instance(parse_instance(copy.deepcopy(DOC)))
    cfg = problem.configurations()
    kept = {(int(w), int(p)) for w, p, v in zip(cfg.workers[0], cfg.ps[0], cfg.valid[0]) if v}
    # brute force: (w, p) is kept iff no other (w', p') <= (w, p) is as fast
    grid = [(w, p) for w in range(1, 9) for p in range(1, 5)]
    T = {c: float(completion_time(SPEC, *c)) for c in grid}
    expected = {c for c in grid
                if not any(o != c and o[0] <= c[0] and o[1] <= c[1] and T[o] <= T[c] for o in grid)}
    assert kept == expected
    assert (cfg.workers[0, 0], cfg.ps[0, 0]) == (1, 1)
    np.testing.assert_allclose(cfg.time[0][cfg.valid[0]],
                               [T[(int(w), int(p))] for w, p in zip(cfg.workers[0][cfg.valid[0]],
                                                                     cfg.ps[0][cfg.valid[0]])])


def test_problem_rejects_jobs_without_parameter_server_and_nodes_without_resources():
    doc = copy.deepcopy(DOC)
    doc["jobs"].append({"id": "plain", "throughput": {"g": 1.0}})
    with pytest.raises(PolicyError, match="need `parameter_server` on every job; 1 job"):
        SmdProblem.from_instance(parse_instance(doc))
    doc = copy.deepcopy(DOC)
    del doc["cluster"]["nodes"][1]["bandwidth_gbps"]
    with pytest.raises(PolicyError, match="node 'b' does not state `bandwidth_gbps`"):
        SmdProblem.from_instance(parse_instance(doc))


def test_a_resource_no_task_asks_for_may_be_left_out_and_is_unlimited():
    doc = copy.deepcopy(DOC)
    for node in doc["cluster"]["nodes"]:
        del node["memory_gb"]
    for role in ("worker", "ps"):
        del doc["jobs"][0]["parameter_server"][role]["memory_gb"]
    problem = SmdProblem.from_instance(parse_instance(doc))
    assert np.isinf(problem.capacity[:, 2]).all()


def test_placement_violations_name_the_machine_and_resource():
    problem = SmdProblem.from_instance(parse_instance(copy.deepcopy(DOC)))
    assert Placement(np.array([[2, 1]]), np.array([[1, 0]])).violations(problem) == []
    # 2 workers + 1 PS on b: 2 x 4 + 2 = 10 cores > 8, 2 x 10 + 20 = 40 Gbit/s > 25
    problems = Placement(np.array([[0, 2]]), np.array([[0, 1]])).violations(problem)
    assert problems == ["machine b: cpus over capacity by 2",
                        "machine b: bandwidth_gbps over capacity by 15"]
    assert "needs at least 1 of each" in Placement(np.array([[1, 0]]), np.array([[0, 0]])).violations(problem)[0]


def test_the_command_names_the_file_and_field_a_policy_needs(tmp_path):
    from click.testing import CliRunner

    from schedopt.cli.main import main

    doc = copy.deepcopy(DOC)
    doc["jobs"].append({"id": "plain", "throughput": {"g": 1.0}})
    path = tmp_path / "ps.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(main, ["solve", str(path), "-p", "smd"])
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"error: {path}: jobs[{len(doc['jobs']) - 1}].parameter_server: parameter-server "
        f"policies need `parameter_server` on every job; 1 job(s) have none: plain")
    doc = copy.deepcopy(DOC)
    del doc["cluster"]["nodes"][1]["bandwidth_gbps"]
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(main, ["solve", str(path), "-p", "smd"])
    assert result.exit_code == 2
    assert result.output.strip().startswith(
        f"error: {path}: cluster.nodes[1].bandwidth_gbps: node 'b' does not state")
