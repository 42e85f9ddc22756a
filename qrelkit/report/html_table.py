"""The one writer of the HTML pages' tables (the audit report, the comparison page, the probes'
sections): every value escaped unless a `Cell` says it is markup already."""

from __future__ import annotations

import html
from typing import Any, NamedTuple

from qrelkit.report.text import printable


def _esc(value: Any) -> str:
    return html.escape(printable(str(value)))  # a right-to-left override in a name would reorder the page around it


class Cell(NamedTuple):
    """A cell whose tag, attributes or content the table writer is told: ``markup`` is HTML already
    escaped by its maker (spans with data attributes), any other content is escaped here."""

    content: Any
    attributes: str = ""  # as written after the tag's name: " class=n", ' title="..."'
    header: bool = False
    markup: bool = False


def html_table(
    header: list[str] | None,
    rows: list[list[Any]],
    *,
    text_columns: int = 1,
    css: str = "",
    table_id: str | None = None,
    row_classes: list[str | None] | None = None,
    style: str | None = None,
) -> str:
    """The one writer of the HTML pages' tables: every value escaped (a `Cell` says otherwise), the
    columns from ``text_columns`` on right-aligned numbers; ``header`` None: a key-value table whose
    first column heads each row."""
    attributes = (f" id={table_id}" if table_id else "") + (f" class={css}" if css else "") + (f" style='{style}'" if style else "")
    body = []
    for r, row in enumerate(rows):
        cells = [_cell(value, i, header is None, text_columns) for i, value in enumerate(row)]
        klass = row_classes[r] if row_classes is not None else None
        body.append(f"<tr{f' class={klass}' if klass else ''}>{''.join(cells)}</tr>")
    head = "" if header is None else "<thead><tr>" + "".join(f"<th>{_esc(h)}</th>" for h in header) + "</tr></thead>"
    return f"<table{attributes}>{head}<tbody>{''.join(body)}</tbody></table>"


def _cell(value: Any, column: int, key_value: bool, text_columns: int) -> str:
    if isinstance(value, Cell):
        tag = "th" if value.header else "td"
        return f"<{tag}{value.attributes}>{value.content if value.markup else _esc(value.content)}</{tag}>"
    if key_value:
        return f"<th>{_esc(value)}</th>" if column == 0 else f"<td>{_esc(value)}</td>"
    return f"<td{'' if column < text_columns else ' class=n'}>{_esc(value)}</td>"
