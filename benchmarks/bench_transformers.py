"""transformers-judge throughput: pairs/s of a whole job (JPEG decoding, the processor, the model
and the DuckDB store) in `expected` mode against the model's plain forward pass on ready inputs
and the machine's own matmul FLOP/s, and in `parsed` mode (seed 003's 1-100 prompt, greedy
generation of up to 8 new tokens) against plain `generate` on ready inputs. A job's rate is
counted from the moment its model is loaded (the load is shown apart).

    share of the limit = FLOPs per pair × pairs/s ÷ matmul FLOP/s,
    FLOPs per pair ≈ 2 × (language-model parameters × prompt tokens + vision parameters × patches)

(the issue's "tokens per pair × 2 × parameters", split because the vision tower sees only the
patches; attention's quadratic term is left out, a few % at these lengths).

Presets, random weights of the real shapes (no weights can be downloaded):

* ``small`` (this CPU): LLaVA-shaped, a CLIP ViT 224/14 (256 patches, width 256, 4 layers) and a
  Llama of width 512, 8 layers, with the tokenizer trained locally in tests/tiny_hf.py;
* ``llava-1.5-7b`` (the GPU machine): LLaVA-1.5-7B's configuration (CLIP ViT-L/14-336, 576
  patches; Llama-2-7B) in bfloat16:

    python benchmarks/bench_transformers.py --preset llava-1.5-7b --device cuda --pairs 960 --batch-size 32

Usage: python benchmarks/bench_transformers.py [--preset small] [--pairs 48] [--batch-size 8] [--modes expected parsed]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tiny_hf: the tests' model builders
from bench_clipscore import make_images  # noqa: E402
from tiny_hf import llava_processor, make_tokenizer, tiny_llava  # noqa: E402

from qrelkit.io import Document, Topic  # noqa: E402
from qrelkit.io.images import load_image  # noqa: E402
from qrelkit.jobs import load_job, run_job  # noqa: E402
from qrelkit.jobs.runner import LocalExecutor  # noqa: E402
from qrelkit.judges import Pair  # noqa: E402
from qrelkit.judges.registry import judge_names  # noqa: E402
from qrelkit.prompts import load_template  # noqa: E402
from qrelkit.storage import Store  # noqa: E402

# the judge by class where no entry points exist (the GPU machine, where qrelkit is not installed)
JUDGE = "transformers" if "transformers" in judge_names() else "qrelkit.judges.transformers:TransformersJudge"


def build_llava_7b(folder: Path, device: str) -> Path:
    """LLaVA-1.5-7B's shape with random weights in bfloat16, saved for from_pretrained."""
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration

    tokenizer = make_tokenizer()
    vision = CLIPVisionConfig(
        hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16, image_size=336, patch_size=14
    )
    text = LlamaConfig(
        vocab_size=32064,
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        max_position_embeddings=4096,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = LlavaForConditionalGeneration(config).to(torch.bfloat16)
    model.save_pretrained(folder)
    llava_processor(tokenizer, 336, 14).save_pretrained(folder)
    return folder


def write_pairs(root: Path, pairs: list[Pair], mode: str) -> None:
    (root / f"pairs-{mode}.tsv").write_text("".join(f"{p.topic.qid}\t{p.document.docid}\n" for p in pairs))


def write_collection(root: Path, args) -> list[Pair]:
    """A collection of synthetic JPEGs, each pooled for three AToMiC-style topics, and its pairs."""
    (root / "images").mkdir(parents=True)
    images = make_images(root / "images", max(1, args.pairs // 3))
    context = "The tower was built in 1889 as the entrance arch to the world's fair. " * 3
    topics = [
        Topic(f"t{t}", f"landmark {t}", {"page_title": f"Landmark number {t}", "section_title": "History", "section_context": context})
        for t in range(max(3, len(images) // 10))
    ]
    documents = [Document(p.stem, image=p.name, image_root=str(root / "images")) for p in images]
    pairs = [Pair(topics[(i + k) % len(topics)], d) for i, d in enumerate(documents) for k in range(3)][: args.pairs]
    (root / "topics.jsonl").write_text("".join(json.dumps({"qid": t.qid, "text": t.text, **t.fields}) + "\n" for t in topics))
    (root / "images.jsonl").write_text("".join(json.dumps({"docid": d.docid, "image": d.image}) + "\n" for d in documents))
    return pairs


def write_job(root: Path, model: str, args, mode: str) -> Path:
    """The job of one mode over the collection in ``root``: expected mode on seed 003's Table 1
    prompt on a 0-3 scale (grades that are single tokens for every tokenizer), parsed mode on the
    prompt as it is (1-100) with 8 new tokens."""
    template = load_template("atomic-image-suggestion")
    if mode == "expected":
        template = template.model_copy(update={"id": "atomic-0-3", "score_range": (0.0, 3.0)})
    (root / f"template-{mode}.yaml").write_text(yaml.safe_dump(template.model_dump(mode="json")))
    options = {"model": model, "device": args.device, "dtype": args.dtype, "batch_size": args.batch_size, "score": mode}
    if mode == "parsed":
        options["max_new_tokens"] = args.new_tokens
    job = {
        "database": f"bench-{mode}.duckdb",
        "collection": {"topics": "topics.jsonl", "documents": "images.jsonl", "image_root": "images"},
        "pool": {"pairs": f"pairs-{mode}.tsv"},
        "judge": {"name": JUDGE, "options": options},
        "allow_import": ":" in JUDGE,
        "template": f"template-{mode}.yaml",
        "batch_size": 256,
        "max_consecutive_failures": 0,  # random weights rarely write a grade: parse errors are expected, and timed all the same
    }
    (root / f"job-{mode}.yaml").write_text(yaml.safe_dump(job))
    return root / f"job-{mode}.yaml"


class TimedExecutor(LocalExecutor):
    """The runner's own executor, timing the judge's creation (the model load and the preflight)
    and keeping the judge for the plain forward pass after the job."""

    opened = 0.0

    def open(self, factory, context) -> None:
        start = time.perf_counter()
        super().open(factory, context)
        self.opened = time.perf_counter() - start

    def close(self) -> None:
        pass  # closed by the benchmark, after its own measurements


def matmul_flops(device: str, dtype: torch.dtype, width: int) -> float:
    """FLOP/s of the GEMM shape a transformer layer runs (tokens × width × 4·width)."""
    a = torch.randn(2048, width, device=device, dtype=dtype)
    b = torch.randn(width, 4 * width, device=device, dtype=dtype)
    (a @ b).sum().item()
    best = 0.0
    for _ in range(5):  # the best of five windows: other jobs on a shared machine only slow it down
        runs, start = 0, time.perf_counter()
        while time.perf_counter() - start < 0.3:
            (a @ b).sum().item()
            runs += 1
        best = max(best, runs * 2 * 2048 * width * 4 * width / (time.perf_counter() - start))
    return best


def ready_inputs(judge, pairs: list[Pair], padding_side: str) -> dict:
    """One batch of ``pairs`` through the processor and onto the device, before any timing."""
    prompts = [judge._prompt(i, p) for i, p in enumerate(pairs)]
    images = [load_image(p.document.image_path) for p in pairs]
    judge.tokenizer.padding_side = padding_side
    batch = judge.processor(text=[p.text for p in prompts], images=images, padding=True, return_tensors="pt", add_special_tokens=False)
    return judge._to_device(batch)


def best_of(runs: int, device: str, work) -> float:
    seconds = float("inf")
    for _ in range(runs):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        start = time.perf_counter()
        work()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds = min(seconds, time.perf_counter() - start)
    return seconds


def forward_rate(judge, pairs: list[Pair]) -> tuple[float, float]:
    """(pairs/s, prompt tokens per pair) of the model alone on ready inputs: one batch of ``pairs``, best of three."""
    inputs = ready_inputs(judge, pairs, "right")
    with torch.inference_mode():
        judge._last_logits(inputs)  # warm-up
        seconds = best_of(3, judge.device, lambda: judge._last_logits(inputs))
    return len(pairs) / seconds, float(inputs["attention_mask"].sum()) / len(pairs)


def generate_rate(judge, pairs: list[Pair], new_tokens: int) -> float:
    """pairs/s of plain greedy `generate` of exactly ``new_tokens`` on ready, left-padded inputs."""
    inputs = ready_inputs(judge, pairs, "left")
    options = {"max_new_tokens": new_tokens, "min_new_tokens": new_tokens, "do_sample": False, "pad_token_id": judge.tokenizer.pad_token_id}
    with torch.inference_mode():
        judge.model.generate(**inputs, **options)  # warm-up
        seconds = best_of(2, judge.device, lambda: judge.model.generate(**inputs, **options))
    return len(pairs) / seconds


def run_mode(root: Path, model: str, pairs: list[Pair], args, mode: str) -> dict:
    """The whole job of one mode, then the plain model on ready inputs with the job's own judge."""
    if mode == "parsed" and args.parsed_pairs:
        pairs = pairs[: args.parsed_pairs]
    write_pairs(root, pairs, mode)
    job_path = write_job(root, model, args, mode)
    executor = TimedExecutor()
    report = run_job(load_job(job_path), progress=False, executor=executor)
    judge = executor.judge
    assert report.judged == len(pairs), report
    if mode == "expected":
        assert report.statuses == {"ok": report.judged}, report.statuses
    with Store(root / f"bench-{mode}.duckdb", read_only=True) as store:
        tokens_out = store.con.execute("SELECT avg(tokens_out) FROM judgments").fetchone()[0]
    row = {
        "judged": report.judged,
        "statuses": report.statuses,
        "load": executor.opened,
        "judging": report.seconds - executor.opened,
        "tokens_out": float(tokens_out or 0),
    }
    if mode == "expected":
        row["plain"], row["tokens"] = forward_rate(judge, pairs[: args.batch_size])
        vision = sum(p.numel() for name, p in judge.model.named_parameters() if "vision_tower" in name or "projector" in name)
        row["vision"], row["language"] = vision, sum(p.numel() for p in judge.model.parameters()) - vision
        vision_config = judge.model.config.vision_config
        row["patches"] = (vision_config.image_size // vision_config.patch_size) ** 2 + 1
        row["width"] = judge.model.config.text_config.hidden_size
        row["peak"] = matmul_flops(judge.device, judge.dtype, row["width"])
        row["dtype"] = judge.dtype
    else:
        row["plain"] = generate_rate(judge, pairs[: args.batch_size], args.new_tokens)
    row["image_decode"] = judge.image_decode
    judge.close()
    del executor.judge, judge
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=["small", "llava-1.5-7b"], default="small")
    parser.add_argument("--pairs", type=int, default=48)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--modes", nargs="+", choices=["expected", "parsed"], default=["expected", "parsed"])
    parser.add_argument("--new-tokens", type=int, default=8, help="parsed mode: tokens generated after the answer prefix")
    parser.add_argument("--parsed-pairs", type=int, default=None, help="pairs of the parsed-mode job (default: --pairs)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.preset == "small":
            model = tiny_llava(
                root / "model", image_size=224, patch_size=14, vision_width=256, vision_layers=4, text_width=512, text_layers=8, heads=8
            )
        else:
            model = build_llava_7b(root / "model", args.device)
        pairs = write_collection(root / "job", args)
        for number, mode in enumerate(args.modes):
            row = run_mode(root / "job", str(model), pairs, args, mode)
            if number == 0:
                print_machine(args, row)
            # each mode's table as soon as it is measured: a run stopped in the next mode keeps it
            (print_expected if mode == "expected" else print_parsed)(args, row)


def print_machine(args, row: dict) -> None:
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else f"CPU, {torch.get_num_threads()} torch threads"
    print(f"machine: {platform.machine()}, {device}, torch {torch.__version__}, load average {os.getloadavg()[0]:.1f}")
    print(f"model: {args.preset}; images decoded on the {'GPU (nvJPEG)' if row['image_decode'] == 'device' else 'CPU (PIL)'}")


def print_expected(args, expected: dict) -> None:
    job_rate = expected["judged"] / expected["judging"]
    with_load = expected["judged"] / (expected["judging"] + expected["load"])
    flops_per_pair = 2 * (expected["language"] * expected["tokens"] + expected["vision"] * expected["patches"])
    print(
        f"{(expected['language'] + expected['vision']) / 1e6:,.1f} M parameters ({expected['vision'] / 1e6:,.1f} M vision), "
        f"{expected['dtype']}; {expected['tokens']:.0f} prompt tokens per pair ({expected['patches'] - 1} image tokens); "
        f"{flops_per_pair / 1e9:,.1f} GFLOP per pair"
    )
    print(f"matmul (2048×{expected['width']} @ {expected['width']}×{4 * expected['width']}): {expected['peak'] / 1e9:,.1f} GFLOP/s")
    print()
    print("| transformers judge, expected mode | pairs/s | GFLOP/s | share of matmul FLOP/s |")
    print("|---|---:|---:|---:|")
    for label, speed in (
        (f"plain forward pass on ready inputs (batch {args.batch_size})", expected["plain"]),
        (f"qrelkit job: {expected['judged']} pairs, JPEG decoding and store included, model loaded", job_rate),
    ):
        print(f"| {label} | {speed:,.2f} | {speed * flops_per_pair / 1e9:,.1f} | {speed * flops_per_pair / expected['peak']:.0%} |")
    print(f"| job ÷ plain forward pass | {job_rate / expected['plain']:.0%} | | |")
    print(f"(model load and preflight {expected['load']:.1f} s; with it the job ran at {with_load:.2f} pairs/s)", flush=True)


def print_parsed(args, parsed: dict) -> None:
    print()
    print(f"| transformers judge, parsed mode (seed 003's 1-100 prompt, up to {args.new_tokens} new tokens) | pairs/s |")
    print("|---|---:|")
    print(f"| plain `generate` of {args.new_tokens} tokens on ready inputs (batch {args.batch_size}) | {parsed['plain']:,.2f} |")
    rate = parsed["judged"] / parsed["judging"]
    print(f"| qrelkit job: {parsed['judged']} pairs, {parsed['tokens_out']:.1f} tokens generated per pair on average | {rate:,.2f} |")
    print(f"| job ÷ plain generate | {rate / parsed['plain']:.0%} |")
    load = parsed["load"]
    print(f"(statuses {parsed['statuses']}: random weights seldom write a grade; model load and preflight {load:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
