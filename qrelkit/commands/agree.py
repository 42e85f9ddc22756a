"""`qrelkit agree`: resolve the model and reference qrels (files, qrels sets in the database, or
a judge run's graded qrels), the runs and the groups, then audit (`qrelkit.evaluate.audit`). The
audit says what it read: each side's name, origin, judge run, grading and sample (`Audit.sources`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qrelkit.commands.sources import judge_run_qrels, qrels_with_source, resolve_runs
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.audit import DEFAULT_MEASURES, Audit, audit
from qrelkit.evaluate.bias import groups_from_file, groups_from_patterns
from qrelkit.evaluate.bootstrap import DEFAULT_METHOD, check_method, check_resamples
from qrelkit.evaluate.labels import parse_grade_map
from qrelkit.io import OnDuplicate, Qrels, Run
from qrelkit.io.groups import split_groups_spec


@dataclass(frozen=True)
class AuditInputs:
    model: Qrels
    reference: Qrels
    runs: list[Run]
    judge_run_id: str | None = None  # the full id when the model qrels were graded from a judge run
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)  # "model", "reference": what each is


def load_inputs(
    *,
    model_qrels: str | None,
    reference_qrels: str,
    runs: list[str],
    db: str | Path | None,
    judge_run: str | None = None,
    reference_name: str | None = None,
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
) -> AuditInputs:
    """Model qrels from a file, a qrels set in ``db``, or a judge run's: the set its job grades into
    (or its only graded set), or the set ``model_qrels`` names, which must have been graded from it.
    The reference is named by its stored name, ``reference_name``, or its folder and file name."""
    if model_qrels is None and judge_run is None:
        raise QrelkitError("give the model qrels: --model-qrels FILE_OR_NAME, or --judge-run ID (with --db), or both (a set of that run)")
    if judge_run is not None:
        model = judge_run_qrels(db, judge_run, model_qrels)
    else:
        model = qrels_with_source(model_qrels, db, on_duplicate=on_duplicate)  # type: ignore[arg-type]
    reference = qrels_with_source(reference_qrels, db, name=reference_name, file_name=True, on_duplicate=on_duplicate)
    return AuditInputs(
        model.qrels,
        reference.qrels,
        resolve_runs(runs, db, on_duplicate=on_duplicate),
        model.judge_run_id,
        {"model": model.source, "reference": reference.source},
    )


def resolve_groups(
    run_names: list[str],
    *,
    patterns: list[str] | None = None,
    groups: str | Path | None = None,
    group_by: str | None = None,
) -> dict[str, list[str]]:
    """`--group NAME=REGEX ...` and/or `--groups FILE[:COLUMN]` (or `--groups FILE --group-by COLUMN`) as group -> runs."""
    if groups is None:
        if group_by is not None:
            raise QrelkitError("--group-by names a column of a --groups FILE; give the file too")
        return groups_from_patterns(patterns, run_names) if patterns else {}
    file, column = split_groups_spec(groups)
    if group_by is not None and column is not None and group_by != column:
        raise QrelkitError(f"--groups {groups} names column {column!r} but --group-by says {group_by!r}")
    found = groups_from_patterns(patterns, run_names) if patterns else {}
    for name, members in groups_from_file(file, column or group_by, run_names).items():
        if name in found:
            raise QrelkitError(f"group {name!r} comes from both --group and {file}")
        found[name] = members
    return found


def agree(
    *,
    model_qrels: str | None = None,
    reference_qrels: str,
    runs: list[str],
    db: str | Path | None = None,
    judge_run: str | None = None,
    reference_name: str | None = None,
    measures: list[str] | None = None,
    group_patterns: list[str] | None = None,
    groups: str | Path | None = None,
    group_by: str | None = None,
    reference_map: str | None = None,
    model_map: str | None = None,
    rel_level: int | None = None,
    resamples: int = 1000,
    seed: int | None = 0,
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
    interval: str = DEFAULT_METHOD,
) -> Audit:
    """`qrelkit agree`: resolve what the command line names, then :func:`qrelkit.evaluate.audit.audit`.
    ``interval``: 'bca' (default) or 'percentile' bootstrap intervals."""
    check_resamples(resamples)  # before anything is read: a bad count is an input error, not a wait
    check_method(interval)
    parsed_reference_map = parse_grade_map(reference_map, "--map") if reference_map else None
    parsed_model_map = parse_grade_map(model_map, "--map-model") if model_map else None
    inputs = load_inputs(
        model_qrels=model_qrels,
        reference_qrels=reference_qrels,
        runs=runs,
        db=db,
        judge_run=judge_run,
        reference_name=reference_name,
        on_duplicate=on_duplicate,
    )
    run_groups = resolve_groups([r.name for r in inputs.runs], patterns=group_patterns, groups=groups, group_by=group_by)
    result = audit(
        inputs.model,
        inputs.reference,
        inputs.runs,
        measures=measures or DEFAULT_MEASURES,
        groups=run_groups,
        reference_map=parsed_reference_map,
        model_map=parsed_model_map,
        rel_level=rel_level,
        resamples=resamples,
        seed=seed,
        interval=interval,
    )
    return dataclasses.replace(result, sources=inputs.sources)
