"""Query-id lists: one qid per line (the form of the ReSTTest bucket files Zhan et al. released)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from qrelkit.errors import InputFormatError, LineProblem
from qrelkit.io.lines import iter_lines, raise_if_problems


def read_qid_list(path: str | Path, *, allow_empty: bool = False) -> dict[str, int]:
    """qid -> line number, in file order. A line holds one qid (no spaces); a qid may not repeat."""
    path = Path(path)
    problems: list[LineProblem] = []
    qids: dict[str, int] = {}
    for number, text in iter_lines(path, problems):
        fields = text.split()
        if len(fields) != 1:
            problems.append(LineProblem(str(path), number, f"expected one qid per line, found {len(fields)} fields"))
        elif fields[0] in qids:
            problems.append(LineProblem(str(path), number, f"qid {fields[0]!r} repeats (first on line {qids[fields[0]]})"))
        else:
            qids[fields[0]] = number
    raise_if_problems(problems)
    if not qids and not allow_empty:
        raise InputFormatError.single(path, 0, "no qids found (empty file?)")
    return qids


def write_qid_list(qids: Iterable[str], path: str | Path) -> None:
    text = "".join(f"{qid}\n" for qid in qids)
    Path(path).write_text(text, encoding="utf-8")
