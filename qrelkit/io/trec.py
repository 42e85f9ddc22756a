"""TREC run (`qid Q0 docid rank score tag`) and qrels (`qid iter docid grade`) files.

Columns are split on any whitespace, as trec_eval does. Run scores read from text are
rounded to float32: trec_eval stores them as C floats, so ties and orderings (and hence
NIST's published numbers) only reproduce at that precision.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import numpy as np

from qrelkit.errors import InputFormatError, LineProblem, SkippedFilesWarning
from qrelkit.io.lines import iter_lines, raise_if_problems


class OnDuplicate(StrEnum):
    """How to resolve a repeated (qid, docid) within one file."""

    error = "error"
    first = "first"  # keep the first occurrence
    last = "last"  # keep the last occurrence
    max = "max"  # keep the highest score / grade


@dataclass(frozen=True)
class RunEntry:
    qid: str
    docid: str
    rank: int
    score: float


@dataclass(frozen=True)
class Run:
    """A ranked list per query. ``entries`` keep file order; ``scores`` is the trec_eval view."""

    name: str
    entries: tuple[RunEntry, ...]
    tag: str = ""
    source: str | None = None

    @property
    def scores(self) -> dict[str, dict[str, float]]:
        """qid -> docid -> score, the input pytrec_eval and ir_measures take."""
        out: dict[str, dict[str, float]] = {}
        for entry in self.entries:
            out.setdefault(entry.qid, {})[entry.docid] = entry.score
        return out

    def ranking(self, qid: str | None = None) -> dict[str, list[str]]:
        """qid -> docids in trec_eval order: score descending, ties by docid descending."""
        by_query: dict[str, list[RunEntry]] = {}
        for entry in self.entries:
            if qid is None or entry.qid == qid:
                by_query.setdefault(entry.qid, []).append(entry)
        return {q: [e.docid for e in sorted(items, key=lambda e: (e.score, e.docid), reverse=True)] for q, items in by_query.items()}

    @property
    def qids(self) -> list[str]:
        return sorted({entry.qid for entry in self.entries})

    def __len__(self) -> int:
        return len(self.entries)


@dataclass(frozen=True)
class Qrel:
    qid: str
    docid: str
    grade: int
    iteration: str = "0"


@dataclass(frozen=True)
class Qrels:
    name: str
    entries: tuple[Qrel, ...]
    source: str | None = None
    _lookup: dict[str, dict[str, int]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def grades(self) -> dict[str, dict[str, int]]:
        """qid -> docid -> grade."""
        if not self._lookup and self.entries:
            for q in self.entries:
                self._lookup.setdefault(q.qid, {})[q.docid] = q.grade
        return self._lookup

    @property
    def qids(self) -> list[str]:
        return sorted(self.grades)

    def __len__(self) -> int:
        return len(self.entries)


def run_name_from_path(path: str | Path) -> str:
    """A run's name is its file name without the extension (`runs/bm25.run` -> `bm25`). NIST ships
    every submitted run as `input.<tag>[.gz]`, so those are named by the tag (`input.bm25base_p.gz`
    -> `bm25base_p`), not all `input`."""
    name = Path(path).name
    if name.endswith(".gz"):
        name = name[:-3]
    if name.startswith("input.") and len(name) > len("input."):
        return name[len("input.") :]
    return Path(name).stem if "." in name else name


def run_tag(path: str | Path) -> str:
    """The one tag (column 6) a run file's lines carry, for naming a run by its tag; an error
    names the file when its lines carry several tags or none."""
    path = Path(path)
    problems: list[LineProblem] = []
    tags: dict[str, int] = {}
    for number, text in iter_lines(path, problems):
        cols = text.split()
        if len(cols) == 6:
            tags.setdefault(cols[5], number)
    raise_if_problems(problems)
    if len(tags) != 1:
        found = ", ".join(f"{tag!r} (line {line})" for tag, line in list(tags.items())[:5])
        what = f"several tags: {found}" if tags else "no `qid Q0 docid rank score tag` line"
        raise InputFormatError.single(path, 0, f"cannot name the run by its tag: the file has {what}; name it with --name")
    return next(iter(tags))


def _keep(
    kept: dict[tuple[str, str], tuple[int, float, object]],
    key: tuple[str, str],
    value: object,
    magnitude: float,
    line: int,
    policy: OnDuplicate,
    path: Path,
    problems: list[LineProblem],
    what: str,
) -> None:
    """Record one (qid, docid) item, resolving a repeat by ``policy``; magnitude drives `max`."""
    previous = kept.get(key)
    if previous is None:
        kept[key] = (line, magnitude, value)
    elif policy is OnDuplicate.error:
        problems.append(
            LineProblem(
                str(path),
                line,
                f"duplicate {what} for qid {key[0]!r}, docid {key[1]!r} (first on line {previous[0]}); "
                "choose how to resolve with --on-duplicate first|last|max",
            )
        )
    elif policy is OnDuplicate.last or (policy is OnDuplicate.max and magnitude > previous[1]):
        kept[key] = (line, magnitude, value)


def read_run(
    path: str | Path,
    *,
    name: str | None = None,
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
) -> Run:
    path = Path(path)
    policy = OnDuplicate(on_duplicate)
    problems: list[LineProblem] = []
    kept: dict[tuple[str, str], tuple[int, float, object]] = {}
    tags: set[str] = set()
    for number, text in iter_lines(path, problems):
        cols = text.split()
        if len(cols) != 6:
            problems.append(
                LineProblem(
                    str(path),
                    number,
                    f"expected 6 columns `qid Q0 docid rank score tag`, found {len(cols)}",
                )
            )
            continue
        qid, _, docid, rank_text, score_text, tag = cols
        try:
            rank = int(rank_text)
        except ValueError:
            problems.append(LineProblem(str(path), number, f"rank (column 4) must be an integer, found {rank_text!r}"))
            continue
        try:
            score = float(score_text)
        except ValueError:
            problems.append(LineProblem(str(path), number, f"score (column 5) must be a number, found {score_text!r}"))
            continue
        if not math.isfinite(score):
            problems.append(LineProblem(str(path), number, f"score (column 5) is not finite: {score_text!r}"))
            continue
        score32 = float(np.float32(score))
        tags.add(tag)
        entry = RunEntry(qid, docid, rank, score32)
        _keep(kept, (qid, docid), entry, score32, number, policy, path, problems, "run entry")
    raise_if_problems(problems)
    if not kept:
        raise InputFormatError.single(path, 0, "no run entries found (empty file?)")
    entries = tuple(item[2] for item in sorted(kept.values(), key=lambda item: item[0]))  # type: ignore[misc]
    return Run(
        name=name or run_name_from_path(path),
        entries=entries,
        tag=sorted(tags)[0] if len(tags) == 1 else ",".join(sorted(tags)),
        source=str(path),
    )


def read_qrels(
    path: str | Path,
    *,
    name: str | None = None,
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
) -> Qrels:
    path = Path(path)
    policy = OnDuplicate(on_duplicate)
    problems: list[LineProblem] = []
    kept: dict[tuple[str, str], tuple[int, float, object]] = {}
    for number, text in iter_lines(path, problems):
        cols = text.split()
        if len(cols) != 4:
            problems.append(LineProblem(str(path), number, f"expected 4 columns `qid iter docid grade`, found {len(cols)}"))
            continue
        qid, iteration, docid, grade_text = cols
        try:
            grade = int(grade_text)
        except ValueError:
            problems.append(LineProblem(str(path), number, f"grade (column 4) must be an integer, found {grade_text!r}"))
            continue
        qrel = Qrel(qid, docid, grade, iteration)
        _keep(kept, (qid, docid), qrel, grade, number, policy, path, problems, "judgment")
    raise_if_problems(problems)
    if not kept:
        raise InputFormatError.single(path, 0, "no judgments found (empty file?)")
    entries = tuple(item[2] for item in sorted(kept.values(), key=lambda item: item[0]))  # type: ignore[misc]
    return Qrels(name=name or run_name_from_path(path), entries=entries, source=str(path))


def _format_score(score: float) -> str:
    return repr(float(score))


def write_run(run: Run, path: str | Path, *, tag: str | None = None) -> None:
    """Write in trec_eval order with ranks renumbered from 1."""
    lines = []
    by_query = run.scores
    for qid in sorted(by_query):
        for rank, docid in enumerate(run.ranking(qid)[qid], start=1):
            lines.append(f"{qid} Q0 {docid} {rank} {_format_score(by_query[qid][docid])} {tag or run.tag or run.name}")
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_qrels(qrels: Qrels, path: str | Path) -> None:
    lines = [f"{q.qid} {q.iteration} {q.docid} {q.grade}" for q in qrels.entries]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


# Files a runs folder often holds beside the runs (NIST's and the authors' releases): never runs.
_NOT_RUN_NAMES = re.compile(r"^(readme|license|licence|copying|notice|changelog|manifest)([._-].*)?$", re.IGNORECASE)
_NOT_RUN_SUFFIXES = {".md", ".rst", ".html", ".htm", ".pdf", ".json", ".yaml", ".yml", ".py", ".sh", ".ipynb", ".png", ".jpg", ".svg"}


def not_a_run(path: Path) -> str | None:
    """Why a file found in a runs folder is not a run (None when it may be one): a hidden file, a
    README or LICENSE, documentation or code by its suffix, or a `.txt` whose first line is not a
    `qid Q0 docid rank score tag` line."""
    name = path.name
    if name.startswith("."):
        return "hidden file"
    if _NOT_RUN_NAMES.match(name):
        return "not a run file (" + name.split(".")[0].upper() + ")"
    if path.suffix.lower() in _NOT_RUN_SUFFIXES:
        return f"not a run file ({path.suffix.lower()})"
    if path.suffix.lower() == ".txt" and not _looks_like_run(path):
        return "not a run file (its first line is not `qid Q0 docid rank score tag`)"
    return None


def _looks_like_run(path: Path) -> bool:
    problems: list[LineProblem] = []
    for _, text in iter_lines(path, problems):
        cols = text.split()
        return len(cols) == 6 and cols[3].lstrip("-").isdigit()
    return False


def list_run_files(paths: list[str | Path], skipped: list[tuple[Path, str]] | None = None) -> list[Path]:
    """Expand files and folders into run files. A file named directly is always read; inside a
    folder, files that are evidently not runs (`not_a_run`) are left out and appended to
    ``skipped`` as (path, reason), or, when the caller passes no list, named in a warning."""
    out: list[Path] = []
    left_out: list[tuple[Path, str]] = []
    for item in paths:
        p = Path(item)
        if p.is_dir():
            for f in sorted(f for f in p.iterdir() if f.is_file()):
                reason = not_a_run(f)
                if reason is None:
                    out.append(f)
                else:
                    left_out.append((f, reason))
        elif p.exists():
            out.append(p)
        else:
            raise InputFormatError.single(p, 0, "no such file or directory")
    if skipped is not None:
        skipped.extend(left_out)
    elif left_out:
        shown = ", ".join(f"{f} ({reason})" for f, reason in left_out if not f.name.startswith("."))
        if shown:
            warnings.warn(f"skipped {shown}", SkippedFilesWarning, stacklevel=2)
    return out


def read_runs(paths: list[str | Path], *, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> list[Run]:
    runs = [read_run(p, on_duplicate=on_duplicate) for p in list_run_files(paths)]
    names: dict[str, str | None] = {}
    for run in runs:
        if run.name in names:
            raise InputFormatError.single(run.source or run.name, 0, f"run name {run.name!r} also comes from {names[run.name]}")
        names[run.name] = run.source
    return runs
