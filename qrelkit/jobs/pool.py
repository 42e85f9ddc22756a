"""Which (qid, docid) pairs a job judges: top-k of runs, an explicit pairs file, or a qrels set, as
queries of the store (`qrelkit.storage.pools`); a pairs file is staged there block by block."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from qrelkit.errors import LineProblem
from qrelkit.io.lines import ProblemLog, iter_lines, raise_if_problems
from qrelkit.storage.pools import depth_pool, depth_pool_query, qrels_pool, qrels_pool_query

__all__ = ["depth_pool", "depth_pool_query", "pairs_file_blocks", "qrels_pool", "qrels_pool_query"]

PAIRS_PER_BLOCK = 65_536


def pairs_file_blocks(path: str | Path, size: int = PAIRS_PER_BLOCK) -> Iterator[list[tuple[str, str]]]:
    """The pairs of a file of `qid docid` lines (extra columns, as in a qrels or run file, are
    ignored), ``size`` at a time; after the last block, the file's bad lines are raised, named."""
    problems = ProblemLog()
    block: list[tuple[str, str]] = []
    for number, text in iter_lines(path, problems):
        cols = text.split()
        if len(cols) == 2:
            block.append((cols[0], cols[1]))
        elif len(cols) == 4:  # qrels: qid iter docid grade
            block.append((cols[0], cols[2]))
        elif len(cols) == 6:  # run: qid Q0 docid rank score tag
            block.append((cols[0], cols[2]))
        else:
            problems.append(LineProblem(str(path), number, f"expected `qid docid` (or a qrels/run line), found {len(cols)} columns"))
        if len(block) >= size:
            yield block
            block = []
    raise_if_problems(problems)
    yield block
