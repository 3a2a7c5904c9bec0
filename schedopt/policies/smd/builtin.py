"""The smd family's built-in policies, as the registry lists them."""

from __future__ import annotations

from schedopt.policies.smd.policy import Smd, SmdEqualSplit, SmdExact, SmdGreedy


POLICIES = [Smd(), SmdExact(), SmdEqualSplit(), SmdGreedy()]
