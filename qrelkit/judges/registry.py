"""Judges by name: the built-ins plus any registered under the entry-point group `qrelkit.judges`."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from pydantic import ValidationError

from qrelkit.judges.base import JudgeConfig, JudgeContext, JudgeError
from qrelkit.prompts import PromptTemplate

ENTRY_POINT_GROUP = "qrelkit.judges"


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def judge_names() -> list[str]:
    return sorted(_entry_points())


def judge_class(name: str) -> type:
    """A registered judge by name, or any judge class by `package.module:ClassName`."""
    if ":" in name:
        module_name, _, class_name = name.partition(":")
        try:
            return getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as exc:
            raise JudgeError(f"judge {name!r} cannot be loaded: {exc}") from None
    eps = _entry_points()
    if name not in eps:
        raise JudgeError(f"unknown judge {name!r}; available: {', '.join(sorted(eps)) or 'none'}")
    try:
        return eps[name].load()
    except ImportError as exc:  # a backend's module imports only light things; heavy ones at construction
        raise JudgeError(f"judge {name!r} cannot be imported: {exc}") from None


def make_config(name: str, options: dict[str, Any] | None, *, source: str = "") -> JudgeConfig:
    cls = judge_class(name)
    try:
        return cls.Config.model_validate(options or {})
    except ValidationError as exc:
        valid = ", ".join(sorted(cls.Config.model_fields))
        problems = []
        for error in exc.errors():
            field = ".".join(str(p) for p in error["loc"])
            message = "unknown option" if error["type"] == "extra_forbidden" else error["msg"]
            problems.append(f"{source + ': ' if source else ''}judge {name!r} option {field!r}: {message}")
        raise JudgeError("\n".join(problems) + f"\nvalid options of {name!r}: {valid}") from None


def create_judge(
    name: str,
    options: dict[str, Any] | None = None,
    template: PromptTemplate | None = None,
    context: JudgeContext | None = None,
    *,
    source: str = "",
):
    cls = judge_class(name)
    config = make_config(name, options, source=source)
    if getattr(cls, "needs_template", True) and template is None:
        raise JudgeError(f"judge {name!r} needs a prompt template (set `template:` in the job)")
    return cls(config, template, context)


def describe_judges() -> list[dict[str, Any]]:
    """Each judge's name, summary and options (name, type, default, description)."""
    out = []
    for name in judge_names():
        try:
            cls = judge_class(name)
        except JudgeError as exc:
            out.append({"name": name, "summary": str(exc), "options": []})
            continue
        options = []
        for field_name, field in cls.Config.model_fields.items():
            annotation = getattr(field.annotation, "__name__", None) or str(field.annotation).replace("typing.", "")
            default = None if field.is_required() else field.default
            options.append({"name": field_name, "type": annotation, "default": default, "description": field.description or ""})
        summary = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        out.append({"name": name, "summary": summary, "options": options})
    return out
