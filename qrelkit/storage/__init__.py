"""The DuckDB store: schema, migrations, bulk Arrow reads and writes. Knows nothing of models."""

from qrelkit.storage.schema import SCHEMA_VERSION
from qrelkit.storage.store import LoadResult, Store

__all__ = ["SCHEMA_VERSION", "LoadResult", "Store"]
