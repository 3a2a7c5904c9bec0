"""The MILP of `smd_exact` (docs/smd.md), stated with the modelling layer (`schedopt.modeling`);
`smd_exact` solves it whole, `smd`'s feasibility repair with every configuration fixed
(`schedopt.policies.smd.repair`).

With each job's (w, p) configurations enumerated (`SmdProblem.configurations`, dominated ones
left out), T_ik = T_i(w_k, p_k) is a constant, so the objective is linear:

    min  sum_{i,k} T_ik z_ik
    s.t. sum_k z_ik = 1                                    "one": every job one configuration
         sum_h x_ih = sum_k w_k z_ik,  sum_h y_ih = sum_k p_k z_ik     "workers", "ps"
         sum_i a_ir x_ih + b_ir y_ih <= C_hr               "capacity": machine h, resource r
         sum_{i,k} d_ikr z_ik <= sum_h C_hr                "totals" (implied; see below)
         z binary (0 on padding); x_ih, y_ih integer >= 0 (workers / PSs of job i on machine h)

Capacity rows are written only for resources some task asks for on machines with a finite
capacity. What makes binding instances faster (docs/smd.md, "smd_exact"):
- bounds: x_ih <= min(the most workers any of job i's configurations has, what machine h holds
  of job i's workers alone), y likewise;
- "totals": the cluster totals stated on z alone (d_ikr: configuration k's demand), which the
  LP implies but which lets the solver derive knapsack cuts on the configuration choice;
- symmetry breaking: machines with equal capacities are ordered by a load (their tasks'
  summed shares of the cluster), "machine_order"; jobs with equal data by configuration index,
  "job_order" (any solution maps to one that satisfies both by permuting machines / jobs);
- a MIP start (`SolveOptions.start`, a hint for cpsat and scip) from `smd`, its identical
  machines and identical jobs permuted first so that it satisfies the symmetry rows (a hint
  that violates them is one the solver has to repair before it can use it).
Every column is integer, so CP-SAT takes it (the objective coefficients, seconds, stay floats:
CP-SAT scales them itself, and the objective reported here is recomputed from the placement).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedopt.backends import LinearProgram
from schedopt.modeling import Model, Variable
from schedopt.policies.smd.model import Configurations, Placement, SmdProblem


@dataclass(frozen=True, eq=False)
class ExactProgram:
    """The compiled MILP and where its blocks are: z (n, K) configuration binaries, x and y
    (n, H) workers and PSs per machine (`Variable`s of the model; `lp` columns z, x, y)."""

    lp: LinearProgram
    model: Model
    z: Variable
    x: Variable
    y: Variable
    machine_groups: tuple[np.ndarray, ...] = ()  # identical machines ordered by "machine_order"
    job_groups: tuple[np.ndarray, ...] = ()  # identical jobs ordered by "job_order"
    load: tuple[np.ndarray, np.ndarray] | None = None  # (n,) cluster shares of a worker, a PS

    def start(self, cfg: Configurations, placement: Placement) -> np.ndarray | None:
        """The column vector of a placement (None when a job's (w, p) is not one of its
        configurations), with identical jobs and identical machines permuted so that it
        satisfies the symmetry rows (same objective: permuted twins have the same data)."""
        placement = self.canonical(cfg, placement)
        w, p = placement.total_workers, placement.total_ps
        match = cfg.valid & (cfg.workers == w[:, None]) & (cfg.ps == p[:, None])
        if not match.any(axis=1).all():
            return None
        values = np.zeros(self.lp.num_cols)
        values[self.z.columns] = match.astype(float).ravel()
        values[self.x.columns] = placement.workers.ravel()
        values[self.y.columns] = placement.ps.ravel()
        return values

    def canonical(self, cfg: Configurations, placement: Placement) -> Placement:
        """The placement with each group of identical jobs reordered by configuration index
        ("job_order") and each group of identical machines by decreasing load
        ("machine_order"); unchanged without symmetry rows."""
        workers, ps = placement.workers.copy(), placement.ps.copy()
        w, p = placement.total_workers, placement.total_ps
        match = cfg.valid & (cfg.workers == w[:, None]) & (cfg.ps == p[:, None])
        index = np.where(match.any(axis=1), match.argmax(axis=1), cfg.valid.shape[1])
        for group in self.job_groups:
            order = group[np.argsort(index[group], kind="stable")]
            workers[group], ps[group] = workers[order], ps[order]
        if self.load is not None:
            load = (workers * self.load[0][:, None] + ps * self.load[1][:, None]).sum(axis=0)
            for group in self.machine_groups:
                order = group[np.argsort(-load[group], kind="stable")]
                workers[:, group], ps[:, group] = workers[:, order], ps[:, order]
        return Placement(workers, ps)


def _groups(rows: np.ndarray) -> list[np.ndarray]:
    """Indices of equal rows, one array per group of at least two (in index order)."""
    _, inverse, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    return [np.flatnonzero(inverse == g) for g in np.flatnonzero(counts > 1)]


def exact_program(problem: SmdProblem, cfg: Configurations, symmetry: bool = True,
                  totals: bool = True) -> ExactProgram:
    """The MILP of the module docstring. symmetry=False leaves out "machine_order" and
    "job_order", totals=False the implied "totals" rows (the plain formulation)."""
    n, H = problem.num_jobs, problem.num_machines
    a, b, C = problem.worker_demand, problem.ps_demand, problem.capacity
    asked = (a > 0).any(axis=0) | (b > 0).any(axis=0)
    rows = asked[None, :] & np.isfinite(C)  # (H, R) capacity rows written
    with np.errstate(divide="ignore", invalid="ignore"):
        fit_w = np.where(a[:, None, :] > 0, C[None, :, :] / a[:, None, :], np.inf).min(axis=2)
        fit_p = np.where(b[:, None, :] > 0, C[None, :, :] / b[:, None, :], np.inf).min(axis=2)
    most_w = np.where(cfg.valid, cfg.workers, 0).max(axis=1, initial=1)
    most_p = np.where(cfg.valid, cfg.ps, 0).max(axis=1, initial=1)

    m = Model()
    z = m.variable("z", cfg.valid.shape, upper=cfg.valid.astype(float), integer=True)
    x = m.variable("x", (n, H), upper=np.minimum(np.floor(fit_w + 1e-9), most_w[:, None]),
                   integer=True)
    y = m.variable("y", (n, H), upper=np.minimum(np.floor(fit_p + 1e-9), most_p[:, None]),
                   integer=True)
    m.add("one", z.sum(axis=1) == 1)
    m.add("workers", x.sum(axis=1) == (cfg.workers * z).sum(axis=1))
    m.add("ps", y.sum(axis=1) == (cfg.ps * z).sum(axis=1))
    usage = (x[:, :, None] * a[:, None, :] + y[:, :, None] * b[:, None, :]).sum(axis=0)  # (H, R)
    if rows.any():
        m.add("capacity", usage[rows] <= C[rows])
    if totals and rows.any():
        limited = rows.all(axis=0)  # resources every machine limits
        if limited.any():
            demand = cfg.demand(problem)[:, :, limited]  # (n, K, R')
            m.add("totals", (z[:, :, None] * demand).sum(axis=(0, 1)) <= C[:, limited].sum(axis=0))
    alike, same, shares = [], [], None
    if symmetry:
        total = np.where(rows, C, 0).sum(axis=0)
        scale = np.where(total > 0, 1.0 / np.where(total > 0, total, 1.0), 0.0)
        shares = (a @ scale, b @ scale)
        load = x * shares[0][:, None] + y * shares[1][:, None]  # (n, H) shares of the cluster
        alike = _groups(np.where(np.isfinite(C), C, -1.0))
        first = np.concatenate([g[:-1] for g in alike]) if alike else np.zeros(0, int)
        second = np.concatenate([g[1:] for g in alike]) if alike else np.zeros(0, int)
        if first.size:
            m.add("machine_order", load[:, first].sum(axis=0) >= load[:, second].sum(axis=0))
        data = np.column_stack([a, b, cfg.time.reshape(n, -1), cfg.valid.reshape(n, -1)])
        data = np.where(np.isfinite(data), data, -1.0)
        same = _groups(data) if n else []
        lo = np.concatenate([g[:-1] for g in same]) if same else np.zeros(0, int)
        hi = np.concatenate([g[1:] for g in same]) if same else np.zeros(0, int)
        if lo.size:
            index = np.arange(cfg.valid.shape[1], dtype=float)
            m.add("job_order", (z[lo] * index).sum(axis=1) <= (z[hi] * index).sum(axis=1))
    m.minimize((np.where(cfg.valid, cfg.time, 0.0) * z).sum())
    return ExactProgram(m.compile(), m, z, x, y, tuple(alike), tuple(same), shares)
