"""The parts requests are built from (qrels, runs, grade maps, groups, NRG's prior sets, an embedder),
each parsed from what a user gives once, and the options several requests share, each declared here once."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qrelkit.commands.fields import option, strings
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.choices import DEFAULT_METHOD, DEFAULT_RESAMPLES, check_method, check_resamples
from qrelkit.io.duplicates import OnDuplicate, on_duplicate

# -- qrels and runs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class QrelsRef:
    """Qrels as the user named them. ``ref``: a TREC qrels file, `irds:<id>`, or a qrels set stored
    in the workspace's database; ``judge_run``: the set a judge run's job graded into (``ref`` then
    says which of its graded sets); ``value``: qrels in memory. ``name`` renames them in the output;
    ``file_label`` names a file's qrels by FOLDER/FILE rather than its stem (a reference's default);
    ``judge``: a judge's judgments, so a file's values may be scores (fractional values, read as such
    by `qrelkit.io.judge_files`) rather than integer grades."""

    ref: str | None = None
    judge_run: str | None = None
    value: Any = None
    name: str | None = None
    file_label: bool = False
    judge: bool = False

    def __post_init__(self) -> None:
        if self.value is not None and (self.ref is not None or self.judge_run is not None):
            raise QrelkitError("qrels are either given in memory or named, not both")

    @property
    def given(self) -> bool:
        return self.ref is not None or self.judge_run is not None or self.value is not None

    @classmethod
    def of(cls, given: Any, *, name: str | None = None, file_label: bool = False, judge: bool = False) -> QrelsRef:
        """Any form the API takes: a path or stored name (str or Path), a `QrelsRef`, or qrels in memory."""
        if isinstance(given, QrelsRef):
            return given if name is None else dataclasses.replace(given, name=name)
        if isinstance(given, str | Path):
            return cls(ref=str(given), name=name, file_label=file_label, judge=judge)
        if given is None:
            raise QrelkitError("give the qrels: a file, a stored set's name, a Qrels, a {qid: {docid: grade}} dict or a table")
        return cls(value=given, name=name)

    @classmethod
    def several(cls, given: Any, *, judge: bool = False) -> tuple[QrelsRef, ...]:
        """One qrels reference or a list of them (``judge``: each a judge's)."""
        items = list(given) if isinstance(given, list | tuple) else [] if given is None else [given]
        return tuple(cls.of(item, judge=judge) for item in items)


@dataclass(frozen=True)
class RunsRef:
    """Runs as the user named them: files, folders (every run file inside) and stored run names
    (``refs``; none and no ``values``: every run in the database), and runs in memory (``values``:
    `Run` objects, ``{qid: {docid: score}}`` dicts by run name, or tables)."""

    refs: tuple[str, ...] = ()
    values: tuple[Any, ...] = ()

    @classmethod
    def of(cls, given: Any) -> RunsRef:
        """A path or name, a list of them, a `Run`, a list of `Run`, ``{run: {qid: {docid: score}}}``,
        one run as ``{qid: {docid: score}}``, or a table (a `run` column splits it into runs)."""
        if isinstance(given, RunsRef):
            return given
        if given is None:
            return cls()
        if isinstance(given, str | Path):
            return cls(refs=(str(given),))
        if isinstance(given, Mapping):
            return cls(values=(given,))
        if isinstance(given, Sequence) and not isinstance(given, str | bytes):
            refs = tuple(str(item) for item in given if isinstance(item, str | Path))
            return cls(refs=refs, values=tuple(item for item in given if not isinstance(item, str | Path)))
        return cls(values=(given,))

    def plus(self, more: Sequence[str]) -> RunsRef:
        """These runs and ``more`` files (the command line's `--runs a.run b.run`)."""
        return dataclasses.replace(self, refs=self.refs + tuple(more)) if more else self


# -- the audit's maps and groups ---------------------------------------------------------------------


@dataclass(frozen=True)
class GradeMap(Mapping[int, int]):
    """A grade mapping, ``3:2,2:2,1:1,0:0``, parsed once; ``option`` is how it was given (its flag),
    which the evaluate layer's messages name. A mapping itself: evaluate reads it as one."""

    mapping: Mapping[int, int]
    option: str = "--map"

    def __getitem__(self, grade: int) -> int:
        return self.mapping[grade]

    def __iter__(self):
        return iter(self.mapping)

    def __len__(self) -> int:
        return len(self.mapping)

    @classmethod
    def parse(cls, spec: str | Mapping[int, int] | GradeMap | None, option: str = "--map") -> GradeMap | None:
        if spec is None or isinstance(spec, GradeMap):
            return spec
        if isinstance(spec, Mapping):
            return cls({int(k): int(v) for k, v in spec.items()}, option)
        mapping: dict[int, int] = {}
        for item in (part.strip() for part in str(spec).split(",")):
            source, colon, target = item.partition(":")
            try:
                if not colon:
                    raise ValueError
                grade, onto = int(source), int(target)
            except ValueError:
                raise QrelkitError(f"{option} {spec!r}: {item!r} is not `grade:grade` (e.g. 3:2,2:2,1:1,0:0)") from None
            if grade in mapping and mapping[grade] != onto:
                raise QrelkitError(f"{option} {spec!r}: grade {grade} is mapped twice ({mapping[grade]} and {onto})")
            mapping[grade] = onto
        return cls(mapping, option)


@dataclass(frozen=True)
class GroupPattern:
    """A group for Relative Δ as ``NAME=REGEX``: the runs whose name the regex matches anywhere."""

    name: str
    pattern: re.Pattern[str]

    @classmethod
    def parse(cls, spec: str | GroupPattern) -> GroupPattern:
        if isinstance(spec, GroupPattern):
            return spec
        name, equals, pattern = spec.partition("=")
        if not equals or not name.strip() or not pattern:
            raise QrelkitError(f"--group {spec!r}: expected NAME=REGEX, e.g. neural='bert|BERT'")
        try:
            return cls(name.strip(), re.compile(pattern))
        except re.error as exc:
            raise QrelkitError(f"--group {spec!r}: invalid regular expression ({exc})") from None


def parse_group_patterns(specs: Sequence[str | GroupPattern] | str | None) -> tuple[GroupPattern, ...]:
    """``--group`` items, each parsed once; a name given twice is an error."""
    patterns: list[GroupPattern] = []
    for spec in [specs] if isinstance(specs, str) else specs or ():
        parsed = GroupPattern.parse(spec)
        if parsed.name in {p.name for p in patterns}:
            raise QrelkitError(f"--group {spec!r}: group {parsed.name!r} is given twice")
        patterns.append(parsed)
    return tuple(patterns)


@dataclass(frozen=True)
class GroupsFile:
    """A groups TSV and the column whose values are the groups (None: its only grouping column)."""

    path: Path
    column: str | None = None

    @classmethod
    def parse(cls, spec: str | Path | GroupsFile | None) -> GroupsFile | None:
        """``FILE`` or ``FILE:COLUMN`` (a file whose own name has a colon wins)."""
        if spec is None or isinstance(spec, GroupsFile):
            return spec
        text = str(spec)
        file, column = (text, None) if Path(text).is_file() or ":" not in text else text.rsplit(":", 1)
        return cls(Path(file), column or None)


@dataclass(frozen=True)
class RunGroups:
    """Groups of runs for Relative Δ from `--groups`: a groups file's column, or (from Python) the
    groups named run by run, ``{group: [runs]}``."""

    file: GroupsFile | None = None
    lists: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def parse(cls, spec: Any) -> RunGroups | None:
        if spec is None or isinstance(spec, RunGroups):
            return spec
        if isinstance(spec, Mapping):
            return cls(lists=tuple((str(group), strings(runs)) for group, runs in spec.items()))
        return cls(file=GroupsFile.parse(spec))


# -- NRG's prior sets ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PriorSpec:
    """NRG's prior sets as `--prior` names them, parsed once: all-others, order:FILE (oldest first),
    best-per-group:FILE[:COLUMN], runs:A,B, or (from Python) ``{run: [prior runs]}`` (kind `explicit`, NRG's name for it).
    ``text``: as given, for the output."""

    kind: str = "all-others"
    order_file: Path | None = None
    runs: tuple[str, ...] = ()
    groups_file: GroupsFile | None = None
    lists: tuple[tuple[str, tuple[str, ...]], ...] = ()
    text: str = "all-others"

    @classmethod
    def parse(cls, spec: str | Mapping[str, Sequence[str]] | PriorSpec) -> PriorSpec:
        from qrelkit.evaluate.nrg.options import NRGError

        if isinstance(spec, PriorSpec):
            return spec
        if isinstance(spec, Mapping):
            return cls("explicit", lists=tuple((str(run), strings(before)) for run, before in spec.items()), text="listed")
        kind, _, arg = spec.partition(":")
        if kind == "all-others" and not arg:
            return cls()
        if kind == "order" and arg:
            return cls(kind, order_file=Path(arg), text=spec)
        if kind == "runs" and arg:
            return cls(kind, runs=tuple(r.strip() for r in arg.split(",") if r.strip()), text=spec)
        if kind == "best-per-group" and arg:
            return cls(kind, groups_file=GroupsFile.parse(arg), text=spec)
        raise NRGError(f"--prior {spec!r}: expected all-others | order:FILE | best-per-group:FILE[:COLUMN] | runs:A,B")


@dataclass(frozen=True)
class EmbedderRef:
    """An embedder by name: `minilm`, a sentence-transformers path or hub id, or `open_clip:MODEL[:WEIGHTS]` for
    images; ``backend`` (minilm: onnx or torch). Loaded by `qrelkit.embed.load_embedder`: on the CPU, 64 texts a batch."""

    name: str = "minilm"
    backend: str = "onnx"

    def load(self, *, progress: bool = False) -> Any:
        from qrelkit.embed import load_embedder

        return load_embedder(self.name, self.backend, progress=progress)


# -- options several requests share, each declared once ---------------------------------------------


def runs_option() -> Any:
    return option(
        "--runs",
        "Run files or folders (every run file inside), or run names in --db; repeatable. Default: all runs in --db.",
        RunsRef(),
        cli=list[str] | None,
        parse=RunsRef.of,
    )


def qrels_option(flag: str, help: str, *, judge: bool = False, file_label: bool = False) -> Any:
    """Qrels named on the command line (a file, `irds:<id>` or a stored set), or given in any form from Python
    (`QrelsRef.of`); none given is an empty reference, and the request says what is missing. ``judge``: a judge's
    qrels (a file may hold its scores); ``file_label``: a file named by FOLDER/FILE (a reference: `qrels.txt` alone
    names nothing)."""

    def parse(given: Any) -> QrelsRef:
        return QrelsRef() if given is None else QrelsRef.of(given, judge=judge, file_label=file_label)

    return option(flag, help, None, cli=str | None, parse=parse)


def reference_qrels_option() -> Any:
    return qrels_option(
        "--reference-qrels", "Reference (human) qrels: a TREC qrels file, irds:<dataset id>, or a qrels set in --db.", file_label=True
    )


def more_runs_option() -> Any:
    return option("RUNS", "More run files or folders (so `--runs a.run b.run` works).", (), argument=True, parse=strings, api=False)


def measure_names(value: Any) -> tuple[str, ...]:
    """The measures given, a trec_eval `-m` list taken as the measures it names (`P.5,10` -> P_5, P_10)."""
    from qrelkit.evaluate.trec_names import expand_trec_eval

    return tuple(name for given in strings(value) for name in expand_trec_eval(given))


def measures_option(default: tuple[str, ...] = (), short: str | None = None) -> Any:
    return option(
        "--measure",
        "An ir_measures or trec_eval measure, e.g. nDCG@10, 'AP(rel=2)', ndcg_cut_10, P.5,10 (trec_eval's -m list); repeatable.",
        default,
        parse=measure_names,
        short=short,
    )


def resamples_option(help: str = "Bootstrap resamples of the queries for 95% intervals (0: none).") -> Any:
    return option("--resamples", help, DEFAULT_RESAMPLES, parse=_resamples)


def _resamples(value: Any) -> int:
    count = DEFAULT_RESAMPLES if value is None else int(value)
    check_resamples(count)  # before anything is read: a bad count is an input error, not a wait
    return count


def reference_pairs_option() -> Any:
    return option(
        "--reference-pairs",
        "Which reference pairs rank the systems: judged (the reference cut to the pairs the judge judged; the default when the "
        "judge's qrels are a sample of its pool or a job's partial results) or all (every reference pair: the full-pool comparison).",
        None,
        parse=_reference_pairs,
    )


def _reference_pairs(value: Any) -> str | None:
    from qrelkit.evaluate.coverage import check_reference_pairs

    return None if value is None else check_reference_pairs(str(value))


def interval_option() -> Any:
    return option(
        "--interval",
        "Interval method over queries: jackknife (default: coverage nearest 95% in qrelkit's simulation, docs/audit.md), "
        "bca (bootstrap, bias-corrected and accelerated, as scipy's), percentile (bootstrap) or subsampling (half-samples).",
        DEFAULT_METHOD,
        parse=check_method,
    )


def force_option() -> Any:
    return option("--force", "Write over an output file that exists (never over the database or an input of the command).", False)


def on_duplicate_option(help: str = "A repeated (qid, docid) in one file: error (default), or keep the first, last or max.") -> Any:
    return option("--on-duplicate", help, OnDuplicate.error, cli=str, parse=on_duplicate)


def keep_option() -> Any:
    return option(
        "--keep", "Which relevant items --max-rel keeps: top-grade (highest grade first, at random within one) or random.", "top-grade"
    )
