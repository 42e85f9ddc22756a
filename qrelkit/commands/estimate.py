"""`qrelkit estimate`: the runs' measures from a judge's labels of the whole pool and the human labels
of a recorded design's sample, by every estimator the design has."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from qrelkit.commands.assess import _setting, choose_design, stored_grades
from qrelkit.commands.assess_inputs import Inputs, read_inputs, sample_pairs, unjudged_note
from qrelkit.commands.estimate_result import EstimateResult, MeasureEstimates
from qrelkit.commands.requests import QrelsRef
from qrelkit.commands.requests.assess import EstimateRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError, StoreError

OTHER_MEASURES = ("nDCG@10", "P@10", "AP", "RR")


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


def current_estimates(workspace: Workspace, design: Any, inputs: Inputs, ref: QrelsRef | None = None) -> tuple[Any, np.ndarray]:
    """(the recorded sample, the human grades in pool order) of a design, its pool checked."""
    check_pool(design, inputs)
    grades, _ = human_grades(workspace, design, ref)
    return sample_pairs(inputs.pool, design), inputs.pool.labels_of({pair: float(g) for pair, g in grades.items()})


def run(request: EstimateRequest, workspace: Workspace) -> EstimateResult:
    from qrelkit.evaluate.choices import DEFAULT_ESTIMATOR, DESIGN_ESTIMATORS
    from qrelkit.evaluate.estimate.sample import estimate_sample

    if not workspace.has_db:
        raise StoreError(f"database {workspace.db} does not exist: plan a design first (qrelkit assess plan --db ...)")
    design = choose_design(workspace.store, request.design)
    estimator = request.estimator or DEFAULT_ESTIMATOR[design.kind]
    if estimator not in DESIGN_ESTIMATORS[design.kind]:
        raise QrelkitError(
            f"--estimator {estimator}: design {design.name!r} ({design.kind}) has {', '.join(DESIGN_ESTIMATORS[design.kind])}"
        )
    inputs = read_inputs(workspace, request.judge_qrels, request.runs, design.depth or 10)
    check_pool(design, inputs)
    grades, human = human_grades(workspace, design, request.human_qrels)
    labels = inputs.pool.labels_of({pair: float(g) for pair, g in grades.items()})
    sample = sample_pairs(inputs.pool, design)
    top = design.scale[1]
    names = list(request.measures) or [design.measure] + [m for m in OTHER_MEASURES if m != design.measure]
    found = {}
    for name in dict.fromkeys(names):
        setting = _setting(inputs, name, top)
        every = estimate_sample(setting, sample, labels, top, list(DESIGN_ESTIMATORS[design.kind]))
        found[name] = MeasureEstimates.of(name, [run.name for run in inputs.runs], every, estimator)
    notes = [note for note in (unjudged_note(inputs),) if note]
    above = int((np.nan_to_num(inputs.pool.judge, nan=0.0) > top).sum())
    if above:
        notes.append(f"{above} judge label(s) lie above the humans' top grade {top}: the judge's estimates read them as {top}")
    if inputs.judge.source.get("name") != design.judge.get("name") or inputs.judge_record()["labels_hash"] != design.judge.get(
        "labels_hash"
    ):
        notes.append(
            f"the judge's labels differ from those design {design.name!r} was planned from ({design.judge.get('name')!r}): the estimates "
            "stay unbiased (the inclusion probabilities are the design's), only their precision depends on the judge"
        )
    return EstimateResult(
        design=design.describe(),
        estimator=estimator,
        measures=found,
        human_labels=len(grades),
        judge={"name": inputs.judge.source.get("name"), "origin": inputs.judge.source.get("origin"), "labels": len(inputs.labels)},
        human=human | {"labels": len(grades)},
        pool_pairs=len(inputs.pool),
        notes=notes,
    )
