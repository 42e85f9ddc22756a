"""`--config FILE.yaml`: a command's options as a YAML mapping, read before the flags (a flag given
on the command line wins over the file). Keys are the options' names, with or without the leading
dashes, `-` or `_` alike (`model-qrels`, `reference_qrels`, `measure`, `map`); a key no option has
is an error naming the file and the key, never ignored."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from qrelkit.errors import InputFormatError


def _key(name: str) -> str:
    return name.strip().lstrip("-").replace("-", "_").lower()


def config_defaults(path: str | Path, parameters: Sequence[Any], context: Any = None) -> dict[str, Any]:
    """{option's parameter name: value} from ``path``; ``parameters``: the command's (each with a
    ``name``, its flags ``opts`` and whether it is ``multiple``: a single value is then a list of one).
    Each value is checked against its option's type (`checked_value`) with ``context`` (click's)."""
    from qrelkit.io.structured import read_yaml

    options: Mapping[str, Sequence[str]] = {p.name: list(p.opts) for p in parameters if p.name}
    by_name = {p.name: p for p in parameters if p.name}
    data = read_yaml(path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputFormatError.single(path, 1, f"expected a mapping of option names to values, found {type(data).__name__}")
    by_key = {_key(flag): name for name, flags in options.items() for flag in [name, *flags]}
    values: dict[str, Any] = {}
    for key, value in data.items():
        name = by_key.get(_key(str(key)))
        if name is None or name == "config":
            known = ", ".join(sorted({_key(f) for flags in options.values() for f in flags if f.startswith("--")} - {"config"}))
            raise InputFormatError.single(path, 0, f"{key!r} is no option of this command (its options: {known})")
        if name in values:
            raise InputFormatError.single(path, 0, f"{key!r} names the option {name!r} given already")
        if getattr(by_name[name], "multiple", False) and not isinstance(value, list):
            value = [value]
        values[name] = checked_value(path, str(key), value, by_name[name], context)
    return values


def _kind(parameter: Any) -> str:
    """What an option takes: "flag", "integer", "number", "path" or "text" (by its type's name, which
    click and typer's own copy of it spell alike enough: int, integer range, float, path...)."""
    name = str(getattr(getattr(parameter, "type", None), "name", "text")).lower()
    if getattr(parameter, "is_flag", False) or "bool" in name:
        return "flag"
    return "integer" if "int" in name else "number" if "float" in name else "path" if "path" in name else "text"


_SHOWN = {"flag": "true or false", "integer": "a whole number", "number": "a number", "path": "a path", "text": "text"}


def _scalar(value: Any, kind: str) -> Any:
    """A single YAML value as an option of ``kind`` takes it; ValueError when it is of the wrong kind
    (a mapping or list, true for a number or a path, 1.5 for a whole number)."""
    if isinstance(value, dict | list) or value is None:
        raise ValueError
    if kind == "flag":
        if not isinstance(value, bool):
            raise ValueError
        return value
    if isinstance(value, bool):
        raise ValueError  # true is no number, path or name
    if kind == "integer" and isinstance(value, float) and not value.is_integer():
        raise ValueError
    return str(value) if isinstance(value, int | float) and kind in ("path", "text") else value


def checked_value(path: str | Path, key: str, value: Any, parameter: Any, context: Any) -> Any:
    """``value`` when it is of the kind its option takes (one value, or a list of them for a
    repeatable option), converted as the option converts a flag's text; an InputFormatError naming
    the file and the key otherwise (never a traceback from deep in the option parser)."""
    if value is None:
        return None
    multiple, kind = bool(getattr(parameter, "multiple", False)), _kind(parameter)
    try:
        if multiple:  # a list: config_defaults made a single value one
            value = [_scalar(item, kind) for item in value]
        else:
            value = _scalar(value, kind)
        if context is not None:
            parameter.type_cast_value(context, value)
    except Exception:  # noqa: BLE001 - click's BadParameter, or a TypeError/ValueError of a converter
        shown = f"a list of {_SHOWN[kind]}" if multiple else _SHOWN[kind]
        raise InputFormatError.single(path, 0, f"{key}: {value!r} is not {shown}") from None
    return value
