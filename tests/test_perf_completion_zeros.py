"""Measured zeros stay measurements: Gavel's [0, 0] pair entries ("these two jobs cannot share")
are imported as zeros, kept apart from pairs nobody measured, never turned into positive rates
by completion, and tell completion which unmeasured pairs cannot share either.

Tests on Gavel's table skip cleanly when ../shared (trace samples) is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from schedopt.cli.main import main
from schedopt.errors import InstanceError
from schedopt.instance import load_instance, parse_instance, save_instance
from schedopt.perf import (
    OnlineEstimator,
    PerformanceModel,
    complete,
    gavel_model,
    hide_units,
    model_from_arrays,
    read_model,
    write_model,
)
from schedopt.perf.completion import cannot_share_share, predicted_cannot_share
from schedopt.traces.performance import gavel_performance, label, read_gavel_throughputs

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT.parent / "shared" / "trace-samples" / "gavel" / "simulation_throughputs.json"
needs_samples = pytest.mark.skipif(not TABLE.exists(), reason="../shared/trace-samples not present")
NAN = np.nan


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


# ------------------------------------------------------------------------------ Gavel's table
@needs_samples
def test_every_pair_entry_of_gavels_table_is_imported_with_its_rates_zeros_as_zeros():
    table = read_gavel_throughputs(TABLE)
    colocated = gavel_performance(TABLE)["colocated"]
    index = {(*p["types"], p["gpu_type"]): p for p in colocated}
    assert len(index) == len(colocated)  # each unordered pair once per GPU type
    seen, zeros = 0, 0
    for worker, rows in table.items():
        gpu, loose = worker.removesuffix("_unconsolidated"), worker.endswith("_unconsolidated")
        for key, row in rows.items():
            for other, rates in row.items():
                if other == "null":
                    continue
                a, b = label(*key), label(*other)
                entry = index[(min(a, b), max(a, b), gpu)]
                got = entry.get("unconsolidated", entry["throughput"]) if loose else entry["throughput"]
                assert (got if a <= b else got[::-1]) == rates, (worker, key, other)
                seen += 1
                zeros += rates == [0.0, 0.0]
    assert (seen, zeros) == (10338, 6576)
    # nothing invented: every imported entry is one of Gavel's (both orders are in the file)
    for p in colocated:
        (a, sa), (b, sb) = (_key(t) for t in p["types"])
        assert sa == sb and table[p["gpu_type"]][(a, sa)][(b, sb)] == p["throughput"]
    # the performance model holds all of it: its section is the importer's, entry for entry
    assert gavel_model(TABLE).to_section() == gavel_performance(TABLE)


def _key(text: str):
    model, _, s = text.rpartition(" x")
    return (model, int(s)) if model and s.isdigit() else (text, 1)


@needs_samples
def test_perf_build_from_gavels_table_reports_no_missing_measured_pair(tmp_path):
    code, _, err = run("perf", "build", "--gavel", TABLE, "-o", tmp_path / "g.json")
    assert code == 0 and "pairs: 5277 measured (3396 at 0: cannot share), 0 estimated (0 at 0), 0 missing;" in err
    # six multi-GPU job types have no K80 unconsolidated rate in Gavel's table; three of them
    # cannot run on a K80 at all (ResNet-50 at batch size 128: 0 steps/s), so 3 are missing
    assert err.rstrip().endswith("unconsolidated: 165 measured, 0 estimated, 3 missing")
    model, _ = read_model(tmp_path / "g.json")
    pair = model.known & model.is_pair[None, :]
    assert int(pair.sum()) == 5277 and int((pair & (model.values == 0)).sum()) == 3396
    assert int(model.missing.sum()) == 0
    # every multi-GPU pair Gavel measured is a zero, and is known as such
    multi = (model.scale_factors > 1)[:, None] & pair
    assert int(multi.sum()) == 3249 and np.all(model.values[multi] == 0)


@needs_samples
def test_gavel_import_loads_as_an_instance_with_multi_gpu_and_zero_pairs(tmp_path):
    out = tmp_path / "perf.json"
    code, _, err = run("import", "gavel-throughputs", TABLE, "-o", out)
    assert code == 0, err
    inst = load_instance(out)
    pairs = {(c.types, c.gpu_type): c.throughput for c in inst.performance.colocated}
    assert len(pairs) == 2763
    assert pairs[(("ResNet-18 (batch size 16)", "Transformer (batch size 256)"), "k80")] == (0.0, 0.0)
    assert pairs[(("ResNet-50 (batch size 64) x4",) * 2, "v100")] == (0.0, 0.0)


def _brute_force_z(model: PerformanceModel) -> dict:
    """{(job type, GPU type): share of its measured pair cells there at 0}, cell by cell."""
    out = {}
    for r, t in enumerate(model.job_types):
        for g in model.gpu_types:
            cells = [model.values[r, model.column(g, p)] for p in model.partners
                     if model.known[r, model.column(g, p)]]
            out[(t, g)] = sum(v == 0 for v in cells) / len(cells) if cells else 0.0
    return out


@needs_samples
def test_completion_with_half_of_gavels_pairs_hidden_gives_hidden_zeros_no_rate_but_by_the_rule():
    model = gavel_model(TABLE)
    hidden = hide_units(model, 0.5, "pairs", seed=0, zeros=True)
    holes = model.hide(hidden)
    result = complete(holes, isolated=False, ensemble=0, seed=0)
    values = result.model.values
    # measured entries are never overwritten, and every estimate sits in a hidden cell
    assert np.array_equal(values[holes.known], model.values[holes.known])
    assert np.array_equal(result.model.known, holes.known) and not (result.filled & ~hidden).any()
    zero_hidden = hidden & (model.values == 0)
    assert int(zero_hidden.sum()) == 1722 and int((hidden & (model.values > 0)).sum()) == 922
    # the documented rule: predict 0 where z[a, g] + z[b, g] > 1; a hidden zero gets a positive
    # rate only where the rule is silent, checked here cell by cell
    z = _brute_force_z(holes)
    positive = np.argwhere(zero_hidden & (values > 0))
    for r, c in positive:
        gpu, partner = holes.configurations[c]
        assert z[(holes.job_types[r], gpu)] + z[(partner, gpu)] <= 1
    assert len(positive) == 51  # single-GPU pairs the rule is silent on (completion.py doc)
    for r, c in np.argwhere(result.cannot_share):
        gpu, partner = holes.configurations[c]
        assert z[(holes.job_types[r], gpu)] + z[(partner, gpu)] > 1 and values[r, c] == 0
    # every hidden multi-GPU pair that still exists is predicted "cannot share"
    multi = zero_hidden & (model.scale_factors > 1)[:, None] & holes.applicable
    assert multi.any() and np.all(values[multi] == 0)
    # no hidden pair that shares is predicted to fail
    assert not (hidden & (model.values > 0) & (values == 0)).any()


# ------------------------------------------------------------------------------ by hand
def _hand_model() -> PerformanceModel:
    """One GPU type g, job types a, b, c, d, e (one GPU each), isolated 4 steps/s each.

    Measured pairs: a-b and a-c at 0 (cannot share); a-e at 1 steps/s each; b-b, b-c, b-d, b-e,
    c-d, c-e at 2 each. Unmeasured: a-a, a-d, c-c, d-d, d-e, e-e. Shares of measured pairs at
    0: z[a] = 2/3, z[b] = 1/5 (a of a, b, c, d, e), z[c] = 1/4, z[d] = z[e] = 0.
    """
    names = "abcde"
    pairs = np.full((5, 1, 5), NAN)
    for x, y, rate in [("a", "b", 0), ("a", "c", 0), ("a", "e", 1), ("b", "b", 2), ("b", "c", 2),
                       ("b", "d", 2), ("b", "e", 2), ("c", "d", 2), ("c", "e", 2)]:
        pairs[names.index(x), 0, names.index(y)] = pairs[names.index(y), 0, names.index(x)] = rate
    return model_from_arrays(names, ["g"], np.full((5, 1), 4.0), pairs, partners=names)


def test_cannot_share_shares_and_the_rule_on_a_hand_worked_table():
    m = _hand_model()
    np.testing.assert_allclose(cannot_share_share(m)[:, 0], [2 / 3, 1 / 5, 1 / 4, 0, 0])
    rule = predicted_cannot_share(m)
    # a-a: 2/3 + 2/3 > 1; a-d: 2/3 + 0; c-c: 1/4 + 1/4; d-d, d-e, e-e: 0; measured cells never
    assert rule[0, m.column("g", "a")] and int(rule.sum()) == 1


def test_completion_of_the_hand_worked_table_keeps_zeros_and_predicts_by_the_rule():
    m = _hand_model()
    result = complete(m, ranks=(1,), lambdas=(0.1,), folds=0, ensemble=0)
    v, col = result.model.values, m.column
    assert v[0, col("g", "a")] == 0 and result.cannot_share[0, col("g", "a")]
    assert not result.model.known[0, col("g", "a")]  # an estimate, not a measurement
    assert np.isnan(result.model.uncertainty[0, col("g", "a")])
    for x, y in [("a", "d"), ("d", "a"), ("c", "c"), ("d", "d"), ("d", "e"), ("e", "d"), ("e", "e")]:
        assert 0 < v["abcde".index(x), col("g", y)] <= 4.0  # fitted, capped at 4 steps/s alone
    assert int(result.filled.sum()) == 8 and int(result.cannot_share.sum()) == 1
    assert v[0, col("g", "b")] == v[1, col("g", "a")] == 0  # measured zeros stay zeros
    assert np.array_equal(v[m.known], m.values[m.known])
    # the completed section writes the measured and the predicted [0, 0] pairs
    section = result.model.to_section()
    zero = {(*p["types"], p["gpu_type"]) for p in section["colocated"] if p["throughput"] == [0, 0]}
    assert zero == {("a", "b", "g"), ("a", "c", "g"), ("a", "a", "g")}


def test_a_pair_measured_sharing_on_one_side_is_not_predicted_to_fail():
    m = _hand_model()
    pairs = m.values[:, 1:].reshape(5, 1, 5).copy()
    pairs[3, 0, 1] = pairs[1, 0, 3] = pairs[3, 0, 2] = pairs[2, 0, 3] = 0.0  # d fails with b, c
    pairs[3, 0, 0] = 1.5  # d's side of d-a measured sharing (an online measurement); a's unknown
    m = model_from_arrays("abcde", ["g"], m.values[:, :1], pairs, partners="abcde")
    z = cannot_share_share(m)[:, 0]
    assert z[0] == pytest.approx(2 / 3) and z[3] == pytest.approx(2 / 3)  # the rule alone: fail
    assert m.missing[0, m.column("g", "d")] and not predicted_cannot_share(m)[0, m.column("g", "d")]


def test_applicable_keeps_measured_pairs_and_pairs_only_equal_scale_factors():
    # 'x x2' cannot run on k alone, yet its pair with 'y x2' was measured there: it exists
    pairs = np.full((4, 1, 4), NAN)
    pairs[2, 0, 3] = pairs[3, 0, 2] = 0.0
    m = model_from_arrays(["x", "y", "x x2", "y x2"], ["k"], [[1.0], [2.0], [0.0], [3.0]], pairs,
                          partners=["x", "y", "x x2", "y x2"])
    np.testing.assert_array_equal(m.scale_factors, [1, 1, 2, 2])
    app = m.applicable[:, 1:]
    assert app[2, 3] and app[3, 2]  # measured, although 'x x2' cannot run on k alone
    assert not app[2, 2]  # unmeasured, and 'x x2' cannot run on k
    assert app[3, 3] and app[0, 1] and app[1, 1]
    assert not app[0, 2] and not app[1, 3] and not app[3, 0]  # 1 GPU with 2 GPUs: no such pair
    assert int(m.missing.sum()) == 5  # x-x, x-y, y-x, y-y, (y x2)-(y x2)


# ------------------------------------------------------------------------------ files, online
def test_zero_pairs_round_trip_through_model_files_and_instances(tmp_path):
    m = _hand_model()
    write_model(m, tmp_path / "m.json")
    back, _ = read_model(tmp_path / "m.json")
    np.testing.assert_array_equal(back.known, m.known)
    np.testing.assert_array_equal(np.nan_to_num(back.values, nan=-1), np.nan_to_num(m.values, nan=-1))
    doc = {"format": "schedopt-instance/1", "cluster": {"gpu_types": {"g": {"count": 2}}},
           "jobs": [{"id": "j0", "type": "a x2", "scale_factor": 2}],
           "performance": {"throughput": {"a x2": {"g": 3.0}},
                           "colocated": [{"types": ["a x2", "a x2"], "gpu_type": "g",
                                          "throughput": [0, 0], "unconsolidated": [0.5, 0.5]}]}}
    inst = parse_instance(doc, "doc")
    (pair,) = inst.performance.colocated
    assert pair.throughput == (0.0, 0.0) and pair.unconsolidated == (0.5, 0.5)
    save_instance(inst, tmp_path / "i.json")
    assert load_instance(tmp_path / "i.json").performance == inst.performance
    model = PerformanceModel.from_performance(inst.performance)
    assert model.known[0, model.column("g", "a x2")] and model.values[0, model.column("g", "a x2")] == 0
    assert model.to_section()["colocated"] == doc["performance"]["colocated"]
    bad = json.loads(json.dumps(doc))
    bad["performance"]["colocated"][0]["unconsolidated"] = [1, 2, 3]
    with pytest.raises(InstanceError, match=r"colocated\[0\]\.unconsolidated"):
        parse_instance(bad, "doc")


def test_the_online_estimator_keeps_a_measured_zero_pair_as_a_measurement():
    est = OnlineEstimator(["v100"])
    est.update("j1", "v100", 3.0)
    est.update("j2", "v100", 2.0)
    est.update("j1", "v100", 0.0, partner="j2")
    est.update("j2", "v100", 0.0, partner="j1")
    m = est.model()
    c = m.column("v100", "j2")
    assert m.known[0, c] and m.values[0, c] == 0 and m.applicable[0, c]
    assert m.missing.sum() == 2  # j1 with j1, j2 with j2: never measured
    assert m.to_section()["colocated"] == [{"types": ["j1", "j2"], "gpu_type": "v100",
                                           "throughput": [0.0, 0.0]}]
    result = complete(m, folds=0, ensemble=0)  # z = 1 for both: the self-pairs cannot share
    assert int(result.filled.sum()) == 2 and np.all(result.model.values[result.filled] == 0)
    assert result.model.values[0, c] == 0 and result.model.known[0, c]


# ------------------------------------------------------------------------------ consumers
@needs_samples
def test_packed_policy_never_pairs_jobs_measured_not_to_share_on_gavels_full_table():
    from schedopt.api import solve
    from schedopt.traces import read_gavel_trace

    inst = read_gavel_trace(TABLE.parent / "max_min_fairness.trace", TABLE)
    rates = {(c.types, c.gpu_type): c.throughput for c in inst.performance.colocated}
    assert sum(r == (0.0, 0.0) for r in rates.values()) == 223  # 192 of them multi-GPU pairs
    assert sum(" x" in t[0] for t, _ in rates) == 192
    without = parse_instance({
        "format": "schedopt-instance/1", "cluster": {"gpu_types": {
            t.name: {"count": t.count, "gpus_per_node": t.gpus_per_node}
            for t in inst.cluster.gpu_types.values()}},
        "jobs": [{"id": j.id, "type": j.type, "scale_factor": j.scale_factor, "weight": j.weight,
                  "arrival_time": j.arrival_time, "total_steps": j.total_steps} for j in inst.jobs],
        "performance": {"throughput": {t: dict(r) for t, r in inst.performance.throughput.items()},
                        "colocated": [{"types": list(c.types), "gpu_type": c.gpu_type,
                                       "throughput": list(c.throughput)}
                                      for c in inst.performance.colocated if any(c.throughput)]}},
        "no zeros")
    kind = {j.id: j.type for j in inst.jobs}
    for method in ("columns", "dense"):
        packed = solve(inst, "max_min_fairness_packed", method=method)
        assert packed.objective == pytest.approx(
            solve(without, "max_min_fairness_packed", method=method).objective, rel=1e-9)
        chosen = packed.details["pairs"]
        assert chosen and all(
            any(rates[(tuple(sorted(kind[j] for j in p["jobs"])), p["gpu_type"])])
            for p in chosen)


def test_perf_commands_keep_measured_zeros_and_print_predicted_ones(tmp_path):
    stream = tmp_path / "rounds.csv"
    stream.write_text("job,gpu_type,steps_per_s,partner\nj1,v100,3,\nj2,v100,2,\n"
                      "j1,v100,0,j2\nj2,v100,0,j1\n")
    code, _, err = run("perf", "build", "--measurements", stream, "-o", tmp_path / "o.json")
    assert code == 0 and "2 measured (2 at 0: cannot share)" in err and err.rstrip().endswith("2 missing")
    model, _ = read_model(tmp_path / "o.json")
    assert model.known[0, model.column("v100", "j2")] and model.values[0, model.column("v100", "j2")] == 0
    write_model(_hand_model(), tmp_path / "hand.json")
    code, stdout, err = run("perf", "complete", tmp_path / "hand.json", "--ranks", "1",
                            "--lambdas", "0.1", "--ensemble", "0")
    assert code == 0, err
    assert "filled 8 entries (rank 1, lambda 0.1; 1 predicted 0: cannot share); 0 still missing" in stdout
    (row,) = [line.split() for line in stdout.splitlines() if line.startswith("a ") and " a " in line]
    assert row == ["a", "g", "a", "0", "(cannot", "share)", "-"]
    code, stdout, _ = run("perf", "complete", tmp_path / "hand.json", "--json", "--ensemble", "0")
    doc = json.loads(stdout)
    assert code == 0 and doc["cannot_share"] == 1 and len(doc["filled"]) == 8
    (zero,) = [e for e in doc["filled"] if e["steps_per_s"] == 0]
    assert (zero["job_type"], zero["partner"], zero["uncertainty"]) == ("a", "a", None)
    code, _, err = run("perf", "complete", tmp_path / "hand.json", "-o", tmp_path / "full.json",
                       "--ensemble", "0")
    full, _ = read_model(tmp_path / "full.json")
    c = full.column("g", "a")
    assert code == 0 and full.values[0, c] == 0 and not full.known[0, c]  # a prediction, read back
    assert full.values[0, full.column("g", "b")] == 0 and full.known[0, full.column("g", "b")]
