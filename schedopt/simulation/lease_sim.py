"""The lease simulator's former entry point, kept for scripts and notebooks: `simulate_leases`
runs `schedopt.simulation.simulate` with a lease policy (chronus, edf, srtf or any policy
whose decision is LEASES); the loop is `schedopt.simulation.leases_loop`.

    result = simulate_leases(load_instance("trace.json"), "chronus")
    result.jobs      # DataFrame, one row per job: arrival, completion, JCT (s), deadline met, ...
    result.summary   # dict: SLO miss ratio, value-weighted miss, best-effort average JCT, ...
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from schedopt.core.decisions import DecisionKind
from schedopt.instance.model import Instance
from schedopt.policies.chronus.boundary import LeaseSettings
from schedopt.simulation import simulate
from schedopt.simulation.common import SimulationConfig, SimulationResult, policy_deciding

__all__ = ["SCHEDULERS", "LeaseSimulationConfig", "LeaseSimulationResult", "simulate_leases"]

SCHEDULERS = ("chronus", "edf", "srtf")
LeaseSimulationResult = SimulationResult


@dataclass(frozen=True)
class LeaseSimulationConfig:
    """settings: lease length, resume overhead, window, sigma and MILP solver (`LeaseSettings`);
    gpu_type: the pool (None: the type with the most GPUs); round_up: consolidation round-up of
    GPU counts; max_leases: a run longer than this many leases is an error."""

    settings: LeaseSettings = field(default_factory=LeaseSettings)
    gpu_type: str | None = None
    round_up: bool = True
    max_leases: int = 1_000_000

    def simulation_config(self, option_names: tuple[str, ...]) -> SimulationConfig:
        """The same run as a SimulationConfig for a policy taking `option_names`."""
        s = self.settings
        values = {f.name: getattr(s, f.name) for f in dataclasses.fields(LeaseSettings)
                  if f.name not in ("solver", "time_limit")}
        values.update(gpu_type=self.gpu_type, round_up=self.round_up)
        return SimulationConfig(solver=s.solver, time_limit=s.time_limit,
                                max_leases=self.max_leases,
                                policy_options={k: v for k, v in values.items()
                                                if k in option_names})


def simulate_leases(trace: Instance, scheduler: str = "chronus",
                    config: LeaseSimulationConfig = LeaseSimulationConfig(),
                    progress: bool = False) -> SimulationResult:
    """Replay `trace` lease by lease under the lease policy `scheduler`."""
    policy = policy_deciding(scheduler, DecisionKind.LEASES,
                             f"unknown lease scheduler {scheduler!r}; expected a lease policy "
                             f"such as {', '.join(SCHEDULERS)}")
    return simulate(trace, scheduler, config.simulation_config(policy.option_names), progress)
