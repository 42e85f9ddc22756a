"""Reading and writing the field's file formats. Never touches the database.

Names are imported on first use (PEP 562), so that `from qrelkit.io import OnDuplicate` at
the command line's startup does not load numpy and Arrow.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "Document": "collection",
    "Topic": "collection",
    "read_documents": "collection",
    "read_topics": "collection",
    "file_sha256": "lines",
    "sha256_bytes": "lines",
    "sha256_text": "lines",
    "OnDuplicate": "duplicates",
    "list_run_files": "paths",
    "run_name_from_path": "paths",
    "Qrel": "trec",
    "Qrels": "trec",
    "Run": "trec",
    "RunEntry": "trec",
    "iter_runs": "trec",
    "read_qrels": "trec",
    "read_run": "trec",
    "read_runs": "trec",
    "run_tag": "trec",
    "write_qrels": "trec",
    "write_run": "trec",
}

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
    "run_tag",
    "sha256_bytes",
    "sha256_text",
    "write_qrels",
    "write_run",
]

if TYPE_CHECKING:
    from qrelkit.io.collection import Document, Topic, read_documents, read_topics
    from qrelkit.io.duplicates import OnDuplicate
    from qrelkit.io.lines import file_sha256, sha256_bytes, sha256_text
    from qrelkit.io.paths import list_run_files, run_name_from_path
    from qrelkit.io.trec import (
        Qrel,
        Qrels,
        Run,
        RunEntry,
        iter_runs,
        read_qrels,
        read_run,
        read_runs,
        run_tag,
        write_qrels,
        write_run,
    )


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'qrelkit.io' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"qrelkit.io.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
