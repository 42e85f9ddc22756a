"""Resolve what a user names on the command line: a file on disk, or a name in the database.

The database (DuckDB) is imported only when a name has to be looked up in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from qrelkit.errors import QrelkitError
from qrelkit.io import OnDuplicate, Qrels, Run, iter_runs, read_runs
from qrelkit.io.paths import irds_id, run_files

if TYPE_CHECKING:
    from qrelkit.storage import Store


def _open_store(db: str | Path) -> Store:
    from qrelkit.storage import Store

    return Store(db, read_only=True)


def resolve_qrels(ref: str, db: str | Path | None, *, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> Qrels:
    """A qrels file path, an ir_datasets id (`irds:<id>`), or the name of a qrels set in ``db``."""
    if Path(ref).is_file() or irds_id(ref) is not None:
        from qrelkit.io.sources import qrels_from

        return qrels_from(ref, on_duplicate=on_duplicate)
    if db is not None and Path(db).exists():
        with _open_store(db) as store:
            return store.qrels(ref)
    raise _no_qrels(ref, db)


def _no_qrels(ref: str, db: str | Path | None) -> QrelkitError:
    return QrelkitError(f"qrels {ref!r}: no such file" + ("" if db else " (and no --db to look the name up in)"))


def _split(refs: list[str], db: str | Path | None) -> tuple[list[str], list[str]]:
    """(paths, names to look up in ``db``); with no refs, every run in ``db``."""
    paths = [r for r in refs if Path(r).exists()]
    names = [r for r in refs if not Path(r).exists()]
    if (names or not refs) and (db is None or not Path(db).exists()):
        missing = ", ".join(names) if names else "(none given)"
        raise QrelkitError(f"runs {missing}: no such file or directory, and no database to look them up in")
    return paths, names


def resolve_runs(refs: list[str], db: str | Path | None, *, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> list[Run]:
    """Run files and directories; names of runs in ``db``; or, with no refs, every run in ``db``."""
    paths, names = _split(refs, db)
    runs = read_runs(list(paths), on_duplicate=on_duplicate) if paths else []
    if names or not refs:
        with _open_store(db) as store:  # type: ignore[arg-type]
            runs += store.runs(names or None)
    if not runs:
        raise QrelkitError("no runs to evaluate")
    return runs


def stream_runs(refs: list[str], db: str | Path | None, *, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> Iterator[Run]:
    """The runs of `resolve_runs`, read one at a time: for a caller that keeps only results
    (`evaluate_runs`), memory holds one run, not a whole track. Names and files are checked
    before the first run is read."""
    paths, names = _split(refs, db)
    files = run_files(list(paths)) if paths else []
    if names or not refs:
        with _open_store(db) as store:  # type: ignore[arg-type]
            known = store.run_names()
            for name in names:
                if name not in known:
                    store.run(name)  # raises the store's "no run named ..." error
            stored = names or known
    else:
        stored = []
    if not files and not stored:
        raise QrelkitError("no runs to evaluate")
    return _runs_from(files, stored, db, on_duplicate)


def _runs_from(files: list[Path], stored: list[str], db: str | Path | None, on_duplicate: OnDuplicate | str) -> Iterator[Run]:
    yield from iter_runs(list(files), on_duplicate=on_duplicate)
    if stored:
        with _open_store(db) as store:  # type: ignore[arg-type]
            yield from store.iter_runs(stored)  # one pass over the database, a run at a time


class ResolvedQrels(NamedTuple):
    """Qrels an audit reads, and what they are (plain data for its output: name, origin, file,
    judge run, grading record)."""

    qrels: Qrels
    source: dict[str, Any]
    judge_run_id: str | None = None  # the judge run they were graded from


def file_label(ref: str | Path) -> str:
    """How an audit names qrels read from a file: its folder and file name (`trec-dl-2019/qrels.txt`),
    not the stem alone, which is often just `qrels`."""
    path = Path(ref).resolve()
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


def _judge_run_part(info: Any) -> dict[str, Any]:
    return {"id": info.judge_run_id, "name": info.name, "judge": info.judge, "matched_by": info.matched_by}


def stored_qrels(store: Store, name: str, info: Any = None) -> ResolvedQrels:
    """A qrels set of the store with its origin; a graded one with its judge run (``info``, when the
    caller resolved it already) and its grading record."""
    from qrelkit.errors import StoreError
    from qrelkit.storage.judgments import judge_run

    qrels = store.qrels(name)
    origin, graded_from, path = store.qrels_origin(name) or ("loaded", None, None)
    grading = store.qrels_grading(name)
    if grading is not None:  # the rule, not the per-topic tables (the report shows those)
        grading = {
            k: v for k, v in grading.items() if k != "lowest_score_per_grade" and not (k == "thresholds" and grading.get("per_topic"))
        }
    source: dict[str, Any] = {"name": name, "origin": origin, "path": path, "judge_run": None, "grading": grading}
    if graded_from is not None:
        try:
            info = info if info is not None and info.judge_run_id == graded_from else judge_run(store, graded_from)
            source["judge_run"] = _judge_run_part(info)
        except StoreError:  # the judge run was dropped since (an import replaced): its id is all there is
            source["judge_run"] = {"id": graded_from, "name": None, "judge": None, "matched_by": "id"}
    return ResolvedQrels(qrels, source, graded_from)


def qrels_with_source(
    ref: str,
    db: str | Path | None,
    *,
    name: str | None = None,
    file_name: bool = False,
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
) -> ResolvedQrels:
    """`resolve_qrels` with what the qrels are; ``name`` renames them (`--reference-name`), and
    ``file_name`` names a file's qrels by `file_label` rather than its stem."""
    if Path(ref).is_file() or irds_id(ref) is not None:
        qrels = resolve_qrels(ref, db, on_duplicate=on_duplicate)
        if irds_id(ref) is None and file_name:
            qrels.name = file_label(ref)
        origin = "irds" if irds_id(ref) is not None else "file"
        resolved = ResolvedQrels(qrels, {"name": qrels.name, "origin": origin, "path": str(ref), "judge_run": None, "grading": None})
    elif db is not None and Path(db).exists():
        with _open_store(db) as store:
            resolved = stored_qrels(store, ref)
    else:
        raise _no_qrels(ref, db)
    if name is not None:
        resolved.qrels.name = name
        resolved.source["name"] = name
    return resolved


def judge_run_qrels(db: str | Path | None, judge_run: str, qrels_set: str | None = None) -> ResolvedQrels:
    """The qrels of a judge run an audit reads: ``qrels_set`` when given (it must have been graded
    from that run), else the set its job grades into, else its only graded set
    (`qrelkit.storage.judgments.audit_qrels_name`: several, none the job's, are listed and refused)."""
    if db is None or not Path(db).exists():
        raise QrelkitError(f"--judge-run {judge_run} needs an existing database (--db)")
    from qrelkit.storage.judgments import audit_qrels_name, graded_sets
    from qrelkit.storage.judgments import judge_run as find_judge_run

    with _open_store(db) as store:
        info = find_judge_run(store, judge_run)
        if qrels_set is None:
            return stored_qrels(store, audit_qrels_name(store, info), info)
        sets = graded_sets(store, info.judge_run_id)
        if qrels_set not in sets:
            what = "a file" if Path(qrels_set).is_file() else _what_set(store, qrels_set)
            raise QrelkitError(
                f"--model-qrels {qrels_set!r} with --judge-run {judge_run} must name a qrels set graded from judge run "
                f"{info.judge_run_id}, and {qrels_set!r} is {what} (sets graded from it: {', '.join(sets) or 'none'})"
            )
        return stored_qrels(store, qrels_set, info)


def _what_set(store: Store, name: str) -> str:
    origin = store.qrels_origin(name)
    if origin is None:
        return "no qrels set of the database"
    kind, graded_from, path = origin
    return f"graded from judge run {graded_from}" if kind == "graded" else f"loaded from {path}"
