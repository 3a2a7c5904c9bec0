"""The chronus family's built-in policies, as the registry lists them: (policy, name, defaults)."""

from __future__ import annotations

from schedopt.policies.chronus import lease_milp as chronus
from schedopt.policies.chronus.policy import chronus_policy
from schedopt.policies.legacy import LegacyPolicy


POLICIES = [
    LegacyPolicy("chronus", "Deadline-aware leases (Chronus): admission control, lease MILP for SLO jobs, "
           "shortest remaining service for the rest, on one GPU type.",
           "sum of chosen deadline-option values + sigma x (GPUs of SLO jobs in the next lease) / "
           "pool size", chronus_policy, solver=chronus.DEFAULT_SOLVER, reads_instance=True),
]
