"""Image embeddings for FD over image collections (AToMiC and the like): the CLIPScore judge's
open_clip image tower (`qrelkit.embed.clip`), with the same embedder id, so the two share cached
vectors. Needs `pip install 'qrelkit[clip]'`; no weights are downloaded by qrelkit.

    embedder = load_image_embedder("ViT-B-32", "openai")                   # a pretrained tag (cached)
    embedder = load_image_embedder("ViT-B-32", "/models/clip-b32.pt")      # a local checkpoint file
    embedder = load_image_embedder("hf-hub:laion/CLIP-ViT-B-32-laion2B-s34B-b79K")  # in the HF cache
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from qrelkit.io.images import ImageError


class ImageEmbedder:
    """Image paths -> (n, dim) float32 unit rows from open_clip's `encode_image`, in input order."""

    modality = "image"

    def __init__(self, clip):
        from qrelkit.embed.clip import ClipImageEmbedder

        self.clip = clip
        self._inner = ClipImageEmbedder(clip)
        self.embedder_id = self._inner.embedder_id
        self.dim = clip.image_dim

    def encode(self, paths: Sequence[str | Path]) -> np.ndarray:
        """Raises ImageError (naming the file) when an image cannot be used: FD needs every one."""
        if not paths:
            return np.zeros((0, self.dim), dtype=np.float32)
        encoded = self.clip.encode_images([str(p) for p in paths])
        if encoded.errors:
            raise ImageError(encoded.errors[min(encoded.errors)])
        return encoded.vectors


def load_image_embedder(
    model: str = "ViT-B-32",
    pretrained: str | None = "openai",
    *,
    model_config: str | None = None,
    batch_size: int = 32,
    device: str = "cpu",
) -> ImageEmbedder:
    """An open_clip image embedder. ``model``: an open_clip architecture, or `hf-hub:<id>`;
    ``pretrained``: a pretrained tag or a local checkpoint file (ignored for hf-hub models);
    ``model_config``: a JSON file registering a custom architecture."""
    from qrelkit.embed.clip import ClipSource, OpenClip

    if model.startswith("hf-hub:"):
        source = ClipSource(hf_hub=model[len("hf-hub:") :], model_config=model_config)
    elif pretrained and (Path(pretrained).is_file() or pretrained.endswith((".pt", ".bin", ".safetensors"))):
        source = ClipSource(model=model, checkpoint=pretrained, model_config=model_config)
    else:
        source = ClipSource(model=model, pretrained=pretrained, model_config=model_config)
    return ImageEmbedder(OpenClip(source, device=device, batch_size=batch_size))


def parse_image_embedder_name(name: str) -> tuple[str, str | None] | None:
    """`open_clip:MODEL[:WEIGHTS]` (or `clip:...`) -> (model, weights); None for a text embedder name."""
    for prefix in ("open_clip:", "clip:"):
        if name.startswith(prefix):
            rest = name[len(prefix) :]
            if rest.startswith("hf-hub:"):
                return rest, None
            model, _, pretrained = rest.partition(":")
            return model, (pretrained or None)
    return None
