"""Synthetic photographs for the image-path tests: smooth colour fields with a little noise (as
photographs compress), saved as JPEG (baseline, progressive, grey, CMYK, with an EXIF
orientation) or PNG."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
from PIL import Image


def photo(width: int, height: int, seed: int = 0, *, grey_noise: bool = False) -> Image.Image:
    """Colour fields 40 px across, bilinear, with noise of ±12 per channel (or, ``grey_noise``,
    the same in every channel: texture in brightness, smooth colour, as in photographs)."""
    rng = np.random.default_rng(seed)
    coarse = Image.fromarray(rng.integers(0, 255, (height // 40 + 2, width // 40 + 2, 3), dtype=np.uint8))
    pixels = np.asarray(coarse.resize((width, height), Image.Resampling.BILINEAR), dtype=np.int16)
    noise = rng.integers(-12, 13, (height, width, 1) if grey_noise else pixels.shape)
    return Image.fromarray(np.clip(pixels + noise, 0, 255).astype(np.uint8))


def encoded(image: Image.Image, format: str = "JPEG", **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=format, **options)
    return buffer.getvalue()


def with_orientation(image: Image.Image, orientation: int) -> bytes:
    """A JPEG whose EXIF says how to turn the stored pixels upright."""
    exif = Image.Exif()
    exif[0x0112] = orientation
    return encoded(image, quality=90, exif=exif)


def write(folder: Path, files: dict[str, bytes]) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, data in files.items():
        (folder / name).write_bytes(data)
        paths[name] = folder / name
    return paths


def photo_jpegs(folder: Path, count: int, *, low: int = 120, high: int = 420, seed: int = 0) -> list[Path]:
    """``count`` JPEGs of low..high pixels a side."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(low, high + 1, size=(count, 2))
    return list(
        write(folder, {f"{i:04d}.jpg": encoded(photo(int(w), int(h), seed + i), quality=90) for i, (w, h) in enumerate(sizes)}).values()
    )


def image_collection(folder: Path, sizes: dict[str, tuple[int, int]], judge: str = "hostile_judges:ImageBytesJudge") -> Path:
    """Images of the given sizes (one colour each: small files whatever their size), one topic, every
    image judged non-relevant by the reference; a job judging them with ``judge``."""
    (folder / "images").mkdir()
    for number, (docid, size) in enumerate(sizes.items()):
        Image.new("RGB", size, (40 * number, 90, 200)).save(folder / "images" / f"{docid}.png")
    (folder / "topics.jsonl").write_text(json.dumps({"qid": "t1", "text": "a red bridge"}) + "\n")
    (folder / "images.jsonl").write_text("".join(json.dumps({"docid": d, "image": f"{d}.png"}) + "\n" for d in sizes))
    (folder / "qrels.txt").write_text("".join(f"t1 0 {d} 0\n" for d in sizes))
    job = {
        "database": "images.duckdb",
        "collection": {"topics": "topics.jsonl", "documents": "images.jsonl", "image_root": "images", "qrels": {"ref": "qrels.txt"}},
        "pool": {"qrels": "ref"},
        "judge": {"name": judge},
    }
    (folder / "job.yaml").write_text(json.dumps(job))
    return folder / "job.yaml"
