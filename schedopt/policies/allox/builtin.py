"""The allox family's built-in policies, as the registry lists them: (policy, name, defaults)."""

from __future__ import annotations

from schedopt.policies.allox import matching as allox
from schedopt.policies.legacy import LegacyPolicy


POLICIES = [
    LegacyPolicy("allox", "Whole jobs on single GPUs and CPU machines, min total completion time (AlloX "
           "matching; option alpha).", "total completion time, sum of (completion - arrival), "
           "seconds", allox.allox_policy, solver=allox.DEFAULT_METHOD, reads_instance=True),
]
