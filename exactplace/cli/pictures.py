"""``--plot FILE``: a picture of the result, checked before any work and written like every other output."""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from exactplace.core.errors import ParameterError
from exactplace.io.paths import STDIO, check_output, same_file, write_output

#: The picture formats ``--plot`` writes, by file suffix.
FORMATS = (".png", ".svg", ".pdf")


def check_plot(path: str | None, inputs: Iterable[str], out: str | None = None) -> None:
    """Refuse a ``--plot`` path before any work: a format we do not write, an input, ``--out``'s file."""
    if path is None:
        return
    if path == STDIO:
        raise ParameterError("--plot - is not supported: give a file name ending in .png, .svg or .pdf.")
    if Path(path).suffix.lower() not in FORMATS:
        raise ParameterError(f"--plot {path!r}: the name must end in .png, .svg or .pdf (the picture's format).")
    if out is not None and out != STDIO and same_file(path, out):
        raise ParameterError(f"--plot {path!r} is also --out; give each its own file.")
    check_output(path, inputs, flag="--plot")
    from exactplace.plot.style import pyplot

    pyplot()  # matplotlib missing: say so now, not after a long solve


def save_figure(figure: Any, path: str) -> None:
    """Render ``figure`` in the format its suffix names, then write it atomically."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format=Path(path).suffix.lower()[1:], dpi=100)
    write_output(path, buffer.getvalue())
