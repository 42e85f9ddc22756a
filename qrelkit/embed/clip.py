"""open_clip models for CLIPScore and image embeddings: loading, the image pipeline, encoders.

A model comes from an open_clip pretrained tag (needs the network once), a local checkpoint
file, or a Hugging Face hub id (`hf-hub:org/name`); a custom architecture can be registered
from a JSON config file (how tests build a tiny random model offline).

Images reach the visual tower through `qrelkit.embed.image_batches`: each file read once
(through `qrelkit.io.images`, which hashes the bytes it decodes), decoded and preprocessed
ahead of the batch being encoded, on the GPU (nvJPEG and tensor transforms) where there is one,
else in worker processes; the pixels enter in the visual tower's own dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qrelkit.embed.base import l2_normalise, missing_extra
from qrelkit.embed.device_images import jpeg_file
from qrelkit.embed.image_batches import ImageBatches, ImageSource
from qrelkit.errors import QrelkitError
from qrelkit.io.images import ImageFile
from qrelkit.machine import available_cores


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
        image_decode: str = "auto",
    ):
        """``image_decode``: auto (on the GPU where one decodes JPEGs, else on the CPU), device or cpu;
        ``decode_workers``: processes decoding on the CPU path (default: one per core)."""
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
        self.source = source
        self.images = ImageBatches(
            self.preprocess,
            device=self.device,
            batch_size=batch_size,
            decode_workers=decode_workers or available_cores(),
            image_decode=image_decode,
            input_dtype=lambda: visual_input_dtype(self.model),
        )

    @property
    def decode_workers(self) -> int:
        return self.images.decode_workers

    @property
    def transform(self) -> Any:
        """open_clip's eval transform as an ImageTransform (None for a transform of another shape)."""
        return self.images.transform

    def close(self) -> None:
        """Stop the image decoding processes, if any were started."""
        self.images.close()

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
        """One image's input before batching (see `ImageBatches.pixels`). Raises ImageError."""
        return self.images.pixels(source)

    def model_input(self, pixels: Sequence[Any]) -> Any:
        """A batch of `pixels` results on the device, normalised, in the visual tower's dtype."""
        return self.images.model_input(pixels)

    def encode_images(self, images: Sequence[ImageSource]) -> EncodedImages:
        """Encode images (ImageFiles already read, or paths); each is read and decoded once."""
        errors: dict[int, str] = {}
        rows: list[int] = []
        outputs = []
        with self.torch.inference_mode():
            for indices, batch, batch_errors in self.images.batches(images):
                errors.update(batch_errors)
                if batch is not None:
                    # stays on the device: the next batch is prepared while this one runs
                    outputs.append(self.model.encode_image(batch))
                    rows.extend(indices)
            vectors = np.full((len(images), self.image_dim), np.nan, dtype=np.float32)
            if outputs:
                vectors[rows] = l2_normalise(self.torch.cat(outputs).float().cpu().numpy())
        return EncodedImages(vectors, errors)

    def check_forward(self) -> None:
        """One text and one synthetic image through the real encode paths (on the GPU path a JPEG,
        through nvJPEG; the dtype and the device included), with finite results; raises what the
        model raises."""
        from PIL import Image

        synthetic = Image.new("RGB", (64, 48), (120, 90, 60))
        with self.torch.inference_mode():
            if self.images.path == "device":
                (_, pixels, errors), *_ = self.images.batches([jpeg_file(synthetic)])
                if errors:
                    raise QrelkitError(f"a synthetic JPEG cannot be decoded on {self.device}: {errors[0]}")
            else:
                pixels = self.model_input([self.pixels(synthetic)])
            image = self.model.encode_image(pixels)
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
