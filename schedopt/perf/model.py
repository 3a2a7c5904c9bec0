"""The performance model as a matrix: job types x configurations, steps/s, with a known-mask.

A *configuration* is where a job of a type runs: a GPU type alone (its isolated throughput,
`performance.throughput[type][gpu]`), or a GPU type shared with a job of another type, the
*partner* (this job's own steps/s in that pair, one side of a `performance.colocated` entry).
Columns come in that order: the J GPU types, then J x P pair columns, GPU-major:

    column(g)            = g                     isolated steps/s on GPU type g
    column(g, partner p) = J + g * P + p         steps/s while sharing type g with p

Units: steps per second of one job on its `scale_factor` GPUs, as in the instance format.
`values` is NaN where nothing is known; `known` marks measured entries (a completed model also
holds estimates: finite values where `known` is False); `uncertainty` is the spread of an
estimate in log steps/s (see `schedopt.perf.completion`), NaN where there is none.

A measured 0 is a measurement, never "unknown": 0 steps/s alone means the job type cannot run
on that GPU type, and a pair measured at [0, 0] means the two job types cannot share it (Gavel
stores 6,576 such pair entries, every multi-GPU pair among them).

Which cells exist (`applicable`): every isolated cell, and every measured pair cell; a pair cell
nobody measured exists only between job types that can be partners (those named in some
colocated entry) of the same scale factor (two jobs share GPUs only when they use as many; the
scale factor is read from the label, '<model> x<s>', see instances/README.md), and not on a GPU
type where either job is measured at 0 steps/s alone (a job that cannot run there cannot share
it either). Cells that do not exist are not "missing": completion leaves them alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from schedopt.instance.model import Colocation, Performance, frozen_map
from schedopt.traces.performance import parse_label

Configuration = tuple[str, "str | None"]  # (GPU type, partner job type or None)


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a)  # a private copy, so the caller's array can change without touching ours
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class PerformanceModel:
    """Steps/s of each job type (rows) in each configuration (columns); see the module doc.

    job_types: row labels; gpu_types: the GPU types (first J columns); partners: the job types
    of the pair columns (each must also be a row); values: (R, C) steps/s, NaN = unknown;
    known: (R, C) bool, measured entries; uncertainty: (R, C) sd of log steps/s of estimates
    (None when nothing was estimated); unconsolidated: `performance.unconsolidated`, carried
    through by completion (`schedopt.perf.spread` fills it in `predict`); unconsolidated_estimated:
    {(job type, GPU type): sd of log steps/s, NaN when none}, the entries of `unconsolidated`
    that are estimates rather than measurements; unconsolidated_pairs: {(type a, type b, GPU
    type): (a's, b's steps/s)}, the colocated entries' `unconsolidated` rates, carried through
    unchanged; name: free text.
    """

    job_types: tuple[str, ...]
    gpu_types: tuple[str, ...]
    partners: tuple[str, ...]
    values: np.ndarray
    known: np.ndarray
    uncertainty: np.ndarray | None = None
    unconsolidated: Mapping[str, Mapping[str, float]] = field(default_factory=frozen_map)
    name: str | None = None
    unconsolidated_pairs: Mapping[tuple[str, str, str], tuple[float, float]] = field(
        default_factory=frozen_map)
    unconsolidated_estimated: Mapping[tuple[str, str], float] = field(default_factory=frozen_map)

    def __post_init__(self):
        shape = (len(self.job_types), len(self.gpu_types) * (1 + len(self.partners)))
        object.__setattr__(self, "values", _readonly(np.asarray(self.values, dtype=float)))
        object.__setattr__(self, "known", _readonly(np.asarray(self.known, dtype=bool)))
        if self.uncertainty is not None:
            object.__setattr__(self, "uncertainty", _readonly(np.asarray(self.uncertainty, dtype=float)))
        for what in ("values", "known", "uncertainty"):
            a = getattr(self, what)
            if a is not None and a.shape != shape:
                raise ValueError(f"{what} has shape {a.shape}, expected {shape}")
        if len(set(self.job_types)) != len(self.job_types) or len(set(self.gpu_types)) != len(self.gpu_types):
            raise ValueError("job types and GPU types must be unique")
        if not set(self.partners) <= set(self.job_types):
            raise ValueError("every partner must also be a job type (a row)")
        if np.any(self.known & ~np.isfinite(self.values)):
            raise ValueError("a known entry must have a finite value")
        if np.any(np.isfinite(self.values) & (self.values < 0)):
            raise ValueError("steps/s must be >= 0")
        for t, gpu in self.unconsolidated_estimated:
            if gpu not in self.unconsolidated.get(t, {}):
                raise ValueError(f"estimated unconsolidated rate of {t!r} on {gpu!r} has no value")

    # -- shape -------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape

    def column(self, gpu_type: str, partner: str | None = None) -> int:
        """Column index of a configuration."""
        g = self.gpu_types.index(gpu_type)
        if partner is None:
            return g
        return len(self.gpu_types) + g * len(self.partners) + self.partners.index(partner)

    @property
    def configurations(self) -> tuple[Configuration, ...]:
        """(GPU type, None) for the isolated columns, then (GPU type, partner) per pair column."""
        return tuple((g, None) for g in self.gpu_types) + tuple(
            (g, p) for g in self.gpu_types for p in self.partners)

    @property
    def column_gpu(self) -> np.ndarray:
        """(C,) index of each column's GPU type."""
        J, P = len(self.gpu_types), len(self.partners)
        return np.concatenate([np.arange(J), np.repeat(np.arange(J), P)])

    @property
    def pair_rows(self) -> np.ndarray:
        """(P,) row index of each partner."""
        index = {t: r for r, t in enumerate(self.job_types)}
        return np.array([index[p] for p in self.partners], dtype=np.int64)

    @property
    def scale_factors(self) -> np.ndarray:
        """(R,) int: each job type's scale factor (GPUs per job), read from its label."""
        return np.array([parse_label(t)[1] for t in self.job_types], dtype=np.int64)

    @property
    def applicable(self) -> np.ndarray:
        """(R, C) bool: cells that exist (module doc): every isolated cell and every measured
        pair cell; an unmeasured pair cell only between partners of the same scale factor, and
        not on a GPU type where either job of the pair is measured at 0 steps/s alone."""
        J, P = len(self.gpu_types), len(self.partners)
        mask = np.zeros(self.shape, dtype=bool)
        mask[:, :J] = True
        rows = self.pair_rows
        cannot = self.known[:, :J] & (self.values[:, :J] == 0)  # (R, J)
        pair = ~cannot[rows][:, :, None] & ~cannot[rows].T[None, :, :]  # (P rows, J, P partners)
        s = self.scale_factors[rows]
        pair &= (s[:, None] == s[None, :])[:, None, :]
        mask[rows, J:] = pair.reshape(P, J * P)
        return mask | self.known

    @property
    def is_pair(self) -> np.ndarray:
        """(C,) bool: True for pair columns."""
        return np.arange(self.shape[1]) >= len(self.gpu_types)

    @property
    def missing(self) -> np.ndarray:
        """(R, C) bool: applicable cells with no value (what completion fills)."""
        return self.applicable & ~np.isfinite(self.values)

    @property
    def estimated(self) -> np.ndarray:
        """(R, C) bool: cells holding an estimate rather than a measurement."""
        return np.isfinite(self.values) & ~self.known

    def transpose_index(self) -> np.ndarray:
        """(R, C) flat index of each pair cell's other side (a's rate with b <-> b's rate with a),
        -1 for isolated cells and cells of non-partner rows."""
        R, C = self.shape
        J, P = len(self.gpu_types), len(self.partners)
        out = np.full((R, C), -1, dtype=np.int64)
        rows = self.pair_rows
        if P == 0:
            return out
        q, g, p = np.meshgrid(np.arange(P), np.arange(J), np.arange(P), indexing="ij")
        # cell (rows[q], J + g*P + p) <-> (rows[p], J + g*P + q)
        out[rows[q], J + g * P + p] = rows[p] * C + J + g * P + q
        return out

    def with_values(self, values: np.ndarray, uncertainty: np.ndarray | None = None,
                    known: np.ndarray | None = None) -> PerformanceModel:
        """A copy with new values (and uncertainty / known mask)."""
        return replace(self, values=values, uncertainty=uncertainty,
                       known=self.known if known is None else known)

    def hide(self, mask: np.ndarray) -> PerformanceModel:
        """A copy with the cells in `mask` unknown (NaN, not known), uncertainty dropped."""
        values = np.where(mask, np.nan, self.values)
        return replace(self, values=values, known=self.known & ~mask, uncertainty=None)

    def unconsolidated_array(self) -> tuple[np.ndarray, np.ndarray]:
        """(rates, estimated): (R, J) unconsolidated steps/s of each job type on each GPU type
        (NaN where none is given) and (R, J) bool, which of them are estimates."""
        rates = np.array([[self.unconsolidated.get(t, {}).get(g, np.nan) for g in self.gpu_types]
                          for t in self.job_types], dtype=float).reshape(len(self.job_types), -1)
        estimated = np.array([[(t, g) in self.unconsolidated_estimated for g in self.gpu_types]
                              for t in self.job_types], dtype=bool).reshape(rates.shape)
        return rates, estimated

    @property
    def unconsolidated_missing(self) -> int:
        """How many (multi-GPU job type, GPU type) have a consolidated rate above 0 and no
        unconsolidated rate (what `schedopt.perf.spread.fill_unconsolidated` fills)."""
        alone = self.values[:, :len(self.gpu_types)]
        runs = np.isfinite(alone) & (alone > 0)
        multi = (self.scale_factors > 1)[:, None]
        return int((multi & runs & np.isnan(self.unconsolidated_array()[0])).sum())

    def without_unconsolidated(self, keys) -> PerformanceModel:
        """A copy without the unconsolidated rates of `keys` ((job type, GPU type) pairs)."""
        drop = set(keys)
        rows = {t: frozen_map({g: x for g, x in row.items() if (t, g) not in drop})
                for t, row in self.unconsolidated.items()}
        return replace(self, unconsolidated=frozen_map({t: r for t, r in rows.items() if r}),
                       unconsolidated_estimated=frozen_map(
                           {k: u for k, u in self.unconsolidated_estimated.items() if k not in drop}))

    # -- rows as entries -----------------------------------------------------------------------
    def entries(self, mask: np.ndarray | None = None) -> list[dict]:
        """One dict per cell in `mask` (default: every finite cell), row-major: job_type,
        gpu_type, partner (None for isolated), steps_per_s, measured, uncertainty (sd of log
        steps/s, None where there is none), unconsolidated (False: these are matrix cells)."""
        mask = np.isfinite(self.values) if mask is None else mask & np.isfinite(self.values)
        configs = self.configurations
        out = []
        for r, c in zip(*np.nonzero(mask)):
            u = None if self.uncertainty is None else float(self.uncertainty[r, c])
            out.append({"job_type": self.job_types[r], "gpu_type": configs[c][0],
                        "partner": configs[c][1], "steps_per_s": float(self.values[r, c]),
                        "measured": bool(self.known[r, c]),
                        "uncertainty": None if u is None or not np.isfinite(u) else u,
                        "unconsolidated": False})
        return out

    def unconsolidated_entries(self, estimated_only: bool = True) -> list[dict]:
        """The unconsolidated rates (only the estimated ones by default) as `entries` dicts,
        partner None and unconsolidated True."""
        out = []
        for t, row in self.unconsolidated.items():
            for gpu, x in row.items():
                estimate = (t, gpu) in self.unconsolidated_estimated
                if estimate or not estimated_only:
                    u = self.unconsolidated_estimated.get((t, gpu), float("nan")) if estimate else 0.0
                    out.append({"job_type": t, "gpu_type": gpu, "partner": None, "steps_per_s": float(x),
                                "measured": not estimate,
                                "uncertainty": None if not np.isfinite(u) else float(u),
                                "unconsolidated": True})
        return out

    # -- to and from the instance's performance section ----------------------------------------
    @classmethod
    def from_section(cls, section: Mapping, name: str | None = None) -> PerformanceModel:
        """From a `performance` section (a dict as in the instance format: throughput,
        colocated, unconsolidated). Every value there is a measurement (`known`)."""
        throughput = section.get("throughput", {})
        pairs = list(section.get("colocated", []))
        job_types = list(dict.fromkeys([*throughput, *(t for p in pairs for t in p["types"])]))
        gpu_types = list(dict.fromkeys([*(g for row in throughput.values() for g in row),
                                        *(p["gpu_type"] for p in pairs)]))
        partners = sorted({t for p in pairs for t in p["types"]})
        R, J, P = len(job_types), len(gpu_types), len(partners)
        row = {t: r for r, t in enumerate(job_types)}
        gpu = {g: j for j, g in enumerate(gpu_types)}
        partner = {t: k for k, t in enumerate(partners)}
        values = np.full((R, J * (1 + P)), np.nan)
        for t, entries in throughput.items():
            for g, x in entries.items():
                values[row[t], gpu[g]] = float(x)
        for p in pairs:
            a, b = p["types"]
            ta, tb = (float(v) for v in p["throughput"])
            j = gpu[p["gpu_type"]]
            if a == b:
                values[row[a], J + j * P + partner[a]] = min(ta, tb)
            else:
                values[row[a], J + j * P + partner[b]] = ta
                values[row[b], J + j * P + partner[a]] = tb
        unconsolidated = {t: dict(r) for t, r in section.get("unconsolidated", {}).items()}
        loose = {(*p["types"], p["gpu_type"]): tuple(float(v) for v in p["unconsolidated"])
                 for p in pairs if p.get("unconsolidated") is not None}
        return cls(tuple(job_types), tuple(gpu_types), tuple(partners), values,
                   np.isfinite(values), None, frozen_map(unconsolidated), name, frozen_map(loose))

    @classmethod
    def from_performance(cls, performance: Performance, name: str | None = None) -> PerformanceModel:
        """From an instance's `Performance` (cpu_time, keyed by job id, is not part of it)."""
        section = {
            "throughput": {t: dict(r) for t, r in performance.throughput.items()},
            "colocated": [{"types": list(c.types), "gpu_type": c.gpu_type,
                           "throughput": list(c.throughput), "unconsolidated": c.unconsolidated}
                          for c in performance.colocated],
            "unconsolidated": {t: dict(r) for t, r in performance.unconsolidated.items()},
        }
        return cls.from_section(section, name)

    def to_section(self) -> dict:
        """The `performance` section (plain dicts): every finite isolated value in throughput,
        every pair whose two sides are finite in colocated ([0, 0] included: cannot share;
        labels sorted, each unordered pair once), unconsolidated (measured and estimated)."""
        J, P = len(self.gpu_types), len(self.partners)
        throughput = {}
        for r, t in enumerate(self.job_types):
            row = {g: float(self.values[r, j]) for j, g in enumerate(self.gpu_types)
                   if np.isfinite(self.values[r, j])}
            if row:
                throughput[t] = row
        rows = self.pair_rows
        q, p = np.triu_indices(P)  # each unordered pair once, q <= p
        colocated = []
        for j, g in enumerate(self.gpu_types):
            ta = self.values[rows[q], J + j * P + p]
            tb = self.values[rows[p], J + j * P + q]
            keep = np.flatnonzero(np.isfinite(ta) & np.isfinite(tb))
            colocated += [{"types": [self.partners[q[i]], self.partners[p[i]]], "gpu_type": g,
                           "throughput": [float(ta[i]), float(tb[i])]} for i in keep]
        for entry in colocated:
            loose = self.unconsolidated_pairs.get((*entry["types"], entry["gpu_type"]))
            if loose is not None:
                entry["unconsolidated"] = list(loose)
        section = {"throughput": throughput}
        if colocated:
            section["colocated"] = colocated
        if self.unconsolidated:
            section["unconsolidated"] = {t: dict(r) for t, r in self.unconsolidated.items()}
        return section

    def to_performance(self) -> Performance:
        """The instance's `Performance` (what every policy reads)."""
        s = self.to_section()
        return Performance(
            throughput=frozen_map({t: frozen_map(r) for t, r in s["throughput"].items()}),
            colocated=tuple(Colocation(tuple(p["types"]), p["gpu_type"], tuple(p["throughput"]),
                                       tuple(p["unconsolidated"]) if "unconsolidated" in p else None)
                            for p in s.get("colocated", [])),
            unconsolidated=frozen_map({t: frozen_map(r) for t, r in s.get("unconsolidated", {}).items()}))

    def summary(self) -> str:
        """One line: sizes and how many cells are measured, estimated and missing."""
        app = self.applicable
        iso, pair = ~self.is_pair, self.is_pair

        def count(mask, cols):
            return int((mask & app)[:, cols].sum())

        zero = self.values == 0
        spread = sum(len(r) for r in self.unconsolidated.values())
        loose = len(self.unconsolidated_estimated)
        spread_text = (f"; unconsolidated: {spread - loose} measured, {loose} estimated, "
                       f"{self.unconsolidated_missing} missing") if spread else ""
        return (f"{len(self.job_types)} job types x {len(self.gpu_types)} GPU types, "
                f"{len(self.partners)} partners; isolated: {count(self.known, iso)} measured, "
                f"{count(self.estimated, iso)} estimated, {count(self.missing, iso)} missing; "
                f"pairs: {count(self.known, pair)} measured ({count(self.known & zero, pair)} "
                f"at 0: cannot share), {count(self.estimated, pair)} estimated "
                f"({count(self.estimated & zero, pair)} at 0), {count(self.missing, pair)} missing"
                f"{spread_text}")


def model_from_arrays(job_types: Iterable[str], gpu_types: Iterable[str], isolated: np.ndarray,
                      pairs: np.ndarray | None = None, partners: Iterable[str] = (),
                      name: str | None = None) -> PerformanceModel:
    """A model from an (R, J) isolated array and optionally an (R, J, P) pair array (NaN =
    unknown; every finite value is a measurement)."""
    job_types, gpu_types, partners = tuple(job_types), tuple(gpu_types), tuple(partners)
    isolated = np.asarray(isolated, dtype=float).reshape(len(job_types), len(gpu_types))
    if pairs is None:
        pairs = np.full((len(job_types), len(gpu_types), len(partners)), np.nan)
    values = np.concatenate([isolated, np.asarray(pairs, dtype=float).reshape(len(job_types), -1)], axis=1)
    return PerformanceModel(job_types, gpu_types, partners, values, np.isfinite(values), name=name)
