"""Performance models: build, complete and stress-test the throughput matrix.

- `PerformanceModel` (model.py): job types x configurations (GPU types, and GPU type shared
  with a partner job type) of steps/s, with a known-mask; to and from an instance's
  `performance` section.
- builders.py: `gavel_model` (Gavel's throughput file), `pollux_model` /
  `pollux_placement_model` (Pollux per-placement profiles); online.py: `OnlineEstimator`
  (Gavel's EMA of measured throughputs).
- completion.py: `complete`, low-rank completion of missing cells with an uncertainty.
- side.py / kernel.py / predict.py: `predict`, an ensemble of low-rank completion,
  per-GPU-type low-rank fits, a ridge on what the job-type labels say, a Gaussian process of
  pair slowdowns over similar job types, and local ratios for isolated cells, weighted by
  held-out folds.
- spread.py: `fill_unconsolidated`, the unconsolidated rates of multi-GPU job types (GPUs
  spread over nodes) nobody measured, by a Gaussian process on their ratio to the consolidated
  rate (`predict` calls it).
- active.py: `suggest`, which missing cells to measure next (max-min regret, uncertainty).
- study.py: `accuracy_study`, hide measured cells, complete, compare; `hidden_errors`,
  the error of every hidden cell with what its labels say; `plot_study`.
- io.py: `read_model` / `write_model` (format schedopt-perf/1).

See docs/performance-models.md.
"""

from schedopt.perf.builders import (
    gavel_model,
    pollux_model,
    pollux_placement_model,
    read_pollux_placements,
)
from schedopt.perf.active import Suggestion, suggest
from schedopt.perf.completion import Completion, complete
from schedopt.perf.io import PERF_FORMAT, read_model, write_model
from schedopt.perf.model import PerformanceModel, model_from_arrays
from schedopt.perf.online import OnlineEstimator
from schedopt.perf.predict import predict
from schedopt.perf.study import accuracy_study, hidden_errors, hide_units, plot_study, summarize

__all__ = [
    "PERF_FORMAT",
    "Completion",
    "OnlineEstimator",
    "PerformanceModel",
    "Suggestion",
    "accuracy_study",
    "complete",
    "gavel_model",
    "hidden_errors",
    "hide_units",
    "model_from_arrays",
    "plot_study",
    "predict",
    "pollux_model",
    "pollux_placement_model",
    "read_model",
    "read_pollux_placements",
    "suggest",
    "summarize",
    "write_model",
]
