"""`qrelkit agree`: resolve the model and reference qrels (files, qrels sets in the database, a
judge run's graded qrels, or qrels in memory), the runs and the groups of an `AuditRequest`, then
audit (`qrelkit.evaluate.audit`). The audit says what it read: each side's name, origin, judge
run, grading and sample (`Audit.sources`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from qrelkit.commands.requests import AuditRequest, GroupPattern, GroupsFile
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.audit import DEFAULT_MEASURES, Audit, audit
from qrelkit.io import Qrels, Run


@dataclass(frozen=True)
class AuditInputs:
    model: Qrels
    reference: Qrels
    runs: list[Run]
    judge_run_id: str | None = None  # the full id when the model qrels were graded from a judge run
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)  # "model", "reference": what each is


def load_inputs(request: AuditRequest, workspace: Workspace) -> AuditInputs:
    """Model qrels from a file, a qrels set, a judge run's (the set its job grades into, its only
    graded set, or the set the request names, which must have been graded from it), or memory;
    the reference named by its stored name, the request's name, or its folder and file name."""
    model = workspace.qrels_with_source(request.model)
    reference = workspace.qrels_with_source(request.reference)
    runs = workspace.runs(request.runs)
    return AuditInputs(model.qrels, reference.qrels, runs, model.judge_run_id, {"model": model.source, "reference": reference.source})


def resolve_groups(
    run_names: list[str],
    patterns: tuple[GroupPattern, ...] = (),
    groups_file: GroupsFile | None = None,
    lists: tuple[tuple[str, tuple[str, ...]], ...] = (),
) -> dict[str, list[str]]:
    """`--group NAME=REGEX ...` and/or `--groups FILE[:COLUMN]` (or, from Python, groups named run
    by run) as group -> runs."""
    from qrelkit.evaluate.bias import check_groups, groups_from_file, groups_matching

    found = groups_matching([(p.name, p.pattern) for p in patterns], run_names) if patterns else {}
    if lists:
        found.update(check_groups({name: list(runs) for name, runs in lists}, run_names))
    if groups_file is None:
        return found
    for name, members in groups_from_file(groups_file.path, groups_file.column, run_names).items():
        if name in found:
            raise QrelkitError(f"group {name!r} comes from both --group and {groups_file.path}")
        found[name] = members
    return found


def run(request: AuditRequest, workspace: Workspace) -> Audit:
    """The audit a request asks for, on what the workspace resolves it to."""
    inputs = load_inputs(request, workspace)
    run_groups = resolve_groups([r.name for r in inputs.runs], request.group_patterns, request.groups_file, request.group_lists)
    result = audit(
        inputs.model,
        inputs.reference,
        inputs.runs,
        measures=list(request.measures) or DEFAULT_MEASURES,
        judge_measures=list(request.judge_measures),
        reference_decimals=request.reference_decimals,
        groups=run_groups,
        reference_map=request.reference_map,
        model_map=request.model_map,
        rel_level=request.rel_level,
        resamples=request.resamples,
        seed=request.seed,
        interval=request.interval,
    )
    notes = [note for source in inputs.sources.values() for note in source.get("notes") or []]  # repeats merged, said
    return dataclasses.replace(result, sources=inputs.sources, warnings=notes + result.warnings)


def agree(*, db: Any = None, **options: Any) -> Audit:
    """`qrelkit agree` from option values (those of `AuditRequest.from_options`) and ``db``."""
    request = AuditRequest.from_options(**options)
    with Workspace(db, on_duplicate=request.on_duplicate) as workspace:
        return run(request, workspace)
