"""`qrelkit fd`: resolve qrels, runs and documents (files or a database), embed exactly the
documents FD@k needs (through the store's cache), then score the runs (`evaluate.fd_runs`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from qrelkit.commands.requests import EmbedderRef, FDRequest, QrelsRef, RunsRef
from qrelkit.commands.workspace import Workspace
from qrelkit.embed.cache import embed_with_cache
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.bootstrap import check_method, check_resamples
from qrelkit.evaluate.fd.runs import FD_DEFAULT_METHOD, FDReport, FDSettings, check_vectors, fd_of_runs, selected_docids
from qrelkit.evaluate.sparsify import check_keep
from qrelkit.io import Document, Qrels, read_documents


def load_embedder(name: str, backend: str = "onnx", *, batch_size: int = 64, device: str = "cpu", progress: bool = False):
    """A text embedder name (see `load_text_embedder`), or `open_clip:MODEL[:PRETRAINED]` for images."""
    from qrelkit.embed.image import load_image_embedder, parse_image_embedder_name

    image = parse_image_embedder_name(name)
    if image is not None:
        return load_image_embedder(image[0], image[1], device=device)
    from qrelkit.embed import load_text_embedder

    return load_text_embedder(name, backend, batch_size=batch_size, device=device, progress=progress)


def document_vectors(embedder, documents: Mapping[str, Document], docids: Iterable[str], store=None) -> dict[str, np.ndarray]:
    """docid -> vector for ``docids``: text through a text embedder, images through an image one."""
    docids = sorted(set(docids))
    wanted = [documents[d] for d in docids]
    if getattr(embedder, "modality", "text") == "image":
        not_images = [d.docid for d in wanted if d.image is None]
        if not_images:
            raise QrelkitError(f"{len(not_images)} document(s) have no image for the image embedder, e.g. {not_images[0]!r}")
        items = {d.docid: str(d.image_path) for d in wanted}
        hashes = {d.docid: d.content_hash() or f"path:{d.image_path}" for d in wanted}
        return embed_with_cache(store, embedder, "document", items, content_hashes=hashes)
    not_texts = [d.docid for d in wanted if d.text is None]
    if not_texts:
        raise QrelkitError(
            f"{len(not_texts)} document(s) are images, e.g. {not_texts[0]!r}: use an image embedder (--embedder open_clip:MODEL:WEIGHTS)"
        )
    return embed_with_cache(store, embedder, "document", {d.docid: d.text for d in wanted if d.text is not None})


def _documents(docs: Path | None, workspace: Workspace, docids: set[str], image_root: Path | None) -> tuple[dict[str, Document], str]:
    if docs is not None:
        return {d.docid: d for d in read_documents(docs, image_root=image_root)}, f"documents file {docs}"
    if not workspace.has_db:
        raise QrelkitError("give the documents: --docs FILE (JSONL), or --db with documents loaded")
    return workspace.store.documents(sorted(docids)), f"the documents of {workspace.db}"


def fd_settings(
    ks: list[int] | None,
    *,
    urr: bool,
    max_rel: int | None,
    rel_level: int | None,
    resamples: int | None,
    seed: int,
    interval: str = FD_DEFAULT_METHOD,
    keep: str = "top-grade",
) -> FDSettings:
    """The command line's FD options (cut-offs default 10, resamples default 1000), checked before anything is read."""
    chosen = 1000 if resamples is None else resamples
    check_resamples(chosen)
    return FDSettings(tuple(ks or [10]), urr, max_rel, rel_level, chosen, seed, check_method(interval), check_keep(keep))


def run(
    request: FDRequest, workspace: Workspace, *, progress: bool = False, bootstrap_progress=None, keep_samples: bool = False
) -> FDReport:
    """Everything `qrelkit fd` does before printing. The vectors are cached in ``request.cache``, by
    default the database itself when there is one; ``plot`` draws the bootstrap intervals of the
    first cut-off, ``plot_metric`` FD at each cut-off against ``metric``."""
    for plot in (request.plot, request.plot_metric):
        if plot is not None:
            files = {"--docs": request.docs, "--cache": request.cache}
            workspace.check_output(plot, force=request.force, refs=(request.qrels, request.runs), files=files)
    qrels = workspace.qrels(request.qrels)
    runs = workspace.runs(request.runs)
    needed = selected_docids(qrels, runs, request.settings)
    all_docids = set().union(*needed.values())
    documents, where = _documents(request.docs, workspace, all_docids, request.image_root)
    check_vectors(needed, documents, where)
    embedder = request.embedder
    model = load_embedder(embedder.name, embedder.backend, batch_size=embedder.batch_size, device=embedder.device, progress=progress)
    cache = request.cache if request.cache is not None else (workspace.db if workspace.has_db else None)
    if cache is not None:
        from qrelkit.storage import Store

        workspace.close()  # the cache is written: no reading connection of this process may hold the file
        with Store(cache) as store:
            vectors = document_vectors(model, documents, all_docids, store)
    else:
        vectors = document_vectors(model, documents, all_docids)
    report = fd_of_runs(
        qrels,
        runs,
        vectors,
        request.settings,
        embedder=model.embedder_id,
        keep_samples=keep_samples,
        progress=bootstrap_progress,
        workers=request.workers,
    )
    if request.plot is not None or request.plot_metric is not None:
        _write_plots(report, qrels, runs, request.plot, request.plot_metric, request.metric)
    return report


def run_fd(
    *,
    qrels: Any,
    runs: Any,
    embedder: str,
    settings: FDSettings,
    db: Path | None = None,
    judge_run: str | None = None,
    backend: str = "onnx",
    batch_size: int = 64,
    progress: bool = False,
    keep_samples: bool = False,
    bootstrap_progress: Callable[[int, int], None] | None = None,
    **options: Any,
) -> FDReport:
    """`qrelkit fd` from option values and ``db``; ``options``: the other fields of `FDRequest`."""
    if (qrels is None) == (judge_run is None):
        raise QrelkitError("give either --qrels (a file or a qrels set in --db) or --judge-run (its graded qrels)")
    request = FDRequest(
        qrels=QrelsRef(judge_run=judge_run) if judge_run is not None else QrelsRef.of(qrels),
        runs=RunsRef.of(runs),
        embedder=EmbedderRef(embedder, backend, batch_size),
        settings=settings,
        **options,
    )
    with Workspace(db, on_duplicate=request.on_duplicate) as workspace:
        return run(request, workspace, progress=progress, bootstrap_progress=bootstrap_progress, keep_samples=keep_samples)


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
        panels = [(f"{label}{sparse}", report.values(label)) for label in report.labels]
        plot_fd_vs_metric(panels, values, metric, plot_metric, y_label="FD (lower is better)")
