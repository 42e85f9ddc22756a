"""One renderer per format, each written once, for every `Document`.

- `plain`: for pipes and files: every name and number whole, never cut to a width; aligned columns
  (text left, numbers right, two spaces apart); no box characters (`column -t` and `cut` read it);
- `tsv`: the tables alone, tab-separated, an estimate's interval in two columns of its own, for
  `cut`, `sort` and spreadsheets (the lead and notes go to stderr: stdout stays a table);
- `terminal`: rich tables whose cells fold onto more lines rather than being cut;
- `markdown`, `latex` (booktabs, every name escaped), `json` (the document's data);
- HTML pages: `qrelkit.report.page`.

Text from data reaches every format escaped for it: control characters shown as escapes on a
terminal and in plain text, `|`, `<`, `&` in Markdown, LaTeX's specials in LaTeX.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from qrelkit.report.document import (
    Block,
    Document,
    Estimate,
    Figure,
    Lines,
    Note,
    Paragraph,
    Section,
    Stat,
    Summary,
    Table,
    cell_text,
)
from qrelkit.report.text import latex_comment, markdown_text, one_line, printable

FOLDED_HINT = "(--verbose shows it)"


def _stat_line(stat: Stat) -> str:
    return stat.text()


def _folded_line(section: Section) -> str:
    return f"{section.title}: {FOLDED_HINT}"


def _in_text(blocks: Sequence[Block]) -> list[Block]:
    """The blocks a text format shows: figures are on the HTML page alone, and so is a section of
    nothing but figures."""
    return [b for b in blocks if not isinstance(b, Figure) and not (isinstance(b, Section) and not _in_text(b.blocks))]


# -- plain text ------------------------------------------------------------------------------------


def plain_table(table: Table) -> str:
    """A table whose every cell is whole: text columns left-aligned, numbers right-aligned."""
    from rich.cells import cell_len

    rows = [[printable(one_line(c)) for c in row] for row in table.text_rows()]
    header = [] if table.header is None else [printable(one_line(h)) for h in table.header]
    cells = ([header] if header else []) + rows
    if not cells:
        return printable(one_line(table.title))
    widths = [max(cell_len(row[i]) for row in cells if i < len(row)) for i in range(max(len(row) for row in cells))]

    def line(row: list[str]) -> str:
        padded = []
        for i, (cell, width) in enumerate(zip(row, widths)):
            gap = " " * (width - cell_len(cell))
            padded.append(cell + gap if table.is_text(i) else gap + cell)
        return "  ".join(padded).rstrip()

    out = [printable(one_line(table.title))] if table.title else []
    if header:
        out += [line(header), "  ".join("-" * width for width in widths)]
    return "\n".join(out + [line(row) for row in rows])


def _plain_blocks(blocks: Sequence[Block], verbose: bool) -> Iterator[str]:
    for block in _in_text(blocks):
        if isinstance(block, Table):
            yield plain_table(block)
        elif isinstance(block, Lines):
            yield "\n".join(([printable(one_line(block.title))] if block.title else []) + [printable(line) for line in block.lines])
        elif isinstance(block, Paragraph):
            yield printable(block.text)
        elif isinstance(block, Figure):
            continue  # pictures are on the HTML page
        elif isinstance(block, Summary):
            lines = [printable(_stat_line(stat)) for stat in block.stats]
            if lines:
                yield "\n".join(lines)
            yield from _plain_blocks(block.blocks, verbose)
        elif isinstance(block, Section):
            if block.folded and not verbose:
                yield printable(_folded_line(block))
                continue
            yield printable(one_line(block.title)) + "\n" + "\n\n".join(_plain_blocks(block.blocks, verbose))


def _note_lines(notes: Sequence[Note]) -> str:
    return "\n".join(printable(note.line()) for note in notes)


def plain(document: Document, *, verbose: bool = False) -> str:
    """The document as plain text: lead, the notes that qualify it, the blocks, then the other notes."""
    parts = []
    if document.lead:
        parts.append("\n".join(printable(line) for line in document.lead))
    if document.qualifying():
        parts.append(_note_lines(document.qualifying()))
    parts += list(_plain_blocks(document.blocks, verbose))
    if document.trailing():
        parts.append(_note_lines(document.trailing()))
    return "\n\n".join(part for part in parts if part) + "\n" if parts else ""


# -- TSV ---------------------------------------------------------------------------------------------


def _tsv_cell(text: str) -> str:
    """A TSV field: one line, control characters escaped, no value (`–`) as an empty field."""
    return "" if text == "–" else printable(one_line(text))


def tsv_table(table: Table) -> list[str]:
    """The table's rows tab-separated under its header; a column holding intervals as three columns
    (the value, `low`, `high`)."""
    split = [any(isinstance(cell, Estimate) and cell.has_interval for cell in _column(table, i)) for i in range(_width(table))]
    header = list(table.header) if table.header is not None else [f"column {i + 1}" for i in range(_width(table))]
    head: list[str] = []
    for name, wide in zip(header, split):
        head += [name, f"{name} low", f"{name} high"] if wide else [name]
    lines = ["\t".join(_tsv_cell(h) for h in head)]
    for row in table.rows:
        cells: list[str] = []
        for cell, wide in zip(row, split):
            if wide:
                cells += list(cell.parts()) if isinstance(cell, Estimate) else [cell_text(cell, table.digits), "", ""]
            elif isinstance(cell, Estimate):
                cells.append(cell.parts()[0])
            elif isinstance(cell, int) and not isinstance(cell, bool):
                cells.append(str(cell))  # no thousands separator: a program reads it
            else:
                cells.append(cell_text(cell, table.digits))
        lines.append("\t".join(_tsv_cell(c) for c in cells))
    return lines


def _column(table: Table, i: int) -> list[Any]:
    return [row[i] for row in table.rows if i < len(row)]


def _width(table: Table) -> int:
    return max([len(table.header or [])] + [len(row) for row in table.rows])


def tsv(document: Document, *, verbose: bool = False) -> str:
    """Every table as TSV; with several, each after a `# title` line and a blank line between them."""
    from qrelkit.report.document import walk

    tables = [b for b in walk(document.blocks, folded=verbose) if isinstance(b, Table)]
    lines_blocks = [b for b in walk(document.blocks, folded=verbose) if isinstance(b, Lines)]
    if not tables and lines_blocks:
        return "".join(printable(line) + "\n" for block in lines_blocks for line in block.lines)
    parts = []
    for table in tables:
        lines = tsv_table(table)
        if len(tables) > 1:
            lines.insert(0, "# " + _tsv_cell(table.title))
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n" if parts else ""


# -- the terminal ------------------------------------------------------------------------------------


def rich_table(table: Table) -> Any:
    """A terminal table whose cells fold onto more lines rather than being cut to `0.…`."""
    from rich import box
    from rich.table import Table as RichTable

    headed = table.header is not None
    shown = RichTable(title=printable(one_line(table.title)) or None, title_justify="left", show_header=headed)
    if table.compact:
        shown.box = box.SIMPLE_HEAD
    header = table.header if table.header is not None else [""] * _width(table)
    for i, column in enumerate(header):
        shown.add_column(printable(one_line(column)), justify="left" if table.is_text(i) else "right", overflow="fold")
    for row in table.text_rows():  # a cell on its row, as in plain text: a stored name's newline starts no line
        shown.add_row(*(printable(one_line(cell)) for cell in row))
    return shown


def _terminal_blocks(blocks: Sequence[Block], verbose: bool) -> Iterator[Any]:
    from rich.text import Text

    for block in _in_text(blocks):
        if isinstance(block, Table):
            yield rich_table(block)
        elif isinstance(block, Lines):
            if block.title:
                yield Text(printable(one_line(block.title)), style="bold")
            yield Text("\n".join(printable(line) for line in block.lines))
        elif isinstance(block, Paragraph):
            yield Text(printable(block.text))
        elif isinstance(block, Summary):
            if block.stats:
                yield Text("\n".join(printable(_stat_line(stat)) for stat in block.stats))
            yield from _terminal_blocks(block.blocks, verbose)
        elif isinstance(block, Section):
            if block.folded and not verbose:
                yield Text(printable(_folded_line(block)), style="dim")
                continue
            yield Text(printable(one_line(block.title)), style="bold")
            yield from _terminal_blocks(block.blocks, verbose)


def terminal(document: Document, *, verbose: bool = False) -> list[Any]:
    """Rich renderables in order: the lead in bold, qualifying notes, blocks, the other notes."""
    from rich.text import Text

    parts: list[Any] = []
    if document.lead:
        parts.append(Text(printable("\n".join(document.lead)), style="bold"))
    for note in document.qualifying():
        parts.append(Text(printable(note.line()), style="yellow" if note.kind == "warning" else ""))
    parts += list(_terminal_blocks(document.blocks, verbose))
    for note in document.trailing():
        parts.append(Text(printable(note.line()), style="yellow" if note.kind == "warning" else ""))
    return parts


# -- Markdown ----------------------------------------------------------------------------------------


def markdown_table(table: Table) -> str:
    header = list(table.header) if table.header is not None else [""] * _width(table)
    align = ["---" if table.is_text(i) else "---:" for i in range(len(header))]
    lines = ([f"**{markdown_text(table.title)}**", ""] if table.title else []) + [
        "| " + " | ".join(markdown_text(h) for h in header) + " |",
        "|" + "|".join(align) + "|",
    ]
    lines += ["| " + " | ".join(markdown_text(c) for c in row) + " |" for row in table.text_rows()]
    return "\n".join(lines)


def _markdown_blocks(blocks: Sequence[Block], verbose: bool, level: int = 2) -> Iterator[str]:
    for block in _in_text(blocks):
        if isinstance(block, Table):
            yield markdown_table(block)
        elif isinstance(block, Lines):
            fence = "```"
            title = [f"**{markdown_text(block.title)}**", ""] if block.title else []
            yield "\n".join(title + [fence] + [printable(line).replace(fence, "`` `") for line in block.lines] + [fence])
        elif isinstance(block, Paragraph):  # a line each, as written (a hard break between them)
            yield "  \n".join(markdown_text(line) for line in block.text.splitlines())
        elif isinstance(block, Summary):
            if block.stats:
                yield "\n".join(f"- {markdown_text(_stat_line(stat))}" for stat in block.stats)
            yield from _markdown_blocks(block.blocks, verbose, level)
        elif isinstance(block, Section):
            if block.folded and not verbose:
                yield f"_{markdown_text(_folded_line(block))}_"
                continue
            yield f"{'#' * level} {markdown_text(block.title)}"
            yield from _markdown_blocks(block.blocks, verbose, level + 1)


def markdown(document: Document, *, verbose: bool = False) -> str:
    parts = [f"**{markdown_text(line)}**" for line in document.lead]
    if document.qualifying():
        parts.append("\n".join(f"- {markdown_text(note.line())}" for note in document.qualifying()))
    parts += list(_markdown_blocks(document.blocks, verbose))
    if document.trailing():
        parts.append("\n".join(f"- {markdown_text(note.line())}" for note in document.trailing()))
    return "\n\n".join(parts) + "\n" if parts else ""


# -- LaTeX -------------------------------------------------------------------------------------------

_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}"}
_LATEX_SPECIAL |= {"~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"}
_LATEX_SYMBOLS = {"κ": r"$\kappa$", "τ": r"$\tau$", "Δ": r"$\Delta$", "−": r"$-$", "–": "--", "≥": r"$\geq$", "≤": r"$\leq$"}
_LATEX_SYMBOLS |= {"ρ": r"$\rho$", "α": r"$\alpha$", "±": r"$\pm$", "×": r"$\times$", "…": r"\ldots{}", "→": r"$\rightarrow$"}
_LATEX_SYMBOLS |= {"λ": r"$\lambda$", "σ": r"$\sigma$", "μ": r"$\mu$", "·": r"$\cdot$", "≈": r"$\approx$"}


def latex_text(text: str) -> str:
    """Text from data as LaTeX that prints it: specials escaped, Greek and signs as math, one line."""
    return "".join(_LATEX_SPECIAL.get(ch) or _LATEX_SYMBOLS.get(ch) or ch for ch in one_line(text))


def latex_table(table: Table) -> list[str]:
    """A booktabs table (lines)."""
    header = list(table.header) if table.header is not None else []
    spec = "".join("l" if table.is_text(i) else "r" for i in range(_width(table)))
    head = [" & ".join(latex_text(h) for h in header) + r" \\", r"\midrule"] if header else []
    return [
        r"\begin{table}[t]",
        r"\centering\small",
        rf"\caption{{{latex_text(table.title)}}}",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        *head,
        *(" & ".join(latex_text(c) for c in row) + r" \\" for row in table.text_rows()),
        r"\bottomrule",
        r"\end{tabular}",
        r"\end{table}",
    ]


def _latex_blocks(blocks: Sequence[Block], verbose: bool) -> Iterator[str]:
    for block in _in_text(blocks):
        if isinstance(block, Table):
            yield from latex_table(block)
        elif isinstance(block, Lines):
            yield from (latex_comment(line) for line in ([block.title] if block.title else []) + list(block.lines))
        elif isinstance(block, Paragraph):
            yield from (latex_comment(line) for line in block.text.splitlines())
        elif isinstance(block, Summary):
            yield from (latex_comment(_stat_line(stat)) for stat in block.stats)
            yield from _latex_blocks(block.blocks, verbose)
        elif isinstance(block, Section):
            if block.folded and not verbose:
                yield latex_comment(_folded_line(block))
                continue
            yield latex_comment(block.title)
            yield from _latex_blocks(block.blocks, verbose)


def latex(document: Document, *, verbose: bool = False) -> str:
    """Booktabs tables (\\usepackage{booktabs}); the lead and the notes as comments."""
    lines = [latex_comment(line) for line in document.lead]
    lines += [latex_comment(note.line()) for note in document.qualifying()]
    lines += list(_latex_blocks(document.blocks, verbose))
    if document.trailing():
        lines += ["% notes:"] + [latex_comment(note.line()) for note in document.trailing()]
    return "\n".join(lines) + "\n" if lines else ""


# -- JSON --------------------------------------------------------------------------------------------


def json_text(document: Document) -> str:
    return json.dumps(document.data, indent=1, ensure_ascii=False, default=str) + "\n"


TEXT_RENDERERS = {"plain": plain, "tsv": tsv, "markdown": markdown, "latex": latex}
