"""Tables as files a notebook, a spreadsheet or another toolkit reads: Parquet, CSV and JSON Lines,
chosen by the file's suffix."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa

from qrelkit.errors import QrelkitError

TABLE_SUFFIXES = (".parquet", ".csv", ".jsonl")


def _json_value(value: object) -> str:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def table_format(path: str | Path) -> str:
    """The format a table written to ``path`` takes, by its suffix: ".parquet", ".csv" or ".jsonl"
    (a clear error for any other suffix, or a folder that is not there)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise QrelkitError(f"{path}: write .parquet, .csv or .jsonl (the suffix chooses the format)")
    if not path.parent.is_dir():
        raise QrelkitError(f"{path}: the folder {path.parent} does not exist")
    return suffix


def write_table(table: pa.Table, path: str | Path) -> Path:
    """Write ``table`` as Parquet, CSV (a header, RFC 4180 quoting) or JSON Lines (one object per
    row, nulls as null, timestamps in ISO 8601), by the suffix of ``path``."""
    path = Path(path)
    suffix = table_format(path)
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    elif suffix == ".csv":
        import pyarrow.csv as pacsv

        pacsv.write_csv(table, path)
    else:
        with path.open("w", encoding="utf-8") as handle:
            for row in table.to_pylist():
                handle.write(json.dumps(row, ensure_ascii=False, default=_json_value) + "\n")
    return path
