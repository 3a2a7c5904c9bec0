"""Ctrl-C and SIGTERM end a command cleanly: exit code 130 (SIGINT) or 143 (SIGTERM) and one line
saying what was done. Files are written atomically (`schedopt.files`), so an interrupt leaves
either the old file or the new one. Long commands note their progress with `progress(...)`."""

from __future__ import annotations

import signal
import sys

import click

EXIT_SIGINT = 130
EXIT_SIGTERM = 143

_progress = ["nothing was written"]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, like Ctrl-C's KeyboardInterrupt."""


def progress(text: str) -> None:
    """Record what the command has done so far (shown if it is interrupted)."""
    _progress[0] = text


def _on_sigterm(signum, frame):
    raise Terminated()


def install() -> None:
    """Turn SIGTERM into `Terminated` for the rest of this process (main thread only)."""
    progress("nothing was written")
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (e.g. a test runner's worker thread)
        pass


def exit_interrupted(exc: KeyboardInterrupt) -> None:
    """Print one line and exit with 130 or 143."""
    terminated = isinstance(exc, Terminated)
    click.echo(f"interrupted ({'SIGTERM' if terminated else 'Ctrl-C'}): {_progress[0]}", err=True)
    sys.exit(EXIT_SIGTERM if terminated else EXIT_SIGINT)
