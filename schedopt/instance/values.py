"""Recognising and rendering document values and paths, shared by `validate` and `checks`."""

from __future__ import annotations

import math
import re

Path = tuple[str | int, ...]
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_\-/]+")


def is_number(x: object) -> bool:
    """A finite JSON number: int or float, not bool, not NaN/inf, representable as a float."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    return math.isfinite(x) if isinstance(x, float) else abs(x) <= 2**1023


def is_integer(x: object) -> bool:
    """A JSON integer: an int, or a float with no fractional part (as JSON Schema defines it)."""
    return is_number(x) and float(x).is_integer()


def format_path(path: Path) -> str:
    """('jobs', 3, 'throughput', 'k80') -> 'jobs[3].throughput.k80'; odd keys are quoted."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def show(x: object) -> str:
    """A short one-line rendering of a document value, JSON-flavoured, for messages."""
    if x is None or isinstance(x, bool):
        return {None: "null", True: "true", False: "false"}[x]
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    if isinstance(x, int) and x.bit_length() > 64:
        return f"an integer of about {int(x.bit_length() * math.log10(2)) + 1} digits"
    if isinstance(x, dict):
        return "a mapping" if x else "an empty mapping"
    if isinstance(x, list):
        return f"a list of {len(x)} item(s)" if x else "an empty list"
    if isinstance(x, (int, float, str)):
        text = repr(x)
        return text if len(text) <= 60 else text[:57] + "..."
    return f"a {type(x).__name__}"
