"""Chat messages for generative judges, shared by the openai, vllm and transformers judges:

* `build_messages`: OpenAI-format messages (text parts, images as base64 data URLs) for
  Chat Completions endpoints and `vllm.LLM.chat`;
* `hf_messages`: Hugging Face chat-template messages (`{"type": "image"}` placeholders, the
  images returned beside them in order) for a processor's or tokenizer's `apply_chat_template`.

Images are read and checked by the one image reader (`qrelkit.io.images`).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Collection
from pathlib import Path
from typing import Any

from qrelkit.io.images import decode_image, open_image, read_image_file
from qrelkit.judges.http import checked_image_url
from qrelkit.prompts import ImagePart, RenderedPrompt, TextPart

# Formats the OpenAI API accepts; anything else Pillow reads is re-encoded as PNG.
SENT_AS_IS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}


def image_data_url(path: str | Path, root: str | Path | None = None, expected_sha256: str | None = None) -> str:
    """The image as a base64 data URL whose MIME type comes from its content, not its name.
    The file is decoded once to check it (a corrupt image is an ImageError here, not a 400 later)."""
    image = read_image_file(path, root, expected_sha256)
    opened = open_image(image)
    mime = SENT_AS_IS.get(opened.format or "")
    data = image.data
    if mime is None:
        buffer = io.BytesIO()
        decode_image(image).save(buffer, format="PNG")
        data, mime = buffer.getvalue(), "image/png"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def build_messages(
    rendered: RenderedPrompt,
    *,
    detail: str = "auto",
    image_urls: bool = False,
    image_root: str | None = None,
    url_hosts: Collection[str] = (),
) -> list[dict[str, Any]]:
    """Chat messages: a text-only prompt's user content is a plain string (what every server
    takes); one with an image is a list of `text` and `image_url` content parts."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": rendered.system}] if rendered.system else []
    texts = [part for part in rendered.parts if isinstance(part, TextPart)]
    if len(texts) == len(rendered.parts):
        return messages + [{"role": "user", "content": "\n\n".join(part.text for part in texts)}]
    content: list[dict[str, Any]] = []
    for part in rendered.parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            # hostile-input: a URL is forwarded only when judges.http allows it (never file:, link-local, ...)
            url = checked_image_url(part.url, url_hosts) if image_urls and part.url else image_data_url(part.path, image_root, part.sha256)
            content.append({"type": "image_url", "image_url": {"url": url, "detail": detail}})
    return messages + [{"role": "user", "content": content}]


def hf_messages(rendered: RenderedPrompt, *, typed: bool = False) -> tuple[list[dict[str, Any]], list[str]]:
    """Messages for a Hugging Face chat template, and the image paths their placeholders stand
    for, in order. Contents are plain strings for a text-only prompt unless ``typed`` (what text
    models' templates expect); lists of typed parts otherwise (what processors expect, also for
    text-only prompts to a vision-language model)."""
    if not typed and all(isinstance(part, TextPart) for part in rendered.parts):
        return rendered.chat_messages(), []
    system = [{"role": "system", "content": [{"type": "text", "text": rendered.system}]}] if rendered.system else []
    content = [{"type": "text", "text": part.text} if isinstance(part, TextPart) else {"type": "image"} for part in rendered.parts]
    images = [part.path for part in rendered.parts if isinstance(part, ImagePart)]
    return [*system, {"role": "user", "content": content}], images
