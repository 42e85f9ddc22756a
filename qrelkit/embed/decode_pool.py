"""Image decoding in worker processes, for the CPU path: PIL's decoders and resampling hold the
interpreter lock often enough that 16 threads gave 3.3x one core (the machine gives 10.8x).

A worker reads (when given a path) and decodes with the one image reader, then resizes and crops
with PIL (`ImageTransform.pil_pixels`); it returns 8-bit pixels, a quarter of float32's bytes, and
never imports torch, so it starts in a tenth of a second. Failures come back as their message, in
their place.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from qrelkit.embed.transform import ImageTransform
from qrelkit.io.images import ImageError, ImageFile, decode_image, read_image_file

CHUNK = 4  # images per task: a task's round trip (~0.2 ms) is small beside four decodes (~10 ms each)


def preprocess_chunk(task: tuple[ImageTransform, Sequence[ImageFile | str | Path]]) -> list[tuple[np.ndarray | None, str | None]]:
    """(uint8 (height, width, 3) pixels, None) or (None, why it failed) for each image of the task."""
    transform, sources = task
    out: list[tuple[np.ndarray | None, str | None]] = []
    for source in sources:
        try:
            image = source if isinstance(source, ImageFile) else read_image_file(source)
            out.append((transform.pil_pixels(decode_image(image)), None))
        except ImageError as exc:
            out.append((None, str(exc)))
    return out
