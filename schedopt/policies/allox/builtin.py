"""The allox family's built-in policies, as the registry lists them."""

from __future__ import annotations

from schedopt.policies.allox.policy import Allox

POLICIES = [Allox()]
