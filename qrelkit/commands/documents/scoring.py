"""Documents of `qrelkit fd` (Fréchet distance of each run's retrieved items to the relevant ones)
and `qrelkit nrg` (Normalized Residual Gain)."""

from __future__ import annotations

from typing import Any

from qrelkit.report.document import Document, Lines, Table, notes, warnings


def fd(report: Any, request: Any) -> Document:
    """A row per run, best (lowest FD) first by the first cut-off; FD and its interval per cut-off."""
    s = report.settings
    sparse = f", at most {s.max_rel} per query (seed {s.seed})" if s.max_rel else ""
    title = (
        f"{'/'.join(report.labels)}: {report.embedder}, d={report.d}; relevant = grade >= {report.rel_level}{sparse}: "
        f"n_rel={report.n_rel} over {len(report.qids)} queries (covariance rank {report.rel_rank})"
    )
    header = ["run"]
    for label in report.labels:
        header += [f"n_ret@{label.rsplit('@', 1)[1]}", label]
        header += [f"{label} 95% {report.interval} CI ({s.resamples} resamples)"] if s.resamples else []
    first = report.labels[0]
    ordered = sorted(report.runs, key=lambda r: (report.runs[r][first].value is None, report.runs[r][first].value or 0.0))
    rows = []
    deficient = False
    for run in ordered:
        cells: list[Any] = [run]
        for label in report.labels:
            found = report.runs[run][label]
            deficient |= bool(found.result and found.result.rank_deficient)
            cells += [found.n_ret, found.value]
            if s.resamples:
                b = found.bootstrap
                cells.append(None if b is None else f"[{b.low:.4f}, {b.high:.4f}]" + ("*" if b.note else ""))
        rows.append(cells)
    reasons = sorted({f.reason for by_label in report.runs.values() for f in by_label.values() if f.reason})
    said = ["lower is better; '–': " + ("; ".join(reasons) if reasons else "fewer than 2 retrieved items")]
    if any(f.bootstrap and f.bootstrap.note for by_label in report.runs.values() for f in by_label.values()):
        said.append("*: an interval with a note (printed as a warning)")
    if deficient or report.rel_rank < report.d:
        said.append(
            f"some covariances are rank-deficient (rank < d={report.d}: fewer items than dimensions, or embeddings "
            "confined to a subspace); FD is still exact"
        )
    best = ordered[0] if ordered and report.runs[ordered[0]][first].value is not None else None
    lead = [f"{len(report.runs)} runs by {first} ({report.embedder}, n_rel {report.n_rel} over {len(report.qids)} queries)."]
    if best is not None:
        value = report.runs[best][first].value
        lead = [f"{best} is nearest the relevant items by {first}: {value:.4f} ({report.embedder}, d={report.d}, lower is better)."]
    files = [p for p in (request.plot, request.plot_metric) if p is not None]
    embedded = [report.embedding["sentence"]] if getattr(report, "embedding", None) else []
    return Document(
        lead=lead,
        blocks=[Table(title, header, rows, name="fd")],
        notes=warnings(report.warnings()) + notes(said),
        data=report.to_dict(),
        files=files,
        said=embedded,
    )


def nrg(outcome: Any, request: Any) -> Document:
    """NRG and its base metric per run, best first by the base metric; each query's values with --per-query."""
    result, groups, extra = outcome.result, outcome.groups, outcome.extra
    means = result.means()
    header = ["run", *(["group"] if groups else []), result.config.base_label, "NRG", "priors", *extra]
    rows = [
        [
            run,
            *([groups[run]] if groups else []),
            means[run]["base"],
            means[run]["nrg"],
            len(result.priors[run]),
            *(extra[m][run] for m in extra),
        ]
        for run in sorted(result.runs, key=lambda r: -means[r]["base"])
    ]
    title = f"{result.config.label}, prior {outcome.prior}: mean over {len(result.queries)} queries of the qrels"
    blocks: list[Any] = [Table(title, header, rows, text_columns=2 if groups else 1, name="nrg")]
    if request.per_query:
        lines = [
            f"{run}\t{qid}\t{result.base[i, j]:.4f}\t{result.nrg[i, j]:.4f}"
            for i, run in enumerate(result.runs)
            for j, qid in enumerate(result.queries)
        ]
        blocks.append(Lines(lines, f"run\tquery\t{result.config.base_label}\tNRG"))
    top = max(result.runs, key=lambda r: means[r]["nrg"]) if result.runs else None
    lead = (
        [f"{top} gains most beyond its prior runs: NRG {means[top]['nrg']:.4f} ({result.config.label}, prior {outcome.prior})."]
        if top
        else []
    )
    files = [request.plot] if request.plot else []
    return Document(lead=lead, blocks=blocks, data=outcome.to_dict(request.per_query), files=files)
