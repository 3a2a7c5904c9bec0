"""Where smd's time goes at 60 jobs / 20 machines (docs/smd.md, "Across regimes"): CPU seconds
of each step of one `smd` call per regime (seed 7, the instance of `smd_regimes.py
--timing-only`), after one warm-up call.

    python benchmarks/smd_phases.py                     # loose, nic, cpu, memory, mixed
    python benchmarks/smd_phases.py --regimes nic,mixed

Each step is timed with `time.process_time` around the function `smd` calls (phase 1, the
knapsack steps, the bound's CP-SAT placement, the exchange passes, the numpy search, the
neighbourhood search, the upgrade step, ...); the rest of the call is "other". CPU time, so
the numbers are what an idle core would take on a shared machine.
"""

from __future__ import annotations

import argparse
import time

import schedopt.policies.smd.algorithm as algorithm
from schedopt.instance import parse_instance
from schedopt.policies.smd.model import SmdProblem
from schedopt.traces.parameter_server import REGIMES, parameter_server_document

STEPS = ("sum_of_ratios", "knapsack_step", "lagrangian_bound", "exact_program", "relaxation",
         "place", "exchange_pass", "ruin_and_recreate", "improve", "upgrade")


def timed_steps() -> dict[str, float]:
    """Wrap each of STEPS in `algorithm` so that its CPU seconds add up in the returned dict."""
    spent = dict.fromkeys(STEPS, 0.0)

    def wrap(name):
        inner = getattr(algorithm, name)

        def timed(*args, **kwargs):
            start = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[name] += time.process_time() - start
        setattr(algorithm, name, timed)

    for name in STEPS:
        wrap(name)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regimes", default=",".join(REGIMES))
    args = parser.parse_args()
    spent = timed_steps()
    print("| regime | CPU s | " + " | ".join(STEPS) + " | other | gap to its own bound |")
    print("|---|" + "---:|" * (len(STEPS) + 3))
    for regime in args.regimes.split(","):
        doc = parameter_server_document(60, 20, seed=7, regime=regime)
        problem = SmdProblem.from_instance(parse_instance(doc))
        algorithm.smd(problem)
        for name in STEPS:
            spent[name] = 0.0
        start = time.process_time()
        result = algorithm.smd(problem)
        total = time.process_time() - start
        cells = " | ".join(f"{spent[name]:.2f}" for name in STEPS)
        print(f"| {regime} | {total:.2f} | {cells} | {total - sum(spent.values()):.2f} | "
              f"{result.details['gap']:.2%} |", flush=True)


if __name__ == "__main__":
    main()
