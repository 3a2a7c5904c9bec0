"""The `schedopt` console script. Signal handling is installed before the command's modules are
imported, so Ctrl-C or SIGTERM at any moment after start-up ends with exit code 130 or 143 and
one line, never a traceback."""

from __future__ import annotations

from schedopt.cli import interrupts


def run() -> None:
    interrupts.install()
    try:
        from schedopt.cli.main import main

        main()
    except KeyboardInterrupt as exc:
        interrupts.exit_interrupted(exc)
