"""Run groups and run orders: the files that say which group a run belongs to (a team, a family
of methods) and in which order runs were submitted. One reader for both uses (Relative Δ toward
a group, NRG's prior sets).

A groups file is a table with a `run` column and any number of grouping columns, tab-separated
(or separated by any white space when it has no tab). A first line whose first field is `run` is a
header naming the columns; without one, the grouping columns are named by number (`2`, `3`, ...).
Lines starting with `#` and blank lines are skipped. A column is chosen as `FILE:COLUMN`; without
a column, the file's only grouping column (NRG's prior sets also take a column named `group`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from qrelkit.errors import InputFormatError, LineProblem
from qrelkit.io.lines import ProblemLog, iter_lines, raise_if_problems


def _data_lines(path: Path) -> list[tuple[int, str]]:
    problems = ProblemLog()
    lines = [(n, text.strip()) for n, text in iter_lines(path, problems) if not text.lstrip().startswith("#")]
    raise_if_problems(problems)
    return lines


def read_groups_table(path: str | Path) -> tuple[list[str], dict[str, dict[str, str]]]:
    """(grouping columns, run -> column -> value) of a groups file."""
    path = Path(path)
    problems = ProblemLog()
    columns: list[str] | None = None
    rows: dict[str, dict[str, str]] = {}
    first_seen: dict[str, int] = {}
    for number, line in _data_lines(path):
        fields = [f.strip() for f in line.split("\t")] if "\t" in line else line.split()
        if columns is None:
            if fields[0].lower() == "run":
                columns = fields[1:]
                if not columns or len(set(columns)) != len(columns) or not all(columns):
                    problems.append(LineProblem(str(path), number, "header needs `run` and distinct grouping column names"))
                    break
                continue
            columns = [str(i) for i in range(2, len(fields) + 1)]
            if not columns:
                problems.append(LineProblem(str(path), number, "expected `run<TAB>group...`, found one column"))
                break
        if len(fields) != len(columns) + 1:
            problems.append(
                LineProblem(str(path), number, f"expected {len(columns) + 1} columns (run, {', '.join(columns)}), found {len(fields)}")
            )
            continue
        if fields[0] in first_seen:
            problems.append(LineProblem(str(path), number, f"run {fields[0]!r} again (first on line {first_seen[fields[0]]})"))
            continue
        first_seen[fields[0]] = number
        rows[fields[0]] = dict(zip(columns, fields[1:]))
    raise_if_problems(problems)
    if not rows or columns is None:
        raise InputFormatError.single(path, 0, "no runs found (empty file?)")
    return columns, rows


def choose_column(
    path: str | Path, columns: list[str], column: str | None, *, default: str | None = None, hint: str = "FILE:COLUMN"
) -> str:
    """The named column; without a name, the only grouping column, else ``default`` when the file has it."""
    if column is None:
        if len(columns) == 1:
            return columns[0]
        if default is not None and default in columns:
            return default
        raise InputFormatError.single(path, 0, f"grouping columns {', '.join(columns)}: choose one with {hint}")
    if column not in columns:
        raise InputFormatError.single(path, 0, f"no column {column!r} (columns: {', '.join(columns)})")
    return column


def run_groups(
    path: str | Path,
    names: Sequence[str] | None = None,
    column: str | None = None,
    *,
    default: str | None = None,
    hint: str = "FILE:COLUMN",
) -> dict[str, str]:
    """run -> group (the chosen column's value); with ``names``, every one of them needs a line."""
    columns, rows = read_groups_table(path)
    column = choose_column(path, columns, column, default=default, hint=hint)
    if names is None:
        return {run: values[column] for run, values in rows.items()}
    missing = [n for n in names if n not in rows]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise InputFormatError.single(path, 0, f"no line for run(s) {shown}; every evaluated run needs a group")
    return {n: rows[n][column] for n in names}


def read_run_order(path: str | Path, names: Sequence[str]) -> list[str]:
    """Run names, one a line, oldest first ('#' comments and blank lines skipped); every run in ``names`` once."""
    path = Path(path)
    known, problems = set(names), ProblemLog()
    seen: dict[str, int] = {}
    for number, line in _data_lines(path):
        name = line.split()[0]
        if name not in known:
            problems.append(LineProblem(str(path), number, f"unknown run {name!r}; loaded runs: {', '.join(sorted(known))}"))
        elif name in seen:
            problems.append(LineProblem(str(path), number, f"run {name!r} already listed on line {seen[name]}"))
        else:
            seen[name] = number
    raise_if_problems(problems)
    missing = [n for n in names if n not in seen]
    if missing:
        raise InputFormatError.single(path, 0, f"the order must list every run; missing: {', '.join(missing)}")
    return sorted(seen, key=seen.__getitem__)
