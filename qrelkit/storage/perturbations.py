"""The perturbed copies a probe's judge run judged, and the pairs of scores its statistics read
(docs/probes.md). A copy is stored before its pair is judged, so the pending query hands the judge
the copy (`qrelkit.storage.pools.PendingPairs`) and the judgment records its hash."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from qrelkit.storage.entries import registered
from qrelkit.storage.judgments import _INFO_COLUMNS, SCORE_COLUMNS, JudgeRunInfo, _info

if TYPE_CHECKING:
    from qrelkit.storage.store import Store

COLUMNS = ("qid", "docid", "source_hash", "content_hash", "text", "image_path", "image_root", "image_sha256", "error")


@dataclass(frozen=True)
class CopyRow:
    """One pair's perturbed copy as stored: ``text``, or an image file (``image_path`` under
    ``image_root``, its bytes hashing to ``image_sha256``), or ``error``."""

    qid: str
    docid: str
    source_hash: str  # the document's content hash the copy was made from
    content_hash: str  # the copy's, with the document's fields: what its judgment records
    text: str | None = None
    image_path: str | None = None
    image_root: str | None = None
    image_sha256: str | None = None
    error: str | None = None


def save_copies(store: Store, judge_run_id: str, copies: Sequence[CopyRow]) -> None:
    """Store (or replace) the copies of a probe's judge run in one transaction. A replaced copy that
    differs from the one its pair's judgment judged makes that judgment stale (`retire_stale_judgments`)."""
    if not copies:
        return
    columns = {"judge_run_id": [judge_run_id] * len(copies), **{c: [getattr(row, c) for row in copies] for c in COLUMNS}}
    table = pa.table({name: pa.array(values, pa.string()) for name, values in columns.items()})
    with store.transaction() as con, registered(con, "incoming_copies", table):
        con.execute(f"INSERT OR REPLACE INTO perturbations (judge_run_id, {', '.join(COLUMNS)}) SELECT * FROM incoming_copies")


def stored_copies(store: Store, judge_run_id: str) -> dict[tuple[str, str], CopyRow]:
    rows = store.con.execute(f"SELECT {', '.join(COLUMNS)} FROM perturbations WHERE judge_run_id = ?", [judge_run_id]).fetchall()
    return {(row[0], row[1]): CopyRow(*row) for row in rows}


def probe_runs(store: Store, judge_run_id: str) -> list[JudgeRunInfo]:
    """The probes' judge runs that perturbed ``judge_run_id``'s documents, oldest first."""
    rows = store.con.execute(
        f"SELECT {_INFO_COLUMNS} FROM judge_runs WHERE probe->>'perturbs' = ? ORDER BY created_at, judge_run_id", [judge_run_id]
    ).fetchall()
    return [_info(row) for row in rows]


@dataclass(frozen=True)
class PairedJudgments:
    """Each pair a probe's run judged, with both runs' status and score (None where a run has none)."""

    qids: list[str]
    docids: list[str]
    before_status: list[str | None]
    before: list[float | None]
    after_status: list[str | None]
    after: list[float | None]


def paired_judgments(store: Store, judge_run_id: str, probe_run_id: str, column: str = "score", pairs: Any = None) -> PairedJudgments:
    """The judgments of ``pairs`` (all the pairs the probe's run judged, when None) in both runs, in
    (qid, docid) order; ``column``: which stored score (score, parsed or expected)."""
    if column not in SCORE_COLUMNS:
        raise ValueError(f"no score column {column!r}")
    if pairs is None:
        source = "SELECT qid, docid FROM judgments WHERE judge_run_id = $probe"
    else:
        from qrelkit.storage.pools import listed_pool

        source = listed_pool(store, [list(pairs)]).sql
    rows = store.con.execute(
        f"SELECT p.qid, p.docid, b.status, b.{column}, a.status, a.{column} FROM ({source}) p "
        "LEFT JOIN judgments b ON b.judge_run_id = $base AND b.qid = p.qid AND b.docid = p.docid "
        "LEFT JOIN judgments a ON a.judge_run_id = $probe AND a.qid = p.qid AND a.docid = p.docid ORDER BY p.qid, p.docid",
        {"base": judge_run_id, "probe": probe_run_id},
    ).fetchall()
    columns = list(zip(*rows)) if rows else [()] * 6
    return PairedJudgments(*(list(c) for c in columns))


def document_inputs(store: Store, docids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """docid -> (content hash, fields as stored): what a copy's own hashes are made from."""
    rows = store.con.execute(
        "SELECT docid, content_hash, coalesce(CAST(fields AS TEXT), '{}') FROM documents WHERE list_contains(?, docid)", [list(docids)]
    ).fetchall()
    return {docid: (content_hash, fields) for docid, content_hash, fields in rows}
