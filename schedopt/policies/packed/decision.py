"""What a packed policy decides: each job's solo time per GPU type and the pairs of jobs that
share GPUs, with the steps/s each job of a pair makes (`Outcome.decision` of the packed
policies; `allocation` is `total()`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedopt.core.problem import ThroughputProblem


@dataclass(frozen=True, eq=False)
class PairedAllocation:
    """solo: (M, J) time fractions of each job alone on s_m GPUs of each type. A pair p runs
    jobs first[p] and second[p] (row indices) together on the same s GPUs of type gpu[p] for a
    fraction[p] of the time; meanwhile they make rate_first[p] and rate_second[p] steps/s."""

    solo: np.ndarray
    first: np.ndarray
    second: np.ndarray
    gpu: np.ndarray
    fraction: np.ndarray
    rate_first: np.ndarray
    rate_second: np.ndarray

    @classmethod
    def solo_only(cls, solo: np.ndarray) -> "PairedAllocation":
        """An allocation without pairs (every job alone)."""
        none = np.zeros(0, dtype=np.int64)
        return cls(np.asarray(solo, dtype=float), none, none, none, *(np.zeros(0),) * 3)

    def steps(self, problem: ThroughputProblem) -> np.ndarray:
        """(M,) steps/s of each job: solo time at its solo rates plus its pairs' time at the
        pair rates."""
        M = self.solo.shape[0]
        return (np.einsum("mj,mj->m", problem.throughput * problem.runnable, self.solo)
                + np.bincount(self.first, self.fraction * self.rate_first, M)
                + np.bincount(self.second, self.fraction * self.rate_second, M))

    def total(self) -> np.ndarray:
        """(M, J) each job's time on each type, solo plus paired (the policy's allocation)."""
        M, J = self.solo.shape
        paired = (np.bincount(self.first * J + self.gpu, self.fraction, M * J)
                  + np.bincount(self.second * J + self.gpu, self.fraction, M * J))
        return self.solo + paired.reshape(M, J)

    def gpus_in_use(self, problem: ThroughputProblem) -> np.ndarray:
        """(J,) GPUs in use on each type (a pair holds its s GPUs once)."""
        return (problem.scale_factor @ self.solo
                + np.bincount(self.gpu, problem.scale_factor[self.first] * self.fraction,
                              self.solo.shape[1]))

    def pairs(self, problem: ThroughputProblem) -> list[dict]:
        """The pairs as the result document lists them (job ids, GPU type, time fraction)."""
        ids = np.asarray(problem.job_ids, dtype=object)
        types = np.asarray(problem.gpu_types, dtype=object)
        return [{"jobs": [a, b], "gpu_type": t, "fraction": f} for a, b, t, f in
                zip(ids[self.first].tolist(), ids[self.second].tolist(),
                    types[self.gpu].tolist(), self.fraction.tolist())]

    @classmethod
    def merged(cls, parts: list[tuple[np.ndarray, "PairedAllocation"]],
               shape: tuple[int, int]) -> "PairedAllocation":
        """One allocation of the whole problem from parts (rows of the part's jobs in the whole
        problem, the part's allocation), e.g. POP's."""
        solo = np.zeros(shape)
        for rows, part in parts:
            solo[rows] = part.solo
        fields = [np.concatenate([f(rows, part) for rows, part in parts] or [np.zeros(0)])
                  for f in (lambda r, a: r[a.first], lambda r, a: r[a.second],
                            lambda r, a: a.gpu, lambda r, a: a.fraction,
                            lambda r, a: a.rate_first, lambda r, a: a.rate_second)]
        first, second, gpu = (f.astype(np.int64) for f in fields[:3])
        return cls(solo, first, second, gpu, *fields[3:])
