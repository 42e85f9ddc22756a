"""A judgment file as a judging method writes it: TREC qrels lines `qid iter docid value`, where the
value may be an integer grade (binary, UMBRELA), a count (pairwise-preference wins per passage) or
any number (the exam and nugget methods' fractions, e.g. Arabzadeh and Clarke's released files).

Read as a judge, such a file is never refused for its numbers: integer values (`2` or `2.0`) are
grades, as in any qrels file; any other finite numbers are the judge's *scores*, kept as given
(`Qrels.scored`) for the measures that read only their order (compatibility), while a measure that
reads grades as gains, or κ, says they are scores and names the route to graded qrels. A repeated
(qid, docid) is an error, or resolved by ``on_duplicate`` and counted (`JudgeFile.repeats`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

import numpy as np
import pyarrow as pa

from qrelkit.errors import InputFormatError, LineProblem, SkippedFilesWarning
from qrelkit.io import arrays
from qrelkit.io.columnar import fast_qrels_table, fast_value_table
from qrelkit.io.duplicates import OnDuplicate
from qrelkit.io.files import folder_files
from qrelkit.io.lines import ProblemLog, iter_lines, raise_if_problems
from qrelkit.io.paths import NOT_DATA_SUFFIXES, run_name_from_path
from qrelkit.io.trec import Qrels
from qrelkit.io.trec_lines import DECIMAL, INT64_MAX, INT64_MIN, INTEGER, QRELS_SCHEMA, Kept, is_comment

# Files a folder of judgment files often holds beside them: never judgments.
_NOT_JUDGMENT_STEMS = {"readme", "license", "licence", "copying", "notice", "changelog", "manifest"}


@dataclass(frozen=True)
class JudgeFile:
    """A judge's qrels from one file, and how they were read."""

    qrels: Qrels
    lines: int  # judgment lines read
    repeats: int  # lines dropped as repeats of a (qid, docid) by ``on_duplicate``
    on_duplicate: OnDuplicate

    @property
    def values(self) -> str:
        return "scores" if self.qrels.scored else "grades"

    def describe(self) -> dict[str, object]:
        """Plain data for a judge's `source`."""
        out: dict[str, object] = {"values": self.values, "lines": self.lines}
        if self.repeats:
            out["repeats"] = {"lines_dropped": self.repeats, "kept": self.on_duplicate.value}
        return out

    def repeat_note(self) -> str | None:
        """One line when repeated pairs were merged: never silently."""
        if not self.repeats:
            return None
        kept = {"first": "the first", "last": "the last", "max": "the highest value"}[self.on_duplicate.value]
        return (
            f"{self.qrels.source}: {self.repeats:,} of {self.lines:,} lines repeat a (qid, docid) pair; "
            f"--on-duplicate {self.on_duplicate.value} kept {kept} of each"
        )


def not_a_judgment_file(path: Path) -> str | None:
    """Why a file in a folder of judgment files is not one (None when it may be one)."""
    if path.name.startswith("."):
        return "hidden file"
    if path.name.split(".")[0].lower() in _NOT_JUDGMENT_STEMS:
        return "not a judgment file (" + path.name.split(".")[0].upper() + ")"
    if path.suffix.lower() in NOT_DATA_SUFFIXES:
        return f"not a judgment file ({path.suffix.lower()})"
    return None


def judgment_files(folder: str | Path) -> list[Path]:
    """The judgment files of a folder, sorted by name; files evidently not judgments (a README) are
    left out and named in one warning (hidden files silently)."""
    folder = Path(folder)
    files, other = folder_files(folder)
    reasons = {path: not_a_judgment_file(path) for path in files}
    kept = [path for path, reason in reasons.items() if reason is None]
    left_out = [f"{path} ({reason})" for path, reason in [*other, *reasons.items()] if reason not in (None, "hidden file")]
    if left_out:
        warnings.warn(f"skipped {', '.join(left_out)}", SkippedFilesWarning, stacklevel=2)
    if not kept:
        raise InputFormatError.single(folder, 0, "no judgment files in this folder")
    return kept


def _value(text: str) -> int | float | str:
    """An ASCII integer (64-bit) or finite decimal number, or the message saying what is wrong."""
    if INTEGER.fullmatch(text):
        value = int(text)
        return value if INT64_MIN <= value <= INT64_MAX else f"value (column 4) is beyond the 64-bit integer range, found {text!r}"
    if DECIMAL.fullmatch(text):
        number = float(text)
        return number if math.isfinite(number) else f"value (column 4) is not finite, found {text!r}"
    return f"value (column 4) must be a number, found {text!r}"


def _read_lines(path: Path, policy: OnDuplicate) -> tuple[list[tuple[str, str, str, int | float]], int]:
    """(qid, iteration, docid, value) rows in file order after resolving repeats, and the lines read."""
    problems = ProblemLog()
    kept = Kept(path, policy, problems, "judgment")
    lines = 0
    for number, text in iter_lines(path, problems):
        if is_comment(text):  # a qrels comment, as the qrels reader skips it
            continue
        cols = text.split()
        if len(cols) != 4:
            problems.append(LineProblem(str(path), number, f"expected 4 columns `qid iter docid value`, found {len(cols)}"))
            continue
        value = _value(cols[3])
        if isinstance(value, str):
            problems.append(LineProblem(str(path), number, value))
            continue
        lines += 1
        kept.add((cols[0], cols[2]), (cols[0], cols[1], cols[2], value), value, number)
    raise_if_problems(problems)
    if not kept.items:
        raise InputFormatError.single(path, 0, "no judgments found (empty file?)")
    return kept.rows_in_file_order(), lines


def order_codes(values: np.ndarray) -> np.ndarray:
    """0 for a value ≤ 0 (not relevant), else 1 + the rank of the value among the distinct positive ones."""
    positive = values > 0
    levels = np.unique(values[positive])
    return np.where(positive, np.searchsorted(levels, values) + 1, 0).astype(np.int64)


def _table(rows: list[tuple[str, str, str, int | float]]) -> pa.Table:
    qid, iteration, docid = (arrays.column([row[i] for row in rows], pa.string()) for i in range(3))
    values = [row[3] for row in rows]
    if all(isinstance(v, int) or float(v).is_integer() for v in values) and all(INT64_MIN <= v <= INT64_MAX for v in values):
        return pa.Table.from_arrays([qid, iteration, docid, arrays.column([int(v) for v in values], pa.int64())], schema=QRELS_SCHEMA)
    return _scores(qid, iteration, docid, np.asarray(values, dtype=np.float64))


Column: TypeAlias = pa.Array | pa.ChunkedArray


def _scores(qid: Column, iteration: Column, docid: Column, numbers: np.ndarray) -> pa.Table:
    grade = arrays.from_numpy(order_codes(numbers))
    return pa.Table.from_arrays([qid, iteration, docid, grade, arrays.from_numpy(numbers)], names=[*QRELS_SCHEMA.names, "value"])


def _columnar(values: pa.Table) -> pa.Table:
    """`fast_value_table`'s columns as `_table` makes them: integer grades when every value is one."""
    qid, iteration, docid = (values.column(name) for name in ("qid", "iteration", "docid"))  # chunked as read: not copied
    numbers = arrays.numbers(values.column("value"))
    if bool(np.all(np.floor(numbers) == numbers)) and bool(np.all(np.abs(numbers) < 2.0**63)):
        return pa.Table.from_arrays([qid, iteration, docid, arrays.from_numpy(numbers.astype(np.int64))], schema=QRELS_SCHEMA)
    return _scores(qid, iteration, docid, numbers)


def read_judge_file(path: str | Path, *, name: str | None = None, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> JudgeFile:
    """A judge's judgments from a TREC qrels-layout file; see the module docstring."""
    path, policy = Path(path), OnDuplicate(on_duplicate)
    name = name or run_name_from_path(path)
    if policy is OnDuplicate.error:
        # a file of integer grades: the fast reader, exactly as any qrels file; anything else (fractional
        # values, or a real problem) goes straight to the line reader below, which names it
        table = fast_qrels_table(path, policy)
        if table is not None:
            return JudgeFile(Qrels.from_table(name, table, source=str(path)), table.num_rows, 0, policy)
    # any numbers, in columns (a 5,000,000-line file of fractions in a few hundred MB, not a dict per
    # line); a file this route cannot vouch for goes to the line reader, which names its lines
    fast = fast_value_table(path, policy)
    if fast is not None:
        values, lines = fast
        return JudgeFile(Qrels.from_table(name, _columnar(values), source=str(path)), lines, lines - values.num_rows, policy)
    rows, lines = _read_lines(path, policy)
    return JudgeFile(Qrels.from_table(name, _table(rows), source=str(path)), lines, lines - len(rows), policy)
