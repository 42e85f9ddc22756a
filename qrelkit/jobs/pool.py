"""Which (qid, docid) pairs a job judges: top-k of runs, an explicit pairs file, or a qrels set, as
queries of the store (`qrelkit.storage.pools`; a pairs file is staged there block by block), and a
stratified sample of any of them (`sample_pool`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from qrelkit.errors import LineProblem
from qrelkit.io.lines import ProblemLog, iter_lines, raise_if_problems
from qrelkit.storage.pools import depth_pool, depth_pool_query, qrels_pool, qrels_pool_query

__all__ = ["depth_pool", "depth_pool_query", "pairs_file_blocks", "qrels_pool", "qrels_pool_query", "sample_order", "sample_pool"]

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
        elif len(cols) in (4, 6):  # qrels: qid iter docid grade; run: qid Q0 docid rank score tag
            block.append((cols[0], cols[2]))
        else:
            problems.append(LineProblem(str(path), number, f"expected `qid docid` (or a qrels/run line), found {len(cols)} columns"))
        if len(block) >= size:
            yield block
            block = []
    raise_if_problems(problems)
    yield block


def _rank(seed: int, *parts: str) -> bytes:
    """A fixed pseudo-random key of (seed, parts): the same on every machine and Python (not hash())."""
    return hashlib.blake2b("\x1f".join((str(seed), *parts)).encode("utf-8"), digest_size=8).digest()


def sample_order(pairs: list[tuple[str, str]], seed: int) -> list[tuple[str, str]]:
    """The pool in the order samples are taken from for ``seed``: within each topic, pairs by a hash
    of (seed, qid, docid); topics, in an order hashed from (seed, qid), take turns, one pair each
    (round-robin), a topic dropping out when it has no pairs left. Any first N pairs of this order
    are a sample spread over every topic (counts differ by at most one while each topic has pairs
    left), and a larger N holds a smaller one: a larger sample judges only the difference."""
    by_topic: dict[str, list[str]] = {}
    for qid, docid in pairs:
        by_topic.setdefault(qid, []).append(docid)
    topics = sorted(by_topic, key=lambda qid: (_rank(seed, qid), qid))
    keyed = []
    for turn, qid in enumerate(topics):
        docids = sorted(by_topic[qid], key=lambda docid: (_rank(seed, qid, docid), docid))
        keyed += [(position, turn, qid, docid) for position, docid in enumerate(docids)]
    keyed.sort()
    return [(qid, docid) for _, _, qid, docid in keyed]


def sample_pool(pairs: list[tuple[str, str]], size: int, seed: int) -> list[tuple[str, str]]:
    """The first ``size`` pairs of the pool's `sample_order` for ``seed`` (the whole pool when it is smaller)."""
    return sample_order(pairs, seed)[:size]
