"""`qrelkit report`'s page: one self-contained HTML file that leads with the answer.

Order: a summary box (κ, τ with its interval, Relative Δ, coverage, the audit's warnings), then
the system-ranking scatter, label agreement and confusion, score distributions, bias, the judge
with its failures (the model's own answers), the grading thresholds as a compact table, and the
version, date and command line. Figures are SVG data URIs inside the page, numbered in order of
appearance, so the file can be moved, mailed or attached alone.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from qrelkit.evaluate.audit import Audit
from qrelkit.report.html_table import Cell, _esc, html_table
from qrelkit.report.plots.audit import figure_svg, plot_confusion, plot_relative_delta, plot_score_cdf, plot_system_scatter
from qrelkit.report.probes import probes_section_html
from qrelkit.report.tables import (
    BIAS_HEADER,
    SYSTEM_HEADER,
    bias_rows,
    ci,
    describe_qrels,
    describe_sample,
    fmt,
    grading_rule,
    label_rows,
    system_rows,
)


class FailureRow(Protocol):
    """A failed judgment as the report shows it (storage's rows have these fields)."""

    @property
    def status(self) -> str: ...
    @property
    def qid(self) -> str: ...
    @property
    def docid(self) -> str: ...
    @property
    def answer(self) -> str: ...
    @property
    def error(self) -> str: ...


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
    failures: Sequence[FailureRow] = field(default_factory=list)  # a sample, with the model's raw answers
    scores: list[tuple[str, str, float]] = field(default_factory=list)  # (qid, docid, raw score) of ok judgments
    probes: Sequence[Any] = field(default_factory=list)  # the gullibility probes it was put to (qrelkit.commands.probe_result.ProbeEntry)


@dataclass(frozen=True)
class Provenance:
    """What made the page, printed at its bottom."""

    version: str
    created: str  # e.g. 2025-01-31 14:05 UTC
    command: str  # the command line, shell-quoted


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:1100px;margin:1.2rem auto;padding:0 1rem;
color:#1a1a1a;line-height:1.45}
h1{font-size:1.4rem;margin:.2rem 0 .6rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ccc;padding-bottom:.2rem}
h3{font-size:1rem}
table{border-collapse:collapse;margin:.6rem 0}
th,td{border:1px solid #d0d0d0;padding:.25rem .6rem;vertical-align:top}
th{background:#f1f3f5;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.text{white-space:pre-wrap;overflow-wrap:anywhere;max-width:34rem;font-family:ui-monospace,monospace;font-size:.85rem}
figure{margin:1rem 0}figure img{max-width:100%;height:auto;border:1px solid #e0e0e0}
figcaption{font-size:.9rem;color:#444}
pre{background:#f6f8fa;padding:.6rem;font-size:.85rem;white-space:pre-wrap;overflow-wrap:anywhere}
.note{font-size:.9rem;color:#444}
.summary{border:2px solid #0072B2;border-radius:6px;padding:.8rem 1rem;background:#f5f9fc}
.stats{display:flex;flex-wrap:wrap;gap:.6rem 2.2rem;margin:.2rem 0 .4rem}.stat{max-width:19rem}
.stat .value{font-size:1.6rem;font-weight:600;font-variant-numeric:tabular-nums}
.stat .ci{font-size:.95rem;color:#333;font-variant-numeric:tabular-nums}
.label{font-size:.85rem;color:#444}
.warnings{margin:.5rem 0 0;padding:.4rem .8rem .4rem 1.8rem;background:#fff4e5;border-left:4px solid #D55E00}
.compact td,.compact th{padding:.1rem .45rem;font-size:.85rem}
footer{margin:2.5rem 0 1rem;padding-top:.5rem;border-top:1px solid #ccc;font-size:.85rem;color:#444}
footer code{overflow-wrap:anywhere}
"""


class Figures:
    """Numbers figures in the order the page shows them and embeds each as an SVG data URI."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, figure: Any, alt: str, caption: str, width: int) -> str:
        self.count += 1
        uri = "data:image/svg+xml;base64," + base64.b64encode(figure_svg(figure).encode("utf-8")).decode("ascii")
        return (
            f'<figure id="figure-{self.count}"><img src="{uri}" alt="{_esc(alt)}" style="width:{width}px">'
            f"<figcaption><b>Figure {self.count}.</b> {_esc(caption)}</figcaption></figure>"
        )


def _stat(key: str, value: str, label: str, interval: str = "", note: str | None = None) -> str:
    """A headline number with its interval; a * after the interval when it carries a note (the
    estimate outside it, ...), the reason in its tooltip and in the list of notes below."""
    interval_html = f' <span class=ci data-summary="{key}-ci">{_esc(interval)}</span>' if interval else ""
    if interval and note:
        interval_html += f'<span class=ci data-summary="{key}-mark" title="{_esc(note)}">*</span>'
    return (
        f'<div class=stat><div><span class=value data-summary="{key}">{_esc(value)}</span>{interval_html}</div>'
        f"<div class=label>{_esc(label)}</div></div>"
    )


def _maps_note(result: Audit) -> str:
    sides = (("reference", result.maps.reference), ("model", result.maps.model))
    return "; ".join(f"{side} grades mapped {','.join(f'{k}:{v}' for k, v in m.items())}" for side, m in sides if m)


def _bias_summary(result: Audit) -> str:
    """Relative Δ the model qrels add (model − reference), a row per group and a column per measure."""
    measures = result.model_evaluation.measures
    rows: list[list[Any]] = []
    for g, (group, by_measure) in enumerate(result.bias.items()):
        row: list[Any] = [Cell(group, header=True)]
        for m, measure in enumerate(measures):
            b = by_measure[measure]
            title = _esc(f"model {fmt(b.model, 1)} %, reference {fmt(b.reference, 1)} %")
            spans = (
                f'<span data-summary="delta-{g}-{m}">{_esc(fmt(b.difference, 1))}</span> '
                f'<span data-summary="delta-{g}-{m}-ci">{_esc(ci(b.difference_ci95, 1))}</span>'
            )
            row.append(Cell(spans, f' class=n title="{title}"', markup=True))
        rows.append(row)
    return "<div class=label>Relative Δ toward each group that the model qrels add (model − reference, %) [95% CI]</div>" + html_table(
        ["group", *measures], rows, css="compact", style="margin-top:.2rem"
    )


def summary_box(result: Audit, judge: JudgeSummary | None) -> str:
    """The answer first: κ, τ [CI] per measure, Relative Δ added by the model qrels, coverage, warnings."""
    labels = result.labels
    maps = _maps_note(result)
    kappa = labels.intervals.get("cohen_kappa")
    stats = [
        _stat(
            "kappa",
            fmt(labels.cohen_kappa),
            "Cohen's κ on the shared pairs" + (f" ({maps})" if maps else ""),
            ci(kappa.interval, 3) if kappa is not None else "",
            kappa.note if kappa is not None else None,
        )
    ]
    if labels.rel_level is not None:
        stats.append(_stat("kappa-binary", fmt(labels.cohen_kappa_binary), f"Cohen's κ, both sides cut at grade ≥ {labels.rel_level}"))
    for i, (measure, corr) in enumerate(result.systems.items()):
        tau = corr.intervals.get("kendall_tau")
        label = f"Kendall τ-b, {measure} over {corr.runs} runs"
        stats.append(_stat(f"tau-{i}", fmt(corr.kendall_tau), label, ci(corr.ci95.get("kendall_tau"), 3), tau.note if tau else None))
    bias = _bias_summary(result) if result.bias else ""
    coverage = (
        f'<span data-summary="pairs">{labels.shared_pairs:,}</span> shared pairs (model {labels.model_pairs:,}, '
        f'reference {labels.reference_pairs:,}) · <span data-summary="queries">{len(result.queries)}</span> queries judged by both · '
        f"{len(result.model_evaluation.runs)} runs"
    )
    if judge is not None:
        ok = judge.statuses.get("ok", 0)
        share = f" ({ok / judge.judgments:.1%})" if judge.judgments else ""
        coverage += f" · judge {_esc(judge.judge)}: {ok:,} of {judge.judgments:,} judgments ok{share}"
    described = result.interval_description()
    intervals = described[:1].upper() + described[1:] + "."
    if not result.bias:
        intervals += " Relative Δ: no groups given (--group or --groups)."
    # each note and each warning an item of its own: a reader scans them, one sentence each
    notes = "".join(f"<li>* {_esc(note)}</li>" for note in result.interval_notes())
    warnings = "".join(f"<li>{_esc(w)}</li>" for w in result.warnings)
    return (
        "<section class=summary id=summary><div class=stats>"
        + "".join(stats)
        + f"</div>{bias}{_qrels_note(result)}<div class=note>{coverage}. {_esc(intervals)}</div>"
        + (f'<div class=note data-summary="ranked-on">{_esc(ranked_on)}</div>' if (ranked_on := result.coverage.sentence()) else "")
        + (f'<ul class=warnings data-summary="interval-notes">{notes}</ul>' if notes else "")
        + (f'<ul class=warnings data-summary="warnings">{warnings}</ul>' if warnings else "")
        + "</section>"
    )


def _qrels_note(result: Audit) -> str:
    """Which qrels the numbers answer for: each side's set, judge run, grading and sample."""
    sides = [
        f'{label}: <span data-summary="{side}-qrels">{_esc(describe_qrels(result.sources[side]))}</span>'
        for side, label in (("model", "Model qrels"), ("reference", "Reference qrels"))
        if side in result.sources
    ]
    return f"<div class=note>{'. '.join(sides)}.</div>" if sides else ""


def _systems_section(result: Audit, figure: Figures) -> str:
    scatter = plot_system_scatter(
        result.reference_evaluation.means(),
        result.model_evaluation.means(),
        result.model_evaluation.measures,
        groups=result.groups,
        reference_name=result.reference_name,
        model_name=result.model_name,
    )
    return "\n".join(
        [
            "<h2>System ranking</h2>",
            figure(
                scatter,
                "per-run scatter of reference vs model means",
                "Each run's mean under the reference (x) and model (y) qrels; dashed: equal scores.",
                min(1040, 440 * len(result.model_evaluation.measures)),
            ),
            html_table(SYSTEM_HEADER, [list(r) for r in system_rows(result)], text_columns=1),
            "<p class=note>τ_AP takes the reference ordering as the truth and weighs swaps near the top more.</p>",
            _runs_table(result),
        ]
    )


def _labels_section(result: Audit, figure: Figures) -> str:
    if result.labels.not_computed is not None:  # grades κ cannot compare: no confusion matrix either
        return "\n".join(["<h2>Label agreement</h2>", html_table(["statistic", "value"], [list(r) for r in label_rows(result)])])
    confusion = plot_confusion(
        result.labels.confusion, result.labels.labels, reference_name=result.reference_name, model_name=result.model_name
    )
    maps = _maps_note(result)
    return "\n".join(
        [
            "<h2>Label agreement</h2>",
            html_table(["statistic", "value"], [list(r) for r in label_rows(result)]),
            figure(
                confusion,
                "confusion matrix heat map",
                "Model grades against reference grades on the shared pairs: share of each reference grade and count"
                + (f" ({maps})." if maps else "."),
                480,
            ),
        ]
    )


def _scores_section(result: Audit, judge: JudgeSummary | None, figure: Figures) -> str:
    """The judge's raw scores per reference grade; without them (qrels from a file), the model's grades."""
    mapped_model, reference = result.mapped_grades()
    scores = judge.scores if judge else None
    if scores:
        values, xlabel = list(scores), "judge score (raw, before grading)"
        caption = "Cumulative distribution of the judge's raw scores for each reference grade, and overall."
    else:
        values = [(q, d, float(g)) for q, docs in mapped_model.items() for d, g in docs.items()]
        xlabel = "model grade (no raw scores: qrels from a file)"
        caption = "Cumulative distribution of the model's grades for each reference grade (no raw scores: qrels from a file)."
    by_grade: dict[int, list[float]] = {}
    for qid, docid, value in values:
        grade = reference.get(qid, {}).get(docid)
        if grade is not None:
            by_grade.setdefault(grade, []).append(value)
    cdf = plot_score_cdf(
        {f"{result.reference_name} grade {g}": np.array(by_grade[g]) for g in sorted(by_grade)},
        np.array([v for _, _, v in values]),
        xlabel=xlabel,
        title="Judge scores by reference grade" if scores else "Model grades by reference grade",
    )
    return "<h2>Score distributions</h2>\n" + figure(cdf, "score CDF per reference grade", caption, 560)


def _bias_section(result: Audit, figure: Figures) -> str:
    if not result.bias:
        return ""
    deltas = plot_relative_delta(result.bias, reference_name=result.reference_name, model_name=result.model_name)
    return "\n".join(
        [
            "<h2>Relative Δ toward groups</h2>",
            "<p class=note>Δ = 2·(M_g − M_o)/(M_g + M_o)·100, M averaged over the runs in and out of the group; "
            "positive favours the group. The last column is the bias the model qrels add over the reference.</p>",
            html_table(BIAS_HEADER, bias_rows(result), text_columns=2),
            figure(
                deltas,
                "Relative Δ per group under each qrels",
                "Relative Δ toward each group under the reference and the model qrels, 95% intervals; dashed: no bias.",
                min(1040, 440 * len(result.model_evaluation.measures)),
            ),
        ]
    )


def _judge_section(judge: JudgeSummary) -> str:
    rows = [[status, count, f"{count / judge.judgments:.1%}" if judge.judgments else "–"] for status, count in judge.statuses.items()]
    facts: list[list[Any]] = [
        ["judge run", judge.judge_run_id],
        ["judge", judge.judge],
        ["model", judge.model_id or "–"],
        ["template", judge.template_id or "–"],
        ["judgments", judge.judgments],
        ["ok", judge.statuses.get("ok", 0)],
        ["tokens in / out", f"{judge.tokens_in} / {judge.tokens_out}"],
        ["cost", "–" if judge.cost is None else f"{judge.cost:.4f}"],
        ["mean latency (ms)", fmt(judge.mean_latency_ms, 1)],
        ["graded qrels set", judge.qrels_set or "–"],
    ]
    parts = ["<h2>Judge</h2>", html_table(None, facts)]
    parts += ["<h3>Judgments by status</h3>", html_table(["status", "judgments", "share"], rows)]
    if judge.failures:
        failures = [
            [f.status, f.qid, f.docid, Cell(f.answer, " class=text") if f.answer else Cell("<i>no answer</i>", " class=text", markup=True)]
            + [Cell(f.error, " class=text")]
            for f in judge.failures
        ]
        parts += [
            "<h3>Failures (a sample), with the model's answer</h3>",
            html_table(["status", "qid", "docid", "model's answer", "why it failed"], failures, text_columns=3),
        ]
    parts += ["<h3>Configuration</h3>", f"<pre>{_esc(json.dumps(judge.config, indent=2, sort_keys=True))}</pre>"]
    if judge.template:
        parts.append("<h3>Prompt template</h3>")
        for key, value in judge.template.items():
            if key == "id":  # already in the facts above
                continue
            text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
            parts.append(f"<h4>{_esc(key)}</h4><pre>{_esc(text)}</pre>")
    return "\n".join(parts)


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _setting(value: Any) -> str:
    """A grading record's value as text: lists and mappings spelled out, never as Python literals."""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_number(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(map(_number, value))
    return _number(value)


GRADING_SETTINGS = (
    "method",
    "quantiles",
    "per_topic",
    "ties",
    "labels",
    "map",
    "score_from",
    "score",
    "n_scores",
    "topics",
    "judge_run_id",
)


def grading_section(grading: dict[str, Any], per_row: int | None = None) -> str:
    """The grading record: a sentence, its settings as a small table, and per scope (topic, or `*` for
    all scores) the cut points and the lowest score that received each grade, as a compact grid of
    ``per_row`` topics a row (default: 2 with the lowest scores, 3 without, so that a row of DL19's
    four-decimal scores fits the page's 1100 px and the page is not cut off at 1400 px)."""
    sample = f" The judge run covers a {describe_sample(grading['sample'])}." if grading.get("sample") else ""
    sentence = f"Graded {grading.get('n_scores', '?')} scores by {grading_rule(grading)}.{sample}"
    settings = [[key, _setting(grading[key])] for key in GRADING_SETTINGS if grading.get(key) is not None]
    parts = ["<h2>Grading</h2>", f"<p>{_esc(sentence)}</p>", html_table(None, settings, css="compact")]
    if grading.get("warnings"):
        parts.append("<ul class=warnings>" + "".join(f"<li>{_esc(w)}</li>" for w in grading["warnings"]) + "</ul>")
    thresholds = grading.get("thresholds") or {}
    lowest = grading.get("lowest_score_per_grade") or {}
    per_row = per_row or (2 if lowest else 3)
    scopes = list(dict.fromkeys([*thresholds, *lowest]))
    if scopes:
        cut_label = f"cut points (q {_setting(grading['quantiles'])})" if grading.get("quantiles") else "cut points"
        columns = ["topic", cut_label] + (["lowest score per grade"] if lowest else [])
        header = columns * min(per_row, len(scopes))
        cells: list[Cell] = []
        for scope in scopes:
            shown = "all scores" if scope == "*" else scope  # the global scope's key in the record
            cells += [Cell(shown), Cell(_setting(thresholds.get(scope, [])), " class=n")]
            cells += [Cell(_setting(lowest.get(scope, {})), " class=n")] if lowest else []
        width = len(columns) * per_row
        rows: list[list[Any]] = [list(cells[i : i + width]) for i in range(0, len(cells), width)]
        parts.append(f"<h3>Per topic ({len(scopes)})</h3>" if grading.get("per_topic") else "<h3>Over all scores</h3>")
        parts.append(html_table(header, rows, css="compact"))
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
    return (
        f"<details><summary>Runs by {_esc(measure)} ({len(rows)})</summary>"
        + html_table(header, rows, text_columns=2, css="compact")
        + "</details>"
    )


def render_html(result: Audit, judge: JudgeSummary | None = None, provenance: Provenance | None = None) -> str:
    title = f"Audit of {result.model_name} against {result.reference_name}"
    figure = Figures()
    parts = [
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width'>"
        f"<title>{_esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        summary_box(result, judge),
        _systems_section(result, figure),
        _labels_section(result, figure),
        _scores_section(result, judge, figure),
        _bias_section(result, figure),
        _judge_section(judge) if judge else "",
        probes_section_html(list(judge.probes), judge.judge_run_id) if judge and judge.probes else "",
        grading_section(judge.grading) if judge and judge.grading else "",
    ]
    if provenance is not None:
        parts.append(
            f"<footer>qrelkit {_esc(provenance.version)} · {_esc(provenance.created)} · "
            f"<code data-summary=command>{_esc(provenance.command)}</code></footer>"
        )
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)


def write_report(result: Audit, path: str | Path, judge: JudgeSummary | None = None, provenance: Provenance | None = None) -> Path:
    """Write the page to ``path`` (an .html file; its folder is made) and return it."""
    from qrelkit.io.files import write_atomically

    page = render_html(result, judge, provenance)
    return write_atomically(path, lambda temporary: temporary.write_text(page, encoding="utf-8"))
