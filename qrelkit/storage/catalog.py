"""What a database file may hold before qrelkit reads from it: base tables of its own schema, nothing
else. A database file is data, never code.

Researchers share databases (a colleague's audit, a paper's artifact), and DuckDB can keep code in
one: a view runs its query whenever it is read (a view over `read_csv('~/.ssh/id_rsa')` standing
in for `topics` would put that file into prompts sent to a paid model), a macro can stand in for a
built-in function of the same name, a default or generated column computes as rows are written or
read. So before anything is read, the catalog is checked: every object is a table in the main
schema, its name and columns (name, type, default) are those of the schema version the file
records. Anything else is refused by name, before any row is read. (The same file's schema
version is read from `meta` only once `meta` is known to be a table.)
"""

from __future__ import annotations

from functools import cache
from typing import Any

from qrelkit.errors import StoreError
from qrelkit.storage.schema import CURRENT_TABLES, MIGRATIONS, SCHEMA_VERSION

# Objects other than the main schema's base tables, by kind. duckdb_functions() lists a file's
# macros; it is the slow part (it walks every built-in function: about 10 ms).
_OTHER_OBJECTS = """
SELECT 'a view' AS kind, view_name AS name FROM duckdb_views() WHERE database_name = $db AND NOT internal
UNION ALL SELECT 'a macro', function_name FROM duckdb_functions() WHERE database_name = $db AND NOT internal
UNION ALL SELECT 'a sequence', sequence_name FROM duckdb_sequences() WHERE database_name = $db
UNION ALL SELECT 'a type', type_name FROM duckdb_types() WHERE database_name = $db AND NOT internal
UNION ALL SELECT 'an index', index_name FROM duckdb_indexes() WHERE database_name = $db
UNION ALL SELECT 'a schema', schema_name FROM duckdb_schemas() WHERE database_name = $db AND schema_name <> 'main'
UNION ALL SELECT 'a table outside the main schema', schema_name || '.' || table_name FROM duckdb_tables()
    WHERE database_name = $db AND schema_name <> 'main'
ORDER BY 1, 2
"""
_COLUMNS = """
SELECT table_name, column_name, data_type, column_default, is_generated FROM duckdb_columns()
WHERE database_name = $db AND schema_name = 'main' ORDER BY table_name, column_index
"""


def describe_tables(con: Any, database: str) -> dict[str, tuple[str, ...]]:
    """table -> its columns in order, each as `name TYPE [DEFAULT expr] [GENERATED]`."""
    tables: dict[str, list[str]] = {}
    for table, column, data_type, default, generated in con.execute(_COLUMNS, {"db": database}).fetchall():
        spec = f"{column} {data_type}" + (f" DEFAULT {default}" if default is not None else "") + (" GENERATED" if generated else "")
        tables.setdefault(table, []).append(spec)
    return {table: tuple(columns) for table, columns in tables.items()}


def tables_of_version(version: int) -> dict[str, tuple[str, ...]]:
    """The tables (as `describe_tables` shows them) of a database at schema ``version``: the current
    one as written down in `schema.CURRENT_TABLES` (checked against the migrations by a test), an
    earlier one from its migrations (only an upgrade needs it)."""
    return CURRENT_TABLES if version == SCHEMA_VERSION else migrated_tables(version)


@cache
def migrated_tables(version: int) -> dict[str, tuple[str, ...]]:
    """The tables the first ``version`` migrations make, run on an empty database in memory (about
    0.1 s in a fresh process: too slow for every open, hence `CURRENT_TABLES`)."""
    import duckdb

    con = duckdb.connect(":memory:", config=SAFE_CONFIG)
    try:
        if version > 0:
            con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        for statements in MIGRATIONS[:version]:
            for statement in statements:
                con.execute(statement)
        return describe_tables(con, "memory")
    finally:
        con.close()


# DuckDB would otherwise fetch and load an extension a file seems to need (an SQLite file given as
# a database makes it download `sqlite_scanner`): nothing is installed or loaded on a file's behalf.
SAFE_CONFIG: dict[str, str | bool | int | float | list[str]] = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


def refuse_code(con: Any, database: str, shown: str) -> None:
    """StoreError naming the first objects of the file that are not base tables of the main schema."""
    found = con.execute(_OTHER_OBJECTS, {"db": database}).fetchall()
    if found:
        listed = ", ".join(f"{kind} {name!r}" for kind, name in found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        raise StoreError(
            f"database {shown} holds {listed}: a qrelkit database holds only its own tables, and objects that run "
            "queries when read are not opened (a view or macro could read other files); it is refused as it is"
        )


def check_tables(con: Any, database: str, version: int, shown: str) -> None:
    """StoreError naming a table that is not one of the schema ``version``'s, or is but with other columns."""
    expected = tables_of_version(version)
    found = describe_tables(con, database)
    unknown, missing = sorted(set(found) - set(expected)), sorted(set(expected) - set(found))
    if missing and version > 0:
        raise StoreError(
            f"database {shown} lacks the table(s) {', '.join(map(repr, missing[:5]))} of qrelkit's schema version {version}: "
            "it is damaged, or not written by qrelkit"
        )
    if unknown:
        raise StoreError(
            f"database {shown} holds table(s) qrelkit does not write ({', '.join(map(repr, unknown[:5]))}); "
            "a qrelkit database holds only its own tables: it is refused as it is"
        )
    for table, columns in expected.items():
        if table in found and found[table] != columns:
            raise StoreError(
                f"database {shown}: table {table!r} is not as qrelkit writes it at schema version {version} "
                f"(it has columns {', '.join(found[table])}; expected {', '.join(columns)}); it is refused as it is"
            )
