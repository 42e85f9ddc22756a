"""Terminal tables (rich) and the rows the HTML report shares with them."""

from __future__ import annotations

import math

from rich import box
from rich.table import Table
from rich.text import Text

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
    if labels.binarize_at is not None:
        rows.append((f"Cohen's κ, binary (grade ≥ {labels.binarize_at})", fmt(labels.cohen_kappa_binary)))
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
        f"{result.model_name} (model) vs {result.reference_name} (reference): {len(result.topics)} topics judged by both, "
        f"{len(result.model_evaluation.runs)} runs",
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
    systems = Table(title=f"System rankings [95% CI, {result.samples} resamples]", title_justify="left", min_width=52)
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
        if s.bootstrap:
            table.add_column(f"{label} 95% ({s.bootstrap} resamples)", justify="right")
    first = report.labels[0]
    ordered = sorted(report.runs, key=lambda r: (report.runs[r][first].value is None, report.runs[r][first].value or 0.0))
    deficient = False
    for run in ordered:
        cells = [run]
        for label in report.labels:
            fd = report.runs[run][label]
            deficient |= bool(fd.result and fd.result.rank_deficient)
            cells += [str(fd.n_ret), "-" if fd.value is None else f"{fd.value:.4f}"]
            if s.bootstrap:
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
