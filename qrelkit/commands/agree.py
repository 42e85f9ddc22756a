"""`qrelkit agree`: resolve the model and reference qrels (files, qrels sets in the database, a
judge run's graded qrels, or qrels in memory), the runs and the groups of an audit request, then
audit (`qrelkit.evaluate.audit`). The audit says what it read: each side's name, origin, judge
run, grading and sample (`Audit.sources`)."""

from __future__ import annotations

import dataclasses
from typing import Any, TypedDict

from qrelkit.commands.requests import GroupPattern, JudgeAudit, ModelAudit, RunGroups
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.audit import Audit, audit
from qrelkit.evaluate.coverage import ALL, JUDGED
from qrelkit.evaluate.labels import GradeMaps
from qrelkit.io import Run


def resolve_groups(run_names: list[str], patterns: tuple[GroupPattern, ...] = (), groups: RunGroups | None = None) -> dict[str, list[str]]:
    """`--group NAME=REGEX ...` and/or `--groups FILE[:COLUMN]` (or, from Python, groups named run
    by run) as group -> runs."""
    from qrelkit.evaluate.bias import check_groups, groups_from_file, groups_matching

    found = groups_matching([(p.name, p.pattern) for p in patterns], run_names) if patterns else {}
    if groups is not None and groups.lists:
        found.update(check_groups({name: list(runs) for name, runs in groups.lists}, run_names))
    if groups is None or groups.file is None:
        return found
    for name, members in groups_from_file(groups.file.path, groups.file.column, run_names).items():
        if name in found:
            raise QrelkitError(f"group {name!r} comes from both --group and {groups.file.path}")
        found[name] = members
    return found


def ranking_pairs(choice: str | None, source: dict[str, Any]) -> dict[str, Any]:
    """How an audit of model qrels of ``source`` ranks systems (`audit`'s ``reference_pairs``,
    ``model_covers``, ``why``): on the pairs the judge judged when its qrels are graded from a sample
    of its pool (the grading's record of the judge run's sample) or from a job's judgments so far
    (``source["partial"]``), unless ``choice`` (`--reference-pairs`) says otherwise."""
    sample = (source.get("grading") or {}).get("sample")
    partial = source.get("partial")
    covers, why = None, None
    if partial:
        covers, why = "partial", f"a running job's judgments so far: {partial}"
    elif sample and sample.get("pairs", 0) < (sample.get("pool_pairs") or 0):
        covers = "sample"
        why = f"graded from a sample of {sample['pairs']:,} of its pool's {sample['pool_pairs']:,} pairs (seed {sample.get('seed')})"
    return {"reference_pairs": choice or (JUDGED if covers else ALL), "model_covers": covers, "why": why}


class AuditOptions(TypedDict):
    """The keywords `audit` and `compare_judges` both take from a request (typed: mypy checks each
    name and type where they are unpacked)."""

    measures: list[str]
    judge_measures: list[str]
    reference_decimals: int | None
    groups: dict[str, list[str]]
    maps: GradeMaps
    rel_level: int | None
    resamples: int
    seed: int | None
    interval: str


def audit_options(request: JudgeAudit, runs: list[Run]) -> AuditOptions:
    """What an audit and a comparison of judges both read from their request, by `audit`'s keywords."""
    return {
        "measures": request.measure_list,
        "judge_measures": list(request.judge_measures),
        "reference_decimals": request.reference_decimals,
        "groups": resolve_groups([r.name for r in runs], request.group_patterns, request.groups),
        "maps": request.maps,
        "rel_level": request.rel_level,
        "resamples": request.resamples,
        "seed": request.seed,
        "interval": request.interval,
    }


def run(request: ModelAudit, workspace: Workspace) -> Audit:
    """The audit a request asks for, on the qrels and runs the workspace resolves it to
    (`Workspace.qrels_with_source`, `Workspace.runs`), or a running job's judgments so far."""
    if request.partial:
        from qrelkit.commands.partial import partial_qrels

        model = partial_qrels(workspace, request.judge_run)
    else:
        model = workspace.qrels_with_source(request.model_qrels)
    reference = workspace.qrels_with_source(request.reference_qrels)
    runs = workspace.runs(request.runs)
    ranking = ranking_pairs(request.reference_pairs, model.source)
    result = audit(model.qrels, reference.qrels, runs, **audit_options(request, runs), **ranking)
    sources = {"model": model.source, "reference": reference.source}
    notes = [note for source in sources.values() for note in source.get("notes") or []]  # repeats merged, said
    return dataclasses.replace(result, sources=sources, warnings=notes + result.warnings)
