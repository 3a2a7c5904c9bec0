"""How every `schedopt` command reports a user's mistake: one line on stderr, exit code 2."""

from __future__ import annotations

import sys

import click

from schedopt.errors import SchedoptError

EXIT_USER_ERROR = 2


def fail(message: str) -> None:
    """Print `error: message` (one line) on stderr and exit with EXIT_USER_ERROR."""
    click.echo(f"error: {message.replace(chr(10), ' ')}", err=True)
    sys.exit(EXIT_USER_ERROR)


class OneLineErrors(click.Group):
    """schedopt's own errors (SchedoptError) become one line on stderr and exit code 2, also
    when a group runs on its own, as in tests."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except SchedoptError as exc:
            fail(str(exc))
