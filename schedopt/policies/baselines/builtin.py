"""The baselines family's built-in throughput-matrix policies, as the registry lists them."""

from __future__ import annotations

from schedopt.policies.baselines.policies import Fifo, Isolated, Proportional

POLICIES = [
    Isolated(),
    Proportional(),
    Fifo(),
    Fifo.variant("fifo_agnostic", "Baseline: arrival order, each job on a random type with room.",
                 "none", agnostic=True),
]
