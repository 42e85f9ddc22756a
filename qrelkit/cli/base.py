"""The command-line application's skeleton: the typer apps, the consoles, the options several
commands share, and how errors end (one message, an exit code, never a traceback)."""

from __future__ import annotations

import errno
import logging
import os
import shlex
import sys
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from qrelkit.errors import FatalJobError, QrelkitError, SkippedFilesWarning
from qrelkit.report.text import printable
from qrelkit.version import __version__

app = typer.Typer(
    help="Make relevance judgments with models, and audit them against human qrels.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
load_app = typer.Typer(
    help="Load topics, documents, runs or qrels into the database (idempotent; --replace reloads).", no_args_is_help=True
)
prompts_app = typer.Typer(help="Prompt templates: list the built-ins, render one exactly as a model sees it.", no_args_is_help=True)
export_app = typer.Typer(help="Write what the database holds as files (TREC qrels, judgments).", no_args_is_help=True)
import_app = typer.Typer(help="Bring judgments made elsewhere into the database (scores of any tool).", no_args_is_help=True)
app.add_typer(load_app, name="load")
app.add_typer(prompts_app, name="prompts")
app.add_typer(export_app, name="export")
app.add_typer(import_app, name="import")


class SafeConsole(Console):
    """A console that shows control characters in the text it is given escaped (`qrelkit.report.text`):
    a qid, a topic's text, a model's answer or a provider's error never drive the terminal. Rich's
    own styling is not text it is given, so it is kept."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(printable(text), **kwargs)


out = SafeConsole(soft_wrap=True)
err = SafeConsole(stderr=True, soft_wrap=True)

DEFAULT_DB = Path("qrelkit.duckdb")


def _read_config(ctx: typer.Context, param: Any, value: Path | None) -> Path | None:
    """`--config FILE.yaml` (eager): the file's values become the command's defaults, so a flag given wins."""
    if value is not None:
        from qrelkit.commands.config import config_defaults

        ctx.default_map = {**(ctx.default_map or {}), **config_defaults(value, ctx.command.params, ctx)}
    return value


ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        is_eager=True,
        callback=_read_config,
        help="A YAML file of this command's options (keys: the option names, e.g. model-qrels, runs); flags given win.",
    ),
]


def command_line(ctx: typer.Context) -> str:
    """The command as given, rebuilt from its parsed options (so it reads the same under a test runner)."""
    words = ["qrelkit", ctx.info_name or ""]
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        if not param.opts or value is None or value == param.default or value == []:
            continue
        flag = next((o for o in param.opts if o.startswith("--")), param.opts[0])
        for item in value if isinstance(value, list | tuple) else [value]:
            words += [flag] if isinstance(item, bool) else [flag, str(getattr(item, "value", item))]
    return shlex.join(words)


def show(document: Any, output_format: str = "table", *, verbose: bool = False) -> None:
    """The one way a command prints: ``document`` (`qrelkit.report.document.Document`) in the format
    asked for. stdout holds the document; stderr what the process did (the files written) and, for
    the formats read by programs (JSON, TSV, a document's own such as trec_eval's), its lead and
    warnings; the document's status ends the command (its failure line first)."""
    from qrelkit.report import render

    for line in [*document.said, *(f"wrote {path}" for path in document.files)]:
        err.print(line, highlight=False, markup=False)
    own = getattr(document, "own", {}).get(output_format)
    if output_format in ("json", "tsv") or own is not None:
        for line in document.lead if output_format == "tsv" or own is not None else []:
            err.print(line, highlight=False, markup=False)
        for note in document.notes:
            if note.kind == "warning" or output_format == "tsv":
                err.print(note.line(), highlight=False, markup=False)
    if own is not None:
        for line in own:  # trec_eval's format: plain lines, control characters escaped
            print(printable(line))
    elif output_format == "json":
        print(render.json_text(document), end="")
    elif output_format in render.TEXT_RENDERERS:
        print(render.TEXT_RENDERERS[output_format](document, verbose=verbose), end="")
    elif not out.is_terminal:
        print(render.plain(document, verbose=verbose), end="")
    else:
        for part in render.terminal(document, verbose=verbose):
            out.print(part)
    if document.status:
        if document.failure:
            _fail(document.failure, document.status)
        raise typer.Exit(document.status)


def version_callback(value: bool) -> None:
    if value:
        print(f"qrelkit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Print qrelkit's version and exit.")
    ] = False,
) -> None:
    """Make relevance judgments with models, and audit them against human qrels."""


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001 (warnings' signature)
    """qrelkit's own warnings (files skipped in a folder) as one plain line; others as Python prints
    them, their text escaped too (matplotlib's "Glyph 27 (\x1b) missing" quotes a name's characters)."""
    if issubclass(category, SkippedFilesWarning):
        err.print(Text("warning: ", style="yellow") + Text(printable(str(message))), soft_wrap=True)
        return
    _python_showwarning(printable(str(message)), category, filename, lineno, file, line)


_python_showwarning = warnings.showwarning


class _PrintableFormatter(logging.Formatter):
    """Log lines as Python's last-resort handler prints them (the message alone), control characters
    escaped: a retry warning quotes the provider's error text."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def _log_to_stderr() -> None:
    """Warnings and errors logged by qrelkit and its libraries go to stderr, escaped (unless the
    program that called `main` configured logging itself)."""
    if logging.root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_PrintableFormatter("%(message)s"))
    logging.root.addHandler(handler)


def main() -> None:
    """Exit codes: 0 done; 2 bad input or usage (one message naming the file and line, or the pair);
    3 a job failed (a broken judge, most judgments failed, the database could not be written); 130 interrupted."""
    warnings.showwarning = _show_warning
    _log_to_stderr()
    try:
        app()
    except FatalJobError as exc:
        _fail(str(exc), 3)
    except QrelkitError as exc:
        _fail(str(exc), 2)
    except OSError as exc:  # a file the command writes (or a device it uses): one line, never a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(f"{where}{exc.strerror or exc}", 3 if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO) else 2)
    except Exception as exc:
        from qrelkit.commands import database_failure

        failure = database_failure(exc)
        if failure is None:
            raise  # a bug: its traceback is what gets it fixed
        _fail(*failure)


def _fail(message: str, code: int) -> None:
    err.print(Text("error: ", style="bold red") + Text(printable(message)), soft_wrap=True)
    sys.exit(code)


def script() -> None:
    """The `qrelkit` console script (and `python -m qrelkit.cli`): `main`, then the process ends
    through `_end`, not through the interpreter's own teardown. Native thread pools (Arrow's above
    all, onnxruntime's) destroyed by that teardown abort the process now and then with "terminate
    called without an active exception" after the command has done its work and printed its answer
    (measured: 4 of 30 runs of `evaluate --format trec` on a loaded 2-core machine; apache/arrow
    #34314). Code that calls `main` in-process gets SystemExit as usual."""
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt:
        code = 130
    _end(code)


def _end(code: int) -> None:
    """End the process with ``code`` after what Python's own exit does first (wait for non-daemon
    threads, run atexit handlers: spawned worker pools, temporary folders, logging) and with its
    output flushed, but without the native libraries' static destructors."""
    import atexit
    import threading

    _flush()
    shutdown = getattr(threading, "_shutdown", None)  # joins non-daemon threads, runs their exit hooks
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    _flush()
    os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be said there
            pass
