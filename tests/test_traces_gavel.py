"""Gavel importers: the throughput table -> performance section, and `.trace` files -> traces.

Tests on the real files skip cleanly when ../shared (trace samples) is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from schedopt.errors import InstanceError
from schedopt.traces import gavel_cluster, gavel_performance, read_gavel_throughputs, read_gavel_trace
from schedopt.traces.performance import job_types_by_scale_factor, parse_label, reference_gpu

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "trace-samples" / "gavel"
TABLE = SAMPLES / "simulation_throughputs.json"
needs_samples = pytest.mark.skipif(not TABLE.exists(), reason="../shared/trace-samples not present")

# A tiny Gavel-format table: 2 models x scale factors, v100/p100 and an unconsolidated table.
TINY_TABLE = """{
 "v100": {"('A (batch size 1)', 1)": {"null": 4.0, "('A (batch size 1)', 1)": [2.0, 2.0],
                                     "('B', 1)": [3.0, 1.5]},
          "('B', 1)": {"null": 2.0, "('A (batch size 1)', 1)": [1.5, 3.0], "('B', 1)": [0.0, 0.0]},
          "('A (batch size 1)', 2)": {"null": 7.0}},
 "p100": {"('A (batch size 1)', 1)": {"null": 2.0}, "('B', 1)": {"null": 1.0},
          "('A (batch size 1)', 2)": {"null": 3.5}},
 "v100_unconsolidated": {"('A (batch size 1)', 2)": {"null": 6.0}}
}"""
# Fields: job_type, command, working_dir, num_steps_arg, needs_data_dir, total_steps,
# scale_factor, priority_weight, SLO, arrival_time.
TINY_TRACE = (
    "A (batch size 1)\tpython a.py\tdir/a\t--steps\t1\t4000\t1\t1\t-1.000000\t0\n"
    "B\tpython b.py\tdir/b\t-n\t0\t1000\t1\t2\t3.000000\t10.5\n"
    "A (batch size 1)\tpython a.py\tdir/a\t--steps\t1\t7000\t2\t1\t-1\t600\n"
)
TINY_CLUSTER = {"gpu_types": {"v100": {"count": 2, "gpus_per_node": 2},
                              "p100": {"count": 4, "gpus_per_node": 2}}}


@pytest.fixture
def tiny(tmp_path):
    table, trace = tmp_path / "tput.json", tmp_path / "tiny.trace"
    table.write_text(TINY_TABLE)
    trace.write_text(TINY_TRACE)
    return table, trace


def test_tiny_table_becomes_labels_rows_unconsolidated_and_measured_pairs(tiny):
    perf = gavel_performance(tiny[0])
    assert perf["throughput"] == {"A (batch size 1)": {"v100": 4.0, "p100": 2.0},
                                  "B": {"v100": 2.0, "p100": 1.0},
                                  "A (batch size 1) x2": {"v100": 7.0, "p100": 3.5}}
    assert perf["unconsolidated"] == {"A (batch size 1) x2": {"v100": 6.0}}
    # B with itself is [0, 0] (measured: cannot share): kept; A-B once, labels sorted.
    assert perf["colocated"] == [
        {"types": ["A (batch size 1)", "A (batch size 1)"], "gpu_type": "v100",
         "throughput": [2.0, 2.0]},
        {"types": ["A (batch size 1)", "B"], "gpu_type": "v100", "throughput": [3.0, 1.5]},
        {"types": ["B", "B"], "gpu_type": "v100", "throughput": [0.0, 0.0]}]
    assert "colocated" not in gavel_performance(tiny[0], colocation=False)
    assert parse_label("A (batch size 1) x2") == ("A (batch size 1)", 2)
    assert parse_label("B") == ("B", 1)


def test_tiny_trace_every_field(tiny):
    table, trace = tiny
    inst = read_gavel_trace(trace, table, TINY_CLUSTER, colocation=False)
    assert inst.job_ids == ("j000", "j001", "j002")
    a, b, a2 = inst.jobs
    assert (a.type, a.scale_factor, a.weight, a.arrival_time, a.total_steps, a.deadline) == (
        "A (batch size 1)", 1, 1.0, 0.0, 4000, None)
    assert dict(a.throughput) == {"v100": 4.0, "p100": 2.0}
    # SLO 3 is a factor of the V100 duration: 1000 steps / 2 steps/s = 500 s -> deadline 1500 s.
    assert (b.type, b.scale_factor, b.weight, b.arrival_time, b.total_steps, b.deadline) == (
        "B", 1, 2.0, 10.5, 1000, 1500.0)
    assert (a2.type, a2.scale_factor, a2.arrival_time, a2.total_steps) == (
        "A (batch size 1) x2", 2, 600.0, 7000)
    assert dict(a2.throughput) == {"v100": 7.0, "p100": 3.5}
    assert dict(inst.performance.unconsolidated) == {"A (batch size 1) x2": {"v100": 6.0}}
    assert inst.performance.colocated == ()
    with_pairs = read_gavel_trace(trace, table, TINY_CLUSTER)
    assert len(with_pairs.performance.colocated) == 3


def test_gavels_older_nine_field_lines_are_read(tiny, tmp_path):
    old = tmp_path / "old.trace"
    old.write_text("B\tpython b.py\t-n\t0\t1000\t1\t1\t-1\t5\n")
    (job,) = read_gavel_trace(old, tiny[0], TINY_CLUSTER).jobs
    assert (job.type, job.total_steps, job.arrival_time) == ("B", 1000, 5.0)


@pytest.mark.parametrize("line, where, needle", [
    ("B\tc\td\t-n\t0\t1000\tone\t1\t-1\t0", "scale_factor", "expected an integer >= 1, got 'one'"),
    ("B\tc\td\t-n\t0\t1000\t1\t1\t-1\t-3", "arrival_time", "expected a number of seconds >= 0"),
    ("B\tc\td\t-n\t2\t1000\t1\t1\t-1\t0", "needs_data_dir", "expected 0 or 1"),
    ("B\tc\td\t-n\t0\t1000\t1\t0\t-1\t0", "priority_weight", "expected a number > 0"),
    ("C\tc\td\t-n\t0\t1000\t1\t1\t-1\t0", "job_type", "('C', 1) is not in the throughput table"),
    ("B\tc\td\t-n\t0\t1000\t4\t1\t-1\t0", "job_type", "('B', 4) is not in the throughput table"),
    ("B\tc\td", "", "expected 10 tab-separated fields"),
])
def test_a_bad_line_is_an_instance_error_at_file_line_and_field(tiny, tmp_path, line, where, needle):
    bad = tmp_path / "bad.trace"
    bad.write_text(TINY_TRACE + line + "\n")
    with pytest.raises(InstanceError) as e:
        read_gavel_trace(bad, tiny[0], TINY_CLUSTER)
    (problem,) = e.value.problems
    assert (problem.file, problem.path) == (f"{bad}:4", where)
    assert needle in problem.message


def test_a_job_too_large_for_the_cluster_is_reported_at_its_line(tiny, tmp_path):
    small = {"gpu_types": {"v100": {"count": 1}, "p100": {"count": 1}}}
    with pytest.raises(InstanceError) as e:
        read_gavel_trace(tiny[1], tiny[0], small)
    assert str(e.value.problems[0]).startswith(f"{tiny[1]}:3: scale_factor: scale_factor 2 is larger")


@needs_samples
def test_gavels_table_has_83_job_types_per_gpu_type_and_measured_values():
    table = read_gavel_throughputs(TABLE)
    assert {g: len(t) for g, t in table.items()} == {
        "k80": 83, "p100": 83, "v100": 83, "v100_unconsolidated": 83, "p100_unconsolidated": 83,
        "k80_unconsolidated": 77}
    perf = gavel_performance(TABLE)
    assert len(perf["throughput"]) == 83 and len(set(perf["throughput"])) == 83
    assert perf["throughput"]["ResNet-50 (batch size 64)"] == {
        "v100": 4.394774823323071, "p100": 2.6194694075770055, "k80": 0.6190282202246573}
    assert perf["throughput"]["ResNet-50 (batch size 128) x2"]["k80"] == 0.0
    assert perf["unconsolidated"]["ResNet-50 (batch size 128) x8"] == {
        "v100": 13.94274652803731, "p100": 10.729904712124876}
    assert len(perf["unconsolidated"]) == 57
    per_gpu = {g: sum(p["gpu_type"] == g for p in perf["colocated"]) for g in ("v100", "p100", "k80")}
    # every pair of equal scale factor: 26 single-GPU types (351 pairs with self-pairs), 19
    # types of each of 2, 4 and 8 GPUs (190 each); Gavel's [0, 0] kept (21, 11, 45 single-GPU)
    assert per_gpu == {"v100": 351 + 3 * 190, "p100": 351 + 3 * 190, "k80": 351 + 3 * 190}
    zeros = {g: sum(p["gpu_type"] == g and p["throughput"] == [0, 0] and " x" not in p["types"][0]
                    for p in perf["colocated"]) for g in ("v100", "p100", "k80")}
    assert zeros == {"v100": 21, "p100": 11, "k80": 45}
    assert reference_gpu(perf) == "v100"
    counts = {"v100": 8, "p100": 16, "k80": 24}
    assert {s: len(k) for s, k in job_types_by_scale_factor(perf, counts, "v100").items()} == {
        1: 26, 2: 19, 4: 19, 8: 19}


@needs_samples
def test_max_min_fairness_sample_trace():
    inst = read_gavel_trace(SAMPLES / "max_min_fairness.trace", TABLE, gavel_cluster())
    assert len(inst.jobs) == 96 and inst.job_ids[0] == "j000" and inst.job_ids[-1] == "j095"
    first, last = inst.jobs[0], inst.jobs[-1]
    assert (first.type, first.scale_factor, first.total_steps, first.arrival_time) == (
        "ResNet-18 (batch size 128) x4", 4, 925982, 0.0)
    assert (last.type, last.scale_factor, last.total_steps, last.arrival_time) == (
        "LM (batch size 40)", 1, 297215, 46317.0)
    line50 = inst.jobs[49]
    assert (line50.type, line50.total_steps, line50.arrival_time) == (
        "ResNet-18 (batch size 128) x2", 198702, 11195.0)
    arrivals = [j.arrival_time for j in inst.jobs]
    assert arrivals == sorted(arrivals) and sum(a == 0 for a in arrivals) == 36
    assert all(j.deadline is None and j.weight == 1.0 for j in inst.jobs)
    assert sorted({j.scale_factor for j in inst.jobs}) == [1, 2, 4]
    assert set(inst.performance.throughput) == {j.type for j in inst.jobs}
    assert set(inst.performance.unconsolidated) == {j.type for j in inst.jobs if j.scale_factor > 1}


@needs_samples
def test_minimize_makespan_sample_trace():
    inst = read_gavel_trace(SAMPLES / "minimize_makespan.trace", TABLE, gavel_cluster())
    assert len(inst.jobs) == 100
    assert {j.arrival_time for j in inst.jobs} == {0.0}
    first, last = inst.jobs[0], inst.jobs[-1]
    assert (first.id, first.type, first.total_steps) == ("j000", "Transformer (batch size 128)", 19605)
    assert (last.id, last.type, last.total_steps) == ("j099", "LM (batch size 80)", 101663)
    j098 = inst.jobs[98]
    assert (j098.type, j098.scale_factor, j098.total_steps) == (
        "ResNet-18 (batch size 64) x4", 4, 1720586)
    assert dict(first.throughput) == {"v100": 5.44610521981264, "p100": 3.0735350560514787,
                                      "k80": 0.9815827061299781}
    assert [sum(j.scale_factor == s for j in inst.jobs) for s in (1, 2, 4)] == [71, 6, 23]
