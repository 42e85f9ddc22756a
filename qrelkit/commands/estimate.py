"""`qrelkit estimate`: the runs' measures from a judge's labels of the whole pool and the human labels
of a recorded design's sample, by every estimator the design has."""

from __future__ import annotations

import numpy as np

from qrelkit.commands.assess_inputs import choose_design, current_estimates, measure_setting, read_inputs, unjudged_note
from qrelkit.commands.estimate_result import EstimateResult, MeasureEstimates
from qrelkit.commands.requests.assess import EstimateRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError, StoreError

OTHER_MEASURES = ("nDCG@10", "P@10", "AP", "RR")


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
    sample, labels, human_labels, human = current_estimates(workspace, design, inputs, request.human_qrels)
    top = design.scale[1]
    names = list(request.measures) or [design.measure] + [m for m in OTHER_MEASURES if m != design.measure]
    found = {}
    for name in dict.fromkeys(names):
        setting = measure_setting(inputs, name, top)
        every = estimate_sample(setting, sample, labels, top, list(DESIGN_ESTIMATORS[design.kind]))
        found[name] = MeasureEstimates.of(name, [run.name for run in inputs.runs], every, estimator)
    notes = [note for note in (unjudged_note(inputs),) if note]
    if design.kind != "queries" and any(name.startswith("RR") for name in found):
        notes.append(
            "RR from a sample of pairs multiplies (1 - x) over the places above the first relevant pair, and a sampled non-relevant "
            "pair of large weight there multiplies what follows: on DL19 RR(rel=1)'s estimates were off by 10 on average (RR(rel=2)'s "
            "by 0.04, docs/human-budget.md); read RR from a whole-query design where its rel level is relevant on nearly every query"
        )
    above = int((np.nan_to_num(inputs.pool.judge, nan=0.0) > top).sum())
    if above:
        notes.append(f"{above} judge label(s) lie above the humans' top grade {top}: the judge's estimates read them as {top}")
    judge = inputs.judge_record()
    if (judge["name"], judge["labels_hash"]) != (design.judge.get("name"), design.judge.get("labels_hash")):
        notes.append(
            f"the judge's labels differ from those design {design.name!r} was planned from ({design.judge.get('name')!r}): the estimates "
            "stay unbiased (the inclusion probabilities are the design's), only their precision depends on the judge"
        )
    return EstimateResult(
        design=design.describe(),
        estimator=estimator,
        measures=found,
        human_labels=human_labels,
        judge={"name": inputs.judge.source.get("name"), "origin": inputs.judge.source.get("origin"), "labels": len(inputs.labels)},
        human=human | {"labels": human_labels},
        pool_pairs=len(inputs.pool),
        notes=notes,
    )
