"""Throughputs learned online in a simulation, as Gavel runs space sharing: the policy starts
from a prior and sees an estimate that improves with what the jobs actually ran at.

    learner = Learner(trace, hide_pairs=0.5, seed=1)
    result = simulate(trace, "max_min_fairness_packed", learner=learner)
    result.learning  # error of the estimate against the true table, at each refresh

What is learned: the co-location rates (steps/s of a job of type a while it shares a GPU type
with a job of type b). Isolated throughputs are taken as known, as in Gavel's simulator (which
assumes single-job throughputs are accurate and estimates pairs). Estimates are kept per pair of
job *types* (the type labels of the trace), since jobs of one type run at the same rates.

- Prior: the trace's performance model (`schedopt.perf.PerformanceModel`) with a fraction
  `hide_pairs` of its pair measurements hidden (both sides of a pair on a GPU type at once;
  measured zeros included), completed by `schedopt.perf.complete` (low-rank, with its rule for
  pairs that cannot share). `hide_pairs=1` starts from the isolated throughputs alone. A pair
  cell that completion cannot fill (nothing relates it to a measurement) is guessed at
  `unknown_share` of the job's isolated steps/s on that GPU type, so that the policy tries it
  (two jobs at 0.6 of their solo rates beat time sharing) and then learns its real rate.
- Measurements: every round, each job of a running pair reports the steps/s it made (its true
  pair rate); `schedopt.perf.OnlineEstimator` folds it into an exponential moving average per
  (type, GPU type, partner type) (Gavel's EMA, alpha 0.25).
- Refresh (at every re-solve of the policy): when new cells were measured since the last
  refresh, the model (prior measurements plus the learned cells as measurements) is completed
  again, and the policy's pair table is rebuilt from it. Each refresh appends one row to
  `history()`: time (s), cells measured online, and the estimate's error against the true table:
  mean relative error over the pair cells measured at more than 0 steps/s (`pair_mre`), over those
  hidden at the start (`hidden_mre`), and how many pairs measured at 0 the estimate lets share
  (`zeros_shared`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from schedopt.errors import SchedoptError
from schedopt.instance.model import Instance
from schedopt.perf import OnlineEstimator, PerformanceModel, complete
from schedopt.perf.online import GAVEL_EMA_ALPHA
from schedopt.perf.study import hide_units

UNKNOWN_SHARE = 0.6


class Learner:
    """The estimate a simulation's packed policy sees (module doc). trace: the simulated
    instance (its performance section is the truth); hide_pairs: the share of pair
    measurements hidden at the start, in [0, 1]; seed: which are hidden (numpy default_rng);
    alpha: the EMA weight of a new measurement; unknown_share: the guess, as a share of the
    isolated steps/s, for pair cells completion cannot fill."""

    def __init__(self, trace: Instance, hide_pairs: float = 0.5, seed: int = 0,
                 alpha: float = GAVEL_EMA_ALPHA, unknown_share: float = UNKNOWN_SHARE):
        if not trace.performance.colocated:
            raise SchedoptError(trace.located(
                "performance.colocated", "learning throughputs needs a trace with a "
                "co-location table, the truth the jobs run at"))
        if not 0.0 <= hide_pairs <= 1.0:
            raise SchedoptError(f"hide_pairs is a share of the pair measurements in [0, 1], "
                                f"got {hide_pairs}")
        self.truth = PerformanceModel.from_performance(trace.performance)
        self.seed, self.unknown_share = seed, unknown_share
        self.hidden = hide_units(self.truth, hide_pairs, "pairs", seed, zeros=True)
        self.prior = self.truth.hide(self.hidden)
        self.estimator = OnlineEstimator(self.truth.gpu_types, alpha)
        R, C = self.truth.shape
        self.measured = np.zeros((R, C), dtype=bool)  # cells measured online
        self.learned = np.full((R, C), np.nan)  # their EMA, steps/s
        self.estimate = np.full((R, C), np.nan)  # what the policy sees
        self._row = {label: r for r, label in enumerate(self.truth.job_types)}
        self._partner = {label: p for p, label in enumerate(self.truth.partners)}
        self._new = True
        self._rows: list[tuple] = []
        self.data = None

    def attach(self, data) -> None:
        """Bind to a run's `TraceArrays` (whose `seen_pairs` the learner then sets)."""
        self.data = data
        self._job_row = np.array([self._row.get(label, -1) for label in data.labels], dtype=int)

    def observe(self, jobs: np.ndarray, gpu: np.ndarray, steps_per_s: np.ndarray,
                partner: np.ndarray) -> bool:
        """One round's measurements: job jobs[i] (trace index) made steps_per_s[i] on GPU
        type gpu[i], sharing it with job partner[i] (-1: alone, not learned). True when a cell
        was measured for the first time (the loop then re-solves: a pair the prior
        overrated, e.g. one that cannot share, must not keep its GPUs)."""
        new = False
        J, P = len(self.truth.gpu_types), len(self.truth.partners)
        paired = np.flatnonzero(partner >= 0)
        labels, types = self.data.labels, self.truth.gpu_types
        for i in paired.tolist():
            a, b = labels[jobs[i]], labels[partner[i]]
            if b not in self._partner or a not in self._row:
                continue
            g = int(gpu[i])
            cell = (self._row[a], J + g * P + self._partner[b])
            self.learned[cell] = self.estimator.update(a, types[g], float(steps_per_s[i]),
                                                       partner=b)
            if not self.measured[cell]:
                self.measured[cell] = self._new = new = True
        return new

    def refresh(self, now: float) -> None:
        """Re-complete the model when new cells were measured, rebuild the policy's pair table
        and record the estimate's error (called before every re-solve; `now` in seconds)."""
        if self._new:
            known = self.prior.known | self.measured
            values = np.where(self.measured, self.learned, self.prior.values)
            model = self.prior.with_values(values, known=known)
            filled = complete(model, ensemble=0, seed=self.seed).model.values
            J, P = len(self.truth.gpu_types), len(self.truth.partners)
            solo = np.repeat(self.truth.values[:, :J], P, axis=1)
            guess = np.where(np.isnan(filled[:, J:]) & self.truth.applicable[:, J:],
                             self.unknown_share * solo, filled[:, J:])
            self.estimate = np.concatenate([self.truth.values[:, :J], guess], axis=1)
            self.data.seen_pairs = self.table()
            self._new = False
        self._rows.append((now, int(self.measured.sum()), *self.errors()))

    def table(self):
        """The current estimate as the policy's `PairTable` over the run's jobs."""
        from schedopt.policies.packed.master import PairTable

        J, P = len(self.truth.gpu_types), len(self.truth.partners)
        R = len(self.truth.job_types)
        rate = np.full((J, R, R), np.nan)
        pairs = self.estimate[:, J:].reshape(R, J, P).transpose(1, 0, 2)  # (J, R, P)
        rate[:, :, self.truth.pair_rows] = pairs
        same = np.isfinite(rate) & np.isfinite(rate.transpose(0, 2, 1))
        rate = np.where(same, rate, np.nan)  # a pair needs both sides
        return PairTable(self.truth.job_types, self._job_row, rate)

    def errors(self) -> tuple[float, float, int]:
        """(pair_mre, hidden_mre, zeros_shared) of the current estimate (module doc)."""
        J = len(self.truth.gpu_types)
        truth, estimate = self.truth.values[:, J:], self.estimate[:, J:]
        measured = self.truth.known[:, J:]
        positive = measured & (truth > 0)
        error = np.abs(np.nan_to_num(estimate, nan=0.0) - truth) / np.where(positive, truth, 1.0)
        hidden = self.hidden[:, J:] & positive
        zeros = measured & (truth == 0) & (np.nan_to_num(estimate) > 0)
        return (float(error[positive].mean()) if positive.any() else float("nan"),
                float(error[hidden].mean()) if hidden.any() else float("nan"), int(zeros.sum()))

    def history(self) -> pd.DataFrame:
        """One row per refresh: time_s, measured_cells, pair_mre, hidden_mre, zeros_shared."""
        return pd.DataFrame(self._rows, columns=["time_s", "measured_cells", "pair_mre",
                                                 "hidden_mre", "zeros_shared"])
