"""The use cases behind `qrelkit load | show | evaluate`: files and names in, results out."""

from __future__ import annotations

from pathlib import Path

from qrelkit.commands.sources import resolve_qrels, resolve_runs
from qrelkit.evaluate import Evaluation, evaluate_runs
from qrelkit.io import OnDuplicate, list_run_files
from qrelkit.storage import LoadResult, Store

DEFAULT_MEASURES = ["nDCG@10"]


def load_topics(db: Path, file: Path, *, name: str | None = None, replace: bool = False) -> list[LoadResult]:
    with Store(db) as store:
        return [store.load_topics(file, name=name, replace=replace)]


def load_documents(
    db: Path, file: Path, *, name: str | None = None, image_root: Path | None = None, replace: bool = False
) -> list[LoadResult]:
    with Store(db) as store:
        return [store.load_documents(file, name=name, image_root=image_root, replace=replace)]


def load_runs(
    db: Path,
    paths: list[Path],
    *,
    group: str | None = None,
    replace: bool = False,
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
) -> list[LoadResult]:
    """Every run file given (folders expanded) in one transaction: all land, or none."""
    with Store(db) as store:
        return store.load_runs(list_run_files(list(paths)), group=group, replace=replace, on_duplicate=on_duplicate)


def load_qrels(
    db: Path, file: Path, *, name: str | None = None, replace: bool = False, on_duplicate: OnDuplicate | str = OnDuplicate.error
) -> list[LoadResult]:
    with Store(db) as store:
        return [store.load_qrels(file, name=name, replace=replace, on_duplicate=on_duplicate)]


def show(db: Path) -> list[dict[str, object]]:
    """{what, count, detail} for each thing the database holds (a qrels set's detail is its origin)."""
    with Store(db, read_only=True) as store:
        return [{"what": what, "count": count, "detail": detail} for what, count, detail in store.summary()]


def evaluate(
    qrels: str, runs: list[str], measures: list[str] | None, db: Path | None, *, on_duplicate: OnDuplicate | str = OnDuplicate.error
) -> Evaluation:
    """`qrelkit evaluate`: qrels and runs from files or the database, scored per query."""
    return evaluate_runs(
        resolve_qrels(qrels, db, on_duplicate=on_duplicate), resolve_runs(runs, db, on_duplicate=on_duplicate), measures or DEFAULT_MEASURES
    )
