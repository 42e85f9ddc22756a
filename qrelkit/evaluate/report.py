"""Presenting an audit: the terminal tables of `qrelkit agree`, and `qrelkit report`'s HTML page
with its figures and the judge run's configuration, failures, tokens and cost."""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich import box
from rich.table import Table
from rich.text import Text

from qrelkit.evaluate.audit import Audit, agree
from qrelkit.evaluate.labels import map_grades
from qrelkit.evaluate.plots import plot_confusion, plot_score_cdf, plot_system_scatter

FIGURES = {"systems": "figure1-systems", "cdf": "figure2-score-cdf", "confusion": "figure3-confusion"}


def _fmt(value: float | None, digits: int = 4) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _ci(interval: tuple[float, float] | None, digits: int = 4) -> str:
    return "–" if not interval else f"[{_fmt(interval[0], digits)}, {_fmt(interval[1], digits)}]"


def _label_rows(result: Audit) -> list[tuple[str, str]]:
    labels = result.labels
    rows = [
        ("pairs judged by the model / reference / both", f"{labels.model_pairs} / {labels.reference_pairs} / {labels.shared_pairs}"),
        ("exact agreement", _fmt(labels.exact_agreement)),
        ("Cohen's κ", _fmt(labels.cohen_kappa)),
        ("Cohen's κ, linear weights", _fmt(labels.cohen_kappa_linear)),
        ("Cohen's κ, quadratic weights", _fmt(labels.cohen_kappa_quadratic)),
        ("Krippendorff's α (ordinal)", _fmt(labels.krippendorff_alpha_ordinal)),
    ]
    if labels.binarize_at is not None:
        rows.append((f"Cohen's κ, binary (grade ≥ {labels.binarize_at})", _fmt(labels.cohen_kappa_binary)))
    return rows


def _system_rows(result: Audit) -> list[list[str]]:
    return [
        [measure, str(c.runs), f"{_fmt(c.kendall_tau)} {_ci(c.ci95.get('kendall_tau'), 3)}",
         f"{_fmt(c.spearman_rho)} {_ci(c.ci95.get('spearman_rho'), 3)}",
         f"{_fmt(c.pearson_r)} {_ci(c.ci95.get('pearson_r'), 3)}", f"{_fmt(c.tau_ap)} {_ci(c.ci95.get('tau_ap'), 3)}"]
        for measure, c in result.systems.items()
    ]  # fmt: skip


def _bias_rows(result: Audit) -> list[list[str]]:
    return [
        [group, measure, f"{len(b.group_runs)}/{b.other_runs}", f"{_fmt(b.model, 1)} {_ci(b.model_ci95, 1)}",
         f"{_fmt(b.reference, 1)} {_ci(b.reference_ci95, 1)}", f"{_fmt(b.difference, 1)} {_ci(b.difference_ci95, 1)}"]
        for group, by_measure in result.bias.items() for measure, b in by_measure.items()
    ]  # fmt: skip


SYSTEM_HEADER = ["measure", "runs", "Kendall τ-b [95% CI]", "Spearman ρ [95% CI]", "Pearson r [95% CI]", "τ_AP [95% CI]"]
BIAS_HEADER = ["group", "measure", "runs in / out", "Δ model qrels", "Δ reference qrels", "model − reference"]


def audit_tables(result: Audit) -> list[Text | Table]:
    """`qrelkit agree` without --json: a heading, then labels, confusion, systems and bias as tables."""
    heading = Text(
        f"{result.model_name} (model) vs {result.reference_name} (reference): {len(result.topics)} topics judged by both, "
        f"{len(result.model_evaluation.runs)} runs", style="bold",
    )  # fmt: skip
    labels = Table(title="Label agreement on the shared pairs", title_justify="left")
    labels.add_column("statistic")
    labels.add_column("value", justify="right")
    for row in _label_rows(result):
        labels.add_row(*row)
    confusion = Table(title="Confusion, reference × model", title_justify="left", min_width=44)
    confusion.add_column("ref \\ model")
    for label in result.labels.labels:
        confusion.add_column(str(label), justify="right")
    for label, row in zip(result.labels.labels, result.labels.confusion.tolist()):
        confusion.add_row(str(label), *(str(v) for v in row))
    systems = Table(title=f"System rankings [95% CI, {result.samples} resamples]", title_justify="left", min_width=52)
    systems.add_column("statistic")
    for measure, corr in result.systems.items():
        systems.add_column(f"{measure} ({corr.runs} runs)", justify="right")
    names = {"kendall_tau": "Kendall τ-b", "spearman_rho": "Spearman ρ", "pearson_r": "Pearson r", "tau_ap": "τ_AP"}
    for statistic, name in names.items():
        systems.add_row(name, *(f"{_fmt(getattr(c, statistic))} {_ci(c.ci95.get(statistic), 3)}" for c in result.systems.values()))
    tables: list[Text | Table] = [heading, labels, confusion, systems]
    for measure in result.model_evaluation.measures if result.bias else []:
        bias = Table(title=f"Relative Δ toward each group, % ({measure}) [95% CI]", title_justify="left", box=box.SIMPLE_HEAD)
        for i, column in enumerate(["group", "runs in/out", "Δ model qrels", "Δ reference", "model − reference"]):
            bias.add_column(column, justify="left" if i == 0 else "right")
        for group, by_measure in result.bias.items():
            b = by_measure[measure]
            bias.add_row(group, f"{len(b.group_runs)}/{b.other_runs}", *(
                f"{_fmt(value, 1)}\n{_ci(interval, 1)}" for value, interval in
                ((b.model, b.model_ci95), (b.reference, b.reference_ci95), (b.difference, b.difference_ci95))
            ))  # fmt: skip
        tables.append(bias)
    return tables


@dataclass(frozen=True)
class JudgeSummary:
    """What a reviewer needs about the judge run behind the model qrels."""

    judge_run_id: str
    judge: str
    model_id: str | None
    config: dict[str, Any]
    template_id: str | None
    template: dict[str, Any] | None
    qrels_set: str | None
    grading: dict[str, Any] | None
    statuses: dict[str, int]
    judgments: int
    tokens_in: int
    tokens_out: int
    cost: float | None
    mean_latency_ms: float | None
    failures: list[tuple[str, str, str, str]] = field(default_factory=list)  # status, qid, docid, error (a sample)
    scores: list[tuple[str, str, float]] = field(default_factory=list)  # (qid, docid, raw score) of ok judgments


def summarize_judge_run(db: str | Path, judge_run: str) -> JudgeSummary:
    from qrelkit.storage import Store
    from qrelkit.storage.judgments import graded_qrels_name, ok_scores, status_counts
    from qrelkit.storage.judgments import judge_run as find_judge_run

    with Store(db, read_only=True) as store:
        info = find_judge_run(store, judge_run)
        run_id = info.judge_run_id
        total, tokens_in, tokens_out, cost, latency = store.con.execute(
            "SELECT count(*), coalesce(sum(tokens_in), 0), coalesce(sum(tokens_out), 0), sum(cost), avg(latency_ms) "
            "FROM judgments WHERE judge_run_id = ?", [run_id],
        ).fetchone()  # fmt: skip
        failures = store.con.execute(
            "SELECT status, qid, docid, left(coalesce(error, ''), 300) FROM judgments WHERE judge_run_id = ? AND status <> 'ok' "
            "ORDER BY status, qid, docid LIMIT 10", [run_id],
        ).fetchall()  # fmt: skip
        qrels_set = graded_qrels_name(store, run_id)
        grading = None
        if qrels_set is not None:
            row = store.con.execute("SELECT grading FROM qrels_sets WHERE name = ?", [qrels_set]).fetchone()
            grading = json.loads(row[0]) if row and row[0] else None
        return JudgeSummary(
            judge_run_id=run_id, judge=info.judge, model_id=info.model_id, config=info.config, template_id=info.template_id,
            template=info.template, qrels_set=qrels_set, grading=grading, statuses=status_counts(store, run_id),
            judgments=int(total), tokens_in=int(tokens_in), tokens_out=int(tokens_out),
            cost=None if cost is None else float(cost), mean_latency_ms=None if latency is None else float(latency),
            failures=[tuple(f) for f in failures], scores=[(q, d, float(s)) for q, d, s in ok_scores(store, run_id)],
        )  # fmt: skip


def write_figures(result: Audit, out_dir: Path, scores: list[tuple[str, str, float]] | None = None) -> dict[str, list[Path]]:
    """The three figures; without raw judge scores, Figure 2 shows the model's grades instead."""
    model_means, reference_means = result.model_evaluation.means(), result.reference_evaluation.means()
    measures = result.model_evaluation.measures
    figures = {
        "systems": plot_system_scatter(reference_means, model_means, measures, out_dir / FIGURES["systems"],
                                       groups=result.groups, reference_name=result.reference_name,
                                       model_name=result.model_name),
        "confusion": plot_confusion(result.labels.confusion, result.labels.labels, out_dir / FIGURES["confusion"],
                                    reference_name=result.reference_name, model_name=result.model_name),
    }  # fmt: skip
    reference = map_grades(result.reference_grades, result.reference_map, "reference")
    if scores:
        values, xlabel = [(q, d, s) for q, d, s in scores], "judge score (raw, before grading)"
    else:
        model = map_grades(result.model_grades, result.model_map, "model", "--map-model")
        values = [(q, d, float(g)) for q, docs in model.items() for d, g in docs.items()]
        xlabel = "model grade (no raw scores: qrels from a file)"
    by_grade: dict[int, list[float]] = {}
    for qid, docid, value in values:
        grade = reference.get(qid, {}).get(docid)
        if grade is not None:
            by_grade.setdefault(grade, []).append(value)
    figures["cdf"] = plot_score_cdf(
        {f"{result.reference_name} grade {g}": np.array(by_grade[g]) for g in sorted(by_grade)},
        np.array([v for _, _, v in values]), out_dir / FIGURES["cdf"], xlabel=xlabel,
        title="Judge scores by reference grade" if scores else "Model grades by reference grade",
    )
    return figures


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:1100px;margin:2rem auto;padding:0 1rem;
color:#1a1a1a;line-height:1.45}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ccc;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.6rem 0}th,td{border:1px solid #d0d0d0;padding:.25rem .6rem}
th{background:#f1f3f5;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:1rem 0}figure img{max-width:100%;height:auto;border:1px solid #e0e0e0}
figcaption{font-size:.9rem;color:#444}pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;font-size:.85rem}
.note{font-size:.9rem;color:#444}
"""


def _esc(value: Any) -> str:
    return html.escape(str(value))


def _html_table(header: list[str] | None, rows: list[list[Any]], text_columns: int = 1) -> str:
    if header is None:  # a key-value table: the first column is the header of each row
        body = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in rows)
        return f"<table><tbody>{body}</tbody></table>"
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f'<td{"" if i < text_columns else " class=n"}>{_esc(v)}</td>' for i, v in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figure(paths: list[Path], alt: str, caption: str, width: int) -> str:
    png, svg = (p.name for p in paths)
    return (f'<figure><img src="{_esc(png)}" alt="{_esc(alt)}" style="width:{width}px"><figcaption>{_esc(caption)} '
            f'(<a href="{_esc(svg)}">SVG</a>)</figcaption></figure>')  # fmt: skip


def _judge_section(judge: JudgeSummary) -> str:
    ok = judge.statuses.get("ok", 0)
    rows = [[status, count, f"{count / judge.judgments:.1%}" if judge.judgments else "–"] for status, count in judge.statuses.items()]
    facts = [
        ["judge run", judge.judge_run_id], ["judge", judge.judge], ["model", judge.model_id or "–"],
        ["template", judge.template_id or "–"], ["judgments", judge.judgments], ["ok", ok],
        ["tokens in / out", f"{judge.tokens_in} / {judge.tokens_out}"],
        ["cost", "–" if judge.cost is None else f"{judge.cost:.4f}"],
        ["mean latency (ms)", _fmt(judge.mean_latency_ms, 1)], ["graded qrels set", judge.qrels_set or "–"],
    ]  # fmt: skip
    parts = [
        "<h2>Judge</h2>", _html_table(None, facts),
        "<h3>Judgments by status</h3>", _html_table(["status", "judgments", "share"], rows),
    ]  # fmt: skip
    if judge.failures:
        parts += ["<h3>Failures (a sample)</h3>", _html_table(["status", "qid", "docid", "error"], [list(f) for f in judge.failures], 4)]
    parts += ["<h3>Configuration</h3>", f"<pre>{_esc(json.dumps(judge.config, indent=2, sort_keys=True))}</pre>"]
    if judge.grading:
        parts += ["<h3>Grading</h3>", f"<pre>{_esc(json.dumps(judge.grading, indent=2, sort_keys=True))}</pre>"]
    if judge.template:
        parts += ["<h3>Prompt template</h3>", f"<pre>{_esc(json.dumps(judge.template, indent=2, ensure_ascii=False))}</pre>"]
    return "\n".join(parts)


def _runs_table(result: Audit) -> str:
    measure = result.model_evaluation.measures[0]
    model = {run: v[measure] for run, v in result.model_evaluation.means().items()}
    reference = {run: v[measure] for run, v in result.reference_evaluation.means().items()}
    rank = lambda means: {run: i for i, run in enumerate(sorted(means, key=lambda r: -means[r]), start=1)}  # noqa: E731
    model_rank, reference_rank = rank(model), rank(reference)
    group_of = {run: name for name, members in result.groups.items() for run in members}
    rows = [[run, group_of.get(run, ""), f"{reference[run]:.4f}", reference_rank[run], f"{model[run]:.4f}", model_rank[run]]
            for run in sorted(reference, key=lambda r: reference_rank[r])]  # fmt: skip
    header = ["run", "group", f"{measure} reference", "rank", f"{measure} model", "rank"]
    return f"<h2>Runs by {_esc(measure)}</h2>" + _html_table(header, rows, text_columns=2)


def render_html(result: Audit, figures: dict[str, list[Path]], judge: JudgeSummary | None = None) -> str:
    title = f"Audit of {result.model_name} against {result.reference_name}"
    maps = "; ".join(f"{side} grades mapped {m}" for side, m in (("reference", result.reference_map), ("model", result.model_map)) if m)
    confusion_rows = [[f"reference {label}", *row] for label, row in zip(result.labels.labels, result.labels.confusion.tolist())]
    cdf_caption = (
        "Figure 2: cumulative distribution of the judge's raw scores for each reference grade, and overall."
        if judge and judge.scores else
        "Figure 2: cumulative distribution of the model's grades for each reference grade (no raw scores: qrels from a file)."
    )  # fmt: skip
    parts = [
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{_esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        f"<p class=note>{len(result.topics)} topics judged by both qrels; {len(result.model_evaluation.runs)} runs. "
        f"Confidence intervals: percentile bootstrap over topics, {result.samples} resamples, seed {result.seed}. "
        f"{_esc(maps)}</p>",
        _judge_section(judge) if judge else "",
        "<h2>Label agreement</h2>", _html_table(["statistic", "value"], [list(r) for r in _label_rows(result)]),
        _html_table(["reference \\ model", *map(str, result.labels.labels)], confusion_rows),
        _figure(figures["confusion"], "confusion matrix heat map", "Figure 3: model grades against reference grades.", 480),
        "<h2>System ranking</h2>", _html_table(SYSTEM_HEADER, _system_rows(result), text_columns=1),
        "<p class=note>τ_AP takes the reference ordering as the truth and weighs swaps near the top more.</p>",
        _figure(figures["systems"], "per-run scatter of reference vs model means",
                "Figure 1: each run's mean under the reference (x) and model (y) qrels; dashed: equal scores.",
                min(1040, 440 * len(result.model_evaluation.measures))),
    ]  # fmt: skip
    if result.bias:
        parts += [
            "<h2>Relative Δ toward groups</h2>",
            "<p class=note>Δ = 2·(M_g − M_o)/(M_g + M_o)·100, M averaged over the runs in and out of the group; "
            "positive favours the group. The last column is the bias the model qrels add over the reference.</p>",
            _html_table(BIAS_HEADER, _bias_rows(result), text_columns=2),
        ]
    parts += [
        "<h2>Score distributions</h2>",
        _figure(figures["cdf"], "score CDF per reference grade", cdf_caption, 560),
    ]
    parts += [_runs_table(result), "</body></html>"]
    return "\n".join(p for p in parts if p)


def write_report(result: Audit, out_dir: str | Path, judge: JudgeSummary | None = None) -> Path:
    """`report.html` plus the figures (PNG and SVG) in ``out_dir``; returns the page's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = write_figures(result, out_dir, judge.scores if judge else None)
    page = out_dir / "report.html"
    page.write_text(render_html(result, figures, judge), encoding="utf-8")
    return page


def build_report(*, out: str | Path, judge_run: str | None = None, db: str | Path | None = None, **agree_options: Any) -> Path:
    """`qrelkit report`: audit (as :func:`qrelkit.evaluate.audit.agree`) and write the page."""
    result = agree(judge_run=judge_run, db=db, **agree_options)
    judge = summarize_judge_run(db, judge_run) if judge_run is not None and db is not None else None
    return write_report(result, out, judge)
