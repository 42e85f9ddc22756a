"""The workspace a use case runs in: the database (opened once, read-only, only when a reference
needs it, and closed when the use case ends) and the references of a request resolved into data.

`run(request, workspace)` is every use case's shape: the command line and the Python API build the
request, open a `Workspace` on ``--db`` for the length of one call, and print or return the result.
Nothing holds the database between calls, so a notebook's `qrelkit.Store` never locks out
`qrelkit show` (DuckDB lets one process write or several read a file).
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from qrelkit.commands.fields import Request
from qrelkit.commands.requests import QrelsRef, RunsRef
from qrelkit.errors import QrelkitError
from qrelkit.io import OnDuplicate

if TYPE_CHECKING:
    from qrelkit.io import Qrels, Run
    from qrelkit.storage import Store


class ResolvedQrels(NamedTuple):
    """Qrels an audit reads, and what they are (plain data for its output: name, origin, file,
    judge run, grading record)."""

    qrels: Qrels
    source: dict[str, Any]
    judge_run_id: str | None = None  # the judge run they were graded from


def file_label(ref: str | Path) -> str:
    """How an audit names qrels read from a file: its folder and file name (`trec-dl-2019/qrels.txt`),
    not the stem alone, which is often just `qrels`."""
    from qrelkit.io.paths import checked_name

    path = Path(ref).resolve()
    label = f"{path.parent.name}/{path.name}" if path.parent.name else path.name
    return checked_name(label, "the name taken from the file", repr(str(ref)))


# A factory of progress reports: (what is done, its unit) -> a context manager giving the callback
# ``progress(done, total)`` (or None: nothing is shown). The command line's draws a bar or lines.
ProgressFactory = Callable[..., contextlib.AbstractContextManager[Any]]


def no_progress(description: str, unit: str = "pairs") -> contextlib.AbstractContextManager[Any]:
    return contextlib.nullcontext(None)


class Workspace:
    """What a use case runs in besides its request: ``db`` (a path, or None for files and memory
    alone), how repeated pairs in files are read, how progress is shown (``progress``: a
    `ProgressFactory`, none from Python) and the command as given (``command``, shown in a report).
    Use as a context manager: the store, once opened, stays open until the workspace closes."""

    def __init__(
        self,
        db: str | Path | None = None,
        *,
        on_duplicate: OnDuplicate | str = OnDuplicate.error,
        progress: ProgressFactory = no_progress,
        command: str = "qrelkit",
    ):
        self.db = None if db is None else Path(db)
        self.on_duplicate = OnDuplicate(on_duplicate)
        self.progress = progress
        self.command = command
        self._store: Store | None = None

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    @property
    def shows_progress(self) -> bool:
        """Whether progress is shown (a library's own bars follow it)."""
        return bool(getattr(self.progress, "enabled", False))

    @property
    def has_db(self) -> bool:
        return self.db is not None and self.db.exists()

    @property
    def store(self) -> Store:
        """The database, opened read-only on first use (the one open of this workspace)."""
        if self._store is None:
            from qrelkit.storage import Store

            if self.db is None:
                raise QrelkitError("no database given (--db)")
            self._store = Store(self.db, read_only=True)
        return self._store

    def check_output(self, path: str | Path, *, force: bool, refs: tuple[Any, ...] = (), files: dict[str, Any] | None = None) -> Path:
        """``path`` when an output may be written there (`qrelkit.io.files.check_output`): never over
        this workspace's database, a file a reference in ``refs`` (`QrelsRef`, `RunsRef`) names or
        one of ``files`` (option -> path), and over another existing file only with ``force``."""
        from qrelkit.io.files import check_output

        named: list[str] = []
        for ref in refs:
            named += [ref.ref] if isinstance(ref, QrelsRef) and ref.ref is not None else list(getattr(ref, "refs", ()))
        return check_output(path, force=force, inputs={"--db": self.db, "input": named, **(files or {})})

    def _no_database(self, ref: str | None) -> str:
        """Why a name was not looked up as a stored set: the end of a "no such file" message."""
        if self.db is None:
            return " (and no --db to look the name up in)"
        if Path(str(ref)).suffix or "/" in str(ref):
            return ""  # a path, not a set's name
        return f", and there is no database {self.db} to look up a stored set of that name: give the database that holds it with --db FILE"

    def writing(self) -> Store:
        """The database opened for writing (created when missing); no reading connection of this
        workspace holds the file meanwhile. The caller closes it (``with workspace.writing() as store``)."""
        from qrelkit.storage import Store

        if self.db is None:
            raise QrelkitError("no database given (--db)")
        self.close()
        return Store(self.db)

    # -- qrels ------------------------------------------------------------------------------------

    def qrels(self, ref: QrelsRef | Any) -> Qrels:
        """The qrels alone (no record of where they came from)."""
        return self.qrels_with_source(QrelsRef.of(ref) if not isinstance(ref, QrelsRef) else ref).qrels

    def qrels_with_source(self, ref: QrelsRef) -> ResolvedQrels:
        """Qrels and what they are; a judge run's graded set with its run and grading."""
        from qrelkit.io.paths import irds_id

        if ref.value is not None:
            resolved = self._qrels_in_memory(ref.value, ref.name)
        elif ref.judge_run is not None:
            resolved = self.judge_run_qrels(ref.judge_run, ref.ref)
        elif ref.ref is not None and ref.judge and Path(ref.ref).is_file():
            resolved = self._judge_file(ref.ref, ref.file_label)
        elif ref.ref is not None and (Path(ref.ref).is_file() or irds_id(ref.ref) is not None):
            resolved = self._qrels_file(ref.ref, ref.file_label)
        elif ref.ref is not None and self.has_db:
            resolved = stored_qrels(self.store, ref.ref)
        else:
            raise QrelkitError(f"qrels {ref.ref!r}: no such file" + self._no_database(ref.ref))
        if ref.name is not None:
            resolved.qrels.name = ref.name
            resolved.source["name"] = ref.name
        return resolved

    def _qrels_file(self, ref: str, named_by_file: bool) -> ResolvedQrels:
        from qrelkit.io.paths import irds_id
        from qrelkit.io.sources import qrels_from

        qrels = qrels_from(ref, on_duplicate=self.on_duplicate)
        if irds_id(ref) is None and named_by_file:
            qrels.name = file_label(ref)
        origin = "irds" if irds_id(ref) is not None else "file"
        return ResolvedQrels(qrels, {"name": qrels.name, "origin": origin, "path": str(ref), "judge_run": None, "grading": None})

    def _judge_file(self, ref: str, named_by_file: bool) -> ResolvedQrels:
        """A judge's file: integer grades as any qrels file, other numbers as the judge's scores;
        repeats resolved by ``on_duplicate`` are counted in the source (and said in its notes)."""
        from qrelkit.io.judge_files import read_judge_file

        found = read_judge_file(ref, name=file_label(ref) if named_by_file else None, on_duplicate=self.on_duplicate)
        note = found.repeat_note()
        source = {"name": found.qrels.name, "origin": "file", "path": str(ref), "judge_run": None, "grading": None, **found.describe()}
        return ResolvedQrels(found.qrels, source | ({"notes": [note]} if note else {}))

    def _qrels_in_memory(self, value: Any, name: str | None) -> ResolvedQrels:
        from qrelkit.io import Qrels, frames

        if isinstance(value, Qrels):  # a copy: renaming it for this output leaves the caller's as it was
            qrels = Qrels.from_table(name or value.name, value.table, source=value.source)
        elif isinstance(value, Mapping):
            qrels = frames.qrels_from_dict(value, name or "qrels")
        elif frames.is_table(value):
            qrels = frames.qrels_from_table(value, name or "qrels", on_duplicate=self.on_duplicate)
        else:
            raise QrelkitError(
                f"qrels as {type(value).__name__}: give a file, a stored set's name, a Qrels, a {{qid: {{docid: grade}}}} dict or a table"
            )
        return ResolvedQrels(qrels, {"name": qrels.name, "origin": "memory", "path": None, "judge_run": None, "grading": None})

    def judge_run_qrels(self, judge_run: str, qrels_set: str | None = None) -> ResolvedQrels:
        """The qrels of a judge run an audit reads: ``qrels_set`` when given (it must have been graded
        from that run), else the set its job grades into, else its only graded set
        (`qrelkit.storage.judgments.audit_qrels_name`: several, none the job's, are listed and refused)."""
        if not self.has_db:
            raise QrelkitError(f"--judge-run {judge_run} needs an existing database (--db)")
        from qrelkit.storage.judgments import audit_qrels_name, graded_sets
        from qrelkit.storage.judgments import judge_run as find_judge_run

        store = self.store
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

    # -- runs -------------------------------------------------------------------------------------

    def _run_sources(self, ref: RunsRef | Any) -> tuple[list[Path], list[str], list[Run]]:
        """(run files, names of stored runs, runs in memory) of ``ref``: files and folders, names of
        stored runs, or, with neither, every stored run; and runs in memory. Files are checked here."""
        from qrelkit.io.paths import run_files

        ref = ref if isinstance(ref, RunsRef) else RunsRef.of(ref)
        in_memory = self._runs_in_memory(ref.values)
        files: list[Path] = []
        stored: list[str] = []
        if ref.refs or not in_memory:
            paths = [r for r in ref.refs if Path(r).exists()]
            names = [r for r in ref.refs if not Path(r).exists()]
            if (names or not ref.refs) and not self.has_db:
                missing = ", ".join(names) if names else "(none given)"
                raise QrelkitError(f"runs {missing}: no such file or directory, and no database to look them up in")
            files = run_files(list(paths)) if paths else []
            if names or not ref.refs:
                stored = names or self.store.run_names()
        if not files and not stored and not in_memory:
            raise QrelkitError("no runs to evaluate")
        return files, stored, in_memory

    def runs(self, ref: RunsRef | Any) -> list[Run]:
        """The runs of ``ref`` (`_run_sources`): run files, runs in memory, then stored runs."""
        from qrelkit.io import read_runs

        files, stored, in_memory = self._run_sources(ref)
        return read_runs(list(files), on_duplicate=self.on_duplicate) + in_memory + (self.store.runs(stored) if stored else [])

    def stream_runs(self, ref: RunsRef | Any) -> Iterator[Run]:
        """The runs of `_run_sources` read one at a time (files, stored runs, then runs in memory): for a
        caller that keeps only results (`evaluate_runs`), memory holds one run, not a whole track. Names
        and files are checked before the first run is read; the workspace must stay open while the runs are read."""
        from qrelkit.io import iter_runs

        files, stored, in_memory = self._run_sources(ref)
        from_db = self.store.iter_runs(stored) if stored else iter(())  # one pass over the database, a run at a time
        return itertools.chain(iter_runs(list(files), on_duplicate=self.on_duplicate), from_db, in_memory)

    def _runs_in_memory(self, values: tuple[Any, ...]) -> list[Run]:
        from qrelkit.io import Run, frames

        runs: list[Run] = []
        for value in values:
            if isinstance(value, Run):
                runs.append(value)
            elif isinstance(value, Mapping) and frames.is_nested_dict(value, 3):
                runs += [frames.run_from_dict(scores, str(name)) for name, scores in value.items()]
            elif isinstance(value, Mapping):
                runs.append(frames.run_from_dict(value, "run"))
            elif frames.is_table(value):
                runs += frames.runs_from_table(value, on_duplicate=self.on_duplicate)
            else:
                raise QrelkitError(
                    f"runs as {type(value).__name__}: give files or folders, stored run names, Run objects, "
                    "{run: {qid: {docid: score}}} or a table"
                )
        return runs


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
            source["judge_run"] = {"id": info.judge_run_id, "name": info.name, "judge": info.judge, "matched_by": info.matched_by}
        except StoreError:  # the judge run was dropped since (an import replaced): its id is all there is
            source["judge_run"] = {"id": graded_from, "name": None, "judge": None, "matched_by": "id"}
    return ResolvedQrels(qrels, source, graded_from)


def _what_set(store: Store, name: str) -> str:
    origin = store.qrels_origin(name)
    if origin is None:
        return "no qrels set of the database"
    kind, graded_from, path = origin
    return f"graded from judge run {graded_from}" if kind == "graded" else f"loaded from {path}"


def footer(command: str) -> Any:
    """What made a page, for its footer: qrelkit's version, the time, the command line."""
    from datetime import UTC, datetime

    from qrelkit.report.document import Keyed, Paragraph
    from qrelkit.version import __version__

    return Paragraph([f"qrelkit {__version__} · {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} · ", Keyed("command", command)])


def execute(request: Request, db: str | Path | None = None, *, progress: ProgressFactory = no_progress, command: str = "qrelkit") -> Any:
    """Answer ``request`` in a workspace on ``db`` open for this call alone: the one path from a
    request, made by the command line or by the Python API, to its use case's result (its class's
    ``use_case``, imported when it is needed)."""
    module, _, name = type(request).use_case.partition(":")
    on_duplicate = getattr(request, "on_duplicate", None)
    duplicates = on_duplicate if isinstance(on_duplicate, OnDuplicate) else OnDuplicate.error
    with Workspace(db, on_duplicate=duplicates, progress=progress, command=command) as workspace:
        return getattr(importlib.import_module(module), name)(request, workspace)
