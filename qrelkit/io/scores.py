"""Scores made elsewhere: `qid docid score` (tab- or space-separated) or a TREC qrels-layout file
(`qid iter docid value`, the value an integer grade or any number), read for `qrelkit import scores`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from qrelkit.errors import InputFormatError, LineProblem
from qrelkit.io.lines import ProblemLog, file_sha256, iter_lines, raise_if_problems
from qrelkit.io.numbers import ascii_float32, ascii_int

_INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class ScoresFile:
    path: str
    sha256: str
    format: str  # "scores" (qid docid score) or "qrels" (qid iter docid grade)
    entries: list[tuple[str, str, float]]


def _qrels_value(text: str) -> float:
    """Column 4 of a qrels-layout file: an integer grade, or any number a judging method wrote (the
    exam and nugget methods' fractions): both are the judge's scores here, graded by `qrelkit grade`."""
    if _INTEGER.fullmatch(text):  # a grade: within 64 bits, as any qrels grade
        return float(ascii_int(text, "grade (column 4)"))
    return ascii_float32(text, "value (column 4)")


def read_scores(path: str | Path) -> ScoresFile:
    """Every line `qid docid score`, or every line a TREC qrels line; one (qid, docid) once."""
    path = Path(path)
    problems = ProblemLog()
    entries: list[tuple[str, str, float]] = []
    first_line: dict[tuple[str, str], int] = {}
    form: str | None = None
    for number, text in iter_lines(path, problems):
        cols = text.split()
        if form is None:
            form = {3: "scores", 4: "qrels"}.get(len(cols))
            if form is None:
                problems.append(
                    LineProblem(str(path), number, f"expected `qid docid score` or `qid iter docid grade`, found {len(cols)} columns")
                )
                break
        expected = 3 if form == "scores" else 4
        if len(cols) != expected:
            layout = "`qid docid score`" if form == "scores" else "`qid iter docid grade`"
            problems.append(LineProblem(str(path), number, f"expected {expected} columns {layout} as on the first line, found {len(cols)}"))
            continue
        qid, docid, value = (cols[0], cols[1], cols[2]) if form == "scores" else (cols[0], cols[2], cols[3])
        try:
            score = ascii_float32(value, "score (column 3)") if form == "scores" else _qrels_value(value)
        except ValueError as exc:
            problems.append(LineProblem(str(path), number, str(exc)))
            continue
        key = (qid, docid)
        if key in first_line:
            problems.append(LineProblem(str(path), number, f"qid {qid!r}, docid {docid!r} again (first on line {first_line[key]})"))
            continue
        first_line[key] = number
        entries.append((qid, docid, score))
    raise_if_problems(problems)
    if not entries:
        raise InputFormatError.single(path, 0, "no scores found (empty file?)")
    return ScoresFile(str(path), file_sha256(path), form or "scores", entries)
