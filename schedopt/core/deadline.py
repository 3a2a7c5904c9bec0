"""How a time limit becomes a deadline: a `time.perf_counter()` value that multi-solve
algorithms (the decomposition, water filling, bisections, matchings) check between their
steps, returning their best answer so far once it has passed. None means no limit."""

from __future__ import annotations

import time


def deadline_after(seconds: float | None, start: float | None = None) -> float | None:
    """The deadline `seconds` after `start` (default: now); None without a limit."""
    if seconds is None:
        return None
    return (time.perf_counter() if start is None else start) + seconds


def seconds_left(deadline: float | None) -> float | None:
    """Seconds until `deadline` (negative once passed); None without one."""
    return None if deadline is None else deadline - time.perf_counter()


def is_past(deadline: float | None) -> bool:
    """Whether `deadline` has passed (never, without one)."""
    return deadline is not None and time.perf_counter() >= deadline
