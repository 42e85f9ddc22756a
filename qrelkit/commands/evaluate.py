"""`qrelkit evaluate`: runs scored per query under qrels, the runs read one at a time."""

from __future__ import annotations

from dataclasses import replace

from qrelkit.commands.requests import EvaluateRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.evaluate.metrics import Evaluation, evaluate_runs


def run(request: EvaluateRequest, workspace: Workspace) -> Evaluation:
    """`qrelkit evaluate`: the runs scored per query under the qrels (cut first with ``max_rel``, the
    same cut as `qrelkit fd --max-rel`); the runs are read one at a time (memory holds one run, not
    a whole track)."""
    resolved = workspace.qrels(request.qrels)
    cut = None
    if request.max_rel is not None:
        from qrelkit.evaluate.sparsify import sparsify_qrels

        resolved, cut = sparsify_qrels(resolved, request.max_rel, rel_level=request.rel_level, seed=request.seed, keep=request.keep)
    evaluation = evaluate_runs(resolved, workspace.stream_runs(request.runs), list(request.measures), average=request.average)
    return replace(evaluation, qrels_cut=cut) if cut else evaluation
