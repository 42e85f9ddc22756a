"""Resolve what a user names on the command line: a file on disk, or a name in the database."""

from __future__ import annotations

from pathlib import Path

from qrelkit.errors import QrelkitError
from qrelkit.io import OnDuplicate, Qrels, Run, read_runs
from qrelkit.io.irds import irds_id
from qrelkit.io.sources import qrels_from
from qrelkit.storage import Store
from qrelkit.storage.judgments import graded_qrels


def resolve_qrels(ref: str, db: str | Path | None, *, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> Qrels:
    """A qrels file path, an ir_datasets id (`irds:<id>`), or the name of a qrels set in ``db``."""
    if Path(ref).is_file() or irds_id(ref) is not None:
        return qrels_from(ref, on_duplicate=on_duplicate)
    if db is not None and Path(db).exists():
        with Store(db, read_only=True) as store:
            return store.qrels(ref)
    raise QrelkitError(f"qrels {ref!r}: no such file" + ("" if db else " (and no --db to look the name up in)"))


def resolve_runs(refs: list[str], db: str | Path | None, *, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> list[Run]:
    """Run files and directories; names of runs in ``db``; or, with no refs, every run in ``db``."""
    paths: list[str | Path] = [r for r in refs if Path(r).exists()]
    names = [r for r in refs if not Path(r).exists()]
    runs = read_runs(paths, on_duplicate=on_duplicate) if paths else []
    if names or not refs:
        if db is None or not Path(db).exists():
            missing = ", ".join(names) if names else "(none given)"
            raise QrelkitError(f"runs {missing}: no such file or directory, and no database to look them up in")
        with Store(db, read_only=True) as store:
            runs += store.runs(names or None)
    if not runs:
        raise QrelkitError("no runs to evaluate")
    return runs


def judge_run_qrels(db: str | Path | None, judge_run: str) -> tuple[Qrels, str]:
    if db is None or not Path(db).exists():
        raise QrelkitError(f"--judge-run {judge_run} needs an existing database (--db)")
    with Store(db, read_only=True) as store:
        return graded_qrels(store, judge_run)
