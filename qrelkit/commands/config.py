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


def config_defaults(path: str | Path, parameters: Sequence[Any]) -> dict[str, Any]:
    """{option's parameter name: value} from ``path``; ``parameters``: the command's (each with a
    ``name``, its flags ``opts`` and whether it is ``multiple``: a single value is then a list of one)."""
    from qrelkit.io.structured import read_yaml

    options: Mapping[str, Sequence[str]] = {p.name: list(p.opts) for p in parameters if p.name}
    multiple = {p.name for p in parameters if getattr(p, "multiple", False)}
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
        if name in multiple and not isinstance(value, list):
            value = [value]
        values[name] = [str(v) for v in value] if isinstance(value, list) else value
    return values
