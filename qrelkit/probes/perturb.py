"""A probe applied to one (topic, document) pair: the perturbed text, or the perturbed image as PNG
bytes, or why the pair could not be perturbed (an image that cannot be read; a text probe on an
image). Pure: nothing is written here; the caller stores the copy and hashes it."""

from __future__ import annotations

from dataclasses import dataclass

from qrelkit.errors import PairInputError
from qrelkit.io import Document, Topic, sha256_bytes, sha256_text
from qrelkit.probes import text as texts
from qrelkit.probes.spec import Probe


@dataclass(frozen=True)
class Perturbed:
    """A document's perturbed copy: ``text`` or ``image`` (PNG bytes), or ``error``."""

    text: str | None = None
    image: bytes | None = None
    error: str | None = None

    @property
    def sha256(self) -> str:
        """The hash of the copy's text or image bytes ("" for a copy that could not be made)."""
        if self.text is not None:
            return sha256_text(self.text)
        return sha256_bytes(self.image) if self.image is not None else ""


def _text(probe: Probe, topic: Topic, document: Document, text: str) -> str:
    settings, seed, qid, docid = probe.settings(), probe.seed, topic.qid, document.docid
    if probe.perturbation == "query-terms":
        return texts.query_terms(text, topic.text, settings, seed, qid, docid)
    if probe.perturbation == "instruction":
        return texts.instruction(text, topic.text, settings)
    if probe.perturbation == "padding":
        return texts.padding(text, settings, seed, qid, docid)
    if probe.perturbation == "truncate":
        return texts.truncate(text, settings)
    return texts.sentence_order(text, seed, qid, docid)


def _image(probe: Probe, topic: Topic, document: Document) -> bytes:
    import qrelkit.probes.image as images  # PIL only where an image is perturbed
    from qrelkit.io.images import load_image

    assert document.image_path is not None
    source = load_image(document.image_path, document.image_root, document.image_sha256)
    settings, seed, qid, docid = probe.settings(), probe.seed, topic.qid, document.docid
    if probe.perturbation == "typographic":
        return images.typographic(source, settings.text.replace("{query}", topic.text), settings)
    if probe.perturbation == "blank":
        return images.blank(source, settings)
    if probe.perturbation == "noise":
        return images.noise(source, seed, qid, docid)
    if probe.perturbation == "crop":
        return images.crop(source, settings, seed, qid, docid)
    return images.scale(source, settings)


def perturb(probe: Probe, topic: Topic, document: Document) -> Perturbed:
    """The probe's copy of ``document`` for ``topic`` (the same bytes every time for the same inputs)."""
    if probe.modality == "text":
        if document.text is None:
            return Perturbed(error=f"probe {probe.id!r} perturbs text, but document {document.docid!r} has none (an image?)")
        return Perturbed(text=_text(probe, topic, document, document.text))
    if document.image is None:
        return Perturbed(error=f"probe {probe.id!r} perturbs images, but document {document.docid!r} has none")
    try:
        return Perturbed(image=_image(probe, topic, document))
    except PairInputError as exc:  # the image cannot be read or decoded: this pair's input error
        return Perturbed(error=str(exc))
