"""The `qrelkit` command line: typer wiring only. Each command parses its options, calls one
function of `qrelkit.commands`, and prints what it returns (tables from `qrelkit.report`)."""

from qrelkit.cli import assess, audit, batches, bundles, compare, data, judging, probe, resample  # noqa: F401  (each registers its commands on `app`)
from qrelkit.cli.base import app, main, script

__all__ = ["app", "main", "script"]
