"""Philly-derived CSV -> trace: arrivals, scale factors, seeded job types, steps = duration x speed."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedopt.errors import InstanceError
from schedopt.traces import gavel_cluster, gavel_performance, read_philly

SHARED = Path(__file__).resolve().parents[2] / "shared" / "trace-samples"
CSV = SHARED / "pollux" / "philly-first1000.csv"
TABLE = SHARED / "gavel" / "simulation_throughputs.json"
pytestmark = pytest.mark.skipif(not (CSV.exists() and TABLE.exists()),
                                reason="../shared/trace-samples not present")


@pytest.fixture(scope="module")
def perf():
    return gavel_performance(TABLE)


def test_sample_imports_sorted_from_zero_with_philly_gpu_counts(perf):
    result = read_philly(CSV, perf, gavel_cluster(), seed=0)
    inst = result.instance
    assert (len(inst.jobs), result.dropped, result.clipped) == (1000, 0, 0)
    arrivals = [j.arrival_time for j in inst.jobs]
    assert arrivals[0] == 0.0 and arrivals == sorted(arrivals)
    assert arrivals[-1] == 914521.0  # 2017-09-28 16:59:54 -> 2017-10-09 07:01:55
    assert [sum(j.scale_factor == s for j in inst.jobs) for s in (1, 2, 4, 8)] == [976, 14, 4, 6]
    assert inst.job_ids[:2] == ("j000", "j001") and inst.job_ids[-1] == "j999"
    assert all(j.type.endswith(f" x{j.scale_factor}") == (j.scale_factor > 1) for j in inst.jobs)
    assert set(inst.performance.throughput) == {j.type for j in inst.jobs}


def test_total_steps_run_for_the_philly_duration_on_the_reference_gpu(perf):
    inst = read_philly(CSV, perf, gavel_cluster(), seed=0).instance
    # The earliest row (2017-09-28 16:59:54) ran 908661 s; the latest (07:01:55) ran 66 s.
    for job, duration in ((inst.jobs[0], 908661.0), (inst.jobs[-1], 66.0)):
        speed = job.throughput["v100"]
        assert job.total_steps / speed == pytest.approx(duration, abs=0.5 / speed)
    for job in inst.jobs:
        assert abs(job.total_steps - round(job.total_steps)) == 0
    on_p100 = read_philly(CSV, perf, gavel_cluster(), seed=0, reference="p100").instance
    job = on_p100.jobs[-1]
    speed = job.throughput["p100"]
    assert job.total_steps / speed == pytest.approx(66.0, abs=0.5 / speed)


def test_job_types_are_seeded(perf):
    def types(seed):
        return [j.type for j in read_philly(CSV, perf, gavel_cluster(), seed=seed).instance.jobs]

    assert types(0) == types(0)
    assert types(0) != types(1)
    assert len(set(types(0))) > 20


def test_limit_keeps_the_earliest_jobs(perf):
    full = read_philly(CSV, perf, gavel_cluster()).instance
    first = read_philly(CSV, perf, gavel_cluster(), limit=10).instance
    assert len(first.jobs) == 10
    assert [j.arrival_time for j in first.jobs] == [j.arrival_time for j in full.jobs[:10]]


def test_jobs_too_wide_for_the_cluster_are_dropped_or_clipped(perf):
    small = gavel_cluster({"v100": 4, "p100": 4, "k80": 4})
    dropped = read_philly(CSV, perf, small)
    assert (len(dropped.instance.jobs), dropped.dropped, dropped.clipped) == (994, 6, 0)
    clipped = read_philly(CSV, perf, small, clip=True)
    assert (len(clipped.instance.jobs), clipped.dropped, clipped.clipped) == (1000, 0, 6)
    assert max(j.scale_factor for j in clipped.instance.jobs) == 4


def test_a_bad_row_names_its_line_and_column(perf, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n"
                   "2017-10-09 07:01:55,66.0,1,66.0,a\n"
                   "2017-10-09 07:02:55,12.0,1.5,18.0,a\n")
    with pytest.raises(InstanceError) as e:
        read_philly(bad, perf, gavel_cluster())
    assert str(e.value) == f"{bad}:3: num_gpus: expected an integer >= 1, got '1.5'"
    bad.write_text("when,duration,num_gpus\n2017-10-09 07:01:55,66.0,1\n")
    with pytest.raises(InstanceError, match="missing column.s. timestamp"):
        read_philly(bad, perf, gavel_cluster())
