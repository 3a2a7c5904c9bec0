"""The chronus family's built-in policies, as the registry lists them."""

from __future__ import annotations

from schedopt.policies.chronus.policy import Chronus


POLICIES = [Chronus()]
