"""`qrelkit assess plan` and `qrelkit assess load`: a designed sample of pairs for human assessors,
recorded in the database, and the grades they return, loaded as a human qrels set tied to it."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from qrelkit.commands.assess_inputs import (
    Inputs,
    choose_design,
    current_estimates,
    measure_setting,
    read_inputs,
    stored_grades,
    unjudged_note,
)
from qrelkit.commands.assess_results import LoadResult, PlanResult
from qrelkit.commands.requests.assess import AssessLoadRequest, AssessPlanRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError, StoreError


def _size(setting: Any, top: int) -> np.ndarray:
    from qrelkit.evaluate.estimate.designs import with_floor
    from qrelkit.evaluate.estimate.sizes import judge_uncertainty, measure_sizes, pair_gradients

    gradients = pair_gradients(setting.kernel, setting.pool, setting.judge_features, setting.place)
    return with_floor(measure_sizes(gradients, setting.pool.judge, top) * judge_uncertainty(setting.pool.judge))


def _planned_rows(pool: Any, chosen: np.ndarray, phase: int, stratum: np.ndarray, inclusion: np.ndarray) -> Any:
    from qrelkit.io import arrays

    at = np.flatnonzero(chosen)
    sizes = pool.sizes()
    strata = stratum[at]
    return arrays.table(
        {
            "phase": np.full(len(at), phase, dtype=np.int32),
            "qid": arrays.strings([pool.qids[i] for i in at]),
            "docid": arrays.strings([pool.docids[i] for i in at]),
            "stratum": strata.astype(np.int32),
            "stratum_size": np.where(strata >= 0, sizes[np.maximum(strata, 0)], 0).astype(np.int32),
            "inclusion": inclusion[at].astype(np.float64),
        }
    )


def _sizing(design: Any) -> dict[str, Any]:
    """How a weighted design's first phase sized its pairs (the floor, the counts' spread): a design
    planned by another rule draws other pairs from the same seed ({} for other kinds)."""
    from qrelkit.evaluate.estimate.sizes import SIZING

    if design.kind != "weighted" or not design.phases:
        return {}
    params = design.phases[0].get("params") or {}
    return {key: params.get(key) for key in SIZING}


def _said(sizing: dict[str, Any]) -> str:
    return ", ".join(f"{key} {value}" if value is not None else f"no {key} (an earlier qrelkit)" for key, value in sizing.items())


def plan(request: AssessPlanRequest, workspace: Workspace) -> PlanResult:
    if request.next_pairs is not None:
        return plan_next(request, workspace)
    from qrelkit.evaluate.choices import design_for
    from qrelkit.evaluate.estimate import designs
    from qrelkit.evaluate.estimate.sizes import sizing_params
    from qrelkit.storage.designs import StoredDesign, find_design, write_design

    assert request.budget is not None
    inputs = read_inputs(workspace, request.judge_qrels, request.runs, request.depth)
    pool = inputs.pool
    designs.check_budget(request.budget, len(pool))
    kind = design_for(request.design, request.budget)
    top = request.scale[1]
    setting = measure_setting(inputs, request.measure, top)
    keys = designs.uniforms(request.seed, pool.qids, pool.docids)
    drawn = designs.plan(
        kind, pool.query, request.budget, keys, size=_size(setting, top) if kind == "weighted" else None,
        query_keys=designs.uniforms(request.seed, pool.queries),
    )  # fmt: skip
    phase = {"phase": 1, "kind": kind, "budget": request.budget, "params": {**sizing_params(), "asked": request.design}}
    record = StoredDesign(
        request.name, kind, request.measure, request.seed, request.scale, inputs.judge_record(), [r.name for r in inputs.runs],
        len(pool), inputs.pool_hash, request.depth, None, [phase],
    )  # fmt: skip
    rows = _planned_rows(pool, drawn.chosen, 1, drawn.stratum, drawn.inclusion)
    files = _check_files(request, workspace)
    earlier = find_design(workspace.store, request.name) if workspace.has_db else None
    status = _plan_status(earlier, record)
    if status != "unchanged":
        with workspace.writing() as store:
            write_design(store, record, rows)
    new = _new_pairs(earlier, rows) if status in ("extended", "unchanged") else rows.num_rows
    written = _write_files(workspace, files, rows)
    return PlanResult(
        record.describe() | {"planned_pairs": rows.num_rows}, status, rows.num_rows, new, 1, written, drawn.inclusion, notes=_notes(inputs)
    )


def _plan_status(earlier: Any, record: Any) -> str:
    """What planning does to a design of the same name: a new one, unchanged, extended (a larger
    budget of the same plan: its pairs kept), or replaced; refused once labels are loaded for it."""
    if earlier is None:
        return "new"
    keys = ("kind", "measure", "seed", "scale", "pool_hash", "depth")
    same = all(getattr(earlier, key) == getattr(record, key) for key in keys) and _sizing(earlier) == _sizing(record)
    same = same and earlier.judge.get("labels_hash") == record.judge.get("labels_hash")
    unchanged = same and earlier.budget == record.budget and len(earlier.phases) == 1
    if earlier.human_set is not None and not unchanged:
        raise StoreError(
            f"design {earlier.name!r} has human labels loaded (qrels set {earlier.human_set!r}); planning it again "
            f"({_change(earlier, record)}) would change its pairs under them: plan under another --name, or add pairs with --next"
        )
    if unchanged:
        return "unchanged"
    return "extended" if same and record.budget > earlier.budget and len(earlier.phases) == 1 else "replaced"


def _change(old: Any, new: Any) -> str:
    parts = []
    for key, label in (("kind", "--design"), ("measure", "--measure"), ("seed", "--seed"), ("depth", "--depth"), ("budget", "--budget")):
        if getattr(old, key) != getattr(new, key):
            parts.append(f"{label} {getattr(new, key)} where it was {getattr(old, key)}")
    if _sizing(old) != _sizing(new) and old.kind == new.kind:
        parts.append(f"the weighted design's pairs sized by {_said(_sizing(new))} where they were sized by {_said(_sizing(old))}")
    if old.scale != new.scale:
        parts.append(f"--scale {new.scale[0]}-{new.scale[1]} where it was {old.scale[0]}-{old.scale[1]}")
    if old.pool_hash != new.pool_hash:
        parts.append(f"a pool of {new.pool_pairs} pairs where it was {old.pool_pairs} (other judge labels or runs)")
    elif old.judge.get("labels_hash") != new.judge.get("labels_hash"):
        parts.append(f"the judge's labels of {new.judge.get('name')!r} where they were {old.judge.get('name')!r}'s")
    return "; ".join(parts) or "more phases than one"


def _new_pairs(earlier: Any, rows: Any) -> int:
    if earlier is None:
        return rows.num_rows
    before = set(zip(earlier.pairs.column("qid").to_pylist(), earlier.pairs.column("docid").to_pylist()))
    return sum(1 for pair in zip(rows.column("qid").to_pylist(), rows.column("docid").to_pylist()) if pair not in before)


def _notes(inputs: Inputs) -> list[str]:
    note = unjudged_note(inputs)
    return [note] if note else []


def plan_next(request: AssessPlanRequest, workspace: Workspace) -> PlanResult:
    """`--next N`: one more phase of a pair design, where the intervals still undecided shrink most."""
    from qrelkit.evaluate.choices import DEFAULT_ESTIMATOR
    from qrelkit.evaluate.estimate import designs, inference
    from qrelkit.evaluate.estimate.sample import estimate_sample, next_phase
    from qrelkit.evaluate.estimate.sizes import sizing_params
    from qrelkit.storage.designs import add_phase

    assert request.next_pairs is not None
    if not workspace.has_db:
        raise StoreError(f"--next adds pairs to a design recorded in the database: {workspace.db} does not exist")
    design = choose_design(workspace.store, request.name)
    if design.kind == "queries":
        raise QrelkitError(
            f"design {design.name!r} samples whole queries: --next adds pairs to a pair design; plan a larger --budget instead"
        )
    if design.human_set is None:
        raise QrelkitError(
            f"design {design.name!r} has no human labels loaded yet: load them (qrelkit assess load) before asking for --next pairs"
        )
    inputs = read_inputs(workspace, request.judge_qrels, request.runs, design.depth or request.depth)
    top = design.scale[1]
    setting = measure_setting(inputs, design.measure, top)
    human = current_estimates(workspace, design, inputs)
    sample, grades = human.sample, human.labels
    estimator = DEFAULT_ESTIMATOR[design.kind]
    found = estimate_sample(setting, sample, grades, top, [estimator])[estimator]
    decided = inference.told_apart(found.values, found.covariance, found.df)[0]
    open_pairs = len(inputs.pool) - len(sample.index)
    if request.next_pairs > open_pairs:
        raise QrelkitError(f"--next {request.next_pairs} is more than the {open_pairs} pool pairs not yet planned")
    inclusion = next_phase(setting, sample, grades, top, request.next_pairs, decided, estimator)
    number = len(design.phases) + 1
    keys = designs.uniforms(design.seed, inputs.pool.qids, inputs.pool.docids, phase=number)
    chosen = keys < inclusion
    rows = _planned_rows(inputs.pool, chosen, number, np.full(len(inputs.pool), -1), inclusion)
    files = _check_files(request, workspace)
    phase = {
        "phase": number,
        "kind": "next",
        "budget": request.next_pairs,
        "params": {"estimator": estimator, "undecided": int((~decided).sum() // 2), **sizing_params()},
    }
    with workspace.writing() as store:
        add_phase(store, design.name, phase, rows)
    written = _write_files(workspace, files, rows)
    described = design.describe() | {"planned_pairs": design.pairs.num_rows + rows.num_rows}
    described["phases"] = described["phases"] + [{k: v for k, v in phase.items() if k != "params"}]
    return PlanResult(described, "next", rows.num_rows, rows.num_rows, number, written, inclusion, notes=_notes(inputs))


# -- files for assessors ---------------------------------------------------------------------------


def _check_files(request: AssessPlanRequest, workspace: Workspace) -> list[Path]:
    if request.out is None:
        return []
    template = request.qrels_out or request.out.with_suffix(".qrels")
    if template == request.out:
        template = request.out.with_name(request.out.name + ".qrels")
    refs = (request.judge_qrels, request.runs)
    return [workspace.check_output(path, force=request.force, refs=refs) for path in (request.out, template)]


def _cell(text: Any) -> str:
    return "" if text is None else " ".join(str(text).split())


def _write_files(workspace: Workspace, files: list[Path], rows: Any) -> list[Path]:
    """The TSV for assessors (a header, then qid, docid, an empty grade, the phase, the inclusion
    probability, the query's text and the document's text or image path where the database holds
    them) and the TREC qrels template (grade left empty)."""
    from qrelkit.io.files import write_atomically

    if not files:
        return []
    qids, docids = rows.column("qid").to_pylist(), rows.column("docid").to_pylist()
    phases, inclusion = rows.column("phase").to_pylist(), rows.column("inclusion").to_pylist()
    topics, documents = _texts(workspace, docids)
    lines = ["qid\tdocid\tgrade\tphase\tinclusion\tquery\tdocument"]
    for qid, docid, phase, pi in zip(qids, docids, phases, inclusion):
        document = documents.get(docid)
        shown = None if document is None else (document.text if document.text else document.image_path)
        lines.append(f"{qid}\t{docid}\t\t{phase}\t{pi:.6g}\t{_cell(topics.get(qid))}\t{_cell(shown)}")
    template = [f"{qid} 0 {docid} " for qid, docid in zip(qids, docids)]
    for path, text in zip(files, ("\n".join(lines) + "\n", "\n".join(template) + "\n")):
        write_atomically(path, partial(Path.write_text, data=text, encoding="utf-8"))
    return files


def _texts(workspace: Workspace, docids: list[str]) -> tuple[dict[str, str], dict[str, Any]]:
    if not workspace.has_db:
        return {}, {}
    store = workspace.store
    return {topic.qid: topic.text for topic in store.topics()}, store.documents(sorted(set(docids)))


# -- loading what assessors return -------------------------------------------------------------------


def load(request: AssessLoadRequest, workspace: Workspace) -> LoadResult:
    from qrelkit.io.assessed import read_grades
    from qrelkit.io.lines import file_sha256
    from qrelkit.storage.designs import save_labels

    if not workspace.has_db:
        raise StoreError(f"database {workspace.db} does not exist: plan a design first (qrelkit assess plan)")
    design = choose_design(workspace.store, request.design)
    planned = set(zip(design.pairs.column("qid").to_pylist(), design.pairs.column("docid").to_pylist()))
    known = stored_grades(workspace.store, design.human_set)
    grades = read_grades(request.human_qrels, planned, design.scale, design.name, known)
    set_name = request.name or design.human_set or f"{design.name}-human"
    rows = [(qid, docid, grade) for (qid, docid), grade in sorted(grades.items())]
    with workspace.writing() as store:
        save_labels(store, design.name, set_name, rows, path=str(request.human_qrels), file_hash=file_sha256(request.human_qrels))
    counts = np.bincount([g - design.scale[0] for _, _, g in rows], minlength=design.scale[1] - design.scale[0] + 1)
    grade_counts = {str(design.scale[0] + i): int(c) for i, c in enumerate(counts)}
    return LoadResult(design.name, set_name, len(rows), len(rows) - len(known), grade_counts, str(request.human_qrels))
