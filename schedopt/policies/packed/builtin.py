"""The packed family's built-in policies, as the registry lists them."""

from __future__ import annotations

from schedopt.policies.packed.cost import MinCostPacked
from schedopt.policies.packed.fifo import FifoPacked
from schedopt.policies.packed.finish_time import FinishTimeFairnessPacked
from schedopt.policies.packed.policy import MaxMinFairnessPacked, MinMakespanPacked, WaterFillingPacked

POLICIES = [MaxMinFairnessPacked(), WaterFillingPacked(), MinMakespanPacked(), FifoPacked(),
            FinishTimeFairnessPacked(), MinCostPacked()]

