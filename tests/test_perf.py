"""schedopt.perf: performance-model builders, online EMA, low-rank completion, the accuracy
study on Gavel's table (../shared, when present) and the `schedopt perf` commands."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from schedopt.cli.main import main
from schedopt.errors import InstanceError, SchedoptError
from schedopt.instance import load_instance
from schedopt.perf import (
    OnlineEstimator,
    PerformanceModel,
    accuracy_study,
    complete,
    gavel_model,
    hide_units,
    model_from_arrays,
    plot_study,
    pollux_model,
    pollux_placement_model,
    read_model,
    summarize,
    write_model,
)
from schedopt.traces.performance import gavel_performance

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "trace-samples"
TABLE = SHARED / "gavel" / "simulation_throughputs.json"
PLACEMENTS = SHARED / "pollux" / "cifar10-placements.csv"
needs_samples = pytest.mark.skipif(not TABLE.exists(), reason="../shared/trace-samples not present")

TINY_GAVEL = {
    "v100": {"('A', 1)": {"null": 10.0, "('A', 1)": [4.0, 4.0], "('B', 1)": [6.0, 1.5]},
             "('B', 1)": {"null": 2.0, "('A', 1)": [1.5, 6.0]},
             "('A', 2)": {"null": 18.0}},
    "k80": {"('A', 1)": {"null": 3.0, "('B', 1)": [0.0, 0.0]},
            "('B', 1)": {"null": 0.5},
            "('A', 2)": {"null": 0.0}},
    "k80_unconsolidated": {"('A', 2)": {"null": 0.0}},
    "v100_unconsolidated": {"('A', 2)": {"null": 12.0}},
}

TINY_POLLUX = """placement,local_bsz,step_time,sync_time
1,32,0.10,0.001
2,32,0.12,0.02
11,32,0.16,0.06
4,32,0.20,0.05
22,32,0.25,0.10
13,32,0.30,0.12
1,64,0.18,0.001
"""


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def low_rank_model(R=12, J=3, rank=2, seed=1, noise=0.0) -> tuple[PerformanceModel, np.ndarray]:
    """A model whose log steps/s is exactly rank `rank` (plus `noise`), every row a partner."""
    rng = np.random.default_rng(seed)
    C = J * (1 + R)
    logs = 0.5 * rng.normal(size=(R, rank)) @ rng.normal(size=(C, rank)).T + 1.0
    values = np.exp(logs + noise * rng.normal(size=(R, C)))
    names = tuple(f"t{i}" for i in range(R))
    model = PerformanceModel(names, tuple(f"g{j}" for j in range(J)), names, values,
                             np.ones((R, C), dtype=bool))
    return model, values


# ------------------------------------------------------------------------------ builders
def test_gavel_builder_reads_the_isolated_and_pair_entries_of_a_tiny_table(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY_GAVEL))
    m = gavel_model(path)
    assert m.job_types == ("A", "B", "A x2") and m.gpu_types == ("v100", "k80")
    assert m.partners == ("A", "B")
    np.testing.assert_array_equal(m.values[:, :2], [[10.0, 3.0], [2.0, 0.5], [18.0, 0.0]])
    assert m.values[0, m.column("v100", "A")] == 4.0   # A with A
    assert m.values[0, m.column("v100", "B")] == 6.0   # A's rate next to B
    assert m.values[1, m.column("v100", "A")] == 1.5   # B's rate next to A
    # Gavel's [0, 0] is a measurement: A and B cannot share a k80
    assert m.values[0, m.column("k80", "B")] == m.values[1, m.column("k80", "A")] == 0.0
    assert m.known[0, m.column("k80", "B")] and m.known[1, m.column("k80", "A")]
    assert m.applicable[0, m.column("k80", "B")] and m.applicable[1, m.column("k80", "A")]
    assert m.missing.sum() == 3  # B-B on v100; A-A and B-B on k80
    assert not m.applicable[2, 2:].any()  # 'A x2' is never a partner
    assert dict(m.unconsolidated) == {"A x2": {"v100": 12.0, "k80": 0.0}}
    assert m.to_section() == gavel_performance(path)
    perf = m.to_performance()
    assert PerformanceModel.from_performance(perf).to_section() == m.to_section()


def test_a_job_that_cannot_run_alone_on_a_gpu_type_has_no_pairs_there():
    m = model_from_arrays(["a", "b"], ["x", "y"], [[1.0, 0.0], [2.0, 1.0]],
                          np.full((2, 2, 2), np.nan), partners=["a", "b"])
    # a cannot run on y: a-a, a-b, b-a on y do not exist; b-b on y does
    assert m.applicable[:, m.column("y", "a")].tolist() == [False, False]
    assert m.applicable[:, m.column("y", "b")].tolist() == [False, True]


def test_pollux_builder_turns_step_times_into_local_batches_per_second(tmp_path):
    path = tmp_path / "toy-placements.csv"
    path.write_text(TINY_POLLUX)
    m = pollux_model(path)
    got = dict(zip(m.job_types, m.values[:, 0]))
    # steps/s = replicas / step_time, step_time being the whole iteration (sync included)
    assert got == pytest.approx({
        "toy (batch size 32)": 1 / 0.10,
        "toy (batch size 32) x2": 2 / 0.12,          # '2' (1 node) beats '11' (2 nodes)
        "toy (batch size 32) x4": max(4 / 0.20, 4 / 0.30),  # fewest nodes: '4', not '22'/'13'
        "toy (batch size 64)": 1 / 0.18,
    })
    assert {t: r["t4"] for t, r in m.unconsolidated.items()} == pytest.approx({
        "toy (batch size 32) x2": 2 / 0.16, "toy (batch size 32) x4": 4 / 0.25})  # 2 nodes: '22' > '13'
    by_placement = pollux_placement_model(path, gpu_type="t4")
    assert by_placement.job_types == ("toy (batch size 32)", "toy (batch size 64)")
    assert by_placement.gpu_types == ("t4:1", "t4:2", "t4:11", "t4:4", "t4:13", "t4:22")
    assert int(by_placement.missing.sum()) == 5  # batch 64 measured on '1' only
    assert by_placement.values[0, by_placement.column("t4:11")] == pytest.approx(2 / 0.16)


def test_pollux_builder_rejects_rows_it_cannot_read(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("placement,local_bsz,step_time,sync_time\n1,32,0.1,0.2\n")
    with pytest.raises(InstanceError, match="row 2.*sync_time"):
        pollux_model(path)
    path.write_text("placement,local_bsz,step_time\n1,32,0.1\n")
    with pytest.raises(InstanceError, match="missing sync_time"):
        pollux_model(path)
    for header_only in ("placement,local_bsz,step_time,sync_time", "placement,local_bsz,step_time,sync_time\n"):
        path.write_text(header_only)
        with pytest.raises(InstanceError, match="bad.csv.*at least one placement row"):
            pollux_model(path)


@needs_samples
def test_pollux_builder_on_the_cifar10_profiles():
    m = pollux_model(PLACEMENTS)
    assert len(m.job_types) == 173 and m.gpu_types == ("t4",)
    # one replica at local batch 32: step_time 0.04279 s
    assert m.values[m.job_types.index("cifar10 (batch size 32)"), 0] == pytest.approx(1 / 0.0427886962890625)
    assert pollux_placement_model(PLACEMENTS).missing.sum() == 5


# ------------------------------------------------------------------------------ online
def test_online_estimator_is_gavels_exponential_moving_average():
    est = OnlineEstimator(["v100", "k80"], alpha=0.25)
    xs = [4.0, 8.0, 2.0, 6.0]
    for x in xs:
        est.update("j1", "v100", x)
    closed = (0.75 ** 3) * xs[0] + sum(0.25 * 0.75 ** (3 - i) * xs[i] for i in range(1, 4))
    # by hand: 4 -> 0.25*8 + 0.75*4 = 5 -> 0.5 + 3.75 = 4.25 -> 1.5 + 3.1875 = 4.6875
    assert est.estimate("j1", "v100") == pytest.approx(closed) == pytest.approx(4.6875)
    assert est.count("j1", "v100") == 4 and np.isnan(est.estimate("j1", "k80"))
    # a batch (one cell twice) gives the same as one at a time
    batch = OnlineEstimator(["v100", "k80"])
    out = batch.update_many(["j1"] * 4 + ["j2"], ["v100"] * 4 + ["k80"], xs + [1.0])
    assert out[3] == pytest.approx(closed) and out[4] == 1.0
    jobs = [f"j{i}" for i in range(50)]  # grows past its initial capacity
    batch.update_many(jobs, ["k80"] * 50, np.arange(50.0))
    batch.update_many(jobs, ["k80"] * 50, np.arange(50.0) + 4)
    assert batch.estimate("j7", "k80") == pytest.approx(0.25 * 11 + 0.75 * 7)
    est.update("j1", "v100", 3.0, partner="j2")
    est.update("j1", "v100", 5.0, partner="j2")
    assert est.estimate("j1", "v100", partner="j2") == pytest.approx(3.5)
    m = est.model()
    assert m.job_types == ("j1", "j2") and m.partners == ("j1", "j2")
    assert m.values[0, m.column("v100", "j2")] == pytest.approx(3.5)
    assert int(m.known.sum()) == 2
    with pytest.raises(SchedoptError, match="unknown GPU type 'a100'"):
        est.update("j1", "a100", 1.0)
    with pytest.raises(SchedoptError, match="steps/s >= 0"):
        est.update("j1", "v100", float("nan"))


# ------------------------------------------------------------------------------ completion
def test_completion_recovers_an_exactly_low_rank_matrix_and_keeps_measurements():
    model, truth = low_rank_model()
    hidden = np.random.default_rng(0).random(truth.shape) < 0.3
    result = complete(model.hide(hidden), ranks=(2,), lambdas=(1e-9,), folds=0, ensemble=0,
                      cap=False, tol=0.0)
    got = result.model.values
    assert np.abs(got[hidden] / truth[hidden] - 1).max() < 1e-5
    np.testing.assert_array_equal(got[~hidden], truth[~hidden])  # bit for bit
    assert result.filled.sum() == hidden.sum() and not result.model.known[hidden].any()


def test_uncertainty_is_larger_where_the_fit_saw_no_measurement():
    model, truth = low_rank_model(R=14, noise=0.05, seed=3)
    hidden = hide_units(model, 0.4, "pairs", seed=0)
    result = complete(model.hide(hidden), seed=0, cap=False)
    pairs_known = model.is_pair[None, :] & ~hidden
    assert result.spread[hidden].mean() > 1.2 * result.spread[pairs_known].mean()
    u = result.model.uncertainty
    assert (u[hidden] > 0).all() and (u[~hidden] == 0).all()
    assert result.residual["pairs"] > 0 and result.rank in (2, 4, 6)
    err = np.abs(result.model.values[hidden] / truth[hidden] - 1)
    assert err.mean() < 0.1


def test_completion_leaves_cold_start_rows_missing_and_caps_pairs_at_isolated_rates():
    iso = np.array([[10.0, 5.0], [8.0, 4.0], [6.0, np.nan], [np.nan, np.nan]])
    pairs = np.full((4, 2, 4), np.nan)
    rng = np.random.default_rng(0)
    pairs[:3, :, :3] = iso[:3, :, None] * rng.uniform(0.4, 0.9, size=(3, 2, 3))
    pairs[0, 0, 1] = pairs[1, 0, 0] = np.nan  # one pair (a-b on g0) nobody measured
    m = model_from_arrays("abcd", ["g0", "g1"], iso, pairs, partners="abcd")
    result = complete(m, ranks=(1,), lambdas=(0.3,), folds=0, ensemble=0)
    v = result.model.values
    assert np.isnan(v[3]).all()  # 'd' was never measured: nothing to go on
    assert np.isfinite(v[2, 1]) and np.isfinite(v[0, m.column("g0", "b")])
    assert v[0, m.column("g0", "b")] <= 10.0 and v[1, m.column("g0", "a")] <= 8.0
    assert not np.isfinite(v[:3, m.column("g0", "d")]).any()  # partner never measured
    with pytest.raises(SchedoptError, match="no positive measurement"):
        complete(model_from_arrays("a", ["g"], [[np.nan]]))


def test_hidden_pairs_take_both_sides_and_only_measured_cells():
    model, _ = low_rank_model(R=6)
    hidden = hide_units(model, 0.5, "pairs", seed=4)
    other = model.transpose_index()
    assert hidden[~model.is_pair[None, :].repeat(6, 0)].sum() == 0
    assert np.all(hidden.ravel()[other[hidden]])  # the other side is hidden too
    units = 3 * (6 * 7 // 2)  # unordered pairs (with self-pairs) per GPU type x 3 types
    assert hidden.sum() == 2 * round(0.5 * units) - sum(
        hidden[r, model.column(g, model.job_types[r])] for r in range(6) for g in model.gpu_types)
    iso = hide_units(model, 1.0, "isolated", seed=0)
    assert iso.sum() == 18 and not iso[:, 3:].any()


@needs_samples
def test_completed_gavel_pairs_are_within_ten_percent_with_half_of_them_hidden():
    """The acceptance figure of the robust policy (docs/performance-models.md prints the full table)."""
    model = gavel_model(TABLE)
    frame = accuracy_study(model, fractions=(0.5,), targets=("pairs",), seeds=3, ensemble=0)
    assert frame["hidden"].tolist() == [939, 938, 942]
    assert frame["mre"].mean() <= 0.10, frame


def test_study_and_plot_on_a_small_model(tmp_path):
    model, _ = low_rank_model(R=8, noise=0.02)
    frame = accuracy_study(model, fractions=(0.2, 0.5), targets=("pairs", "isolated"), seeds=2,
                           ranks=(2,), lambdas=(0.1,), ensemble=4)
    assert len(frame) == 8 and (frame["mre"] < 0.5).all()
    summary = summarize(frame)
    assert list(summary["target"]) == ["isolated", "isolated", "pairs", "pairs"]
    assert (summary["mre_min"] <= summary["mre"]).all()
    fig = plot_study(frame)
    fig.savefig(tmp_path / "mre.png")
    assert (tmp_path / "mre.png").stat().st_size > 1000


# ------------------------------------------------------------------------------ files
def test_model_files_keep_which_cells_were_estimated(tmp_path):
    model, _ = low_rank_model(R=5)
    hidden = hide_units(model, 0.3, "pairs", seed=1)
    result = complete(model.hide(hidden), ranks=(2,), lambdas=(0.1,), folds=1, ensemble=3, cap=False)
    write_model(result.model, tmp_path / "m.yaml")
    back, doc = read_model(tmp_path / "m.yaml")
    assert doc is None and back.job_types == model.job_types
    np.testing.assert_allclose(back.values, result.model.values)
    np.testing.assert_array_equal(back.known, ~hidden)
    np.testing.assert_allclose(back.uncertainty[hidden], result.model.uncertainty[hidden])
    bad = {"format": "schedopt-perf/1", "performance": {"throughput": {"a": {"g": -1}}}}
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(InstanceError, match="performance.throughput"):
        read_model(tmp_path / "bad.json")


# ------------------------------------------------------------------------------ CLI
def test_perf_complete_fills_the_bundled_colocation_instance(tmp_path):
    # the bundled instance has every pair measured (ResNet-50 x ResNet-50 on k80 at [0, 0]);
    # without that entry the pair is unmeasured, and completion must fill it
    doc = json.loads((ROOT / "instances" / "colocation.json").read_text())
    doc["performance"]["colocated"] = [
        c for c in doc["performance"]["colocated"]
        if not (c["types"] == ["ResNet-50 (batch size 64)"] * 2 and c["gpu_type"] == "k80")]
    source = tmp_path / "colocation.json"
    source.write_text(json.dumps(doc))
    out = tmp_path / "full.json"
    code, stdout, err = run("perf", "complete", source, "-o", out, "--ensemble", "4")
    assert code == 0, err
    assert "filled 1 entries" in stdout and "ResNet-50 (batch size 64)  k80" in stdout
    before = load_instance(source)
    after = load_instance(out)
    assert after.jobs == before.jobs and len(after.performance.colocated) == 45
    assert set(before.performance.colocated) < set(after.performance.colocated)
    new = (set(after.performance.colocated) - set(before.performance.colocated)).pop()
    assert new.types == ("ResNet-50 (batch size 64)",) * 2 and new.gpu_type == "k80"
    assert 0 < new.throughput[0] == new.throughput[1] <= 0.619028  # capped at its solo rate
    code, stdout, _ = run("perf", "complete", source, "--json",
                          "--ensemble", "0", "--ranks", "2", "--lambdas", "0.3")
    doc = json.loads(stdout)
    assert code == 0 and doc["rank"] == 2 and len(doc["filled"]) == 1 and doc["still_missing"] == 0
    uncertainty = "heldout_rms_log_error" if doc["method"] == "als" else "median_uncertainty_log"
    assert set(doc) & {"heldout_rms_log_error", "median_uncertainty_log"} == {uncertainty}


def test_perf_complete_makes_an_instance_with_unmeasured_gpu_types_solvable(tmp_path):
    doc = json.loads((ROOT / "instances" / "colocation.json").read_text())
    truth = doc["performance"]["throughput"]["Transformer (batch size 32)"].pop("k80")
    holes = tmp_path / "holes.json"
    holes.write_text(json.dumps(doc))
    code, _, err = run("validate", holes)
    assert code == 2 and "Transformer (batch size 32)'].k80: missing" in err
    code, stdout, err = run("perf", "complete", holes, "-o", tmp_path / "full.yaml")
    assert code == 0, err
    rows = [line.split() for line in stdout.splitlines() if line.startswith("Transformer")]
    assert [r[4:6] for r in rows] == [["k80", "-"]]  # job type is 4 words, then GPU type, partner
    inst = load_instance(tmp_path / "full.yaml")
    estimate = inst.performance.throughput["Transformer (batch size 32)"]["k80"]
    assert abs(estimate / truth - 1) < 0.3  # 3.12 vs the hidden 3.51 steps/s
    code, _, err = run("solve", tmp_path / "full.yaml", "-p", "max_min_fairness")
    assert code == 0, err


def test_perf_commands_read_an_instance_that_names_table_files_from_any_folder(tmp_path, monkeypatch):
    # instances/small-tables.json names its jobs and throughput tables relative to its folder
    source = ROOT / "instances" / "small-tables.json"
    monkeypatch.chdir(tmp_path)
    code, stdout, err = run("perf", "complete", source, "--method", "ensemble", "--ensemble", "0",
                            "-o", tmp_path / "full.json")
    assert code == 0, err
    assert "24 job types x 3 GPU types" in stdout and "unconsolidated: 18 measured" in stdout
    inst = load_instance(tmp_path / "full.json")
    assert len(inst.jobs) == len(load_instance(source).jobs)
    assert inst.performance.throughput == load_instance(source).performance.throughput
    code, stdout, err = run("perf", "study", source, "--target", "unconsolidated", "--fractions", "0.3",
                            "--seeds", "1", "--method", "ensemble", "--ensemble", "0", "--json")
    assert code == 0, err
    assert [(r["hidden"], r["unfilled"]) for r in json.loads(stdout)] == [(5, 0)]


def test_perf_build_and_study_from_files(tmp_path):
    gavel = tmp_path / "tiny.json"
    gavel.write_text(json.dumps(TINY_GAVEL))
    code, _, err = run("perf", "build", "--gavel", gavel, "-o", tmp_path / "g.json")
    assert code == 0 and "3 job types x 2 GPU types" in err
    pollux = tmp_path / "toy-placements.csv"
    pollux.write_text(TINY_POLLUX)
    code, _, err = run("perf", "build", "--pollux", pollux, "-o", tmp_path / "p.yaml")
    assert code == 0 and read_model(tmp_path / "p.yaml")[0].job_types[0] == "toy (batch size 32)"
    stream = tmp_path / "rounds.csv"
    stream.write_text("job,gpu_type,steps_per_s,partner\nj1,v100,4,\nj1,v100,8,\nj2,k80,1,\n"
                      "j1,k80,2,j2\n")
    code, _, err = run("perf", "build", "--measurements", stream, "-o", tmp_path / "o.json")
    m, _ = read_model(tmp_path / "o.json")
    assert code == 0, err
    assert m.values[0, 0] == pytest.approx(5.0)  # 0.25 * 8 + 0.75 * 4
    code, _, err = run("perf", "build", "--gavel", gavel, "--pollux", pollux, "-o", tmp_path / "x.json")
    assert code == 2 and err.startswith("error: give exactly one of")
    model, _ = low_rank_model(R=8, noise=0.02)
    write_model(model, tmp_path / "lr.json")
    code, stdout, err = run("perf", "study", tmp_path / "lr.json", "--fractions", "0.3,0.6",
                            "--seeds", "1", "--ranks", "2", "--lambdas", "0.1", "--ensemble", "3",
                            "--plot", tmp_path / "s.png", "--no-progress")
    assert code == 0, err
    assert stdout.splitlines()[0].split() == ["target", "hidden", "method", "entries", "unfilled", "MRE",
                                              "MRE", "range", "median", "p90", "worst", "p90", "within",
                                              "2", "sd", "less", "error", "than", "als"]
    # two fractions x two methods (als, ensemble) under a header and a rule
    assert len(stdout.splitlines()) == 6 and (tmp_path / "s.png").exists()
    assert [line.split()[2] for line in stdout.splitlines()[2:]] == ["als", "ensemble"] * 2
    code, stdout, _ = run("perf", "study", tmp_path / "lr.json", "--fractions", "0.5", "--seeds",
                          "1", "--target", "isolated", "--ensemble", "0", "--json")
    rows = json.loads(stdout)
    assert code == 0 and rows[0]["target"] == "isolated" and rows[0]["coverage"] is not None


@needs_samples
def test_perf_commands_on_gavels_table(tmp_path):
    code, _, err = run("perf", "build", "--gavel", TABLE, "-o", tmp_path / "g.json")
    # every pair entry of Gavel's table is a measurement, the 3,396 cells at [0, 0] included
    assert code == 0 and ("pairs: 5277 measured (3396 at 0: cannot share), 0 estimated (0 at 0), "
                          "0 missing") in err
    code, stdout, err = run("perf", "complete", tmp_path / "g.json", "--ensemble", "0")
    assert code == 0 and "filled 0 entries" in stdout and "0 still missing" in stdout
    model = gavel_model(TABLE)
    hidden = hide_units(model, 0.5, "pairs", seed=0, zeros=True)
    write_model(model.hide(hidden), tmp_path / "holes.json")
    code, stdout, err = run("perf", "complete", tmp_path / "holes.json", "-o", tmp_path / "full.json",
                            "--ensemble", "0", "--max-rows", "3")
    assert code == 0, err
    full, _ = read_model(tmp_path / "full.json")
    # hidden cells that do not exist once hidden (a job type that cannot run alone on that GPU
    # type) and cold starts stay missing; see tests/test_perf_completion_zeros.py for the rule
    filled = int(full.estimated.sum())
    assert f"filled {filled} entries" in stdout and f"{int(full.missing.sum())} still missing" in stdout
    assert filled == 2562 and int(full.missing.sum()) == 20
    assert np.array_equal(full.known, model.known & ~hidden)
    assert np.array_equal(full.values[full.known], model.values[full.known])
