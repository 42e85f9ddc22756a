"""CLIPScore throughput on CPU, with and without embedding reuse.

A pool of 40 images × 20 topics where each image is pooled for 5 topics (200 pairs), as in
depth pooling where systems retrieve the same images. The architecture is open_clip's
ViT-B-32 with random weights: speed does not depend on the weights, and no pretrained weights
can be downloaded here.

Usage: python benchmarks/bench_clipscore.py [--model ViT-B-32]
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from qrelkit.embed.clip import ClipSource, OpenClip
from qrelkit.io import Document, Topic
from qrelkit.judges import Pair
from qrelkit.judges.clipscore import ClipScoreConfig, ClipScoreJudge


def make_pool(root: Path, n_images: int = 40, n_topics: int = 20, per_topic: int = 10) -> list[Pair]:
    rng = np.random.default_rng(0)
    for i in range(n_images):
        Image.fromarray(rng.integers(0, 255, (240, 320, 3), dtype=np.uint8)).save(root / f"{i}.jpg")
    topics = [Topic(f"t{t}", f"section {t} about landmark number {t} and its history") for t in range(n_topics)]
    return [
        Pair(topic, Document(str(i), image=f"{i}.jpg", image_root=str(root)))
        for t, topic in enumerate(topics)
        for i in ((t * per_topic // 2 + k) % n_images for k in range(per_topic))
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="ViT-B-32")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = Path(tmp) / "random.pt"
        import open_clip

        torch.save(open_clip.create_model(args.model, pretrained=None).state_dict(), checkpoint)
        pairs = make_pool(Path(tmp))
        images = len({p.document.docid for p in pairs})
        topics = len({p.topic.qid for p in pairs})
        config = ClipScoreConfig(model=args.model, checkpoint=str(checkpoint), device="cpu", batch_size=args.batch_size, text="query")

        judge = ClipScoreJudge(config, None)
        start = time.perf_counter()
        judge.judge(pairs)
        reuse = time.perf_counter() - start

        # Without reuse: every pair's image and text encoded, batched the same way.
        clip = OpenClip(ClipSource(args.model, checkpoint=str(checkpoint)), device="cpu", batch_size=args.batch_size)
        start = time.perf_counter()
        image_vectors = clip.encode_images([str(p.document.image_path) for p in pairs])
        text_vectors = clip.encode_texts([p.topic.text for p in pairs])
        scores = 2.5 * np.maximum((image_vectors * text_vectors).sum(axis=1), 0)
        naive = time.perf_counter() - start
        assert scores.shape == (len(pairs),)

    print(f"machine: {platform.machine()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}, model {args.model}")
    print(f"pool: {len(pairs)} pairs, {images} distinct images (each in {len(pairs) // images} topics), {topics} distinct topics")
    print("| CLIPScore on CPU | seconds | pairs/s |")
    print("|---|---:|---:|")
    print(f"| every pair encodes its image and text | {naive:.2f} | {len(pairs) / naive:.1f} |")
    print(f"| qrelkit: each distinct image and text once | {reuse:.2f} | {len(pairs) / reuse:.1f} |")
    print(f"| speed-up from reuse | | {naive / reuse:.1f}× |")


if __name__ == "__main__":
    main()
