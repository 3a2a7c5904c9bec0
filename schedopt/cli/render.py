"""Plain-text tables for people; the CLI prints JSON for machines instead with --json."""

from __future__ import annotations

import re

from schedopt.result import Result

# C0/C1 controls, DEL, and the bidirectional marks, embeddings, overrides and isolates that can
# make a terminal show text in another order than it is.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: object) -> str:
    """`text` as a table shows it: control and bidirectional characters escaped as \\uXXXX
    (JSON output keeps every id exactly)."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", str(text))


def table(headers: list[str], rows: list[list[str]]) -> str:
    """Left-aligned text columns separated by two spaces, with a rule under the header; cells
    pass through `printable`."""
    cells = [[printable(c) for c in row] for row in [headers, *rows]]
    widths = [max(len(cell) for cell in column) for column in zip(*cells)]
    line = lambda row: "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
    return "\n".join([line(cells[0]), line(["-" * w for w in widths]), *map(line, cells[1:])])


def number(value: float | None, digits: int = 6) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def summary(result: Result, objective_meaning: str) -> str:
    """The header block: policy, status, objective and its meaning, bound, solver, time."""
    lines = [
        f"policy     {result.policy}",
        f"status     {result.status.value}",
        f"objective  {number(result.objective)}   ({objective_meaning})",
        f"bound      {number(result.bound)}",
        f"solver     {result.solver}   {result.solve_seconds:.3f} s",
    ]
    if result.details.get("termination"):
        lines.append(f"solver says {result.details['termination']}")
    if "pop" in result.details:
        pop = result.details["pop"]
        line = (f"POP        {pop['k']} parts ({pop['method']}, {pop['executor']}): "
                f"{pop['wall_seconds']:.3f} s wall, slowest part {pop['max_part_seconds']:.3f} s")
        if "gap" in pop:
            line += (f"; exact {number(pop['exact_objective'])} in {pop['exact_seconds']:.3f} s, "
                     f"gap {100 * pop['gap']:.3f}%")
        lines.append(line)
    if result.details.get("infeasible_slos"):
        lines.append(f"SLOs that cannot be met: {', '.join(result.details['infeasible_slos'])}")
    return "\n".join(lines)


def allocation_table(result: Result, max_rows: int) -> str:
    """Per job: time fraction on each GPU type and effective throughput (steps/s)."""
    if result.X is None:
        return "(no allocation)"
    shown = min(max_rows, len(result.job_ids))
    thr = result.effective_rates
    rows = [[job, *(f"{x:.4f}" for x in result.X[m]), f"{thr[m]:.4g}"]
            for m, job in enumerate(result.job_ids[:shown])]
    text = table(["job", *result.gpu_types, "steps/s"], rows)
    if shown < len(result.job_ids):
        text += f"\n... {len(result.job_ids) - shown} more jobs (use --max-rows, --json or --output)"
    return text


def queue_table(result: Result, max_rows: int) -> str:
    """Schedule policies (allox): per machine with jobs, its queue in run order and when it
    finishes; average JCT and jobs left waiting above it."""
    details = result.details
    schedule = details["schedule"]
    lines = [f"average JCT {number(details['average_jct'])} s over {len(schedule)} jobs"]
    if details.get("waiting"):
        lines.append(f"waiting (not in this matching): {', '.join(details['waiting'])}")
    busy = [(machine, jobs) for machine, jobs in details["queues"].items() if jobs]
    rows = [[machine, ", ".join(jobs), f"{schedule[jobs[-1]]['completion']:.6g}"]
            for machine, jobs in busy[:max_rows]]
    lines += ["", table(["machine", "jobs in run order", "done at (s)"], rows)]
    if len(busy) > max_rows:
        lines.append(f"... {len(busy) - max_rows} more machines (use --max-rows, --json or --output)")
    return "\n".join(lines)


def lease_table(result: Result, max_rows: int) -> str:
    """Lease policies (chronus): per job, its class, the leases it holds (0 = the next one) and
    whether it runs in the next lease; the gap and pool above it."""
    d = result.details
    admitted, rejected, running = set(d["admitted"]), set(d["rejected"]), set(d["running"])
    lines = [f"{d['gpus']} {d['gpu_type']} GPUs, leases of {d['lease_seconds']:g} s, sigma "
             f"{d['sigma']:+g}, gap {number(d['gap'], 3)}"
             + (" (latest-fit fallback: the solver found no plan)" if d["used_fallback"] else "")]

    def kind(job):
        return "admitted" if job in admitted else "SLO, not admitted" if job in rejected else "best effort"

    rows = [[job, kind(job), " ".join(map(str, d["leases"].get(job, []))) or "-",
             "yes" if job in running else "no"] for job in result.job_ids[:max_rows]]
    lines += ["", table(["job", "class", "leases", "runs next lease"], rows)]
    if len(result.job_ids) > max_rows:
        lines.append(f"... {len(result.job_ids) - max_rows} more jobs (use --max-rows, --json or --output)")
    return "\n".join(lines)


def parameter_server_table(result: Result, max_rows: int) -> str:
    """Parameter-server policies (smd, smd_exact, baselines): per job, its workers, PSs,
    completion time and where its tasks run (machine: workers w + PSs p)."""
    d = result.details
    if "placement" not in d:
        return "(no placement: " + str(d.get("reason") or d.get("termination") or result.status.value) + ")"
    ids = list(d["workers"])
    lines = [f"{sum(d['workers'].values())} workers and {sum(d['ps'].values())} PSs for {len(ids)} "
             f"jobs on {len(d['machines'])} machines; sum of completion times "
             f"{number(result.objective)} s"]

    def where(job):
        return ", ".join(f"{m} {c['workers']}w+{c['ps']}p" for m, c in d["placement"][job].items())

    rows = [[job, str(d["workers"][job]), str(d["ps"][job]), f"{d['completion_time_s'][job]:.6g}",
             where(job)] for job in ids[:max_rows]]
    lines += ["", table(["job", "workers", "PSs", "completion (s)", "machines"], rows)]
    if len(ids) > max_rows:
        lines.append(f"... {len(ids) - max_rows} more jobs (use --max-rows, --json or --output)")
    return "\n".join(lines)


def decision_table(result, kind, max_rows: int) -> str:
    """The table for the policy's decision kind (`schedopt.core.decisions.DecisionKind`)."""
    from schedopt.core.decisions import DecisionKind

    if kind is DecisionKind.QUEUES:
        return queue_table(result, max_rows)
    if kind is DecisionKind.LEASES:
        return lease_table(result, max_rows)
    if kind is DecisionKind.PS_CONFIGURATION:
        return parameter_server_table(result, max_rows)
    return allocation_table(result, max_rows)


HOUR = 3600.0

# Lease runs: (summary key, label, significant digits), one row each.
LEASE_METRICS = (("slo_miss_ratio", "SLO miss ratio", 4),
                 ("value_weighted_miss", "value-weighted miss", 4),
                 ("best_effort_average_jct_s", "best-effort avg JCT (s)", 6),
                 ("average_jct_s", "avg JCT (s)", 6), ("makespan_s", "makespan (s)", 6),
                 ("preemptions", "preemptions", 6), ("admitted", "admitted", 6),
                 ("utilization", "utilization", 4), ("milp_gap_max", "max MILP gap", 3),
                 ("decide_seconds_mean", "decide s (mean)", 3))


def allocation_run_rows(summary: dict) -> list[list[str]]:
    """An allocation run's summary: JCT and makespan in hours, fairness, cost, solves,
    utilization per GPU type."""
    rows = [["jobs", str(summary["jobs"])]]
    for key in ("average_jct_s", "p50_jct_s", "p90_jct_s", "p99_jct_s", "makespan_s"):
        value = summary[key]
        rows.append([key[:-2] + " (h)", "-" if value is None else f"{value / HOUR:.3f}"])
    for key in ("rho_min", "rho_median", "rho_max", "deadline_miss_ratio", "cost_dollars",
                "policy_solves", "solve_seconds_mean", "solve_seconds_max"):
        rows.append([key, number(summary[key], 4)])
    rows += [[f"utilization {t}", f"{u:.3f}"] for t, u in summary["utilization"].items()]
    return rows


def lease_run_rows(summaries: list[dict]) -> list[list[str]]:
    """Lease runs side by side: one row per metric, one column per run."""
    return [[label, *(number(s[key], digits) for s in summaries)]
            for key, label, digits in LEASE_METRICS]


def queue_run_rows(summary: dict) -> list[list[str]]:
    """A queue run's summary (seconds): JCT, per-user JCT, Jain's indices, utilization."""
    rows = [["jobs", str(summary["jobs"])]]
    for key in ("average_jct_s", "p50_jct_s", "p90_jct_s", "p99_jct_s", "makespan_s",
                "max_user_average_jct_s"):
        rows.append([key, number(summary[key], 6)])
    rows += [[f"average_jct_s user {user}", f"{value:.6g}"]
             for user, value in summary["user_average_jct_s"].items()]
    for key in ("jain_share", "jain_user_jct", "utilization_gpu", "utilization_cpu"):
        rows.append([key, number(summary[key], 4)])
    rows += [["decisions", str(summary["decisions"])],
             ["solve_seconds_mean", number(summary["solve_seconds_mean"], 3)]]
    return rows


def simulation_rows(kind: str, summary: dict) -> list[list[str]]:
    """The metric/value rows of one simulation run of a policy of decision `kind`."""
    if kind == "leases":
        return lease_run_rows([summary])
    if kind == "queues":
        return queue_run_rows(summary)
    return allocation_run_rows(summary)
