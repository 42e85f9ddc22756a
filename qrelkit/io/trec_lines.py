"""The line-by-line reader of TREC runs and qrels: the rules, and the `file:line` messages.

This reader is the definition; `qrelkit.io.columnar` is a faster route to the same columns,
which comes back here to name the lines whenever it finds anything wrong. Both follow these
rules:

- columns are split on any whitespace (Python's `str.split`, as trec_eval splits on `isspace`);
- a run line has at least 6 columns: trec_eval 9.0.8 reads the 6th as the tag and skips the rest of
  the line (its own test/results.trunc has such lines), so columns after the 6th are ignored too,
  and the reading says so in a note (`RunLines.notes`);
- a qrels line whose first character is `#` is a comment, as trec_eval 10.0 reads qrels (9.0.8
  has no comments; 10.0 misreads the second of two comment lines in a row as a judgment, and
  crashes on some: every such line is a comment here);
- ranks and grades are 64-bit integers written with ASCII digits and an optional sign
  (`1_000`, `٣` and `0x10` are not integers: trec_eval's `atol` would not read them so);
- scores are ASCII decimal numbers, finite when rounded to float32 (trec_eval keeps scores as
  C floats, so a score beyond ±3.4e38 would be infinite there); they are kept as written (float64):
  trec_eval's order compares them as float32 (`Run.scores32`), ir_measures' Judged@k and the
  compatibility authors' script compare them as written;
- a repeated (qid, docid) is an error unless a policy says which one to keep.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from qrelkit.errors import InputFormatError, LineProblem
from qrelkit.io import arrays
from qrelkit.io.duplicates import OnDuplicate
from qrelkit.io.lines import ProblemLog, iter_lines, raise_if_problems

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INTEGER = re.compile(r"[+-]?[0-9]+")
DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
NON_FINITE = re.compile(r"[+-]?(?:inf|infinity|nan)", re.IGNORECASE)

RUN_SCHEMA = pa.schema([("qid", pa.string()), ("docid", pa.string()), ("rank", pa.int64()), ("score", pa.float64())])
QRELS_SCHEMA = pa.schema([("qid", pa.string()), ("iteration", pa.string()), ("docid", pa.string()), ("grade", pa.int64())])


# A fractional value in qrels is a judging method's score (exam, nugget methods): where it can go.
SCORES_HINT = (
    " (a judge's scores? `qrelkit agree --model-qrels` and `qrelkit compare --judge` read such a file as scores; "
    "`qrelkit import scores` then `qrelkit grade` makes graded qrels of it)"
)


def parse_integer(text: str, what: str) -> int | str:
    """The value, or the message saying why ``text`` is not a 64-bit integer."""
    if not INTEGER.fullmatch(text):
        return f"{what} must be an integer, found {text!r}"
    value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:
        return f"{what} is beyond the 64-bit integer range, found {text!r}"
    return value


def parse_score(text: str) -> float | str:
    """The score as written, or the message saying what is wrong (it must be finite as float32)."""
    if NON_FINITE.fullmatch(text):
        return f"score (column 5) is not finite: {text!r}"
    if not DECIMAL.fullmatch(text):
        return f"score (column 5) must be a number, found {text!r}"
    value = float(text)
    with np.errstate(over="ignore"):
        rounded = float(np.float32(value))
    if not math.isfinite(rounded):
        return f"score (column 5) is not finite as a 32-bit float (trec_eval reads scores as C floats): {text!r}"
    return value


class Kept:
    """(qid, docid) -> (line, magnitude, row), resolving a repeat by the policy."""

    def __init__(self, path: Path, policy: OnDuplicate, problems: ProblemLog, what: str):
        self.path, self.policy, self.problems, self.what = path, policy, problems, what
        self.items: dict[tuple[str, str], tuple[int, float, tuple[Any, ...]]] = {}

    def add(self, key: tuple[str, str], row: tuple[Any, ...], magnitude: float, line: int) -> None:
        previous = self.items.get(key)
        if previous is None:
            self.items[key] = (line, magnitude, row)
        elif self.policy is OnDuplicate.error:
            self.problems.append(
                LineProblem(
                    str(self.path),
                    line,
                    f"duplicate {self.what} for qid {key[0]!r}, docid {key[1]!r} (first on line {previous[0]}); "
                    "choose how to resolve with --on-duplicate first|last|max",
                )
            )
        elif self.policy is OnDuplicate.last or (self.policy is OnDuplicate.max and magnitude > previous[1]):
            self.items[key] = (line, magnitude, row)

    def rows_in_file_order(self) -> list[tuple[Any, ...]]:
        return [item[2] for item in sorted(self.items.values(), key=lambda item: item[0])]


class RunLines(NamedTuple):
    """A run file read: its columns, its distinct tags, and notes on what the reading left out."""

    table: pa.Table
    tags: list[str]
    notes: tuple[str, ...] = ()


def is_comment(text: str) -> bool:
    """A qrels comment line: `#` in its first column (trec_eval 10.0's rule)."""
    return text.startswith("#")


def extra_columns_note(path: Path, lines: int, first: int, widest: int) -> str:
    return (
        f"{path}: {lines} line{'s' if lines != 1 else ''} with more than 6 columns (the first: line {first}; up to {widest}): "
        "what follows the 6th column (the tag) is ignored, as trec_eval ignores it"
    )


def rows_table(rows: list[tuple[Any, ...]], schema: pa.Schema) -> pa.Table:
    names = schema.names
    columns = [arrays.column([row[i] for row in rows], schema.field(name).type) for i, name in enumerate(names)]
    return pa.Table.from_arrays(columns, schema=schema)


def read_run_lines(path: str | Path, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> RunLines:
    """(qid, docid, rank, score) in file order, the distinct tags, and a note on lines with more
    than 6 columns; every problem named by line."""
    path = Path(path)
    policy = OnDuplicate(on_duplicate)
    problems = ProblemLog()
    kept = Kept(path, policy, problems, "run entry")
    tags: set[str] = set()
    longer, first_longer, widest = 0, 0, 0
    for number, text in iter_lines(path, problems):
        cols = text.split()
        if len(cols) < 6:
            problems.append(LineProblem(str(path), number, f"expected 6 columns `qid Q0 docid rank score tag`, found {len(cols)}"))
            continue
        if len(cols) > 6:
            longer, first_longer, widest = longer + 1, first_longer or number, max(widest, len(cols))
        qid, _, docid, rank_text, score_text, tag = cols[:6]
        rank = parse_integer(rank_text, "rank (column 4)")
        if isinstance(rank, str):
            problems.append(LineProblem(str(path), number, rank))
            continue
        score = parse_score(score_text)
        if isinstance(score, str):
            problems.append(LineProblem(str(path), number, score))
            continue
        tags.add(tag)
        kept.add((qid, docid), (qid, docid, rank, score), score, number)
    raise_if_problems(problems)
    if not kept.items:
        raise InputFormatError.single(path, 0, "no run entries found (empty file?)")
    notes = (extra_columns_note(path, longer, first_longer, widest),) if longer else ()
    return RunLines(rows_table(kept.rows_in_file_order(), RUN_SCHEMA), sorted(tags), notes)


def read_qrels_lines(path: str | Path, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> pa.Table:
    """(qid, iteration, docid, grade) in file order; every problem named by line."""
    path = Path(path)
    policy = OnDuplicate(on_duplicate)
    problems = ProblemLog()
    kept = Kept(path, policy, problems, "judgment")
    hinted = False
    for number, text in iter_lines(path, problems):
        if is_comment(text):
            continue
        cols = text.split()
        if len(cols) != 4:
            problems.append(LineProblem(str(path), number, f"expected 4 columns `qid iter docid grade`, found {len(cols)}"))
            continue
        qid, iteration, docid, grade_text = cols
        grade = parse_integer(grade_text, "grade (column 4)")
        if isinstance(grade, str):
            hint = SCORES_HINT if DECIMAL.fullmatch(grade_text) and not hinted else ""  # said once, on the first such line
            hinted = hinted or bool(hint)
            problems.append(LineProblem(str(path), number, grade + hint))
            continue
        kept.add((qid, docid), (qid, iteration, docid, grade), grade, number)
    raise_if_problems(problems)
    if not kept.items:
        raise InputFormatError.single(path, 0, "no judgments found (empty file?)")
    return rows_table(kept.rows_in_file_order(), QRELS_SCHEMA)


def raise_beyond(path: str | Path, column: int, what: str, low: int, high: int, why: str, *, comments: bool = False) -> None:
    """Name every line whose integer in ``column`` (1-based) lies outside [low, high]: a bound of
    where the file goes (the store keeps ranks and grades as 32-bit integers), not of the format.
    ``comments``: the file is qrels, whose `#` lines are comments."""
    path = Path(path)
    problems = ProblemLog()
    for number, text in iter_lines(path, problems):
        if comments and is_comment(text):
            continue
        cols = text.split()
        if len(cols) >= column and INTEGER.fullmatch(cols[column - 1]) and not low <= int(cols[column - 1]) <= high:
            problems.append(LineProblem(str(path), number, f"{what} (column {column}) {cols[column - 1]!r} is beyond {why}"))
    raise_if_problems(problems)
    raise InputFormatError.single(path, 0, f"a {what} (column {column}) is beyond {why}")
