"""TREC run (`qid Q0 docid rank score tag`) and qrels (`qid iter docid grade`) files, and the
in-memory `Run` and `Qrels`.

Columns are split on any whitespace, as trec_eval does. Run scores are kept as written and
ranked as trec_eval ranks them, as float32 (`Run.scores32`, `Run.trec_order`): trec_eval stores
them as C floats, so ties and orderings (and hence NIST's published numbers) only reproduce at
that precision; the measures whose reference reads them as written (Judged@k, Compat) see them so. `qrelkit.io.trec_lines` states
the rules; `qrelkit.io.columnar` reads files by them.

A `Run` or `Qrels` holds columns (an Arrow table); the per-entry objects (`entries`) and the
dictionaries (`scores`, `grades`, `ranking()`) are views built on first use, so code that
works on the columns never pays for a Python object per line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from qrelkit.errors import InputFormatError, LineProblem
from qrelkit.io import arrays
from qrelkit.io.columnar import read_qrels_table, read_run_table
from qrelkit.io.duplicates import OnDuplicate
from qrelkit.io.lines import iter_lines, raise_if_problems
from qrelkit.io.paths import list_run_files, run_files, run_name_from_path
from qrelkit.io.trec_lines import QRELS_SCHEMA, RUN_SCHEMA, rows_table
from qrelkit.io.workers.parallel import ordered_map

__all__ = ["OnDuplicate", "Qrel", "Qrels", "Run", "RunEntry", "list_run_files", "run_name_from_path", "run_tag"]


@dataclass(frozen=True)
class RunEntry:
    qid: str
    docid: str
    rank: int
    score: float


class _Columns:
    """What `Run` and `Qrels` share: entries or a table, whichever was given, the other built on first use."""

    _entries: tuple | None
    table: pa.Table

    def to_pandas(self):
        """The table's columns, one row per line; pandas is optional."""
        from qrelkit.io.results import pandas

        pandas()  # the install hint, not Arrow's own error
        return self.table.to_pandas()

    def __len__(self) -> int:
        return len(self._entries) if self._entries is not None else self.table.num_rows


class Run(_Columns):
    """A ranked list per query. ``entries`` keep file order; ``scores`` is the trec_eval view.

    Build one from entries (``Run(name, entries)``) or from columns (``Run.from_table``): a
    table of ``qid``, ``docid`` (strings), ``rank`` (int64) and ``score`` (float64 as read from a
    file, float32 as a database keeps it).
    """

    def __init__(
        self,
        name: str,
        entries: Iterable[RunEntry] | None = None,
        tag: str = "",
        source: str | None = None,
        *,
        table: pa.Table | None = None,
        notes: tuple[str, ...] = (),
    ):
        if (entries is None) == (table is None):
            raise TypeError("give a Run either entries or a table")
        self.name = name
        self.tag = tag
        self.source = source
        self.notes = notes  # what reading its file left out (columns after the 6th), for the output to say
        self._entries: tuple[RunEntry, ...] | None = None if entries is None else tuple(entries)
        self._table = table
        self._query_codes: tuple[np.ndarray, list[str]] | None = None
        self._order: np.ndarray | None = None

    @classmethod
    def from_table(cls, name: str, table: pa.Table, tag: str = "", source: str | None = None, notes: tuple[str, ...] = ()) -> Run:
        return cls(name, tag=tag, source=source, table=table, notes=notes)

    def __repr__(self) -> str:
        return f"Run(name={self.name!r}, entries={len(self)}, tag={self.tag!r}, source={self.source!r})"

    @property
    def table(self) -> pa.Table:
        """Columns ``qid, docid, rank, score`` in file order."""
        if self._table is None:
            self._table = rows_table([(e.qid, e.docid, e.rank, e.score) for e in self._entries or ()], RUN_SCHEMA)
        return self._table

    @property
    def entries(self) -> tuple[RunEntry, ...]:
        if self._entries is None:
            columns = [self.table.column(name).to_pylist() for name in ("qid", "docid", "rank", "score")]
            self._entries = tuple(map(RunEntry, *columns))
        return self._entries

    def query_codes(self) -> tuple[np.ndarray, list[str]]:
        """(code of each entry's query, the qids by code): queries as integers, in order of first appearance."""
        if self._query_codes is None:
            encoded = pc.dictionary_encode(self.table.column("qid")).combine_chunks()
            self._query_codes = (arrays.numbers(encoded.indices).astype(np.int64), encoded.dictionary.to_pylist())
        return self._query_codes

    def scores32(self) -> np.ndarray:
        """Scores as trec_eval compares them: C floats."""
        return arrays.numbers(self.table.column("score")).astype(np.float32)

    def trec_order(self) -> np.ndarray:
        """Entry indices grouped by query code, each query in trec_eval order: score (float32)
        descending, ties by docid descending."""
        if self._order is None:
            codes, _ = self.query_codes()
            keys = arrays.table({"q": codes, "s": self.scores32(), "d": self.table.column("docid")})
            order = pc.sort_indices(keys, sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "descending")])
            self._order = arrays.numbers(order).astype(np.int64)
        return self._order

    @property
    def scores(self) -> dict[str, dict[str, float]]:
        """qid -> docid -> score, the input pytrec_eval and ir_measures take."""
        out: dict[str, dict[str, float]] = {}
        qids, docids, scores = (self.table.column(name).to_pylist() for name in ("qid", "docid", "score"))
        for qid, docid, score in zip(qids, docids, scores):
            out.setdefault(qid, {})[docid] = score
        return out

    def ranking(self, qid: str | None = None, depth: int | None = None) -> dict[str, list[str]]:
        """qid -> docids in trec_eval order (score descending, ties by docid descending), the
        first ``depth`` of each query when given."""
        codes, names = self.query_codes()
        order = self.trec_order()
        if qid is not None:
            if qid not in names:
                return {}
            order = order[codes[order] == names.index(qid)]
        query = codes[order]
        first = np.concatenate(([True], query[1:] != query[:-1])) if len(order) else np.zeros(0, bool)
        if depth is not None:
            rank = np.arange(len(order)) - np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
            order, query, first = order[rank < depth], query[rank < depth], first[rank < depth]
        docids = self.table.column("docid").take(arrays.from_numpy(order)).to_pylist()
        starts = np.flatnonzero(first).tolist() + [len(order)]
        return {names[query[a]]: docids[a:b] for a, b in zip(starts[:-1], starts[1:])}

    @property
    def qids(self) -> list[str]:
        return sorted(self.query_codes()[1])


@dataclass(frozen=True)
class Qrel:
    qid: str
    docid: str
    grade: int
    iteration: str = "0"


class Qrels(_Columns):
    """Graded judgments under a name; ``grades`` is the qid -> docid -> grade view.

    Build from entries (``Qrels(name, entries)``) or from columns (``Qrels.from_table``): a
    table of ``qid``, ``iteration``, ``docid`` (strings) and ``grade`` (int64).
    """

    def __init__(self, name: str, entries: Iterable[Qrel] | None = None, source: str | None = None, *, table: pa.Table | None = None):
        if entries is not None and table is not None:
            raise TypeError("give Qrels either entries or a table")
        self.name = name
        self.source = source
        self._entries: tuple[Qrel, ...] | None = None if table is not None else tuple(entries or ())
        self._table = table
        self._grades: dict[str, dict[str, int]] | None = None

    @classmethod
    def from_table(cls, name: str, table: pa.Table, source: str | None = None) -> Qrels:
        return cls(name, source=source, table=table)

    def __repr__(self) -> str:
        return f"Qrels(name={self.name!r}, entries={len(self)}, source={self.source!r})"

    @property
    def table(self) -> pa.Table:
        """Columns ``qid, iteration, docid, grade`` in file order."""
        if self._table is None:
            self._table = rows_table([(q.qid, q.iteration, q.docid, q.grade) for q in self._entries or ()], QRELS_SCHEMA)
        return self._table

    @property
    def entries(self) -> tuple[Qrel, ...]:
        if self._entries is None:
            qids, iterations, docids, grades = (self.table.column(name).to_pylist() for name in ("qid", "iteration", "docid", "grade"))
            self._entries = tuple(map(Qrel, qids, docids, grades, iterations))
        return self._entries

    @property
    def grades(self) -> dict[str, dict[str, int]]:
        """qid -> docid -> grade."""
        if self._grades is None:
            grades: dict[str, dict[str, int]] = {}
            qids, docids, values = (self.table.column(name).to_pylist() for name in ("qid", "docid", "grade"))
            for qid, docid, grade in zip(qids, docids, values):
                grades.setdefault(qid, {})[docid] = grade
            self._grades = grades
        return self._grades

    @property
    def qids(self) -> list[str]:
        return sorted(self.grades)

    @property
    def scored(self) -> bool:
        """A judge's scores, not grades (a file of fractional values, `qrelkit.io.judge_files`): the
        table's float64 `value` column holds them as given and `grade` their order codes (0 for a
        value ≤ 0, then 1, 2, ... up the distinct positive values), which only a measure that reads
        nothing but the order of the grades may use (compatibility)."""
        return self._table is not None and "value" in self._table.column_names


def run_tag(path: str | Path) -> str:
    """The one tag (column 6) a run file's lines carry, for naming a run by its tag; an error
    names the file when its lines carry several tags or none."""
    path = Path(path)
    problems: list[LineProblem] = []
    tags: dict[str, int] = {}
    for number, text in iter_lines(path, problems):
        cols = text.split()
        if len(cols) >= 6:  # columns after the tag are ignored, as when the run is read
            tags.setdefault(cols[5], number)
    raise_if_problems(problems)
    if len(tags) != 1:
        found = ", ".join(f"{tag!r} (line {line})" for tag, line in list(tags.items())[:5])
        what = f"several tags: {found}" if tags else "no `qid Q0 docid rank score tag` line"
        raise InputFormatError.single(path, 0, f"cannot name the run by its tag: the file has {what}; name it with --name")
    return next(iter(tags))


def read_run(
    path: str | Path,
    *,
    name: str | None = None,
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
) -> Run:
    table, tags, notes = read_run_table(path, on_duplicate)
    return Run.from_table(
        name or run_name_from_path(path),
        table,
        tag=tags[0] if len(tags) == 1 else ",".join(tags),
        source=str(path),
        notes=notes,
    )


def read_qrels(
    path: str | Path,
    *,
    name: str | None = None,
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
) -> Qrels:
    return Qrels.from_table(name or run_name_from_path(path), read_qrels_table(path, on_duplicate), source=str(path))


def write_run(run: Run, path: str | Path, *, tag: str | None = None) -> None:
    """Write in trec_eval order with ranks renumbered from 1."""
    lines = []
    by_query, ranking = run.scores, run.ranking()
    for qid in sorted(ranking):
        for rank, docid in enumerate(ranking[qid], start=1):
            lines.append(f"{qid} Q0 {docid} {rank} {float(by_query[qid][docid])!r} {tag or run.tag or run.name}")
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_qrels(qrels: Qrels, path: str | Path, *, progress: Callable[[int, int], None] | None = None, batch_rows: int = 100_000) -> None:
    """``qrels`` as a TREC qrels file, ``batch_rows`` lines at a time; ``progress(done, total)`` hears
    the lines written. A judge's scores are written as given, never their order codes."""
    value, shown = ("value", repr) if qrels.scored else ("grade", str)
    table = qrels.table
    total = table.num_rows
    with Path(path).open("w", encoding="utf-8", newline="\n") as out:
        for start in range(0, total, batch_rows):
            chunk = table.slice(start, batch_rows)
            columns = [chunk.column(name).to_pylist() for name in ("qid", "iteration", "docid", value)]
            out.write("".join(f"{qid} {iteration} {docid} {shown(v)}\n" for qid, iteration, docid, v in zip(*columns)))
            if progress is not None:
                progress(min(total, start + batch_rows), total)
    if progress is not None and total == 0:
        progress(0, 0)


def iter_runs(paths: list[str | Path], *, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> Iterator[Run]:
    """Read the runs one at a time, so that a caller that keeps only results holds two runs in
    memory: the one it works on and the next, read meanwhile in a thread (Arrow parses and
    hashes without the GIL, so reading overlaps the caller's work on a second core).

    Every name is checked before the first file is read.
    """
    files = run_files(paths)
    if len(files) < 2:
        yield from (read_run(path, on_duplicate=on_duplicate) for path in files)
        return
    yield from ordered_map(partial(read_run, on_duplicate=on_duplicate), files, workers=1, window=1)


def read_runs(paths: list[str | Path], *, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> list[Run]:
    return list(iter_runs(paths, on_duplicate=on_duplicate))
