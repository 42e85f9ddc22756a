"""Reading and writing the field's file formats. Never touches the database."""

from qrelkit.io.collection import Document, Topic, read_documents, read_topics
from qrelkit.io.lines import file_sha256
from qrelkit.io.trec import (
    OnDuplicate,
    Qrel,
    Qrels,
    Run,
    RunEntry,
    iter_runs,
    list_run_files,
    read_qrels,
    read_run,
    read_runs,
    run_name_from_path,
    write_qrels,
    write_run,
)

__all__ = [
    "Document",
    "OnDuplicate",
    "Qrel",
    "Qrels",
    "Run",
    "RunEntry",
    "Topic",
    "file_sha256",
    "iter_runs",
    "list_run_files",
    "read_documents",
    "read_qrels",
    "read_run",
    "read_runs",
    "read_topics",
    "run_name_from_path",
    "write_qrels",
    "write_run",
]
