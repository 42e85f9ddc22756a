"""Resolve what a user names on the command line: a file on disk, or a name in the database.

The database (DuckDB) is imported only when a name has to be looked up in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

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
    raise QrelkitError(f"qrels {ref!r}: no such file" + ("" if db else " (and no --db to look the name up in)"))


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


def judge_run_qrels(db: str | Path | None, judge_run: str) -> tuple[Qrels, str]:
    if db is None or not Path(db).exists():
        raise QrelkitError(f"--judge-run {judge_run} needs an existing database (--db)")
    from qrelkit.storage.judgments import graded_qrels

    with _open_store(db) as store:
        return graded_qrels(store, judge_run)
