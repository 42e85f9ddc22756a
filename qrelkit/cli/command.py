"""The one command builder: a typer command derived from a request class.

Every option of a command is a field of its request (`qrelkit.commands.fields.option`: flag, help,
default); this module reads those declarations and gives typer a signature made of them, plus
`--db` where the use case reads a database and `--config FILE.yaml` (whose keys are the fields).
The command it makes builds the request from what click parsed, runs it (`execute`) and hands the
result to the command's ``show``; nothing is declared twice and nothing is validated here.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from qrelkit.cli.base import DEFAULT_DB, ConfigOption, command_line, err, show
from qrelkit.commands.fields import PRESENTATION, Request, cli_default, cli_type, declared

DB_HELP = "The DuckDB database file (env QRELKIT_DB; default qrelkit.duckdb)."
DB_HELP_OPTIONAL = "The database of the judge runs and qrels sets (env QRELKIT_DB)."


def parameters(request_cls: type[Request]) -> list[inspect.Parameter]:
    """The typer parameters of a request class's fields: arguments first, then the fields the Python
    function takes by position (what the command is about: `--judge`, `--reference-qrels`, `--runs`),
    then the others in the class's order (its own before those it inherits: a `JobRequest`'s), and
    last how it prints (`--format`, `--json`, `--verbose`)."""
    hints = typing.get_type_hints(request_cls)
    found = []
    for field, flag in declared(request_cls):
        decls = [f"{flag.flag}/{flag.secondary}"] if flag.secondary else [flag.flag, *([flag.short] if flag.short else [])]
        option = typer.Option(*decls, help=flag.help, envvar=flag.envvar, min=flag.min)
        kind = typer.Argument(help=flag.help, metavar=flag.flag) if flag.argument else option
        default = cli_default(field)
        default = inspect.Parameter.empty if default is dataclasses.MISSING else default
        found.append(
            inspect.Parameter(
                field.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[cli_type(flag, hints[field.name]), kind]
            )
        )
    leading, own = request_cls.positional, vars(request_cls).get("__annotations__", {})

    def place(parameter: inspect.Parameter) -> tuple[bool, bool, int, bool]:
        argument = isinstance(typing.get_args(parameter.annotation)[1], typer.models.ArgumentInfo)
        at = leading.index(parameter.name) if parameter.name in leading else len(leading)
        return parameter.name in PRESENTATION, not argument, at, parameter.name not in own

    return sorted(found, key=place)


def help_text(request_cls: type) -> str:
    """The request's docstring as the command's help, without its leading "`qrelkit NAME`: "."""
    text = inspect.cleandoc(request_cls.__doc__ or "")
    text = re.sub(r"^`qrelkit [^`]+`(?: \([^)]*\))?: ", "", text)
    return text[:1].upper() + text[1:]


def _progress_for(request: Any) -> Callable[..., Any]:
    """The command line's progress reports: a bar on a terminal, plain lines elsewhere, none with
    --quiet, --json or --dry-run."""
    quiet = request.output_format == "json" or any(getattr(request, name, False) for name in ("quiet", "dry_run"))

    def factory(description: str, unit: str = "pairs") -> Any:
        from qrelkit.report.progress import progress_output

        return progress_output(description, console=err, enabled=not quiet, unit=unit)

    factory.enabled = not quiet  # type: ignore[attr-defined]
    return factory


def build(
    group: typer.Typer,
    name: str | None,
    request_cls: type[Request],
    *,
    fixed: dict[str, Any] | None = None,
    failure: Callable[[BaseException], None] | None = None,
) -> Callable[..., None]:
    """Register command ``name`` of ``group`` (None: the group's own default command) made from
    ``request_cls``: its options are the class's fields; ``fixed``: fields the command line sets
    itself (a Python-only choice, e.g. that `grade` stores its set); ``failure``: what to print when
    the use case fails, before the error ends the command. What it prints is the result's document
    (``request_cls.document``) in the format asked for."""
    params = parameters(request_cls)
    if request_cls.uses_db:
        db_default = getattr(request_cls, "db_default", DEFAULT_DB)
        info = typer.Option("--db", envvar="QRELKIT_DB", help=DB_HELP if db_default is not None else DB_HELP_OPTIONAL)
        db_type = Path | None if db_default is None else Path
        params.append(inspect.Parameter("db", inspect.Parameter.KEYWORD_ONLY, default=db_default, annotation=Annotated[db_type, info]))
    params.append(inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ConfigOption))

    def command(ctx: typer.Context, **values: Any) -> None:
        if name is None and ctx.invoked_subcommand is not None:
            return
        db, _ = values.pop("db", None), values.pop("config", None)
        request = request_cls(**values, **(fixed or {}))
        from qrelkit.commands.workspace import execute

        try:
            result = execute(request, db, progress=_progress_for(request), command=command_line(ctx))
        except BaseException as exc:
            if failure is not None:
                failure(exc)
            raise
        module, function = request_cls.document.split(":")  # the function that makes the result's document
        show(getattr(importlib.import_module(module), function)(result, request), request.output_format, verbose=request.verbose)

    context = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    command.__signature__ = inspect.Signature([context, *params])  # type: ignore[attr-defined]
    command.__doc__ = help_text(request_cls)
    command.request = request_cls  # type: ignore[attr-defined]  # what the command is made of (tests compare its --help)
    command.__name__ = f"{name or group.info.name}_command".replace(" ", "_").replace("-", "_")
    if name is None:
        group.callback(invoke_without_command=True)(command)
    else:
        group.command(name)(command)
    return command
