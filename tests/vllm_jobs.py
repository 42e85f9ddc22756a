"""The collections and job files of the vLLM tests: a tiny LLaVA and a tiny Llama (tests/tiny_hf.py,
saved in the hub's layout, head size 32 for vLLM's CPU kernels), 4 topics × 6 photographs plus one
missing image each, and 3 DL-style topics × 8 demo passages; the same jobs for the `vllm`, the
`transformers` and the `openai` judge, so each engine is compared on the same prompts.

The LLaVA leans to grades: its LM head's rows for the grade tokens are scaled up (×20), so its most
likely next token is a grade and a parsed answer parses, while the expected grade still moves with
the image and the query. The Llama is left random: what it writes is compared token for token."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from image_files import photo_jpegs
from tiny_hf import tiny_llama, tiny_llava

DEMO = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo"
IMAGE_TEMPLATE = {
    "id": "image-graded",
    "modality": "image",
    "system": "You rate images for search queries.",
    "relevance_instruction": "Grade how well the image illustrates the query, 0 (not at all) to 3 (perfectly).",
    "context": "Query: {query}",
    "output_instruction": 'Reply in the form "Relevance: <grade>" with a grade from {min_score} to {max_score}.',
    "score_range": [0, 3],
}
IMAGE_TOPICS = {"q1": "goldfish", "q2": "the eiffel tower at night", "q3": "a red bicycle", "q4": "mountain lake in winter"}
IMAGES, MISSING = 6, "gone"
TEXT_TOPICS, TEXT_DOCS = 3, 8
# float32 and every token's logprob: the engines agree to rounding and every grade is covered
ENGINE = {"dtype": "float32", "max_model_len": 2048, "kv_cache_gib": 0.5}
SIZES = {"text_width": 64, "vision_width": 64, "image_size": 64, "patch_size": 16}


@dataclass(frozen=True)
class Collection:
    folder: Path
    llava: str
    llama: str
    vocabulary: int  # both models' vocabulary size: `logprobs` at this size covers every grade

    def image_pairs(self) -> list[tuple[str, str]]:
        return [(q, d) for q in IMAGE_TOPICS for d in [f"img{i}" for i in range(IMAGES)] + [MISSING]]

    def job(self, name: str, judge: str, options: dict[str, Any], *, images: bool = True, **extra: Any) -> Path:
        """A job file judging the image (or text) collection with ``judge`` into ``name``.duckdb."""
        kind = "images" if images else "text"
        spec = {
            "database": str(self.folder / f"{name}.duckdb"),
            "collection": {
                "topics": str(self.folder / kind / "topics.jsonl"),
                "documents": str(self.folder / kind / "documents.jsonl"),
                **({"image_root": str(self.folder / "images")} if images else {}),
            },
            "pool": {"pairs": str(self.folder / kind / "pairs.tsv")},
            "judge": {"name": judge, "options": options},
            "template": str(self.folder / "image-graded.yaml") if images else "trec-dl-graded",
            "batch_size": 64,
            **extra,
        }
        path = self.folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(spec))
        return path


def lean_to_grades(folder: Path, factor: float = 20.0) -> None:
    """Scale the LM head's rows of the grade tokens (every spelling of 0-3 up to white space)."""
    from safetensors.torch import load_file, save_file
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    rows = [i for i in range(len(tokenizer)) if tokenizer.decode([i]).strip() in {"0", "1", "2", "3"}]
    path = folder / "model.safetensors"
    tensors = load_file(path)
    head = next(key for key in tensors if key.endswith("lm_head.weight"))
    tensors[head][rows] *= factor
    save_file(tensors, path, metadata={"format": "pt"})


def make_collection(folder: Path) -> Collection:
    llava = tiny_llava(folder / "llava", **SIZES)
    lean_to_grades(llava)
    llama = tiny_llama(folder / "llama", width=SIZES["text_width"])
    vocabulary = json.loads((llava / "config.json").read_text())["text_config"]["vocab_size"]
    photos = photo_jpegs(folder / "images", IMAGES, low=48, high=160)
    write_lines(folder / "images" / "topics.jsonl", [{"qid": q, "text": t} for q, t in IMAGE_TOPICS.items()])
    documents = [{"docid": f"img{i}", "image": path.name} for i, path in enumerate(photos)] + [{"docid": MISSING, "image": "gone.jpg"}]
    write_lines(folder / "images" / "documents.jsonl", documents)
    pairs = [(q, d["docid"]) for q in IMAGE_TOPICS for d in documents]
    (folder / "images" / "pairs.tsv").write_text("".join(f"{q}\t{d}\n" for q, d in pairs))
    (folder / "image-graded.yaml").write_text(yaml.safe_dump(IMAGE_TEMPLATE))
    (folder / "text").mkdir()
    topics = [line.split("\t") for line in (DEMO / "topics.tsv").read_text().splitlines()[:TEXT_TOPICS]]
    write_lines(folder / "text" / "topics.jsonl", [{"qid": q, "text": t} for q, t in topics])
    passages = [json.loads(line) for line in (DEMO / "passages.jsonl").read_text().splitlines()[:TEXT_DOCS]]
    write_lines(folder / "text" / "documents.jsonl", passages)
    (folder / "text" / "pairs.tsv").write_text("".join(f"{q}\t{p['docid']}\n" for q, _ in topics for p in passages))
    return Collection(folder, str(llava), str(llama), vocabulary)


def write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def judgments(database: Path | str) -> dict[tuple[str, str], dict[str, Any]]:
    """Every judgment of the job's one judge run, by pair."""
    from qrelkit.storage import Store

    with Store(Path(database), read_only=True) as store:
        cursor = store.con.execute("SELECT qid, docid, status, score, parsed, expected, raw_output, error, tokens_out FROM judgments")
        names = [column[0] for column in cursor.description]
        return {(row[0], row[1]): dict(zip(names, row)) for row in cursor.fetchall()}
