"""`schedopt perf ...`: build a performance model, complete its missing entries, measure how
well completion works. See docs/performance-models.md."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import click
import numpy as np

from schedopt.cli import render
from schedopt.cli.outputs import check_targets, save_figure
from schedopt.cli.errors import OneLineErrors
from schedopt.errors import SchedoptError

FILE = click.Path(dir_okay=False, path_type=Path)


def _numbers(text: str, what: str, kind=float) -> list:
    try:
        values = [kind(x) for x in text.replace(" ", ",").split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers, got {text!r}", param_hint=what) from None
    if not values:
        raise click.BadParameter("expected at least one number", param_hint=what)
    return values


def _check_suffix(path: Path | None) -> None:
    """Fail before any work when an output file's suffix names no format."""
    if path is not None and path.suffix.lower() not in (".json", ".yaml", ".yml"):
        raise SchedoptError(f"{path}: unknown suffix {path.suffix!r}; expected .json, .yaml or .yml")


def _completion_options(f):
    f = click.option("--seed", type=int, default=0, show_default=True,
                     help="Seed of the validation splits, bootstrap draws and starting points.")(f)
    f = click.option("--ensemble", type=click.IntRange(min=0), default=8, show_default=True,
                     help="Bootstrap refits behind each filled entry's uncertainty (0: none).")(f)
    f = click.option("--lambdas", default="1,0.3,0.1", show_default=True, metavar="L,...",
                     help="Ridge weights tried by held-out validation.")(f)
    return click.option("--ranks", default="2,4,6", show_default=True, metavar="K,...",
                        help="Ranks of the low-rank term tried by held-out validation.")(f)


def _complete_kwargs(ranks: str, lambdas: str, ensemble: int, seed: int) -> dict:
    return {"ranks": _numbers(ranks, "--ranks", int), "lambdas": _numbers(lambdas, "--lambdas"),
            "ensemble": ensemble, "seed": seed}


@click.group("perf", cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
def perf_group():
    """Performance models: the job types x configurations matrix of steps/s.

    A configuration is a GPU type (a job alone on it) or a GPU type shared with a job of another
    type (this job's steps/s in the pair). Build a model from measurements, fill the entries
    nobody measured by low-rank matrix completion (with an uncertainty each), and measure how
    accurate completion is by hiding measured entries. Models are files of format
    schedopt-perf/1; `complete` also reads and writes instances, so a completed table can be
    solved by every policy.
    """


@perf_group.command("build")
@click.option("--gavel", type=FILE, default=None,
              help="Gavel's simulation_throughputs.json (steps/s per job type, GPU type and pair).")
@click.option("--pollux", type=FILE, default=None,
              help="A Pollux placements CSV (placement,local_bsz,step_time,sync_time).")
@click.option("--measurements", type=FILE, default=None,
              help="A CSV of measurements in time order (job,gpu_type,steps_per_s[,partner]), "
                   "averaged per cell as Gavel does online (EMA).")
@click.option("--output", "-o", type=FILE, required=True,
              help="Model file to write (.json, .yaml or .yml).")
@click.option("--gpu-types", default=None, metavar="TYPE,...",
              help="With --gavel: GPU types to keep (default v100,p100,k80). With "
                   "--measurements: the GPU types (default: those the file names).")
@click.option("--no-colocation", is_flag=True, help="With --gavel: leave out the pairs.")
@click.option("--app", default=None,
              help="With --pollux: application name (default: the file name before '-').")
@click.option("--gpu-type", default="t4", show_default=True,
              help="With --pollux: the GPU type the profiles were measured on.")
@click.option("--by-placement", is_flag=True,
              help="With --pollux: one configuration per placement (a batch size x placement "
                   "matrix for study), instead of job types per replica count.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True), default=0.25, show_default=True,
              help="With --measurements: weight of the newest measurement (Gavel: 0.25).")
def build(gavel, pollux, measurements, output, gpu_types, no_colocation, app, gpu_type,
          by_placement, alpha):
    """Build a performance model from Gavel's throughput table, Pollux placement profiles or a
    stream of measurements, and write it as a schedopt-perf/1 file.

    \b
    schedopt perf build --gavel simulation_throughputs.json -o gavel-model.json
    schedopt perf build --pollux cifar10-placements.csv -o cifar10.json
    schedopt perf build --measurements rounds.csv -o online.json
    """
    from schedopt.perf import (
        gavel_model,
        pollux_model,
        pollux_placement_model,
        write_model,
    )

    _check_suffix(output)
    chosen = [x for x in (gavel, pollux, measurements) if x is not None]
    if len(chosen) != 1:
        raise SchedoptError("give exactly one of --gavel, --pollux, --measurements")
    types = [t.strip() for t in gpu_types.split(",") if t.strip()] if gpu_types else None
    if gavel is not None:
        model = gavel_model(gavel, types, colocation=not no_colocation)
    elif pollux is not None:
        model = (pollux_placement_model if by_placement else pollux_model)(pollux, app, gpu_type)
    else:
        model = _replay(measurements, types, alpha)
    write_model(model, output)
    click.echo(f"wrote {output}: {model.summary()}", err=True)


def _replay(path: Path, gpu_types, alpha: float):
    """An OnlineEstimator fed the CSV's rows in order."""
    import pandas as pd

    from schedopt.perf import OnlineEstimator

    try:
        frame = pd.read_csv(path, dtype={"job": str, "gpu_type": str, "partner": str})
    except (OSError, ValueError, pd.errors.ParserError) as e:
        raise SchedoptError(f"{path}: cannot read a CSV: {e}") from None
    lacking = [c for c in ("job", "gpu_type", "steps_per_s") if c not in frame.columns]
    if lacking:
        raise SchedoptError(f"{path}: expected columns job,gpu_type,steps_per_s[,partner]; "
                            f"missing {', '.join(lacking)}")
    values = pd.to_numeric(frame["steps_per_s"], errors="coerce").to_numpy(dtype=float)
    bad = (frame["job"].isna() | frame["gpu_type"].isna()).to_numpy() | ~(values >= 0) \
        | ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise SchedoptError(f"{path}: row {row + 2}: expected a job, a GPU type and steps_per_s "
                            f">= 0 (a finite number), got {frame.iloc[row].to_dict()}")
    estimator = OnlineEstimator(gpu_types or list(dict.fromkeys(frame["gpu_type"])), alpha)
    partner = frame["partner"] if "partner" in frame.columns else pd.Series([None] * len(frame))
    alone = partner.isna().to_numpy()
    try:
        if alone.all():
            estimator.update_many(list(frame["job"]), list(frame["gpu_type"]), values)
        else:
            for job, gpu, x, other, solo in zip(frame["job"], frame["gpu_type"], values, partner, alone):
                estimator.update(job, gpu, x, None if solo else other)
    except SchedoptError as e:
        raise SchedoptError(f"{path}: {e}") from None
    return estimator.model(f"{path.name} (online EMA, alpha={alpha})")


@perf_group.command("complete")
@click.argument("source", type=FILE)
@click.option("--output", "-o", type=FILE, default=None,
              help="Write the completed model here (.json/.yaml/.yml): an instance when SOURCE is "
                   "an instance (usable by every policy), else a schedopt-perf/1 model.")
@click.option("--pairs/--no-pairs", default=True, show_default=True,
              help="Fill co-location pairs nobody measured.")
@click.option("--isolated/--no-isolated", default=True, show_default=True,
              help="Fill GPU types a job type was never measured on.")
@click.option("--unconsolidated/--no-unconsolidated", default=True, show_default=True,
              help="With --method ensemble: fill the unconsolidated rates (a multi-GPU job whose "
                   "GPUs span nodes) nobody measured, from the measured ones (at least 10).")
@click.option("--method", type=click.Choice(["als", "ensemble"]), default="als", show_default=True,
              help="als: low-rank completion; ensemble: low-rank, per-GPU-type low-rank, side "
                   "information from the job-type labels and Gaussian processes of pair "
                   "slowdowns, weighted by held-out folds (more accurate; on Gavel's table "
                   "about 10 s against 1-2 s; also fills job types never measured, and "
                   "unconsolidated rates: see --unconsolidated).")
@_completion_options
@click.option("--json", "as_json", is_flag=True, help="Print the filled entries as JSON.")
@click.option("--max-rows", type=click.IntRange(min=0), default=40, show_default=True,
              help="Filled entries shown in the table (--json and -o always have all).")
def complete_command(source, output, pairs, isolated, unconsolidated, method, ranks, lambdas, ensemble,
                     seed, as_json, max_rows):
    """Fill the missing entries of SOURCE's performance model by low-rank matrix completion.

    SOURCE: a schedopt instance, a schedopt-perf/1 model, or Gavel's throughput file. Measured
    entries are kept, zeros included (a pair measured at 0 steps/s cannot share); each filled
    entry gets steps/s and an uncertainty (sd of log steps/s, so 0.10 ~ +-10%). A pair of job
    types that mostly cannot share with their measured partners is predicted 0 ("cannot
    share"; see docs/performance-models.md); use --no-pairs to leave unmeasured pairs out.
    With --method ensemble the unconsolidated rates of multi-GPU job types (GPUs spread over
    nodes) nobody measured are filled too, shown as "(spread over nodes)".

    \b
    schedopt perf complete instances/colocation.json -o colocation-full.json
    schedopt perf complete simulation_throughputs.json --no-isolated --json
    schedopt perf complete simulation_throughputs.json --method ensemble -o gavel-full.json
    """
    from schedopt.perf import complete, read_model
    from schedopt.perf.io import instance_with_model, write_model
    from schedopt.perf.predict import predict

    _check_suffix(output)
    model, instance_doc = read_model(source)
    kwargs = _complete_kwargs(ranks, lambdas, ensemble, seed) | {"pairs": pairs, "isolated": isolated}
    if method == "ensemble":
        result = predict(model, unconsolidated=unconsolidated, **kwargs)
    else:
        result = complete(model, **kwargs)
    if output is not None:
        if instance_doc is not None:
            from schedopt.instance import save_instance

            try:
                save_instance(instance_with_model(instance_doc, result.model, str(source)), output)
            except OSError as e:
                raise SchedoptError(f"{output}: cannot write: {e.strerror or e}") from None
        else:
            write_model(result.model, output)
    entries = result.entries()
    left = int(result.model.missing.sum())
    if as_json:
        doc = {"method": result.method, "rank": result.rank, "lambda": result.lam, "filled": entries,
               "weights": result.weights,
               "cannot_share": int(result.cannot_share.sum()), "still_missing": left,
               _uncertainty_key(result.method): result.residual,
               "validation": [{"rank": k, "lambda": lam, "mre": v}
                              for (k, lam), v in result.validation.items()]}
        click.echo(json.dumps(_finite(doc), indent=1, allow_nan=False))
    else:
        click.echo(f"{result.model.summary()}\nfilled {len(entries)} entries (rank {result.rank}, "
                   f"lambda {result.lam:g}; {int(result.cannot_share.sum())} predicted 0: cannot "
                   f"share); {left} still missing")
        rows = [[e["job_type"], e["gpu_type"],
                 "(spread over nodes)" if e["unconsolidated"] else e["partner"] or "-",
                 "0 (cannot share)" if e["steps_per_s"] == 0 else f"{e['steps_per_s']:.4g}",
                 "-" if e["uncertainty"] is None else f"{100 * e['uncertainty']:.0f}%"]
                for e in entries[:max_rows]]
        if rows:
            click.echo()
            click.echo(render.table(["job type", "GPU type", "sharing with", "steps/s", "+-"], rows))
        if len(entries) > max_rows:
            click.echo(f"... {len(entries) - max_rows} more (use --max-rows, --json or -o)")
    if output is not None:
        click.echo(f"wrote {output}", err=True)


def _uncertainty_key(method: str) -> str:
    """The JSON key of `Completion.residual`: the low-rank completion reports its RMS held-out
    error; the ensemble, the median calibrated uncertainty per kind and GPU type (both in log
    steps/s)."""
    return "heldout_rms_log_error" if method == "als" else "median_uncertainty_log"


def _finite(x):
    """x with every NaN float (in dicts and lists) replaced by None, for JSON."""
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return None if isinstance(x, float) and math.isnan(x) else x


def _seeds(text: str) -> list[int]:
    """'8' -> seeds 0..7; '0-7,100-109' or '3,5' -> those seeds."""
    text = text.strip()
    try:
        if text.isdigit():
            n = int(text)
            if n < 1:
                raise ValueError
            return list(range(n))
        out = []
        for part in text.replace(" ", ",").split(","):
            if not part:
                continue
            lo, _, hi = part.partition("-")
            out += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
        if not out:
            raise ValueError
        return list(dict.fromkeys(out))
    except ValueError:
        raise click.BadParameter(f"expected a count (8) or seeds and ranges (0-7,100-109), got {text!r}",
                                 param_hint="--seeds") from None


def _methods(text: str) -> list[str]:
    from schedopt.perf.study import METHODS

    names = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in names if m not in METHODS]
    if bad or not names:
        raise click.BadParameter(f"expected some of {', '.join(METHODS)}, got {text!r}", param_hint="--method")
    return list(dict.fromkeys(names))


@perf_group.command("study")
@click.argument("source", type=FILE)
@click.option("--fractions", default="0.1,0.3,0.5,0.7", show_default=True, metavar="F,...",
              help="Fractions of the measured entries to hide, comma-separated.")
@click.option("--target", type=click.Choice(["pairs", "isolated", "unconsolidated", "both", "all"]),
              default="pairs", show_default=True,
              help="Which entries to hide: co-location pairs (both sides of a pair on one GPU type "
                   "together), isolated (GPU type) entries, unconsolidated rates (multi-GPU jobs "
                   "spread over nodes; only the ensemble predicts them); both: pairs and isolated; "
                   "all: the three.")
@click.option("--seeds", default="3", show_default=True, metavar="N|S-T,...",
              help="Random draws of the hidden entries: a count N (seeds 0..N-1) or a list of seeds "
                   "and ranges (0-7,100-109).")
@click.option("--method", "methods", default="als,ensemble", show_default=True, metavar="M,...",
              help="Predictors compared on the same hidden entries: als (low-rank completion), "
                   "ensemble (low-rank + per-GPU low-rank + side information).")
@_completion_options
@click.option("--plot", type=FILE, default=None, help="Save the error-vs-fraction plot (PNG, SVG, PDF).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON row per completion.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar over completions (default: when stderr is a terminal).")
def study(source, fractions, target, seeds, methods, ranks, lambdas, ensemble, seed, plot, as_json, progress):
    """Hide a fraction of SOURCE's measured entries, complete, and report the relative error
    |estimate - measured| / measured of the hidden ones: mean (MRE), median, 90th percentile
    (mean over seeds, and the worst seed's), and how often the measurement lies within 2
    uncertainties of the estimate. Every method sees the same hidden entries; "less error than
    als": mean over seeds of 1 - MRE / MRE of als, both on the hidden entries that every method
    filled, and on how many seeds the method beat als there. "unfilled": hidden entries left
    missing (nothing measured left to predict them from); MRE, median and p90 are over the
    entries each method filled.

    SOURCE: Gavel's throughput file, a schedopt-perf/1 model or an instance. A completion takes
    a few seconds on Gavel's table (83 job types, 5,526 measured entries; only those above 0
    are hidden, since the errors are relative), the ensemble about five times as long.

    \b
    schedopt perf study simulation_throughputs.json --fractions 0.5 --target both --seeds 0-7,100-109
    schedopt perf study simulation_throughputs.json --fractions 0.5 --target unconsolidated --seeds 10
    """
    from schedopt.perf import accuracy_study, read_model, summarize

    fracs = _numbers(fractions, "--fractions")
    if any(not 0 <= f <= 1 for f in fracs):
        raise click.BadParameter("fractions must lie in [0, 1]", param_hint="--fractions")
    seed_list, names = _seeds(seeds), _methods(methods)
    check_targets([source], figure=plot)
    model, _ = read_model(source)
    targets = {"both": ("pairs", "isolated"), "all": ("pairs", "isolated", "unconsolidated")}.get(target, (target,))
    kwargs = _complete_kwargs(ranks, lambdas, ensemble, seed)
    kwargs.pop("seed")  # the study seeds each run itself
    frame = accuracy_study(model, fracs, targets, seed_list, methods=names,
                           progress=sys.stderr.isatty() if progress is None else progress, **kwargs)
    if plot is not None:
        from schedopt.perf import plot_study

        save_figure(plot_study(frame, title=f"{model.name or source.name}: completion error"),
                    plot, [source], dpi=110)
    if as_json:
        records = frame.replace({np.nan: None}).to_dict(orient="records")
        click.echo(json.dumps(records, indent=1, allow_nan=False))
        return
    summary = summarize(frame)

    def pct(x, digits=1):
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.{digits}f}%"

    rows = [[r.target, f"{100 * r.fraction:.0f}%", r.method, f"{r.hidden:.0f}", f"{r.unfilled:.0f}",
             pct(r.mre), "-" if math.isnan(r.mre_min) else f"{100 * r.mre_min:.1f}-{100 * r.mre_max:.1f}%",
             pct(r.median), pct(r.p90),
             pct(r.p90_max), pct(r.coverage, 0),
             "-" if r.method == "als" or math.isnan(r.improvement)
             else f"{100 * r.improvement:+.0f}% ({r.better:.0f}/{r.seeds:.0f})"]
            for r in summary.itertuples()]
    click.echo(render.table(["target", "hidden", "method", "entries", "unfilled", "MRE", "MRE range",
                             "median", "p90", "worst p90", "within 2 sd", "less error than als"], rows))


@perf_group.command("suggest")
@click.argument("source", type=FILE)
@click.option("--budget", "-k", type=click.IntRange(min=1), required=True,
              help="How many measurements to suggest (a pair counts once: one run measures both sides).")
@click.option("--strategy", type=click.Choice(["maxmin", "uncertainty", "random"]), default="maxmin",
              show_default=True,
              help="maxmin: the cells whose uncertainty costs max-min fairness the most; "
                   "uncertainty: the most uncertain estimates; random: a random draw.")
@click.option("--gpus", default=None, metavar="N|TYPE=N,...",
              help="With maxmin: GPUs per type of the cluster (default: as many as job types).")
@click.option("--candidates", type=click.IntRange(min=1), default=40, show_default=True,
              help="With maxmin: the most uncertain isolated cells scored (two max-min solves each).")
@_completion_options
@click.option("--json", "as_json", is_flag=True, help="Print the suggestions as JSON.")
def suggest_command(source, budget, strategy, gpus, candidates, ranks, lambdas, ensemble, seed, as_json):
    """Which unmeasured cells of SOURCE's performance model to profile next.

    SOURCE: a schedopt-perf/1 model, an instance or Gavel's throughput file. The model is
    completed (low-rank, with uncertainties) and its missing cells ranked: by how much not
    knowing each one can cost max-min fairness on the cluster (maxmin; see
    docs/performance-models.md), by uncertainty, or at random.

    \b
    schedopt perf suggest holes.json --budget 10
    schedopt perf suggest holes.json --budget 10 --strategy uncertainty --json
    """
    from schedopt.perf import read_model
    from schedopt.perf.active import suggest

    model, _ = read_model(source)
    capacity = _capacity(gpus, model.gpu_types) if gpus else None
    picks = suggest(model, budget, strategy, capacity=capacity, candidates=candidates,
                    **_complete_kwargs(ranks, lambdas, ensemble, seed))
    if as_json:
        click.echo(json.dumps(_finite([p.__dict__ for p in picks]), indent=1, allow_nan=False))
        return
    if not picks:
        click.echo("nothing to measure: no cell of the model is missing")
        return
    rows = [[p.job_type, p.gpu_type, p.partner or "-",
             "-" if math.isnan(p.estimate) else f"{p.estimate:.4g}",
             "-" if math.isnan(p.uncertainty) else f"{100 * p.uncertainty:.0f}%",
             f"{100 * p.score:.1f}%" if strategy == "maxmin" else "-"]
            for p in picks]
    click.echo(render.table(["job type", "GPU type", "sharing with", "estimate (steps/s)", "+-",
                             "max-min level at risk"], rows))


def _capacity(text: str, gpu_types) -> np.ndarray:
    """'36' -> 36 of every type; 'v100=36,k80=12' -> those (every type must be named)."""
    text = text.strip()
    try:
        if "=" not in text:
            return np.full(len(gpu_types), float(text))
        pairs = dict(part.split("=") for part in text.replace(" ", "").split(",") if part)
        values = {k: float(v) for k, v in pairs.items()}
    except ValueError:
        raise click.BadParameter(f"expected N or TYPE=N,..., got {text!r}", param_hint="--gpus") from None
    unknown = sorted(set(values) - set(gpu_types))
    lacking = [g for g in gpu_types if g not in values]
    if unknown or lacking:
        raise click.BadParameter(f"name every GPU type of the model ({', '.join(gpu_types)}) once; "
                                 f"unknown: {', '.join(unknown) or '-'}, missing: {', '.join(lacking) or '-'}",
                                 param_hint="--gpus")
    if any(v <= 0 for v in values.values()):
        raise click.BadParameter("GPU counts must be > 0", param_hint="--gpus")
    return np.array([values[g] for g in gpu_types])
