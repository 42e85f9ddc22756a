"""open_clip models for CLIPScore and image embeddings: loading, the image pipeline, encoders.

A model comes from an open_clip pretrained tag (needs the network once), a local checkpoint
file, or a Hugging Face hub id (`hf-hub:org/name`); a custom architecture can be registered
from a JSON config file (how tests build a tiny random model offline).

Images go through one pipeline, built so that the model never waits for pixels:

* a pool of threads, one per core, reads each file once (through `qrelkit.io.images`, which
  hashes the same bytes it decodes), decodes it and runs the PIL part of the model's own
  preprocessing (resize, crop), up to two batches ahead of the batch being encoded;
* a failed image is reported for its index, found where it is decoded; the others go on;
* on CUDA the pixels travel as uint8 (a quarter of float32's bytes), written by numpy into
  pinned memory and copied without blocking, and become float, normalised and cast to the
  visual tower's own dtype on the device, with the same operations as torchvision's ToTensor
  and Normalize; on the CPU the decoding threads do those operations in numpy. No torch call
  runs beside the decoding threads: torch's own thread pool, spinning in the main thread,
  halved the pool's rate on a busy machine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qrelkit.embed.base import l2_normalise, missing_extra
from qrelkit.errors import QrelkitError
from qrelkit.io.images import ImageError, ImageFile, decode_image, read_image_file
from qrelkit.io.parallel import ordered_map
from qrelkit.machine import available_cores

ImageSource = ImageFile | str | Path


@dataclass(frozen=True)
class ClipSource:
    """Where the weights come from: exactly one of pretrained tag, checkpoint file, hub id."""

    model: str = "ViT-B-32"
    pretrained: str | None = None
    checkpoint: str | None = None
    hf_hub: str | None = None
    model_config: str | None = None  # a JSON file registering a custom architecture

    @property
    def model_id(self) -> str:
        if self.hf_hub:
            return f"hf-hub:{self.hf_hub}"
        weights = self.pretrained or (Path(self.checkpoint).name if self.checkpoint else "random")
        return f"{self.model}/{weights}"


@dataclass
class EncodedImages:
    """(n, dim) float32 unit rows in input order; a failed image's row is NaN and its index
    is in ``errors`` with the reason."""

    vectors: np.ndarray
    errors: dict[int, str]


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise QrelkitError(f"device {device!r} asked for, but no CUDA GPU is visible")
    return device


def visual_input_dtype(model: Any) -> Any:
    """The dtype of the layer the pixels enter (a ViT's patch-embedding conv, a ResNet's stem).
    Not the first parameter's: open_clip's fp16 keeps class and positional embeddings and the
    norms in fp32, so a model can start with an fp32 parameter and still need fp16 pixels."""
    import torch

    for module in model.visual.modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)):
            return module.weight.dtype
    return next(model.visual.parameters()).dtype


def split_preprocess(preprocess: Any) -> tuple[Callable[[Any], Any], tuple[list[float], list[float]]] | None:
    """open_clip's eval transform as (its PIL steps, (mean, std) of its Normalize) when it ends in
    ToTensor + Normalize, so those two can run batched on the device; None for any other shape."""
    from torchvision import transforms

    steps = list(getattr(preprocess, "transforms", []))
    if len(steps) < 2 or not isinstance(steps[-2], transforms.ToTensor) or not isinstance(steps[-1], transforms.Normalize):
        return None
    normalize = steps[-1]
    return transforms.Compose(steps[:-2]), (list(normalize.mean), list(normalize.std))


class OpenClip:
    """One open_clip model with batched, inference-mode image and text encoders (L2-normalised)."""

    def __init__(
        self,
        source: ClipSource,
        *,
        device: str = "auto",
        half: bool = False,
        batch_size: int = 32,
        text_batch_size: int = 256,
        decode_workers: int | None = None,
    ):
        try:
            import open_clip
            import torch
        except ImportError:
            raise missing_extra("open-clip-torch", "clip", "CLIP models") from None
        chosen = [x for x in (source.pretrained, source.checkpoint, source.hf_hub) if x]
        if len(chosen) > 1:
            raise QrelkitError("give one of `pretrained`, `checkpoint` or `hf_hub`, not several")
        if source.model_config:
            config = Path(source.model_config)
            if not config.is_file():
                raise QrelkitError(f"model_config {config} not found")
            open_clip.add_model_config(config)
        if source.checkpoint and not Path(source.checkpoint).is_file():
            raise QrelkitError(f"CLIP checkpoint {source.checkpoint} not found")
        self.torch = torch
        self.device = resolve_device(device)
        self.precision = "fp16" if half and self.device.startswith("cuda") else "fp32"
        name = f"hf-hub:{source.hf_hub}" if source.hf_hub else source.model
        try:
            self.model, _, self.preprocess = open_clip.create_model_and_transforms(
                name, pretrained=source.pretrained or source.checkpoint, device=self.device, precision=self.precision
            )
        except RuntimeError as exc:
            raise QrelkitError(f"cannot load CLIP model {source.model_id}: {exc}") from None
        self.model.eval()
        self.tokenizer = open_clip.get_tokenizer(name)
        self.context_length = getattr(self.tokenizer, "context_length", 77) or 77
        self.batch_size = batch_size
        self.text_batch_size = text_batch_size
        self.decode_workers = decode_workers or available_cores()
        self.source = source
        self._split = split_preprocess(self.preprocess)

    # -- texts ------------------------------------------------------------------------------------

    def tokens_needed(self, text: str) -> int | None:
        """Token count with start and end markers, when the tokenizer can tell."""
        encode = getattr(self.tokenizer, "encode", None)
        return len(encode(text)) + 2 if callable(encode) else None

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        # open_clip's tokenizer truncates to the context keeping the end-of-text token
        outputs = []
        with self.torch.inference_mode():
            for start in range(0, len(texts), self.text_batch_size):
                tokens = self.tokenizer(list(texts[start : start + self.text_batch_size]))
                outputs.append(self.model.encode_text(tokens.to(self.device, non_blocking=True)))
            if not outputs:
                return np.zeros((0, 0), np.float32)
            return l2_normalise(self.torch.cat(outputs).float().cpu().numpy())

    # -- images -----------------------------------------------------------------------------------

    @property
    def image_dim(self) -> int:
        dim = getattr(self.model.visual, "output_dim", None)
        if dim:
            return int(dim)
        size = getattr(self.model.visual, "image_size", 224)
        size = size if isinstance(size, int) else size[0]
        with self.torch.inference_mode():
            pixels = self.torch.zeros(1, 3, size, size, device=self.device, dtype=visual_input_dtype(self.model))
            return int(self.model.encode_image(pixels).shape[-1])

    def pixels(self, source: ImageSource | Any) -> Any:
        """One image's model input before batching, made without torch (whose thread pool, busy
        in the main thread, would take the decoding threads' cores): on CUDA uint8 HWC, converted
        on the device; on the CPU float32 CHW, converted here with torchvision's ToTensor and
        Normalize operations in numpy (the same float32 arithmetic, the same values); the full
        preprocess's tensor for a transform of another shape. ``source``: an ImageFile, a path,
        or a decoded PIL image. Raises ImageError."""
        if isinstance(source, (str, Path)):
            source = read_image_file(source)
        image = decode_image(source) if isinstance(source, ImageFile) else source
        if self._split is None:
            return self.preprocess(image)
        pil_steps, (mean, std) = self._split
        array = np.array(pil_steps(image).convert("RGB"), dtype=np.uint8)
        if self.device.startswith("cuda"):
            return array
        chw = array.transpose(2, 0, 1).astype(np.float32) / np.float32(255)
        return (chw - np.asarray(mean, np.float32)[:, None, None]) / np.asarray(std, np.float32)[:, None, None]

    def _pixels_or_error(self, source: ImageSource) -> tuple[Any, str | None]:
        try:
            return self.pixels(source), None
        except ImageError as exc:
            return None, str(exc)

    def model_input(self, pixels: Sequence[Any]) -> Any:
        """A batch of `pixels` results on the device, in the visual tower's dtype."""
        torch = self.torch
        dtype = visual_input_dtype(self.model)
        if self._split is None:
            batch = torch.stack(list(pixels))
            if self.device.startswith("cuda"):
                batch = batch.pin_memory().to(self.device, non_blocking=True)
            return batch.to(dtype)
        if not self.device.startswith("cuda"):
            return torch.from_numpy(np.stack(pixels)).to(self.device, dtype)
        # numpy writes the batch straight into pinned memory; the copy to the device does not block
        pinned = torch.empty((len(pixels), *pixels[0].shape), dtype=torch.uint8, pin_memory=True)
        np.stack(pixels, out=pinned.numpy())
        batch = pinned.to(self.device, non_blocking=True)
        # torchvision's ToTensor (permute, contiguous, float, /255) and Normalize (sub_, div_), on the device
        mean, std = (torch.tensor(v, dtype=torch.float32, device=batch.device).view(1, -1, 1, 1) for v in self._split[1])
        return batch.permute(0, 3, 1, 2).contiguous().to(torch.float32).div(255).sub_(mean).div_(std).to(dtype)

    def _batches(self, images: Sequence[ImageSource]) -> Iterator[tuple[list[int], list[Any], dict[int, str]]]:
        """(indices, pixels, errors) per batch, decoded by the pool up to two batches ahead."""
        prepared = ordered_map(self._pixels_or_error, images, workers=self.decode_workers, window=2 * self.batch_size)
        for start in range(0, len(images), self.batch_size):
            indices, pixels, errors = [], [], {}
            for index in range(start, min(len(images), start + self.batch_size)):
                tensor, error = next(prepared)
                if error is None:
                    indices.append(index)
                    pixels.append(tensor)
                else:
                    errors[index] = error
            yield indices, pixels, errors

    def encode_images(self, images: Sequence[ImageSource]) -> EncodedImages:
        """Encode images (ImageFiles already read, or paths); each is read and decoded once."""
        errors: dict[int, str] = {}
        rows: list[int] = []
        outputs = []
        with self.torch.inference_mode():
            for indices, pixels, batch_errors in self._batches(images):
                errors.update(batch_errors)
                if pixels:
                    # stays on the device: the next batch is collated while this one runs
                    outputs.append(self.model.encode_image(self.model_input(pixels)))
                    rows.extend(indices)
            vectors = np.full((len(images), self.image_dim), np.nan, dtype=np.float32)
            if outputs:
                vectors[rows] = l2_normalise(self.torch.cat(outputs).float().cpu().numpy())
        return EncodedImages(vectors, errors)

    def check_forward(self) -> None:
        """One text and one synthetic image through the real encode paths (dtype and device
        included), with finite results; raises what the model raises."""
        from PIL import Image

        with self.torch.inference_mode():
            image = self.model.encode_image(self.model_input([self.pixels(Image.new("RGB", (64, 48), (120, 90, 60)))]))
            text = self.model.encode_text(self.tokenizer(["a photo"]).to(self.device))
        for name, output in (("image", image), ("text", text)):
            if not bool(self.torch.isfinite(output.float()).all()):
                raise QrelkitError(f"the {name} encoder returns non-finite values")


class ClipTextEmbedder:
    """The text tower as a TextEmbedder (for the store cache)."""

    def __init__(self, clip: OpenClip):
        self.clip = clip
        self.embedder_id = f"openclip:{clip.source.model_id}/text"
        self.dim = int(clip.model.text_projection.shape[-1]) if hasattr(clip.model, "text_projection") else 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.clip.encode_texts(texts).astype(np.float32)


class ClipImageEmbedder:
    """The image tower for the store cache: encode(images) -> (n, dim) float32 unit rows.

    A failed image's row is NaN (the cache neither stores nor returns it) and the reason is kept
    in ``errors``, keyed by the image's content hash (an ImageFile) or its path."""

    def __init__(self, clip: OpenClip):
        self.clip = clip
        self.embedder_id = f"openclip:{clip.source.model_id}/image"
        self.dim = 0
        self.errors: dict[str, str] = {}

    def encode(self, images: Sequence[ImageSource]) -> np.ndarray:
        encoded = self.clip.encode_images(images)
        for index, error in encoded.errors.items():
            source = images[index]
            self.errors[source.sha256 if isinstance(source, ImageFile) else str(source)] = error
        self.dim = encoded.vectors.shape[1]
        return encoded.vectors
