"""Side-information predictors of schedopt.perf (side.py, predict.py): labels parsed into
families, the group ridge recovering a planted additive model, and the ensemble beating (or
matching) plain completion on a planted low-rank + family model where the truth is known."""

from __future__ import annotations

import numpy as np

from schedopt.perf.side import GroupRidge, job_type_info


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
