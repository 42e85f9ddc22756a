"""Requests as data: what each use case is asked, built once from shared parts.

A request is built from the command line's flags, from a `--config FILE.yaml` of the same fields,
or from the Python API's arguments; its parts parse each option string once (a grade map, a
group's regex, a groups file's column), so the layers below only ever see typed values and no
flag is parsed twice. The parts:

- `QrelsRef`: qrels as a file, `irds:<id>`, a stored set's name, a judge run's graded set, or
  qrels in memory (`Qrels`, ``{qid: {docid: grade}}``, a pandas/Arrow table);
- `RunsRef`: run files or folders, stored run names (none: every stored run), or runs in memory;
- `GradeMap`, `GroupPattern`, `GroupsFile`, `PriorSpec`, `EmbedderRef`: maps, groups, NRG's
  prior sets and an embedder, each parsed from its option string once.

The requests (`AuditRequest`, `EvaluateRequest`, `CorrelateRequest`, `NRGRequest`, `FDRequest`,
`ProbeRequest`) are
frozen dataclasses checked in ``__post_init__``, not pydantic models as DESIGN.md first said:
building one from flags must not import pydantic, ~0.2 s of every command's start-up
(`tests/test_startup.py`). A `--config` file goes through the command's own options (click's
default map, `qrelkit.commands.config`), so it is typed and checked exactly as flags are.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qrelkit.errors import QrelkitError
from qrelkit.io.duplicates import OnDuplicate

DEFAULT_RESAMPLES = 1000
DEFAULT_INTERVAL = "jackknife"  # qrelkit.evaluate.bootstrap.DEFAULT_METHOD (a constant here: no numpy at start-up)


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


def parse_grade_map(spec: str, option: str = "--map") -> dict[int, int]:
    """`3:2,2:2,1:1,0:0` -> {3: 2, 2: 2, 1: 1, 0: 0}; a bad item is named in the error."""
    parsed = GradeMap.parse(spec, option)
    assert parsed is not None
    return dict(parsed.mapping)


@dataclass(frozen=True)
class GroupPattern:
    """A group for Relative Δ as ``NAME=REGEX``: the runs whose name the regex matches anywhere."""

    name: str
    pattern: re.Pattern[str]

    @classmethod
    def parse(cls, spec: str) -> GroupPattern:
        name, equals, pattern = spec.partition("=")
        if not equals or not name.strip() or not pattern:
            raise QrelkitError(f"--group {spec!r}: expected NAME=REGEX, e.g. neural='bert|BERT'")
        try:
            return cls(name.strip(), re.compile(pattern))
        except re.error as exc:
            raise QrelkitError(f"--group {spec!r}: invalid regular expression ({exc})") from None


def parse_group_patterns(specs: Sequence[str] | None) -> tuple[GroupPattern, ...]:
    """``--group`` items, each parsed once; a name given twice is an error."""
    patterns: list[GroupPattern] = []
    for spec in specs or ():
        parsed = GroupPattern.parse(spec)
        if parsed.name in {p.name for p in patterns}:
            raise QrelkitError(f"--group {spec!r}: group {parsed.name!r} is given twice")
        patterns.append(parsed)
    return tuple(patterns)


def groups_from_patterns(specs: Sequence[str], runs: list[str]) -> dict[str, list[str]]:
    """`NAME=REGEX` items as group -> the runs whose name the regex matches anywhere."""
    from qrelkit.evaluate.bias import groups_matching

    return groups_matching([(p.name, p.pattern) for p in parse_group_patterns(specs)], runs)


@dataclass(frozen=True)
class GroupsFile:
    """A groups TSV and the column whose values are the groups (None: its only grouping column)."""

    path: Path
    column: str | None = None

    @classmethod
    def parse(cls, spec: str | Path | None) -> GroupsFile | None:
        """``FILE`` or ``FILE:COLUMN`` (a file whose own name has a colon wins)."""
        if spec is None:
            return None
        text = str(spec)
        file, column = (text, None) if Path(text).is_file() or ":" not in text else text.rsplit(":", 1)
        return cls(Path(file), column or None)


# -- NRG's prior sets ---------------------------------------------------------------------------------

PRIOR_SPECS = "all-others | order:FILE | best-per-group:FILE[:COLUMN] | runs:A,B"


@dataclass(frozen=True)
class PriorSpec:
    """NRG's prior sets as `--prior` names them, parsed once: all-others, order:FILE (oldest first),
    best-per-group:FILE[:COLUMN], or runs:A,B."""

    kind: str = "all-others"
    order_file: Path | None = None
    runs: tuple[str, ...] = ()
    groups_file: GroupsFile | None = None

    @classmethod
    def parse(cls, spec: str | PriorSpec) -> PriorSpec:
        from qrelkit.evaluate.nrg import NRGError

        if isinstance(spec, PriorSpec):
            return spec
        kind, _, arg = spec.partition(":")
        if kind == "all-others" and not arg:
            return cls()
        if kind == "order" and arg:
            return cls(kind, order_file=Path(arg))
        if kind == "runs" and arg:
            return cls(kind, runs=tuple(r.strip() for r in arg.split(",") if r.strip()))
        if kind == "best-per-group" and arg:
            return cls(kind, groups_file=GroupsFile.parse(arg))
        raise NRGError(f"--prior {spec!r}: expected {PRIOR_SPECS}")


# -- the audit (`qrelkit agree`, `qrelkit report`) ---------------------------------------------------


@dataclass(frozen=True)
class AuditRequest:
    """Model qrels against reference qrels over runs: κ/α on the shared pairs, τ/ρ/r/τ_AP between
    the system rankings, Relative Δ toward groups, with bootstrap intervals over queries."""

    model: QrelsRef
    reference: QrelsRef
    runs: RunsRef = field(default_factory=RunsRef)
    measures: tuple[str, ...] = ()
    judge_measures: tuple[str, ...] = ()  # the model's own measures, paired with ``measures`` (default: the same)
    reference_decimals: int | None = None  # systems ranked by the reference's means as printed to this many decimals
    group_patterns: tuple[GroupPattern, ...] = ()
    groups_file: GroupsFile | None = None
    group_lists: tuple[tuple[str, tuple[str, ...]], ...] = ()  # groups named run by run (the Python API's dict)
    reference_map: GradeMap | None = None
    model_map: GradeMap | None = None
    rel_level: int | None = None
    resamples: int = DEFAULT_RESAMPLES
    seed: int | None = 0
    interval: str = DEFAULT_INTERVAL
    on_duplicate: OnDuplicate = OnDuplicate.error

    def __post_init__(self) -> None:
        from qrelkit.evaluate.bootstrap import check_method, check_resamples

        check_resamples(self.resamples)  # before anything is read: a bad count is an input error, not a wait
        object.__setattr__(self, "interval", check_method(self.interval))
        object.__setattr__(self, "on_duplicate", OnDuplicate(self.on_duplicate))
        from qrelkit.evaluate.audit import DEFAULT_MEASURES, check_decimals, measure_pairs

        measure_pairs(self.measures or DEFAULT_MEASURES, self.judge_measures)  # one judge measure, or one per measure
        check_decimals(self.reference_decimals)
        if self.model.ref is None and self.model.judge_run is None and self.model.value is None:
            raise QrelkitError(
                "give the model qrels: --model-qrels FILE_OR_NAME, or --judge-run ID (with --db), or both (a set of that run)"
            )

    @classmethod
    def from_options(
        cls,
        *,
        reference_qrels: Any,
        model_qrels: Any = None,
        runs: Any = None,
        judge_run: str | None = None,
        reference_name: str | None = None,
        measures: Sequence[str] | None = None,
        judge_measures: Sequence[str] | str | None = None,
        reference_decimals: int | None = None,
        group_patterns: Sequence[str] | None = None,
        groups: str | Path | Mapping[str, Sequence[str]] | None = None,
        reference_map: Any = None,
        model_map: Any = None,
        rel_level: int | None = None,
        resamples: int | None = None,
        seed: int | None = 0,
        interval: str = DEFAULT_INTERVAL,
        on_duplicate: OnDuplicate | str = OnDuplicate.error,
    ) -> AuditRequest:
        """The request from option values as the command line and the Python API give them."""
        if reference_qrels is None:
            raise QrelkitError("give the reference qrels: --reference-qrels FILE_OR_NAME")
        if judge_run is not None:
            model = QrelsRef(ref=None if model_qrels is None else str(model_qrels), judge_run=str(judge_run))
        else:
            model = QrelsRef() if model_qrels is None else QrelsRef.of(model_qrels, judge=True)
        return cls(
            model=model,
            reference=QrelsRef.of(reference_qrels, name=reference_name, file_label=True),
            runs=RunsRef.of(runs),
            measures=tuple(measures or ()),
            judge_measures=_measures(judge_measures, (), once=False),
            reference_decimals=reference_decimals,
            group_patterns=parse_group_patterns(group_patterns),
            groups_file=None if isinstance(groups, Mapping) else GroupsFile.parse(groups),
            group_lists=tuple((str(g), tuple(runs)) for g, runs in groups.items()) if isinstance(groups, Mapping) else (),
            reference_map=GradeMap.parse(reference_map, "--map"),
            model_map=GradeMap.parse(model_map, "--map-model"),
            rel_level=rel_level,
            resamples=DEFAULT_RESAMPLES if resamples is None else int(resamples),
            seed=seed,
            interval=interval,
            on_duplicate=OnDuplicate(on_duplicate),
        )


def _measures(measures: Sequence[str] | str | None, default: tuple[str, ...], *, once: bool = True) -> tuple[str, ...]:
    """The measures asked for (``once``: each once), or ``default``."""
    chosen = [measures] if isinstance(measures, str) else list(measures or ())
    return (tuple(dict.fromkeys(chosen)) if once else tuple(chosen)) or default


# -- scoring runs (`qrelkit evaluate`, `qrelkit correlate`) --------------------------------------------


@dataclass(frozen=True)
class EvaluateRequest:
    """Runs scored per query under qrels. ``average``: a mean over every query of the qrels, or of
    the run; ``max_rel``: the qrels cut to at most that many relevant items per query first (kept as
    ``keep`` says with ``seed``, relevant = grade >= ``rel_level``); ``trec_layout``: the output is
    trec_eval's, so measure names that collide there are refused up front."""

    qrels: QrelsRef
    runs: RunsRef = field(default_factory=RunsRef)
    measures: tuple[str, ...] = ("nDCG@10",)
    average: str = "qrels"
    max_rel: int | None = None
    keep: str = "top-grade"
    seed: int = 0
    rel_level: int | None = None
    trec_layout: bool = False
    on_duplicate: OnDuplicate = OnDuplicate.error

    def __post_init__(self) -> None:
        from qrelkit.evaluate.metrics import check_average
        from qrelkit.evaluate.sparsify import check_keep
        from qrelkit.evaluate.trec_names import trec_eval_names

        check_average(self.average)
        if self.trec_layout:
            trec_eval_names(list(self.measures))
        if self.max_rel is None and (self.keep != "top-grade" or self.rel_level is not None):
            raise QrelkitError("--keep and --rel-level choose how --max-rel cuts the qrels; give --max-rel M too")
        check_keep(self.keep)
        object.__setattr__(self, "on_duplicate", OnDuplicate(self.on_duplicate))

    @classmethod
    def from_options(cls, *, qrels: Any, runs: Any = None, measures: Sequence[str] | str | None = None, **options: Any) -> EvaluateRequest:
        return cls(QrelsRef.of(qrels), RunsRef.of(runs), _measures(measures, ("nDCG@10",), once=False), **options)


@dataclass(frozen=True)
class CorrelateRequest:
    """Rank correlations between orderings of the same runs: under each measure and each qrels set,
    and under the first qrels cut to at most each ``max_rel`` relevant items per query."""

    qrels: tuple[QrelsRef, ...]
    runs: RunsRef = field(default_factory=RunsRef)
    measures: tuple[str, ...] = ("nDCG@10",)
    max_rel: tuple[int, ...] = ()
    keep: str = "top-grade"
    seed: int = 0
    rel_level: int | None = None
    on_duplicate: OnDuplicate = OnDuplicate.error
    scores: tuple[Path, ...] = ()  # runs' scores from elsewhere as more orderings: `qrelkit fd --json` output, `run score` lines

    def __post_init__(self) -> None:
        from qrelkit.evaluate.sparsify import check_keep

        if not self.qrels:
            raise QrelkitError("give the qrels: --qrels FILE_OR_NAME (repeatable)")
        check_keep(self.keep)
        object.__setattr__(self, "on_duplicate", OnDuplicate(self.on_duplicate))
        object.__setattr__(
            self, "scores", tuple(Path(p) for p in ([self.scores] if isinstance(self.scores, str | Path) else self.scores or ()))
        )

    @classmethod
    def from_options(
        cls, *, qrels: Any, runs: Any = None, measures: Sequence[str] | None = None, max_rel: Any = None, **options: Any
    ) -> CorrelateRequest:
        sets = list(qrels) if isinstance(qrels, list | tuple) else [] if qrels is None else [qrels]
        cuts = [max_rel] if isinstance(max_rel, int) else list(max_rel or [])
        return cls(tuple(QrelsRef.of(q) for q in sets), RunsRef.of(runs), _measures(measures, ("nDCG@10",)), tuple(cuts), **options)


# -- NRG (`qrelkit nrg`) ------------------------------------------------------------------------------


@dataclass(frozen=True)
class NRGRequest:
    """NRG of each run over its prior runs, and (``compare``) the measures seed 004 compares it with;
    ``groups_file`` marks groups in the plot written to ``plot``."""

    qrels: QrelsRef
    runs: RunsRef = field(default_factory=RunsRef)
    prior: PriorSpec = field(default_factory=PriorSpec)
    prior_text: str = "all-others"  # as given, for the output
    browsing_model: str = "ndcg"
    depth: str | int | None = "10"
    gain: str = "linear"
    order: str = "trec_eval"
    compare: bool = False
    groups_file: GroupsFile | None = None
    plot: Path | None = None
    force: bool = False  # write the plot over an existing file
    on_duplicate: OnDuplicate = OnDuplicate.error

    def __post_init__(self) -> None:
        object.__setattr__(self, "on_duplicate", OnDuplicate(self.on_duplicate))

    @classmethod
    def from_options(
        cls, *, qrels: Any, runs: Any = None, prior: str = "all-others", groups: str | Path | None = None, **options: Any
    ) -> NRGRequest:
        return cls(QrelsRef.of(qrels), RunsRef.of(runs), PriorSpec.parse(prior), prior, groups_file=GroupsFile.parse(groups), **options)


# -- FD (`qrelkit fd`) --------------------------------------------------------------------------------


@dataclass(frozen=True)
class EmbedderRef:
    """An embedder by name: `minilm`, a sentence-transformers path or hub id, or
    `open_clip:MODEL[:WEIGHTS]` for images; ``backend`` (minilm: onnx or torch), batch and device."""

    name: str = "minilm"
    backend: str = "onnx"
    batch_size: int = 64
    device: str = "cpu"


@dataclass(frozen=True)
class FDRequest:
    """FD@k of each run against the relevant judged items (``qrels``, or the graded set of
    ``qrels.judge_run``), on vectors of the documents (``docs`` JSONL, else the database's) cached
    in ``cache`` (default: the database)."""

    qrels: QrelsRef
    runs: RunsRef
    embedder: EmbedderRef
    settings: Any  # qrelkit.evaluate.fd.FDSettings, checked by `fd_settings`
    docs: Path | None = None
    cache: Path | None = None
    image_root: Path | None = None
    plot: Path | None = None
    plot_metric: Path | None = None
    metric: str = "nDCG@10"
    workers: int | None = None
    force: bool = False  # write the plots over existing files
    on_duplicate: OnDuplicate = OnDuplicate.error

    def __post_init__(self) -> None:
        if (self.qrels.ref is None and self.qrels.value is None) == (self.qrels.judge_run is None):
            raise QrelkitError("give either --qrels (a file or a qrels set in --db) or --judge-run (its graded qrels)")
        object.__setattr__(self, "on_duplicate", OnDuplicate(self.on_duplicate))


# -- gullibility probes (`qrelkit probe`) -------------------------------------------------------------


def option(default: Any, flag: str, help: str) -> Any:
    """A request field that carries its command-line flag and help beside its default (read by the
    command line: `qrelkit.cli.probe`), so that each option is declared once."""
    return field(default=default, metadata={"flag": flag, "help": help})


def field_option(request: type, name: str) -> tuple[str, str, Any]:
    """(flag, help, default) of a request's field declared with `option` (a tuple default as a list,
    as the command line's repeatable options take it)."""
    found = next(f for f in dataclasses.fields(request) if f.name == name)
    default = None if found.default is dataclasses.MISSING else found.default
    return found.metadata["flag"], found.metadata["help"], list(default) if isinstance(default, tuple) else default


DEFAULT_PROBE_SAMPLE = 200


@dataclass(frozen=True)
class ProbeRequest:
    """A job's judge put to named probes: a sample of the job's pool that the reference qrels grade
    ``grades`` (the non-relevant, by default), each pair judged as it is and as each probe perturbs
    it, and per probe the paired shift (docs/probes.md)."""

    job: Path = option(dataclasses.MISSING, "JOB", "Job YAML: its database, collection, pool, judge and template.")
    probes: tuple[str, ...] = option((), "--probe", "A probe: a built-in id (qrelkit probe --list) or a probe YAML file; repeatable.")
    sample: int = option(DEFAULT_PROBE_SAMPLE, "--sample", "Pairs to probe, spread over the topics (stratified, seeded).")
    seed: int = option(0, "--seed", "Seed of the sample and of the resamples.")
    reference: str | None = option(
        None,
        "--reference-qrels",
        "Qrels that say which pairs are non-relevant: a set in the job's database or a file "
        "(default: the set the job's pool reads, else its only qrels set).",
    )
    grades: tuple[int, ...] = option((0,), "--grade", "Reference grades of the pairs sampled; repeatable (default 0: the non-relevant).")
    rel_level: int = option(2, "--rel-level", "The grade at which a pair counts as relevant (2 on the TREC DL scale).")
    relevant_at: float | None = option(
        None,
        "--relevant-at",
        "The score at which a pair counts as relevant (default: --rel-level for a judge answering grades; for a judge "
        "with scores of its own, the cut point of that grade in the job's graded qrels).",
    )
    score_from: str = option("score", "--score-from", "Which stored score to compare: score, parsed or expected.")
    resamples: int = option(DEFAULT_RESAMPLES, "--resamples", "Bootstrap resamples of the queries (0: no intervals).")
    permutations: int = option(1000, "--permutations", "Random swaps of the randomisation test behind each p-value (0: no test).")
    interval: str = option(
        DEFAULT_INTERVAL, "--interval", "Interval method over queries: jackknife (default), bca, percentile (bootstrap) or subsampling."
    )
    dry_run: bool = option(False, "--dry-run", "Only count the calls each run would make (and their cost, where a judge estimates it).")
    retry_failed: bool = option(False, "--retry-failed", "Judge failed pairs (parse/model/input errors) again.")
    sets: tuple[str, ...] = option((), "--set", "Override a job setting: KEY.PATH=VALUE (YAML value), e.g. judge.options.batch_size=32.")
    allow_import: bool = option(False, "--allow-import", "Allow a `judge.name: module:Class` job to import and run that Python module.")

    def __post_init__(self) -> None:
        from qrelkit.evaluate.bootstrap import check_method, check_resamples

        if self.job is None:
            raise QrelkitError("give the job: qrelkit probe JOB.yaml --probe NAME (or --list for the built-in probes)")
        object.__setattr__(self, "job", Path(self.job))
        for name in ("probes", "sets"):
            value = getattr(self, name)
            object.__setattr__(self, name, (str(value),) if isinstance(value, str | Path) else tuple(str(v) for v in value or ()))
        grades = (self.grades,) if isinstance(self.grades, int) else tuple(int(g) for g in self.grades or ())
        object.__setattr__(self, "grades", tuple(dict.fromkeys(grades)))
        check_resamples(self.resamples)
        check_resamples(self.permutations)
        object.__setattr__(self, "interval", check_method(self.interval))
        if not self.probes:
            raise QrelkitError("name a probe: --probe NAME (a built-in; `qrelkit probe --list` lists them) or --probe FILE.yaml")
        if self.sample < 1:
            raise QrelkitError(f"--sample must be 1 or more, got {self.sample}")
        if not self.grades:
            raise QrelkitError("--grade: give the reference grades whose pairs are sampled (e.g. 0)")
        if self.score_from not in ("score", "parsed", "expected"):
            raise QrelkitError(f"--score-from {self.score_from!r}: choose score, parsed or expected")
        if self.relevant_at is not None and not math.isfinite(self.relevant_at):
            raise QrelkitError(f"--relevant-at {self.relevant_at}: give a finite score")
