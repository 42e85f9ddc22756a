"""Chat messages for generative judges: a rendered prompt as OpenAI-format messages (text parts
and images as base64 data URLs), shared by the openai, vllm and transformers judges."""

from __future__ import annotations

import base64
import io
from collections.abc import Collection
from pathlib import Path
from typing import Any

from qrelkit.errors import PairInputError
from qrelkit.io.files import FileRefused, open_under_root
from qrelkit.judges.http import checked_image_url
from qrelkit.prompts import ImagePart, RenderedPrompt, TextPart

# Formats the OpenAI API accepts; anything else Pillow reads is re-encoded as PNG.
SENT_AS_IS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}


class ImageInputError(PairInputError):
    """A document's image cannot be sent: missing, unreadable, not an image, outside its root."""


def _open_image(path: str | Path, root: str | Path | None) -> tuple[bytes, Any]:
    from PIL import Image, UnidentifiedImageError

    path = Path(path)
    try:  # hostile-input: regular files only, checked against the root when opened
        with open_under_root(path, root) as handle:
            data = handle.read()
    except FileRefused as exc:
        if "outside the root" in exc.reason:
            raise ImageInputError(f"image {path} is outside the image root {root}") from None
        raise ImageInputError(f"image {path} cannot be read: {exc.reason}") from None
    except OSError as exc:
        raise ImageInputError(f"image {path} cannot be read: {exc.strerror or exc}") from None
    try:
        image = Image.open(io.BytesIO(data))
        image.verify()  # checks the structure (truncated or corrupt files) without decoding all pixels
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageInputError(f"image {path} is not a readable image: {exc}") from None
    return data, image


def image_data_url(path: str | Path, root: str | Path | None = None) -> str:
    """The image as a base64 data URL whose MIME type comes from its content, not its name."""
    data, image = _open_image(path, root)
    mime = SENT_AS_IS.get(image.format or "")
    if mime is None:
        from PIL import Image

        buffer = io.BytesIO()
        Image.open(io.BytesIO(data)).save(buffer, format="PNG")
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
            url = checked_image_url(part.url, url_hosts) if image_urls and part.url else image_data_url(part.path, image_root)
            content.append({"type": "image_url", "image_url": {"url": url, "detail": detail}})
    return messages + [{"role": "user", "content": content}]
