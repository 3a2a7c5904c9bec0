"""SMD against its exact reference across the generator's regimes (docs/smd.md, "Across regimes").

    python benchmarks/smd_regimes.py                        # 50 instances per regime (hours)
    python benchmarks/smd_regimes.py --per-regime 8 --exact-work 3
    python benchmarks/smd_regimes.py --first 8 --per-regime 8 --verbose > more.log   # more
    python benchmarks/smd_regimes.py --summarize first.log more.log --exact-work 3  # one table
    python benchmarks/smd_regimes.py --timing-only                       # smd at 60 jobs only
    python benchmarks/smd_regimes.py --per-regime 8 --exact-work 3 --no-comparisons  # smd only

Instances are drawn at run time (nothing is read from disk):
`parameter_server_document(jobs, machines, seed, regime=R)` for R in loose, nic, cpu, memory,
mixed, with jobs uniform in 16..60 and machines uniform in max(6, ceil(jobs / 4))..20, both
drawn from numpy default_rng(2021 + instance index); the generator's own seed is the index.

Per instance: `smd` (defaults; its objective, wall and CPU seconds, status), `smd` with
lns_steps=0 (without the large-neighbourhood search), `smd` with lp_start=False (without the
LP relaxation's rounded placement as a start: the previous release), `smd` with beyond=False
(the paper's method alone), `smd_exact` (cpsat, started from smd's placement; its optimum or
best bound and wall seconds to proven optimality) on one thread within `--exact-work` units of
CP-SAT's deterministic time, so that the reference, like smd, is the same whatever the
machine's load (`--exact-limit` seconds of wall-clock time instead: the earlier tables).
Two gaps per method, (objective - reference) / reference:
- to the *bound*: the exact optimum when proven, else the best of the exact solver's bound and
  smd's own (then an upper bound on the true gap);
- to the *best found*: the least objective any of the five found (the exact optimum when
  proven). Where the two differ, the bound is weak, not smd far: "best found above bound"
  gives that part.
smd's own bound (what it reports without smd_exact) is the larger of its Lagrangian bound and
the LP relaxation's; the table gives smd's gap to it and to the Lagrangian one alone, side by
side from the same run.
"infeasible where exact is not" counts instances where smd finds no placement and smd_exact
finds one. A table per regime, then smd's time at 60 jobs (wall and CPU seconds, best of 3 by
CPU: the CPU time is what an idle core would take when the machine is shared): the default,
without the repacking step (`repack_patience=0`) and without the neighbourhood search
(`lns_steps=0`), alternating in one process.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import numpy as np

from schedopt.backends import SolveOptions
from schedopt.instance import parse_instance
from schedopt.policies.smd.algorithm import smd
from schedopt.policies.smd import jit
from schedopt.policies.smd.exact import smd_exact
from schedopt.policies.smd.model import SmdProblem
from schedopt.traces.parameter_server import REGIMES, parameter_server_document


def draw(regime: str, index: int) -> SmdProblem:
    """The index-th instance of a regime (module docstring)."""
    rng = np.random.default_rng(2021 + index)
    jobs = int(rng.integers(16, 61))
    machines = int(rng.integers(max(6, math.ceil(jobs / 4)), 21))
    doc = parameter_server_document(jobs, machines, seed=index, regime=regime)
    return SmdProblem.from_instance(parse_instance(doc))


def timed(f):
    start = time.perf_counter()
    out = f()
    return out, time.perf_counter() - start


def cpu_timed(f):
    """(result, wall seconds, CPU seconds of this process: what smd costs on an idle core)."""
    start, cpu = time.perf_counter(), time.process_time()
    out = f()
    return out, time.perf_counter() - start, time.process_time() - cpu


def own_gap(result, which: str) -> float | None:
    """(objective - smd's own bound) / that bound: the larger of both bounds ("relaxation") or
    the Lagrangian one alone ("lagrangian"), what smd reports before the LP relaxation joins."""
    bounds = result.details.get("bounds")
    if result.objective is None or not bounds:
        return None
    own = bounds["lagrangian"] if which == "lagrangian" else result.bound
    return (result.objective - own) / own if own else None


def exact_options(args) -> SolveOptions:
    """smd_exact's limit: deterministic (--exact-work) or wall-clock (--exact-limit)."""
    if args.exact_work is not None:
        return SolveOptions(threads=1, deterministic_time=args.exact_work)
    return SolveOptions(time_limit=args.exact_limit)


def row(problem: SmdProblem, exact: SolveOptions, comparisons: bool = True) -> dict:
    """One instance's line; comparisons=False leaves out the three comparison runs of smd
    (their columns are then empty and the best found is smd's or smd_exact's)."""
    ours, ours_s, ours_cpu = cpu_timed(lambda: smd(problem))
    numpy_only = smd(problem, lns_steps=0) if comparisons else None
    no_lp = smd(problem, lp_start=False) if comparisons else None
    paper = smd(problem, beyond=False) if comparisons else None
    exact, exact_s = timed(lambda: smd_exact(problem, options=exact, start=ours))
    proven = exact.status.value == "optimal"
    bounds = [b for b in (exact.bound, ours.bound) if b is not None]
    found = [r.objective for r in (exact, ours, numpy_only, no_lp, paper)
             if r is not None and r.objective is not None]
    bound = exact.objective if proven else (max(bounds) if bounds else None)
    best = min(found) if found else None
    gap = lambda r, ref: None if r is None or r.objective is None or not ref else \
        (r.objective - ref) / ref  # noqa: E731
    return {"jobs": problem.num_jobs, "machines": problem.num_machines,
            "smd_s": ours_s, "smd_cpu": ours_cpu, "gap": gap(ours, bound),
            "found_gap": gap(ours, best), "numpy_gap": gap(numpy_only, bound),
            "no_lp_gap": gap(no_lp, bound),
            "paper_gap": gap(paper, bound), "bound_gap": None if not bound or best is None else
            (best - bound) / bound,
            "infeasible": ours.placement is None and exact.placement is not None,
            "paper_infeasible": paper is not None and paper.placement is None
            and exact.placement is not None,
            "exact_found": exact.placement is not None, "proven": proven,
            "exact_s": exact_s if proven else None, "smd_status": ours.status.value,
            "own_gap": own_gap(ours, "relaxation"), "own_gap_lagrangian": own_gap(ours, "lagrangian")}


def summary(regime: str, rows: list[dict], exact_limit: str) -> str:
    col = lambda key: [r[key] for r in rows if r.get(key) is not None]  # noqa: E731
    times = sorted(r["exact_s"] for r in rows if r["exact_s"] is not None)
    forty = sorted(r["exact_s"] if r["exact_s"] is not None else math.inf
                   for r in rows if 35 <= r["jobs"] <= 45)
    med = lambda xs: f"{statistics.median(xs):.2%}" if xs else "-"  # noqa: E731
    worst = lambda xs: f"{max(xs):.2%}" if xs else "-"  # noqa: E731
    secs = lambda xs: "-" if not xs else (  # noqa: E731
        f"{statistics.median(xs):.1f}" if math.isfinite(statistics.median(xs)) else f">{exact_limit}")
    gaps = " | ".join(f"{med(col(key))} | {worst(col(key))}"
                      for key in ("gap", "found_gap", "numpy_gap", "no_lp_gap", "paper_gap"))
    return (f"| {regime} | {len(rows)} | {sum(r['infeasible'] for r in rows)} "
            f"({sum(r['paper_infeasible'] for r in rows)}) | {gaps} | {med(col('bound_gap'))} | "
            f"{med(col('own_gap_lagrangian'))} | {med(col('own_gap'))} | "
            f"{max(r['smd_s'] for r in rows):.2f} | {max(r['smd_cpu'] for r in rows):.2f} | "
            f"{sum(r['proven'] for r in rows)}/{len(rows)} | {secs(times)} | "
            f"{f'{max(times):.1f}' if times else '-'} | {secs(forty)} ({len(forty)}) |")


def table(rows: dict[str, list[dict]], exact_limit: str) -> None:
    print(f"\nsmd vs smd_exact (cpsat, {exact_limit} limit); gaps to the exact optimum "
          f"or best bound, and to the best found\n")
    print("| regime | instances | smd infeasible where exact is not (paper alone) | smd median "
          "gap | smd worst gap | smd median gap to best found | smd worst gap to best found | "
          "without LNS median gap | without LNS worst gap | without the LP start median gap | "
          "without the LP start worst gap | paper median gap | paper worst gap | "
          "best found above bound, median | smd above its own bound, Lagrangian alone, median | "
          "smd above its own bound (with the LP relaxation), median | smd max wall s | "
          "smd max CPU s | exact proven | exact median s | exact max s | exact median s, 35-45 jobs (count) |")
    print("|---|" + "---:|" * 21)
    print("\n".join(summary(regime, found, exact_limit) for regime, found in rows.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-regime", type=int, default=50)
    parser.add_argument("--first", type=int, default=0, help="index of the first instance")
    parser.add_argument("--exact-limit", type=float, default=120.0,
                        help="smd_exact's wall-clock limit per instance, seconds (used without "
                        "--exact-work)")
    parser.add_argument("--exact-work", type=float, default=None,
                        help="smd_exact's limit per instance in CP-SAT deterministic time units, "
                        "one thread (the same reference whatever the load)")
    parser.add_argument("--regimes", default=",".join(REGIMES))
    parser.add_argument("--verbose", action="store_true",
                        help="one JSON line per instance (what --summarize reads)")
    parser.add_argument("--summarize", nargs="+", metavar="LOG",
                        help="print the table of the instance lines of earlier --verbose runs")
    parser.add_argument("--no-timing", action="store_true", help="leave out smd at 60 jobs")
    parser.add_argument("--no-comparisons", action="store_true",
                        help="run only smd and smd_exact per instance (the columns without LNS, "
                        "without the LP start and of the paper's method are left empty)")
    parser.add_argument("--timing-only", action="store_true", help="only smd at 60 jobs")
    args = parser.parse_args()
    limit = f"{args.exact_work:g} deterministic units" if args.exact_work is not None \
        else f"{args.exact_limit:g} s"
    rows: dict[str, list[dict]] = {}
    if args.summarize:
        for path in args.summarize:
            with open(path) as log:
                for line in log:
                    if line.startswith("{"):
                        found = json.loads(line)
                        rows.setdefault(found.pop("regime"), []).append(found)
        table(rows, limit)
        return
    for regime in args.regimes.split(",") if not args.timing_only else ():
        for index in range(args.first, args.first + args.per_regime):
            r = row(draw(regime, index), exact_options(args), not args.no_comparisons)
            rows.setdefault(regime, []).append(r)
            if args.verbose:
                print(json.dumps({"regime": regime, "index": index, **r}), flush=True)
    if rows:
        table(rows, limit)
    if args.no_timing:
        return
    # smd at 60 jobs: the default, with numpy instead of the compiled loops (jit.COMPILED),
    # without the repacking step (the release before it) and without the CP-SAT neighbourhood
    # search, alternating in one process (best of 3 each, by CPU)
    settings = {"default": ({}, True), "numpy (no numba)": ({}, False),
                "repack_patience=0": ({"repack_patience": 0}, True),
                "lns_steps=0": ({"lns_steps": 0}, True)}
    print("\n| smd at 60 jobs / 20 machines (seed 7) | "
          + " | ".join(f"{name}: CPU s | {name}: gap to its own bound" for name in settings)
          + " | default: wall s |")
    print("|---|" + "---:|" * (2 * len(settings) + 1))
    for regime in args.regimes.split(","):
        doc = parameter_server_document(60, 20, seed=7, regime=regime)
        p = SmdProblem.from_instance(parse_instance(doc))
        runs = {name: [] for name in settings}
        for _ in range(3):
            for name, (kwargs, compiled) in settings.items():
                jit.COMPILED = compiled
                runs[name].append(cpu_timed(lambda: smd(p, **kwargs)))
        jit.COMPILED = True
        best = {name: min(r, key=lambda t: t[2]) for name, r in runs.items()}
        cells = [f"{best[name][2]:.2f} | {best[name][0].details['gap']:.2%}" for name in settings]
        print(f"| {regime} | " + " | ".join(cells) + f" | {best['default'][1]:.2f} |")

if __name__ == "__main__":
    main()
