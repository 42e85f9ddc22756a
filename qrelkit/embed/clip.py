"""open_clip models for CLIPScore and image embeddings: loading, image decoding, encoders.

A model comes from an open_clip pretrained tag (needs the network once), a local checkpoint
file, or a Hugging Face hub id (`hf-hub:org/name`); a custom architecture can be registered
from a JSON config file (how tests build a tiny random model offline).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qrelkit.embed.base import l2_normalise, missing_extra
from qrelkit.errors import QrelkitError
from qrelkit.io.files import FileRefused, open_under_root, sha256_of

# Refuse images whose pixel count suggests a decompression bomb (PIL's own limit is a warning).
MAX_IMAGE_PIXELS = 89_478_485 * 2


class ImageLoadError(QrelkitError):
    """An image that cannot be used: missing, corrupt, or too large."""


def load_image(path: str | Path, root: str | Path | None = None):
    """Open an image as RGB with EXIF orientation applied; ImageLoadError says why it failed.
    Only a regular file, inside ``root`` (when given) at the moment it is opened."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    path = Path(path)
    try:  # hostile-input: the root is checked on the file actually opened, every time
        handle = open_under_root(path, root)
    except FileRefused as exc:
        raise ImageLoadError(f"image {path} {'not found' if exc.reason == 'file not found' else exc.reason}") from None
    try:
        with warnings.catch_warnings(), handle:
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(handle) as image:
                if image.width * image.height > MAX_IMAGE_PIXELS:
                    raise ImageLoadError(f"image {path} has {image.width}x{image.height} pixels, over the limit")
                image.load()
                return ImageOps.exif_transpose(image).convert("RGB")
    except ImageLoadError:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageLoadError(f"image {path} cannot be used: {exc}") from None
    except OSError as exc:
        raise ImageLoadError(f"image {path} is corrupt or truncated: {exc}") from None


def file_hash(path: str | Path, root: str | Path | None = None) -> str:
    with open_under_root(path, root) as handle:
        return sha256_of(handle)


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


def _resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise QrelkitError(f"device {device!r} asked for, but no CUDA GPU is visible")
    return device


class OpenClip:
    """One open_clip model with batched, no-grad image and text encoders (L2-normalised)."""

    def __init__(self, source: ClipSource, *, device: str = "auto", half: bool = False, batch_size: int = 32):
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
        self.device = _resolve_device(device)
        precision = "fp16" if half and self.device.startswith("cuda") else "fp32"
        name = f"hf-hub:{source.hf_hub}" if source.hf_hub else source.model
        try:
            self.model, _, self.preprocess = open_clip.create_model_and_transforms(
                name, pretrained=source.pretrained or source.checkpoint, device=self.device, precision=precision
            )
        except RuntimeError as exc:
            raise QrelkitError(f"cannot load CLIP model {source.model_id}: {exc}") from None
        self.model.eval()
        self.tokenizer = open_clip.get_tokenizer(name)
        self.context_length = getattr(self.tokenizer, "context_length", 77) or 77
        self.batch_size = batch_size
        self.source = source

    def tokens_needed(self, text: str) -> int | None:
        """Token count with start and end markers, when the tokenizer can tell."""
        encode = getattr(self.tokenizer, "encode", None)
        return len(encode(text)) + 2 if callable(encode) else None

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        # open_clip's tokenizer truncates to the context keeping the end-of-text token
        out = []
        with self.torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                tokens = self.tokenizer(list(texts[start : start + self.batch_size])).to(self.device)
                out.append(self.model.encode_text(tokens).float().cpu().numpy())
        return l2_normalise(np.concatenate(out)) if out else np.zeros((0, 0), np.float32)

    def encode_images(self, paths: Sequence[str | Path]) -> np.ndarray:
        out = []
        with self.torch.inference_mode():
            for start in range(0, len(paths), self.batch_size):
                batch = [self.preprocess(load_image(p)) for p in paths[start : start + self.batch_size]]
                pixels = self.torch.stack(batch).to(self.device)
                if next(self.model.parameters()).dtype == self.torch.float16:
                    pixels = pixels.half()
                out.append(self.model.encode_image(pixels).float().cpu().numpy())
        return l2_normalise(np.concatenate(out)) if out else np.zeros((0, 0), np.float32)


class ClipTextEmbedder:
    """The text tower as a TextEmbedder (for the store cache)."""

    def __init__(self, clip: OpenClip):
        self.clip = clip
        self.embedder_id = f"openclip:{clip.source.model_id}/text"
        self.dim = int(clip.model.text_projection.shape[-1]) if hasattr(clip.model, "text_projection") else 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.clip.encode_texts(texts).astype(np.float32)


class ClipImageEmbedder:
    """The image tower: encode(paths) -> (n, dim) float32, L2-normalised."""

    def __init__(self, clip: OpenClip):
        self.clip = clip
        self.embedder_id = f"openclip:{clip.source.model_id}/image"
        self.dim = 0

    def encode(self, paths: Sequence[str]) -> np.ndarray:
        vectors = self.clip.encode_images(paths).astype(np.float32)
        self.dim = vectors.shape[1] if len(vectors) else self.dim
        return vectors
