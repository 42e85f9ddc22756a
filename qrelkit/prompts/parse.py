"""Turn what a model wrote into a score: tolerant of prose and markdown, strict about range."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from qrelkit.prompts.template import PromptTemplate

# Markdown emphasis and code marks models wrap around labels and numbers ("**Relevance:** `85`").
_MARKUP = re.compile(r"[*_`#>]+")


@dataclass(frozen=True)
class ParsedScore:
    score: float | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def parse_score(output: str | None, template: PromptTemplate) -> ParsedScore:
    """The last match of the template's pattern, within its score range.

    The last match wins because models often restate the format ("Output format should be
    'Relevance: <score>'") before answering, or reason first and conclude last. A fraction
    such as "85/100" is read as its numerator when the denominator is the range's top.
    """
    if output is None or not output.strip():
        return ParsedScore(None, "empty output")
    found = _last_match(output, template)
    if found is None:
        return ParsedScore(None, f"no match for {template.parser.pattern!r}")
    match, text, _ = found
    try:
        score = float(match.group("score"))
    except (TypeError, ValueError):
        return ParsedScore(None, f"matched {match.group(0)!r} but its score is not a number")
    low, high = template.score_range
    tail = text[match.end("score") :]
    fraction = re.match(r"\s*/\s*(\d+(?:\.\d+)?)", tail)
    if fraction and float(fraction.group(1)) != high:
        return ParsedScore(None, f"score {match.group(0)}{fraction.group(0)} is not on the {low:g}-{high:g} scale")
    if not math.isfinite(score) or not low <= score <= high:
        return ParsedScore(None, f"score {score:g} outside the range {low:g}-{high:g}")
    return ParsedScore(score)


def _last_match(output: str, template: PromptTemplate) -> tuple[re.Match[str], str, list[int]] | None:
    """The parser's last match in the output with markup removed, that text, and for each of its
    characters the offset of the same character in ``output``."""
    kept: list[int] = []
    position = 0
    for markup in _MARKUP.finditer(output):
        kept.extend(range(position, markup.start()))
        position = markup.end()
    kept.extend(range(position, len(output)))
    text = "".join(output[i] for i in kept)
    matches = list(re.compile(template.parser.pattern, re.IGNORECASE).finditer(text))
    return (matches[-1], text, kept) if matches else None


def score_offset(output: str | None, template: PromptTemplate) -> int | None:
    """Where in ``output`` the score that :func:`parse_score` reads begins (None without a match):
    how a generative judge finds the answer position of a free answer."""
    if not output:
        return None
    found = _last_match(output, template)
    if found is None:
        return None
    match, _, kept = found
    start = match.start("score")
    return kept[start] if 0 <= start < len(kept) else None
