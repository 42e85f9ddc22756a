"""TREC runs and qrels read into columns: Arrow's CSV parser on whitespace-normalised blocks,
validation on whole columns, and the line reader (`qrelkit.io.trec_lines`) only to name the
lines when something is wrong.

`read_run_table` and `read_qrels_table` accept exactly what the line reader accepts and return
the same columns in the same order; a problem anywhere (a bad number, a repeat, a stray byte,
an odd separator this route does not handle) sends the file through the line reader, which
either raises the `file:line` messages or, if the file was fine after all, returns its columns.
Files are streamed block by block (gzip too), so memory holds the columns, not the text.

`iter_run_blocks` and `iter_qrels_blocks` hand the validated columns over block by block, for a
caller that writes them as they come (the store's loads) and so holds one block, not the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from qrelkit.errors import InputFormatError
from qrelkit.io.arrays import factorized, from_numpy, numbers
from qrelkit.io.duplicates import OnDuplicate
from qrelkit.io.limits import open_input
from qrelkit.io.lines import iter_blocks
from qrelkit.io.trec_lines import QRELS_SCHEMA, RUN_SCHEMA, RunLines, read_qrels_lines, read_run_lines

RUN_FIELDS = ["qid", "iteration", "docid", "rank", "score", "tag"]
QRELS_FIELDS = ["qid", "iteration", "docid", "grade"]

# Whitespace to Python's str.split but not to a one-space CSV parser. \r is handled apart:
# before \n it ends a line for both; anywhere else it separates columns.
_OTHER_SPACE = b"\t\x0b\x0c\x1c\x1d\x1e\x1f"
_TO_SPACE = bytes.maketrans(_OTHER_SPACE, b" " * len(_OTHER_SPACE))
_TO_SPACE_WITH_CR = bytes.maketrans(_OTHER_SPACE + b"\r", b" " * (len(_OTHER_SPACE) + 1))


class _Fallback(Exception):
    """Something this route cannot vouch for: let the line reader decide."""


def _single_spaced(block: bytes, thorough: bool) -> bytes:
    """The block with each line's columns separated by exactly one space, as `str.split` sees them.

    The cheap route only maps odd separators (tabs, form feeds, lone carriage returns) to a
    space; the thorough one also collapses repeated spaces and trims each line (needed when a
    column came out empty). Non-ASCII text is split by Python, whose idea of whitespace
    (NBSP, U+2000…) is the line reader's.
    """
    if b"\x00" in block:
        raise _Fallback  # a NUL byte is no text: the line reader names its line
    if not block.isascii():
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError:
            raise _Fallback from None
        return "\n".join(" ".join(line.split()) for line in text.split("\n")).encode("utf-8")
    lone_cr = b"\r" in block and block.count(b"\r") != block.count(b"\r\n")
    if thorough:
        return b"\n".join(b" ".join(line.split()) for line in block.translate(_TO_SPACE_WITH_CR).split(b"\n"))
    if lone_cr:
        return block.translate(_TO_SPACE_WITH_CR)
    if any(byte in block for byte in (b"\t", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x1f")):
        return block.translate(_TO_SPACE)
    return block


def _parse_block(block: bytes, fields: list[str], types: dict[str, pa.DataType], thorough: bool) -> pa.Table:
    read = pcsv.ReadOptions(column_names=fields, use_threads=True)
    parse = pcsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False, escape_char=False, ignore_empty_lines=True)
    convert = pcsv.ConvertOptions(
        column_types=types,
        include_columns=list(types),
        null_values=[],
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        check_utf8=True,
    )
    try:
        return pcsv.read_csv(pa.py_buffer(_single_spaced(block, thorough)), read_options=read, parse_options=parse, convert_options=convert)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise _Fallback from None


def _parse_normalised(block: bytes, fields: list[str], types: dict[str, pa.DataType], text_columns: list[str]) -> pa.Table:
    """Parse cheaply; if a column came out empty (doubled or trailing spaces), parse again thoroughly."""
    for thorough in (False, True):
        try:
            table = _parse_block(block, fields, types, thorough)
        except _Fallback:
            if thorough:
                raise
            continue
        if all(len(table) == 0 or _shortest(table.column(name)) > 0 for name in text_columns):
            return table
    raise _Fallback


def _without_comments(block: bytes) -> bytes:
    """The block less its `#` lines (qrels comments, `trec_lines.is_comment`)."""
    if not block.startswith(b"#") and b"\n#" not in block:
        return block
    return b"\n".join(line for line in block.split(b"\n") if not line.startswith(b"#"))


def _parsed_blocks(
    path: Path, fields: list[str], types: dict[str, pa.DataType], text_columns: list[str], comments: bool = False
) -> Iterator[pa.Table]:
    """The file's blocks of whole lines, each parsed into ``types`` (no empty block is yielded);
    with ``comments``, `#` lines are left out first. A line with more columns than ``fields`` is
    Arrow's error, so a run with more than 6 columns goes to the line reader (which notes them)."""
    with open_input(path) as stream:  # gzip inflated on the way, within the caps of `qrelkit.io.limits`
        for block in iter_blocks(stream):
            table = _parse_normalised(_without_comments(block) if comments else block, fields, types, text_columns)
            if len(table):
                yield table


def _shortest(column: pa.ChunkedArray) -> int:
    """Length of the shortest value (for a dictionary column, of its dictionaries' values)."""
    if pa.types.is_dictionary(column.type):
        return min((pc.min(pc.binary_length(chunk.dictionary)).as_py() for chunk in column.chunks if len(chunk.dictionary)), default=1)
    return pc.min(pc.binary_length(column)).as_py()


def _integers(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """ASCII-digit integers (optional sign) as int64; anything else, or beyond int64, is a fallback."""
    if not pc.all(pc.ascii_is_decimal(column)).as_py():
        if not pc.all(pc.match_substring_regex(column, r"^[+-]?[0-9]+$")).as_py():
            raise _Fallback
        column = pc.replace_substring_regex(column, r"^\+", "")
    try:
        return numbers(pc.cast(column, pa.int64()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise _Fallback from None


def _scores(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """float64 as parsed; one not finite as float32 (as trec_eval keeps them) is a fallback."""
    scores = numbers(column).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if not np.isfinite(scores.astype(np.float32)).all():
            raise _Fallback
    return scores


def _repeats(qid: pa.ChunkedArray | pa.Array, docid: pa.ChunkedArray | pa.Array) -> bool:
    """Whether a (qid, docid) pair is there twice: the rows sorted on both columns, neighbours
    compared (5,000,000 rows: 1.9 s and a few columns' memory, where codes for both columns and a
    sort of their keys took 4.3 s and twice the memory)."""
    if len(qid) < 2:
        return False
    order = pc.sort_indices(pa.table({"qid": qid, "docid": docid}), sort_keys=[("qid", "ascending"), ("docid", "ascending")])
    same = None
    for column in (qid, docid):
        ordered = column.take(order)
        equal = pc.equal(ordered.slice(1), ordered.slice(0, len(ordered) - 1))
        same = equal if same is None else pc.and_(same, equal)
    return bool(pc.any(same).as_py())


def _kept_rows(
    qid: pa.ChunkedArray | pa.Array, docid: pa.ChunkedArray | pa.Array, magnitude: np.ndarray, policy: OnDuplicate
) -> np.ndarray | None:
    """Row indices to keep (file order) after resolving repeated (qid, docid); None if none repeat."""
    if not _repeats(qid, docid):
        return None
    if policy is OnDuplicate.error:
        raise _Fallback
    docids, docid_codes = factorized(docid)
    key = factorized(qid)[1] * len(docids) + docid_codes
    rows = np.arange(len(key))
    if policy is OnDuplicate.first:
        _, chosen = np.unique(key, return_index=True)
    elif policy is OnDuplicate.last:
        _, from_end = np.unique(key[::-1], return_index=True)
        chosen = len(key) - 1 - from_end
    else:  # max: the highest magnitude, the first of equal highest ones
        order = np.lexsort((rows, -magnitude.astype(np.float64), key))
        first = np.concatenate(([True], key[order][1:] != key[order][:-1]))
        chosen = order[first]
    return np.sort(chosen)


# tags repeat on every line: dictionary-encoded while parsing, in parallel, they cost nothing
_TAG = pa.dictionary(pa.int32(), pa.string())
_RUN_TYPES = {"qid": pa.string(), "iteration": _TAG, "docid": pa.string(), "rank": pa.string(), "score": pa.float64(), "tag": _TAG}
# every text column, Q0 too: an empty one means doubled spaces stood in for a missing column
_RUN_TEXT = ["qid", "iteration", "docid", "tag"]
_QRELS_TYPES = {"qid": pa.string(), "iteration": pa.string(), "docid": pa.string(), "grade": pa.string()}
_QRELS_TEXT = ["qid", "iteration", "docid"]
RUN_EMPTY = "no run entries found (empty file?)"
QRELS_EMPTY = "no judgments found (empty file?)"


@dataclass(frozen=True)
class Block:
    """Validated columns of consecutive lines of a file (the schema of `read_run_table` or
    `read_qrels_table`), and for a run the tags these lines carry. ``whole_file`` marks the line
    reader's reading of the whole file (duplicates resolved): it replaces every block before it."""

    table: pa.Table
    tags: frozenset[str] = frozenset()
    whole_file: bool = False
    notes: tuple[str, ...] = ()  # what the reading left out (`RunLines.notes`)


def _run_block(table: pa.Table) -> Block:
    ranks = _integers(table.column("rank"))
    scores = _scores(table.column("score"))
    tags = frozenset(value for chunk in table.column("tag").chunks for value in chunk.dictionary.to_pylist())
    columns = [table.column("qid").combine_chunks(), table.column("docid").combine_chunks(), from_numpy(ranks), from_numpy(scores)]
    return Block(pa.Table.from_arrays(columns, schema=RUN_SCHEMA), tags)


def _qrels_block(table: pa.Table) -> Block:
    columns = [table.column(name).combine_chunks() for name in ("qid", "iteration", "docid")]
    return Block(pa.Table.from_arrays([*columns, from_numpy(_integers(table.column("grade")))], schema=QRELS_SCHEMA))


def _fast_run_blocks(path: Path) -> Iterator[Block]:
    return map(_run_block, _parsed_blocks(path, RUN_FIELDS, _RUN_TYPES, _RUN_TEXT))


def _fast_qrels_blocks(path: Path) -> Iterator[Block]:
    return map(_qrels_block, _parsed_blocks(path, QRELS_FIELDS, _QRELS_TYPES, _QRELS_TEXT, comments=True))


def _checked(path: Path, blocks: Iterator[Block], fallback: Callable[[], Block], nothing: str) -> Iterator[Block]:
    """The blocks; on a block this route cannot vouch for, the line reader's one (which may raise)."""
    rows = 0
    try:
        for block in blocks:
            rows += len(block.table)
            yield block
    except _Fallback:
        yield fallback()
        return
    if rows == 0:
        raise InputFormatError.single(path, 0, nothing)


def iter_run_blocks(path: str | Path, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> Iterator[Block]:
    """A run file's validated columns, block by block (file order), streamed: memory holds one block.

    A (qid, docid) repeated across blocks is not looked for here: the caller checks the whole
    (the store does so in SQL) and calls `read_run_lines` to name the lines. A block this route
    cannot vouch for sends the file through the line reader, which raises the `file:line`
    messages or yields the whole file as one block marked ``whole_file``.
    """
    path, policy = Path(path), OnDuplicate(on_duplicate)

    def whole() -> Block:
        table, tags, notes = read_run_lines(path, policy)
        return Block(table, frozenset(tags), whole_file=True, notes=notes)

    return _checked(path, _fast_run_blocks(path), whole, RUN_EMPTY)


def iter_qrels_blocks(path: str | Path, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> Iterator[Block]:
    """A qrels file's validated columns, block by block, as `iter_run_blocks` gives a run's."""
    path, policy = Path(path), OnDuplicate(on_duplicate)
    return _checked(path, _fast_qrels_blocks(path), lambda: Block(read_qrels_lines(path, policy), whole_file=True), QRELS_EMPTY)


def _whole(path: Path, blocks: list[Block], nothing: str) -> pa.Table:
    if not blocks:
        raise InputFormatError.single(path, 0, nothing)
    return pa.concat_tables([block.table for block in blocks]).combine_chunks()


def _resolved(table: pa.Table, magnitude: str, policy: OnDuplicate) -> pa.Table:
    """The table with repeated (qid, docid) resolved by the policy (a repeat under `error` falls back)."""
    magnitudes = numbers(table.column(magnitude))
    kept = _kept_rows(table.column("qid"), table.column("docid"), magnitudes, policy)
    return table if kept is None else table.take(from_numpy(kept))


def _fast_run(path: Path, policy: OnDuplicate) -> RunLines:
    blocks = list(_fast_run_blocks(path))
    table = _resolved(_whole(path, blocks, RUN_EMPTY), "score", policy)
    return RunLines(table, sorted(frozenset().union(*(block.tags for block in blocks))))


def _fast_qrels(path: Path, policy: OnDuplicate) -> pa.Table:
    return _resolved(_whole(path, list(_fast_qrels_blocks(path)), QRELS_EMPTY), "grade", policy)


def read_run_table(path: str | Path, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> RunLines:
    """A run file as columns `qid, docid, rank (int64), score (float64, as written)` in file order, its distinct
    tags, and notes on what the reading left out (columns after the 6th).

    Raises `InputFormatError` naming each bad line (the first 50, then a count).
    """
    path, policy = Path(path), OnDuplicate(on_duplicate)
    try:
        return _fast_run(path, policy)
    except _Fallback:
        return read_run_lines(path, policy)


def fast_qrels_table(path: str | Path, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> pa.Table | None:
    """`read_qrels_table` by the fast reader alone: None where it would fall back to the line reader
    (a value that is no integer, a repeat under `error`, a line to name), for a caller with a line
    reader of its own (`io.judge_files`)."""
    try:
        return _fast_qrels(Path(path), OnDuplicate(on_duplicate))
    except _Fallback:
        return None


# A value the line reader takes as a number (`qrelkit.io.trec_lines.DECIMAL`, integers included), of
# at most 15 characters: more digits could be an integer float64 does not hold exactly
_NUMBER = r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
MAX_NUMBER_CHARS = 15


def _value_block(table: pa.Table) -> Block:
    values = table.column("grade")
    if not pc.all(pc.match_substring_regex(values, _NUMBER)).as_py() or pc.max(pc.utf8_length(values)).as_py() > MAX_NUMBER_CHARS:
        raise _Fallback
    try:
        numbers_ = numbers(pc.cast(values, pa.float64()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise _Fallback from None
    if not np.isfinite(numbers_).all():
        raise _Fallback
    columns = [table.column(name).combine_chunks() for name in ("qid", "iteration", "docid")]
    return Block(pa.Table.from_arrays([*columns, from_numpy(numbers_)], names=["qid", "iteration", "docid", "value"]))


def fast_value_table(path: str | Path, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> tuple[pa.Table, int] | None:
    """A judgment file whose fourth column is any number (a judge's scores, `qrelkit.io.judge_files`)
    as columns `qid, iteration, docid, value (float64)` in file order, repeats resolved by
    ``on_duplicate``, and the lines read; None where the line reader must decide (a line to name, a
    repeat under `error`, a number float64 may not hold exactly). Streamed: memory holds the columns."""
    path, policy = Path(path), OnDuplicate(on_duplicate)
    try:
        blocks = [_value_block(table).table for table in _parsed_blocks(path, QRELS_FIELDS, _QRELS_TYPES, _QRELS_TEXT, comments=True)]
        if not blocks:
            raise InputFormatError.single(path, 0, QRELS_EMPTY)
        whole = pa.concat_tables(blocks)  # the blocks' columns as chunks: no copy of millions of rows
        del blocks
        return _resolved(whole, "value", policy), whole.num_rows
    except _Fallback:
        return None


def read_qrels_table(path: str | Path, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> pa.Table:
    """A qrels file as columns `qid, iteration, docid, grade (int64)` in file order.

    Raises `InputFormatError` naming each bad line (the first 50, then a count).
    """
    path, policy = Path(path), OnDuplicate(on_duplicate)
    try:
        return _fast_qrels(path, policy)
    except _Fallback:
        return read_qrels_lines(path, policy)
