"""What planning and estimating both read: the judge's labels (a file, a stored qrels set or a judge
run's graded set), the runs, the pool they make, and a design as recorded in the database."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from qrelkit.commands.requests import QrelsRef
from qrelkit.commands.workspace import ResolvedQrels, Workspace
from qrelkit.errors import QrelkitError, StoreError
from qrelkit.io import Run

UNJUDGED_SHOWN = 5


@dataclass(frozen=True)
class Inputs:
    """The judge's labels and where they came from, the runs, and the pool: the judge's pairs and
    every run's top ``depth`` on the judge's queries."""

    judge: ResolvedQrels
    labels: dict[tuple[str, str], float]
    runs: list[Run]
    pool: Any  # qrelkit.evaluate.estimate.pool.Pool
    pool_hash: str
    depth: int

    def unjudged(self) -> list[tuple[str, str]]:
        """The pool pairs the judge gave no label."""
        return [(self.pool.qids[i], self.pool.docids[i]) for i in self.pool.unjudged()]

    def judge_record(self) -> dict[str, Any]:
        """The judge side as a design records it (no labels, only what and where they are)."""
        source = self.judge.source
        return {
            "name": source.get("name"),
            "origin": source.get("origin"),
            "path": source.get("path"),
            "judge_run": (source.get("judge_run") or {}).get("id"),
            "labels": len(self.labels),
            "labels_hash": labels_hash(self.labels),
        }


def labels_hash(labels: dict[tuple[str, str], float]) -> str:
    import hashlib

    digest = hashlib.sha256()
    for (qid, docid), value in sorted(labels.items()):
        digest.update(f"{qid}\t{docid}\t{value!r}\n".encode())
    return digest.hexdigest()


def judge_qrels(workspace: Workspace, ref: QrelsRef) -> ResolvedQrels:
    """The judge's qrels: a file, a stored qrels set, or (a name neither is) a judge run's graded set."""
    try:
        return workspace.qrels_with_source(ref)
    except StoreError as exc:
        if ref.ref is None or not workspace.has_db or "no qrels set named" not in str(exc):
            raise
        try:
            return workspace.judge_run_qrels(ref.ref)
        except StoreError:
            raise exc from None


def labels_of(resolved: ResolvedQrels) -> dict[tuple[str, str], float]:
    """(qid, docid) -> the judge's label: its score where the file holds scores, else its grade."""
    table = resolved.qrels.table
    column = "value" if "value" in table.column_names else "grade"
    qids, docids, values = (table.column(name).to_pylist() for name in ("qid", "docid", column))
    return {(q, d): float(v) for q, d, v in zip(qids, docids, values)}


def read_inputs(workspace: Workspace, judge: QrelsRef, runs_ref: Any, depth: int) -> Inputs:
    from qrelkit.evaluate.estimate.pool import Pool, pool_hash, top_pairs

    resolved = judge_qrels(workspace, judge)
    labels = labels_of(resolved)
    if not labels:
        raise QrelkitError(f"judge qrels {resolved.source.get('name')!r} hold no labels")
    runs = workspace.runs(runs_ref)
    queries = {qid for qid, _ in labels}
    pairs = set(labels) | top_pairs(runs, queries, depth)
    pool = Pool.of(pairs, labels)
    return Inputs(resolved, labels, runs, pool, pool_hash(pool), depth)


def unjudged_note(inputs: Inputs) -> str | None:
    """What the output says of pool pairs without a judge label, and how they are treated."""
    missing = inputs.unjudged()
    if not missing:
        return None
    shown = ", ".join(f"({q}, {d})" for q, d in missing[:UNJUDGED_SHOWN])
    more = f" and {len(missing) - UNJUDGED_SHOWN} more" if len(missing) > UNJUDGED_SHOWN else ""
    return (
        f"{len(missing)} pool pair(s) have no label from the judge {inputs.judge.source.get('name')!r}: {shown}{more}; "
        "the judge's estimate reads them as not relevant (grade 0, as trec_eval reads an unjudged document), the "
        "judge-assisted estimates predict them from the human labels of other unlabelled pairs (calibrated, ppi++) or as 0 (ppi), "
        "and the human sample corrects either, so the estimates stay unbiased"
    )


def sample_pairs(pool: Any, design: Any) -> Any:
    """A stored design's planned pairs as a `RecordedSample` over ``pool`` (positions looked up)."""
    from qrelkit.evaluate.estimate.sample import RecordedSample

    table = design.pairs
    position = pool.index()
    qids, docids = table.column("qid").to_pylist(), table.column("docid").to_pylist()
    index = np.array([position.get(pair, -1) for pair in zip(qids, docids)], dtype=np.int64)
    if (index < 0).any():
        raise QrelkitError(f"design {design.name!r} planned pairs that are not in this pool: plan it again over the same judge and runs")
    column = lambda name, kind: np.asarray(table.column(name).to_pylist(), dtype=kind)  # noqa: E731
    return RecordedSample(
        design.name,
        index,
        column("phase", np.int64),
        column("stratum", np.int64),
        column("stratum_size", np.int64),
        column("inclusion", np.float64),
        [phase["kind"] for phase in design.phases],
        [int(phase["budget"]) for phase in design.phases],
    )
