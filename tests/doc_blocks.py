"""The examples of a markdown page, as tests/doc_examples.py reads them (its docstring has the rules).

A page is cut into fenced blocks (a fence at the start of a line) and the `<!-- doctest: ... -->`
markers around them. Each example is a command block (a shell block with a `qrelkit` line) or a
```python block; what it prints is shown by the output block after it (a plain or ```json block with
nothing but blank lines, or one paragraph ending in ':', between them), or by a marked region of
markdown (`<!-- doctest: output -->` ... `<!-- doctest: end -->`). A paragraph or table after
`<!-- doctest: numbers from ... -->` quotes numbers the program printed."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^```([\w+-]*)\s*$")
MARKER = re.compile(r"^<!-- doctest: (.*?) -->\s*$")
SHELL = {"", "bash", "sh", "shell", "console"}
OUTPUT = {"", "text", "json"}
# a line of a shell block that runs qrelkit, after any VAR=value settings
QRELKIT_LINE = re.compile(r"^(?:\w+=\S*\s+)*qrelkit\s")


@dataclass
class Shown:
    """What a page shows an example printed: a fenced output block or a marked markdown region."""

    first: int  # the first line of the text (0-based, inside the fence or region)
    lines: list[str]  # the text, one item a line
    info: str  # the fence's language ('' or 'json'), or 'markdown' for a region
    source: str | None = None  # FILE#ID: the text of a page the example wrote, up to the end of element ID


@dataclass
class Quote:
    """A paragraph or table whose numbers the program printed: ``source`` is 'above' or 'below'
    (what the example it belongs to printed: the one above it, or the next one below that shows its
    output) or ': COMMAND', a shell command run after the example above."""

    line: int
    text: str
    source: str


@dataclass
class Example:
    """A command or python block, the markers before it, and what the page shows it printed."""

    page: str  # the page's path from the repository root
    number: int  # 1-based among the page's examples
    kind: str  # 'command' or 'python'
    first: int
    code: str
    markers: list[str] = field(default_factory=list)
    shown: Shown | None = None
    quotes: list[Quote] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.page}#{self.number}"

    def marker(self, word: str) -> str | None:
        """The rest of this example's marker that starts with ``word`` ('' when it has no more), or None."""
        for marker in self.markers:
            if marker == word or marker.startswith(word + " "):
                return marker[len(word) :].strip()
        return None


@dataclass
class Page:
    path: Path
    name: str
    examples: list[Example]
    settings: list[str]  # the page's own markers (links ..., notebook)

    def setting(self, word: str) -> list[str]:
        return [m[len(word) :].strip() for m in self.settings if m.startswith(word + " ")]


def fenced(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line inside, line of the closing fence, language) of every fenced block."""
    blocks, start, info = [], None, ""
    for number, line in enumerate(lines):
        match = FENCE.match(line)
        if not match:
            continue
        if start is None:
            start, info = number + 1, match.group(1)
        else:
            blocks.append((start, number, info))
            start = None
    return blocks


def is_command(code: str, info: str) -> bool:
    return info in SHELL and any(QRELKIT_LINE.match(line.strip()) for line in code.splitlines())


def _between(lines: list[str], start: int, end: int) -> list[str]:
    return [line for line in lines[start:end] if line.strip()]


def _markers_before(lines: list[str], fence: int) -> list[str]:
    """The markers on the lines just above a fence (blank lines may stand between)."""
    found, number = [], fence - 1
    while number >= 0 and (not lines[number].strip() or MARKER.match(lines[number])):
        if match := MARKER.match(lines[number]):
            found.insert(0, match.group(1).strip())
        number -= 1
    return found


def _paragraph(lines: list[str], start: int) -> tuple[int, str]:
    """The paragraph (or table) that starts at the first non-blank line from ``start``."""
    while start < len(lines) and not lines[start].strip():
        start += 1
    end = start
    while end < len(lines) and lines[end].strip() and not MARKER.match(lines[end]):
        end += 1
    return start, "\n".join(lines[start:end])


def read_page(path: Path, root: Path) -> Page:
    lines = path.read_text(encoding="utf-8").splitlines()
    name = str(path.relative_to(root))
    blocks = fenced(lines)
    inside = {n for start, end, _ in blocks for n in range(start - 1, end + 1)}
    examples: list[Example] = []
    settings: list[str] = []
    claimed: set[int] = set()
    for index, (start, end, info) in enumerate(blocks):
        code = "\n".join(lines[start:end]) + "\n"
        if start in claimed:
            continue
        kind = "python" if info == "python" else "command" if is_command(code, info) else None
        if kind is None:
            continue
        example = Example(name, len(examples) + 1, kind, start, code, _markers_before(lines, start - 1))
        if index + 1 < len(blocks):
            nxt_start, nxt_end, nxt_info = blocks[index + 1]
            nxt_code = "\n".join(lines[nxt_start:nxt_end]) + "\n"
            gap = _between(lines, end + 1, nxt_start - 1)
            lead_in = not gap or (len(gap) <= 3 and gap[-1].rstrip().endswith(":") and not any(MARKER.match(g) for g in gap))
            if nxt_info in OUTPUT and lead_in and not is_command(nxt_code, nxt_info):
                example.shown = Shown(nxt_start, lines[nxt_start:nxt_end], nxt_info)
                claimed.add(nxt_start)
        examples.append(example)
    # regions, quotes and page settings, each to the example above it
    region_start = None
    later: list[Quote] = []
    for number, line in enumerate(lines):
        match = MARKER.match(line)
        if not match or number in inside:
            continue
        words = match.group(1).strip()
        above = [e for e in examples if e.first < number]
        if words.startswith("links ") or words == "notebook":
            settings.append(words)
        elif words == "output" or words.startswith("output from "):
            after = next((n for n in range(number + 1, len(lines)) if lines[n].strip()), None)
            fence = next((b for b in blocks if after is not None and b[0] == after + 1), None)
            if fence is not None:  # an output block the page puts after a longer introduction
                if not above:
                    raise ValueError(f"{name}:{number + 1}: an output marker with no example above it")
                source = words[len("output from ") :].strip() or None
                above[-1].shown = Shown(fence[0], lines[fence[0] : fence[1]], fence[2], source)
            elif words != "output":
                raise ValueError(f"{name}:{number + 1}: `{words}` must stand right above the fenced block it names")
            else:
                region_start = number + 1
        elif words == "end" and region_start is not None:
            if not above:
                raise ValueError(f"{name}:{number + 1}: an output region with no example above it")
            above[-1].shown = Shown(region_start, lines[region_start:number], "markdown")
            region_start = None
        elif words.startswith("numbers from"):
            first, text = _paragraph(lines, number + 1)
            source = words[len("numbers from") :].strip()
            if source == "below":
                later.append(Quote(first, text, source))
            elif not above:
                raise ValueError(f"{name}:{number + 1}: a quote marker with no example above it")
            else:
                above[-1].quotes.append(Quote(first, text, source))
        elif words.split()[0] not in ("skip", "slow", "shared", "uses"):
            raise ValueError(f"{name}:{number + 1}: an unknown doctest marker: {words}")
    for quote in later:  # "below": the next example that shows what it printed
        showing = [e for e in examples if e.first > quote.line and e.shown is not None]
        if not showing:
            raise ValueError(f"{name}:{quote.line + 1}: `numbers from below` with no example below it that shows its output")
        showing[0].quotes.append(quote)
    if region_start is not None:
        raise ValueError(f"{name}:{region_start}: `<!-- doctest: output -->` without its `<!-- doctest: end -->`")
    return Page(path, name, examples, settings)


def pages(root: Path) -> list[Page]:
    """README.md and every docs/*.md, in that order."""
    return [read_page(path, root) for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]]
