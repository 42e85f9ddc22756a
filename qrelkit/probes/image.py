"""Image perturbations: text drawn into the image (a typographic attack), a blank or noise image of
the same size (controls: no content at all), a crop and a rescale. Each returns PNG bytes, the same
bytes for the same image, probe and seed (PNG as PIL writes it carries no time or other varying field)."""

from __future__ import annotations

import io
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from qrelkit.errors import PairInputError
from qrelkit.io.images import MAX_IMAGE_PIXELS
from qrelkit.probes.draws import draw_bytes, draw_int
from qrelkit.probes.spec import MAX_DRAWN_CHARS, BlankParameters, CropParameters, ScaleParameters, TypographicParameters

MIN_FONT_PIXELS = 6


def png_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _font(size: int) -> Any:
    try:
        return ImageFont.load_default(size=size)  # Pillow's own scalable font (FreeType)
    except (TypeError, ValueError, OSError):  # a Pillow without FreeType: the fixed bitmap font
        return ImageFont.load_default()


def _wrapped(draw: ImageDraw.ImageDraw, text: str, font: Any, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and draw.textlength(f"{lines[-1]} {word}", font=font) <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return lines


def _fitted(draw: ImageDraw.ImageDraw, text: str, width: int, height: int) -> tuple[Any, list[str], int]:
    """The largest font (and its lines) whose wrapped text fits the band; at the smallest size the
    lines that do not fit are left out."""
    size = max(MIN_FONT_PIXELS, int(height * 0.8))
    while True:
        font = _font(size)
        line_height = max(1, int(size * 1.15))
        lines = _wrapped(draw, text, font, width)
        fits = len(lines) * line_height <= height and all(draw.textlength(line, font=font) <= width for line in lines)
        if fits or size <= MIN_FONT_PIXELS:
            return font, lines[: max(1, height // line_height)], line_height
        size = max(MIN_FONT_PIXELS, int(size * 0.85))


def typographic(image: Image.Image, text: str, settings: TypographicParameters) -> bytes:
    text = text[:MAX_DRAWN_CHARS]  # a long query: what is drawn is cut, as a band holds no more
    image = image.convert("RGB")
    width, height = image.size
    band = max(MIN_FONT_PIXELS + 2, round(height * settings.height))
    top = {"top": 0, "center": (height - band) // 2, "bottom": height - band}[settings.position]
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, top, width, top + band), fill=tuple(settings.background))
    margin = max(1, width // 40)
    font, lines, line_height = _fitted(draw, text, width - 2 * margin, band)
    y = top + (band - len(lines) * line_height) // 2
    for line in lines:
        x = (width - draw.textlength(line, font=font)) / 2
        draw.text((x, y), line, font=font, fill=tuple(settings.color))
        y += line_height
    return png_bytes(image)


def blank(image: Image.Image, settings: BlankParameters) -> bytes:
    return png_bytes(Image.new("RGB", image.size, tuple(settings.color)))


def noise(image: Image.Image, seed: int, qid: str, docid: str) -> bytes:
    width, height = image.size
    return png_bytes(Image.frombytes("RGB", (width, height), draw_bytes(width * height * 3, seed, "noise", qid, docid)))


def crop(image: Image.Image, settings: CropParameters, seed: int, qid: str, docid: str) -> bytes:
    width, height = image.size
    kept_width, kept_height = max(1, round(width * settings.keep)), max(1, round(height * settings.keep))
    if settings.where == "center":
        left, top = (width - kept_width) // 2, (height - kept_height) // 2
    else:
        left = draw_int(width - kept_width + 1, seed, "crop", qid, docid, "x")
        top = draw_int(height - kept_height + 1, seed, "crop", qid, docid, "y")
    return png_bytes(image.convert("RGB").crop((left, top, left + kept_width, top + kept_height)))


def scale(image: Image.Image, settings: ScaleParameters) -> bytes:
    width, height = image.size
    size = (max(1, round(width * settings.factor)), max(1, round(height * settings.factor)))
    if size[0] * size[1] > MAX_IMAGE_PIXELS:  # a copy is an image qrelkit reads: it may be no larger than one
        raise PairInputError(
            f"scaled by {settings.factor:g}, the {width}x{height} image would have {size[0]}x{size[1]} pixels, "
            f"over the limit of {MAX_IMAGE_PIXELS:,} an image may have"
        )
    return png_bytes(image.convert("RGB").resize(size, Image.Resampling.BICUBIC))
