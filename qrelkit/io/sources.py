"""Where topics, documents and qrels come from: a file, or an ir_datasets id (`irds:<id>`). The
loaders and the command line take either; this is the one place that tells them apart."""

from __future__ import annotations

from pathlib import Path

from qrelkit.io.collection import Document, Topic, read_documents, read_topics
from qrelkit.io.irds import irds_sha256, read_irds_documents, read_irds_qrels, read_irds_topics
from qrelkit.io.lines import file_sha256
from qrelkit.io.paths import irds_id
from qrelkit.io.trec import OnDuplicate, Qrels, read_qrels, run_name_from_path


def source_sha256(ref: str | Path) -> str:
    """The content hash of a file, or the identity of an ir_datasets id."""
    dataset = irds_id(ref)
    return irds_sha256(dataset) if dataset is not None else file_sha256(ref)


def source_name(ref: str | Path) -> str:
    """A load's default name: the dataset id, or the file name without extension."""
    dataset = irds_id(ref)
    return dataset if dataset is not None else run_name_from_path(ref)


def topics_from(ref: str | Path) -> list[Topic]:
    dataset = irds_id(ref)
    return read_irds_topics(dataset) if dataset is not None else read_topics(ref)


def documents_from(ref: str | Path, *, image_root: str | Path | None = None) -> list[Document]:
    dataset = irds_id(ref)
    return read_irds_documents(dataset) if dataset is not None else read_documents(ref, image_root=image_root)


def qrels_from(ref: str | Path, *, name: str | None = None, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> Qrels:
    dataset = irds_id(ref)
    if dataset is not None:
        return read_irds_qrels(dataset, name=name, on_duplicate=on_duplicate)
    return read_qrels(ref, name=name, on_duplicate=on_duplicate)
