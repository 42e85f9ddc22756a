"""One declaration per option: a request's field carries its flag, its help and its default.

A use case's request is a frozen dataclass whose fields are declared with :func:`option`; from that
one declaration come the command line's option (`qrelkit.cli.command` builds the typer command from
the class), the `--config FILE.yaml` key (the field's name, or its flag) and the Python function's
parameter (`qrelkit.api` takes the class's signature). A field's ``parse`` turns what a user gives
(a flag's string, a config value, a Python object) into the typed value the use case reads, once,
when the request is made: ``GradeMap.parse`` turns ``3:2,2:2`` into a mapping whether it came from
``--map-model`` or from ``qrelkit.agree(..., model_map="3:2,2:2")``.

Nothing here imports the command line's libraries: building a request from Python never loads typer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import MISSING, dataclass
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar, get_args, get_origin

from qrelkit.errors import QrelkitError

SIMPLE = (str, int, float, bool, Path)  # the types click reads as they are


@dataclass(frozen=True)
class Flag:
    """How a field appears on the command line. ``flag``: `--measure` (an option) or the argument's
    name; ``cli``: the type the command line reads (None: the field's own, when it is one click
    reads); ``secondary``: the off switch of a boolean (`--global` for `--per-topic`); ``api``: False
    for a field of the command line alone (how it prints, not what it computes); ``short``: a
    one-letter alias (`-J`), where a reference tool's command line spells the option so."""

    flag: str
    help: str
    cli: Any = None
    parse: Callable[[Any], Any] | None = None
    argument: bool = False
    secondary: str | None = None
    envvar: str | None = None
    min: int | None = None
    api: bool = True
    short: str | None = None


def option(
    flag: str,
    help: str,
    default: Any = MISSING,
    *,
    cli: Any = None,
    parse: Callable[[Any], Any] | None = None,
    argument: bool = False,
    secondary: str | None = None,
    envvar: str | None = None,
    min: int | None = None,
    api: bool = True,
    short: str | None = None,
) -> Any:
    """A request field declared once: its flag, its help, its default and how a given value is read."""
    declared = Flag(flag, help, cli, parse, argument, secondary, envvar, min, api, short)
    if default is MISSING:  # a required field may follow ones with defaults: it is given by name
        return dataclasses.field(kw_only=True, metadata={"flag": declared})
    return dataclasses.field(default=default, metadata={"flag": declared})


FORMATS = ("table", "plain", "tsv", "markdown", "latex", "json")


def _presentation(flag: str, help: str, default: Any) -> Any:
    """A field of how a command prints, declared here once for every request (never the Python API's)."""
    return dataclasses.field(default=default, kw_only=True, metadata={"flag": Flag(flag, help, api=False)})


@dataclass(frozen=True)
class Request:
    """The base of every request: on creation each field's ``parse`` reads its value (a flag's string,
    a config value or a Python object alike), then ``check`` looks at the whole. ``use_case`` names
    the function that answers it and ``document`` the one that describes its result
    (``module:function``, each imported only when it runs); ``positional``: the Python function's
    parameters that may be given by position (``db`` among them where the function takes the
    database first); ``formats``: what `--format` may ask of its document.

    How a command prints is declared here, once for every command: `--format`, `--json` (its
    shorthand) and `--verbose`."""

    output_format: str = _presentation(
        "--format",
        "How to print: table (the terminal's tables; plain text in a pipe or a file), plain (every name and number whole), "
        "tsv, markdown, latex (booktabs) or json; `qrelkit evaluate` also trec.",
        "table",
    )
    as_json: bool = _presentation("--json", "Print JSON (= --format json).", False)
    verbose: bool = _presentation("--verbose", "Also print what the tables fold away (e.g. every pairwise sentence).", False)

    use_case: ClassVar[str]
    document: ClassVar[str]
    positional: ClassVar[tuple[str, ...]] = ()
    uses_db: ClassVar[bool] = True
    formats: ClassVar[tuple[str, ...]] = FORMATS

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            declared = field.metadata.get("flag")
            if declared is not None and declared.parse is not None:
                object.__setattr__(self, field.name, declared.parse(getattr(self, field.name)))
        if self.as_json and self.output_format not in ("table", "json"):
            raise QrelkitError(f"--json is --format json: give one of --json and --format {self.output_format}")
        if self.as_json:
            object.__setattr__(self, "output_format", "json")
        if self.output_format not in self.formats:
            raise QrelkitError(f"--format {self.output_format!r}: choose {', '.join(self.formats[:-1])} or {self.formats[-1]}")
        self.check()

    def check(self) -> None:
        """What no single field can say: fields that go together, or exclude each other."""


PRESENTATION = tuple(field.name for field in dataclasses.fields(Request))


def declared(cls: type) -> Iterator[tuple[dataclasses.Field, Flag]]:
    """(field, its declaration) for every field of ``cls`` that has a flag, in the class's order."""
    for field in dataclasses.fields(cls):
        flag = field.metadata.get("flag")
        if flag is not None:
            yield field, flag


def cli_type(flag: Flag, hint: Any) -> Any:
    """The type click reads for a field: the declared one, or the field's own when click reads it
    (a tuple field is a repeatable option)."""
    if flag.cli is not None:
        return flag.cli
    args = [a for a in get_args(hint) if a is not type(None)]
    if hint in SIMPLE or (len(args) == 1 and args[0] in SIMPLE and type(None) in get_args(hint)):
        return hint
    if get_origin(hint) is tuple and args and args[0] in SIMPLE:
        return list[args[0]] | None  # type: ignore[valid-type]
    raise TypeError(f"{flag.flag}: declare the command line's type (cli=) of a field of type {hint}")


def cli_default(field: dataclasses.Field) -> Any:
    """What click shows and starts from: the field's default when it is a plain value (an enum's
    value), else None (the request's parse makes the typed default from it)."""
    if field.default is MISSING and field.default_factory is MISSING:
        return MISSING
    value = field.default if field.default is not MISSING else None
    if isinstance(value, Enum):
        return value.value
    return value if value is None or isinstance(value, SIMPLE) else None


# -- readers of option values, shared by the requests ---------------------------------------------------


def strings(value: Any) -> tuple[str, ...]:
    """A repeatable option's values: one string, or any sequence of them (paths included), as a tuple."""
    if value is None:
        return ()
    if isinstance(value, str | Path):
        return (str(value),)
    return tuple(str(item) for item in value)


def unique_strings(value: Any) -> tuple[str, ...]:
    """As `strings`, each once, in the order first given."""
    return tuple(dict.fromkeys(strings(value)))


def integers(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    if isinstance(value, int):
        return (value,)
    return tuple(int(item) for item in value)


def paths(value: Any) -> tuple[Path, ...]:
    """A repeatable option's paths (`strings` of them)."""
    return tuple(map(Path, strings(value)))


def optional_path(value: Any) -> Path | None:
    return None if value is None else Path(value)
