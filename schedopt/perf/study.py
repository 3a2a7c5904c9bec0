"""How well does completion recover entries it did not see? Hide, complete, compare.

For each fraction f, target kind and seed: draw round(f x n) of the model's n measured units of
that kind (an isolated cell, or one co-location pair, both sides together, on one GPU type; only
cells with steps/s > 0), hide them, complete the rest with `schedopt.perf.completion.complete`,
and compare the filled values with the hidden measurements (a hidden cell whose whole row or
column was hidden stays missing, a cold start; it is counted as `unfilled` and left out):

    relative error = |estimate - measured| / measured            (per hidden cell)

reported as mean (MRE), median and 90th percentile over the hidden cells, plus `coverage`: the
share of hidden cells whose measurement lies within 2 uncertainties of the estimate in log
space (|log(estimate / measured)| <= 2 x uncertainty), i.e. how honest the uncertainty is.
Isolated and pair targets are studied separately: hiding pairs leaves every isolated cell known,
and the other way round. The third target, "unconsolidated", hides a fraction of the measured
unconsolidated rates above 0 (a multi-GPU job type on one GPU type, its GPUs spread over nodes;
every matrix cell stays known); only the ensemble predicts those (`schedopt.perf.spread`), so
"als" leaves them all unfilled.

Methods: "als" is `complete` (the low-rank completion alone), "ensemble" is
`schedopt.perf.predict.predict` (low-rank, per-GPU-type low-rank and side information, weighted
by held-out folds). Every method sees the same hidden cells for a seed, so `summarize` also
gives each method's improvement over "als" seed by seed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from schedopt.errors import SchedoptError
from schedopt.perf.completion import complete, measurement_units
from schedopt.perf.model import PerformanceModel

TARGETS = ("pairs", "isolated", "unconsolidated")
COLUMNS = ["target", "fraction", "seed", "method", "hidden", "unfilled", "mre", "median", "p90",
           "coverage", "mre_shared", "rank", "lam", "seconds"]
METHODS = ("als", "ensemble")


def seed_list(seeds) -> list[int]:
    """Seeds from an int n (0..n-1) or an iterable of ints."""
    if isinstance(seeds, (int, np.integer)):
        return list(range(int(seeds)))
    return [int(s) for s in seeds]


def _method(name: str):
    if name == "als":
        return complete
    if name == "ensemble":
        from schedopt.perf.predict import predict

        return predict
    raise SchedoptError(f"unknown method {name!r}; expected one of {', '.join(METHODS)}")


def _draw(n: int, fraction: float, seed: int) -> np.ndarray:
    """(n,) bool: round(fraction x n) of n units, drawn with numpy's default_rng(seed)."""
    if not 0 <= fraction <= 1:
        raise SchedoptError(f"a fraction hidden must lie in [0, 1], got {fraction}")
    chosen = np.zeros(n, dtype=bool)
    chosen[np.random.default_rng(seed).choice(n, size=round(fraction * n), replace=False)] = True
    return chosen


def hide_units(model: PerformanceModel, fraction: float, target: str, seed: int, *,
               zeros: bool = False) -> np.ndarray:
    """(R, C) bool: the cells of round(fraction x n) of the n measured positive units of kind
    `target` ('pairs' or 'isolated'), drawn with numpy's default_rng(seed); with `zeros`,
    units measured at 0 steps/s (cannot run, cannot share) are drawn from too."""
    if target not in ("pairs", "isolated"):
        raise SchedoptError(f"unknown target {target!r}; expected pairs or isolated")
    cols = model.is_pair if target == "pairs" else ~model.is_pair
    cells = model.known & ((model.values > 0) | zeros) & cols[None, :]
    units = measurement_units(model, cells)
    if not cells.any():
        return cells
    return cells & _draw(int(units.max()) + 1, fraction, seed)[np.maximum(units, 0)]


def hide_unconsolidated(model: PerformanceModel, fraction: float, seed: int) -> list[tuple[str, str]]:
    """round(fraction x n) of the n measured unconsolidated rates above 0 of multi-GPU job types
    with a measured consolidated rate above 0 there, as (job type, GPU type), drawn with
    numpy's default_rng(seed)."""
    J = len(model.gpu_types)
    row = {t: r for r, t in enumerate(model.job_types)}
    keys = [(t, g) for t, rates in model.unconsolidated.items() for g, x in rates.items()
            if x > 0 and (t, g) not in model.unconsolidated_estimated and t in row
            and g in model.gpu_types and model.scale_factors[row[t]] > 1
            and model.known[row[t], model.gpu_types.index(g)]
            and model.values[row[t], :J][model.gpu_types.index(g)] > 0]
    chosen = _draw(len(keys), fraction, seed)
    return [k for k, c in zip(keys, chosen) if c]


def score(truth: np.ndarray, estimate: np.ndarray, uncertainty: np.ndarray | None) -> dict:
    """mre, median, p90 of |estimate - truth| / truth, and coverage (share with
    |log(estimate / truth)| <= 2 uncertainty; NaN without uncertainty)."""
    error = np.abs(estimate - truth) / truth
    coverage = float("nan")
    if uncertainty is not None and error.size:
        with np.errstate(divide="ignore"):  # an estimate of 0 (cannot share) is never covered
            coverage = float(np.mean(np.abs(np.log(estimate / truth)) <= 2 * uncertainty))
    if not error.size:
        return {"mre": float("nan"), "median": float("nan"), "p90": float("nan"), "coverage": coverage}
    return {"mre": float(error.mean()), "median": float(np.median(error)),
            "p90": float(np.percentile(error, 90)), "coverage": coverage}


def accuracy_study(model: PerformanceModel, fractions=(0.1, 0.3, 0.5, 0.7), targets=("pairs",),
                   seeds=3, progress: bool = False, methods=("als",), **options) -> pd.DataFrame:
    """One row per (target, fraction, seed, method) with the columns of `COLUMNS` (hidden:
    cells hidden; unfilled: hidden cells left missing (a cold start), which the error
    statistics leave out; mre_shared: the mean relative error over the hidden cells that every
    method of the run filled, so that methods are compared on the same cells; seconds: time of
    that completion). seeds: a count n (seeds 0..n-1)
    or a list; seed s hides with default_rng(s) and completes with seed=s. methods: names in
    METHODS, each run on the same hidden cells. `options` go to every method. `progress`: a
    tqdm bar on stderr."""
    import time

    from tqdm import tqdm

    fits = {name: _method(name) for name in methods}
    if not fits:
        raise SchedoptError(f"give at least one method of {', '.join(METHODS)}")
    runs = [(t, f, s) for t in targets for f in fractions for s in seed_list(seeds)]
    rows = []
    bar = tqdm(total=len(runs) * len(fits), desc="completions", unit="fit", disable=not progress)
    for target, fraction, seed in runs:
        if target == "unconsolidated":
            hidden = hide_unconsolidated(model, fraction, seed)
            hidden_model = model.without_unconsolidated(hidden)
        else:
            hidden = hide_units(model, fraction, target, seed)
            hidden_model = model.hide(hidden)
        got = {}
        for name, fit in fits.items():
            start = time.perf_counter()
            result = fit(hidden_model, seed=seed, **options)
            got[name] = (result, time.perf_counter() - start, *_hidden_estimates(model, result.model, hidden))
            bar.update()
        truth = next(iter(got.values()))[2]
        shared = np.logical_and.reduce([np.isfinite(g[3]) for g in got.values()])
        for name, (result, seconds, _, estimate, u) in got.items():
            filled = np.isfinite(estimate)
            rows.append({"target": target, "fraction": float(fraction), "seed": seed, "method": name,
                         "hidden": truth.size, "unfilled": int((~filled).sum()),
                         **score(truth[filled], estimate[filled], None if u is None else u[filled]),
                         "mre_shared": float(np.mean(np.abs(estimate[shared] / truth[shared] - 1)))
                         if shared.any() else float("nan"),
                         "rank": result.rank, "lam": result.lam, "seconds": seconds})
    bar.close()
    return pd.DataFrame(rows, columns=COLUMNS)


def _hidden_estimates(truth: PerformanceModel, estimate: PerformanceModel, hidden):
    """(measured, estimate, uncertainty) of every hidden entry: (n,) steps/s each, the
    estimate NaN where it was left unfilled, the uncertainty None when the model has none.
    hidden: an (R, C) bool mask of matrix cells, or a list of (job type, GPU type) whose
    unconsolidated rates were hidden."""
    if isinstance(hidden, np.ndarray):
        u = None if estimate.uncertainty is None else estimate.uncertainty[hidden]
        return truth.values[hidden], estimate.values[hidden], u
    measured = np.array([truth.unconsolidated[t][g] for t, g in hidden], dtype=float)
    values = np.array([estimate.unconsolidated.get(t, {}).get(g, np.nan) for t, g in hidden], dtype=float)
    u = np.array([estimate.unconsolidated_estimated.get(k, np.nan) for k in hidden], dtype=float)
    return measured, values, u


def hidden_errors(truth: PerformanceModel, hidden: np.ndarray, estimate: PerformanceModel) -> pd.DataFrame:
    """One row per hidden cell that `estimate` filled, to see where the error is: job_type,
    gpu_type, partner (None for an isolated cell), family and partner_family (from the labels,
    `schedopt.perf.side.job_type_info`), measured and estimate (steps/s), relative_error
    (|estimate - measured| / measured), uncertainty (sd of log steps/s; NaN without one) and,
    for pair cells, normalized: the measured pair rate over the job's own isolated rate on that
    GPU type in `truth` (1 = sharing costs it nothing; NaN where that rate is unknown or 0).
    truth: the model with every measurement; hidden: (R, C) bool, the cells `estimate` did not
    see (measured > 0 in `truth`)."""
    from schedopt.perf.side import job_type_info

    filled = hidden & np.isfinite(estimate.values)
    a, c = np.nonzero(filled)
    J, P = len(truth.gpu_types), len(truth.partners)
    pair = truth.is_pair[c]
    b = np.where(pair, truth.pair_rows[np.maximum(c - J, 0) % max(P, 1)] if P else 0, -1)
    g = truth.column_gpu[c]
    family = np.asarray(job_type_info(truth.job_types).family, dtype=object)
    measured, got = truth.values[a, c], estimate.values[a, c]
    alone = truth.values[a, g]
    with np.errstate(divide="ignore", invalid="ignore"):
        normalized = np.where(pair & truth.known[a, g] & (alone > 0), measured / alone, np.nan)
    names = np.asarray(truth.job_types, dtype=object)
    unc = np.full(a.size, np.nan) if estimate.uncertainty is None else estimate.uncertainty[a, c]
    return pd.DataFrame({
        "job_type": names[a], "gpu_type": np.asarray(truth.gpu_types, dtype=object)[g],
        "partner": np.where(pair, names[np.maximum(b, 0)], None),
        "family": family[a], "partner_family": np.where(pair, family[np.maximum(b, 0)], None),
        "measured": measured, "estimate": got, "relative_error": np.abs(got - measured) / measured,
        "uncertainty": unc, "normalized": normalized})


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (target, fraction, method): the means over seeds of hidden, unfilled, mre, median,
    p90, coverage; mre_min / mre_max and p90_max over seeds; and, where "als" ran on the same
    seeds, `improvement`: the mean over seeds of 1 - mre_shared / mre_shared of "als" (0.2 = a
    fifth less error, on the hidden cells both filled; mre for frames without mre_shared) and
    `better`: on how many seeds the method's error there is below "als"'s."""
    if "method" not in frame.columns:
        frame = frame.assign(method="als")
    keys = ["target", "fraction", "method"]
    grouped = frame.groupby(keys, sort=False)
    out = grouped[["hidden", "unfilled", "mre", "median", "p90", "coverage"]].mean()
    out["mre_min"] = grouped["mre"].min()
    out["mre_max"] = grouped["mre"].max()
    out["p90_max"] = grouped["p90"].max()
    out["seeds"] = grouped["seed"].nunique()
    out = out.reset_index()
    error = "mre_shared" if "mre_shared" in frame.columns else "mre"
    als = frame[frame["method"] == "als"].set_index(["target", "fraction", "seed"])[error]
    paired = frame.join(als.rename("mre_als"), on=["target", "fraction", "seed"])
    paired["gain"] = 1 - paired[error] / paired["mre_als"]
    paired["better"] = paired[error] < paired["mre_als"]
    gains = paired.groupby(keys, sort=False)[["gain", "better"]].agg({"gain": "mean", "better": "sum"})
    out = out.join(gains.rename(columns={"gain": "improvement"}), on=keys)
    return out.sort_values(["target", "fraction"], kind="stable").reset_index(drop=True)


def plot_study(frame: pd.DataFrame, ax=None, title: str | None = None):
    """Mean relative error (%) of the completed cells against the fraction of measured units
    hidden, one line per target and method (mean over seeds, bars from the best to the worst seed), from
    `accuracy_study`'s frame. Returns the figure (matplotlib, Agg canvas, no pyplot)."""
    from schedopt.plots import figure_axes

    fig, ax = figure_axes(ax)
    summary = summarize(frame)
    lines = summary[["target", "method"]].drop_duplicates().itertuples(index=False)
    for i, (target, method) in enumerate(lines):
        rows = summary[(summary["target"] == target) & (summary["method"] == method)]
        if rows["mre"].isna().all():  # a method that predicts none of this target
            continue
        x = rows["fraction"].to_numpy() * 100
        y = rows["mre"].to_numpy() * 100
        spread = np.vstack([y - rows["mre_min"].to_numpy() * 100, rows["mre_max"].to_numpy() * 100 - y])
        label = {"pairs": "co-location pairs", "isolated": "isolated (GPU types)",
                 "unconsolidated": "unconsolidated (spread over nodes)"}[target]
        if summary["method"].nunique() > 1:
            label += f", {method}"
        ax.errorbar(x, y, yerr=spread, marker="o", capsize=3, color=f"C{i}", label=label)
        ax.plot(x, rows["median"].to_numpy() * 100, linestyle=":", color=f"C{i}",
                label=f"{label}, median")
    ax.set_xlabel("Measured entries hidden (%)")
    ax.set_ylabel("Relative error of completed entries (%)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    return fig
