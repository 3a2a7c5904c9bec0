"""Plain-text tables for people; the CLI prints JSON for machines instead with --json."""

from __future__ import annotations

from schedopt.result import Result


def table(headers: list[str], rows: list[list[str]]) -> str:
    """Left-aligned text columns separated by two spaces, with a rule under the header."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


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
    if result.details.get("infeasible_slos"):
        lines.append(f"SLOs that cannot be met: {', '.join(result.details['infeasible_slos'])}")
    return "\n".join(lines)


def allocation_table(result: Result, max_rows: int) -> str:
    """Per job: time fraction on each GPU type and effective throughput (steps/s)."""
    if result.X is None:
        return "(no allocation)"
    shown = min(max_rows, len(result.job_ids))
    thr = result.effective_throughput.to_numpy()
    rows = [[job, *(f"{x:.4f}" for x in result.X[m]), f"{thr[m]:.4g}"]
            for m, job in enumerate(result.job_ids[:shown])]
    text = table(["job", *result.gpu_types, "steps/s"], rows)
    if shown < len(result.job_ids):
        text += f"\n... {len(result.job_ids) - shown} more jobs (use --max-rows, --json or --output)"
    return text
