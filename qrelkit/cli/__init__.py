"""The `qrelkit` command line: typer wiring only. Each command builds its request from the flags,
calls its use case and prints the result's document (`qrelkit.cli.commands`)."""

from qrelkit.cli import commands  # noqa: F401  (registers every command on `app`)
from qrelkit.cli.base import app, main, script

__all__ = ["app", "main", "script"]
