"""Any `Document` as one self-contained HTML page: the audit report (`qrelkit report`) and the
comparison page (`qrelkit compare --html`) are two documents rendered here, with one stylesheet.

Order: the title, the lead (the answer, in sentences), the summary box (headline numbers with their
intervals, and the notes that qualify the lead), then the blocks (tables that scroll inside their
own box when wide, numbered figures as SVG data URIs, sections, folded sections as <details>), the
other notes, and a footer naming what made the page. Every value from data is escaped; the page
needs no other file, so it can be moved, mailed or attached alone.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterator, Sequence
from itertools import count, groupby
from pathlib import Path

from qrelkit.report.document import Block, Document, Estimate, Figure, Keyed, Lines, Note, Paragraph, Section, Summary, Table
from qrelkit.report.text import printable

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:1180px;margin:1rem auto;padding:0 1rem;
color:#1a1a1a;line-height:1.4}
h1{font-size:1.35rem;margin:.2rem 0 .5rem}h2{font-size:1.15rem;margin-top:1.8rem;border-bottom:1px solid #ccc;padding-bottom:.2rem}
h3{font-size:1rem}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.5rem 0}caption{text-align:left;font-weight:600;padding:.2rem 0}
th,td{border:1px solid #d0d0d0;padding:.2rem .5rem;vertical-align:top}
th{background:#f1f3f5;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.text{white-space:pre-wrap;overflow-wrap:anywhere;max-width:34rem;font-family:ui-monospace,monospace;font-size:.85rem}
td:first-child{white-space:nowrap}
figure{margin:1rem 0}figure img{max-width:100%;height:auto;border:1px solid #e0e0e0}
figcaption{font-size:.9rem;color:#444}
pre{background:#f6f8fa;padding:.6rem;font-size:.85rem;white-space:pre-wrap;overflow-wrap:anywhere}
.note{font-size:.9rem;color:#444}
.lead p{font-size:1.05rem;font-weight:600;margin:.2rem 0}
.summary{border:2px solid #0072B2;border-radius:6px;padding:.6rem 1rem;background:#f5f9fc;margin:.5rem 0}
.stats{display:flex;flex-wrap:wrap;gap:.5rem 2.2rem;margin:.2rem 0 .4rem}.stat{max-width:19rem}
.stat .value{font-size:1.5rem;font-weight:600;font-variant-numeric:tabular-nums}
.stat .ci{font-size:.95rem;color:#333;font-variant-numeric:tabular-nums}
.label{font-size:.85rem;color:#444}
.warnings{margin:.5rem 0 0;padding:.4rem .8rem .4rem 1.8rem;background:#fff4e5;border-left:4px solid #D55E00}
.compact td,.compact th{padding:.1rem .4rem;font-size:.82rem}
tr.failed td{background:#fff4e5}
details summary{cursor:pointer;font-weight:600;margin:.6rem 0}
footer{margin:2.5rem 0 1rem;padding-top:.5rem;border-top:1px solid #ccc;font-size:.85rem;color:#444}
footer code{overflow-wrap:anywhere}
"""


def esc(value: object) -> str:
    return html.escape(printable(str(value)))  # a right-to-left override in a name would reorder the page around it


def _attribute(key: str) -> str:
    return f' data-summary="{esc(key)}"'


def estimate_html(value: Estimate, *, stat: bool = False) -> str:
    """An estimate; named parts (value, `-ci`, `-mark`) when it has a key; ``stat``: a summary box's
    headline number (its value and interval styled)."""
    if value.key is None:
        return f"<span class=value>{esc(value.text())}</span>" if stat else esc(value.text())
    number, low, high = value.parts()
    number += "%" if value.percent and number != "–" else ""
    shown = f"<span{' class=value' if stat else ''}{_attribute(value.key)}>{esc(number)}</span>"
    if value.has_interval:
        shown += f" <span{' class=ci' if stat else ''}{_attribute(value.key + '-ci')}>{esc(f'[{low}, {high}]')}</span>"
    if value.mark:
        shown += f'<span{_attribute(value.key + "-mark")} title="{esc(value.note or "")}">*</span>'
    return shown


def table_html(table: Table) -> str:
    """A table inside a box that scrolls sideways when the table is wider than the page."""
    attributes = (f" id={esc(table.name)}" if table.name else "") + (" class=compact" if table.compact else "")
    head = "" if table.header is None else "<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in table.header) + "</tr></thead>"
    body = []
    for r, (row, texts) in enumerate(zip(table.rows, table.text_rows())):
        cells = []
        for i, (cell, text) in enumerate(zip(row, texts)):
            if table.header is None:  # a key-value table: the key heads its row
                cells.append(f"<th>{esc(text)}</th>" if i == 0 else f"<td>{esc(text)}</td>")
            elif isinstance(cell, Estimate):
                cells.append(f"<td class=n>{estimate_html(cell)}</td>")
            else:
                klass = "" if table.is_text(i) else " class=n"
                klass = " class=text" if i in table.wrap_columns else klass
                cells.append(f"<td{klass}>{esc(text)}</td>")
        row_class = table.row_classes[r] if table.row_classes is not None else None
        body.append(f"<tr{f' class={row_class}' if row_class else ''}>{''.join(cells)}</tr>")
    title = f"<caption>{esc(table.title)}</caption>" if table.title else ""
    return f"<div class=scroll><table{attributes}>{title}{head}<tbody>{''.join(body)}</tbody></table></div>"


def keyed_html(paragraph: Paragraph, tag: str) -> str:
    """A paragraph's text, each `Keyed` part in a ``tag`` element named by its key."""
    parts = [paragraph.parts] if isinstance(paragraph.parts, str) else paragraph.parts
    return "".join(f"<{tag}{_attribute(p.key)}>{esc(p.text)}</{tag}>" if isinstance(p, Keyed) else esc(p) for p in parts)


def notes_html(notes: Sequence[Note], klass: str = "note") -> str:
    """Notes as lists, those of one key together (a list named by its key, its items the notes' text:
    the list's heading or style says what they are)."""
    out = []
    for key, group in groupby(notes, key=lambda n: n.key):
        items = "".join(f"<li>{esc(note.text if key else note.line())}</li>" for note in group)
        out.append(f"<ul class={klass}{_attribute(key) if key else ''}>{items}</ul>")
    return "".join(out)


def figure_html(figure: Figure, numbers: Iterator[int]) -> str:
    """The figure embedded as an SVG data URI, numbered (from ``numbers``) in the order the page shows figures."""
    from qrelkit.report.plots.audit import figure_svg

    drawn = figure.draw()
    if drawn is None:
        return ""
    number = next(numbers)
    uri = "data:image/svg+xml;base64," + base64.b64encode(figure_svg(drawn).encode("utf-8")).decode("ascii")
    return (
        f'<figure id="figure-{number}"><img src="{uri}" alt="{esc(figure.alt)}" style="width:{figure.width}px">'
        f"<figcaption><b>Figure {number}.</b> {esc(figure.caption)}</figcaption></figure>"
    )


def _blocks(blocks: Sequence[Block], figures: Iterator[int], level: int = 2) -> Iterator[str]:
    for block in blocks:
        if isinstance(block, Table):
            yield table_html(block)
        elif isinstance(block, Lines):
            title = f"<h{level + 1}>{esc(block.title)}</h{level + 1}>" if block.title else ""
            yield title + "<pre>" + esc("\n".join(block.lines)) + "</pre>"
        elif isinstance(block, Paragraph):
            yield f"<p class=note>{keyed_html(block, 'span').replace(chr(10), '<br>')}</p>"
        elif isinstance(block, Figure):
            yield figure_html(block, figures)
        elif isinstance(block, Summary):
            yield summary_html(block, (), figures)
        elif isinstance(block, Section):
            inner = "\n".join(_blocks(block.blocks, figures, level + 1))
            if block.folded:
                yield f"<details><summary>{esc(block.title)}</summary>{inner}</details>"
            else:
                anchor = f" id={esc(block.key)}" if block.key else ""
                yield f"<h{level}{anchor}>{esc(block.title)}</h{level}>\n{inner}"


def summary_html(summary: Summary, qualifying: Sequence[Note], figures: Iterator[int]) -> str:
    """The box of headline numbers, its blocks, and the notes that qualify the lead."""
    stats = "".join(
        f"<div class=stat><div class=value-line>{estimate_html(stat.value, stat=True)}</div><div class=label>{esc(stat.label)}</div></div>"
        for stat in summary.stats
    )
    blocks = "".join(_blocks(summary.blocks, figures, 3))
    return (
        "<section class=summary id=summary>"
        + (f"<div class=stats>{stats}</div>" if stats else "")
        + blocks
        + notes_html(qualifying, "warnings")
        + "</section>"
    )


def render_page(document: Document) -> str:
    title = document.title or (document.lead[0] if document.lead else "qrelkit")
    figures = count(1)  # the figures' numbers
    parts = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width'>"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
    ]
    if document.lead:
        parts.append("<div id=verdict class=lead>" + "".join(f"<p>{esc(line)}</p>" for line in document.lead) + "</div>")
    summary = next((b for b in document.blocks if isinstance(b, Summary)), None)
    qualifying = document.qualifying()
    if summary is None and qualifying:
        parts.append(notes_html(qualifying, "warnings"))
    for block in document.blocks:
        if block is summary:
            parts.append(summary_html(block, qualifying, figures))
        else:
            parts += list(_blocks([block], figures))
    if document.trailing():
        parts.append("<h2>Notes</h2>" + notes_html(document.trailing()))
    if document.footer is not None:
        parts.append("<footer>" + keyed_html(document.footer, "code") + "</footer>")  # the command line as code
    parts.append("</body></html>")
    return "\n".join(part for part in parts if part)


def write_page(document: Document, path: str | Path) -> Path:
    """Write the page to ``path`` (atomically; its folder is made) and return it."""
    from qrelkit.io.files import write_atomically

    page = render_page(document)
    return write_atomically(path, lambda temporary: temporary.write_text(page, encoding="utf-8"))
