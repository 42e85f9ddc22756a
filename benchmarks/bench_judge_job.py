"""`qrelkit judge` as a user runs it, on an AToMiC-shaped CLIPScore job: 9,000 pairs (3,000 distinct
JPEGs of 375-800 px, each pooled for 3 of 100 topics), open_clip with random weights of the real
shape, loaded from a checkpoint file, the collection loaded into a fresh DuckDB store.

Two runs, each on a fresh database:

* the command line in a fresh process (`python -m qrelkit.cli judge job.yaml`): the process's wall
  time, and when its progress lines (one per batch of 512 pairs) arrived;
* the same job through `run_job` in this process with the runner's own executor timed: the model
  load (with the preflight) apart from the judging that follows it (the goal: judging under 5 s
  on an H100 with ViT-L-14).

On the GPU machine (../shared/gpu/README.md), where no entry points exist, the job names the judge
by class (`qrelkit.judges.clipscore:ClipScoreJudge`, `allow_import: true`):

    python benchmarks/bench_judge_job.py --device cuda --half

Usage: python benchmarks/bench_judge_job.py [--images 3000] [--topics 100] [--model ViT-L-14|tiny] [--device cuda] [--half]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml
from bench_clipscore import images_in

from qrelkit.jobs import load_job, run_job
from qrelkit.jobs.runner import LocalExecutor
from qrelkit.machine import available_cores

ROOT = Path(__file__).resolve().parents[1]
TINY = {  # a CLIP small enough for a CPU to show what the job costs besides the model
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 64, "head_width": 32, "patch_size": 16},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


class TimedExecutor(LocalExecutor):
    """The runner's own executor, timing the judge's creation (model load and preflight)."""

    opened = 0.0

    def open(self, factory, context) -> None:
        start = time.perf_counter()
        super().open(factory, context)
        self.opened = time.perf_counter() - start


def write_collection(root: Path, args) -> int:
    """topics.jsonl, images.jsonl and pairs.tsv of the job (each image pooled for 3 topics); the pairs' count."""
    images = images_in(args.image_dir or root / "images", args.images)
    context = "The tower was built in 1889 as the entrance arch to the world's fair, and it was nearly torn down in 1909. "
    with (root / "topics.jsonl").open("w") as out:
        for t in range(args.topics):
            fields = {"page_title": f"Landmark number {t}", "section_title": "History", "section_context": context * 2}
            out.write(json.dumps({"qid": f"t{t}", "text": f"landmark {t}", **fields}) + "\n")
    with (root / "images.jsonl").open("w") as out:
        for path in images:
            out.write(json.dumps({"docid": path.stem, "image": path.name}) + "\n")
    with (root / "pairs.tsv").open("w") as out:
        for i, path in enumerate(images):
            for k in range(3):
                out.write(f"t{(i + k * 37) % args.topics}\t{path.stem}\n")
    return 3 * len(images)


def write_job(root: Path, args, database: str) -> Path:
    import open_clip

    options = {"device": args.device, "half": args.half, "batch_size": args.batch_size, "image_decode": args.image_decode}
    if args.model == "tiny":
        (root / "tiny.json").write_text(json.dumps(TINY))
        open_clip.add_model_config(root / "tiny.json")
        options.update(model="tiny", model_config_file=str(root / "tiny.json"))
    else:
        options["model"] = args.model
    checkpoint = root / f"{args.model}.pt"
    if not checkpoint.exists():
        torch.manual_seed(0)
        model = open_clip.create_model(args.model, pretrained=None)
        torch.save({name: value.half() if args.half else value for name, value in model.state_dict().items()}, checkpoint)
    options["checkpoint"] = str(checkpoint)
    job = {
        "database": database,
        "collection": {"topics": "topics.jsonl", "documents": "images.jsonl", "image_root": str(args.image_dir or root / "images")},
        "pool": {"pairs": "pairs.tsv"},
        "judge": {"name": "qrelkit.judges.clipscore:ClipScoreJudge", "options": options},
        "allow_import": True,  # the judge by class: the GPU machine has no entry points
        "template": "atomic-image-suggestion",
        "batch_size": args.job_batch,
    }
    path = root / f"{Path(database).stem}.yaml"
    path.write_text(yaml.safe_dump(job))
    return path


def command_line_run(job: Path) -> tuple[float, list[tuple[float, str]], int]:
    """(wall seconds, (seconds, line) of each stderr line, exit code) of `qrelkit judge` in a fresh process."""
    environment = {
        **os.environ,
        "QRELKIT_PROGRESS_SECONDS": "0",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "qrelkit.cli", "judge", str(job)],
        cwd=job.parent,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines = [(time.perf_counter() - start, line.rstrip()) for line in process.stderr]
    code = process.wait()
    return time.perf_counter() - start, lines, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=3000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--model", default="ViT-L-14", help="an open_clip architecture, or tiny")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--half", action="store_true", help="fp16 on CUDA")
    parser.add_argument("--batch-size", type=int, default=64, help="images per forward pass (configs/atomic-clipscore.yaml: 64)")
    parser.add_argument("--job-batch", type=int, default=512, help="pairs per judge call (configs/atomic-clipscore.yaml: 512)")
    parser.add_argument("--image-decode", default="auto", choices=["auto", "device", "cpu"])
    parser.add_argument("--verbose", action="store_true", help="print the command line's stderr lines with their times")
    parser.add_argument(
        "--image-dir", type=Path, default=None, help="make the images here, or reuse those there (default: a temporary folder)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        pairs = write_collection(root, args)
        made = time.perf_counter() - started
        wall, lines, code = command_line_run(write_job(root, args, "cli.duckdb"))
        assert code == 0, "\n".join(line for _, line in lines[-20:])
        executor = TimedExecutor()
        report = run_job(load_job(write_job(root, args, "api.duckdb")), progress=False, executor=executor)
        assert report.statuses == {"ok": pairs}, report.statuses
        path = executor.judge.clip.images.path if executor.judge is not None else "?"

    progress = [(seconds, line) for seconds, line in lines if "pairs" in line and "/" in line]
    if args.verbose:
        print("\n".join(f"{seconds:6.2f} s  {line}" for seconds, line in lines) + "\n")
    device = f"{torch.cuda.get_device_name()} ({'fp16' if args.half else 'fp32'})" if args.device.startswith("cuda") else "CPU (fp32)"
    load = os.getloadavg()[0]
    print(f"machine: {platform.machine()}, {available_cores()} cores, {device}, torch {torch.__version__}, load average {load:.1f}")
    print(
        f"job: {pairs:,} pairs, {args.images:,} distinct JPEGs of 375-800 px (made in {made:.1f} s), {args.topics} topics; "
        f"{args.model}, batches of {args.batch_size} images and {args.job_batch} pairs; images decoded on the {path} path"
    )
    print()
    print("| `qrelkit judge`, whole job | seconds |")
    print("|---|---:|")
    print(f"| the command line as a process, start to exit (fresh database; loading the collection included) | {wall:.1f} |")
    if len(progress) >= 2:
        print(f"| ... its first progress line after the first {args.job_batch} pairs | {progress[1][0]:.1f} |")
        print(f"| ... from that line to the last ({len(progress) - 2} batches) | {progress[-1][0] - progress[1][0]:.1f} |")
    print(f"| run_job in this process: model load and preflight | {executor.opened:.1f} |")
    judging = report.seconds - executor.opened
    print(f"| **run_job in this process: judging after the load** ({pairs / judging:,.0f} pairs/s) | **{judging:.1f}** |")


if __name__ == "__main__":
    main()
