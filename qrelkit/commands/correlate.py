"""`qrelkit correlate`: how alike several orderings of the same runs are — between measures under
one qrels (seed 000, Table 3), between qrels sets under one measure, or between full qrels and the
same qrels cut to at most M relevant items per query (seed 001, Table 2; `--max-rel`, the cut
`qrelkit fd --max-rel` and `qrelkit evaluate --max-rel` make)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qrelkit.commands.requests import CorrelateRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.correlate import RankCorrelations, rank_correlations
from qrelkit.evaluate.metrics import evaluate_runs
from qrelkit.evaluate.sparsify import sparsify_qrels
from qrelkit.io import Qrels


def _labelled(qrels_sets: list[Qrels], refs: list[Any]) -> list[tuple[str, Qrels]]:
    """(label, qrels): a set's name, or the reference the user gave where two names collide."""
    names = [q.name for q in qrels_sets]
    given = [str(ref) if isinstance(ref, str | Path) else f"{name} #{i + 1}" for i, (name, ref) in enumerate(zip(names, refs))]
    return [(name if names.count(name) == 1 else label, q) for name, label, q in zip(names, given, qrels_sets)]


def _score_files(paths: tuple[Path, ...]) -> dict[str, tuple[dict[str, float], Path]]:
    """Orderings from `--scores` files: label -> (run -> score, the file it came from)."""
    from qrelkit.io.run_scores import read_run_scores

    out: dict[str, tuple[dict[str, float], Path]] = {}
    for path in paths:
        for label, by_run in read_run_scores(path).items():
            if label in out:
                raise QrelkitError(f"--scores {path}: the ordering {label!r} is also in {out[label][1]}: give it once")
            out[label] = (by_run, path)
    return out


def cut_to_samples(
    sets: list[tuple[str, Qrels]], sources: list[dict[str, Any]], choice: str | None
) -> tuple[list[tuple[str, Qrels]], list[str]]:
    """Every set cut to the pairs each set graded from a sample of its pool judged (as an audit ranks a
    sample's systems: `qrelkit.evaluate.coverage`), unless ``choice`` (`--reference-pairs`) is 'all';
    with notes saying so."""
    from qrelkit.commands.agree import ranking_pairs
    from qrelkit.evaluate.coverage import ALL, cut_to_judged

    whys = [ranking_pairs(None, source)["why"] for source in sources]
    sampled = [(label, q, why) for (label, q), why in zip(sets, whys) if why]
    if not sampled:
        return sets, []
    if choice == ALL:
        return sets, [
            f"{label}: {why}; every set is read on all of its pairs, as asked (--reference-pairs all)" for label, _, why in sampled
        ]
    cut = []
    for label, qrels in sets:
        for _, sample, _ in sampled:
            qrels = cut_to_judged(qrels, sample)
        cut.append((label, qrels))
    names = ", ".join(label for label, _, _ in sampled)
    notes = [f"{label}: {why}" for label, _, why in sampled]
    notes.append(
        f"every set cut to the pairs {names} judged ({len(cut[0][1]):,} pairs in {cut[0][0]}); --reference-pairs all reads every pair"
    )
    return cut, notes


def run(request: CorrelateRequest, workspace: Workspace) -> RankCorrelations:
    """Rank correlations between every (measure, qrels) ordering of the runs.

    The qrels: one or more sets; ``max_rel``: also the first set cut to at most each M relevant
    items per query. Means run over the queries every qrels set judges (a query a run misses scores
    0), so all orderings see the same topics."""
    chosen = list(request.measures)
    found = [workspace.qrels_with_source(ref) for ref in request.qrels]
    sets = _labelled([f.qrels for f in found], [ref.ref if ref.ref is not None else ref.value for ref in request.qrels])
    sets, notes = cut_to_samples(sets, [f.source for f in found], request.reference_pairs)
    resolved = [qrels for _, qrels in sets]
    for m in request.max_rel:
        cut, how = sparsify_qrels(resolved[0], m, rel_level=request.rel_level, seed=request.seed, keep=request.keep)
        sets.append((cut.name, cut))
        notes.append(f"{cut.name}: {sets[0][0]} with {how}")
    extra = _score_files(request.scores)
    if len(sets) * len(chosen) + len(extra) < 2:
        raise QrelkitError("nothing to correlate: give two measures (--measure), two qrels sets (--qrels), --max-rel M, or --scores FILE")
    queries = sorted(set.intersection(*(set(q.grades) for _, q in sets)))
    if not queries:
        raise QrelkitError("the qrels sets share no query")
    run_list = workspace.runs(request.runs)
    scores: dict[str, dict[str, float]] = {}
    for label, qrels_set in sets:
        evaluation = evaluate_runs({q: qrels_set.grades[q] for q in queries}, run_list, chosen)
        for measure in chosen:
            name = measure if len(sets) == 1 else label if len(chosen) == 1 else f"{measure} | {label}"
            scores[name] = {run: evaluation.mean(run, measure) for run in evaluation.runs}
    for label, (by_run, path) in extra.items():
        if label in scores:
            raise QrelkitError(f"--scores {path}: the ordering {label!r} is also one of the measures' orderings: give it once")
        scores[label] = by_run
        notes.append(f"{label}: the runs' scores read from {path} (a run it does not score is left out of every correlation)")
    over = "every qrels set judges" if len(sets) > 1 else f"of {sets[0][0]}"
    notes.insert(0, f"means over the {len(queries)} queries {over}; a query a run misses scores 0")
    return rank_correlations(scores, queries=len(queries), notes=notes)
