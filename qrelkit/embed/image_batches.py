"""Images to batches of model input on the device, made ahead of the batch being encoded, so that
the model does not wait for pixels. Two paths, one result (open_clip's eval transform):

* ``device`` (the default on CUDA): a background thread reads a batch's files, decodes its JPEGs on
  the GPU (`device_images`: nvJPEG, with PIL on the CPU for the rest, each in its place), resizes,
  crops and normalises them there as tensors (`ImageTransform.tensor_pixels`), on its own CUDA
  stream, while the main thread encodes the batch before; the batch is handed over with an event.
* ``cpu``: worker processes (`decode_pool`, one per core) read, decode, resize and crop with PIL,
  a bounded number of images ahead, in input order; the main thread stacks the 8-bit pixels (into
  pinned memory on CUDA, copied without blocking) and normalises them on the device. With one
  worker, or a call too small to repay starting processes, a thread does it.

Each image is read once (an ImageFile already read is not read again) and decoded once; a failed
image is reported for its index with the reader's message, and the others go on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from qrelkit.embed.decode_pool import CHUNK, preprocess_chunk
from qrelkit.embed.device_images import StreamHandoff, decode_on_device, device_jpeg_works
from qrelkit.embed.transform import ImageTransform
from qrelkit.errors import QrelkitError
from qrelkit.io.images import ImageError, ImageFile, decode_image, read_image_file
from qrelkit.io.workers.parallel import ordered_map
from qrelkit.io.workers.processes import ProcessMap, can_start_processes

ImageSource = ImageFile | str | Path
ImageDecode = Literal["auto", "device", "cpu"]
Batch = tuple[list[int], Any, dict[int, str]]  # (indices of the encoded rows, model input or None, errors by index)
PROCESS_MIN_IMAGES = 64  # fewer images than this do not repay starting the worker processes (~0.3 s)


def choose_path(asked: str, device: str, transform: ImageTransform | None) -> Literal["device", "cpu"]:
    """``auto``: decode on the device where it is a GPU that torchvision decodes JPEGs on, else on
    the CPU. ``device`` needs open_clip's usual eval transform (resize, crop, normalise)."""
    if asked == "cpu":
        return "cpu"
    fits = transform is not None and transform.output_size is not None
    if asked == "device":
        if not fits:
            raise QrelkitError("image_decode: device needs open_clip's usual eval transform (resize, centre crop, normalise)")
        return "device"
    return "device" if fits and device.startswith("cuda") and device_jpeg_works(device) else "cpu"


class ImageBatches:
    """Batches of a model's pixel input from image files, on ``device`` in ``input_dtype()``."""

    def __init__(
        self,
        preprocess: Any,
        *,
        device: str,
        batch_size: int,
        decode_workers: int,
        image_decode: str = "auto",
        input_dtype: Callable[[], Any],
    ):
        import torch

        self.torch = torch
        self.preprocess = preprocess
        self.transform = ImageTransform.from_preprocess(preprocess)
        self.device = device
        self.batch_size = batch_size
        self.decode_workers = decode_workers
        self.input_dtype = input_dtype
        self.path = choose_path(image_decode, device, self.transform)
        self.constants = self.transform.constants(device) if self.transform is not None else None
        self.handoff = StreamHandoff(device) if self.path == "device" else None
        self.processes: ProcessMap | None = None

    # -- one image on the CPU -----------------------------------------------------------------------

    def pixels(self, source: ImageSource | Any) -> Any:
        """One image's input before batching: uint8 (height, width, 3) pixels from PIL's resize and
        crop (the transform's own PIL steps); the whole preprocess's tensor for a transform of
        another shape. ``source``: an ImageFile, a path, or a decoded PIL image. Raises ImageError."""
        if isinstance(source, (str, Path)):
            source = read_image_file(source)
        image = decode_image(source) if isinstance(source, ImageFile) else source
        if self.transform is None:
            return self.preprocess(image)
        return self.transform.pil_pixels(image)

    def _pixels_or_error(self, source: ImageSource) -> tuple[Any, str | None]:
        try:
            return self.pixels(source), None
        except ImageError as exc:
            return None, str(exc)

    def model_input(self, pixels: Sequence[Any]) -> Any:
        """A batch of `pixels` results on the device, normalised, in the input dtype."""
        torch = self.torch
        on_cuda = self.device.startswith("cuda")
        if self.transform is None:
            batch = torch.stack(list(pixels))
            if on_cuda:
                batch = batch.pin_memory().to(self.device, non_blocking=True)
            return batch.to(self.input_dtype())
        if on_cuda:  # numpy writes the batch straight into pinned memory; the copy does not block
            stacked = torch.empty((len(pixels), *pixels[0].shape), dtype=torch.uint8, pin_memory=True)
            np.stack(pixels, out=stacked.numpy())
            stacked = stacked.to(self.device, non_blocking=True)
        else:
            stacked = torch.from_numpy(np.stack(pixels))
        # ToTensor's layout (channels first, contiguous), then its ÷255 and Normalize
        return self.transform.normalise(stacked.permute(0, 3, 1, 2).contiguous(), self.constants).to(self.input_dtype())

    # -- batches ------------------------------------------------------------------------------------------

    def batches(self, images: Sequence[ImageSource]) -> Iterator[Batch]:
        """(indices, model input or None when none of the batch could be used, errors) per batch of
        ``batch_size`` images, in order."""
        if self.path == "device":
            return self._device_batches(images)
        return self._cpu_batches(images)

    def _cpu_batches(self, images: Sequence[ImageSource]) -> Iterator[Batch]:
        prepared = self._prepared_on_cpu(images)
        for start in range(0, len(images), self.batch_size):
            results = {index: next(prepared) for index in range(start, min(len(images), start + self.batch_size))}
            indices = [index for index, (_, error) in results.items() if error is None]
            errors = {index: error for index, (_, error) in results.items() if error is not None}
            pixels = [results[index][0] for index in indices]
            yield indices, (self.model_input(pixels) if pixels else None), errors

    def _prepared_on_cpu(self, images: Sequence[ImageSource]) -> Iterator[tuple[Any, str | None]]:
        """(pixels, None) or (None, error) per image in order, up to two batches ahead."""
        transform = self.transform
        large = self.processes is not None or len(images) >= PROCESS_MIN_IMAGES
        if transform is not None and self.decode_workers > 1 and large and can_start_processes():
            if self.processes is None:
                self.processes = ProcessMap(self.decode_workers, what="decoding images", option="decode_workers")
            chunks = ((transform, images[start : start + CHUNK]) for start in range(0, len(images), CHUNK))
            window = max(2 * self.decode_workers, 2 * self.batch_size // CHUNK)
            for results in self.processes.map(preprocess_chunk, chunks, window=window):
                yield from results
        else:
            yield from ordered_map(self._pixels_or_error, images, workers=self.decode_workers, window=2 * self.batch_size)

    def _device_batches(self, images: Sequence[ImageSource]) -> Iterator[Batch]:
        assert self.handoff is not None
        starts = range(0, len(images), self.batch_size)
        # one thread prepares the next two batches (decode, resize, normalise) while this one is encoded
        prepared = ordered_map(lambda start: self._device_batch(images[start : start + self.batch_size]), starts, workers=1, window=2)
        for start, (rows, batch, errors, ready) in zip(starts, prepared):
            if batch is not None:
                self.handoff.take(ready, [batch])
            yield [start + row for row in rows], batch, {start + row: error for row, error in errors.items()}

    def _device_batch(self, sources: Sequence[ImageSource]) -> tuple[list[int], Any, dict[int, str], Any]:
        """One batch prepared on the device: (rows used, the model input, errors by row, the event
        that says it is ready)."""
        torch = self.torch
        assert self.transform is not None and self.handoff is not None and self.transform.output_size is not None
        files, errors = self._read(sources)
        with torch.inference_mode(), self.handoff.producing():
            decoded = decode_on_device([file for _, file in files], self.device)
            usable = []
            for (row, _), image in zip(files, decoded):
                if isinstance(image, ImageError):
                    errors[row] = str(image)
                else:
                    usable.append((row, image))
            if not usable:
                return [], None, errors, None
            batch = torch.empty((len(usable), 3, *self.transform.output_size), dtype=torch.float32, device=self.device)
            same_size: dict[tuple[int, ...], list[int]] = {}  # images of one size are resized in one call
            for slot, (_, image) in enumerate(usable):
                if isinstance(image, torch.Tensor):
                    same_size.setdefault(tuple(image.shape), []).append(slot)
                else:  # decoded by PIL: PIL's resize and crop, as on the CPU path
                    batch[slot].copy_(torch.from_numpy(self.transform.pil_pixels(image)).permute(2, 0, 1))
            for slots in same_size.values():
                if len(slots) == 1:
                    self.transform.tensor_pixels(usable[slots[0]][1], batch[slots[0]])
                else:
                    resized = torch.empty((len(slots), *batch.shape[1:]), dtype=torch.float32, device=self.device)
                    self.transform.tensor_pixels(torch.stack([usable[slot][1] for slot in slots]), resized)
                    for row, slot in enumerate(slots):  # not an index tensor: its copy to the device would wait
                        batch[slot].copy_(resized[row])
            batch = self.transform.normalise(batch, self.constants).to(self.input_dtype())
            return [row for row, _ in usable], batch, errors, self.handoff.ready()

    def _read(self, sources: Sequence[ImageSource]) -> tuple[list[tuple[int, ImageFile]], dict[int, str]]:
        """The batch's files (those not read yet are read by threads, once each) and read errors by row."""

        def read(source: ImageSource) -> ImageFile | str:
            if isinstance(source, ImageFile):
                return source
            try:
                return read_image_file(source)
            except ImageError as exc:
                return str(exc)

        if all(isinstance(source, ImageFile) for source in sources):  # read already (the CLIPScore judge)
            return [(row, source) for row, source in enumerate(sources) if isinstance(source, ImageFile)], {}
        workers = max(1, min(self.decode_workers, len(sources)))
        results = list(enumerate(ordered_map(read, sources, workers=workers, window=max(1, len(sources)))))
        files = [(row, result) for row, result in results if isinstance(result, ImageFile)]
        return files, {row: result for row, result in results if isinstance(result, str)}

    def close(self) -> None:
        """Stop the worker processes (they are kept between calls)."""
        if self.processes is not None:
            processes, self.processes = self.processes, None
            processes.close()
