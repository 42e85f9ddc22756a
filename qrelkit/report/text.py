"""Text from data, made safe to show on a terminal.

A topic's text, a qid, a docid, a model's answer or a provider's error message may hold terminal
control sequences (`ESC ] 0 ; title BEL` retitles the window, `ESC [ 2 J` clears the screen, others
have been used to rewrite what a user sees or to write to files). Wherever such text reaches the
terminal, control characters are shown escaped (`\\x1b`), never sent as they are. Newlines and tabs
are kept; JSON output escapes them by itself.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, the C1 controls (which some terminals obey as ESC-sequences),
# and the bidirectional controls and invisible characters, which reorder or hide the text around them
# (not the zero-width joiners, which scripts and emoji need)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]")


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab written as an escape (``\\x1b``,
    ``\\u202e``)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


def one_line(text: str) -> str:
    """``text`` on one line: control characters escaped, and newlines, carriage returns and tabs as
    `\\n`, `\\r`, `\\t` (a name holding one would otherwise start a new line of the output)."""
    return printable(
        str(text).replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    )


def latex_comment(text: str) -> str:
    """``text`` as one LaTeX comment line, `% ...`: a newline in it would end the comment and make
    what follows LaTeX that runs (`\\input{...}`), so it stays on the line."""
    return "% " + one_line(text)


_MARKDOWN = {"\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]", "&": "&amp;", "<": "&lt;", ">": "&gt;"}


def markdown_text(text: str) -> str:
    """Text from data in Markdown, shown as the text it is: on one line, `&`, `<` and `>` as HTML
    entities (a renderer passes raw HTML through: `<script>` would run), `|` (a table's cell
    boundary), `[`, `]` (links) and the backslash escaped."""
    return "".join(_MARKDOWN.get(ch, ch) for ch in one_line(text))
