"""`hidden_errors`: the per-cell error table of an accuracy study, worked by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from schedopt.perf import hidden_errors, model_from_arrays


def test_hidden_errors_worked_by_hand():
    jobs = ("LM (batch size 5)", "ResNet-50 (batch size 64)")
    pairs = np.full((2, 1, 2), np.nan)
    pairs[0, 0, 1], pairs[1, 0, 0] = 5.0, 2.0          # LM next to ResNet-50 and back
    truth = model_from_arrays(jobs, ("v100",), [[10.0], [4.0]], pairs, partners=jobs)
    hidden = truth.known & False
    hidden[0, truth.column("v100", jobs[1])] = hidden[1, truth.column("v100", jobs[0])] = True
    hidden[1, 0] = True                                # ResNet-50 alone
    values = truth.values.copy()
    values[0, truth.column("v100", jobs[1])] = 6.0     # 20% high
    values[1, truth.column("v100", jobs[0])] = 1.0     # 50% low
    values[1, 0] = 5.0                                 # 25% high
    unc = np.where(hidden, 0.1, 0.0)
    got = hidden_errors(truth, hidden, truth.with_values(values, unc)).set_index(["job_type", "partner"],
                                                                              drop=False)
    assert len(got) == 3
    lm = got.loc[(jobs[0], jobs[1])]
    assert (lm.family, lm.partner_family, lm.gpu_type) == ("LM", "ResNet-50", "v100")
    assert (lm.measured, lm.estimate) == (5.0, 6.0)
    assert lm.relative_error == pytest.approx(0.2)
    assert lm.normalized == pytest.approx(0.5)         # 5 steps/s shared, 10 alone
    resnet = got.loc[(jobs[1], jobs[0])]
    assert resnet.relative_error == pytest.approx(0.5)
    assert resnet.normalized == pytest.approx(0.5)     # 2 of 4
    alone = got[got["partner"].isna()].iloc[0]
    assert alone.job_type == jobs[1] and pd.isna(alone.partner_family)
    assert alone.relative_error == pytest.approx(0.25) and np.isnan(alone.normalized)
    assert (got["uncertainty"] == 0.1).all()


def test_hidden_errors_leaves_out_cells_left_missing():
    truth = model_from_arrays(("A", "B"), ("k80", "v100"), [[1.0, 2.0], [3.0, 4.0]])
    hidden = truth.known.copy()
    hidden[:, 1] = False
    estimate = truth.hide(hidden)                      # nothing filled
    estimate = estimate.with_values(np.where([[True, False], [False, False]], 1.5, estimate.values))
    got = hidden_errors(truth, hidden, estimate)
    assert got["job_type"].tolist() == ["A"] and got["relative_error"].tolist() == [0.5]
    assert got["uncertainty"].isna().all() and got["normalized"].isna().all()
