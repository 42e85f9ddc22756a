"""Scores of whole runs made by another command or tool, read as orderings for `qrelkit correlate
--scores FILE`: `qrelkit fd --json`'s output (each FD@k and URR-FD@k of each run), or a text file
of `run score` lines (the ordering named by the file's stem, or by a `run NAME` header line).
Seed 000's Table 3 (FD@10 against the trec_eval measures) is then two commands."""

from __future__ import annotations

import re
from pathlib import Path

from qrelkit.errors import InputFormatError, LineProblem
from qrelkit.io.lines import ProblemLog, iter_lines, raise_if_problems
from qrelkit.io.numbers import ascii_float32
from qrelkit.io.structured import json_value

FD_LABEL = re.compile(r"(URR-)?FD@\d+")

Orderings = dict[str, dict[str, float]]  # ordering label -> run -> score


def read_run_scores(path: str | Path) -> Orderings:
    """The orderings a file holds; any problem is one line naming the file (and the line)."""
    path = Path(path)
    if not path.is_file():
        raise InputFormatError.single(path, 0, "no such file")
    if path.suffix.lower() == ".json":
        return _fd_json(path)
    return _score_lines(path)


def _fd_json(path: Path) -> Orderings:
    """`qrelkit fd --json`: {"runs": {run: {"FD@10": value, "FD@10_ci95": [...], ...}}}; a run whose FD is
    undefined (null, with its reason) is left out of that ordering."""
    try:
        payload = json_value(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputFormatError.single(path, 0, str(exc)) from None
    runs = payload.get("runs") if isinstance(payload, dict) else None
    if not isinstance(runs, dict) or not runs:
        raise InputFormatError.single(path, 0, "expected `qrelkit fd --json` output: an object with a `runs` object of runs")
    out: Orderings = {}
    for run, values in runs.items():
        if not isinstance(values, dict):
            raise InputFormatError.single(path, 0, f"runs.{run}: expected an object of FD values")
        for label, value in values.items():
            if FD_LABEL.fullmatch(label) and isinstance(value, int | float) and not isinstance(value, bool):
                out.setdefault(label, {})[str(run)] = float(value)
    if not out:
        raise InputFormatError.single(path, 0, "no FD@k value of any run (`qrelkit fd --json` output expected)")
    return out


def _score_lines(path: Path) -> Orderings:
    problems = ProblemLog()
    label = path.stem
    scores: dict[str, float] = {}
    first_line: dict[str, int] = {}
    for number, text in iter_lines(path, problems):
        cols = text.split()
        if len(cols) != 2:
            problems.append(LineProblem(str(path), number, f"expected `run score`, found {len(cols)} columns"))
            continue
        if number == 1 and cols[0] == "run":
            label = cols[1]  # a header naming the ordering
            continue
        try:
            score = ascii_float32(cols[1], "score (column 2)")
        except ValueError as exc:
            problems.append(LineProblem(str(path), number, str(exc)))
            continue
        if cols[0] in first_line:
            problems.append(LineProblem(str(path), number, f"run {cols[0]!r} again (first on line {first_line[cols[0]]})"))
            continue
        first_line[cols[0]] = number
        scores[cols[0]] = score
    raise_if_problems(problems)
    if not scores:
        raise InputFormatError.single(path, 0, "no `run score` line (empty file?)")
    return {label: scores}
