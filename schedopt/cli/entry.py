"""The `schedopt` console script. Signal handling is installed before the command's modules are
imported, so Ctrl-C or SIGTERM at any moment after start-up ends with exit code 130 or 143 and
one line, never a traceback; once the command is done, late signals are ignored, so the
interpreter's shutdown cannot be killed half-way either."""

from __future__ import annotations

import signal

from schedopt.cli import interrupts


def run() -> None:
    interrupts.install()
    try:
        try:
            try:
                from schedopt.cli.errors import one_line_warnings
                from schedopt.cli.main import main

                one_line_warnings()
                main()
            finally:
                # Ignored (not default) dispositions survive the interpreter's shutdown.
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
        except KeyboardInterrupt as exc:
            interrupts.exit_interrupted(exc)
    except SystemExit:
        interrupts.end_process_if_interrupted()
        raise
