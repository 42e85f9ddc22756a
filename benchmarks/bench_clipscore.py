"""CLIPScore throughput in distinct images per second, against the two limits of the pipeline:

* encode: the model's `encode_image` on ready tensors (what the device can do);
* decode: reading, decoding and preprocessing on one core, times the cores (what the CPU can feed).

qrelkit's judge should reach the smaller of the two: decoding runs in a pool of threads (one per
core) ahead of the encoding. Also measured: the pool's decode rate alone, against one core's.

Synthetic JPEGs of 375-800 px (smooth content, as photographs compress), each pooled for three
topics. open_clip architectures with random weights: speed does not depend on the weights, and
no pretrained weights can be downloaded here. On the GPU machine (see ../shared/gpu/README.md):

    python benchmarks/bench_clipscore.py --device cuda --half --images 3000 --models ViT-B-32 ViT-L-14

Usage: python benchmarks/bench_clipscore.py [--images 120] [--models ViT-B-32 ViT-L-14] [--device cpu]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from qrelkit.embed.clip import ClipSource, OpenClip
from qrelkit.io import Document, Topic
from qrelkit.judges import Pair
from qrelkit.judges.clipscore import ClipScoreConfig, ClipScoreJudge
from qrelkit.machine import available_cores


def make_images(root: Path, count: int, seed: int = 0) -> list[Path]:
    """JPEGs of 375-800 px per side: smooth random colour fields with a little noise."""
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(count):
        width, height = (int(x) for x in rng.integers(375, 801, size=2))
        coarse = Image.fromarray(rng.integers(0, 255, (height // 40 + 2, width // 40 + 2, 3), dtype=np.uint8))
        image = np.asarray(coarse.resize((width, height), Image.BILINEAR), dtype=np.int16)
        image = np.clip(image + rng.integers(-12, 13, image.shape), 0, 255).astype(np.uint8)
        path = root / f"{i:05d}.jpg"
        Image.fromarray(image).save(path, quality=90)
        paths.append(path)
    return paths


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def encode_rate(clip: OpenClip, paths: list[Path], batch: int) -> float:
    """encode_image on ready tensors (decoded and preprocessed beforehand), best of three passes."""
    pixels = clip.model_input([clip.pixels(str(p)) for p in paths[:batch]])
    with torch.inference_mode():
        clip.model.encode_image(pixels[:2])  # warm-up
        best = float("inf")
        for _ in range(3):
            if clip.device.startswith("cuda"):
                torch.cuda.synchronize()
            start = time.perf_counter()
            clip.model.encode_image(pixels).float().cpu()
            best = min(best, time.perf_counter() - start)
    return rate(len(pixels), best)


def decode_rate(clip: OpenClip, paths: list[Path], workers: int) -> float:
    """Read + decode + preprocess (to the model's input, on the device) with ``workers`` threads, no encoding."""
    clip.decode_workers = workers
    sources = [str(p) for p in paths]
    start = time.perf_counter()
    done = 0
    for _, pixels, errors in clip._batches(sources):
        assert not errors
        if pixels:
            clip.model_input(pixels)
            done += len(pixels)
    return rate(done, time.perf_counter() - start)


def thread_scaling(workers: int, seconds: float = 0.5) -> float:
    """How much faster ``workers`` threads hash than one (sha256 releases the GIL): what this
    machine gives a pool right now. On a shared machine it is below ``workers``; it is the
    control for the decode pool's own ratio."""
    data = os.urandom(8 << 20)

    def hashed(count: int) -> float:
        with ThreadPoolExecutor(count) as pool:
            start = time.perf_counter()
            list(pool.map(lambda _: hashlib.sha256(data).digest(), range(4 * count)))
            return 4 * count / (time.perf_counter() - start)

    return max(hashed(workers) for _ in range(3)) / max(hashed(1) for _ in range(3))


def decode_rates(clip: OpenClip, paths: list[Path], cores: int, repeats: int = 3) -> tuple[float, float]:
    """(one core, a pool of ``cores`` threads): the best of ``repeats`` alternating passes each, so
    that a burst of load from other jobs on a shared machine does not decide the ratio."""
    threads = torch.get_num_threads()
    one_core, pool = 0.0, 0.0
    for _ in range(repeats):
        torch.set_num_threads(1)
        one_core = max(one_core, decode_rate(clip, paths, 1))
        torch.set_num_threads(threads)
        pool = max(pool, decode_rate(clip, paths, cores))
    return one_core, pool


def judge_rate(model: str, checkpoint: Path, paths: list[Path], args) -> tuple[float, int]:
    """Distinct images/s through the CLIPScore judge, each image pooled for three topics."""
    topics = [Topic(f"t{t}", f"section {t} about landmark number {t} and its history") for t in range(max(3, len(paths) // 10))]
    documents = [Document(p.stem, image=p.name, image_root=str(p.parent)) for p in paths]
    pairs = [Pair(topics[(i + k) % len(topics)], document) for i, document in enumerate(documents) for k in range(3)]
    config = ClipScoreConfig(
        model=model, checkpoint=str(checkpoint), device=args.device, half=args.half, batch_size=args.batch_size, text="query"
    )
    judge = ClipScoreJudge(config, None)
    judge.preflight()
    start = time.perf_counter()
    judgments = judge.judge(pairs)
    seconds = time.perf_counter() - start
    assert all(j.status == "ok" for j in judgments)
    return rate(len(paths), seconds), len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["ViT-B-32", "ViT-L-14"])
    parser.add_argument("--images", type=int, default=120, help="distinct images (ViT-L-14 on CPU: a quarter of them)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--half", action="store_true", help="fp16 on CUDA")
    parser.add_argument("--decode-only", action="store_true", help="only the decode rates (1 core, the pool), no model forward")
    parser.add_argument("--repeats", type=int, default=5, help="alternating decode passes; the best of each counts")
    args = parser.parse_args()
    cores = available_cores()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_images(Path(tmp), args.images)
        megabytes = sum(p.stat().st_size for p in paths) / 2**20
        for model in args.models:
            import open_clip

            torch.manual_seed(0)
            checkpoint = Path(tmp) / f"{model}.pt"
            torch.save(open_clip.create_model(model, pretrained=None).state_dict(), checkpoint)
            clip = OpenClip(ClipSource(model, checkpoint=str(checkpoint)), device=args.device, half=args.half, batch_size=args.batch_size)
            subset = paths if (args.device != "cpu" or model == "ViT-B-32") else paths[: max(8, len(paths) // 4)]
            control = thread_scaling(cores)
            one_core, pool = decode_rates(clip, paths, cores, args.repeats)
            if args.decode_only:
                encode, (judged, pairs) = float("nan"), (float("nan"), 0)
            else:
                encode = encode_rate(clip, subset, min(args.batch_size, len(subset)))
                judged, pairs = judge_rate(model, checkpoint, subset, args)
            limit = min(encode, one_core * cores) if not args.decode_only else one_core * cores
            rows.append((model, len(subset), pairs, encode, one_core, pool, control, judged, limit))
            del clip

    device = f"{torch.cuda.get_device_name()} ({'fp16' if args.half else 'fp32'})" if args.device.startswith("cuda") else "CPU (fp32)"
    print(f"machine: {platform.machine()}, {cores} cores, {device}, torch {torch.__version__}, load average {os.getloadavg()[0]:.1f}")
    print(f"images: {args.images} distinct JPEGs of 375-800 px ({megabytes:.1f} MiB), each pooled for 3 topics")
    print()
    print(
        "| model | encode on ready tensors | decode+preprocess, 1 core | same, pool of "
        f"{cores} | pool ÷ 1 core (machine's own {cores}-thread scaling) | limit min(encode, 1 core × {cores}) | "
        "qrelkit judge (distinct images) | share of limit |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for model, n, pairs, encode, one_core, pool, control, judged, limit in rows:
        print(
            f"| {model} | {encode:,.1f}/s | {one_core:,.1f}/s | {pool:,.1f}/s | {pool / one_core:.2f}× ({control:.2f}×) | {limit:,.1f}/s | "
            f"{judged:,.1f}/s ({n} images, {pairs} pairs) | {judged / limit:.0%} |"
        )


if __name__ == "__main__":
    main()
