"""The notebook face of qrelkit: the command line's use cases as functions taking the same references.

Qrels are given as a path (a TREC file, `irds:<id>`), a stored set's name (with ``db``), a
`Qrels`, a ``{qid: {docid: grade}}`` dict, or a pandas/Arrow table with the field's column names
(``query_id``/``qid``, ``doc_id``/``docid``, ``relevance``/``grade``); runs as paths (files or
folders), stored run names, `Run` objects, ``{run: {qid: {docid: score}}}`` or a table (a ``run``
column splits it). Every function builds the command's request, runs it in a `Workspace` open for
that call alone (nothing holds the database afterwards) and returns the command's result: plain
data with ``to_dict()``, ``to_pandas()`` and a short ``repr``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qrelkit.commands.workspace import Workspace
from qrelkit.io.duplicates import OnDuplicate

if TYPE_CHECKING:
    from qrelkit.commands.judging import JudgingOutcome
    from qrelkit.commands.judgments import Judgments
    from qrelkit.commands.probe_result import ProbeResult
    from qrelkit.evaluate.audit import Audit
    from qrelkit.evaluate.correlate import RankCorrelations
    from qrelkit.evaluate.fd import FDReport
    from qrelkit.evaluate.metrics import Evaluation
    from qrelkit.evaluate.nrg import NRGResult
    from qrelkit.jobs.grade import GradingResult
    from qrelkit.jobs.spec import JobSpec

Db = str | Path | None


def evaluate(
    qrels: Any,
    runs: Any = None,
    measures: Sequence[str] | str | None = None,
    *,
    db: Db = None,
    average: str = "qrels",
    max_rel: int | None = None,
    keep: str = "top-grade",
    seed: int = 0,
    rel_level: int | None = None,
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
) -> Evaluation:
    """Per-query values of every run (`qrelkit evaluate`); ``measures`` default to nDCG@10.
    ``average``: a mean over every query of the qrels ("qrels", trec_eval -c) or the run's ("run")."""
    from qrelkit.commands.data import evaluate as evaluate_command

    chosen = [measures] if isinstance(measures, str) else measures
    return evaluate_command(
        qrels,
        runs,
        list(chosen) if chosen else None,
        None if db is None else Path(db),
        on_duplicate=on_duplicate,
        average=average,
        max_rel=max_rel,
        keep=keep,
        seed=seed,
        rel_level=rel_level,
    )


def agree(
    model_qrels: Any = None,
    reference_qrels: Any = None,
    runs: Any = None,
    *,
    db: Db = None,
    judge_run: str | None = None,
    reference_name: str | None = None,
    measures: Sequence[str] | None = None,
    judge_measures: Sequence[str] | str | None = None,
    reference_decimals: int | None = None,
    group_patterns: Sequence[str] | None = None,
    groups: str | Path | Mapping[str, Sequence[str]] | None = None,
    reference_map: str | Mapping[int, int] | None = None,
    model_map: str | Mapping[int, int] | None = None,
    rel_level: int | None = None,
    resamples: int = 1000,
    seed: int | None = 0,
    interval: str = "jackknife",
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
) -> Audit:
    """Audit model qrels against reference qrels over runs (`qrelkit agree`): κ and α on the shared
    pairs, τ/ρ/r/τ_AP between the system rankings, Relative Δ toward groups (``group_patterns``:
    NAME=REGEX; ``groups``: FILE[:COLUMN] or {group: [runs]}), with paired bootstrap intervals over queries.
    ``judge_run`` (with ``db``): the model qrels are the set that judge run was graded into.
    ``judge_measures``: the model's own measures against the reference's ``measures`` (one for all, or
    one each; e.g. nDCG@10 against 'Compat(p=0.9)'); a model file of fractional values is its scores.
    ``reference_decimals``: rank systems by the reference's means as printed to that many decimals
    (trec_eval prints 4)."""
    from qrelkit.commands import agree as agree_command
    from qrelkit.commands.requests import AuditRequest

    request = AuditRequest.from_options(
        model_qrels=model_qrels,
        reference_qrels=reference_qrels,
        runs=runs,
        judge_run=judge_run,
        reference_name=reference_name,
        measures=measures,
        judge_measures=judge_measures,
        reference_decimals=reference_decimals,
        group_patterns=group_patterns,
        groups=groups,
        reference_map=reference_map,
        model_map=model_map,
        rel_level=rel_level,
        resamples=resamples,
        seed=seed,
        interval=interval,
        on_duplicate=on_duplicate,
    )
    with Workspace(db, on_duplicate=request.on_duplicate) as workspace:
        return agree_command.run(request, workspace)


def audit(model_qrels: Any, reference_qrels: Any, runs: Any = None, **options: Any) -> Audit:
    """`agree` with the model qrels, the reference qrels and the runs given in that order."""
    return agree(model_qrels, reference_qrels, runs, **options)


def correlate(
    qrels: Any,
    runs: Any = None,
    measures: Sequence[str] | None = None,
    *,
    db: Db = None,
    max_rel: Sequence[int] | int | None = None,
    keep: str = "top-grade",
    seed: int = 0,
    rel_level: int | None = None,
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
    scores: Sequence[str | Path] | str | Path = (),
) -> RankCorrelations:
    """Rank correlations between the orderings of the runs under several measures, several qrels
    (a list), or qrels cut to at most ``max_rel`` relevant items per query (`qrelkit correlate`);
    ``scores``: files of more orderings (`qrelkit fd --json` output, `run score` lines)."""
    from qrelkit.commands.correlate import correlate as correlate_command

    sets = list(qrels) if isinstance(qrels, list | tuple) else [qrels]
    cuts = [max_rel] if isinstance(max_rel, int) else list(max_rel or [])
    return correlate_command(
        qrels=sets,
        runs=runs,
        measures=list(measures) if measures else None,
        db=db,
        max_rel=cuts,
        keep=keep,
        seed=seed,
        rel_level=rel_level,
        on_duplicate=on_duplicate,
        scores=scores,
    )


def nrg(
    qrels: Any,
    runs: Any = None,
    *,
    db: Db = None,
    prior: str | Mapping[str, Sequence[str]] = "all-others",
    browsing_model: str = "ndcg",
    depth: int | str | None = 10,
    gain: str = "linear",
    order: str = "trec_eval",
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
) -> NRGResult:
    """Normalized Residual Gain of each run over its prior runs (`qrelkit nrg`): ``prior`` is
    all-others, order:FILE, best-per-group:FILE[:COLUMN], runs:A,B, or a {run: [prior runs]} dict."""
    from qrelkit.commands.nrg import nrg_from_spec
    from qrelkit.evaluate.nrg import nrg as nrg_of

    with Workspace(db, on_duplicate=on_duplicate) as workspace:
        qrels_data, run_list = workspace.qrels(qrels), workspace.runs(runs)
    options: dict[str, Any] = dict(model=browsing_model, depth=depth, gain=gain, order=order)
    if isinstance(prior, Mapping):
        return nrg_of(qrels_data, run_list, {run: list(before) for run, before in prior.items()}, **options)
    return nrg_from_spec(qrels_data, run_list, prior, **options)[0]


def fd(
    qrels: Any = None,
    runs: Any = None,
    *,
    docs: str | Path | None = None,
    db: Db = None,
    judge_run: str | None = None,
    embedder: str = "minilm",
    k: Sequence[int] | int = 10,
    urr: bool = False,
    max_rel: int | None = None,
    keep: str = "top-grade",
    rel_level: int | None = None,
    resamples: int = 1000,
    seed: int = 0,
    interval: str = "bca",
    backend: str = "onnx",
    cache: str | Path | None = None,
    image_root: str | Path | None = None,
    workers: int | None = None,
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
) -> FDReport:
    """Fréchet distance between the embeddings of the relevant items and each run's top-k (`qrelkit
    fd`); documents from ``docs`` (JSONL) or the database; vectors cached in ``cache`` or ``db``."""
    from qrelkit.commands.fd import fd_settings, run_fd

    settings = fd_settings(
        [k] if isinstance(k, int) else list(k),
        urr=urr,
        max_rel=max_rel,
        rel_level=rel_level,
        resamples=resamples,
        seed=seed,
        interval=interval,
        keep=keep,
    )
    return run_fd(
        qrels=qrels,
        runs=runs,
        embedder=embedder,
        settings=settings,
        docs=None if docs is None else Path(docs),
        db=None if db is None else Path(db),
        judge_run=judge_run,
        backend=backend,
        cache=None if cache is None else Path(cache),
        image_root=None if image_root is None else Path(image_root),
        on_duplicate=on_duplicate,
        workers=workers,
    )


def grade(
    scores: Any = None,
    *,
    db: Db = None,
    judge_run: str | None = None,
    name: str | None = None,
    score_from: str = "score",
    **options: Any,
) -> GradingResult:
    """Grade scores into qrels (`qrelkit grade`, without storing them): the `ok` scores of a stored
    ``judge_run`` (``score_from``: score, parsed or expected), or scores given as (qid, docid,
    score) triples, a `Run`, or any form of qrels (their grades as scores). ``options``: the
    grading's fields (method, quantiles, per_topic, ties, thresholds, labels, map)."""
    from qrelkit.jobs.grade import grade_scores

    triples = _scores(scores, db, judge_run, score_from)
    default = f"graded-{judge_run}" if judge_run is not None else "graded"
    return grade_scores(triples, name=name or default, **options)


def _triples(scores: Any) -> list[tuple[str, str, float]]:
    """(qid, docid, score) triples, each pair once and each score a finite number: a repeated pair
    would give the qrels a pair twice, a NaN a grade of nothing."""
    import math

    from qrelkit.errors import QrelkitError

    triples: list[tuple[str, str, float]] = []
    seen: set[tuple[str, str]] = set()
    for item in scores:
        if not isinstance(item, list | tuple) or len(item) != 3:
            raise QrelkitError(f"scores: {item!r} is not a (qid, docid, score) triple")
        qid, docid, score = str(item[0]), str(item[1]), item[2]
        if (qid, docid) in seen:
            raise QrelkitError(f"scores: ({qid}, {docid}) is given twice; give each pair one score")
        try:
            value = float(score) if isinstance(score, int | float) and not isinstance(score, bool) else math.nan
        except OverflowError:  # an int beyond any float
            value = math.nan
        if not math.isfinite(value):
            raise QrelkitError(f"scores: the score of ({qid}, {docid}), {score!r}, is not a finite number")
        seen.add((qid, docid))
        triples.append((qid, docid, value))
    return triples


def _scores(scores: Any, db: Db, judge_run: str | None, score_from: str) -> list[tuple[str, str, float]]:
    from qrelkit.errors import QrelkitError
    from qrelkit.io import Run

    if (scores is None) == (judge_run is None):
        raise QrelkitError("give the scores to grade, or a judge run (with db), not both")
    if judge_run is not None:
        from qrelkit.storage.judgments import judge_run as find_judge_run
        from qrelkit.storage.judgments import ok_scores

        with Workspace(db) as workspace:
            if not workspace.has_db:
                raise QrelkitError(f"judge run {judge_run}: no database {db} to read it from")
            return ok_scores(workspace.store, find_judge_run(workspace.store, judge_run).judge_run_id, score_from)
    if isinstance(scores, Run):
        return list(zip(*(scores.table.column(c).to_pylist() for c in ("qid", "docid", "score"))))
    if isinstance(scores, list | tuple) and scores and isinstance(scores[0], list | tuple) and len(scores[0]) == 3:
        return _triples(scores)
    with Workspace(db) as workspace:
        qrels = workspace.qrels(scores)
    return [(q, d, float(g)) for q, d, g in zip(*(qrels.table.column(c).to_pylist() for c in ("qid", "docid", "grade")))]


def judge(
    job: str | Path | JobSpec,
    *,
    sets: Sequence[str] | None = None,
    sample: int | None = None,
    seed: int | None = None,
    limit: int | None = None,
    dry_run: bool = False,
    retry_failed: bool = False,
    grade: bool = True,
    allow_import: bool = False,
) -> JudgingOutcome:
    """Run a judging job as `qrelkit judge JOB.yaml` does: judge what its pool still lacks (or a
    ``sample`` of it), then grade as the job says. ``sets``: overrides as on the command line
    (``judge.options.batch_size=32``)."""
    from qrelkit.commands.judging import load_judging_job, run_judging

    if isinstance(job, str | Path):
        spec = load_judging_job(Path(job), sets=list(sets or []), sample=sample, seed=seed, allow_import=allow_import)
    else:
        spec = job
    return run_judging(spec, limit=limit, dry_run=dry_run, retry_failed=retry_failed, grade=grade)


def probe(
    job: str | Path,
    probes: Sequence[str] | str,
    *,
    sample: int = 200,
    seed: int = 0,
    reference: str | None = None,
    grades: Sequence[int] | int = (0,),
    rel_level: int = 2,
    relevant_at: float | None = None,
    score_from: str = "score",
    resamples: int = 1000,
    permutations: int = 1000,
    interval: str = "jackknife",
    dry_run: bool = False,
    retry_failed: bool = False,
    sets: Sequence[str] | None = None,
    allow_import: bool = False,
) -> ProbeResult:
    """Put a job's judge to gullibility probes (`qrelkit probe`, docs/probes.md): a ``sample`` of the
    job's pool that the ``reference`` qrels grade ``grades`` (the non-relevant), judged as it is and
    as each probe (a built-in id or a YAML file) perturbs it; per probe the mean shift and the share
    pushed to relevant, with paired intervals over queries (jackknife by default) and a randomisation test."""
    from qrelkit.commands import probe as probe_command
    from qrelkit.commands.requests import ProbeRequest

    request = ProbeRequest(
        job=Path(job),
        probes=(probes,) if isinstance(probes, str) else tuple(probes),
        sample=sample,
        seed=seed,
        reference=reference,
        grades=(grades,) if isinstance(grades, int) else tuple(grades),
        rel_level=rel_level,
        relevant_at=relevant_at,
        score_from=score_from,
        resamples=resamples,
        permutations=permutations,
        interval=interval,
        dry_run=dry_run,
        retry_failed=retry_failed,
        sets=tuple(sets or ()),
        allow_import=allow_import,
    )
    with Workspace(probe_command.job_database(request)) as workspace:
        return probe_command.run(request, workspace)


def judgments(db: str | Path, judge_run: str | None = None) -> Judgments:
    """A judge run's judgments (its id, a unique prefix or its name; every run's when None) as a
    table: ``.to_pandas()``, ``.to_arrow()``, ``.to_dict()``."""
    from qrelkit.commands import judgments as judgments_command

    with Workspace(db) as workspace:
        return judgments_command.run(judge_run, workspace)


def data_path(bundle: str) -> Path:
    """The folder of a data bundle `qrelkit data fetch BUNDLE` fetched (under $QRELKIT_DATA, by
    default ~/.local/share/qrelkit), as `qrelkit data path BUNDLE` prints it."""
    from qrelkit.commands.bundles import bundle_folder

    return bundle_folder(bundle)
