"""The use cases behind `qrelkit load | show | evaluate`: files and names in, results out."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qrelkit.commands.requests import EvaluateRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError
from qrelkit.evaluate import Evaluation, evaluate_runs
from qrelkit.io import OnDuplicate, list_run_files, run_tag

if TYPE_CHECKING:
    from qrelkit.storage import LoadResult


def load_topics(db: Path, file: Path, *, name: str | None = None, replace: bool = False) -> list[LoadResult]:
    from qrelkit.storage import Store

    with Store(db) as store:
        return [store.load_topics(file, name=name, replace=replace)]


def load_documents(
    db: Path, file: Path, *, name: str | None = None, image_root: Path | None = None, replace: bool = False
) -> list[LoadResult]:
    from qrelkit.storage import Store

    with Store(db) as store:
        return [store.load_documents(file, name=name, image_root=image_root, replace=replace)]


def load_runs(
    db: Path,
    paths: list[Path],
    *,
    name: str | None = None,
    tag_names: bool = False,
    replace: bool = False,
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
) -> list[LoadResult]:
    """Every run file given (folders expanded) in one transaction: all land, or none. A run is named
    by ``name`` (one file only), by its tag column (``tag_names``), or by its file name. Files of a
    folder that are evidently not runs (a README, hidden files) come back as `skipped` results."""
    from qrelkit.storage import Store

    skipped: list[tuple[Path, str]] = []
    files = list_run_files(list(paths), skipped)
    if not files:
        left = f" (left out: {', '.join(f'{p.name} ({why})' for p, why in skipped[:5])})" if skipped else ""
        raise QrelkitError(f"no run file in {', '.join(map(str, paths))}{left}: nothing was loaded")
    if name is not None and tag_names:
        raise QrelkitError("give --name or --tag-names, not both")
    if name is not None and len(files) != 1:
        raise QrelkitError(f"--name names one run, but {len(files)} run files were given; use --tag-names, or load them one by one")
    names: list[str | None] = [name] if name is not None else [run_tag(f) for f in files] if tag_names else [None] * len(files)
    with Store(db) as store:
        results = store.load_runs(files, names=names, replace=replace, on_duplicate=on_duplicate)
    from qrelkit.storage import LoadResult

    return results + [LoadResult("runs", str(path), 0, "skipped", reason) for path, reason in skipped]


def load_qrels(
    db: Path, file: Path, *, name: str | None = None, replace: bool = False, on_duplicate: OnDuplicate | str = OnDuplicate.error
) -> list[LoadResult]:
    from qrelkit.storage import Store

    with Store(db) as store:
        return [store.load_qrels(file, name=name, replace=replace, on_duplicate=on_duplicate)]


def show(db: Path) -> list[dict[str, object]]:
    """{what, count, detail} for each thing the database holds (a qrels set's detail is its origin)."""
    from qrelkit.storage import Store

    with Store(db, read_only=True) as store:
        return [{"what": what, "count": count, "detail": detail} for what, count, detail in store.summary()]


OUTPUT_FORMATS = ("table", "json", "trec")


def check_format(output: str) -> str:
    """`qrelkit evaluate --format`: table, json or trec (trec_eval's lines)."""
    if output not in OUTPUT_FORMATS:
        raise QrelkitError(f"--format {output!r}: choose table, json or trec")
    return output


def contents(db: Path) -> dict[str, Any]:
    """`qrelkit show --json`: the sets, runs and judge runs the database holds, each with its fields."""
    from qrelkit.storage import Store
    from qrelkit.storage.contents import contents as stored

    with Store(db, read_only=True) as store:
        return stored(store)


def run_evaluate(request: EvaluateRequest, workspace: Workspace) -> Evaluation:
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


def evaluate(qrels: Any, runs: Any, measures: list[str] | None, db: Path | None, **options: Any) -> Evaluation:
    """`qrelkit evaluate` from option values (those of `EvaluateRequest.from_options`) and ``db``."""
    request = EvaluateRequest.from_options(qrels=qrels, runs=runs, measures=measures, **options)
    with Workspace(db, on_duplicate=request.on_duplicate) as workspace:
        return run_evaluate(request, workspace)
