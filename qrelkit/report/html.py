"""`qrelkit report`'s HTML page: the audit's tables and figures, and the judge run's configuration,
failures, tokens and cost."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qrelkit.evaluate.audit import Audit
from qrelkit.evaluate.labels import map_grades
from qrelkit.report.plots.audit import plot_confusion, plot_score_cdf, plot_system_scatter
from qrelkit.report.tables import BIAS_HEADER, SYSTEM_HEADER, bias_rows, fmt, label_rows, system_rows

FIGURES = {"systems": "figure1-systems", "cdf": "figure2-score-cdf", "confusion": "figure3-confusion"}


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


def write_figures(result: Audit, out_dir: Path, scores: list[tuple[str, str, float]] | None = None) -> dict[str, list[Path]]:
    """The three figures; without raw judge scores, Figure 2 shows the model's grades instead."""
    model_means, reference_means = result.model_evaluation.means(), result.reference_evaluation.means()
    measures = result.model_evaluation.measures
    figures = {
        "systems": plot_system_scatter(
            reference_means,
            model_means,
            measures,
            out_dir / FIGURES["systems"],
            groups=result.groups,
            reference_name=result.reference_name,
            model_name=result.model_name,
        ),
        "confusion": plot_confusion(
            result.labels.confusion,
            result.labels.labels,
            out_dir / FIGURES["confusion"],
            reference_name=result.reference_name,
            model_name=result.model_name,
        ),
    }
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
        np.array([v for _, _, v in values]),
        out_dir / FIGURES["cdf"],
        xlabel=xlabel,
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
        "<tr>" + "".join(f"<td{'' if i < text_columns else ' class=n'}>{_esc(v)}</td>" for i, v in enumerate(row)) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figure(paths: list[Path], alt: str, caption: str, width: int) -> str:
    png, svg = (p.name for p in paths)
    return (
        f'<figure><img src="{_esc(png)}" alt="{_esc(alt)}" style="width:{width}px"><figcaption>{_esc(caption)} '
        f'(<a href="{_esc(svg)}">SVG</a>)</figcaption></figure>'
    )


def _judge_section(judge: JudgeSummary) -> str:
    ok = judge.statuses.get("ok", 0)
    rows = [[status, count, f"{count / judge.judgments:.1%}" if judge.judgments else "–"] for status, count in judge.statuses.items()]
    facts = [
        ["judge run", judge.judge_run_id],
        ["judge", judge.judge],
        ["model", judge.model_id or "–"],
        ["template", judge.template_id or "–"],
        ["judgments", judge.judgments],
        ["ok", ok],
        ["tokens in / out", f"{judge.tokens_in} / {judge.tokens_out}"],
        ["cost", "–" if judge.cost is None else f"{judge.cost:.4f}"],
        ["mean latency (ms)", fmt(judge.mean_latency_ms, 1)],
        ["graded qrels set", judge.qrels_set or "–"],
    ]
    parts = [
        "<h2>Judge</h2>",
        _html_table(None, facts),
        "<h3>Judgments by status</h3>",
        _html_table(["status", "judgments", "share"], rows),
    ]
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
    rows = [
        [run, group_of.get(run, ""), f"{reference[run]:.4f}", reference_rank[run], f"{model[run]:.4f}", model_rank[run]]
        for run in sorted(reference, key=lambda r: reference_rank[r])
    ]
    header = ["run", "group", f"{measure} reference", "rank", f"{measure} model", "rank"]
    return f"<h2>Runs by {_esc(measure)}</h2>" + _html_table(header, rows, text_columns=2)


def render_html(result: Audit, figures: dict[str, list[Path]], judge: JudgeSummary | None = None) -> str:
    title = f"Audit of {result.model_name} against {result.reference_name}"
    maps = "; ".join(f"{side} grades mapped {m}" for side, m in (("reference", result.reference_map), ("model", result.model_map)) if m)
    confusion_rows = [[f"reference {label}", *row] for label, row in zip(result.labels.labels, result.labels.confusion.tolist())]
    cdf_caption = (
        "Figure 2: cumulative distribution of the judge's raw scores for each reference grade, and overall."
        if judge and judge.scores
        else "Figure 2: cumulative distribution of the model's grades for each reference grade (no raw scores: qrels from a file)."
    )
    parts = [
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{_esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        f"<p class=note>{len(result.queries)} queries judged by both qrels; {len(result.model_evaluation.runs)} runs. "
        f"Confidence intervals: percentile bootstrap over queries, {result.resamples} resamples, seed {result.seed}. "
        f"{_esc(maps)}</p>",
        _judge_section(judge) if judge else "",
        "<h2>Label agreement</h2>",
        _html_table(["statistic", "value"], [list(r) for r in label_rows(result)]),
        _html_table(["reference \\ model", *map(str, result.labels.labels)], confusion_rows),
        _figure(figures["confusion"], "confusion matrix heat map", "Figure 3: model grades against reference grades.", 480),
        "<h2>System ranking</h2>",
        _html_table(SYSTEM_HEADER, system_rows(result), text_columns=1),
        "<p class=note>τ_AP takes the reference ordering as the truth and weighs swaps near the top more.</p>",
        _figure(
            figures["systems"],
            "per-run scatter of reference vs model means",
            "Figure 1: each run's mean under the reference (x) and model (y) qrels; dashed: equal scores.",
            min(1040, 440 * len(result.model_evaluation.measures)),
        ),
    ]
    if result.bias:
        parts += [
            "<h2>Relative Δ toward groups</h2>",
            "<p class=note>Δ = 2·(M_g − M_o)/(M_g + M_o)·100, M averaged over the runs in and out of the group; "
            "positive favours the group. The last column is the bias the model qrels add over the reference.</p>",
            _html_table(BIAS_HEADER, bias_rows(result), text_columns=2),
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
