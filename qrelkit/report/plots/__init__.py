"""Figures of the audit, FD and NRG (matplotlib Figure objects, never pyplot)."""

from __future__ import annotations

from pathlib import Path

from qrelkit.io.files import OutputPathError


def check_plot_path(path: str | Path) -> Path:
    """``path`` when its suffix names a format matplotlib writes (it picks the format by the suffix);
    an OutputPathError naming the formats otherwise, before any work is done for the figure."""
    from matplotlib.backend_bases import FigureCanvasBase

    path = Path(path)
    formats = FigureCanvasBase.get_supported_filetypes()
    if path.suffix.lower().lstrip(".") not in formats:
        kind = f"a {path.suffix!r} file" if path.suffix else "a file name with no suffix"
        shown = ", ".join(f".{name}" for name in sorted(formats))
        raise OutputPathError(f"cannot draw {path}: {kind} is no figure format; name the plot with one of {shown}")
    return path
