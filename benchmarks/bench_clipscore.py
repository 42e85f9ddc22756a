"""CLIPScore throughput in distinct images per second, for both image paths, against their limits:

* encode: the model's `encode_image` on ready tensors (what the device can do);
* the GPU path (``image_decode: device``): nvJPEG and tensor transforms on the device, alone;
* the CPU path (``image_decode: cpu``): one core's read + decode + preprocess (PIL), and the
  judge's worker processes doing it alone, against the machine's own scaling over as many
  processes (a pure CPU task: the control);
* the clipscore judge, whole job (3 topics per image), on each path, and how far apart their
  scores are (the largest difference of 2.5·cos over the pairs).

Synthetic JPEGs of 375-800 px (smooth colour fields with noise, as photographs compress), each
pooled for three topics. open_clip architectures with random weights: speed does not depend on the
weights, and no pretrained weights can be downloaded here. On the GPU machine (../shared/gpu/README.md):

    python benchmarks/bench_clipscore.py --device cuda --half --models ViT-B-32 ViT-L-14

(3,000 images by default on CUDA, under 3 minutes on an H100; 120 on the CPU.)

Usage: python benchmarks/bench_clipscore.py [--images N] [--models ViT-B-32 ViT-L-14] [--device cpu|cuda] [--half]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from qrelkit.embed.clip import OpenClip, visual_input_dtype
from qrelkit.embed.image_batches import ImageBatches
from qrelkit.io import Document, Topic
from qrelkit.io.images import decode_image, read_image_file
from qrelkit.io.workers.processes import ProcessMap
from qrelkit.judges import Pair
from qrelkit.judges.clipscore import ClipScoreConfig, ClipScoreJudge
from qrelkit.machine import available_cores


def _make_images(task: tuple[str, int, int]) -> list[str]:
    """Images start..stop-1 into ``folder``; image i is drawn from seed i alone (the same set
    whatever the number of processes)."""
    folder, start, stop = task
    paths = []
    for i in range(start, stop):
        rng = np.random.default_rng(i)
        width, height = (int(x) for x in rng.integers(375, 801, size=2))
        coarse = Image.fromarray(rng.integers(0, 255, (height // 40 + 2, width // 40 + 2, 3), dtype=np.uint8))
        image = np.asarray(coarse.resize((width, height), Image.Resampling.BILINEAR), dtype=np.int16)
        image = np.clip(image + rng.integers(-12, 13, image.shape), 0, 255).astype(np.uint8)
        path = Path(folder) / f"{i:05d}.jpg"
        Image.fromarray(image).save(path, quality=90)
        paths.append(str(path))
    return paths


def make_images(root: Path, count: int) -> list[Path]:
    """JPEGs of 375-800 px per side, made by one process per core."""
    root.mkdir(parents=True, exist_ok=True)
    step = max(1, -(-count // (4 * available_cores())))
    tasks = [(str(root), start, min(count, start + step)) for start in range(0, count, step)]
    if len(tasks) == 1:
        return [Path(p) for p in _make_images(tasks[0])]
    # fork: the images are made before any CUDA work, and a fork needs no import of this script
    with ProcessPoolExecutor(available_cores(), mp_context=multiprocessing.get_context("fork")) as pool:
        return [Path(p) for chunk in pool.map(_make_images, tasks) for p in chunk]


def images_in(folder: Path, count: int) -> list[Path]:
    """``count`` of the images `make_images` makes, reusing those already in ``folder``."""
    present = sorted(folder.glob("*.jpg")) if folder.is_dir() else []
    return present[:count] if len(present) >= count else make_images(folder, count)


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def figure(speed: float) -> str:
    """A rate as the table prints it: whole numbers, two significant digits below 10 (a CPU's ViT-L-14)."""
    return f"{speed:,.0f}" if speed >= 10 else f"{speed:.2g}"


def synchronise(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def encode_rate(clip: OpenClip, paths: list[Path], batch: int) -> float:
    """encode_image on ready tensors (decoded and preprocessed beforehand), best of three passes."""
    pixels = clip.model_input([clip.pixels(str(p)) for p in paths[:batch]])
    with torch.inference_mode():
        clip.model.encode_image(pixels[:2])  # warm-up
        best = float("inf")
        for _ in range(3):
            synchronise(clip.device)
            start = time.perf_counter()
            clip.model.encode_image(pixels).float().cpu()
            best = min(best, time.perf_counter() - start)
    return rate(len(pixels), best)


def one_core_rate(clip: OpenClip, paths: list[Path]) -> float:
    """Read + decode + resize and crop with PIL in this thread: the CPU path's work per image."""
    start = time.perf_counter()
    for path in paths:
        clip.images.transform.pil_pixels(decode_image(read_image_file(path)))
    return rate(len(paths), time.perf_counter() - start)


def path_rate(clip: OpenClip, paths: list[Path], image_decode: str, workers: int) -> float:
    """Images to model input on the device, no encoding, on one path (processes kept warm: started
    by a first small pass)."""
    images = ImageBatches(
        clip.preprocess,
        device=clip.device,
        batch_size=clip.images.batch_size,
        decode_workers=workers,
        image_decode=image_decode,
        input_dtype=lambda: visual_input_dtype(clip.model),
    )
    try:
        for _ in images.batches([str(p) for p in paths[: max(64, 4 * workers)]]):
            pass
        synchronise(clip.device)
        start = time.perf_counter()
        done = 0
        for indices, _, errors in images.batches([str(p) for p in paths]):
            assert not errors, errors
            done += len(indices)
        synchronise(clip.device)
        return rate(done, time.perf_counter() - start)
    finally:
        images.close()


def process_scaling(workers: int) -> float:
    """How much faster ``workers`` processes run a pure CPU task than one (the same pool code):
    what this machine gives the decoding processes right now."""

    def tasks_per_second(count: int) -> float:
        pool = ProcessMap(count, what="the control task", option="workers")
        try:
            list(pool.map(sum, [range(10)] * count, window=count))  # start the processes
            start = time.perf_counter()
            list(pool.map(sum, [range(3_000_000)] * (4 * count), window=2 * count))
            return 4 * count / (time.perf_counter() - start)
        finally:
            pool.close()

    return tasks_per_second(workers) / tasks_per_second(1)


def judged(model: str, checkpoint: Path, paths: list[Path], args, image_decode: str) -> tuple[float, np.ndarray, ClipScoreJudge]:
    """(distinct images/s of the judge on all pairs in one call, 2.5·cos per pair, the judge)."""
    topics = [Topic(f"t{t}", f"section {t} about landmark number {t} and its history") for t in range(max(3, len(paths) // 30))]
    documents = [Document(p.stem, image=p.name, image_root=str(p.parent)) for p in paths]
    pairs = [Pair(topics[(i + k) % len(topics)], document) for i, document in enumerate(documents) for k in range(3)]
    config = ClipScoreConfig(
        model=model,
        checkpoint=str(checkpoint),
        device=args.device,
        half=args.half,
        batch_size=args.batch_size,
        text="query",
        image_decode=image_decode,
    )
    judge = ClipScoreJudge(config, None)
    judge.preflight()
    synchronise(judge.clip.device)
    start = time.perf_counter()
    judgments = judge.judge(pairs)
    seconds = time.perf_counter() - start
    assert all(j.status == "ok" for j in judgments), {j.error for j in judgments if j.status != "ok"}
    judge.close()
    return rate(len(paths), seconds), 2.5 * np.array([float(j.raw_output.removeprefix("cos=")) for j in judgments]), judge


def measure(model: str, paths: list[Path], folder: Path, args, cores: int) -> dict[str, float]:
    import open_clip

    torch.manual_seed(0)
    checkpoint = folder / f"{model}.pt"
    torch.save(open_clip.create_model(model, pretrained=None).state_dict(), checkpoint)
    row: dict[str, float] = {}
    device_speed, device_scores, judge = judged(model, checkpoint, paths, args, "device")
    clip = judge.clip
    row["encode"] = encode_rate(clip, paths, min(args.batch_size, len(paths)))
    row["one core"] = one_core_rate(clip, paths[: args.one_core_images])
    row["processes"] = path_rate(clip, paths, "cpu", cores)
    row["device"] = path_rate(clip, paths, "device", cores)
    del judge, clip
    cpu_speed, cpu_scores, _ = judged(model, checkpoint, paths, args, "cpu")
    row.update(
        {
            "judge device": device_speed,
            "judge cpu": cpu_speed,
            "delta": float(np.abs(device_scores - cpu_scores).max()),
        }
    )
    checkpoint.unlink()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["ViT-B-32", "ViT-L-14"])
    parser.add_argument("--images", type=int, default=None, help="distinct images (default: 3,000 on CUDA, 120 on the CPU)")
    parser.add_argument("--batch-size", type=int, default=None, help="images per forward pass (default: 256 on CUDA, 32 on the CPU)")
    parser.add_argument("--one-core-images", type=int, default=300, help="images for the one-core rate")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--half", action="store_true", help="fp16 on CUDA")
    parser.add_argument(
        "--image-dir", type=Path, default=None, help="make the images here, or reuse those there (default: a temporary folder)"
    )
    args = parser.parse_args()
    on_cuda = args.device.startswith("cuda")
    args.images = args.images or (3000 if on_cuda else 120)
    args.batch_size = args.batch_size or (256 if on_cuda else 32)
    cores = available_cores()
    started = time.perf_counter()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = images_in(args.image_dir or Path(tmp) / "images", args.images)
        megabytes = sum(p.stat().st_size for p in paths) / 2**20
        made = time.perf_counter() - started
        for model in args.models:
            rows[model] = measure(model, paths, Path(tmp), args, cores)

    device = f"{torch.cuda.get_device_name()} ({'fp16' if args.half else 'fp32'})" if on_cuda else "CPU (fp32)"
    where = "GPU" if on_cuda else "device path run on the CPU"
    control = process_scaling(cores)
    print(f"machine: {platform.machine()}, {cores} cores, {device}, torch {torch.__version__}, load average {os.getloadavg()[0]:.1f}")
    print(
        f"images: {args.images} distinct JPEGs of 375-800 px ({megabytes:.1f} MiB, made in {made:.1f} s), each pooled for 3 topics; "
        f"batch {args.batch_size}; one core measured on {min(args.one_core_images, args.images)} images"
    )
    print()
    print("| distinct images/s | " + " | ".join(rows) + " |")
    print("|---|" + "---:|" * len(rows))
    lines = [
        (f"encode on ready tensors (batch {args.batch_size})", lambda r: figure(r["encode"])),
        (f"decode + preprocess on the {where} (nvJPEG, tensor transforms), alone", lambda r: figure(r["device"])),
        ("decode + preprocess, one core (PIL)", lambda r: figure(r["one core"])),
        (
            f"the judge's {cores} decoding processes, alone (× one core; machine's own {cores}-process scaling {control:.1f}×)",
            lambda r: f"{figure(r['processes'])} ({r['processes'] / r['one core']:.1f}×)",
        ),
        (
            "**clipscore judge, whole job, image_decode: device** (share of encode)",
            lambda r: f"**{figure(r['judge device'])}** ({r['judge device'] / r['encode']:.0%})",
        ),
        (
            "**clipscore judge, whole job, image_decode: cpu** (share of min(encode, processes))",
            lambda r: f"**{figure(r['judge cpu'])}** ({r['judge cpu'] / min(r['encode'], r['processes']):.0%})",
        ),
        ("largest difference of 2.5·cos between the two paths, over all pairs", lambda r: f"{r['delta']:.1e}"),
    ]
    for label, cell in lines:
        print(f"| {label} | " + " | ".join(cell(r) for r in rows.values()) + " |")
    print(f"\n(whole run {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
