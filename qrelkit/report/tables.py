"""Terminal tables (rich) and the rows the HTML report shares with them."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table
from rich.text import Text

from qrelkit.report.text import printable

if TYPE_CHECKING:  # annotations only: printing a table must not load the audit's numerics
    from qrelkit.evaluate.audit import Audit
    from qrelkit.evaluate.fd.runs import FDReport


def fmt(value: float | None, digits: int = 4) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def ci(interval: tuple[float, float] | None, digits: int = 4) -> str:
    return "–" if not interval else f"[{fmt(interval[0], digits)}, {fmt(interval[1], digits)}]"


def label_rows(result: Audit) -> list[tuple[str, str]]:
    labels = result.labels
    rows = [
        ("pairs judged by the model / reference / both", f"{labels.model_pairs} / {labels.reference_pairs} / {labels.shared_pairs}"),
        ("exact agreement", fmt(labels.exact_agreement)),
        ("Cohen's κ", fmt(labels.cohen_kappa)),
        ("Cohen's κ, linear weights", fmt(labels.cohen_kappa_linear)),
        ("Cohen's κ, quadratic weights", fmt(labels.cohen_kappa_quadratic)),
        ("Krippendorff's α (ordinal)", fmt(labels.krippendorff_alpha_ordinal)),
    ]
    if labels.rel_level is not None:
        rows.append((f"Cohen's κ, binary (grade ≥ {labels.rel_level})", fmt(labels.cohen_kappa_binary)))
    return rows


def system_rows(result: Audit) -> list[list[str]]:
    return [
        [
            measure,
            str(c.runs),
            f"{fmt(c.kendall_tau)} {ci(c.ci95.get('kendall_tau'), 3)}",
            f"{fmt(c.spearman_rho)} {ci(c.ci95.get('spearman_rho'), 3)}",
            f"{fmt(c.pearson_r)} {ci(c.ci95.get('pearson_r'), 3)}",
            f"{fmt(c.tau_ap)} {ci(c.ci95.get('tau_ap'), 3)}",
        ]
        for measure, c in result.systems.items()
    ]


def bias_rows(result: Audit) -> list[list[str]]:
    return [
        [
            group,
            measure,
            f"{len(b.group_runs)}/{b.other_runs}",
            f"{fmt(b.model, 1)} {ci(b.model_ci95, 1)}",
            f"{fmt(b.reference, 1)} {ci(b.reference_ci95, 1)}",
            f"{fmt(b.difference, 1)} {ci(b.difference_ci95, 1)}",
        ]
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
    labels = Table(title="Label agreement on the shared pairs", title_justify="left")
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
    systems = Table(title=f"System rankings [95% CI, {result.resamples} resamples]", title_justify="left", min_width=52)
    systems.add_column("statistic")
    for measure, corr in result.systems.items():
        systems.add_column(f"{measure} ({corr.runs} runs)", justify="right")
    names = {"kendall_tau": "Kendall τ-b", "spearman_rho": "Spearman ρ", "pearson_r": "Pearson r", "tau_ap": "τ_AP"}
    for statistic, name in names.items():
        systems.add_row(name, *(f"{fmt(getattr(c, statistic))} {ci(c.ci95.get(statistic), 3)}" for c in result.systems.values()))
    tables: list[Text | Table] = [heading, labels, confusion, systems]
    for measure in result.model_evaluation.measures if result.bias else []:
        bias = Table(title=f"Relative Δ toward each group, % ({measure}) [95% CI]", title_justify="left", box=box.SIMPLE_HEAD)
        for i, column in enumerate(["group", "runs in/out", "Δ model qrels", "Δ reference", "model − reference"]):
            bias.add_column(column, justify="left" if i == 0 else "right")
        for group, by_measure in result.bias.items():
            b = by_measure[measure]
            bias.add_row(
                group,
                f"{len(b.group_runs)}/{b.other_runs}",
                *(
                    f"{fmt(value, 1)}\n{ci(interval, 1)}"
                    for value, interval in ((b.model, b.model_ci95), (b.reference, b.reference_ci95), (b.difference, b.difference_ci95))
                ),
            )
        tables.append(bias)
    return tables


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
            table.add_column(f"{label} 95% ({s.resamples} resamples)", justify="right")
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
                cells.append(f"[{fd.bootstrap.low:.4f}, {fd.bootstrap.high:.4f}]" if fd.bootstrap else "-")
        table.add_row(*cells)
    notes = ["lower is better; '-': fewer than 2 retrieved items"]
    if deficient or report.rel_rank < report.d:
        notes.append(
            f"some covariances are rank-deficient (rank < d={report.d}: fewer items than dimensions, or embeddings "
            "confined to a subspace); FD is still exact"
        )
    table.caption = "; ".join(notes)
    return table


def describe_job(report: Any, *, dry_run: bool = False) -> list[str]:
    """What a judging run did, as lines (qrelkit.jobs.runner.JobReport)."""
    verbs = {"loaded": "would load", "replaced": "would replace"} if dry_run else {}
    lines = [
        f"skipped {load.name}: {load.reason}"
        if load.status == "skipped"
        else f"{verbs.get(load.status, load.status)} {load.kind} {load.name!r} ({load.rows} rows)"
        for load in report.loads
        if load.status != "unchanged"
    ]
    lines.append(
        f"judge run {report.judge_run_id}: {report.pairs} pairs in the pool; before this run "
        f"{report.already_ok} ok, {report.already_failed} failed; {report.to_judge} to judge"
    )
    if dry_run:
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


def describe_grading(result: Any) -> list[str]:
    """What grading did (qrelkit.jobs.grade.GradingResult): the rule, the grades, and any warning."""
    d = result.description
    if d["method"] == "quantile" and d["per_topic"]:
        rule = f"per-topic quantiles {d['quantiles']} over {len(result.thresholds)} topics, ties kept together"
    elif d["method"] == "quantile":
        rule = f"quantiles {d['quantiles']} at " + ", ".join(f"{c:.4g}" for c in result.thresholds["*"]) + ", ties kept together"
    elif d["method"] == "thresholds":
        rule = "cut points " + ", ".join(f"{c:g}" for c in result.thresholds["*"])
    elif d["method"] == "map":
        rule = "map " + ",".join(f"{k}:{v}" for k, v in (d["map"] or {}).items())
    else:
        rule = "identity: the scores are the grades"
    grades = ", ".join(f"{g}: {n}" for g, n in result.grade_counts().items())
    which = "" if d["score"] == "score" else f", by the {d['score']} score"
    lines = [f"graded {d['n_scores']} scores into qrels {result.qrels.name!r} ({rule}{which}); grades {grades}"]
    lines += [f"warning: {w}" for w in result.warnings]
    return lines


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


def evaluation_table(evaluation: Any) -> Table:
    table = Table(title=f"mean over {len(evaluation.queries)} queries of the qrels")
    table.add_column("run")
    for m in evaluation.measures:
        table.add_column(m, justify="right")
    for run, values in evaluation.means().items():
        table.add_row(run, *(f"{values[m]:.4f}" for m in evaluation.measures))
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
    """trec_eval's `-q` layout, one block per run: `runid all <run>`, then `measure<TAB>qid<TAB>value`
    for every query, then the mean as `measure<TAB>all<TAB>value` (over the qrels' queries, as
    trec_eval -c). A measure is printed as the user spelled it (a trec_eval name stays one)."""
    lines = []
    for run in evaluation.runs:
        lines.append(f"{'runid':<22}\tall\t{run}")
        for i, qid in enumerate(evaluation.queries):
            lines += [f"{m:<22}\t{qid}\t{evaluation.values[run][m][i]:.4f}" for m in evaluation.measures]
        lines += [f"{m:<22}\tall\t{evaluation.mean(run, m):.4f}" for m in evaluation.measures]
    return lines
