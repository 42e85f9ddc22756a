"""Tables as files a notebook, a spreadsheet or another toolkit reads: Parquet, CSV and JSON Lines,
chosen by the file's suffix."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from qrelkit.errors import QrelkitError

TABLE_SUFFIXES = (".parquet", ".csv", ".jsonl")


def _json_value(value: object) -> str:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


# A spreadsheet opening a CSV runs a cell that starts with one of these as a formula
# (`=HYPERLINK(...)` sends data away when clicked, `=cmd|...` has run programs). OWASP's rule.
FORMULA_START = r"^[=+\-@\t\r]"


def formula_safe(table: pa.Table) -> pa.Table:
    """The table with every text cell that starts a formula prefixed by an apostrophe (spreadsheets
    then show it as the text it is); numbers and other columns as they are."""
    import pyarrow.compute as pc

    columns = []
    for column in table.columns:
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            starts = pc.fill_null(pc.match_substring_regex(column, FORMULA_START), False)
            column = pc.if_else(starts, pc.binary_join_element_wise("'", column, ""), column)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=table.schema)


def write_csv_batches(reader: pa.RecordBatchReader, path: str | Path, *, progress: Any = None) -> int:
    """Write the batches of ``reader`` to ``path`` as CSV, a batch at a time: a header, RFC 4180
    quoting (Arrow's writer), and the text cells that would start a spreadsheet formula neutralised
    first (`formula_safe`; Arrow's writer and DuckDB's COPY know nothing of spreadsheets).
    ``progress(rows)`` hears the rows written after each batch. Returns the rows written."""
    import pyarrow.csv as pacsv

    rows = 0
    with pacsv.CSVWriter(str(path), reader.schema) as writer:
        for batch in reader:
            writer.write_table(formula_safe(pa.Table.from_batches([batch], schema=reader.schema)))
            rows += batch.num_rows
            if progress is not None:
                progress(rows)
    return rows


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
    """Write ``table`` as Parquet, CSV (a header, RFC 4180 quoting, text that would start a formula
    prefixed by ') or JSON Lines (one object per row, nulls as null, timestamps in ISO 8601), by
    the suffix of ``path``."""
    path = Path(path)
    suffix = table_format(path)
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    elif suffix == ".csv":
        write_csv_batches(table.to_reader(), path)
    else:
        with path.open("w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row, ensure_ascii=False, default=_json_value) + "\n" for row in table.to_pylist())
    return path
