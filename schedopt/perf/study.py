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
and the other way round.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from schedopt.errors import SchedoptError
from schedopt.perf.completion import complete, measurement_units
from schedopt.perf.model import PerformanceModel

TARGETS = ("pairs", "isolated")
COLUMNS = ["target", "fraction", "seed", "hidden", "unfilled", "mre", "median", "p90", "coverage",
           "rank", "lam", "seconds"]


def hide_units(model: PerformanceModel, fraction: float, target: str, seed: int, *,
               zeros: bool = False) -> np.ndarray:
    """(R, C) bool: the cells of round(fraction x n) of the n measured positive units of kind
    `target` ('pairs' or 'isolated'), drawn with numpy's default_rng(seed); with `zeros`,
    units measured at 0 steps/s (cannot run, cannot share) are drawn from too."""
    if target not in TARGETS:
        raise SchedoptError(f"unknown target {target!r}; expected one of {', '.join(TARGETS)}")
    if not 0 <= fraction <= 1:
        raise SchedoptError(f"a fraction hidden must lie in [0, 1], got {fraction}")
    cols = model.is_pair if target == "pairs" else ~model.is_pair
    cells = model.known & ((model.values > 0) | zeros) & cols[None, :]
    units = measurement_units(model, cells)
    n = int(units.max()) + 1 if cells.any() else 0
    chosen = np.zeros(n, dtype=bool)
    chosen[np.random.default_rng(seed).choice(n, size=round(fraction * n), replace=False)] = True
    return cells & chosen[np.maximum(units, 0)]


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
                   seeds: int = 3, progress: bool = False, **options) -> pd.DataFrame:
    """One row per (target, fraction, seed) with the columns of `COLUMNS` (hidden: cells
    hidden; unfilled: hidden cells completion left missing because nothing measured was left
    in their row or column, which the error statistics leave out; seconds: time of that
    completion). `options` go to `complete`; seed s hides with
    default_rng(s) and completes with seed=s. `progress`: a tqdm bar on stderr."""
    import time

    from tqdm import tqdm

    runs = [(t, f, s) for t in targets for f in fractions for s in range(seeds)]
    rows = []
    for target, fraction, seed in tqdm(runs, desc="completions", unit="fit", disable=not progress):
        hidden = hide_units(model, fraction, target, seed)
        start = time.perf_counter()
        result = complete(model.hide(hidden), seed=seed, **options)
        seconds = time.perf_counter() - start
        got = result.model
        filled = hidden & np.isfinite(got.values)
        u = None if got.uncertainty is None else got.uncertainty[filled]
        rows.append({"target": target, "fraction": float(fraction), "seed": seed,
                     "hidden": int(hidden.sum()), "unfilled": int((hidden & ~filled).sum()),
                     **score(model.values[filled], got.values[filled], u),
                     "rank": result.rank, "lam": result.lam, "seconds": seconds})
    return pd.DataFrame(rows, columns=COLUMNS)


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (target, fraction): the means over seeds of hidden, unfilled, mre, median, p90,
    coverage, and mre_min / mre_max over seeds."""
    grouped = frame.groupby(["target", "fraction"], sort=True)
    out = grouped[["hidden", "unfilled", "mre", "median", "p90", "coverage"]].mean()
    out["mre_min"] = grouped["mre"].min()
    out["mre_max"] = grouped["mre"].max()
    out["seeds"] = grouped["seed"].nunique()
    return out.reset_index()


def plot_study(frame: pd.DataFrame, ax=None, title: str | None = None):
    """Mean relative error (%) of the completed cells against the fraction of measured units
    hidden, one line per target (mean over seeds, bars from the best to the worst seed), from
    `accuracy_study`'s frame. Returns the figure (matplotlib, Agg canvas, no pyplot)."""
    from schedopt.plots import figure_axes

    fig, ax = figure_axes(ax)
    summary = summarize(frame)
    for i, target in enumerate(frame["target"].unique()):
        rows = summary[summary["target"] == target]
        x = rows["fraction"].to_numpy() * 100
        y = rows["mre"].to_numpy() * 100
        spread = np.vstack([y - rows["mre_min"].to_numpy() * 100, rows["mre_max"].to_numpy() * 100 - y])
        label = "co-location pairs" if target == "pairs" else "isolated (GPU types)"
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
