"""Writing files safely: every file schedopt produces goes through `write_atomically`.

The content is written to a temporary file in the target's directory, flushed and fsynced, then
renamed over the target in one step, so an interrupt, a full disk or a crash leaves either the
old file or the new one, never a truncated file. `check_output` checks a target up front (its
directory exists and is writable, it is not a directory, and it is not one of the command's
inputs), so a command can refuse before any work starts.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Iterable

from schedopt.errors import OutputError


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def check_output(path: str | os.PathLike, inputs: Iterable[str | os.PathLike] = (),
                 what: str = "output") -> Path:
    """`path` as a Path, or OutputError (one line: the path and the reason) when it cannot be
    written: its directory is missing or not writable, it is a directory, or it is one of
    `inputs` (writing it would destroy an input of the same command)."""
    target = Path(path)
    for source in inputs:
        if source is not None and _same_file(target, Path(source)):
            raise OutputError(f"{target}: refusing to write the {what} over an input of the same "
                              f"command; choose another file")
    if target.is_dir():
        raise OutputError(f"{target}: is a directory; expected a file path for the {what}")
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise OutputError(f"{target}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputError(f"{target}: directory {directory} is not writable")
    if target.exists() and not os.access(target, os.W_OK):
        raise OutputError(f"{target}: file is not writable")
    return target


def write_atomically(path: str | os.PathLike,
                     content: str | bytes | list | Callable[[Path], None],
                     inputs: Iterable[str | os.PathLike] = (), what: str = "output") -> Path:
    """Write `content` (text, bytes, a list of bytes-like pieces written one after another, or
    a function that writes a file at the Path it is given, e.g. `lambda p: frame.to_csv(p)`)
    to `path` atomically; returns the path. OutputError (one line) when the target cannot be
    written; the target is untouched on any failure."""
    target = check_output(path, inputs, what)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial",
                                         dir=directory)
    except OSError as exc:
        raise OutputError(f"{target}: could not write the {what} ({exc.strerror or exc})") from None
    temp = Path(temporary)
    try:
        if callable(content):
            os.close(fd)
            content(temp)
            with open(temp, "rb+") as handle:
                os.fsync(handle.fileno())
        else:
            pieces = content if isinstance(content, list) else \
                [content.encode("utf-8") if isinstance(content, str) else content]
            with os.fdopen(fd, "wb") as handle:
                for piece in pieces:
                    handle.write(piece)
                handle.flush()
                os.fsync(handle.fileno())
        if target.exists():
            os.chmod(temp, target.stat().st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, target)
    except OSError as exc:
        raise OutputError(f"{target}: could not write the {what} ({exc.strerror or exc})") from None
    finally:
        if temp.exists():
            temp.unlink()
    _sync_directory(directory)
    return target


def _sync_directory(directory: Path) -> None:
    """Make the rename itself durable (where the platform allows opening a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
