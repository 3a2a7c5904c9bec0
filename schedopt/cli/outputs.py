"""The files commands write besides result documents: per-job CSV tables and figures.

Each target is checked before any work starts (`check_targets`: its directory exists and is
writable, it is not one of the command's inputs, a figure's suffix is a format matplotlib
writes), then written through `schedopt.files.write_atomically`, so an interrupt never leaves a
truncated file where a good one stood.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import click

from schedopt.cli import interrupts
from schedopt.errors import OutputError
from schedopt.files import check_output, write_atomically


def check_targets(inputs: Iterable[Path], csv: Path | None = None,
                  figure: Path | None = None) -> None:
    """OutputError (one line) now, before any simulation, when a target cannot be written."""
    inputs = list(inputs)
    if csv is not None:
        check_output(csv, inputs, what="CSV table")
    if figure is not None:
        check_output(figure, inputs, what="figure")
        from schedopt.plots import require_matplotlib

        require_matplotlib()
        from matplotlib.backend_bases import FigureCanvasBase

        kinds = FigureCanvasBase.get_supported_filetypes()
        if figure.suffix.lower().lstrip(".") not in kinds:
            raise OutputError(f"{figure}: unknown image suffix {figure.suffix!r}; use one of "
                              + ", ".join(f".{k}" for k in sorted(kinds)))


def write_csv(frame, path: Path, inputs: Iterable[Path] = ()) -> None:
    """`frame.to_csv` into `path`, atomically."""
    write_atomically(path, lambda temporary: frame.to_csv(temporary), inputs, what="CSV table")
    interrupts.wrote(path)


def save_figure(figure, path: Path, inputs: Iterable[Path] = (), dpi: int = 120,
                announce: bool = True) -> None:
    """`figure.savefig` into `path` (format from its suffix), atomically; says so on stderr
    when `announce`."""
    image_format = path.suffix.lower().lstrip(".")

    def draw(temporary: Path) -> None:
        try:
            figure.savefig(temporary, dpi=dpi, format=image_format)
        except ValueError as exc:  # a format matplotlib knows but cannot write here
            raise OutputError(f"{path}: cannot write the figure: {exc}") from None

    write_atomically(path, draw, inputs, what="figure")
    interrupts.wrote(path)
    if announce:
        click.echo(f"wrote {path}", err=True)
