"""`python -m schedopt.cli`: the `schedopt` command (see `schedopt.cli.entry`)."""

from schedopt.cli.entry import run

run()
