"""`qrelkit fd`: resolve qrels, runs and documents (files or a database), embed exactly the
documents FD@k needs (through the store's cache), then score the runs (`evaluate.fd_runs`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from qrelkit.commands.requests import FDRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.embed.cache import embed_with_cache
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.fd.runs import FDReport, check_vectors, fd_metric_tau, fd_of_runs, selected_docids
from qrelkit.io import Document, Qrels, read_documents
from qrelkit.report.plots import check_plot_path


def document_vectors(
    embedder, documents: Mapping[str, Document], docids: Iterable[str], store=None, *, progress: Any = None, tally: Any = None
) -> dict[str, np.ndarray]:
    """docid -> vector for ``docids``: text through a text embedder, images through an image one;
    ``progress`` and ``tally`` as `embed_with_cache` takes them."""
    docids = sorted(set(docids))
    wanted = [documents[d] for d in docids]
    if getattr(embedder, "modality", "text") == "image":
        not_images = [d.docid for d in wanted if d.image is None]
        if not_images:
            raise QrelkitError(f"{len(not_images)} document(s) have no image for the image embedder, e.g. {not_images[0]!r}")
        items = {d.docid: str(d.image_path) for d in wanted}
        hashes = {d.docid: d.content_hash() or f"path:{d.image_path}" for d in wanted}
        return embed_with_cache(store, embedder, "document", items, content_hashes=hashes, progress=progress, tally=tally)
    not_texts = [d.docid for d in wanted if d.text is None]
    if not_texts:
        raise QrelkitError(
            f"{len(not_texts)} document(s) are images, e.g. {not_texts[0]!r}: use an image embedder (--embedder open_clip:MODEL:WEIGHTS)"
        )
    texts = {d.docid: d.text for d in wanted if d.text is not None}
    return embed_with_cache(store, embedder, "document", texts, progress=progress, tally=tally)


def _documents(docs: Path | None, workspace: Workspace, docids: set[str], image_root: Path | None) -> tuple[dict[str, Document], str]:
    if docs is not None:
        return {d.docid: d for d in read_documents(docs, image_root=image_root)}, f"documents file {docs}"
    if not workspace.has_db:
        raise QrelkitError("give the documents: --docs FILE (JSONL), or --db with documents loaded")
    return workspace.store.documents(sorted(docids)), f"the documents of {workspace.db}"


def run(request: FDRequest, workspace: Workspace) -> FDReport:
    """Everything `qrelkit fd` does before printing. The vectors are cached in ``request.cache``, by
    default the database itself when there is one; ``plot`` draws the bootstrap intervals of the
    first cut-off, ``plot_metric`` FD at each cut-off against ``metric``."""
    for plot in (request.plot, request.plot_metric):
        if plot is not None:
            files = {"--docs": request.docs, "--cache": request.cache}
            check_plot_path(workspace.check_output(plot, force=request.force, refs=(request.qrels, request.runs), files=files))
    qrels = workspace.qrels(request.qrels)
    runs = workspace.runs(request.runs)
    needed = selected_docids(qrels, runs, request.settings)
    all_docids = set().union(*needed.values())
    documents, where = _documents(request.docs, workspace, all_docids, request.image_root)
    check_vectors(needed, documents, where)
    model = request.embedder_ref.load()
    vectors, embedding = embedded(model, documents, all_docids, request.cache, workspace)
    with workspace.progress("FD bootstrap", unit="resamples") as progress:
        report = fd_of_runs(qrels, runs, vectors, request.settings, embedder=model.embedder_id, progress=progress, workers=request.workers)
    report = dataclasses.replace(report, embedding=embedding)
    if request.plot is not None or request.plot_metric is not None:
        _write_plots(report, qrels, runs, request.plot, request.plot_metric, request.metric)
    return report


def embedded(
    model: Any, documents: Mapping[str, Document], docids: set[str], cache: Path | None, workspace: Workspace
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The documents' vectors through the cache (``cache``; else the database; else the cache folder's
    embeddings.duckdb), with progress, and what was reused and what embedded: {reused, embedded,
    failed, cache, sentence}. A cache another process holds is skipped (said), not waited for."""
    from qrelkit.embed.cache import EmbeddingTally
    from qrelkit.errors import DatabaseInUseError
    from qrelkit.io.bundles import cache_root
    from qrelkit.storage import Store

    where = cache or (workspace.db if workspace.has_db else None) or cache_root() / "embeddings.duckdb"
    tally = EmbeddingTally()
    workspace.close()  # the cache is written: no reading connection of this process may hold the file
    with workspace.progress(f"embedding documents ({model.embedder_id})", unit="texts") as progress:
        try:
            where.parent.mkdir(parents=True, exist_ok=True)
            with Store(where) as store:
                vectors = document_vectors(model, documents, docids, store, progress=progress, tally=tally)
            kept = f"cache {where}"
        except DatabaseInUseError:
            vectors = document_vectors(model, documents, docids, progress=progress, tally=tally)
            kept = f"no cache: {where} is in use by another process"
    sentence = f"embeddings: {tally.reused:,} reused, {tally.embedded:,} embedded ({kept})"
    return vectors, {**tally.to_dict(), "cache": str(where), "cached": kept.startswith("cache"), "sentence": sentence}


def _write_plots(report: FDReport, qrels: Qrels, runs, plot: Path | None, plot_metric: Path | None, metric: str) -> None:
    from qrelkit.evaluate import evaluate_runs
    from qrelkit.report.plots.fd import plot_fd_bootstrap, plot_fd_vs_metric

    if plot is not None:
        if not report.settings.resamples:
            raise QrelkitError("--plot draws the bootstrap intervals: give --resamples N (N > 0)")
        plot_fd_bootstrap(report, report.labels[0], plot)
    if plot_metric is not None:
        means = evaluate_runs(qrels, runs, [metric]).means()
        values = {run: means[run][metric] for run in means}
        sparse = f", at most {report.settings.max_rel} relevant per query" if report.settings.max_rel else ""
        panels = [(f"{label}{sparse}", report.values(label), fd_metric_tau(report.values(label), values)) for label in report.labels]
        plot_fd_vs_metric(panels, values, metric, plot_metric, y_label="FD (lower is better)")
