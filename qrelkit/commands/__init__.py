"""The use cases the command line calls: resolve names and files, open the store, call the layers, return results."""

from __future__ import annotations


def database_failure(exc: BaseException) -> tuple[str, int] | None:
    """(message, exit code) for a DuckDB error of the file or the machine that reached the command
    line outside a transaction (a read): a damaged database is bad input (2), an I/O failure the
    machine's (3); None for any other error (a bug, whose traceback is what gets it fixed). DuckDB
    is not imported to tell."""
    if not any(cls.__module__.split(".")[0] in ("duckdb", "_duckdb") for cls in type(exc).__mro__):
        return None
    from qrelkit.storage.store import damaged_file, machine_failure

    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if damaged_file(exc):
        return f"the database is damaged ({first}); restore it from a copy", 2
    if machine_failure(exc):
        return f"the database could not be read or written: {first}", 3
    return None
