"""Unconsolidated rates (schedopt.perf.spread): the likelihood gradient against finite
differences, a planted spread ratio recovered, measurements never touched, estimates flagged
through files, the study's unconsolidated target, the CLI, and Gavel's measured table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from schedopt.cli.main import main
from schedopt.errors import InstanceError
from schedopt.perf import accuracy_study, gavel_model, predict, read_model, summarize, write_model
from schedopt.perf.kernel import _Similarity
from schedopt.perf.model import PerformanceModel
from schedopt.perf.side import job_type_info
from schedopt.perf.spread import MIN_MEASURED, _Covariance, _objective, fill_unconsolidated
from schedopt.perf.study import hide_unconsolidated

SHARED = Path(__file__).resolve().parents[2] / "shared" / "trace-samples"
TABLE = SHARED / "gavel" / "simulation_throughputs.json"
needs_samples = pytest.mark.skipif(not TABLE.exists(), reason="../shared/trace-samples not present")
FAMILIES = {"Alpha": 1.0, "Beta": 0.4, "Gamma": 2.5}
SPEED = {"v100": 3.0, "k80": 1.0}


def _planted(noise: float = 0.0, seed: int = 1) -> dict:
    """A performance section: consolidated rates of 3 families x 5 batch sizes x scale factors
    1, 2, 4 on two GPU types, and every multi-GPU job type's unconsolidated rate from the
    planted ratio log(U / T) = -0.2 - 0.15 (log T - 1) - 0.1 log2(scale) (+ noise): faster
    steps lose more when spread, as on Gavel's table."""
    rng = np.random.default_rng(seed)
    throughput, spread = {}, {}
    for family, speed in FAMILIES.items():
        for b in (8, 16, 32, 64, 128):
            for s in (1, 2, 4):
                t = f"{family} (batch size {b}) x{s}"
                throughput[t] = {g: speed * m * s * b ** 0.3 for g, m in SPEED.items()}
                if s > 1:
                    spread[t] = {g: x * float(np.exp(_ratio(x, s) + noise * rng.normal()))
                                 for g, x in throughput[t].items()}
    return {"throughput": throughput, "unconsolidated": spread}


def _ratio(rate: float, scale: int) -> float:
    return -0.2 - 0.15 * (np.log(rate) - 1.0) - 0.1 * np.log2(scale)


def _model(section) -> PerformanceModel:
    return PerformanceModel.from_section(section)


def test_the_likelihood_gradient_matches_finite_differences():
    info = job_type_info([f"{f} (batch size {b}) x{s}" for f in FAMILIES for b in (8, 32, 128) for s in (2, 4)])
    rng = np.random.default_rng(0)
    n = len(info.family)
    a, g = np.repeat(np.arange(n), 2), np.tile([0, 1], n)
    x, z = rng.normal(size=a.size), rng.normal(size=a.size)
    terms = _Covariance(_Similarity.of(info), info.scale_factor, a, g, x, z, a, g, x, z)
    y = rng.normal(size=a.size) * 0.3
    theta = np.log([0.1, 0.05, 0.2, 0.03, 0.02, 0.015, 0.01, 1.3, 0.7])
    value, grad = _objective(theta, terms, y)
    for i in range(theta.size):
        step = np.zeros_like(theta)
        step[i] = 1e-6
        numeric = (_objective(theta + step, terms, y)[0] - _objective(theta - step, terms, y)[0]) / 2e-6
        assert grad[i] == pytest.approx(numeric, rel=1e-4, abs=1e-6)


def test_a_planted_spread_ratio_is_recovered_and_measurements_stay():
    truth = _model(_planted())
    keys = hide_unconsolidated(truth, 1 / 3, seed=0)
    assert len(keys) == round(60 / 3)
    hidden = truth.without_unconsolidated(keys)
    assert hidden.unconsolidated_missing == len(keys) and truth.unconsolidated_missing == 0
    J = len(truth.gpu_types)
    got = fill_unconsolidated(hidden, truth.values[:, :J])
    assert set(got.unconsolidated_estimated) == set(keys)
    errors = np.array([abs(got.unconsolidated[t][g] / truth.unconsolidated[t][g] - 1) for t, g in keys])
    assert errors.mean() < 0.01 and errors.max() < 0.03
    # U = T, what a simulator assumes without U, is off by the planted ratio (20-60%)
    row = {t: r for r, t in enumerate(truth.job_types)}
    naive = np.array([abs(truth.values[row[t], truth.gpu_types.index(g)] / truth.unconsolidated[t][g] - 1)
                      for t, g in keys])
    assert naive.mean() > 0.3
    for t, rates in hidden.unconsolidated.items():  # measurements are kept exactly
        for g, x in rates.items():
            assert got.unconsolidated[t][g] == x and (t, g) not in got.unconsolidated_estimated
    assert all(0 < u < 0.1 for u in got.unconsolidated_estimated.values())


def test_uncertainty_is_honest_on_a_noisy_planted_ratio():
    truth = _model(_planted(noise=0.05, seed=3))
    covered, errors = [], []
    for seed in range(8):  # 30 ratios fitted per draw: one draw's coverage runs 63-100%
        keys = hide_unconsolidated(truth, 0.5, seed)
        got = fill_unconsolidated(truth.without_unconsolidated(keys), truth.values[:, :2], seed=seed)
        for t, g in keys:
            e = np.log(got.unconsolidated[t][g] / truth.unconsolidated[t][g])
            errors.append(abs(np.expm1(e)))
            covered.append(abs(e) <= 2 * got.unconsolidated_estimated[(t, g)])
    assert np.mean(errors) < 0.06  # the noise alone is 0.05 in log units: 4% mean
    assert 0.85 <= np.mean(covered) <= 1.0  # 90%


def test_zeros_few_measurements_and_single_gpu_jobs():
    section = _planted()
    t0 = "Alpha (batch size 8) x2"
    section["unconsolidated"][t0]["k80"] = 0.0  # measured: this job cannot run spread on a K80
    truth = _model(section)
    keys = hide_unconsolidated(truth, 0.5, seed=1)
    assert (t0, "k80") not in keys  # only rates above 0 are hidden (relative errors)
    got = fill_unconsolidated(truth.without_unconsolidated(keys), truth.values[:, :2])
    assert got.unconsolidated[t0]["k80"] == 0.0 and (t0, "k80") not in got.unconsolidated_estimated
    assert not any(t.endswith(" x1") for t, _ in got.unconsolidated_estimated)  # never spread
    # a job type that cannot run on a GPU type (0 steps/s consolidated) gets no spread rate there
    section = _planted()
    t1 = "Gamma (batch size 128) x4"
    section["throughput"][t1]["k80"] = 0.0
    del section["unconsolidated"][t1]["k80"]
    got = fill_unconsolidated(_model(section), _model(section).values[:, :2])
    assert "k80" not in got.unconsolidated[t1] and not got.unconsolidated_estimated
    # fewer than MIN_MEASURED measured ratios: nothing is invented
    few = _model(_planted())
    keep = [(t, g) for t, r in few.unconsolidated.items() for g in r][:MIN_MEASURED - 1]
    drop = [(t, g) for t, r in few.unconsolidated.items() for g in r if (t, g) not in keep]
    sparse = few.without_unconsolidated(drop)
    assert fill_unconsolidated(sparse, few.values[:, :2]) is sparse


def test_estimates_are_flagged_through_model_files(tmp_path):
    truth = _model(_planted())
    keys = hide_unconsolidated(truth, 0.25, seed=2)
    result = predict(truth.without_unconsolidated(keys), seed=0, ensemble=0)
    assert result.unconsolidated == frozenset(keys)
    spread = [e for e in result.entries() if e["unconsolidated"]]
    assert {(e["job_type"], e["gpu_type"]) for e in spread} == set(keys)
    assert all(not e["measured"] and e["partner"] is None for e in spread)
    write_model(result.model, tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    flagged = {(c["job_type"], c["gpu_type"]) for c in doc["estimated"] if c.get("unconsolidated")}
    assert flagged == set(keys)
    back, _ = read_model(tmp_path / "m.json")
    assert dict(back.unconsolidated_estimated) == pytest.approx(dict(result.model.unconsolidated_estimated))
    def flat(m):
        return {(t, g): x for t, r in m.unconsolidated.items() for g, x in r.items()}

    assert flat(back) == pytest.approx(flat(result.model))
    # an estimate is not a measurement: a second run neither refits on it nor refills it
    again = predict(back, seed=0, ensemble=0)
    assert again.unconsolidated == frozenset() and dict(again.model.unconsolidated_estimated) == pytest.approx(
        dict(back.unconsolidated_estimated))
    # predict(unconsolidated=False) leaves them alone
    off = predict(truth.without_unconsolidated(keys), seed=0, ensemble=0, unconsolidated=False)
    assert not off.model.unconsolidated_estimated and off.unconsolidated == frozenset()
    # a flag naming no unconsolidated entry is one clear problem at its path
    doc["estimated"].append({"job_type": "Alpha (batch size 8) x1", "gpu_type": "v100", "unconsolidated": True})
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(InstanceError, match=rf"estimated\[{len(doc['estimated']) - 1}\]"):
        read_model(tmp_path / "bad.json")


def test_study_of_the_unconsolidated_target():
    truth = _model(_planted(noise=0.02))
    frame = accuracy_study(truth, (0.5,), ("unconsolidated",), [0, 1], methods=("als", "ensemble"), ensemble=0)
    als = frame[frame["method"] == "als"]
    ens = frame[frame["method"] == "ensemble"]
    assert (als["hidden"] == 30).all() and (als["unfilled"] == 30).all() and als["mre"].isna().all()
    assert (ens["unfilled"] == 0).all() and (ens["mre"] < 0.04).all() and (ens["coverage"] >= 0.8).all()


def test_cli_fills_and_shows_unconsolidated_rates(tmp_path):
    truth = _model(_planted())
    keys = hide_unconsolidated(truth, 0.25, seed=2)
    write_model(truth.without_unconsolidated(keys), tmp_path / "m.json")
    runner = CliRunner()
    out = runner.invoke(main, ["perf", "complete", str(tmp_path / "m.json"), "--method", "ensemble",
                               "--ensemble", "0", "--max-rows", "100"])
    assert out.exit_code == 0, out.output
    assert out.stdout.count("(spread over nodes)") == len(keys)
    assert f"unconsolidated: {60 - len(keys)} measured, {len(keys)} estimated, 0 missing" in out.stdout
    out = runner.invoke(main, ["perf", "complete", str(tmp_path / "m.json"), "--method", "ensemble",
                               "--ensemble", "0", "--json"])
    doc = json.loads(out.stdout)
    assert sum(e["unconsolidated"] for e in doc["filled"]) == len(keys)
    out = runner.invoke(main, ["perf", "complete", str(tmp_path / "m.json"), "--method", "ensemble",
                               "--ensemble", "0", "--json", "--no-unconsolidated"])
    assert not any(e["unconsolidated"] for e in json.loads(out.stdout)["filled"])
    out = runner.invoke(main, ["perf", "study", str(tmp_path / "m.json"), "--target", "unconsolidated",
                               "--fractions", "0.5", "--seeds", "1", "--ensemble", "0", "--json"])
    rows = json.loads(out.stdout)
    assert out.exit_code == 0 and {r["method"] for r in rows} == {"als", "ensemble"}
    assert [r["unfilled"] for r in rows if r["method"] == "ensemble"] == [0]


@needs_samples
def test_gavels_unconsolidated_rates_with_half_hidden():
    model = gavel_model(TABLE)
    keys = hide_unconsolidated(model, 0.5, seed=0)
    assert len(keys) == 82
    got = fill_unconsolidated(model.without_unconsolidated(keys), model.values[:, :3], seed=0)
    e = np.array([np.log(got.unconsolidated[t][g] / model.unconsolidated[t][g]) for t, g in keys])
    u = np.array([got.unconsolidated_estimated[k] for k in keys])
    assert np.abs(np.expm1(e)).mean() < 0.10  # 8.2% (U = T: 87%)
    assert 0.90 <= np.mean(np.abs(e) <= 2 * u) <= 0.98
    # and the three K80 rates Gavel never measured (ResNet-50 at batch size 64 on 2, 4, 8 GPUs)
    full = fill_unconsolidated(model, model.values[:, :3], seed=0)
    assert sorted(full.unconsolidated_estimated) == [(f"ResNet-50 (batch size 64) x{s}", "k80") for s in (2, 4, 8)]


def test_a_spread_rate_on_an_estimated_consolidated_rate_carries_both_uncertainties():
    truth = _model(_planted())
    t, gpu = "Beta (batch size 32) x4", "k80"
    r, j = truth.job_types.index(t), truth.gpu_types.index(gpu)
    mask = np.zeros(truth.shape, dtype=bool)
    mask[r, j] = True
    hidden = truth.hide(mask).without_unconsolidated([(t, gpu)])
    result = predict(hidden, seed=0, ensemble=0)
    assert result.filled[r, j] and result.weights  # the members ran for the isolated cell
    assert result.unconsolidated == frozenset({(t, gpu)})
    got = result.model
    rate, rate_sd = got.values[r, j], got.uncertainty[r, j]
    assert rate == pytest.approx(truth.values[r, j], rel=0.1)
    # U is the estimated T times the predicted ratio, within the planted ratio's reach
    assert got.unconsolidated[t][gpu] / rate == pytest.approx(np.exp(_ratio(rate, 4)), rel=0.03)
    assert got.unconsolidated_estimated[(t, gpu)] >= rate_sd > 0


def test_an_instance_completed_by_the_ensemble_carries_the_predicted_spread_rates(tmp_path):
    from schedopt.instance import load_instance

    section = _planted()
    truth = _model(section)
    keys = hide_unconsolidated(truth, 0.25, seed=4)
    for t, g in keys:
        del section["unconsolidated"][t][g]
    jobs = [{"id": f"j{i}", "type": t, "total_steps": 1000, "scale_factor": 2}
            for i, t in enumerate(sorted({t for t, _ in keys if t.endswith(" x2")}))]
    doc = {"format": "schedopt-instance/1",
           "cluster": {"gpu_types": {g: {"count": 8, "gpus_per_node": 2} for g in SPEED}},
           "jobs": jobs, "performance": section}
    (tmp_path / "in.json").write_text(json.dumps(doc))
    before = (tmp_path / "in.json").read_text()
    out = CliRunner().invoke(main, ["perf", "complete", str(tmp_path / "in.json"), "--method", "ensemble",
                                    "--ensemble", "0", "-o", str(tmp_path / "out.json")])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "in.json").read_text() == before  # the input is never touched
    spread = load_instance(tmp_path / "out.json").performance.unconsolidated
    for t, g in keys:
        assert spread[t][g] == pytest.approx(truth.unconsolidated[t][g], rel=0.03)


def test_the_study_compares_methods_on_the_cells_both_filled():
    truth = _model(_planted(noise=0.02))
    frame = accuracy_study(truth, (0.5,), ("isolated",), [0], methods=("als", "ensemble"), ensemble=0)
    als, ens = (frame[frame["method"] == m].iloc[0] for m in ("als", "ensemble"))
    assert als["unfilled"] > 0 and ens["unfilled"] == 0  # cold starts: the ensemble fills them
    # each method's own MRE is over the cells it filled; mre_shared over the cells both filled
    assert als["mre_shared"] == pytest.approx(als["mre"])
    assert ens["mre_shared"] < ens["mre"]
    row = summarize(frame).set_index("method").loc["ensemble"]
    assert row["improvement"] == pytest.approx(1 - ens["mre_shared"] / als["mre_shared"])
    # a model with no pair measured: nothing to hide, zero rows hidden rather than an error
    empty = accuracy_study(truth, (0.5,), ("pairs",), [0], methods=("als",), ensemble=0)
    assert empty["hidden"].tolist() == [0] and empty["mre"].isna().all()


def test_a_ratio_over_an_estimated_consolidated_rate_is_not_fitted():
    truth = _model(_planted())
    keys = hide_unconsolidated(truth, 0.25, seed=5)
    t, gpu = next((t, g) for t, r in truth.unconsolidated.items() for g in r if (t, g) not in keys)
    r, j = truth.job_types.index(t), truth.gpu_types.index(gpu)
    mask = np.zeros(truth.shape, dtype=bool)
    mask[r, j] = True
    base = truth.hide(mask).without_unconsolidated(keys)  # T of (t, gpu) unknown, its U measured
    rates = truth.values[:, :2].copy()
    got = fill_unconsolidated(base, rates)
    rates[r, j] *= 10  # a wild estimate of T there must not move the other predictions
    moved = fill_unconsolidated(base, rates)
    for k in keys:
        assert moved.unconsolidated[k[0]][k[1]] == pytest.approx(got.unconsolidated[k[0]][k[1]], rel=1e-9)
    assert moved.unconsolidated[t][gpu] == truth.unconsolidated[t][gpu]  # the measurement stays


def test_a_gpu_type_with_no_measured_ratio_is_read_off_the_shared_speed_term():
    truth = _model(_planted())
    keys = [(t, "k80") for t in truth.unconsolidated]  # every K80 ratio unmeasured
    got = fill_unconsolidated(truth.without_unconsolidated(keys), truth.values[:, :2])
    e = np.array([np.log(got.unconsolidated[t][g] / truth.unconsolidated[t][g]) for t, g in keys])
    u = np.array([got.unconsolidated_estimated[k] for k in keys])
    assert np.abs(np.expm1(e)).mean() < 0.12  # 9.9% (16.8% without the shared speed term)
    assert np.mean(np.abs(e) <= 2 * u) >= 0.9  # and the uncertainty says it is a guess: 100%
    assert u.mean() > 2 * np.mean(list(fill_unconsolidated(  # wider than where K80 ratios are seen
        truth.without_unconsolidated(keys[::2]), truth.values[:, :2]).unconsolidated_estimated.values()))
