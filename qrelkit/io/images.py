"""The one image reader of every judge and embedder: read a file's bytes once, hash those bytes,
decode the same bytes.

Reading takes regular files only, resolved and checked against the image root at the moment
they are read (a symlink or `..` that leads out of the root is refused then, not only when the
documents file was loaded). Decoding refuses decompression bombs (PIL's own limit is only a
warning) and applies the EXIF orientation, so every model sees the image upright.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from qrelkit.errors import QrelkitError

if TYPE_CHECKING:
    from PIL import Image as PILImage

# Twice PIL's warning threshold: PIL itself raises only at this size.
MAX_IMAGE_PIXELS = 89_478_485 * 2
# No photograph a judge should see is this large; refuse before reading it into memory.
MAX_IMAGE_BYTES = 256 * 2**20


class ImageError(QrelkitError, ValueError):
    """An image that cannot be used: missing, not a regular file, outside its root, not an image,
    corrupt, or too large. The message names the file. (A ValueError too, so that any code that
    classifies input errors by ValueError counts it as one.)"""


@dataclass(frozen=True)
class ImageFile:
    """An image file's bytes, read once, with the sha256 of exactly those bytes."""

    path: str
    data: bytes = field(repr=False)
    sha256: str


def read_image_file(path: str | Path, root: str | Path | None = None) -> ImageFile:
    """Read an image file once: a regular file, inside ``root`` when given (checked after
    resolving links, at read time)."""
    path = Path(path)
    try:
        resolved = path.resolve(strict=True)
    except FileNotFoundError:
        raise ImageError(f"image {path} not found") from None
    except (OSError, RuntimeError) as exc:  # a symlink loop, a permission problem on the way
        raise ImageError(f"image {path} cannot be read: {exc}") from None
    if root is not None and not resolved.is_relative_to(Path(root).resolve()):
        raise ImageError(f"image {path} is outside the image root {root}")
    # O_NONBLOCK: opening a FIFO must not hang the job; O_NOFOLLOW: the resolved path cannot be
    # swapped for a link between the check above and the open.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(resolved, flags)
    except OSError as exc:
        raise ImageError(f"image {path} cannot be read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise ImageError(f"image {path} is not a regular file")
        if info.st_size > MAX_IMAGE_BYTES:
            raise ImageError(f"image {path} has {info.st_size:,} bytes, over the limit of {MAX_IMAGE_BYTES:,}")
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read()
    except OSError as exc:
        raise ImageError(f"image {path} cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(descriptor)
    return ImageFile(str(path), data, hashlib.sha256(data).hexdigest())


def open_image(image: ImageFile) -> PILImage.Image:
    """Decode the bytes (all pixels, so a truncated file fails here) in the file's own mode,
    with `format` set; ImageError says why it cannot be used."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            opened = Image.open(io.BytesIO(image.data))
            if opened.width * opened.height > MAX_IMAGE_PIXELS:
                raise ImageError(f"image {image.path} has {opened.width}x{opened.height} pixels, over the limit of {MAX_IMAGE_PIXELS:,}")
            opened.load()
            return opened
    except ImageError:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageError(f"image {image.path} is not a readable image: {exc}") from None
    except (OSError, SyntaxError, ValueError) as exc:  # PIL reports broken files with all three
        raise ImageError(f"image {image.path} is corrupt or truncated: {exc}") from None


def decode_image(image: ImageFile) -> PILImage.Image:
    """The image as RGB, upright (EXIF orientation applied): what every model sees."""
    from PIL import ImageOps

    opened = open_image(image)
    try:
        return ImageOps.exif_transpose(opened).convert("RGB")
    except (OSError, SyntaxError, ValueError) as exc:
        raise ImageError(f"image {image.path} is corrupt or truncated: {exc}") from None


def load_image(path: str | Path, root: str | Path | None = None) -> PILImage.Image:
    """Read and decode in one call (for code that needs the pixels only)."""
    return decode_image(read_image_file(path, root))
