"""JSON records and YAML files that are text, not traps: a value nested thousands deep, a number
with thousands of digits, `NaN`, a lone UTF-16 surrogate or a NUL character, or a YAML file whose
aliases expand to billions of values each end in one message naming the file and line (and where
in the value), instead of a traceback from the parser, the database or a later write."""

from __future__ import annotations

import difflib
import json
import math
import typing
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from qrelkit.errors import InputFormatError
from qrelkit.io.files import open_regular
from qrelkit.io.limits import limits, size_text

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

# Values visited when checking a parsed document; YAML aliases share objects, so a small file can
# stand for billions of values (and a recursive alias for infinitely many).
MAX_VALUES = 1_000_000
ModelT = TypeVar("ModelT", bound="BaseModel")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def json_value(text: str) -> Any:
    """One JSON text, checked as `value_problem` does; ValueError with a one-line message."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise ValueError(f"invalid JSON: nested more than {limits().max_nesting} levels deep (QRELKIT_MAX_NESTING)") from None
    except ValueError as exc:  # an integer beyond Python's 4300-digit conversion limit, or NaN/Infinity
        raise ValueError(f"invalid JSON: {_short(exc)}") from None
    problem = value_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _short(exc: BaseException) -> str:
    text = str(exc)
    if "Exceeds the limit" in text:
        return "a number with more than 4300 digits"
    return text.split(";")[0]


def _printable(key: Any) -> str:
    """A key as it can be printed in a message: surrogates and NUL written as escapes."""
    return str(key).replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def _children(value: Any, where: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            at = f"{where}.{_printable(key)}" if where else _printable(key)
            yield at, key
            yield at, item
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield f"{where}[{index}]", item


def scalar_problem(value: Any) -> str | None:
    """What makes one scalar unusable as stored text or number, or None."""
    if isinstance(value, str):
        if "\x00" in value:
            return f"a NUL character at position {value.index(chr(0)) + 1}"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"a lone UTF-16 surrogate (\\u{ord(value[exc.start]):04x}) at position {exc.start + 1}"
    elif isinstance(value, float) and not math.isfinite(value):
        return f"a number that is not finite ({value})"
    return None


def value_problem(value: Any, *, max_values: int = MAX_VALUES) -> str | None:
    """The first problem of a parsed JSON or YAML value (nesting beyond the limit, too many
    values, a string that cannot be stored as UTF-8 text, a non-finite number), or None."""
    max_depth = limits().max_nesting
    stack: list[tuple[str, Any, int]] = [("", value, 0)]
    seen = 0
    while stack:
        where, item, depth = stack.pop()
        seen += 1
        if seen > max_values:
            return f"more than {max_values:,} values (YAML aliases expanding?)"
        if depth > max_depth:
            top = where.split("[", 1)[0].split(".", 1)[0]  # the path down there is a hundred steps long
            return f"nested more than {max_depth} levels deep in {top or 'the value'} (QRELKIT_MAX_NESTING)"
        problem = scalar_problem(item)
        if problem:
            return f"{problem} in {where or 'the value'}"
        if isinstance(item, dict | list):
            stack.extend((child_where, child, depth + 1) for child_where, child in _children(item, where))
    return None


def _line_of(text: bytes, offset: int) -> int:
    return text.count(b"\n", 0, offset) + 1


def read_yaml(path: str | Path) -> Any:
    """A YAML file (at most `max_config_bytes`), parsed safely and checked as `value_problem`
    does. InputFormatError names the file and the line of the problem where one is known."""
    import yaml

    path = Path(path)
    caps = limits()
    with open_regular(path) as handle:
        raw = handle.read(caps.max_config_bytes + 1)
    if len(raw) > caps.max_config_bytes:
        raise InputFormatError.single(path, 0, f"larger than {size_text(caps.max_config_bytes)} (QRELKIT_MAX_CONFIG_BYTES)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFormatError.single(path, _line_of(raw, exc.start), f"invalid UTF-8 byte 0x{raw[exc.start]:02x}") from None
    if "\x00" in text:
        raise InputFormatError.single(path, _line_of(raw, raw.index(b"\x00")), "a NUL byte (a binary file?)")
    try:
        _check_depth(yaml.scan(text), caps.max_nesting, path)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        raise InputFormatError.single(path, mark.line + 1 if mark is not None else 0, f"not valid YAML: {problem}") from None
    except RecursionError:
        raise InputFormatError.single(path, 0, f"nested more than {caps.max_nesting} levels deep (QRELKIT_MAX_NESTING)") from None
    except ValueError as exc:
        raise InputFormatError.single(path, 0, f"not usable YAML: {_short(exc)}") from None
    problem = value_problem(data)
    if problem:
        raise InputFormatError.single(path, 0, problem)
    return data


def read_yaml_mapping(path: Path, error: type[Exception], expected: str) -> dict[str, Any]:
    """A YAML file that must hold a mapping (``expected`` says of what); any problem is ``error``, naming the file."""
    try:
        data = read_yaml(path)
    except InputFormatError as exc:
        raise error(str(exc)) from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected {expected}")
    return data


def load_yaml_model(
    ref: str | Path, builtins: Path, model: type[ModelT], error: type[Exception], *, kind: str, expected: str, whole: str
) -> ModelT:
    """``model`` from a YAML file, or from the built-in ``builtins/REF.yaml`` (prompt templates, probes).
    Any problem is ``error``: a validation error is a line per field, ``whole`` naming a check of the whole."""
    from pydantic import ValidationError  # not at import: commands that load no model never import pydantic

    path = Path(ref)
    if not path.is_file():
        path = builtins / f"{ref}.yaml"
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in builtins.glob("*.yaml")))
            raise error(f"{kind} {str(ref)!r}: no such file or built-in (built-ins: {known})")
    data = read_yaml_mapping(path, error, expected)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error("\n".join(f"{path}: {field or whole}: {problem}" for field, problem in field_problems(exc, model))) from None


def field_problems(
    exc: ValidationError,
    model: type[BaseModel],
    *,
    noun: str = "key",
    hidden: Collection[str] = (),
    also: Collection[str] = (),
    listed: bool = True,
) -> list[tuple[str, str]]:
    """Each error of ``exc`` (from validating ``model``) as (the field's dotted place, "" for the whole;
    the problem in words): pydantic's message without its "Value error, "; an unknown key (``noun``: "key"
    or "option") names the nearest known one and, when ``listed``, the keys there (``hidden`` fields
    left out, ``also`` added at the top)."""
    found = []
    for e in exc.errors():
        place = ".".join(str(p) for p in e["loc"])
        if e["type"] != "extra_forbidden":
            found.append((place, str(e["msg"]).removeprefix("Value error, ")))
            continue
        holder = _model_at(model, tuple(e["loc"][:-1]))
        known = [] if holder is None else [name for name in holder.model_fields if name not in hidden]
        known += list(also) if holder is model else []
        close = difflib.get_close_matches(str(e["loc"][-1]), known, n=1, cutoff=0.6)
        words = ([f"did you mean {close[0]!r}?"] if close else []) + ([f"({noun}s here: {', '.join(known)})"] if listed and known else [])
        found.append((place, f"unknown {noun}" + ("; " + " ".join(words) if words else "")))
    return found


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model that holds the key at ``loc`` (a validation error's place), or None."""
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return None
        candidates = [field.annotation, *typing.get_args(field.annotation)]
        found = next((c for c in candidates if isinstance(c, type) and hasattr(c, "model_fields")), None)
        if found is None:
            return None
        model = found
    return model


def _check_depth(tokens: Iterator[Any], max_depth: int, path: Path) -> None:
    """Nesting from the scanner's tokens (the scanner is a loop, the composer recurses): a file
    nested beyond the limit is refused at the line where it gets too deep."""
    import yaml

    opening = (yaml.BlockSequenceStartToken, yaml.BlockMappingStartToken, yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken)
    closing = (yaml.BlockEndToken, yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken)
    depth = 0
    for token in tokens:
        if isinstance(token, opening):
            depth += 1
            if depth > max_depth:
                raise InputFormatError.single(
                    path, token.start_mark.line + 1, f"nested more than {max_depth} levels deep (QRELKIT_MAX_NESTING)"
                )
        elif isinstance(token, closing):
            depth -= 1
