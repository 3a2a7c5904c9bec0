"""`schedopt` command line: solve, validate, policies, demo."""

from __future__ import annotations

import importlib
import json
import sys
from importlib import resources
from pathlib import Path

import click

from schedopt.api import solve as solve_instance
from schedopt.backends import BACKEND_NAMES
from schedopt.cli import render
from schedopt.cli import interrupts
from schedopt.cli.errors import EXIT_USER_ERROR, OneLineErrors, fail
from schedopt.cli.startup import keep_freed_memory
from schedopt.instance import load_instance, validate_file
from schedopt.backends import SolveOptions
from schedopt.backends.session import Solver
from schedopt.core.registry import gavel_names, registered, resolve
from schedopt.files import check_output, write_atomically

DEMO_INSTANCE = "small-heterogeneous.yaml"


def parse_option(text: str) -> tuple[str, object]:
    """`key=value` with value read as JSON when it parses (numbers, true/false), else a string."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        fail(f"--option expects KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(raw)
    except json.JSONDecodeError:
        return key, raw


# Commands defined in other modules, imported only when run or listed (a solve need not load
# the simulator, pandas or matplotlib): name -> module:attribute.
LAZY_COMMANDS = {
    "import": "schedopt.cli.importers:import_group",
    "simulate": "schedopt.cli.simulate:simulate_command",
    "place": "schedopt.cli.simulate:place_command",
    "compare": "schedopt.cli.compare:compare_command",
    "sweep": "schedopt.cli.compare:sweep_command",
    "allox": "schedopt.cli.allox:allox_command",
    "leases": "schedopt.cli.leases:leases_command",
    "perf": "schedopt.cli.perf:perf_group",
}


class Commands(OneLineErrors):
    """The top-level group: its own commands plus LAZY_COMMANDS, loaded on first use."""

    def list_commands(self, ctx) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx, name):
        if name in LAZY_COMMANDS and name not in self.commands:
            module, attribute = LAZY_COMMANDS[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attribute), name)
        return super().get_command(ctx, name)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="schedopt")
def main():
    """schedopt: GPU-cluster scheduling policies as LPs/MILPs, solved exactly.

    An instance file (JSON or YAML, format schedopt-instance/1) holds the GPU types, the
    performance-model matrix (steps/s of each job on each type) and the job queue. Pick a policy
    (`schedopt policies`) and get an allocation: the fraction of time each job holds its GPUs
    of each type. Errors print one line and exit with code 2.
    """


@main.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--policy", "-p", default="max_min_fairness", show_default=True,
              help="Policy name from `schedopt policies`, a Gavel name as gavel:NAME, or your "
                   "own as MODULE:NAME (imported from the current directory or PYTHONPATH).")
@click.option("--solver", "-s", default=None,
              help=f"Solver backend: {', '.join(BACKEND_NAMES)}. Default: the policy's own, "
                   "picked by measurement (see `schedopt policies`). Max-min fairness, makespan "
                   "and water filling use their exact price decomposition when no solver is "
                   "named (-o method=decomposition|lp chooses; docs/exact-max-min.md).")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds for the whole solve (every LP/MILP a policy solves). A solve stopped "
                   "by it reports status 'feasible' with termination time_limit "
                   "(a solution, with a bound where the solver gives one) or 'error' (none).")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Solver threads.")
@click.option("--option", "-o", "policy_options", multiple=True, metavar="KEY=VALUE",
              help="Policy option, repeatable (e.g. -o slos=false for min_cost, -o seed=3).")
@click.option("--json", "as_json", is_flag=True, help="Print the schedopt-result/1 JSON document.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the JSON result document to this file.")
@click.option("--export-mps", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the (last) LP the policy solved to this file in MPS format.")
@click.option("--max-rows", type=click.IntRange(min=0), default=40, show_default=True,
              help="Jobs shown in the table (the JSON output always has all).")
@click.option("--verbose", "-v", is_flag=True, help="Show the solver's log.")
@click.option("--pop", "partitions", type=click.IntRange(min=1), default=None, metavar="K",
              help="POP: split the jobs into K parts, each with 1/K of every GPU type, solve "
                   "them apart and join the allocations (throughput-matrix policies).")
@click.option("--executor", type=click.Choice(["serial", "process", "ray"]), default="serial",
              show_default=True, help="With --pop: how the parts run. process: a pool of worker "
                                      "processes (~2 s to start); ray: pip install "
                                      "'schedopt[ray]', RAY_ADDRESS joins a cluster.")
@click.option("--partition", "partition_method", type=click.Choice(["stratified", "random"]),
              default="stratified", show_default=True,
              help="With --pop: deal jobs sorted by kind (stratified) or at random (POP's own).")
@click.option("--seed", "partition_seed", type=int, default=0, show_default=True,
              help="With --pop: seed of the partition.")
@click.option("--gap", "exact_gap", is_flag=True,
              help="With --pop: also solve the whole instance exactly and report POP's gap.")
def solve(file, policy, solver, time_limit, threads, policy_options, as_json, output, export_mps,
          max_rows, verbose, partitions, executor, partition_method, partition_seed, exact_gap):
    """Solve the instance FILE with a policy and print the allocation."""
    keep_freed_memory()
    chosen, fixed = resolve(policy)
    for target, what in ((output, "result document"), (export_mps, "MPS file")):
        if target is not None:  # before any work: a bad target or an input is one line
            check_output(target, inputs=[file], what=what)
    instance = load_instance(file)
    options = dict(parse_option(text) for text in policy_options)
    if partitions is None and exact_gap:
        fail("--gap compares POP with the exact solve: give --pop K too")
    pop = {} if partitions is None else {
        "partitions": partitions, "executor": executor, "partition_method": partition_method,
        "partition_seed": partition_seed, "exact_gap": exact_gap}
    session = Solver(solver or chosen.default_solver,
                     SolveOptions(time_limit=time_limit, threads=threads, verbose=verbose))
    result = solve_instance(instance, chosen, session, **pop, **{**fixed, **options})
    if export_mps is not None:
        program = session.last_program
        if program is None:
            fail(f"policy {chosen.name} solves no LP, so there is nothing to export")
        from schedopt.backends.mps import write_mps
        write_mps(program, export_mps)
    # The document's pieces are written as they are: a large one is never joined or copied.
    document = [*result.json_parts(), b"\n"] if output is not None or as_json else []
    if output is not None:
        write_atomically(output, document, inputs=[file], what="result document")
        interrupts.progress(f"wrote {output}")
    if as_json:
        stdout = click.get_binary_stream("stdout")
        for piece in document:
            stdout.write(piece)
        stdout.flush()
    else:
        click.echo(render.summary(result, chosen.objective_doc))
        click.echo()
        click.echo(render.decision_table(result, chosen.decision, max_rows))
    if not result.status.has_solution:
        sys.exit(1)


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
def validate(files):
    """Check instance FILES against the format; list every problem (file: field: expected)."""
    bad = 0
    for file in files:
        problems = validate_file(file)
        if problems:
            bad += 1
            for problem in problems:
                click.echo(str(problem), err=True)
        else:
            instance = load_instance(file)
            click.echo(f"{file}: ok ({len(instance.jobs)} jobs, "
                       f"{len(instance.cluster.gpu_types)} GPU types)")
    if bad:
        sys.exit(EXIT_USER_ERROR)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def policies(as_json):
    """List every policy with a one-line description and its Gavel name."""
    gavel_aliases = {}
    for gavel_name, (ours, options) in gavel_names().items():
        gavel_aliases.setdefault(ours, []).append(f"gavel:{gavel_name}")
    entries = registered()
    if as_json:
        click.echo(json.dumps([{"name": name, "summary": e.policy.summary,
                                "objective": e.policy.objective_doc,
                                "default_solver": e.policy.default_solver,
                                "decision": e.policy.decision.value,
                                "options": list(e.policy.option_names),
                                "gavel_aliases": gavel_aliases.get(name, [])}
                               for name, e in entries.items()], indent=1))
        return
    rows = [[name, e.policy.summary, e.policy.default_solver or "-",
             ", ".join(gavel_aliases.get(name, []))] for name, e in entries.items()]
    click.echo(render.table(["policy", "description", "solver", "Gavel name"], rows))


@main.command()
@click.option("--policy", "-p", "policy_names", multiple=True,
              default=("max_min_fairness", "max_min_fairness_agnostic", "min_makespan", "fifo"),
              show_default=True, help="Policies to compare (repeatable; names, gavel:NAME or "
                                      "MODULE:NAME).")
def demo(policy_names):
    """Solve the bundled small heterogeneous instance with a few policies and compare them."""
    source = resources.files("schedopt.instances").joinpath(DEMO_INSTANCE)
    with resources.as_file(source) as path:
        instance = load_instance(path)
    click.echo(f"instance: {instance.name} ({len(instance.jobs)} jobs; "
               + ", ".join(f"{t.count} {name}" for name, t in instance.cluster.gpu_types.items())
               + " GPUs)\n")
    rows, meanings = [], []
    for name in policy_names:
        chosen, fixed = resolve(name)
        result = solve_instance(instance, chosen, **fixed)
        thr = result.effective_rates
        rows.append([name, result.status.value, render.number(result.objective),
                     f"{thr.sum():.4g}", f"{thr.min():.4g}", f"{result.solve_seconds:.3f}"])
        if result.objective is not None:
            meanings.append(f"  {name}: {chosen.objective_doc}")
    click.echo(render.table(["policy", "status", "objective", "total steps/s",
                             "min job steps/s", "solve s"], rows))
    if meanings:
        click.echo("\nobjective:\n" + "\n".join(meanings))
    click.echo("\nNext: schedopt solve instances/tiny.json --policy max_min_fairness")




if __name__ == "__main__":
    main()
