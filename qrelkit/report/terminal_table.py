"""rich's table for the terminal with data kept on its line: every text cell and the title pass
through `qrelkit.report.text.one_line`, so a name holding a newline (a crafted database, a file)
never starts a new row, and a control character never drives the terminal."""

from __future__ import annotations

from typing import Any

from rich.table import Table as RichTable

from qrelkit.report.text import one_line


class Table(RichTable):
    def __init__(self, *headers: Any, title: Any = None, **options: Any):
        super().__init__(*headers, title=one_line(title) if isinstance(title, str) else title, **options)

    def add_row(self, *cells: Any, **options: Any) -> None:
        super().add_row(*(one_line(cell) if isinstance(cell, str) else cell for cell in cells), **options)
