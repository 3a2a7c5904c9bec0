"""Ctrl-C and SIGTERM end a command cleanly: exit code 130 (SIGINT) or 143 (SIGTERM) and one line
saying what was done. Files are written atomically (`schedopt.files`), so an interrupt leaves
either the old file or the new one. Long commands note their progress with `progress(...)`."""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import _thread

import click

EXIT_SIGINT = 130
EXIT_SIGTERM = 143

_progress = ["nothing was written"]
_written: list[str] = []
_exit_code: list[int] = []


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, like Ctrl-C's KeyboardInterrupt."""


def progress(text: str) -> None:
    """Record what the command has done so far (shown if it is interrupted)."""
    _progress[0] = text


def wrote(path) -> None:
    """Record that the command has written the file `path` (listed if it is interrupted)."""
    _written.append(str(path))
    progress("wrote " + ", ".join(_written))


def _on_sigterm(signum, frame):
    raise Terminated()


def _redeliver_swallowed_interrupt(unraisable) -> None:
    """`sys.unraisablehook`: an interrupt raised where Python can only print and drop the
    exception (a weakref callback such as the import system's module-lock cleanup, a
    `__del__`) is delivered to the main thread again once this hook has returned, instead of
    being lost with a traceback on stderr; anything else is reported as usual.

    The signal is sent again from a short-lived thread: sent from here, its handler would run
    at once, inside this hook, whose exceptions are dropped too. A command that ends before
    the signal arrives ends as usual (late signals are ignored)."""
    exc = unraisable.exc_value
    if isinstance(exc, KeyboardInterrupt):
        signum = signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT
        _thread.start_new_thread(signal.pthread_kill, (threading.main_thread().ident, signum))
        return
    sys.__unraisablehook__(unraisable)


def install() -> None:
    """Turn SIGTERM into `Terminated` for the rest of this process (main thread only)."""
    progress("nothing was written")
    _written.clear()
    _exit_code.clear()
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (e.g. a test runner's worker thread)
        pass


def redeliver_swallowed_interrupts() -> None:
    """In the console script: an interrupt that lands in a callback whose exceptions Python
    drops counts all the same (`_redeliver_swallowed_interrupt`)."""
    sys.unraisablehook = _redeliver_swallowed_interrupt


def interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM that caused `exc`, if any: an interrupt that lands while a
    compiled extension initializes (e.g. `import highspy`) surfaces as that import's
    ImportError, with the KeyboardInterrupt as its cause."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def exit_interrupted(exc: KeyboardInterrupt) -> None:
    """Print one line and exit with 130 or 143."""
    terminated = isinstance(exc, Terminated)
    click.echo(f"interrupted ({'SIGTERM' if terminated else 'Ctrl-C'}): {_progress[0]}", err=True)
    _exit_code[:] = [EXIT_SIGTERM if terminated else EXIT_SIGINT]
    sys.exit(_exit_code[0])


def end_process_if_interrupted() -> None:
    """In the console script, after an interrupt was reported: end the process with 130 or 143
    at once. Files are already whole (partial ones are removed while the interrupt unwinds), and
    a normal interpreter shutdown after a KeyboardInterrupt may still end by SIGINT itself
    (exit status -2 instead of 130), which scripts that check the status would misread."""
    if _exit_code:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_code[0])


def end_process(code: object) -> None:
    """In the console script, once the command has ended with exit status `code` (None, or an
    int): run the atexit handlers, flush stdout and stderr, and end the process at once,
    without the interpreter's teardown of every imported module (~0.1 CPU s after a solve,
    numpy and scipy among its ~500 modules). Returns, leaving the usual shutdown to report as
    before, when the code is a message, another thread still runs, or a stream cannot be
    flushed (e.g. a closed pipe)."""
    if (code is not None and not isinstance(code, int)) or threading.active_count() > 1:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        atexit._clear()  # already run; the shutdown reports the stream as it always did
        return
    os._exit(int(code or 0) & 0xFF)
