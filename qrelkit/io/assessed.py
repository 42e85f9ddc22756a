"""What assessors return: the grades of a design's planned pairs, checked line by line.

A file is TREC qrels (`qid iter docid grade`, the template `qrelkit assess plan` writes with the
grade left empty) or the plan's TSV with its `grade` column filled in. Every problem is named by
file and line: a pair the design did not plan (or one whose query or document was changed), a
grade left empty, a grade that is not a whole number or lies outside the design's scale, a pair
graded twice with different grades; and, for the file as a whole, planned pairs that got no
grade. Nothing is returned (so nothing is stored) unless the whole file is right.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

from qrelkit.errors import LineProblem, QrelkitError
from qrelkit.io.lines import iter_lines, raise_if_problems

SHOWN = 5


def _fields(text: str, tsv_columns: dict[str, int] | None) -> tuple[str, str, str | None] | None:
    if tsv_columns is not None:
        cells = text.split("\t")
        if len(cells) <= max(tsv_columns["qid"], tsv_columns["docid"]):
            return None
        grade_at = tsv_columns["grade"]
        grade = cells[grade_at].strip() if grade_at < len(cells) else ""
        return cells[tsv_columns["qid"]].strip(), cells[tsv_columns["docid"]].strip(), grade or None
    cols = text.split()
    if len(cols) == 4:
        return cols[0], cols[2], cols[3]
    if len(cols) == 3:
        return cols[0], cols[2], None
    return None


def read_grades(
    path: str | Path,
    planned: Collection[tuple[str, str]],
    scale: tuple[int, int],
    design: str,
    known: Mapping[tuple[str, str], int] | None = None,
) -> dict[tuple[str, str], int]:
    """(qid, docid) -> grade for every planned pair, from ``path`` and the grades ``known`` already
    (loaded before: a pair graded again must keep its grade). Raises InputFormatError naming each
    bad line, or the planned pairs without a grade."""
    path = Path(path)
    problems: list[LineProblem] = []
    grades: dict[tuple[str, str], int] = {}
    first_line: dict[tuple[str, str], int] = {}
    known = known or {}
    planned = planned if isinstance(planned, set | frozenset | dict) else set(planned)
    tsv_columns: dict[str, int] | None = None
    low, high = scale
    for number, text in iter_lines(path, problems):
        if number == 1 and "\t" in text and text.split("\t")[0].strip().lower() == "qid":
            names = [cell.strip().lower() for cell in text.split("\t")]
            if "docid" not in names or "grade" not in names:
                problems.append(LineProblem(str(path), number, "a TSV header needs qid, docid and grade columns"))
                break
            tsv_columns = {name: names.index(name) for name in ("qid", "docid", "grade")}
            continue
        found = _fields(text, tsv_columns)
        if found is None:
            problems.append(LineProblem(str(path), number, "expected `qid iter docid grade` (TREC qrels) or the plan's TSV columns"))
            continue
        qid, docid, raw = found
        pair = (qid, docid)
        if pair not in planned:
            problems.append(
                LineProblem(str(path), number, f"({qid}, {docid}) is not a planned pair of design {design!r} (changed or added?)")
            )
            continue
        if raw is None:
            problems.append(LineProblem(str(path), number, f"no grade for ({qid}, {docid})"))
            continue
        try:
            grade = int(raw)
        except ValueError:
            problems.append(LineProblem(str(path), number, f"grade {raw!r} of ({qid}, {docid}) is not a whole number"))
            continue
        if not low <= grade <= high:
            problems.append(LineProblem(str(path), number, f"grade {grade} of ({qid}, {docid}) is outside the design's scale {low}-{high}"))
            continue
        earlier = grades.get(pair, known.get(pair))
        if earlier is not None and earlier != grade:
            where = f"line {first_line[pair]}" if pair in first_line else "the labels loaded before"
            problems.append(LineProblem(str(path), number, f"({qid}, {docid}) is graded {grade} here and {earlier} at {where}"))
            continue
        grades[pair] = grade
        first_line.setdefault(pair, number)
    raise_if_problems(problems)
    merged = {**known, **grades}
    missing = [pair for pair in planned if pair not in merged]
    if missing:
        missing.sort()
        shown = ", ".join(f"({q}, {d})" for q, d in missing[:SHOWN])
        more = f" and {len(missing) - SHOWN} more" if len(missing) > SHOWN else ""
        raise QrelkitError(f"{path}: {len(missing)} planned pair(s) of design {design!r} have no grade: {shown}{more}")
    return merged
