"""The packed family's built-in policies, as the registry lists them."""

from __future__ import annotations

from schedopt.policies.packed.per_dollar import MinCostPacked
from schedopt.policies.packed.fifo import FifoPacked
from schedopt.policies.packed.finish_fairness import FinishTimeFairnessPacked
from schedopt.policies.packed.policy import MaxMinFairnessPacked, MinMakespanPacked, WaterFillingPacked

POLICIES = [MaxMinFairnessPacked(), WaterFillingPacked(), MinMakespanPacked(), FifoPacked(),
            FinishTimeFairnessPacked(), MinCostPacked()]

