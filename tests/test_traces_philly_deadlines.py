"""Philly-derived CSV -> deadline trace on one GPU pool (for `schedopt leases`)."""

from __future__ import annotations

import pytest

from schedopt.errors import SchedoptError
from schedopt.traces import read_philly_deadlines

CSV = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:01:55,600.0,1,600.0,a
2017-10-09 06:00:00,3000.0,2,6000.0,b
2017-10-09 06:30:00,900000.0,1,900000.0,c
2017-10-09 06:10:00,100.0,16,1600.0,d
2017-10-09 06:20:00,1200.0,4,4800.0,e
"""


@pytest.fixture
def csv(tmp_path):
    path = tmp_path / "philly.csv"
    path.write_text(CSV)
    return path


def test_jobs_run_their_duration_with_deadlines_a_multiple_of_it(csv):
    result = read_philly_deadlines(csv, gpus=8, deadline_factor=1.5, max_duration=86400)
    inst = result.instance
    # Kept in arrival order: 06:00 (3000 s, 2 GPUs), 06:20 (1200 s, 4), 07:01:55 (600 s, 1);
    # dropped: 16 GPUs > 8, and the 900,000 s job > max_duration.
    assert result.dropped == 2
    assert [j.arrival_time for j in inst.jobs] == [0.0, 1200.0, 3715.0]
    assert [j.scale_factor for j in inst.jobs] == [2, 4, 1]
    assert [j.total_steps for j in inst.jobs] == [3000.0, 1200.0, 600.0]
    assert [j.deadline for j in inst.jobs] == [4500.0, 1800.0, 900.0]
    assert all(j.throughput == {"gpu": 1.0} for j in inst.jobs)
    assert inst.cluster.gpu_types["gpu"].count == 8


def test_slo_fraction_and_limit(csv):
    none = read_philly_deadlines(csv, gpus=16, slo_fraction=0.0, limit=2).instance
    assert [j.deadline for j in none.jobs] == [None, None]
    assert len(none.jobs) == 2
    drawn = read_philly_deadlines(csv, gpus=16, slo_fraction=0.5, seed=3).instance
    assert 0 < sum(j.deadline is not None for j in drawn.jobs) < len(drawn.jobs)
    with pytest.raises(SchedoptError, match="SLO fraction"):
        read_philly_deadlines(csv, slo_fraction=2)
    with pytest.raises(SchedoptError, match="every job was dropped"):
        read_philly_deadlines(csv, gpus=1, max_duration=10)
