"""Images decoded where their pixels are used: JPEGs by torchvision's `decode_jpeg` on a batch of
byte tensors with ``device="cuda"`` (nvJPEG: the GPU's hardware decoder for baseline JPEGs on
A100/H100, its CUDA decoder for the others), then made upright on the device.

The rules of the one image reader still hold: the bytes are those `qrelkit.io.images` read (and
hashed) once, and its header check (the pixel-bomb limit, a header that is no image) runs on them
before any decoder does. What nvJPEG is not given, or refuses, is decoded by PIL on the CPU (the
reader's `decode_image`), one image at a time and in its place: files that are not JPEG (PNG,
WebP, MPO), CMYK JPEGs, files that do not end with the JPEG end marker (truncated: PIL decides
whether that is an error), EXIF blocks PIL cannot read, and any image of a batch nvJPEG fails on.

On the CPU, torchvision decodes with libjpeg-turbo, as PIL does (the same pixels): the tests run
this path there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from qrelkit.io.images import ImageError, ImageFile, ImageHeader, decode_image, image_header, read_image_file
from qrelkit.io.workers.parallel import ordered_map

JPEG_END = b"\xff\xd9"
JPEG_MODES = ("RGB", "L")  # nvJPEG's RGB output of these is the RGB PIL makes of them


def device_decodable(header: ImageHeader, data: bytes) -> bool:
    """Whether nvJPEG is given the file (else PIL decodes it): a complete JPEG in RGB or grey,
    whose EXIF orientation could be read."""
    return header.format == "JPEG" and header.mode in JPEG_MODES and header.orientation is not None and data.endswith(JPEG_END)


def upright(image: Any, orientation: int | None) -> Any:
    """A (channels, height, width) tensor turned as PIL's `ImageOps.exif_transpose` turns the image
    for EXIF orientation 2-8 (mirror, rotations, transpositions); 1 and unknown values as stored."""
    import torch

    turns = {
        2: lambda: image.flip(-1),
        3: lambda: image.flip(-2, -1),
        4: lambda: image.flip(-2),
        5: lambda: image.transpose(-2, -1),
        6: lambda: torch.rot90(image, -1, (-2, -1)),
        7: lambda: image.transpose(-2, -1).flip(-2, -1),
        8: lambda: torch.rot90(image, 1, (-2, -1)),
    }
    return turns[orientation]() if orientation in turns else image


def decode_on_device(images: Sequence[ImageFile], device: str) -> list[Any]:
    """Each image decoded, in input order: a uint8 (3, height, width) tensor on ``device``, RGB and
    upright; a PIL image (RGB, upright) where PIL decoded it on the CPU; or the ImageError saying
    why it cannot be used."""
    import torch
    from torchvision.io import ImageReadMode, decode_jpeg

    out: list[Any] = [None] * len(images)
    on_device: list[tuple[int, int | None]] = []  # (index, orientation)
    for index, image in enumerate(images):
        try:
            header = image_header(image)
        except ImageError as exc:
            out[index] = exc
            continue
        if device_decodable(header, image.data):
            on_device.append((index, header.orientation))
    if on_device:
        # a copy of the bytes: torch refuses to wrap a read-only buffer without a warning
        encoded = [torch.frombuffer(bytearray(images[index].data), dtype=torch.uint8) for index, _ in on_device]
        try:
            decoded = decode_jpeg(encoded, mode=ImageReadMode.RGB, device=device)
        except RuntimeError:  # one image of the batch failed it: find it, one at a time
            decoded = [_decode_one(data, device) for data in encoded]
        for (index, orientation), tensor in zip(on_device, decoded):
            out[index] = upright(tensor, orientation) if tensor is not None else None
    for index, image in enumerate(images):
        if out[index] is None:  # not given to nvJPEG, or refused by it: PIL, in its place
            try:
                out[index] = decode_image(image)
            except ImageError as exc:
                out[index] = exc
    return out


def read_and_decode_on_device(paths: Mapping[str, tuple[Any, ...]], device: str, workers: int) -> dict[str, Any]:
    """path -> what `decode_on_device` gives for it (a tensor on ``device``, a PIL image, or the
    ImageError saying why it cannot be used); each file read once (``workers`` threads) by
    `read_image_file` with the path's value as its further arguments (the root, ...), so the
    reader's checks are the ones every other path makes."""

    def read(item: tuple[str, tuple[Any, ...]]) -> ImageFile | ImageError:
        try:
            return read_image_file(item[0], *item[1])
        except ImageError as exc:
            return exc

    out: dict[str, Any] = dict(zip(paths, ordered_map(read, paths.items(), workers=max(1, workers), window=max(1, 2 * workers))))
    files = {path: result for path, result in out.items() if isinstance(result, ImageFile)}
    out.update(zip(files, decode_on_device(list(files.values()), device)))
    return out


def as_tensor(image: Any, device: str) -> Any:
    """A decoded image as a uint8 (3, height, width) tensor on ``device`` (a PIL image is copied there)."""
    import numpy as np
    import torch

    if isinstance(image, torch.Tensor):
        return image
    return torch.from_numpy(np.array(image.convert("RGB"), dtype=np.uint8)).permute(2, 0, 1).contiguous().to(device)


def _decode_one(data: Any, device: str) -> Any:
    from torchvision.io import ImageReadMode, decode_jpeg

    try:
        return decode_jpeg(data, mode=ImageReadMode.RGB, device=device)
    except RuntimeError:
        return None


def jpeg_file(image: Any) -> ImageFile:
    """A PIL image as the ImageFile of its JPEG encoding (for checks before a job: preflight)."""
    import hashlib
    import io

    buffer = io.BytesIO()
    image.save(buffer, format="JPEG")
    return ImageFile("synthetic.jpg", buffer.getvalue(), hashlib.sha256(buffer.getvalue()).hexdigest())


def device_jpeg_works(device: str) -> bool:
    """Whether torchvision decodes a JPEG on ``device`` here (a build without nvJPEG cannot)."""
    import torch
    from PIL import Image
    from torchvision.io import decode_jpeg

    data = jpeg_file(Image.new("RGB", (16, 8), (200, 100, 50))).data
    try:
        decoded = decode_jpeg([torch.frombuffer(bytearray(data), dtype=torch.uint8)], device=device)
        return tuple(decoded[0].shape) == (3, 8, 16)
    except (RuntimeError, NotImplementedError):
        return False


class StreamHandoff:
    """Work a producer thread launches on its own CUDA stream, handed to the consumer's stream.

    The producer runs `with handoff.producing():` and ends a batch with `handoff.ready()` (an
    event); the consumer calls `handoff.take(event, tensors)`: its stream waits for the event,
    and the caching allocator learns that the tensors are used there (so their memory is not
    reused by the producer's next batch while the consumer still reads them). On the CPU every
    call does nothing."""

    def __init__(self, device: str):
        import torch

        self.torch = torch
        self.stream = torch.cuda.Stream(device=device) if device.startswith("cuda") else None

    @contextlib.contextmanager
    def producing(self) -> Iterator[None]:
        if self.stream is None:
            yield
            return
        with self.torch.cuda.stream(self.stream):
            yield

    def ready(self) -> Any:
        if self.stream is None:
            return None
        event = self.torch.cuda.Event()
        event.record(self.stream)
        return event

    def take(self, event: Any, tensors: Sequence[Any]) -> None:
        if self.stream is None or event is None:
            return
        consumer = self.torch.cuda.current_stream(self.stream.device)
        consumer.wait_event(event)
        for tensor in tensors:
            if getattr(tensor, "is_cuda", False):
                tensor.record_stream(consumer)
