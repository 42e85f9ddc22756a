"""Which (qid, docid) pairs a job judges: top-k of runs, an explicit pairs file, or a qrels set (the
first and the last are queries of the store: `qrelkit.storage.pools`)."""

from __future__ import annotations

from pathlib import Path

from qrelkit.errors import LineProblem
from qrelkit.io.lines import ProblemLog, iter_lines, raise_if_problems
from qrelkit.storage.pools import depth_pool, qrels_pool

__all__ = ["depth_pool", "pairs_file_pool", "qrels_pool"]


def pairs_file_pool(path: str | Path) -> list[tuple[str, str]]:
    """A file of `qid docid` lines (extra columns, as in a qrels or run file, are ignored)."""
    problems = ProblemLog()
    pairs: set[tuple[str, str]] = set()
    for number, text in iter_lines(path, problems):
        cols = text.split()
        if len(cols) == 2:
            pairs.add((cols[0], cols[1]))
        elif len(cols) == 4:  # qrels: qid iter docid grade
            pairs.add((cols[0], cols[2]))
        elif len(cols) == 6:  # run: qid Q0 docid rank score tag
            pairs.add((cols[0], cols[2]))
        else:
            problems.append(LineProblem(str(path), number, f"expected `qid docid` (or a qrels/run line), found {len(cols)} columns"))
    raise_if_problems(problems)
    return sorted(pairs)
