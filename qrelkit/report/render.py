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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from qrelkit.report.document import (
    Block,
    Document,
    Estimate,
    Figure,
    Lines,
    Note,
    Paragraph,
    Section,
    Summary,
    Table,
    cell_text,
    walk,
)
from qrelkit.report.text import latex_comment, markdown_text, one_line, printable

T = TypeVar("T")


@dataclass(frozen=True)
class _Shows(Generic[T]):
    """How a text format shows each part of a document (`_shown` walks it for them all)."""

    lead: Callable[[list[str]], list[T]]
    notes: Callable[[list[Note], bool], list[T]]  # the notes, and whether they are the trailing ones
    table: Callable[[Table], list[T]]
    lines: Callable[[Lines], list[T]]
    paragraph: Callable[[Paragraph], list[T]]
    stats: Callable[[list[str]], list[T]]  # a summary's `label: value` lines
    folded: Callable[[str], T]  # the line that stands for a folded section
    section: Callable[[str, int, list[T]], list[T]]  # a section's title, its heading level and its blocks as shown


def _shown(document: Document, shows: _Shows[T], verbose: bool) -> list[T]:
    """The lead, the notes that qualify it, the blocks, then the other notes."""
    qualifying, trailing = document.qualifying(), document.trailing()
    return [
        *(shows.lead(document.lead) if document.lead else []),
        *(shows.notes(qualifying, False) if qualifying else []),
        *_shown_blocks(document.blocks, shows, verbose),
        *(shows.notes(trailing, True) if trailing else []),
    ]


def _shown_blocks(blocks: Sequence[Block], shows: _Shows[T], verbose: bool, level: int = 2) -> Iterator[T]:
    """A summary's stats before its blocks; a folded section as a line saying how to see it, unless ``verbose``."""
    for block in _in_text(blocks):
        if isinstance(block, Table):
            yield from shows.table(block)
        elif isinstance(block, Lines):
            yield from shows.lines(block)
        elif isinstance(block, Paragraph):
            yield from shows.paragraph(block)
        elif isinstance(block, Summary):
            if block.stats:
                yield from shows.stats([stat.text() for stat in block.stats])
            yield from _shown_blocks(block.blocks, shows, verbose, level)
        elif isinstance(block, Section) and block.folded and not verbose:
            yield shows.folded(f"{block.title}: (--verbose shows it)")
        elif isinstance(block, Section):
            yield from shows.section(block.title, level, list(_shown_blocks(block.blocks, shows, verbose, level + 1)))


def _in_text(blocks: Sequence[Block]) -> list[Block]:
    """The blocks a text format shows: figures are on the HTML page alone, and so is a section of
    nothing but figures."""
    return [b for b in blocks if not isinstance(b, Figure) and not (isinstance(b, Section) and not _in_text(b.blocks))]


# -- plain text ------------------------------------------------------------------------------------


def plain_table(table: Table) -> str:
    """A table whose every cell is whole: text columns left-aligned, numbers right-aligned."""
    from rich.cells import cell_len

    rows = [[one_line(c) for c in row] for row in table.text_rows()]
    header = [] if table.header is None else [one_line(h) for h in table.header]
    cells = ([header] if header else []) + rows
    if not cells:
        return one_line(table.title)
    widths = [max(cell_len(row[i]) for row in cells if i < len(row)) for i in range(max(len(row) for row in cells))]

    def line(row: list[str]) -> str:
        padded = []
        for i, (cell, width) in enumerate(zip(row, widths)):
            gap = " " * (width - cell_len(cell))
            padded.append(cell + gap if table.is_text(i) else gap + cell)
        return "  ".join(padded).rstrip()

    out = [one_line(table.title)] if table.title else []
    if header:
        out += [line(header), "  ".join("-" * width for width in widths)]
    return "\n".join(out + [line(row) for row in rows])


_PLAIN = _Shows[str](
    lead=lambda lead: ["\n".join(printable(line) for line in lead)],
    notes=lambda notes, trailing: ["\n".join(printable(note.line()) for note in notes)],
    table=lambda table: [plain_table(table)],
    lines=lambda block: ["\n".join(([one_line(block.title)] if block.title else []) + [printable(line) for line in block.lines])],
    paragraph=lambda paragraph: [printable(paragraph.text)],
    stats=lambda stats: ["\n".join(printable(stat) for stat in stats)],
    folded=printable,
    section=lambda title, level, shown: [one_line(title) + "\n" + "\n\n".join(shown)],
)


def plain(document: Document, *, verbose: bool = False) -> str:
    """The document as plain text: lead, the notes that qualify it, the blocks, then the other notes."""
    parts = _shown(document, _PLAIN, verbose)
    return "\n\n".join(part for part in parts if part) + "\n" if parts else ""


# -- TSV ---------------------------------------------------------------------------------------------


def _tsv_cell(text: str) -> str:
    """A TSV field: one line, control characters escaped, no value (`–`) as an empty field."""
    return "" if text == "–" else one_line(text)


def tsv_table(table: Table) -> list[str]:
    """The table's rows tab-separated under its header; a column holding intervals as three columns
    (the value, `low`, `high`)."""
    split = [any(isinstance(row[i], Estimate) and row[i].has_interval for row in table.rows if i < len(row)) for i in range(_width(table))]
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


def _width(table: Table) -> int:
    return max([len(table.header or [])] + [len(row) for row in table.rows])


def tsv(document: Document, *, verbose: bool = False) -> str:
    """Every table as TSV; with several, each after a `# title` line and a blank line between them."""
    shown = walk(document.blocks, folded=verbose)
    tables = [b for b in shown if isinstance(b, Table)]
    lines_blocks = [b for b in shown if isinstance(b, Lines)]
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

    shown = RichTable(title=one_line(table.title) or None, title_justify="left", show_header=table.header is not None)
    if table.compact:
        shown.box = box.SIMPLE_HEAD
    header = table.header if table.header is not None else [""] * _width(table)
    for i, column in enumerate(header):
        shown.add_column(one_line(column), justify="left" if table.is_text(i) else "right", overflow="fold")
    for row in table.text_rows():  # a cell on its row, as in plain text: a stored name's newline starts no line
        shown.add_row(*(one_line(cell) for cell in row))
    return shown


def terminal(document: Document, *, verbose: bool = False) -> list[Any]:
    """Rich renderables in order: the lead in bold, qualifying notes, blocks, the other notes."""
    from rich.text import Text

    def lines(block: Lines) -> list[Text]:
        title = [Text(one_line(block.title), style="bold")] if block.title else []
        return title + [Text("\n".join(printable(line) for line in block.lines))]

    shows = _Shows[Any](
        lead=lambda lead: [Text(printable("\n".join(lead)), style="bold")],
        notes=lambda notes, trailing: [Text(printable(note.line()), style="yellow" if note.kind == "warning" else "") for note in notes],
        table=lambda table: [rich_table(table)],
        lines=lines,
        paragraph=lambda paragraph: [Text(printable(paragraph.text))],
        stats=lambda stats: [Text("\n".join(printable(stat) for stat in stats))],
        folded=lambda line: Text(printable(line), style="dim"),
        section=lambda title, level, shown: [Text(one_line(title), style="bold"), *shown],
    )
    return _shown(document, shows, verbose)


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


def _markdown_lines(block: Lines) -> list[str]:
    fence = "```"
    title = [f"**{markdown_text(block.title)}**", ""] if block.title else []
    return ["\n".join(title + [fence] + [printable(line).replace(fence, "`` `") for line in block.lines] + [fence])]


_MARKDOWN = _Shows[str](
    lead=lambda lead: [f"**{markdown_text(line)}**" for line in lead],
    notes=lambda notes, trailing: ["\n".join(f"- {markdown_text(note.line())}" for note in notes)],
    table=lambda table: [markdown_table(table)],
    lines=_markdown_lines,
    paragraph=lambda paragraph: ["  \n".join(markdown_text(line) for line in paragraph.text.splitlines())],  # a hard break between lines
    stats=lambda stats: ["\n".join(f"- {markdown_text(stat)}" for stat in stats)],
    folded=lambda line: f"_{markdown_text(line)}_",
    section=lambda title, level, shown: [f"{'#' * level} {markdown_text(title)}", *shown],
)


def markdown(document: Document, *, verbose: bool = False) -> str:
    parts = _shown(document, _MARKDOWN, verbose)
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


_LATEX = _Shows[str](
    lead=lambda lead: [latex_comment(line) for line in lead],
    notes=lambda notes, trailing: (["% notes:"] if trailing else []) + [latex_comment(note.line()) for note in notes],
    table=latex_table,
    lines=lambda block: [latex_comment(line) for line in ([block.title] if block.title else []) + list(block.lines)],
    paragraph=lambda paragraph: [latex_comment(line) for line in paragraph.text.splitlines()],
    stats=lambda stats: [latex_comment(stat) for stat in stats],
    folded=latex_comment,
    section=lambda title, level, shown: [latex_comment(title), *shown],
)


def latex(document: Document, *, verbose: bool = False) -> str:
    """Booktabs tables (\\usepackage{booktabs}); the lead and the notes as comments."""
    lines = _shown(document, _LATEX, verbose)
    return "\n".join(lines) + "\n" if lines else ""


# -- JSON --------------------------------------------------------------------------------------------


def json_text(document: Document) -> str:
    return json.dumps(document.data, indent=1, ensure_ascii=False, default=str) + "\n"


TEXT_RENDERERS = {"plain": plain, "tsv": tsv, "markdown": markdown, "latex": latex}
