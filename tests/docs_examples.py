"""Runs the examples of the documentation (README.md and docs/**/*.md), so that they cannot drift
from the code.

Every fenced block marked `bash` or `python` is an example and is run, unless the line before it
is an HTML comment `<!-- not run: REASON -->` (an install command, a benchmark that takes an hour,
a fragment of a longer program); the reason is required. The blocks of one page run in order in
one scratch directory that holds links to the repository's `instances/`, `examples/` and
`notebooks/`, so a page may create a file in one block and use it in the next. Bash blocks run
with `set -euo pipefail`; the Python blocks of a page run in one interpreter, one after another,
sharing their names, as a reader would type them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINKED = ("instances", "examples", "notebooks")
FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$",
                   re.S | re.M)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>[^>]*?)\s*-->\s*$")


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    lang: str  # "bash" or "python"
    code: str
    skip_reason: str | None  # the page's `not run` reason, or None when it runs

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page}:{self.line}"


def examples(page: Path) -> list[Example]:
    """The bash and python blocks of one Markdown page, in order."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        lang = {"sh": "bash", "shell": "bash", "py": "python"}.get(match["lang"], match["lang"])
        if lang not in ("bash", "python"):
            continue
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = NOT_RUN.search(before)
        if marker is not None and not marker["reason"]:
            raise ValueError(f"{page}: a `not run` marker without a reason")
        indent = len(match["indent"])
        body = "\n".join(line[indent:] for line in match["body"].splitlines())
        found.append(Example(page, text[:match.start()].count("\n") + 2, lang, body,
                             marker["reason"] if marker else None))
    return found


def documentation_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def scratch_directory(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        if not (path / name).exists():
            (path / name).symlink_to(ROOT / name, target_is_directory=True)
    return path


PYTHON_SESSION = """
import sys
namespace = {"__name__": "__main__"}
for index, (where, code) in enumerate(BLOCKS):
    try:
        exec(compile(code, where, "exec"), namespace)
    except BaseException:
        print(f"example {where} failed", file=sys.stderr)
        raise
"""


def run_page(page_examples: list[Example], directory: Path, timeout: float = 600.0
             ) -> subprocess.CompletedProcess | None:
    """Run a page's examples (those without a `not run` marker) in `directory`; the first
    failing one makes the returned process's returncode non-zero and its stderr names it."""
    env = {**os.environ, "MPLBACKEND": "Agg", "NO_MKDOCS_2_WARNING": "1"}
    pending_python: list[tuple[str, str]] = []

    def flush_python():
        if not pending_python:
            return None
        script = f"BLOCKS = {pending_python!r}\n" + PYTHON_SESSION
        pending_python.clear()
        return subprocess.run([sys.executable, "-c", script], cwd=directory, env=env,
                              capture_output=True, text=True, timeout=timeout)

    for example in page_examples:
        if example.skip_reason is not None:
            continue
        if example.lang == "python":
            pending_python.append((example.where, example.code))
            continue
        done = flush_python()
        if done is not None and done.returncode != 0:
            return done
        done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + example.code],
                              cwd=directory, env=env, capture_output=True, text=True,
                              timeout=timeout)
        if done.returncode != 0:
            done.stderr = f"example {example.where} failed\n{done.stderr}"
            return done
    return flush_python()
