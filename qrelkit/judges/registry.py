"""Judges by name: the built-ins plus any registered under the entry-point group `qrelkit.judges`."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import ValidationError

from qrelkit.io.structured import field_problems
from qrelkit.judges.base import JudgeConfig, JudgeContext, JudgeError
from qrelkit.prompts import PromptTemplate

ENTRY_POINT_GROUP = "qrelkit.judges"


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def judge_names() -> list[str]:
    return sorted(_entry_points())


def judge_class(name: str, *, allow_import: bool = False) -> type[Any]:
    """A registered judge by name, or, with ``allow_import``, any judge class by
    `package.module:ClassName`. Importing a module runs its code, so a job may name one only when
    the command (`--allow-import`) or the Python caller says so (a job file alone cannot); without
    that, nothing is imported."""
    if ":" in name:
        if not allow_import:
            raise JudgeError(
                f"judge {name!r} would import and run the Python module {name.partition(':')[0]!r}; "
                "allow it with --allow-import (a job file cannot allow it by itself; registered judges need neither)"
            )
        module_name, _, class_name = name.partition(":")
        try:
            found = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as exc:
            raise JudgeError(f"judge {name!r} cannot be loaded: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - the module's own code failed as it was imported
            raise JudgeError(f"judge {name!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}") from None
        if not isinstance(found, type) or not hasattr(found, "Config"):
            raise JudgeError(f"judge {name!r}: {class_name!r} in {module_name!r} is not a judge class (a class with `Config`, `judge`)")
        return found
    eps = _entry_points()
    if name not in eps:
        raise JudgeError(f"unknown judge {name!r}; available: {', '.join(sorted(eps)) or 'none'}")
    try:
        return eps[name].load()
    except ImportError as exc:  # a backend's module imports only light things; heavy ones at construction
        raise JudgeError(f"judge {name!r} cannot be imported: {exc}") from None


def make_config(name: str, options: dict[str, Any] | None, *, source: str = "", allow_import: bool = False) -> JudgeConfig:
    cls = judge_class(name, allow_import=allow_import)
    try:
        return cls.Config.model_validate(options or {})
    except ValidationError as exc:
        valid = ", ".join(sorted(cls.Config.model_fields))
        problems = [
            f"{source + ': ' if source else ''}judge {name!r} option {field!r}: {message}"
            for field, message in field_problems(exc, cls.Config, noun="option", listed=False)
        ]
        raise JudgeError("\n".join(problems) + f"\nvalid options of {name!r}: {valid}") from None


@dataclass(frozen=True)
class JudgeFactory:
    """A judge resolved once (its class, its validated config, its template), buildable in any
    process (a Ray worker builds its own): the one door through which every route (a job judging
    pair by pair, the Batch API, Ray actors, each cell of a sweep) gets its judge. Building it
    validates nothing again."""

    name: str
    judge_class: type
    config: JudgeConfig
    template: PromptTemplate | None
    source: str = ""

    @classmethod
    def resolve(
        cls, name: str, options: dict[str, Any] | None, template: PromptTemplate | None, *, source: str = "", allow_import: bool = False
    ) -> JudgeFactory:
        """The judge ``name`` with ``options`` validated into its config (no model loaded)."""
        judge = judge_class(name, allow_import=allow_import)
        return cls(name, judge, make_config(name, options, source=source, allow_import=allow_import), template, source)

    def create(self, context: JudgeContext | None = None) -> Any:
        if getattr(self.judge_class, "needs_template", True) and self.template is None:
            raise JudgeError(f"judge {self.name!r} needs a prompt template (set `template:` in the job)")
        return self.judge_class(self.config, self.template, context)


def create_judge(
    name: str,
    options: dict[str, Any] | None = None,
    template: PromptTemplate | None = None,
    context: JudgeContext | None = None,
    *,
    source: str = "",
    allow_import: bool = False,
):
    """A judge by name and options, built now (`JudgeFactory`): for a notebook or a test of one judge."""
    return JudgeFactory.resolve(name, options, template, source=source, allow_import=allow_import).create(context)


def type_name(annotation: Any) -> str:
    """A readable type: Literal values spelled out ("parsed | expected"), Optional as "... | None"."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return " | ".join(repr(a) if isinstance(a, str) else str(a) for a in args)
    if origin in (Union, UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is not None and args:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(type_name(a) for a in args)}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def describe_judges(name: str | None = None) -> list[dict[str, Any]]:
    """Each judge's name, summary and options (name, type with allowed values, default, description);
    with ``name``, that judge only."""
    if name is not None and name not in judge_names():
        raise JudgeError(f"unknown judge {name!r}; available: {', '.join(judge_names()) or 'none'}")
    out: list[dict[str, Any]] = []
    for judge in [name] if name is not None else judge_names():
        try:
            cls = judge_class(judge)
        except JudgeError as exc:
            out.append({"name": judge, "summary": str(exc), "options": []})
            continue
        options: list[dict[str, Any]] = []
        for field_name, field in cls.Config.model_fields.items():
            default: Any = None if field.is_required() else field.default
            if hasattr(default, "model_dump"):
                default = default.model_dump()
            options.append(
                {"name": field_name, "type": type_name(field.annotation), "default": default, "description": field.description or ""}
            )
        summary = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        out.append({"name": judge, "summary": summary, "options": options})
    return out
