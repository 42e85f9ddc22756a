"""The use cases behind `qrelkit load | show`: files in, the database's contents out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from qrelkit.commands.requests import LoadDocsRequest, LoadQrelsRequest, LoadRunsRequest, LoadTopicsRequest, ShowRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError
from qrelkit.io import list_run_files, run_tag

LoadRequest = LoadTopicsRequest | LoadDocsRequest | LoadRunsRequest | LoadQrelsRequest

if TYPE_CHECKING:
    from qrelkit.storage import LoadResult


def run_load(request: LoadRequest, workspace: Workspace) -> list[LoadResult]:
    """`qrelkit load topics | docs | runs | qrels`: what was loaded, or found loaded already."""
    if isinstance(request, LoadRunsRequest):
        return _load_runs(request, workspace)
    with workspace.writing() as store:
        if isinstance(request, LoadTopicsRequest):
            return [store.load_topics(request.file, name=request.name, replace=request.replace)]
        if isinstance(request, LoadDocsRequest):
            return [store.load_documents(request.file, name=request.name, image_root=request.image_root, replace=request.replace)]
        return [store.load_qrels(request.file, name=request.name, replace=request.replace, on_duplicate=request.on_duplicate)]


def _load_runs(request: LoadRunsRequest, workspace: Workspace) -> list[LoadResult]:
    """Every run file given (folders expanded) in one transaction: all land, or none. A run is named
    by ``name`` (one file only), by its tag column (``tag_names``), or by its file name. Files of a
    folder that are evidently not runs (a README, hidden files) come back as `skipped` results."""
    from qrelkit.storage import LoadResult

    skipped: list[tuple[Path, str]] = []
    files = list_run_files(list(request.paths), skipped)
    if not files:
        left = f" (left out: {', '.join(f'{p.name} ({why})' for p, why in skipped[:5])})" if skipped else ""
        raise QrelkitError(f"no run file in {', '.join(map(str, request.paths))}{left}: nothing was loaded")
    if request.name is not None and len(files) != 1:
        raise QrelkitError(f"--name names one run, but {len(files)} run files were given; use --tag-names, or load them one by one")
    if request.name is not None:
        names: list[str | None] = [request.name]
    else:
        names = [run_tag(f) for f in files] if request.tag_names else [None] * len(files)
    with workspace.writing() as store:
        results = store.load_runs(files, names=names, replace=request.replace, on_duplicate=request.on_duplicate)
    return results + [LoadResult("runs", str(path), 0, "skipped", reason) for path, reason in skipped]


def run_show(request: ShowRequest, workspace: Workspace) -> Any:
    """`qrelkit show`: the database's name, {what, count, detail} for each thing it holds (a qrels
    set's detail is its origin), and the sets, runs and judge runs with their fields (its JSON). While
    a judging job holds the database, its status instead (`qrelkit.commands.status`), at once."""
    from qrelkit.commands.status import held_by_job
    from qrelkit.storage.contents import contents

    running = held_by_job(workspace.db)
    if running is not None:
        return running

    lines = [{"what": what, "count": count, "detail": detail} for what, count, detail in workspace.store.summary()]
    return str(workspace.db), lines, contents(workspace.store)
