"""What planning and estimating both read: the judge's labels (a file, a stored qrels set or a judge
run's graded set), the runs, the pool they make, and a design as recorded in the database."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

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
    joined: Any  # qrelkit.evaluate.estimate.pool.JoinedRuns: every run joined to the pool once

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
    from qrelkit.evaluate.estimate.pool import JoinedRuns, Pool, pool_hash, top_pairs

    resolved = judge_qrels(workspace, judge)
    labels = labels_of(resolved)
    if not labels:
        raise QrelkitError(f"judge qrels {resolved.source.get('name')!r} hold no labels")
    runs = workspace.runs(runs_ref)
    queries = {qid for qid, _ in labels}
    pairs = set(labels) | top_pairs(runs, queries, depth)
    pool = Pool.of(pairs, labels)
    return Inputs(resolved, labels, runs, pool, pool_hash(pool), depth, JoinedRuns.of(pool, runs))


def unjudged_note(inputs: Inputs) -> str | None:
    """What the output says of pool pairs without a judge label, and how they are treated."""
    missing = inputs.unjudged()
    if not missing:
        return None
    shown = ", ".join(f"({q}, {d})" for q, d in missing[:UNJUDGED_SHOWN])
    more = f" and {len(missing) - UNJUDGED_SHOWN} more" if len(missing) > UNJUDGED_SHOWN else ""
    return (
        f"{len(missing)} pool pair(s) have no label from the judge {inputs.judge.source.get('name')!r}: {shown}{more}; "
        "the judge's estimate reads them as not relevant (grade 0, as trec_eval reads an unjudged document); ppi predicts them "
        "as 0, ppi++ as its fitted intercept and calibrated as the sampled pairs the judge also missed; the human sample "
        "corrects each prediction, so the estimates stay unbiased"
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


def choose_design(store: Any, name: str | None) -> Any:
    """The design ``name``, or the database's only one."""
    from qrelkit.storage.designs import design_names, read_design

    if name is not None:
        return read_design(store, name)
    names = design_names(store)
    if not names:
        raise StoreError(f"{store.path} holds no design: plan one with qrelkit assess plan")
    if len(names) > 1:
        raise StoreError(f"{store.path} holds {len(names)} designs ({', '.join(names)}): name one with --design")
    return read_design(store, names[0])


def measure_setting(inputs: Inputs, measure_name: str, top: int) -> Any:
    from qrelkit.evaluate.estimate.estimators import Setting
    from qrelkit.evaluate.estimate.measures import Kernel, cutoff_of, features, parse
    from qrelkit.evaluate.estimate.pool import ranked_lists

    measure = parse(measure_name, top)
    kernel = Kernel(measure, ranked_lists(inputs.pool, inputs.joined, cutoff_of(measure)), top)
    return Setting.of(inputs.pool, kernel, features(np.minimum(inputs.pool.judge, top), top))


def stored_grades(store: Any, set_name: str | None) -> dict[tuple[str, str], int]:
    if set_name is None:
        return {}
    return {(q, d): g for q, docs in store.qrels(set_name).grades.items() for d, g in docs.items()}


def check_pool(design: Any, inputs: Inputs) -> None:
    """Estimates are valid for the pool the design was drawn from: another pool is refused, naming both."""
    if inputs.pool_hash == design.pool_hash:
        return
    judge = design.judge.get("name")
    raise QrelkitError(
        f"design {design.name!r} was planned over a pool of {design.pool_pairs} pairs (judge {judge!r}, {len(design.runs)} runs, "
        f"depth {design.depth}); the judge {inputs.judge.source.get('name')!r} and the {len(inputs.runs)} runs given make a pool of "
        f"{len(inputs.pool)} pairs: estimate with the judge labels and runs the design was planned from"
    )


def human_grades(workspace: Workspace, design: Any, ref: QrelsRef | None) -> tuple[dict[tuple[str, str], int], dict[str, Any]]:
    """The human grades of the planned pairs, and where they came from: a file (checked line by line
    as `assess load` checks it), a stored qrels set, or the labels loaded for the design."""
    from qrelkit.io.assessed import read_grades

    planned = set(zip(design.pairs.column("qid").to_pylist(), design.pairs.column("docid").to_pylist()))
    if ref is not None and ref.given:
        if ref.ref is not None and Path(ref.ref).is_file():
            return read_grades(ref.ref, planned, design.scale, design.name), {"name": Path(ref.ref).name, "origin": "file", "path": ref.ref}
        qrels = workspace.qrels(ref)
        given = {(q, d): int(g) for q, docs in qrels.grades.items() for d, g in docs.items()}
        missing = planned - set(given)
        if missing:
            raise QrelkitError(
                f"qrels {qrels.name!r} grade {len(planned) - len(missing)} of design {design.name!r}'s {len(planned)} planned pairs: "
                "grade them all"
            )
        low, high = design.scale
        off = sorted(pair for pair in planned if not low <= given[pair] <= high)
        if off:
            raise QrelkitError(
                f"qrels {qrels.name!r} grade ({off[0][0]}, {off[0][1]}) {given[off[0]]}, outside the design's scale {low}-{high}"
            )
        return {pair: given[pair] for pair in planned}, {"name": qrels.name, "origin": "qrels", "path": None}
    if design.human_set is None:
        raise StoreError(f"design {design.name!r} has no human labels loaded: give --human-qrels FILE, or load them (qrelkit assess load)")
    return stored_grades(workspace.store, design.human_set), {"name": design.human_set, "origin": "assessed", "path": None}


class HumanSample(NamedTuple):
    """A design's recorded sample and its human labels: in pool order, how many, where they came from."""

    sample: Any
    labels: np.ndarray
    labelled: int
    source: dict[str, Any]


def current_estimates(workspace: Workspace, design: Any, inputs: Inputs, ref: QrelsRef | None = None) -> HumanSample:
    """The design's `HumanSample`, its pool checked."""
    check_pool(design, inputs)
    grades, source = human_grades(workspace, design, ref)
    labels = inputs.pool.labels_of({pair: float(g) for pair, g in grades.items()})
    return HumanSample(sample_pairs(inputs.pool, design), labels, len(grades), source)
