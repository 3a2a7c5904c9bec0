"""SMD's neighbourhood search with and without the LP-guided steps, side by side (docs/smd.md,
"Guided steps").

    python benchmarks/smd_lns_curves.py                      # 6 instances per regime, 40 steps
    python benchmarks/smd_lns_curves.py --steps 20 --big 4

Per regime: the instances of `benchmarks/smd_regimes.py` given by --indices (by default those
where smd was furthest from the best found in its 50-per-regime table) and --big instances of 60
jobs on 20 machines (`parameter_server_document(60, 20, seed=s, regime=R)`, s = 0, 1, ...).
From one start per instance (smd without the neighbourhood search, `lns_steps=0`), the search
runs --steps steps twice, with random steps only (`guide=None`, the previous release) and with
every second step guided by the LP relaxation's placement (what smd does). Reported: the gap
(objective - best) / best, best = the lower of the two final objectives, at 0.5 and 1 CPU
seconds of search and after all steps (median / worst over the regime's instances), and the
search's CPU seconds.
"""

from __future__ import annotations

import argparse
import statistics

from smd_regimes import draw

from schedopt.instance import parse_instance
from schedopt.policies.smd.algorithm import smd
from schedopt.policies.smd.bound import relaxation
from schedopt.policies.smd.milp import exact_program
from schedopt.policies.smd.model import SmdProblem
from schedopt.policies.smd.neighbourhood import improve
from schedopt.traces.parameter_server import REGIMES, parameter_server_document

WORST = {"loose": (47, 3), "nic": (24, 32, 44, 43), "cpu": (34, 13, 25, 3),
         "memory": (48, 40, 37, 30), "mixed": (31, 44, 22, 6)}
BUDGETS = (0.5, 1.0)  # CPU seconds of search at which the gap is read


def instances(regime: str, indices, big: int):
    for index in indices:
        yield f"index {index}", draw(regime, index)
    for seed in range(big):
        doc = parameter_server_document(60, 20, seed=seed, regime=regime)
        yield f"60 jobs, seed {seed}", SmdProblem.from_instance(parse_instance(doc))


def at(stats: dict, budget: float | None) -> float:
    """The objective reached within `budget` CPU seconds of search (None: at the end)."""
    trace = stats["trace"]
    return trace[-1][1] if budget is None else min(o for c, o in trace if c <= budget)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regimes", default=",".join(REGIMES))
    parser.add_argument("--indices", default=None,
                        help="comma-separated instance indices (default: per-regime list)")
    parser.add_argument("--big", type=int, default=2, help="60-job instances per regime")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    print("| regime | instances | start median / worst | "
          + " | ".join(f"{kind}, {b:g} CPU s" for b in BUDGETS for kind in ("random", "guided"))
          + f" | random, {args.steps} steps | guided, {args.steps} steps | "
          "CPU s of the search, median random / guided |")
    print("|---|---:|" + "---:|" * (4 + 2 * len(BUDGETS)))
    for regime in args.regimes.split(","):
        indices = WORST.get(regime, ()) if args.indices is None else \
            [int(i) for i in args.indices.split(",") if i]
        rows = []
        for name, problem in instances(regime, indices, args.big):
            start = smd(problem, lns_steps=0)
            program = exact_program(problem, problem.configurations(), symmetry=False)
            _, lp = relaxation(program)
            guide = (lp[program.x.columns].reshape(program.x.shape),
                     lp[program.y.columns].reshape(program.y.shape))
            runs = {kind: improve(problem, start.placement, args.steps, target=start.bound,
                                  guide=g)[1] for kind, g in (("random", None), ("guided", guide))}
            best = min(at(stats, None) for stats in runs.values())
            gap = lambda v: (v - best) / best  # noqa: E731
            row = {"start": gap(start.objective)}
            for kind, stats in runs.items():
                for budget in BUDGETS + (None,):
                    row[kind, budget] = gap(at(stats, budget))
                row[kind, "cpu"] = stats["trace"][-1][0]
            rows.append(row)
            if args.verbose:
                print(f"  {regime} {name}: start {row['start']:.2%}, random {row['random', None]:.2%}"
                      f", guided {row['guided', None]:.2%}", flush=True)
        cell = lambda key: (f"{statistics.median(r[key] for r in rows):.2%} / "  # noqa: E731
                            f"{max(r[key] for r in rows):.2%}")
        cells = [cell("start")] + [cell((kind, b)) for b in BUDGETS for kind in ("random", "guided")]
        cells += [cell(("random", None)), cell(("guided", None))]
        cpu = [statistics.median(r[kind, "cpu"] for r in rows) for kind in ("random", "guided")]
        print(f"| {regime} | {len(rows)} | " + " | ".join(cells) + f" | {cpu[0]:.2f} / {cpu[1]:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
