"""How every `schedopt` command ends when something stops it: a user's mistake is one line on
stderr and exit code 2; Ctrl-C and SIGTERM are one line saying what was done and exit code 130
or 143 (`schedopt.cli.interrupts`)."""

from __future__ import annotations

import sys
import warnings

import click

from schedopt.cli import interrupts
from schedopt.errors import SchedoptError

EXIT_USER_ERROR = 2


def fail(message: str) -> None:
    """Print `error: message` (one line) on stderr and exit with EXIT_USER_ERROR."""
    from schedopt.cli.render import printable

    click.echo(f"error: {printable(message.replace(chr(10), ' '))}", err=True)
    sys.exit(EXIT_USER_ERROR)


def one_line_warnings() -> None:
    """Print warnings (deprecations) as one `warning: ...` line on stderr, for the console
    script only (test runners keep their own warning capture)."""
    warnings.showwarning = _one_line_warning


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    from schedopt.cli.render import printable

    text = printable(str(message).replace(chr(10), " "))
    click.echo(f"warning: {text}", err=True)


class OneLineErrors(click.Group):
    """schedopt's own errors (SchedoptError) become one line on stderr and exit code 2, also
    when a group runs on its own, as in tests."""

    def invoke(self, ctx):
        interrupts.install()
        try:
            return super().invoke(ctx)
        except SchedoptError as exc:
            fail(str(exc))
        except KeyboardInterrupt as exc:
            interrupts.exit_interrupted(exc)
