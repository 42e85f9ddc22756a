"""`qrelkit correlate`: how alike several orderings of the same runs are — between measures under
one qrels (seed 000, Table 3), between qrels sets under one measure, or between full qrels and the
same qrels cut to at most M relevant items per query (seed 001, Table 2; `--max-rel`, the cut
`qrelkit fd --max-rel` and `qrelkit evaluate --max-rel` make)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.correlate import RankCorrelations, rank_correlations
from qrelkit.evaluate.metrics import evaluate_runs
from qrelkit.evaluate.sparsify import check_keep, sparsify_qrels
from qrelkit.io import OnDuplicate, Qrels

DEFAULT_MEASURES = ["nDCG@10"]


def _labelled(qrels_sets: list[Qrels], refs: list[Any]) -> list[tuple[str, Qrels]]:
    """(label, qrels): a set's name, or the reference the user gave where two names collide."""
    names = [q.name for q in qrels_sets]
    given = [str(ref) if isinstance(ref, str | Path) else f"{name} #{i + 1}" for i, (name, ref) in enumerate(zip(names, refs))]
    return [(name if names.count(name) == 1 else label, q) for name, label, q in zip(names, given, qrels_sets)]


def correlate(
    *,
    qrels: list[Any],
    runs: Any,
    measures: list[str] | None = None,
    db: str | Path | None = None,
    max_rel: list[int] | None = None,
    keep: str = "top-grade",
    seed: int = 0,
    rel_level: int | None = None,
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
) -> RankCorrelations:
    """Rank correlations between every (measure, qrels) ordering of ``runs``.

    ``qrels``: one or more files or stored sets; ``max_rel``: also the first qrels cut to at most
    each M relevant items per query (kept as ``keep`` says, with ``seed``). Means run over the
    queries every qrels set judges (a query a run misses scores 0), so all orderings see the same
    topics."""
    if not qrels:
        raise QrelkitError("give the qrels: --qrels FILE_OR_NAME (repeatable)")
    chosen = list(dict.fromkeys(measures or DEFAULT_MEASURES))
    check_keep(keep)
    with Workspace(db, on_duplicate=on_duplicate) as workspace:
        return _correlate(workspace, qrels, runs, chosen, max_rel, keep, seed, rel_level)


def _correlate(
    workspace: Workspace,
    qrels: list[str],
    runs: list[str],
    chosen: list[str],
    max_rel: list[int] | None,
    keep: str,
    seed: int,
    rel_level: int | None,
) -> RankCorrelations:
    resolved = [workspace.qrels(ref) for ref in qrels]
    sets = _labelled(resolved, qrels)
    notes = []
    for m in max_rel or []:
        cut, how = sparsify_qrels(resolved[0], m, rel_level=rel_level, seed=seed, keep=keep)
        sets.append((cut.name, cut))
        notes.append(f"{cut.name}: {sets[0][0]} with {how}")
    if len(sets) * len(chosen) < 2:
        raise QrelkitError("nothing to correlate: give two measures (--measure), two qrels sets (--qrels), or --max-rel M")
    queries = sorted(set.intersection(*(set(q.grades) for _, q in sets)))
    if not queries:
        raise QrelkitError("the qrels sets share no query")
    run_list = workspace.runs(runs)
    scores: dict[str, dict[str, float]] = {}
    for label, qrels_set in sets:
        evaluation = evaluate_runs({q: qrels_set.grades[q] for q in queries}, run_list, chosen)
        for measure in chosen:
            name = measure if len(sets) == 1 else label if len(chosen) == 1 else f"{measure} | {label}"
            scores[name] = {run: evaluation.mean(run, measure) for run in evaluation.runs}
    over = "every qrels set judges" if len(sets) > 1 else f"of {sets[0][0]}"
    notes.insert(0, f"means over the {len(queries)} queries {over}; a query a run misses scores 0")
    return rank_correlations(scores, queries=len(queries), notes=notes)
