"""Prompt templates: a YAML file with the three parts seed 003 names, validated at load time.

Layout of the user message, following seed 003's Table 1: relevance instruction, the text
input (``context``, built from topic fields), the document (text, or the image itself for
vision models), then the output instruction. A template's identity is the sha256 of its
canonical content, so any change makes a new judge run.
"""

from __future__ import annotations

import json
import math
import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from qrelkit.errors import QrelkitError
from qrelkit.io import Document, Topic, sha256_text
from qrelkit.io.structured import load_yaml_model

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
TOPIC_PLACEHOLDERS = {"query", "qid"}  # always present in a topic record
DOCUMENT_PLACEHOLDERS = {"document", "docid"}
SCORE_PLACEHOLDERS = {"min_score", "max_score"}
DEFAULT_PATTERN = r"Relevance[\s:=]*(?P<score>[+-]?\d+(?:\.\d+)?)"
MAX_DEFAULT_GRADES = 101  # the integers of a score range taken as grade tokens when none are listed (0-100)
GRADE_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


class TemplateError(QrelkitError):
    pass


def placeholders(text: str) -> list[str]:
    """Names of `{name}` fields; `{{` escapes a brace. Attribute or index access is refused."""
    names = []
    for _, name, spec, conversion in string.Formatter().parse(text):
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            written = name + ("!" + conversion if conversion else "") + (":" + spec if spec else "")
            raise ValueError(f"placeholder {{{written}}} must be a plain name")
        names.append(name)
    return names


class OutputParser(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str = Field(DEFAULT_PATTERN, description="Regex with a named group `score`; the last match wins.")

    @field_validator("pattern")
    @classmethod
    def _has_score_group(cls, value: str) -> str:
        try:
            compiled = re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        if "score" not in compiled.groupindex:
            raise ValueError("the pattern needs a named group `(?P<score>...)`")
        return value


class PromptTemplate(BaseModel):
    """A relevance-judgment prompt. Parts are `str.format` templates over topic fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    version: int | str = 1
    description: str = ""
    modality: Literal["text", "image"] = "text"
    system: str | None = None
    relevance_instruction: str
    context: str = Field(description="The text input: how the topic's fields are laid out.")
    document: str = Field("Passage: {document}", description="How a text document is shown (text modality).")
    output_instruction: str
    topic_fields: list[str] = Field(default_factory=list, description="Extra topic fields the parts use.")
    score_range: tuple[float, float]
    parser: OutputParser = Field(default_factory=lambda: OutputParser())
    grade_tokens: list[str] | None = Field(
        None, description="Tokens whose probabilities give an expected score (default: each integer of the range)."
    )

    @field_validator("id")
    @classmethod
    def _id_is_a_name(cls, value: str) -> str:
        if not value or any(c.isspace() for c in value):
            raise ValueError("must be a non-empty name without spaces")
        return value

    @field_validator("relevance_instruction", "context", "output_instruction", "document")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        placeholders(value)
        return value

    @model_validator(mode="after")
    def _known_placeholders(self) -> PromptTemplate:
        topic_names = TOPIC_PLACEHOLDERS | set(self.topic_fields)
        allowed = {
            "system": topic_names | SCORE_PLACEHOLDERS,
            "relevance_instruction": topic_names | SCORE_PLACEHOLDERS,
            "context": topic_names,
            "document": DOCUMENT_PLACEHOLDERS,
            "output_instruction": topic_names | SCORE_PLACEHOLDERS,
        }
        for part, names in allowed.items():
            text = getattr(self, part)
            for name in placeholders(text or ""):
                if name not in names:
                    hint = " (list extra topic fields under `topic_fields`)" if part != "document" else ""
                    raise ValueError(
                        f"{part}: unknown placeholder {{{name}}}; allowed here: " + ", ".join("{" + n + "}" for n in sorted(names)) + hint
                    )
        low, high = self.score_range
        if not (math.isfinite(low) and math.isfinite(high)):
            raise ValueError(f"score_range: [{low:g}, {high:g}] must be finite numbers")
        if low >= high:
            raise ValueError(f"score_range: low {low} must be below high {high}")
        if self.grade_tokens is None and math.floor(high) - math.ceil(low) + 1 > MAX_DEFAULT_GRADES:
            # each integer of the range is a grade token by default: a range this wide would make
            # every answer's expected grade a list of billions (each paid answer then lost)
            raise ValueError(
                f"score_range: [{low:g}, {high:g}] holds more than {MAX_DEFAULT_GRADES} integer grades; "
                "narrow it, or list the grades' tokens under `grade_tokens`"
            )
        return self

    @field_validator("grade_tokens")
    @classmethod
    def _grades_are_numbers(cls, tokens: list[str] | None) -> list[str] | None:
        """Each grade token is the grade it stands for, written as a number (what Σ g·p(g) sums)."""
        if tokens is None:
            return None
        if not tokens:
            raise ValueError("must list at least one token")
        for token in tokens:
            text = token.strip()
            if not GRADE_NUMBER.fullmatch(text) or not math.isfinite(float(text)):
                raise ValueError(f"{token!r} is not a number; each grade token is the grade it stands for (e.g. '0', '1', '2')")
        return tokens

    # -- identity ----------------------------------------------------------------------------

    def content(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @property
    def content_hash(self) -> str:
        canonical = json.dumps(self.content(), sort_keys=True, ensure_ascii=False)
        return sha256_text(canonical)

    @property
    def grade_token_list(self) -> list[str]:
        if self.grade_tokens:
            return self.grade_tokens
        low, high = self.score_range
        return [str(v) for v in range(int(low), int(high) + 1)]

    # -- checks against data --------------------------------------------------------------------

    def check_topics(self, topics: list[Topic], *, source: str = "") -> None:
        """Every topic must have every field the template names; the error names topic and field."""
        for topic in topics:
            record = topic.record()
            for name in self.topic_fields:
                value = record.get(name)
                if value is None or (isinstance(value, str) and not value.strip()):
                    where = f"{source}: " if source else ""
                    raise TemplateError(
                        f"{where}template {self.id!r} uses {{{name}}} but topic {topic.qid!r} has no field {name!r} "
                        f"(its fields: {', '.join(sorted(record))})"
                    )

    # -- rendering ------------------------------------------------------------------------------

    def render_context(self, topic: Topic) -> str:
        """The text input alone (what a model with a short context, such as CLIP, sees)."""
        return self.context.format_map(topic.record()).strip()

    def render(self, topic: Topic, document: Document) -> RenderedPrompt:
        values = {**topic.record(), "min_score": _num(self.score_range[0]), "max_score": _num(self.score_range[1])}
        if self.modality == "text" and document.text is None:
            raise TemplateError(f"template {self.id!r} is for text, but document {document.docid!r} is an image")
        if self.modality == "image" and document.image is None:
            raise TemplateError(f"template {self.id!r} is for images, but document {document.docid!r} has no image")
        parts: list[Part] = [TextPart(self.relevance_instruction.format_map(values).strip())]
        parts.append(TextPart(self.context.format_map(values).strip()))
        if self.modality == "text":
            parts.append(TextPart(self.document.format_map({"document": document.text, "docid": document.docid}).strip()))
        else:
            parts.append(ImagePart(str(document.image_path), document.fields.get("url"), document.image_sha256))
        parts.append(TextPart(self.output_instruction.format_map(values).strip()))
        system = self.system.format_map(values).strip() if self.system else None
        return RenderedPrompt(system=system, parts=_merge_text(parts))


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@dataclass(frozen=True)
class TextPart:
    text: str


@dataclass(frozen=True)
class ImagePart:
    path: str
    url: str | None = None
    sha256: str | None = None  # the bytes loaded for the document (`Document.image_sha256`): what must be read


Part = TextPart | ImagePart


def _merge_text(parts: list[Part]) -> list[Part]:
    """Adjacent text parts become one, separated by a blank line."""
    merged: list[Part] = []
    for part in parts:
        if isinstance(part, TextPart) and merged and isinstance(merged[-1], TextPart):
            merged[-1] = TextPart(merged[-1].text + "\n\n" + part.text)
        else:
            merged.append(part)
    return merged


@dataclass(frozen=True)
class RenderedPrompt:
    """What a model sees: an optional system message and the user message's parts."""

    system: str | None
    parts: list[Part]

    @property
    def user_text(self) -> str:
        return "\n\n".join(p.text if isinstance(p, TextPart) else f"[image: {p.path}]" for p in self.parts)

    def chat_messages(self) -> list[dict[str, Any]]:
        """Plain-text chat messages (images shown as a marker); vision judges build their own."""
        messages = [{"role": "system", "content": self.system}] if self.system else []
        return messages + [{"role": "user", "content": self.user_text}]

    def __str__(self) -> str:
        head = f"[system]\n{self.system}\n\n" if self.system else ""
        return head + "[user]\n" + self.user_text


def load_template(ref: str | Path) -> PromptTemplate:
    """A template from a YAML path, or a built-in by id (see `qrelkit prompts list`)."""
    return load_yaml_model(
        ref, BUILTIN_DIR, PromptTemplate, TemplateError, kind="prompt template", expected="a mapping of template fields", whole="(template)"
    )


def builtin_templates() -> list[PromptTemplate]:
    return [load_template(p) for p in sorted(BUILTIN_DIR.glob("*.yaml"))]
