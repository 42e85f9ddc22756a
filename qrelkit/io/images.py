"""The one image reader of every judge and embedder: read a file's bytes once, hash those bytes,
decode the same bytes.

Reading takes regular files only, resolved and checked against the image root at the moment
they are read (a symlink or `..` that leads out of the root is refused then, not only when the
documents file was loaded). Decoding refuses decompression bombs (PIL's own limit is only a
warning) and applies the EXIF orientation, so every model sees the image upright.

A decoder other than PIL's (nvJPEG on a GPU) takes the same bytes after `image_header`: the
header is parsed without decoding a pixel, and the pixel-bomb rule is applied there, before any
decoder allocates for the image.
"""

from __future__ import annotations

import hashlib
import io
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from qrelkit.errors import PairInputError
from qrelkit.io.files import FileRefused, open_under_root

if TYPE_CHECKING:
    from PIL import Image as PILImage

# Twice PIL's warning threshold: PIL itself raises only at this size.
MAX_IMAGE_PIXELS = 89_478_485 * 2
# No photograph a judge should see is this large; refuse before reading it into memory.
MAX_IMAGE_BYTES = 256 * 2**20


class ImageError(PairInputError):
    """An image that cannot be used: missing, not a regular file, outside its root, not an image,
    corrupt, or too large. The message names the file; its pairs are `input_error`s."""


@dataclass(frozen=True)
class ImageFile:
    """An image file's bytes, read once, with the sha256 of exactly those bytes."""

    path: str
    data: bytes = field(repr=False)
    sha256: str


def read_image_file(path: str | Path, root: str | Path | None = None, expected_sha256: str | None = None) -> ImageFile:
    """Read an image file once: a regular file, inside ``root`` when given (checked on the file
    actually opened, at read time; the policy of `qrelkit.io.files`). ``expected_sha256``: the hash
    its bytes had when the collection was loaded ("" when they could not be read then); other bytes
    are refused, so a judgment never records the loaded image while another was judged (a file
    changed, or an image root swapped for another folder)."""
    path = Path(path)
    try:
        with open_under_root(path, root) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_IMAGE_BYTES:
                raise ImageError(f"image {path} has {size:,} bytes, over the limit of {MAX_IMAGE_BYTES:,}")
            data = handle.read()
    except FileRefused as exc:
        if exc.reason == "file not found":
            raise ImageError(f"image {path} not found") from None
        if exc.reason.startswith("is outside the root"):
            raise ImageError(f"image {path} is outside the image root {root}") from None
        raise ImageError(f"image {path} cannot be read: {exc.reason}") from None
    except OSError as exc:
        raise ImageError(f"image {path} cannot be read: {exc.strerror or exc}") from None
    sha256 = hashlib.sha256(data).hexdigest()
    if expected_sha256 is not None and sha256 != expected_sha256:
        then = f"sha256 {expected_sha256[:12]}… then" if expected_sha256 else "it could not be read then"
        raise ImageError(
            f"image {path} is not the image loaded with the documents ({then}, sha256 {sha256[:12]}… now); "
            "load the documents again (--replace) to judge it"
        )
    return ImageFile(str(path), data, sha256)


@dataclass(frozen=True)
class ImageHeader:
    """What an image file's header says, read without decoding a pixel."""

    format: str | None  # PIL's format name: JPEG, PNG, MPO, ...
    mode: str  # the stored mode: RGB, L, CMYK, ...
    width: int  # as stored, before the EXIF orientation
    height: int
    orientation: int | None  # EXIF orientation 1-8 (1: as stored); None when the EXIF block cannot be read


def _decode_checked(image: ImageFile, *, pixels: bool) -> PILImage.Image:
    """PIL's image of the bytes, refused as a pixel bomb from its header's dimensions before any
    pixel is decoded; with ``pixels``, decoded whole (so a truncated file fails here)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            opened = Image.open(io.BytesIO(image.data))
            if opened.width * opened.height > MAX_IMAGE_PIXELS:
                raise ImageError(f"image {image.path} has {opened.width}x{opened.height} pixels, over the limit of {MAX_IMAGE_PIXELS:,}")
            if pixels:
                opened.load()
            return opened
    except ImageError:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageError(f"image {image.path} is not a readable image: {exc}") from None
    except (OSError, SyntaxError, ValueError) as exc:  # PIL reports broken files with all three
        raise ImageError(f"image {image.path} is corrupt or truncated: {exc}") from None


def image_header(image: ImageFile) -> ImageHeader:
    """The header of the bytes, for a decoder other than PIL's: ImageError (the same messages as
    decoding) when no image header is found or the image is a pixel bomb."""
    opened = _decode_checked(image, pixels=False)
    try:
        orientation: int | None = int(opened.getexif().get(0x0112, 1))
    except (OSError, SyntaxError, ValueError, TypeError):  # a broken EXIF block: PIL's own decode decides
        orientation = None
    return ImageHeader(opened.format, opened.mode, opened.width, opened.height, orientation)


def open_image(image: ImageFile) -> PILImage.Image:
    """Decode the bytes (all pixels, so a truncated file fails here) in the file's own mode,
    with `format` set; ImageError says why it cannot be used."""
    return _decode_checked(image, pixels=True)


def decode_image(image: ImageFile) -> PILImage.Image:
    """The image as RGB, upright (EXIF orientation applied): what every model sees."""
    from PIL import ImageOps

    opened = open_image(image)
    try:
        return ImageOps.exif_transpose(opened).convert("RGB")
    except (OSError, SyntaxError, ValueError) as exc:
        raise ImageError(f"image {image.path} is corrupt or truncated: {exc}") from None


def load_image(path: str | Path, root: str | Path | None = None, expected_sha256: str | None = None) -> PILImage.Image:
    """Read and decode in one call (for code that needs the pixels only)."""
    return decode_image(read_image_file(path, root, expected_sha256))
