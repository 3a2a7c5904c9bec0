"""`schedopt import ...`: public traces and throughput tables -> schedopt instance files.

Every command writes JSON or YAML by the -o suffix (.json, .yaml, .yml), prints a one-line
summary (jobs, GPUs, time span) to stderr, and on bad input prints one line and exits with 2.
"""

from __future__ import annotations

from pathlib import Path

import click

from schedopt.cli.errors import OneLineErrors
from schedopt.errors import InstanceError, Problem, SchedoptError
from schedopt.instance import parse_instance, save_instance
from schedopt.instance.model import FORMAT
from schedopt.traces import (
    gavel_cluster, gavel_performance, load_performance, parse_gpu_map, read_gavel_trace, read_philly,
    read_philly_deadlines, summary, synthetic_trace,
)
from schedopt.traces.common import GAVEL_CLUSTER

SUFFIXES = (".json", ".yaml", ".yml")


def _output_option(f):
    return click.option("--output", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path),
                        help="File to write; .json for JSON, .yaml/.yml for YAML.")(f)


def _cluster_options(f):
    f = click.option("--no-colocation", is_flag=True,
                     help="Leave out performance.colocated (Gavel's space-sharing pairs).")(f)
    f = click.option("--gpus-per-node", default=None, metavar="TYPE=N,...",
                     help="GPUs per server for each type (default Gavel's v100=4,p100=4,k80=8; "
                          "a type not named is one server).")(f)
    return click.option("--cluster", default=None, metavar="TYPE=COUNT,...",
                        help="GPUs of each type; these are the GPU types of the output "
                             "(default Gavel's physical cluster v100=8,p100=16,k80=24).")(f)


def _throughputs_option(f):
    return click.option("--throughputs", required=True, type=click.Path(dir_okay=False, path_type=Path),
                        help="Gavel's simulation_throughputs.json (steps/s per job type and GPU "
                             "type), or a schedopt instance file holding a performance section.")(f)


def _reference_option(f):
    return click.option("--reference-gpu", default=None, metavar="TYPE",
                        help="GPU type whose steps/s turn a duration (s) into total_steps "
                             "(default: the fastest on average; v100 for Gavel's table).")(f)


def _cluster(cluster: str | None, gpus_per_node: str | None) -> dict:
    counts = parse_gpu_map(cluster, "--cluster") if cluster else None
    per_node = parse_gpu_map(gpus_per_node, "--gpus-per-node") if gpus_per_node else None
    return gavel_cluster(counts, per_node)


def _check_suffix(output: Path) -> None:
    if output.suffix.lower() not in SUFFIXES:
        msg = f"unknown suffix {output.suffix!r}; expected .json, .yaml or .yml"
        raise InstanceError([Problem(str(output), "", msg)])


def _write(instance, output: Path, note: str = "") -> None:
    try:
        save_instance(instance, output)
    except OSError as e:
        raise SchedoptError(f"{output}: cannot write: {e.strerror or e}") from None
    click.echo(f"wrote {output}: {summary(instance)}{note}", err=True)


@click.group("import", cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
def import_group():
    """Turn public traces and throughput tables into schedopt instance files.

    A trace is an instance whose jobs arrive over time: each job has an arrival_time
    (seconds from the trace's start) and total_steps (training steps to run), and the
    performance section gives steps/s of each job type on each GPU type.
    """


@import_group.command("gavel-throughputs")
@click.argument("throughputs", type=click.Path(dir_okay=False, path_type=Path))
@_output_option
@click.option("--gpu-types", default=None, metavar="TYPE,...",
              help="GPU types to keep (default: the --cluster types, else v100,p100,k80).")
@_cluster_options
def gavel_throughputs(throughputs, output, gpu_types, cluster, gpus_per_node, no_colocation):
    """Gavel's measured THROUGHPUTS file as a performance section (steps/s), with no jobs.

    Every (model, scale factor) in the file becomes a job type: '<model>' for one GPU,
    '<model> x<s>' for s GPUs; *_unconsolidated tables give performance.unconsolidated, and
    every measured pair of equal scale factor gives a performance.colocated entry ([0, 0]:
    the two cannot share).
    """
    _check_suffix(output)
    types = [t.strip() for t in gpu_types.split(",") if t.strip()] if gpu_types else None
    if cluster is None and types:
        unknown = [t for t in types if t not in GAVEL_CLUSTER]
        if unknown:
            raise SchedoptError(f"--gpu-types {', '.join(unknown)}: no default count; give --cluster")
        cluster = ",".join(f"{t}={GAVEL_CLUSTER[t]}" for t in types)
    spec = _cluster(cluster, gpus_per_node)
    if types and set(types) != set(spec["gpu_types"]):
        raise SchedoptError(f"--gpu-types ({', '.join(types)}) and --cluster "
                            f"({', '.join(spec['gpu_types'])}) name different GPU types")
    performance = gavel_performance(throughputs, list(spec["gpu_types"]), colocation=not no_colocation)
    doc = {"format": FORMAT, "name": f"{throughputs.name} (Gavel measured throughputs)",
           "cluster": spec, "jobs": [], "performance": performance}
    instance = parse_instance(doc, str(throughputs))
    _write(instance, output, f", {len(performance['throughput'])} job types")


@import_group.command("gavel-trace")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@_throughputs_option
@_output_option
@_cluster_options
@click.option("--reference-gpu", default="v100", show_default=True, metavar="TYPE",
              help="GPU type of Gavel's job duration (isolated runtime, s): a line's SLO "
                   "factor becomes deadline = SLO x total_steps / steps/s there.")
def gavel_trace(trace, throughputs, output, cluster, gpus_per_node, no_colocation, reference_gpu):
    """Gavel's tab-separated TRACE (10 fields a line) as a schedopt trace.

    Line k becomes job j<k-1> (zero-padded): type '<job_type>' or '<job_type> x<scale
    factor>', weight = priority_weight, arrival_time (s), total_steps, and a deadline
    (s after arrival) when SLO >= 0. Only the job types used are kept.
    """
    _check_suffix(output)
    spec = _cluster(cluster, gpus_per_node)
    instance = read_gavel_trace(trace, throughputs, spec, reference=reference_gpu,
                                colocation=not no_colocation)
    _write(instance, output)


@import_group.command("philly")
@click.argument("csv", type=click.Path(dir_okay=False, path_type=Path))
@_throughputs_option
@_output_option
@_cluster_options
@_reference_option
@click.option("--seed", default=0, show_default=True, type=int,
              help="Seed of the job-type draw (numpy default_rng).")
@click.option("--limit", default=None, type=click.IntRange(min=1), metavar="N",
              help="Keep only the first N jobs by arrival.")
@click.option("--clip", is_flag=True,
              help="Give a job asking for more GPUs than any job type serves on this cluster "
                   "the largest scale factor that is served, instead of dropping it.")
def philly(csv, throughputs, output, cluster, gpus_per_node, no_colocation, reference_gpu, seed,
           limit, clip):
    """A Philly-derived CSV (timestamp, duration s, num_gpus, ...) as a schedopt trace.

    Arrivals are seconds after the earliest timestamp; scale_factor = num_gpus. Philly has
    no job types, so each job gets one drawn (seeded) from those with its scale factor, and
    total_steps = duration x its steps/s on the reference GPU type. Jobs whose num_gpus no
    job type serves are dropped (counted in the summary) unless --clip.
    """
    _check_suffix(output)
    spec = _cluster(cluster, gpus_per_node)
    performance = load_performance(throughputs, list(spec["gpu_types"]), not no_colocation)
    result = read_philly(csv, performance, spec, seed, reference=reference_gpu, limit=limit,
                         clip=clip, colocation=not no_colocation)
    _write(result.instance, output, f", {result.dropped} dropped, {result.clipped} clipped")


@import_group.command("philly-deadlines")
@click.argument("csv", type=click.Path(dir_okay=False, path_type=Path))
@_output_option
@click.option("--gpus", default=64, show_default=True, type=click.IntRange(min=1),
              help="GPUs in the (homogeneous) pool.")
@click.option("--gpus-per-node", default=8, show_default=True, type=click.IntRange(min=1),
              help="GPUs per node (Chronus rounds GPU counts up to 1, 2, 4, 8n on 8-GPU nodes).")
@click.option("--deadline-factor", default=2.0, show_default=True,
              type=click.FloatRange(min=0, min_open=True), metavar="F",
              help="SLO jobs get deadline = F x their Philly duration (s after arrival).")
@click.option("--slo-fraction", default=1.0, show_default=True, type=click.FloatRange(0, 1),
              help="Share of jobs (drawn with --seed) that get a deadline; the rest are best effort.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed (numpy default_rng).")
@click.option("--limit", default=None, type=click.IntRange(min=1), metavar="N",
              help="Keep only the first N jobs by arrival.")
@click.option("--max-duration", default=None, type=click.FloatRange(min=0, min_open=True),
              metavar="S", help="Drop jobs that ran longer than S seconds (Philly has multi-day jobs).")
def philly_deadlines(csv, output, gpus, gpus_per_node, deadline_factor, slo_fraction, seed, limit,
                     max_duration):
    """A Philly-derived CSV as a deadline trace on one GPU pool, for `schedopt leases`.

    Each job runs exactly its Philly duration (1 step/s, total_steps = duration) on num_gpus
    GPUs; jobs asking for more than --gpus are dropped. Needs no throughput table.
    """
    _check_suffix(output)
    result = read_philly_deadlines(csv, gpus, gpus_per_node, deadline_factor, slo_fraction, seed,
                                   limit=limit, max_duration=max_duration)
    _write(result.instance, output, f", {result.dropped} dropped")


@import_group.command("synthetic")
@_throughputs_option
@click.option("--jobs", "num_jobs", required=True, type=click.IntRange(min=1), help="Number of jobs.")
@click.option("--rate", required=True, type=click.FloatRange(min=0),
              help="Poisson arrival rate in jobs per hour (mean gap 3600/rate s); 0 = all at 0 s.")
@_output_option
@click.option("--seed", default=0, show_default=True, type=int, help="Seed (numpy default_rng).")
@_cluster_options
@_reference_option
@click.option("--single-gpu", is_flag=True,
              help="Only single-GPU jobs (Gavel's generate_multi_gpu_jobs=False).")
@click.option("--deadline-factor", default=None, type=click.FloatRange(min=0, min_open=True),
              metavar="F", help="Give each job a deadline of F x its duration (s after arrival).")
def synthetic(throughputs, num_jobs, rate, output, seed, cluster, gpus_per_node, no_colocation,
              reference_gpu, single_gpu, deadline_factor):
    """A synthetic trace drawn like Gavel's generator.

    Scale factors 1/2/4/8 w.p. 0.7/0.1/0.15/0.05; job type uniform over the single-GPU
    templates (with an s-GPU version); duration 60*10^U(1.5,3) s w.p. 0.8, else
    60*10^U(3,4) s; total_steps = duration x steps/s on the reference GPU type; weight 1.
    """
    _check_suffix(output)
    spec = _cluster(cluster, gpus_per_node)
    performance = load_performance(throughputs, list(spec["gpu_types"]), not no_colocation)
    instance = synthetic_trace(performance, spec, num_jobs, rate, seed, reference=reference_gpu,
                               single_gpu=single_gpu, deadline_factor=deadline_factor,
                               colocation=not no_colocation)
    _write(instance, output)
