"""The packed family's built-in policies, as the registry lists them: (policy, name, defaults)."""

from __future__ import annotations

from schedopt.policies.packed.master import packed_policy
from schedopt.policies.legacy import LegacyPolicy


POLICIES = [
    LegacyPolicy("max_min_fairness_packed", "Max-min fairness with space sharing: pairs of jobs "
           "co-located on the same GPUs (co-location table), exact by column generation.",
           "min over jobs of s*throughput/(weight*equal-share throughput), throughput counting "
           "paired time (dimensionless)", packed_policy, reads_instance=True),
]
