"""The smd family's built-in policies, as the registry lists them: (policy, name, defaults)."""

from __future__ import annotations

from schedopt.policies.smd import exact as smd_exact
from schedopt.policies.smd import policy as smd_policy
from schedopt.policies.legacy import LegacyPolicy


POLICIES = [
    LegacyPolicy("smd", "Parameter-server jobs: workers and PSs per job and their placement, min total "
           "completion time (SMD: sum-of-ratios + knapsack decomposition; option epsilon).",
           "sum of completion times, seconds", smd_policy.smd_policy,
           solver=smd_policy.HEURISTIC, reads_instance=True),
    LegacyPolicy("smd_exact", "Parameter-server jobs, exact: MILP over (w, p) configuration binaries "
           "with placement.", "sum of completion times, seconds", smd_policy.smd_exact_policy,
           solver=smd_exact.DEFAULT_SOLVER, reads_instance=True),
    LegacyPolicy("smd_equal_split", "Parameter-server baseline: every job its fastest (w, p) within "
           "1/n of every resource.", "sum of completion times, seconds",
           smd_policy.equal_split_policy, solver=smd_policy.HEURISTIC, reads_instance=True),
    LegacyPolicy("smd_greedy", "Parameter-server baseline (Optimus-style): add the worker or PS with "
           "the largest marginal gain per dominant share.", "sum of completion times, seconds",
           smd_policy.greedy_policy, solver=smd_policy.HEURISTIC, reads_instance=True),
]
