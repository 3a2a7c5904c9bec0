"""The event-driven baselines, as the registry lists them: lease policies (edf, srtf) and
queue policies (sjf, drf, fifo_queue)."""

from __future__ import annotations

from schedopt.policies.baselines.leases import Edf, Srtf
from schedopt.policies.baselines.queues import Drf, FifoQueue, Sjf

POLICIES = [Edf(), Srtf(), Sjf(), Drf(), FifoQueue()]
