"""The `schedopt` console script. Signal handling is installed before the command's modules are
imported, so Ctrl-C or SIGTERM at any moment after start-up ends with exit code 130 or 143 and
one line, never a traceback; once the command is done, late signals are ignored, so the
interpreter's shutdown cannot be killed half-way either, and the process ends without tearing
down its modules (`interrupts.end_process`)."""

from __future__ import annotations

import signal
import sys

import click

from schedopt.cli import interrupts


def run() -> None:
    interrupts.install()
    interrupts.redeliver_swallowed_interrupts()
    try:
        try:
            try:
                from schedopt.cli.errors import one_line_warnings
                from schedopt.cli.main import main

                one_line_warnings()
                _run_click(main)
            finally:
                # Ignored (not default) dispositions survive the interpreter's shutdown.
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
        except KeyboardInterrupt as exc:
            interrupts.exit_interrupted(exc)
        except Exception as exc:
            cause = interrupts.interrupt_behind(exc)
            if cause is None:
                raise
            interrupts.exit_interrupted(cause)
    except SystemExit as exc:
        interrupts.end_process_if_interrupted()
        interrupts.end_process(exc.code)
        raise


def _run_click(group: click.Group) -> None:
    """click's standalone mode, except that Ctrl-C anywhere (also while click parses the
    arguments or closes the context, outside any command) is reported as an interrupt rather
    than click's own "Aborted!" and exit code 1."""
    try:
        code = group.main(standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):
            raise exc.__cause__ from None
        click.echo("Aborted!", err=True)
        sys.exit(1)
    # Without standalone mode click returns the command's value, or the code of ctx.exit(code).
    sys.exit(code if isinstance(code, int) and not isinstance(code, bool) else 0)
