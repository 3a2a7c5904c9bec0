"""Traces: importers of public formats and a synthetic generator, all producing schedopt
instances whose jobs arrive over time (`arrival_time`, seconds) with `total_steps` of work.

- `gavel_performance` / `read_gavel_throughputs`: Gavel's measured throughput table.
- `read_gavel_trace`: Gavel's tab-separated `.trace` files.
- `read_philly`: Philly-derived CSV (timestamp, duration, num_gpus, ...).
- `read_philly_deadlines`: the same CSV as a deadline trace on one GPU pool (Chronus).
- `synthetic_trace`: Poisson arrivals, Gavel's job mix and duration distribution.
"""

from schedopt.traces.common import gavel_cluster, parse_gpu_map, summary
from schedopt.traces.gavel_throughputs import read_gavel_trace
from schedopt.traces.performance import (
    gavel_performance, label, load_performance, parse_label, read_gavel_throughputs, reference_gpu,
    single_gpu_models,
)
from schedopt.traces.philly import PhillyTrace, read_philly, read_philly_deadlines
from schedopt.traces.synthetic import gavel_duration, gavel_scale_factor, synthetic_trace

__all__ = [
    "PhillyTrace", "gavel_cluster", "gavel_duration", "gavel_performance", "gavel_scale_factor",
    "label", "load_performance", "parse_gpu_map", "parse_label", "read_gavel_throughputs",
    "read_gavel_trace", "read_philly", "read_philly_deadlines", "reference_gpu", "single_gpu_models", "summary",
    "synthetic_trace",
]
