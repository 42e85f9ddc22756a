"""Text from data, made safe to show on a terminal.

A topic's text, a qid, a docid, a model's answer or a provider's error message may hold terminal
control sequences (`ESC ] 0 ; title BEL` retitles the window, `ESC [ 2 J` clears the screen, others
have been used to rewrite what a user sees or to write to files). Wherever such text reaches the
terminal, control characters are shown escaped (`\\x1b`), never sent as they are. Newlines and tabs
are kept; JSON output escapes them by itself.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, and the C1 controls (which some terminals obey as ESC-sequences)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab written as an escape (``\\x1b``)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
