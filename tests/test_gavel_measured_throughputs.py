"""Gavel's measured throughput table (../shared/trace-samples, when present) through the
Gavel-compatible adapter: one job per (model, scale factor), Gavel's 48-GPU physical cluster."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest

import gavel_reference as ref
from schedopt.core.problem import ThroughputProblem
from schedopt.gavel import get_policy

TABLE = Path(__file__).resolve().parents[2] / "shared" / "trace-samples" / "gavel" / "simulation_throughputs.json"
CLUSTER = {"k80": 24, "p100": 16, "v100": 8}

pytestmark = pytest.mark.skipif(not TABLE.exists(), reason="shared/trace-samples not present")


def measured_jobs():
    """{job id: {gpu type: isolated steps/s}}, {job id: scale factor} from Gavel's table."""
    table = json.loads(TABLE.read_text())
    throughputs, scale_factors = {}, {}
    for n, key in enumerate(sorted(table["v100"])):
        _, scale_factor = ast.literal_eval(key)
        throughputs[n] = {t: table[t][key]["null"] for t in CLUSTER}
        scale_factors[n] = scale_factor
    return throughputs, scale_factors


@pytest.mark.parametrize("policy", ["max_min_fairness_perf", "max_min_fairness"])
def test_max_min_on_gavels_measured_table_matches_the_reference(policy):
    throughputs, scale_factors = measured_jobs()
    weights = {job: 1.0 + (job % 3) for job in throughputs}
    allocation = get_policy(policy).get_allocation(throughputs, scale_factors, weights, CLUSTER)
    ids, types = sorted(throughputs), sorted(CLUSTER)
    X = np.array([[allocation[job][t] for t in types] for job in ids])
    p = ThroughputProblem.from_arrays([[throughputs[j][t] for t in types] for j in ids],
                                      [scale_factors[j] for j in ids], [weights[j] for j in ids],
                                      [CLUSTER[t] for t in types])
    ref.assert_base_constraints(p, X)
    agnostic = policy == "max_min_fairness"
    T = p.runnable * 1.0 if agnostic else p.throughput
    normalizer = 1.0 if agnostic else ref.equal_share_throughput(p.throughput, p.capacity)
    value = np.min(p.scale_factor * (T * X).sum(1) / (p.weight * normalizer))
    assert len(ids) == 83
    assert value == pytest.approx(ref.max_min_fairness(p, agnostic=agnostic).value, rel=1e-5)
