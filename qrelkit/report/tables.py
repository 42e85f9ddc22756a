"""Terminal tables (rich) and the rows the HTML report shares with them."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich import box
from rich.text import Text

from qrelkit.report.terminal_table import Table
from qrelkit.report.text import printable

if TYPE_CHECKING:  # annotations only: printing a table must not load the audit's numerics
    from qrelkit.evaluate.audit import Audit
    from qrelkit.evaluate.fd.runs import FDReport


def fmt(value: float | None, digits: int = 4) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def ci(interval: tuple[float, float] | None, digits: int = 4) -> str:
    return "–" if not interval else f"[{fmt(interval[0], digits)}, {fmt(interval[1], digits)}]"


def interval_label(result: Audit) -> str:
    """The intervals' heading: "95% jackknife CI", "95% BCa CI, 1000 resamples" (or that there are none)."""
    if not result.resamples:
        return "no intervals: --resamples 0"
    if result.interval == "jackknife":
        return f"{result.level:.0%} jackknife CI"
    return (
        f"{result.level:.0%} {result.interval} CI, {result.resamples} {'half-samples' if result.interval == 'subsampling' else 'resamples'}"
    )


def _with_interval(value: float | None, found: Any, digits: int = 3) -> str:
    """A value and, when it has one, its interval; a '*' marks an interval with a note."""
    if found is None:
        return fmt(value)
    return f"{fmt(value)} {ci(found.interval, digits)}" + ("*" if found.note else "")


def label_rows(result: Audit) -> list[tuple[str, str]]:
    labels = result.labels
    kappa = labels.intervals.get
    pairs = ("pairs judged by the model / reference / both", f"{labels.model_pairs} / {labels.reference_pairs} / {labels.shared_pairs}")
    if labels.not_computed is not None:
        return [pairs, ("Cohen's κ, Krippendorff's α", "not computed: " + labels.not_computed)]
    rows = [
        pairs,
        ("exact agreement", fmt(labels.exact_agreement)),
        ("Cohen's κ", _with_interval(labels.cohen_kappa, kappa("cohen_kappa"))),
        ("Cohen's κ, linear weights", _with_interval(labels.cohen_kappa_linear, kappa("cohen_kappa_linear"))),
        ("Cohen's κ, quadratic weights", _with_interval(labels.cohen_kappa_quadratic, kappa("cohen_kappa_quadratic"))),
        ("Krippendorff's α (ordinal)", fmt(labels.krippendorff_alpha_ordinal)),
    ]
    if labels.rel_level is not None:
        rows.append(
            (f"Cohen's κ, binary (grade ≥ {labels.rel_level})", _with_interval(labels.cohen_kappa_binary, kappa("cohen_kappa_binary")))
        )
    return rows


def interval_notes_text(result: Audit) -> Text | None:
    """The notes behind every '*': an estimate outside its interval is never shown without one."""
    notes = result.interval_notes()
    return Text("\n".join(f"* {note}" for note in notes)) if notes else None


def _statistic_cell(corr: Any, statistic: str) -> str:
    mark = "*" if statistic in corr.notes else ""
    return f"{fmt(getattr(corr, statistic))} {ci(corr.ci95.get(statistic), 3)}{mark}"


def _bias_cell(bias: Any, side: str, sep: str = " ") -> str:
    mark = "*" if side in bias.notes else ""
    return f"{fmt(getattr(bias, side), 1)}{sep}{ci(getattr(bias, f'{side}_ci95'), 1)}{mark}"


def system_rows(result: Audit) -> list[list[str]]:
    return [
        [
            measure,
            str(c.runs),
            *(_statistic_cell(c, statistic) for statistic in ("kendall_tau", "spearman_rho", "pearson_r", "tau_ap")),
        ]
        for measure, c in result.systems.items()
    ]


def bias_rows(result: Audit) -> list[list[str]]:
    return [
        [group, measure, f"{len(b.group_runs)}/{b.other_runs}", *(_bias_cell(b, side) for side in ("model", "reference", "difference"))]
        for group, by_measure in result.bias.items()
        for measure, b in by_measure.items()
    ]


SYSTEM_HEADER = ["measure", "runs", "Kendall τ-b [95% CI]", "Spearman ρ [95% CI]", "Pearson r [95% CI]", "τ_AP [95% CI]"]
BIAS_HEADER = ["group", "measure", "runs in / out", "Δ model qrels", "Δ reference qrels", "model − reference"]


def audit_tables(result: Audit) -> list[Text | Table]:
    """`qrelkit agree` without --json: a heading, then labels, confusion, systems and bias as tables."""
    heading = Text(
        printable(f"{result.model_name} (model) vs {result.reference_name} (reference): ")
        + f"{len(result.queries)} queries judged by both, {len(result.model_evaluation.runs)} runs",
        style="bold",
    )
    sources = [Text(f"{side} qrels: {describe_qrels(source)}") for side, source in result.sources.items()]
    labels = Table(title=f"Label agreement on the shared pairs [{interval_label(result)}]", title_justify="left")
    labels.add_column("statistic")
    labels.add_column("value", justify="right")
    for row in label_rows(result):
        labels.add_row(*row)
    confusion = Table(title="Confusion, reference × model", title_justify="left", min_width=44)
    confusion.add_column("ref \\ model")
    for label in result.labels.labels:
        confusion.add_column(str(label), justify="right")
    for label, row in zip(result.labels.labels, result.labels.confusion.tolist()):
        confusion.add_row(str(label), *(str(v) for v in row))
    systems = Table(title=f"System rankings [{interval_label(result)}]", title_justify="left", min_width=52)
    systems.add_column("statistic")
    for measure, corr in result.systems.items():
        systems.add_column(f"{measure} ({corr.runs} runs)", justify="right")
    names = {"kendall_tau": "Kendall τ-b", "spearman_rho": "Spearman ρ", "pearson_r": "Pearson r", "tau_ap": "τ_AP"}
    for statistic, name in names.items():
        systems.add_row(name, *(_statistic_cell(c, statistic) for c in result.systems.values()))
    tables: list[Text | Table] = [heading, *sources, labels, *([confusion] if result.labels.labels else []), systems]
    for measure in result.model_evaluation.measures if result.bias else []:
        bias = Table(
            title=f"Relative Δ toward each group, % ({measure}) [{interval_label(result)}]", title_justify="left", box=box.SIMPLE_HEAD
        )
        for i, column in enumerate(["group", "runs in/out", "Δ model qrels", "Δ reference", "model − reference"]):
            bias.add_column(column, justify="left" if i == 0 else "right")
        for group, by_measure in result.bias.items():
            b = by_measure[measure]
            bias.add_row(
                group, f"{len(b.group_runs)}/{b.other_runs}", *(_bias_cell(b, side, "\n") for side in ("model", "reference", "difference"))
            )
        tables.append(bias)
    notes = interval_notes_text(result)
    return tables + ([notes] if notes else [])


def fd_table(report: FDReport):
    """A rich table: one row per run (best first by the first cut-off), FD and interval per cut-off."""
    s = report.settings
    sparse = f", at most {s.max_rel} per query (seed {s.seed})" if s.max_rel else ""
    title = (
        f"{'/'.join(report.labels)}: {report.embedder}, d={report.d}; relevant = grade >= {report.rel_level}{sparse}: "
        f"n_rel={report.n_rel} over {len(report.qids)} queries (covariance rank {report.rel_rank})"
    )
    table = Table(title=title)
    table.add_column("run", justify="left")
    for label in report.labels:
        table.add_column(f"n_ret@{label.rsplit('@', 1)[1]}", justify="right")
        table.add_column(label, justify="right")
        if s.resamples:
            table.add_column(f"{label} 95% {report.interval} CI ({s.resamples} resamples)", justify="right")
    first = report.labels[0]
    ordered = sorted(report.runs, key=lambda r: (report.runs[r][first].value is None, report.runs[r][first].value or 0.0))
    deficient = False
    for run in ordered:
        cells = [run]
        for label in report.labels:
            fd = report.runs[run][label]
            deficient |= bool(fd.result and fd.result.rank_deficient)
            cells += [str(fd.n_ret), "-" if fd.value is None else f"{fd.value:.4f}"]
            if s.resamples:
                mark = "*" if fd.bootstrap and fd.bootstrap.note else ""
                cells.append(f"[{fd.bootstrap.low:.4f}, {fd.bootstrap.high:.4f}]{mark}" if fd.bootstrap else "-")
        table.add_row(*cells)
    reasons = sorted({fd.reason for by_label in report.runs.values() for fd in by_label.values() if fd.reason})
    notes = ["lower is better; '-': " + ("; ".join(reasons) if reasons else "fewer than 2 retrieved items")]
    if any(fd.bootstrap and fd.bootstrap.note for by_label in report.runs.values() for fd in by_label.values()):
        notes.append("*: an interval with a note (printed as a warning)")
    if deficient or report.rel_rank < report.d:
        notes.append(
            f"some covariances are rank-deficient (rank < d={report.d}: fewer items than dimensions, or embeddings "
            "confined to a subspace); FD is still exact"
        )
    table.caption = "; ".join(notes)
    return table


def describe_pairs(report: Any) -> str:
    """The pairs a job works on: its pool, or the sample of it (qrelkit.jobs.plan.JobPlan.sample)."""
    sample = report.sample
    if sample is None:
        return f"{report.pairs} pairs in the pool"
    if sample["pairs"] >= sample["pool_pairs"]:
        return f"{report.pairs} pairs in the pool (--sample {sample['asked']} covers all of it)"
    return describe_sample(sample)


def describe_sample(sample: dict[str, Any]) -> str:
    """`sample of N pairs over T topics (seed S, from a pool of P pairs over U topics)`."""
    return (
        f"sample of {sample['pairs']} pairs over {sample['topics']} topics (seed {sample['seed']}, "
        f"from a pool of {sample['pool_pairs']} pairs over {sample['pool_topics']} topics)"
    )


def describe_job(report: Any, *, dry_run: bool = False, limit: int | None = None) -> list[str]:
    """What a judging run did, as lines (qrelkit.jobs.runner.JobReport); ``limit``: the run's --limit."""
    verbs = {"loaded": "would load", "replaced": "would replace"} if dry_run else {}
    lines = [
        f"skipped {load.name}: {load.reason}"
        if load.status == "skipped"
        else f"{verbs.get(load.status, load.status)} {load.kind} {load.name!r} ({load.rows} rows)"
        for load in report.loads
        if load.status != "unchanged"
    ]
    lines.append(
        f"judge run {report.judge_run_id}: {describe_pairs(report)}; before this run "
        f"{report.already_ok} ok, {report.already_failed} failed; {report.to_judge} to judge"
    )
    if limit is not None:
        lines.append(
            f"--limit {limit} caps this run's calls: the first pending pairs in pool order, not a sample "
            "(--sample N spreads its pairs over every topic)"
        )
    if dry_run:
        lines += [f"checked before judging: {check}" for check in getattr(report, "checks", [])]
        if report.estimate:
            lines.append("estimate for the pairs to judge: " + ", ".join(f"{k} {v}" for k, v in report.estimate.items()))
        return lines
    if report.judged:
        statuses = ", ".join(f"{s} {n}" for s, n in sorted(report.statuses.items()))
        rate = report.judged / report.seconds if report.seconds else 0.0
        lines.append(f"judged {report.judged} pairs in {report.seconds:.1f}s ({rate:.1f}/s): {statuses}")
    if getattr(report, "mode", "sync") == "batch" or getattr(report, "in_batches", 0):
        from qrelkit.report.batches import batch_job_lines

        lines += batch_job_lines(report)
    if report.interrupted:
        lines.append("interrupted: what was judged is saved; run the same command again to resume")
    return lines


def tie_rule(grading: dict[str, Any]) -> str | None:
    """The tie rule of a quantile grading record (None for other methods; the oldest records name none)."""
    if grading.get("method") != "quantile":
        return None
    return str(grading.get("ties") or "not recorded")


def grading_rule(grading: dict[str, Any]) -> str:
    """A grading record in words: the method, per topic or global, the tie rule, the score graded."""
    method = grading.get("method")
    thresholds = grading.get("thresholds") or {}
    if method == "quantile" and grading.get("per_topic"):
        topics = grading.get("topics", len(thresholds))  # records before 0.2 had no count: their per-topic cuts tell it
        rule = f"per-topic quantiles {grading.get('quantiles')} over {topics} topics, ties: {tie_rule(grading)}"
    elif method == "quantile":
        cuts = thresholds.get("*")
        at = " at " + ", ".join(f"{c:.4g}" for c in cuts) if cuts else ""
        rule = f"global quantiles {grading.get('quantiles')}{at}, ties: {tie_rule(grading)}"
    elif method in ("thresholds", "threshold"):
        rule = "cut points " + ", ".join(f"{c:g}" for c in thresholds.get("*", [])) if thresholds.get("*") else f"method {method}"
    elif method == "map":
        rule = "map " + ",".join(f"{k}:{v}" for k, v in (grading.get("map") or {}).items())
    elif method == "identity":
        rule = "identity: the scores are the grades"
    else:
        rule = f"method {method}"
    score = grading.get("score_from", grading.get("score", "score"))  # `score` in records before 0.2
    return rule + ("" if score == "score" else f", by the {score} score")


def describe_grading(result: Any) -> list[str]:
    """What grading did (qrelkit.jobs.grade.GradingResult): the rule, the grades, and any warning."""
    d = result.description
    grades = ", ".join(f"{g}: {n}" for g, n in result.grade_counts().items())
    lines = [f"graded {d['n_scores']} scores into qrels {result.qrels.name!r} ({grading_rule(d)}); grades {grades}"]
    if d.get("sample"):
        lines.append(f"the judge run covers a {describe_sample(d['sample'])}, not its whole pool")
    lines += [f"warning: {w}" for w in result.warnings]
    return lines


def judge_run_match_note(ref: str, judge_run_id: str, matched_by: str) -> str | None:
    """A line saying that `--judge-run REF` found its run by name, not by id."""
    if matched_by != "name":
        return None
    return f"note: --judge-run {ref} matched the judge run named {ref!r} (id {judge_run_id}), by its name"


def describe_qrels(source: dict[str, Any]) -> str:
    """What an audit's qrels are (`Audit.sources` entries): name, where from, judge run, grading, sample."""
    name, origin = source.get("name"), source.get("origin")
    if origin == "file":
        return f"{name}, the file {source.get('path')}"
    if origin == "irds":
        return f"{name}, from ir_datasets"
    if origin != "graded":
        return f"{name}, loaded from {source.get('path')}"
    judge_run = source.get("judge_run") or {}
    run = f"judge run {judge_run.get('id')}"
    if judge_run.get("name"):
        matched = ", matched by name" if judge_run.get("matched_by") == "name" else ""
        run += f" ({judge_run['name']!r}{matched})"
    grading = source.get("grading") or {}
    text = f"{name}, graded from {run} by {grading_rule(grading)}"
    return text + (f"; {describe_sample(grading['sample'])}" if grading.get("sample") else "")


def describe_loads(results: Any) -> list[str]:
    """One line per LoadResult."""
    verbs = {"loaded": "loaded", "replaced": "replaced", "unchanged": "already loaded, unchanged:"}
    lines = []
    for r in results:
        if r.status == "skipped":
            lines.append(f"skipped {r.name}: {r.reason}")
        else:
            lines.append(f"{verbs[r.status]} {r.kind} {r.name!r}" + (f" ({r.rows} rows)" if r.rows else ""))
    return lines


def summary_table(title: str, lines: list[dict[str, Any]]) -> Table:
    table = Table(title=title)
    for column in ("what", "count", "detail"):
        table.add_column(column, justify="right" if column == "count" else "left")
    for line in lines:
        table.add_row(str(line["what"]), str(line["count"]), str(line["detail"]))
    return table


def evaluation_table(evaluation: Any, cut: str | None = None) -> Table:
    """Each run's means, under a title that says what they are means over (and any cut of the qrels)."""
    title = f"mean {evaluation.describe_average()}" + (f"; qrels cut to {cut}" if cut else "")
    table = Table(title=title)
    table.add_column("run")
    for m in evaluation.measures:
        table.add_column(m, justify="right")
    if evaluation.average == "run":
        table.add_column("num_q", justify="right")
    for run, values in evaluation.means().items():
        cells = [fmt(values[m]) for m in evaluation.measures]
        table.add_row(run, *cells, *([str(evaluation.num_q(run))] if evaluation.average == "run" else []))
    return table


def per_query_lines(evaluation: Any) -> list[str]:
    """`run<TAB>qid<TAB>value...` for every run and query."""
    return [
        "\t".join([run, qid] + [f"{evaluation.values[run][m][i]:.4f}" for m in evaluation.measures])
        for run in evaluation.runs
        for i, qid in enumerate(evaluation.queries)
    ]


def judges_tables(judges: list[dict[str, Any]]) -> list[Table]:
    """One table per judge: its options with type, allowed values, default and description."""
    out = []
    for judge in judges:
        table = Table(title=f"{judge['name']}: {judge['summary']}", title_justify="left")
        for column in ("option", "type", "default", "description"):
            table.add_column(column)
        for option in judge["options"]:
            table.add_row(option["name"], option["type"], repr(option["default"]), option["description"])
        out.append(table)
    return out


def demo_lines(result: Any) -> list[Table | str]:
    """What `qrelkit demo` prints (qrelkit.commands.demo.DemoResult)."""
    report = result.report
    table = Table(title=f"{result.measure} of the bundled runs under human and MiniLM qrels")
    for column in ("run", "human qrels", "MiniLM qrels"):
        table.add_column(column, justify="left" if column == "run" else "right")
    for run in sorted(result.under_human, key=lambda r: -result.under_human[r]):
        table.add_row(run, f"{result.under_human[run]:.4f}", f"{result.under_model[run]:.4f}")
    agree, shared = result.binary_agreement
    return [
        f"judged {report.judged} of {report.pairs} pairs with MiniLM (int8 ONNX) [{report.already_ok} already in the database]",
        *describe_grading(result.grading),
        table,
        f"Kendall τ between the two system rankings: {result.kendall_tau:.3f}; binary agreement (grade ≥ 2) on "
        f"{agree}/{shared} pairs. Model qrels: {result.qrels_file}. Database: {result.database}. Done in {result.seconds:.1f}s.",
    ]


def prompts_table(templates: list[Any]) -> Table:
    table = Table()
    for column in ("id", "modality", "scores", "description"):
        table.add_column(column)
    for t in templates:
        table.add_row(t.id, t.modality, f"{t.score_range[0]:g}-{t.score_range[1]:g}", t.description)
    return table


def nrg_table(outcome: Any) -> Table:
    result, groups, extra = outcome.result, outcome.groups, outcome.extra
    means = result.means()
    table = Table(title=f"{result.config.label}, prior {outcome.prior}: mean over {len(result.queries)} queries of the qrels")
    for column in ["run"] + (["group"] if groups else []) + [result.config.base_label, "NRG", "priors"] + list(extra):
        table.add_column(column, justify="left" if column in ("run", "group") else "right")
    for run in sorted(result.runs, key=lambda r: -means[r]["base"]):
        cells = [run] + ([groups[run]] if groups else [])
        cells += [f"{means[run]['base']:.4f}", f"{means[run]['nrg']:.4f}", str(len(result.priors[run]))]
        table.add_row(*cells, *(f"{extra[m][run]:.4f}" for m in extra))
    return table


def nrg_per_query_lines(result: Any) -> list[str]:
    return [
        f"{run}\t{qid}\t{result.base[i, j]:.4f}\t{result.nrg[i, j]:.4f}"
        for i, run in enumerate(result.runs)
        for j, qid in enumerate(result.queries)
    ]


def trec_eval_lines(evaluation: Any) -> list[str]:
    """trec_eval -q's output, byte for byte, one block per run: each query the run covers (in
    qid order) with its measures in trec_eval's order, then `runid`, `num_q` and each measure's
    `all` line. Over the qrels' queries (the default) this is `trec_eval -q -c -m runid -m num_q
    -m ...`; with average "run" it is the same without -c. `runid` is the run's tag column (as
    trec_eval prints it; the run's name where it has none). A measure prints under trec_eval's
    name (nDCG@10 as ndcg_cut_10); one trec_eval lacks keeps its own, after the others."""
    from qrelkit.evaluate.trec_names import TREC_EVAL_COUNTS, trec_eval_all, trec_eval_names, trec_eval_sort_key

    printed = trec_eval_names(evaluation.measures)
    order = sorted(evaluation.measures, key=lambda m: trec_eval_sort_key(printed[m]))

    def value(name: str, number: float) -> str:
        return str(int(round(number))) if name in TREC_EVAL_COUNTS else f"{number:.4f}"

    lines = []
    for run in evaluation.runs:
        covered = evaluation.covers(run)
        for i, qid in enumerate(evaluation.queries):
            if covered[i]:
                lines += [f"{printed[m]:<22}\t{qid}\t{value(printed[m], evaluation.values[run][m][i])}" for m in order]
        lines.append(f"{'runid':<22}\tall\t{(evaluation.tags or {}).get(run) or run}")  # trec_eval's runid: the tag column
        lines.append(f"{'num_q':<22}\tall\t{evaluation.num_q(run)}")
        lines += [f"{printed[m]:<22}\tall\t{value(printed[m], trec_eval_all(evaluation, run, m))}" for m in order]
    return lines


def correlation_tables(result: Any) -> list[Table | Text]:
    """`qrelkit correlate`: one matrix per statistic (qrelkit.evaluate.correlate.RankCorrelations), then the notes."""
    from qrelkit.evaluate.correlate import CORRELATION_NAMES

    out: list[Table | Text] = []
    for name, matrix in result.matrices.items():
        table = Table(title=f"{CORRELATION_NAMES[name]} between the orderings of {len(result.runs)} runs", title_justify="left")
        table.add_column("")
        for label in result.orderings:
            table.add_column(label, justify="right")
        for i, label in enumerate(result.orderings):
            table.add_row(label, *(fmt(float(matrix[i, j]), 3) for j in range(len(result.orderings))))
        out.append(table)
    out.append(Text("\n".join(result.notes)))
    return out


def templates_payload(templates: list[Any]) -> list[dict[str, Any]]:
    """`qrelkit prompts list --json`: every template's content."""
    return [template.content() for template in templates]
