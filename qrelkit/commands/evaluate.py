"""`qrelkit evaluate`: runs scored per query under qrels, the runs read one at a time."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

from qrelkit.commands.requests import EvaluateRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.metrics import Evaluation, evaluate_runs
from qrelkit.io.trec import Qrels, Run


def run(request: EvaluateRequest, workspace: Workspace) -> Evaluation:
    """`qrelkit evaluate`: the runs scored per query under the qrels (cut first with ``max_rel``, the
    same cut as `qrelkit fd --max-rel`); the runs are read one at a time (memory holds one run, not
    a whole track). A run that shares no query with the qrels is refused (`refuse_unshared_runs`)."""
    resolved = workspace.qrels(request.qrels)
    cut = None
    if request.max_rel is not None:
        from qrelkit.evaluate.sparsify import sparsify_qrels

        resolved, cut = sparsify_qrels(resolved, request.max_rel, rel_level=request.rel_level, seed=request.seed, keep=request.keep)
    sources: dict[str, str | None] = {}
    runs = _noting_sources(workspace.stream_runs(request.runs), sources)
    evaluation = evaluate_runs(
        resolved,
        runs,
        list(request.measures),
        average=request.average,
        rel_level=request.rel_level,
        judged_only=request.judged_only,
        max_per_query=request.max_per_query,
    )
    refuse_unshared_runs(evaluation, resolved, sources)
    return replace(evaluation, qrels_cut=cut) if cut else evaluation


def _noting_sources(runs: Iterable[Run], sources: dict[str, str | None]) -> Iterator[Run]:
    for one in runs:
        sources[one.name] = one.source
        yield one


def refuse_unshared_runs(evaluation: Evaluation, qrels: Qrels, sources: dict[str, str | None]) -> None:
    """A run that retrieves nothing for any query of the qrels has nothing to be scored on: its
    zeros (or, over its own queries, a mean of nothing) would read as a real result. trec_eval
    stops on it too ("No queries with both results and relevance info", exit 7); here it is the
    input's error, exit 2, naming the run, its file and the qrels."""
    unshared = [run for run in evaluation.runs if not evaluation.covers(run).any()]
    if not unshared:
        return
    named = ", ".join(f"{run!r}" + (f" ({sources[run]})" if sources.get(run) else "") for run in unshared)
    sample = ", ".join(evaluation.queries[:3]) + (", ..." if len(evaluation.queries) > 3 else "")
    verb = "shares" if len(unshared) == 1 else "share"
    raise QrelkitError(
        f"run {named} {verb} no query with the qrels {qrels.name!r} ({len(evaluation.queries)} queries: {sample}): nothing to score "
        "(trec_eval stops here too); are these the qrels of the run's track?"
    )
