"""Prompt templates (YAML), rendering to messages, and parsing model output. Never calls a model."""

from qrelkit.prompts.parse import ParsedScore, parse_score, score_offset
from qrelkit.prompts.template import (
    ImagePart,
    PromptTemplate,
    RenderedPrompt,
    TemplateError,
    TextPart,
    builtin_templates,
    load_template,
)

__all__ = [
    "ImagePart",
    "ParsedScore",
    "PromptTemplate",
    "RenderedPrompt",
    "TemplateError",
    "TextPart",
    "builtin_templates",
    "load_template",
    "parse_score",
    "score_offset",
]
