"""A result as a document: what every command prints, in one model that each format renders.

A use case's result describes itself once as a `Document`: its lead sentences (the answer, always
first), its blocks (tables, verbatim lines such as trec_eval's, figures, sections that fold away),
its notes and warnings (those that qualify the lead stand right under it), the files it wrote, its
JSON form and a status that carries the exit code. One renderer per format
(`qrelkit.report.render`) turns it into terminal tables, plain text for pipes and files (every name
and number whole), TSV, Markdown, LaTeX, JSON or an HTML page. A document knows nothing of the
result it came from, and a renderer nothing of any result's type.

Cells are data, not text: a number stays a number until a format writes it (TSV keeps an interval as
two columns of its own), and text from data is escaped by each format as that format needs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

DASH = "–"


@dataclass(frozen=True)
class Estimate:
    """A number with its interval: `0.9159 [0.795, 1.000]`, a ``*`` when a note explains it (an
    estimate outside its interval, an interval that could not be computed). ``signed`` prints `+`;
    ``percent`` shows a share as a percentage."""

    value: float | None
    low: float | None = None
    high: float | None = None
    digits: int = 4
    interval_digits: int = 3
    mark: bool = False
    signed: bool = False
    percent: bool = False
    key: str | None = None  # names it on an HTML page (data-summary), for the page's tests and readers' scripts
    note: str | None = None  # what its mark means (an HTML page's tooltip)

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def parts(self) -> tuple[str, str, str]:
        """(value, low, high) as text, each whole; the interval's parts empty when there is none."""
        scale = 100.0 if self.percent else 1.0
        value = number_text(self.value, self.digits, scale=scale, signed=self.signed)
        if not self.has_interval:
            return value, "", ""
        low = number_text(self.low, self.interval_digits, scale=scale, signed=self.signed)
        return value, low, number_text(self.high, self.interval_digits, scale=scale, signed=self.signed)

    def text(self) -> str:
        """`0.9159 [0.795, 1.000]*`; a share `84.0% [78.1, 90.2]`; an interval alone `[+1.0, +2.0]%`."""
        value, low, high = self.parts()
        unit = "%" if self.percent else ""
        mark = "*" if self.mark else ""
        if not self.has_interval:
            return value if value == DASH else value + unit + mark
        if value == DASH:
            return f"[{low}, {high}]{unit}{mark}"
        return f"{value}{unit} [{low}, {high}]{mark}"


Cell = str | int | float | Estimate | None


def number_text(value: float | int | None, digits: int = 4, *, scale: float = 1.0, signed: bool = False) -> str:
    """A number as every format writes it: fixed decimals, `–` for none or NaN, integers as they are."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int) and scale == 1.0:
        return f"{value:+,d}" if signed else f"{value:,d}"
    return f"{value * scale:+.{digits}f}" if signed else f"{value * scale:.{digits}f}"


def cell_text(cell: Cell, digits: int = 4) -> str:
    """A cell as one string (every format but TSV, which splits an estimate's interval)."""
    if isinstance(cell, Estimate):
        return cell.text()
    if cell is None or isinstance(cell, int | float):
        return number_text(cell, digits)
    return cell


@dataclass(frozen=True)
class Table:
    """Rows of cells under a header. The first ``text_columns`` columns are text (left-aligned), the
    rest numbers (right-aligned), or ``text_columns`` names the text columns; a float cell is written
    with ``digits`` decimals. ``name``: the
    table's id on an HTML page and its key in tests; ``row_classes``: a class per row on an HTML page
    (`failed`); ``header`` None: a key-value table whose first column heads each row."""

    title: str
    header: Sequence[str] | None
    rows: Sequence[Sequence[Any]]  # cells: `Cell`s
    text_columns: int | frozenset[int] = 1
    digits: int = 4
    name: str | None = None
    row_classes: Sequence[str | None] | None = None
    compact: bool = False
    wrap_columns: frozenset[int] = frozenset()  # long text (a model's answer): wrapped, in a fixed-width font on a page

    def is_text(self, column: int) -> bool:
        """Whether ``column`` holds text (left-aligned) rather than numbers."""
        if isinstance(self.text_columns, frozenset):
            return column in self.text_columns
        return column < self.text_columns or self.header is None and column == 0

    def text_rows(self) -> list[list[str]]:
        return [[cell_text(cell, self.digits) for cell in row] for row in self.rows]

    def without_empty_columns(self) -> Table:
        """The table less its columns empty (`–`) in every row (never the first)."""
        if not self.rows or self.header is None:
            return self
        text = self.text_rows()
        keep = [i for i in range(len(self.header)) if i == 0 or any(row[i] not in (DASH, "") for row in text)]
        if len(keep) == len(self.header):
            return self
        return replace(
            self,
            header=[self.header[i] for i in keep],
            rows=[[row[i] for i in keep] for row in self.rows],
            text_columns=frozenset(new for new, old in enumerate(keep) if self.is_text(old)),
        )


@dataclass(frozen=True)
class Lines:
    """Verbatim lines (trec_eval's output, per-query values): every format prints them as they are,
    control characters escaped; Markdown and HTML in a code block, LaTeX as comments."""

    lines: Sequence[str]
    title: str | None = None


@dataclass(frozen=True)
class Keyed:
    """A phrase of a paragraph that an HTML page names (data-summary ``key``)."""

    key: str
    text: str


@dataclass(frozen=True)
class Paragraph:
    """A few sentences of prose between blocks (what a figure or a table means); parts given as
    `Keyed` are named on an HTML page."""

    parts: str | Sequence[str | Keyed]

    @property
    def text(self) -> str:
        return self.parts if isinstance(self.parts, str) else "".join(p if isinstance(p, str) else p.text for p in self.parts)


@dataclass(frozen=True)
class Figure:
    """A figure, drawn only by the formats that show pictures (HTML): ``draw`` makes the matplotlib
    figure when it is needed; the text formats leave it out (it is on the page alone)."""

    caption: str
    draw: Callable[[], Any]
    alt: str
    width: int = 640


@dataclass(frozen=True)
class Section:
    """Blocks under a heading. ``folded``: details most readers skip (the 66 pairwise sentences of a
    12-judge comparison): an expandable part of an HTML page, and in the text formats shown only with
    ``--verbose`` (a line says how to see them)."""

    title: str
    blocks: Sequence[Block]
    folded: bool = False
    key: str | None = None  # its anchor on an HTML page


@dataclass(frozen=True)
class Stat:
    """A headline number of an HTML page's summary box (κ, τ with its interval; its key names it)."""

    label: str
    value: Estimate

    def text(self) -> str:
        return f"{self.label}: {self.value.text()}"


@dataclass(frozen=True)
class Summary:
    """The box at the top of an HTML page (the answer at a glance): its headline numbers and blocks;
    the text formats print its stats as `label: value` lines."""

    stats: Sequence[Stat]
    blocks: Sequence[Block] = ()


Block = Table | Lines | Paragraph | Figure | Section | Summary


@dataclass(frozen=True)
class Note:
    """A note or warning. ``qualifies``: it qualifies the lead sentence (the grade scales differ, the
    judge run is a sample), so it stands right under it in every format."""

    text: str
    kind: Literal["note", "warning"] = "note"
    qualifies: bool = False
    key: str | None = None  # an HTML page lists the notes of one key together (data-summary)

    def line(self) -> str:
        """As the text formats print it: a warning says so, and so does a note that qualifies the lead."""
        if self.kind == "warning":
            return f"warning: {self.text}"
        return f"note: {self.text}" if self.qualifies else self.text


def warnings(texts: Sequence[str], *, qualifies: bool = False, key: str | None = None) -> list[Note]:
    return [Note(text, "warning", qualifies, key) for text in texts]


def notes(texts: Sequence[str], *, qualifies: bool = False, key: str | None = None) -> list[Note]:
    return [Note(text, "note", qualifies, key) for text in texts]


@dataclass
class Document:
    """What a command prints. ``lead``: the answer in sentences, first in every format; ``data``: the
    JSON form (the result's `to_dict()`); ``status``: the exit code (0 done, 2 bad input, 3 a job or
    the machine failed, 130 interrupted) and ``failure`` the one error line that goes with it;
    ``files``: what the command wrote and ``said`` what it says of its own work (both on stderr); ``title``: the
    HTML page's heading; ``footer``: what made the page (version, date, command); ``own``: the lines
    of a format the document writes itself (evaluate's `trec`: trec_eval's output byte for byte)."""

    lead: list[str] = field(default_factory=list)
    blocks: Sequence[Block] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    data: Any = None
    title: str | None = None
    files: list[Path] = field(default_factory=list)
    said: list[str] = field(default_factory=list)  # what the command says of its own work (stderr): how a name was matched
    status: int = 0
    failure: str | None = None
    footer: Paragraph | None = None
    own: dict[str, list[str]] = field(default_factory=dict)  # formats it writes itself: evaluate's `trec`

    def qualifying(self) -> list[Note]:
        """The notes that stand under the lead: the qualifying ones, warnings first."""
        return sorted((n for n in self.notes if n.qualifies), key=lambda n: n.kind != "warning")

    def trailing(self) -> list[Note]:
        """The other notes, after the blocks: warnings first, then notes, each in the order given."""
        return sorted((n for n in self.notes if not n.qualifies), key=lambda n: n.kind != "warning")

    def tables(self) -> list[Table]:
        """Every table, sections' included, in order."""
        return [block for block in walk(self.blocks) if isinstance(block, Table)]


def walk(blocks: Sequence[Block], *, folded: bool = True) -> list[Block]:
    """Every block in order, the blocks of sections and summaries included (a folded section's only
    when ``folded``)."""
    found: list[Block] = []
    for block in blocks:
        found.append(block)
        if isinstance(block, Summary) or isinstance(block, Section) and (folded or not block.folded):
            found += walk(block.blocks, folded=folded)
    return found
