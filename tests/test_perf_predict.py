"""Side-information predictors of schedopt.perf (side.py, predict.py): labels parsed into
families, the group ridge recovering a planted additive model, and the ensemble beating (or
matching) plain completion on a planted low-rank + family model where the truth is known."""

from __future__ import annotations

import numpy as np
import pytest

from schedopt.perf import PerformanceModel, complete, hide_units, model_from_arrays
from scipy.stats import halfnorm

from schedopt.perf.predict import (CALIBRATION_QUANTILE, ERROR_FLOOR, ISOLATED_MEMBERS, PAIR_MEMBERS,
                                   _Members, _calibrated_sd, predict)
from schedopt.perf.side import GroupRidge, job_type_info, relative_ratios
from schedopt.traces.performance import label


def test_labels_give_family_model_batch_size_and_scale_factor():
    info = job_type_info(["ResNet-50 (batch size 64) x4", "A3C", "LM (batch size 5)",
                          "Recommendation (batch size 8192) x2"])
    assert info.family == ("ResNet-50", "A3C", "LM", "Recommendation")
    assert info.model == ("ResNet-50 (batch size 64)", "A3C", "LM (batch size 5)",
                          "Recommendation (batch size 8192)")
    assert np.isnan(info.batch_size[1])
    assert info.batch_size[[0, 2, 3]].tolist() == [64.0, 5.0, 8192.0]
    assert info.scale_factor.tolist() == [4, 1, 1, 2]


def test_group_ridge_recovers_a_planted_additive_model_on_unseen_combinations():
    rng = np.random.default_rng(3)
    n_a, n_b = 12, 9
    a, b = (x.ravel() for x in np.meshgrid(np.arange(n_a), np.arange(n_b), indexing="ij"))
    alpha, beta = rng.normal(size=n_a), rng.normal(size=n_b)
    y = 2.0 + alpha[a] + beta[b]  # every (a, b) combination: additive, no interaction
    train = rng.random(a.size) < 0.6
    pred = GroupRidge([a, b]).fit_predict(train, np.where(train, y, np.nan), lam=1e-4)
    # combinations never seen are predicted from the a and b effects alone, exactly
    np.testing.assert_allclose(pred[~train], y[~train], atol=1e-4)
    # a larger ridge weight shrinks the effects toward the mean: error grows, never explodes
    shrunk = GroupRidge([a, b]).fit_predict(train, np.where(train, y, np.nan), lam=10.0)
    assert 1e-3 < np.abs(shrunk[~train] - y[~train]).mean() < np.abs(y - y[train].mean()).mean()


def test_relative_ratios_worked_by_hand():
    info = job_type_info(["A (batch size 8)", "A (batch size 16)", "A (batch size 64)", "B (batch size 8)"])
    L = np.log(np.array([[np.nan, 2.0],    # A 8: only on the second GPU type
                         [6.0, 3.0],        # A 16: ratio 2 between the types
                         [8.0, 2.0],        # A 64: ratio 4
                         [1.0, 1.0]]))      # B: another family, no relative of A
    got = relative_ratios(info, L, beta=1.0, floor=0.01)
    # relatives of A 8 at |log2 batch difference| 1 and 3: weights e^-1 and e^-3
    w = np.exp([-1.0, -3.0])
    d = np.log([2.0, 4.0])
    mean = (w * d).sum() / w.sum()
    assert got[0, 0] == pytest.approx(np.log(2.0) + mean, abs=1e-12)
    # B has no relative, so only its own cells (kept as measured elsewhere) and no estimate
    assert np.isnan(got[3]).all()


def test_relative_ratios_recover_a_planted_ratio_model_exactly():
    rng = np.random.default_rng(7)
    types = [label(f"{f} (batch size {b})", s)
             for f in ("P", "Q", "R") for b in (8, 32, 128) for s in (1, 2, 4)]
    info = job_type_info(types)
    level = {m: rng.normal(0, 1) for m in set(info.model)}
    ratio = {(f, g): rng.normal(0, 0.7) for f in "PQR" for g in range(3)}
    gain = {(f, s): np.log(s) * rng.uniform(0.5, 1.0) for f in "PQR" for s in (1, 2, 4)}
    truth = np.array([[level[info.model[a]] + ratio[(info.family[a], g)]
                       + gain[(info.family[a], info.scale_factor[a])] for g in range(3)]
                      for a in range(len(types))])
    hidden = rng.random(truth.shape) < 0.4
    got = relative_ratios(info, np.where(hidden, np.nan, truth))
    # every anchor's relatives show the same ratio, so each estimate is exact
    ok = np.isfinite(got) & hidden
    assert ok.sum() >= 0.9 * hidden.sum()
    np.testing.assert_allclose(got[ok], truth[ok], atol=1e-9)


# ------------------------------------------------------------------------------ planted model
FAMILIES = ("Alpha", "Beta", "Gamma")
BATCHES = (8, 16, 32, 64, 128)
SCALES = (1, 2, 4)
GPUS = ("g0", "g1", "g2")
FAST = {"ranks": (2, 4), "lambdas": (0.3,)}  # a small low-rank grid keeps these tests quick


def planted(seed: int = 0, noise: float = 0.0) -> tuple[PerformanceModel, np.ndarray]:
    """A model whose truth is the side model's form: log isolated steps/s = (model, GPU type)
    effect + (family, scale factor, GPU type) effect; log slowdown of a next to b on g = (a, g)
    + (b, g) + (family a, family b, g) effects (< 0), plus `noise` (sd, log). Every cell
    measured; returns (model, truth values)."""
    rng = np.random.default_rng(seed)
    types = [label(f"{f} (batch size {b})", s) for s in SCALES for f in FAMILIES for b in BATCHES]
    info = job_type_info(types)
    R, J = len(types), len(GPUS)
    model_eff = {(m, g): rng.normal(1.0, 0.6) for m in sorted(set(info.model)) for g in range(J)}
    scale_eff = {(f, s, g): np.log(s) * rng.uniform(0.7, 1.0) for f in FAMILIES for s in SCALES
                 for g in range(J)}
    iso = np.array([[model_eff[(info.model[a], g)] + scale_eff[(info.family[a], info.scale_factor[a], g)]
                     for g in range(J)] for a in range(R)])
    single = [a for a in range(R) if info.scale_factor[a] == 1]
    partners = tuple(types[a] for a in single)
    sens, aggr = rng.uniform(0.1, 0.5, (R, J)), rng.uniform(0.1, 0.5, (R, J))
    fam_pair = {(f1, f2, g): rng.uniform(0.0, 0.2) for f1 in FAMILIES for f2 in FAMILIES for g in range(J)}
    pairs = np.full((R, J, len(single)), np.nan)
    for i, a in enumerate(single):
        for k, b in enumerate(single):
            for g in range(J):
                pairs[a, g, k] = iso[a, g] - sens[a, g] - aggr[b, g] - fam_pair[(info.family[a], info.family[b], g)]
    truth = np.exp(np.concatenate([iso, pairs.reshape(R, -1)], axis=1))
    noisy = truth * np.exp(noise * rng.standard_normal(truth.shape))
    noisy[:, J:] = np.minimum(noisy[:, J:], np.repeat(noisy[:, :J], len(single), axis=1))
    model = model_from_arrays(types, GPUS, noisy[:, :J], noisy[:, J:].reshape(R, J, -1), partners)
    return model, truth


def test_planted_model_is_what_the_labels_say():
    model, truth = planted()
    assert model.shape == (45, 3 * (1 + 15)) and int(model.known.sum()) == 45 * 3 + 15 * 15 * 3
    assert (truth[:, 3:][model.known[:, 3:]] <= np.repeat(truth[:, :3], 15, axis=1)[model.known[:, 3:]]).all()


def test_ensemble_recovers_hidden_pairs_of_a_planted_side_model_better_than_low_rank_alone():
    model, truth = planted(seed=1)
    hidden = hide_units(model, 0.5, "pairs", seed=4)
    seen = model.hide(hidden)
    als = complete(seen, seed=0, ensemble=0, **FAST)
    ens = predict(seen, seed=0, ensemble=0, **FAST)
    rel = lambda got: np.abs(got.model.values[hidden] - truth[hidden]) / truth[hidden]  # noqa: E731
    assert np.isfinite(ens.model.values[hidden]).all()
    assert rel(ens).mean() < 0.02 and rel(ens).max() < 0.1
    assert rel(ens).mean() < 0.5 * rel(als).mean()
    # measured cells are kept bit for bit
    assert np.array_equal(ens.model.values[seen.known], model.values[seen.known])
    assert np.array_equal(ens.model.known, seen.known)


def test_ensemble_predicts_job_types_never_measured_from_their_relatives():
    model, truth = planted(seed=2)
    info = job_type_info(model.job_types)
    cold = np.array([info.scale_factor[a] == 4 and info.family[a] == "Beta" and info.batch_size[a] == 32
                     for a in range(model.shape[0])])
    hidden = np.zeros(model.shape, dtype=bool)
    hidden[cold, :3] = True  # 'Beta (batch size 32) x4' never measured anywhere
    hidden |= hide_units(model, 0.3, "isolated", seed=5)
    seen = model.hide(hidden)
    als = complete(seen, seed=0, ensemble=0, **FAST)
    ens = predict(seen, seed=0, ensemble=0, **FAST)
    assert np.isnan(als.model.values[cold, :3]).all()  # a cold start for low-rank completion
    got = ens.model.values[cold, :3]
    # its relatives: Beta (batch size 32) on one GPU, Beta x4 at other batch sizes
    np.testing.assert_allclose(got, truth[cold, :3], rtol=0.15)
    filled = hidden & np.isfinite(ens.model.values)
    assert filled[:, :3].sum() == hidden[:, :3].sum()
    err = np.abs(ens.model.values[filled] - truth[filled]) / truth[filled]
    assert err.mean() < 0.1


def test_ensemble_uncertainty_covers_noisy_hidden_cells_about_as_calibrated():
    model, truth = planted(seed=3, noise=0.05)
    hidden = hide_units(model, 0.5, "pairs", seed=6)
    ens = predict(model.hide(hidden), seed=0, ensemble=4, **FAST)
    est, u = ens.model.values[hidden], ens.model.uncertainty[hidden]
    measured = model.values[hidden]
    covered = np.abs(np.log(est / measured)) <= 2 * u
    assert 0.85 <= covered.mean() <= 1.0
    assert (u > 0).all() and (u < 0.3).all()


def test_ensemble_keeps_measured_zeros_and_the_cannot_share_rule_of_completion():
    model, _ = planted(seed=4)
    values = model.values.copy()
    J, P = 3, 15
    a = model.job_types.index("Alpha (batch size 64)")
    rows = model.pair_rows
    values[a, J:] = np.where(np.arange(J * P) % P < 12, 0.0, values[a, J:])  # fails with 12 of 15
    for g in range(J):  # both sides of every failing pair
        for k in range(12):
            values[rows[k], J + g * P + model.partners.index(model.job_types[a])] = 0.0
    zeroed = model.with_values(values, known=np.isfinite(values))
    hidden = hide_units(zeroed, 0.3, "pairs", seed=1, zeros=True)
    seen = zeroed.hide(hidden)
    als, ens = complete(seen, seed=0, ensemble=0, **FAST), predict(seen, seed=0, ensemble=0, **FAST)
    assert np.array_equal(ens.cannot_share, als.cannot_share)
    assert (ens.model.values[ens.cannot_share] == 0).all()
    assert (ens.model.values[seen.known & (seen.values == 0)] == 0).all()
    positive = ens.filled & ~ens.cannot_share
    assert (ens.model.values[positive] > 0).all()


def test_isolated_weights_are_chosen_per_single_and_multi_gpu_job_types():
    model, truth = planted(seed=5)
    hidden = hide_units(model, 0.5, "isolated", seed=2)
    seen = model.hide(hidden)
    ens = predict(seen, seed=0, ensemble=0, **FAST)
    for g in GPUS:
        assert f"pairs:{g}" in ens.weights
        for rows in ("single-GPU", "multi-GPU"):
            w = ens.weights[f"isolated:{g}:{rows}"]
            assert set(w) == set(ISOLATED_MEMBERS) and sum(w.values()) == pytest.approx(1.0)
        assert set(ens.weights[f"pairs:{g}"]) == set(PAIR_MEMBERS)  # no ratio, scaling, pairmax there
    assert np.isfinite(ens.model.values[hidden]).all()
    # the ratio member can only be given weight where held-out folds favour it
    without = predict(seen, seed=0, ensemble=0, members=PAIR_MEMBERS, **FAST)
    rel = lambda got: np.abs(got.model.values[hidden] - truth[hidden]) / truth[hidden]  # noqa: E731
    assert rel(ens).mean() <= rel(without).mean() + 0.02
    with pytest.raises(Exception, match="at least one member"):
        predict(seen, members=("ratio",), **FAST)


def _measured_zero(seed: int, job_type: str, gpu: int) -> tuple[PerformanceModel, int]:
    """A planted model in which `job_type` was measured at 0 steps/s (cannot run) on GPU type
    `gpu`, and that job type's row."""
    model, _ = planted(seed=seed)
    values = model.values.copy()
    row = model.job_types.index(job_type)
    values[row, gpu] = 0.0
    return model.with_values(values, known=np.isfinite(values)), row


def test_measured_isolated_zeros_stay_zero_and_are_no_relative_s_ratio():
    zeroed, a = _measured_zero(seed=6, job_type="Gamma (batch size 16) x2", gpu=1)
    hidden = hide_units(zeroed, 0.5, "isolated", seed=3)
    ens = predict(zeroed.hide(hidden), seed=0, ensemble=0, **FAST)
    assert ens.model.values[a, 1] == 0.0 and ens.model.known[a, 1]
    positive = hidden & np.isfinite(ens.model.values)
    assert (ens.model.values[positive] > 0).all() and np.isfinite(np.log(ens.model.values[positive])).all()


def _scaling_member(model: PerformanceModel) -> _Members:
    return _Members(model, 2, 0.3, [(2, 0.3)] * len(model.gpu_types), seed=0)


def test_scaling_member_recovers_a_planted_models_by_scale_factor_matrix():
    # log steps/s = model speed + (model, GPU type) + (scale factor, GPU type) effects + a
    # rank-1 interaction of the model with (scale factor, GPU type): the member's own form on
    # the matrix models x (scale factor, GPU type), planted exactly
    rng = np.random.default_rng(8)
    models = [f"{f} (batch size {b})" for f in ("Alpha", "Beta") for b in (8, 16, 32, 64)]
    scales = (1, 2, 4, 8)
    types = [label(m, s) for m in models for s in scales]
    M, S, J = len(models), len(scales), len(GPUS)
    speed, per_gpu = rng.normal(1.0, 0.5, M), rng.normal(0.0, 0.5, (M, J))
    column = np.log(scales)[:, None] * rng.uniform(0.6, 1.0, (S, J))
    u, w = rng.normal(0.0, 0.5, M), rng.normal(0.0, 0.5, (S, J))
    log_truth = (speed[:, None, None] + per_gpu[:, None, :] + column[None] + u[:, None, None] * w[None])
    log_truth = log_truth.reshape(M * S, J)  # rows in the order of `types`
    model = model_from_arrays(types, GPUS, np.exp(log_truth))
    hidden = np.zeros(model.shape, dtype=bool)
    hidden[:, :J] = rng.random((M * S, J)) < 0.2
    fitter = _scaling_member(model)
    got = fitter.scaling(~hidden, rank=1, lam=1e-6)
    cells = hidden[:, :J]
    assert cells.sum() >= 10 and np.isfinite(got[:, :J][cells]).all()
    np.testing.assert_allclose(got[:, :J][cells], log_truth[cells], atol=1e-2)
    # a model's rates at other scale factors are what it is read from: with one model's every
    # cell unknown the member has nothing for it (the ensemble's other members fill it)
    gone = hidden.copy()
    gone[:S, :J] = True
    assert np.isnan(fitter.scaling(~gone, rank=1, lam=1e-6)[:S, :J]).all()


def test_scaling_member_ignores_measured_zeros_and_predict_keeps_them():
    zeroed, a = _measured_zero(seed=9, job_type="Beta (batch size 32) x4", gpu=2)
    hidden = hide_units(zeroed, 0.4, "isolated", seed=5)
    seen = zeroed.hide(hidden)
    without_cell = seen.hide(np.eye(1, seen.values.size, a * seen.shape[1] + 2, dtype=bool).reshape(seen.shape))
    everything = np.ones(seen.shape, dtype=bool)
    # the measured 0 takes no part in the fit: the same prediction as with the cell unknown
    np.testing.assert_array_equal(_scaling_member(seen).scaling(everything, 2, 0.1),
                                  _scaling_member(without_cell).scaling(everything, 2, 0.1))
    ens = predict(seen, seed=0, ensemble=0, **FAST)
    assert ens.weights[f"isolated:{GPUS[2]}:multi-GPU"]["scaling"] >= 0
    assert ens.model.values[a, 2] == 0.0 and ens.model.known[a, 2]
    assert (ens.model.values[hidden] > 0).all()


def test_calibrated_sd_follows_each_family_s_error_scale():
    # held-out log errors |N(0, sigma)| with sigma set by the job type's family on pair cells
    # (0.2 on isolated cells): the sd follows sigma, and 2 sd covers about
    # the pairs' CALIBRATION_QUANTILE of fresh errors in each family, not only of the pooled ones
    model, _ = planted(seed=7)
    info = job_type_info(model.job_types)
    rng = np.random.default_rng(0)
    sigma_of = {"Alpha": 0.05, "Beta": 0.1, "Gamma": 0.25}
    by_family = np.array([sigma_of[f] for f in info.family])[:, None]
    sigma = np.where(model.is_pair[None, :], by_family, 0.2)
    errors = np.abs(sigma * rng.standard_normal(model.shape))
    held = model.known & (rng.random(model.shape) < 0.5)
    folds = np.where(held, rng.integers(0, 4, model.shape), -1)
    sd = _calibrated_sd(model, info, np.where(held, errors, np.nan), folds)
    fresh = np.abs(sigma * rng.standard_normal(model.shape))
    family = np.array(info.family)
    q = halfnorm.ppf(CALIBRATION_QUANTILE["pairs"])
    for f, s in sigma_of.items():
        cells = (family == f)[:, None] & model.known & model.is_pair[None, :]
        assert np.median(sd[cells]) == pytest.approx((q * s + ERROR_FLOOR) / 2, rel=0.3)
        # one sd for the three families would cover Alpha's errors always and Gamma's far less
        # often; ERROR_FLOOR and the ridge's shrinkage pull the widest family's band in a little
        covered = (fresh[cells] <= 2 * sd[cells]).mean()
        assert CALIBRATION_QUANTILE["pairs"] - 0.15 <= covered <= 0.99
    iso = model.known & ~model.is_pair[None, :]
    q_iso = halfnorm.ppf(CALIBRATION_QUANTILE["isolated"])
    assert np.median(sd[iso]) == pytest.approx((q_iso * 0.2 + ERROR_FLOOR) / 2, rel=0.3)
    # a kind and GPU type with fewer than 5 held-out cells gets no sd
    few = np.where(held & model.is_pair[None, :], errors, np.nan)
    few[:3, 0] = errors[:3, 0]
    got = _calibrated_sd(model, info, few, folds)
    assert np.isnan(got[:, :3]).all()
    assert np.isfinite(got[model.known & model.is_pair[None, :]]).all()


def test_ensemble_uncertainty_is_wider_for_the_noisier_family_and_covers_both():
    model, truth = planted(seed=8)
    info = job_type_info(model.job_types)
    rng = np.random.default_rng(1)
    noise = np.where(np.array(info.family) == "Gamma", 0.25, 0.02)[:, None] * model.is_pair[None, :]
    values = np.where(model.known, truth * np.exp(noise * rng.standard_normal(model.shape)), np.nan)
    J, P = 3, len(model.partners)
    values[:, J:] = np.minimum(values[:, J:], np.repeat(values[:, :J], P, axis=1))
    noisy = model.with_values(values, known=np.isfinite(values))
    hidden = hide_units(noisy, 0.5, "pairs", seed=2)
    ens = predict(noisy.hide(hidden), seed=0, ensemble=0, **FAST)
    gamma = (np.array(info.family) == "Gamma")[:, None] & hidden
    quiet = hidden & ~gamma
    u = ens.model.uncertainty
    assert np.median(u[gamma]) > 2.5 * np.median(u[quiet])  # one sd per GPU type: equal
    covered = np.abs(np.log(ens.model.values / noisy.values)) <= 2 * u
    assert 0.85 <= covered[gamma].mean() <= 1.0 and 0.85 <= covered[quiet].mean() <= 1.0


def _pair_top_model(seed: int) -> tuple[PerformanceModel, np.ndarray, np.ndarray]:
    """Single-GPU job types on two GPU types whose least slowdown next to any partner is the
    same on each GPU type (offset[g], log): log isolated = log largest pair rate + offset[g]
    exactly, the `pairmax` member's form. Every cell measured; returns (model, log isolated
    rates, log pair rates (R, J, P))."""
    rng = np.random.default_rng(seed)
    types = [label(f"{f} (batch size {b})", 1) for f in ("Alpha", "Beta") for b in (8, 16, 32, 64)]
    R, J = len(types), 2
    offset = np.array([0.05, 0.3])
    iso = rng.normal(2.0, 1.0, (R, J))
    slow = offset[None, :, None] + rng.uniform(0.02, 0.6, (R, J, R))
    slow[np.arange(R)[:, None], np.arange(J)[None, :], rng.integers(0, R, (R, J))] = offset[None, :]
    pairs = iso[:, :, None] - slow
    return model_from_arrays(types, GPUS[:J], np.exp(iso), np.exp(pairs), types), iso, pairs


def test_pairmax_member_recovers_isolated_rates_from_the_largest_pair_rate():
    model, iso, _ = _pair_top_model(seed=11)
    hidden = np.zeros(model.shape, dtype=bool)
    hidden[[0, 3, 5], 0] = hidden[[1, 6], 1] = True
    got = _scaling_member(model).pairmax(~hidden)
    np.testing.assert_allclose(got[:, :2], iso, atol=1e-12)  # measured cells too: the form is exact
    assert np.isnan(got[:, 2:]).all()  # isolated cells only


def test_pairmax_member_skips_pairs_measured_at_zero():
    model, iso, pairs = _pair_top_model(seed=12)
    R, P = model.shape[0], len(model.partners)
    values = model.values.copy()
    values[0, 2:2 + P] = 0.0  # job type 0 cannot share GPU type 0 with anyone
    top = int(np.argmax(pairs[1, 1]))
    values[1, 2 + P + top] = 0.0  # nor job type 1 GPU type 1 with its least demanding partner
    zeroed = model.with_values(values, known=np.isfinite(values))
    train = np.ones(model.shape, dtype=bool)
    train[[0, 1], :2] = False  # their isolated rates unknown (else they set the offset too)
    got = _scaling_member(zeroed).pairmax(train)
    assert np.isnan(got[0, 0])  # no pair rate above 0 there: no estimate, never a positive rate
    second = np.sort(pairs[1, 1])[-2]
    assert got[1, 1] == pytest.approx(second + 0.3, abs=1e-12)  # the largest rate above 0
    np.testing.assert_allclose(got[2:, :2], iso[2:], atol=1e-12)
    # in the ensemble the measured zeros stay 0 and the isolated rates are filled
    ens = predict(zeroed.hide(~train & ~zeroed.is_pair[None, :]), seed=0, ensemble=0, **FAST)
    assert (ens.model.values[values == 0] == 0).all() and ens.model.known[values == 0].all()
    assert (ens.model.values[[0, 1], :2] > 0).all()
    assert ens.weights["isolated:g1:single-GPU"]["pairmax"] >= 0


def test_fill_stands_in_for_unmeasured_isolated_cells_in_ratio_and_scaling():
    model, truth = planted(seed=13)
    J = len(GPUS)
    hidden = hide_units(model, 0.4, "isolated", seed=4)
    fitter = _scaling_member(model)
    fill = np.where(hidden[:, :J], np.log(model.values[:, :J]), np.nan)
    everything = np.ones(model.shape, dtype=bool)
    # the hidden cells given as fill: the same fit as with them measured
    np.testing.assert_allclose(fitter.scaling(~hidden, 2, 0.1, fill=fill), fitter.scaling(everything, 2, 0.1),
                               atol=1e-6)
    np.testing.assert_allclose(fitter.ratio(~hidden, fill), fitter.ratio(everything), atol=1e-12)
    # measured cells win over fill
    wrong = np.full((model.shape[0], J), 5.0)
    np.testing.assert_array_equal(fitter.ratio(everything, wrong), fitter.ratio(everything))


def test_gp_member_is_the_mean_of_both_kernels_averaged_over_every_fit():
    # the gp member's estimate of a pair cell: the job's isolated log rate plus the mean of the
    # two GPs' (exponential and squared-exponential kernel) slowdowns, each capped at 0 and,
    # with average=True, averaged over the hyperparameters of every fit made so far
    model, truth = planted(seed=3, noise=0.05)
    rng = np.random.default_rng(6)
    fitter = _scaling_member(model)
    J = len(GPUS)
    iso_log = np.log(model.values[:, :J])
    first = rng.random(model.shape) < 0.5
    fitter.gp(first, iso_log)
    full = np.ones(model.shape, dtype=bool)
    got = fitter.gp(full, iso_log, average=True)
    a, c, g, _ = fitter.pair_index
    base, fit, slow = fitter._slowdowns(full, iso_log)
    exponential, squared = fitter.pair_gps
    assert not exponential.smooth and squared.smooth
    assert len(exponential.history) == len(squared.history) == 2
    means = []
    for gp in fitter.pair_gps:
        per_fit = []
        for theta in gp.history:
            gp.theta = theta
            per_fit.append(np.minimum(gp.predict(fit, slow), 0.0))
        means.append(np.mean(per_fit, axis=0))
    np.testing.assert_allclose(got[a, c], base + (means[0] + means[1]) / 2, atol=1e-10)
    assert np.isnan(got[:, :J]).all()
    # every pair measured with 5% noise: the estimate is nearer the noiseless truth than the
    # measurements are (2.4% against 4.0%)
    error = np.abs(np.expm1(got[a, c] - np.log(truth[a, c]))).mean()
    noise = np.abs(np.expm1(np.log(model.values[a, c] / truth[a, c]))).mean()
    assert error < 0.03 and error < 0.75 * noise
