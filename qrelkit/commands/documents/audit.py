"""Documents of an audit: `qrelkit agree` (model qrels against reference qrels) and the page of
`qrelkit report` (the same audit with its figures, the judge run behind it and its grading)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from qrelkit.commands.documents import bracket, ranged
from qrelkit.report.document import Document, Estimate, Figure, Keyed, Note, Paragraph, Section, Stat, Summary, Table, notes, warnings
from qrelkit.report.phrases import describe_qrels, describe_sample, fmt, grading_rule

if TYPE_CHECKING:
    from qrelkit.evaluate.audit import Audit

STATISTICS = {"kendall_tau": "Kendall τ-b", "spearman_rho": "Spearman ρ", "pearson_r": "Pearson r", "tau_ap": "τ_AP"}


def interval_label(result: Audit) -> str:
    """The intervals' heading: "95% jackknife CI", "95% BCa CI, 1000 resamples" (or that there are none)."""
    if not result.resamples:
        return "no intervals: --resamples 0"
    if result.interval == "jackknife":
        return f"{result.level:.0%} jackknife CI"
    halves = "half-samples" if result.interval == "subsampling" else "resamples"
    return f"{result.level:.0%} {result.interval} CI, {result.resamples} {halves}"


def estimate(value: float | None, found: Any, *, key: str | None = None) -> Estimate:
    """`ranged`, named ``key`` on an HTML page and carrying the interval's note (the page's tooltip)."""
    return replace(ranged(value, found), key=key, note=None if found is None else found.note)


def label_rows(result: Audit) -> list[list[Any]]:
    labels = result.labels
    kappa = labels.intervals.get
    pairs: list[Any] = [
        "pairs judged by the model / reference / both",
        f"{labels.model_pairs:,} / {labels.reference_pairs:,} / {labels.shared_pairs:,}",
    ]
    if labels.not_computed is not None:
        return [pairs, ["Cohen's κ, Krippendorff's α", "not computed: " + labels.not_computed]]
    rows = [
        pairs,
        ["exact agreement", labels.exact_agreement],
        ["Cohen's κ", estimate(labels.cohen_kappa, kappa("cohen_kappa"))],
        ["Cohen's κ, linear weights", estimate(labels.cohen_kappa_linear, kappa("cohen_kappa_linear"))],
        ["Cohen's κ, quadratic weights", estimate(labels.cohen_kappa_quadratic, kappa("cohen_kappa_quadratic"))],
        ["Krippendorff's α (ordinal)", labels.krippendorff_alpha_ordinal],
    ]
    if labels.rel_level is not None:
        rows.append([f"Cohen's κ, binary (grade ≥ {labels.rel_level})", estimate(labels.cohen_kappa_binary, kappa("cohen_kappa_binary"))])
    return rows


def labels_table(result: Audit) -> Table:
    return Table(
        f"Label agreement on the shared pairs [{interval_label(result)}]", ["statistic", "value"], label_rows(result), name="labels"
    )


def confusion_table(result: Audit) -> Table:
    labels = result.labels.labels
    rows = [[str(label), *row] for label, row in zip(labels, result.labels.confusion.tolist())]
    return Table("Confusion, reference × model", ["ref \\ model", *(str(label) for label in labels)], rows, name="confusion")


def systems_table(result: Audit) -> Table:
    """A row per statistic, a column per measure: each statistic with its interval."""
    header = ["statistic", *(f"{measure} ({corr.runs} runs)" for measure, corr in result.systems.items())]
    rows = [
        [name, *(estimate(getattr(corr, statistic), corr.intervals.get(statistic)) for corr in result.systems.values())]
        for statistic, name in STATISTICS.items()
    ]
    return Table(f"System rankings [{interval_label(result)}]", header, rows, name="systems")


def bias_tables(result: Audit) -> list[Table]:
    """Relative Δ toward each group, a table per measure: under each qrels, and what the model adds."""
    tables = []
    for measure in result.model_evaluation.measures if result.bias else []:
        rows = []
        for group, by_measure in result.bias.items():
            b = by_measure[measure]
            cells = [_bias(b, side) for side in ("model", "reference", "difference")]
            rows.append([group, f"{len(b.group_runs)}/{b.other_runs}", *cells])
        header = ["group", "runs in/out", "Δ model qrels", "Δ reference", "model − reference"]
        title = f"Relative Δ toward each group, % ({measure}) [{interval_label(result)}]"
        tables.append(Table(title, header, rows, text_columns=2, name=f"bias-{measure}"))
    return tables


def _bias(bias: Any, side: str, key: str | None = None) -> Estimate:
    interval = getattr(bias, f"{side}_ci95")
    low, high = interval if interval else (None, None)
    return Estimate(getattr(bias, side), low, high, 1, 1, mark=side in bias.notes, key=key)


def sources(result: Audit) -> Paragraph:
    """Which qrels the numbers answer for: each side's set, judge run, grading and sample."""
    parts: list[str | Keyed] = []
    for side in ("model", "reference"):
        if side in result.sources:
            parts += [*(["\n"] if parts else []), f"{side} qrels: ", Keyed(f"{side}-qrels", describe_qrels(result.sources[side]))]
    return Paragraph(parts)


def lead(result: Audit) -> list[str]:
    """The answer: how closely the model's qrels rank the systems as the reference's do, and how well
    their labels agree, on what."""
    runs = len(result.model_evaluation.runs)
    taus = [f"{corr.kendall_tau:.3f}{bracket(corr.intervals.get('kendall_tau'))} on {measure}" for measure, corr in result.systems.items()]
    labels = result.labels
    kappa_text = (
        f"Cohen's κ {labels.cohen_kappa:.3f}{bracket(labels.intervals.get('cohen_kappa'))}"
        if labels.not_computed is None
        else "no κ (" + labels.not_computed + ")"
    )
    restriction = result.coverage.sentence()
    return [
        f"{result.model_name} ranks {runs} runs as {result.reference_name} does with Kendall τ-b " + "; ".join(taus) + ".",
        *([restriction] if restriction else []),
        f"Labels: {kappa_text} on {labels.shared_pairs:,} pairs both judged, over the {len(result.queries)} queries judged by both "
        f"({interval_label(result)}).",
    ]


def interval_notes(result: Audit, key: str | None = None) -> list[Note]:
    """The notes behind every '*': an estimate outside its interval is never shown without one."""
    return notes([f"* {note}" for note in result.interval_notes()], key=key)


def agree(result: Audit, request: Any) -> Document:
    """`qrelkit agree`: the answer, which qrels, then labels, confusion, system rankings, bias."""
    blocks: list[Any] = [sources(result), labels_table(result)]
    blocks += [confusion_table(result)] if result.labels.labels else []
    blocks += [systems_table(result), *bias_tables(result)]
    found = warnings(result.warnings, qualifies=True) + interval_notes(result)
    return Document(lead=lead(result), blocks=blocks, notes=found, data=result.to_dict())


# -- the page of `qrelkit report` -------------------------------------------------------------------


def _bias_summary(result: Audit) -> Table:
    """Relative Δ the model qrels add (model − reference), a row per group and a column per measure."""
    measures = result.model_evaluation.measures
    rows = [
        [group, *(_bias(by_measure[measure], "difference", f"delta-{g}-{m}") for m, measure in enumerate(measures))]
        for g, (group, by_measure) in enumerate(result.bias.items())
    ]
    title = "Relative Δ toward each group that the model qrels add (model − reference, %) [95% CI]"
    return Table(title, ["group", *measures], rows, compact=True, name="bias-summary")


def summary(result: Audit, judge: Any) -> Summary:
    """The answer at a glance: κ, τ [CI] per measure, coverage, Relative Δ added, which qrels."""
    labels = result.labels
    maps = _maps_note(result)
    kappa = estimate(labels.cohen_kappa, labels.intervals.get("cohen_kappa"), key="kappa")
    stats = [Stat("Cohen's κ on the shared pairs" + (f" ({maps})" if maps else ""), kappa)]
    if labels.rel_level is not None:
        binary = Estimate(labels.cohen_kappa_binary, key="kappa-binary")
        stats.append(Stat(f"Cohen's κ, both sides cut at grade ≥ {labels.rel_level}", binary))
    stats += [
        Stat(f"Kendall τ-b, {measure} over {corr.runs} runs", estimate(corr.kendall_tau, corr.intervals.get("kendall_tau"), key=f"tau-{i}"))
        for i, (measure, corr) in enumerate(result.systems.items())
    ]
    shared = f"shared pairs (model {labels.model_pairs:,}, reference {labels.reference_pairs:,})"
    stats.append(Stat(shared, Estimate(labels.shared_pairs, key="pairs")))
    stats.append(Stat(f"queries judged by both; {len(result.model_evaluation.runs)} runs", Estimate(len(result.queries), key="queries")))
    blocks: list[Any] = [_bias_summary(result)] if result.bias else []
    coverage = ""
    if judge is not None:
        ok = judge.statuses.get("ok", 0)
        share = f" ({ok / judge.judgments:.1%})" if judge.judgments else ""
        coverage = f"Judge {judge.judge}: {ok:,} of {judge.judgments:,} judgments ok{share}. "
    described = result.interval_description()
    intervals = described[:1].upper() + described[1:] + "."
    if not result.bias:
        intervals += " Relative Δ: no groups given (--group or --groups)."
    blocks += [sources(result), Paragraph(coverage + intervals)]
    restriction = result.coverage.sentence()
    blocks += [Paragraph([Keyed("ranked-on", restriction)])] if restriction else []
    return Summary(stats, blocks)


def _maps_note(result: Audit) -> str:
    sides = (("reference", result.maps.reference), ("model", result.maps.model))
    return "; ".join(f"{side} grades mapped {','.join(f'{k}:{v}' for k, v in m.items())}" for side, m in sides if m)


def _systems_section(result: Audit) -> Section:
    from qrelkit.report.plots.audit import plot_system_scatter

    measures = result.model_evaluation.measures

    def scatter() -> Any:
        return plot_system_scatter(
            result.reference_evaluation.means(),
            result.model_evaluation.means(),
            measures,
            groups=result.groups,
            reference_name=result.reference_name,
            model_name=result.model_name,
        )

    caption = "Each run's mean under the reference (x) and model (y) qrels; dashed: equal scores."
    figure = Figure(caption, scatter, "per-run scatter of reference vs model means", min(1040, 440 * len(measures)))
    note = Paragraph("τ_AP takes the reference ordering as the truth and weighs swaps near the top more.")
    return Section("System ranking", [figure, systems_table(result), note, _runs_section(result)])


def _runs_section(result: Audit) -> Section:
    measure = result.model_evaluation.measures[0]
    model = {run: v[measure] for run, v in result.model_evaluation.means().items()}
    reference = {run: v[measure] for run, v in result.reference_evaluation.means().items()}

    def ranks(means: dict[str, float]) -> dict[str, int]:
        return {run: i for i, run in enumerate(sorted(means, key=lambda r: -means[r]), start=1)}

    model_rank, reference_rank = ranks(model), ranks(reference)
    group_of = {run: name for name, members in result.groups.items() for run in members}
    rows = [
        [run, group_of.get(run, ""), reference[run], reference_rank[run], model[run], model_rank[run]]
        for run in sorted(reference, key=lambda r: reference_rank[r])
    ]
    header = ["run", "group", f"{measure} reference", "rank", f"{measure} model", "rank"]
    return Section(f"Runs by {measure} ({len(rows)})", [Table("", header, rows, text_columns=2, compact=True, name="runs")], folded=True)


def _labels_section(result: Audit) -> Section:
    from qrelkit.report.plots.audit import plot_confusion

    table = Table("", ["statistic", "value"], label_rows(result), name="labels")
    if result.labels.not_computed is not None:  # grades κ cannot compare: no confusion matrix either
        return Section("Label agreement", [table])
    maps = _maps_note(result)
    figure = Figure(
        "Model grades against reference grades on the shared pairs: share of each reference grade and count"
        + (f" ({maps})." if maps else "."),
        lambda: plot_confusion(
            result.labels.confusion, result.labels.labels, reference_name=result.reference_name, model_name=result.model_name
        ),
        "confusion matrix heat map",
        480,
    )
    return Section("Label agreement", [table, figure])


def _scores_section(result: Audit, judge: Any) -> Section:
    """The judge's raw scores per reference grade; without them (qrels from a file), the model's grades."""
    from qrelkit.report.plots.audit import plot_score_cdf

    mapped_model, reference = result.mapped_grades()
    scores = judge.scores if judge else None
    if scores:
        values, xlabel = list(scores), "judge score (raw, before grading)"
        caption = "Cumulative distribution of the judge's raw scores for each reference grade, and overall."
    else:
        values = [(q, d, float(g)) for q, docs in mapped_model.items() for d, g in docs.items()]
        xlabel = "model grade (no raw scores: qrels from a file)"
        caption = "Cumulative distribution of the model's grades for each reference grade (no raw scores: qrels from a file)."

    def cdf() -> Any:
        by_grade: dict[int, list[float]] = {}
        for qid, docid, value in values:
            grade = reference.get(qid, {}).get(docid)
            if grade is not None:
                by_grade.setdefault(grade, []).append(value)
        return plot_score_cdf(
            {f"{result.reference_name} grade {g}": np.array(by_grade[g]) for g in sorted(by_grade)},
            np.array([v for _, _, v in values]),
            xlabel=xlabel,
            title="Judge scores by reference grade" if scores else "Model grades by reference grade",
        )

    return Section("Score distributions", [Figure(caption, cdf, "score CDF per reference grade", 560)])


def _bias_section(result: Audit) -> Section:
    from qrelkit.report.plots.audit import plot_relative_delta

    figure = Figure(
        "Relative Δ toward each group under the reference and the model qrels, 95% intervals; dashed: no bias.",
        lambda: plot_relative_delta(result.bias, reference_name=result.reference_name, model_name=result.model_name),
        "Relative Δ per group under each qrels",
        min(1040, 440 * len(result.model_evaluation.measures)),
    )
    intro = Paragraph(
        "Δ = 2·(M_g − M_o)/(M_g + M_o)·100, M averaged over the runs in and out of the group; positive favours the group. "
        "The last column is the bias the model qrels add over the reference."
    )
    return Section("Relative Δ toward groups", [intro, *bias_tables(result), figure])


def _judge_section(judge: Any) -> Section:
    from qrelkit.report.document import Lines

    statuses = [[status, count, f"{count / judge.judgments:.1%}" if judge.judgments else "–"] for status, count in judge.statuses.items()]
    facts = [
        ["judge run", judge.judge_run_id],
        ["judge", judge.judge],
        ["model", judge.model_id or "–"],
        ["template", judge.template_id or "–"],
        ["judgments", str(judge.judgments)],
        ["ok", str(judge.statuses.get("ok", 0))],
        ["tokens in / out", f"{judge.tokens_in} / {judge.tokens_out}"],
        ["cost", "–" if judge.cost is None else f"{judge.cost:.4f}"],
        ["mean latency (ms)", fmt(judge.mean_latency_ms, 1)],
        ["graded qrels set", judge.qrels_set or "–"],
    ]
    blocks: list[Any] = [
        Table("", None, facts, name="judge"),
        Section("Judgments by status", [Table("", ["status", "judgments", "share"], statuses, text_columns=frozenset({0, 2}))]),
    ]
    if judge.failures:
        rows = [[f.status, f.qid, f.docid, f.answer or "(no answer)", f.error] for f in judge.failures]
        header = ["status", "qid", "docid", "model's answer", "why it failed"]
        failures = Table("", header, rows, text_columns=5, wrap_columns=frozenset({3, 4}), name="failures")
        blocks.append(Section("Failures (a sample), with the model's answer", [failures]))
    blocks.append(Section("Configuration", [Lines(json.dumps(judge.config, indent=2, sort_keys=True).splitlines())]))
    if judge.template:
        parts = [
            Section(key, [Lines((value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)).splitlines())])
            for key, value in judge.template.items()
            if key != "id"  # already in the facts above
        ]
        blocks.append(Section("Prompt template", parts))
    return Section("Judge", blocks)


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


def grading_section(grading: dict[str, Any], per_row: int | None = None) -> Section:
    """The grading record: a sentence, its settings, and per scope (topic, or all scores) the cut
    points and the lowest score that received each grade, ``per_row`` scopes a row (2 with the lowest
    scores, 3 without), so a row of DL19's four-decimal scores fits the page."""
    sample = f" The judge run covers a {describe_sample(grading['sample'])}." if grading.get("sample") else ""
    blocks: list[Any] = [Paragraph(f"Graded {grading.get('n_scores', '?')} scores by {grading_rule(grading)}.{sample}")]
    settings = [[key, _setting(grading[key])] for key in GRADING_SETTINGS if grading.get(key) is not None]
    blocks.append(Table("", None, settings, compact=True, name="grading"))
    blocks += [Paragraph("; ".join(grading["warnings"]))] if grading.get("warnings") else []
    thresholds = grading.get("thresholds") or {}
    lowest = grading.get("lowest_score_per_grade") or {}
    per_row = per_row or (2 if lowest else 3)
    scopes = list(dict.fromkeys([*thresholds, *lowest]))
    if scopes:
        cut_label = f"cut points (q {_setting(grading['quantiles'])})" if grading.get("quantiles") else "cut points"
        columns = ["topic", cut_label] + (["lowest score per grade"] if lowest else [])
        cells: list[str] = []
        for scope in scopes:
            cells += ["all scores" if scope == "*" else scope, _setting(thresholds.get(scope, []))]
            cells += [_setting(lowest.get(scope, {}))] if lowest else []
        width = len(columns) * min(per_row, len(scopes))
        rows = [cells[i : i + width] for i in range(0, len(cells), width)]
        text = frozenset(range(0, width, len(columns)))
        grid = Table("", columns * min(per_row, len(scopes)), rows, text_columns=text, compact=True, name="thresholds")
        blocks.append(Section(f"Per topic ({len(scopes)})" if grading.get("per_topic") else "Over all scores", [grid]))
    return Section("Grading", blocks)


def page(result: Audit, judge: Any, footer: Paragraph | None) -> Document:
    """`qrelkit report`'s page: the answer and the summary box first, then the figures and tables, the
    judge with its failures, its probes and its grading."""
    from qrelkit.commands.documents.probe import probes_section

    blocks: list[Any] = [summary(result, judge), _systems_section(result), _labels_section(result), _scores_section(result, judge)]
    blocks += [_bias_section(result)] if result.bias else []
    blocks += [_judge_section(judge)] if judge else []
    blocks += [probes_section(list(judge.probes), judge.judge_run_id)] if judge and judge.probes else []
    blocks += [grading_section(judge.grading)] if judge and judge.grading else []
    found = warnings(result.warnings, qualifies=True, key="warnings") + [
        Note(n.text, n.kind, True, "interval-notes") for n in interval_notes(result)
    ]
    title = f"Audit of {result.model_name} against {result.reference_name}"
    lead_lines = lead(result)
    if judge is not None and judge.probes:
        from qrelkit.commands.documents.probe import worst_probe

        worst = worst_probe(list(judge.probes))
        lead_lines += [worst] if worst else []
    return Document(lead=lead_lines, blocks=blocks, notes=found, title=title, footer=footer, data=result.to_dict())


def report_written(written: Any, request: Any) -> Document:
    """`qrelkit report`: the page's answer and the notes that qualify it (the page has the rest); the
    path it wrote said on stderr."""
    qualifying = [note for note in written.page.notes if note.qualifies and note.kind == "warning"]
    return Document(lead=list(written.page.lead), notes=qualifying, data=written.to_dict(), files=[written.path])
