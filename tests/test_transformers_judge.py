"""The `transformers` judge on tiny random models made here (tests/tiny_hf.py): a LLaVA (CLIP
vision tower + Llama) and a Llama text model, each with a tokenizer trained locally with the
`tokenizers` library and a chat template, saved with save_pretrained and loaded by the judge
through the real from_pretrained path. Device `auto`: the same file runs on a GPU machine."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'qrelkit[transformers]')")
transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'qrelkit[transformers]')")
from PIL import Image  # noqa: E402
from tiny_hf import tiny_llama, tiny_llava  # noqa: E402
from vllm_jobs import IMAGE_TEMPLATE  # noqa: E402  (one image template for the engines' tests)

from qrelkit.io import Document, Topic, read_documents, read_topics  # noqa: E402
from qrelkit.jobs import load_job, run_job  # noqa: E402
from qrelkit.judges import FatalJudgeError, JudgeError, Pair, create_judge  # noqa: E402
from qrelkit.judges.scoring import first_line  # noqa: E402
from qrelkit.judges.transformers import Prompt, forward_batches  # noqa: E402
from qrelkit.prompts import load_template  # noqa: E402
from qrelkit.storage import Store  # noqa: E402

DEMO = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo"
GRADES = ["0", "1", "2", "3"]
TOPICS = [Topic("q1", "goldfish"), Topic("q2", "the eiffel tower at night, seen from the river seine in paris")]
# float32 everywhere: the comparisons with a hand computation are exact to rounding (bf16 is tested on CUDA below)
OPTIONS = {"device": "auto", "dtype": "float32"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("hf")


@pytest.fixture(scope="module")
def llava(folder):
    return str(tiny_llava(folder / "llava"))


@pytest.fixture(scope="module")
def answering_llava(folder):
    """The tiny LLaVA with its LM head rewired so that its greedy answer is a grade: every row
    zero except "2" = v and "3" = −v, so one of them has the only positive logit."""
    path = tiny_llava(folder / "llava-answers", seed=1)
    model = transformers.LlavaForConditionalGeneration.from_pretrained(path)
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    head = model.get_output_embeddings().weight
    vector = head[tokenizer.convert_tokens_to_ids("2")].detach().clone()
    with torch.no_grad():
        head.zero_()
        head[tokenizer.convert_tokens_to_ids("2")] = vector
        head[tokenizer.convert_tokens_to_ids("3")] = -vector
    model.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def llama(folder):
    return str(tiny_llama(folder / "llama"))


@pytest.fixture(scope="module")
def images(folder):
    root = folder / "images"
    root.mkdir()
    rng = np.random.default_rng(0)
    for name, size in (("a", (40, 48)), ("b", (64, 30)), ("c", (33, 33))):
        Image.fromarray(rng.integers(0, 255, (*size, 3), dtype=np.uint8)).save(root / f"{name}.png")
    return root


@pytest.fixture(scope="module")
def image_template(folder):
    (folder / "image-graded.yaml").write_text(yaml.safe_dump(IMAGE_TEMPLATE))
    return load_template(folder / "image-graded.yaml")


def image_pairs(images):
    return [Pair(t, Document(d, image=f"{d}.png", image_root=str(images))) for t in TOPICS for d in ("a", "b", "c")]


def hand_expected(model_folder: str, pair: Pair, template, image_root: Path | None) -> float:
    """Σ g·p(g)/Σ p(g) at the answer position, from the model's own logits: one pair, no batch,
    no padding, the model and processor loaded here; a grade's probability summed over every
    vocabulary entry that decodes to it up to white space."""
    rendered = template.render(pair.topic, pair.document)
    content, pixels = [], []
    for part in rendered.parts:
        if hasattr(part, "text"):
            content.append({"type": "text", "text": part.text})
        else:
            content.append({"type": "image"})
            pixels.append(Image.open(part.path).convert("RGB"))
    messages = ([{"role": "system", "content": [{"type": "text", "text": rendered.system}]}] if rendered.system else []) + [
        {"role": "user", "content": content}
    ]
    if pixels:
        processor = transformers.AutoProcessor.from_pretrained(model_folder)
        model = transformers.AutoModelForImageTextToText.from_pretrained(model_folder, dtype=torch.float32)
        prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False) + "Relevance: "
        inputs = processor(text=[prompt], images=pixels, return_tensors="pt", add_special_tokens=False)
        tokenizer = processor.tokenizer
    else:
        tokenizer = transformers.AutoTokenizer.from_pretrained(model_folder)
        model = transformers.AutoModelForCausalLM.from_pretrained(model_folder, dtype=torch.float32)
        messages = rendered.chat_messages()  # a text model's template takes plain string contents
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False) + "Relevance: "
        inputs = tokenizer([prompt], return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        logits = model(**inputs).logits[0, -1].double()
    probabilities = torch.softmax(logits, dim=0).tolist()
    mass = dict.fromkeys(GRADES, 0.0)
    for token_id in range(len(tokenizer)):
        text = tokenizer.decode([token_id]).strip()
        if text in mass:
            mass[text] += probabilities[token_id]
    return sum(int(g) * p for g, p in mass.items()) / sum(mass.values())


# -- expected mode: one forward pass ---------------------------------------------------------------


def test_the_expected_grade_equals_a_hand_computation_from_the_models_logits(llava, images, image_template):
    judge = create_judge("transformers", {"model": llava, "batch_size": 4, **OPTIONS}, image_template)
    pairs = image_pairs(images)  # two topics of different lengths in one forward batch: padding included
    judgments = judge.judge(pairs)
    for pair, judgment in zip(pairs, judgments):
        assert judgment.status == "ok", judgment.error
        assert judgment.score == judgment.expected
        assert judgment.score == pytest.approx(hand_expected(llava, pair, image_template, images), abs=1e-5)
        assert judgment.raw_output.startswith("Relevance: ") and judgment.tokens_out == 1
    # the image tokens are in the count: 16 patches of the 32-pixel image, the CLS token dropped
    assert all(j.tokens_in > 16 for j in judgments)


def test_a_text_llm_scores_the_demo_collection_like_the_hand_computation(llama):
    template = load_template("trec-dl-graded")
    topics = {t.qid: t for t in read_topics(DEMO / "topics.tsv")}
    docs = {d.docid: d for d in read_documents(DEMO / "passages.jsonl")}
    pairs = [Pair(topics["d01"], docs[f"p01{i:02d}"]) for i in (1, 2, 3)] + [Pair(topics["d07"], docs["p0701"])]
    batched = create_judge("transformers", {"model": llama, "batch_size": 4, **OPTIONS}, template).judge(pairs)
    single = create_judge("transformers", {"model": llama, "batch_size": 1, **OPTIONS}, template).judge(pairs)
    for a, b in zip(batched, single):
        assert a.status == b.status == "ok"
        assert 0.0 <= a.score <= 3.0 and math.isfinite(a.score)
        assert a.score == pytest.approx(b.score, abs=1e-5)  # a pair's score does not depend on its batch
    assert batched[0].score == pytest.approx(hand_expected(llama, pairs[0], template, None), abs=1e-5)


def test_a_job_puts_expected_grades_in_the_store_and_a_missing_image_is_an_input_error(llava, images, image_template, folder, tmp_path):
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps({"qid": t.qid, "text": t.text}) + "\n" for t in TOPICS))
    docs = {"a": "a.png", "b": "b.png", "c": "c.png", "gone": "gone.png"}
    (tmp_path / "images.jsonl").write_text("".join(json.dumps({"docid": d, "image": p}) + "\n" for d, p in docs.items()))
    (tmp_path / "pairs.tsv").write_text("".join(f"{t.qid}\t{d}\n" for t in TOPICS for d in docs))
    job = {
        "database": "judged.duckdb",
        "collection": {"topics": "topics.jsonl", "documents": "images.jsonl", "image_root": str(images)},
        "pool": {"pairs": "pairs.tsv"},
        "judge": {"name": "transformers", "options": {"model": llava, "batch_size": 3, **OPTIONS}},
        "template": str(folder / "image-graded.yaml"),
        "batch_size": 5,
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    report = run_job(load_job(tmp_path / "job.yaml"), progress=False)
    assert report.statuses == {"ok": 6, "input_error": 2}
    with Store(tmp_path / "judged.duckdb", read_only=True) as store:
        rows = store.con.execute("SELECT docid, status, score, expected, error, model_id FROM judgments").fetchall()
    for docid, status, score, expected, error, model_id in rows:
        assert model_id == llava
        if docid == "gone":
            assert status == "input_error" and score is None and "gone.png not found" in error
        else:
            assert status == "ok" and math.isfinite(score) and 0.0 <= score <= 3.0 and score == expected


# -- parsed mode: greedy generation -----------------------------------------------------------------


def test_parsed_mode_generates_greedily_and_agrees_with_the_expected_mode(answering_llava, images, image_template):
    pairs = image_pairs(images)
    parsed = create_judge(
        "transformers", {"model": answering_llava, "score": "parsed", "max_new_tokens": 1, "batch_size": 4, **OPTIONS}, image_template
    ).judge(pairs)
    expected = create_judge("transformers", {"model": answering_llava, "batch_size": 4, **OPTIONS}, image_template).judge(pairs)
    for p, e in zip(parsed, expected):
        assert p.status == "ok" and p.score == p.parsed and p.score in (2.0, 3.0), p.raw_output
        assert p.raw_output == e.raw_output == f"Relevance: {int(p.score)}"  # the greedy answer is the argmax token
        assert e.parsed == p.parsed  # expected mode stores the argmax grade as the parsed score
        # the same position's distribution, read with left padding (generate) and right padding (forward)
        assert p.expected == pytest.approx(e.score, abs=1e-5)


def test_left_padded_batches_generate_what_single_pairs_generate(llava, images, image_template):
    options = {"model": llava, "score": "parsed", "max_new_tokens": 6, **OPTIONS}
    pairs = image_pairs(images)
    batched = create_judge("transformers", {**options, "batch_size": 6}, image_template).judge(pairs)
    single = create_judge("transformers", {**options, "batch_size": 1}, image_template).judge(pairs)
    for a, b in zip(batched, single):
        assert a.raw_output == b.raw_output and a.status == b.status
        assert a.status in ("ok", "parse_error") and a.tokens_out <= 6  # a random model rarely writes a grade


# -- loading, preflight, plain functions --------------------------------------------------------------


def test_a_text_model_refuses_an_image_template_and_expected_needs_single_token_grades(llama, llava, image_template):
    with pytest.raises(JudgeError, match="takes no images"):
        create_judge("transformers", {"model": llama, **OPTIONS}, image_template)
    # seed 003's 1-100 scale: this tokenizer spells 0-10 as single tokens (its training text has "0-10"), not 11-100
    with pytest.raises(JudgeError, match="'11', '12', '13', '14', '15' and 85 more are not single tokens"):
        create_judge("transformers", {"model": llava, **OPTIONS}, load_template("atomic-image-suggestion"))
    with pytest.raises(JudgeError, match="cannot load model"):
        create_judge("transformers", {"model": str(Path(llama) / "missing"), **OPTIONS}, image_template)


def test_preflight_runs_one_forward_pass_and_names_the_model_when_it_fails(llava, image_template, monkeypatch):
    judge = create_judge("transformers", {"model": llava, **OPTIONS}, image_template)
    judge.preflight()

    def broken(*args, **kwargs):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(judge.model, "forward", broken)
    with pytest.raises(FatalJudgeError, match=f"model '{llava}' \\(float32 on .*\\) fails a forward pass: RuntimeError: CUDA error"):
        judge.preflight()


def test_forward_batches_keep_an_images_pairs_together_and_lengths_close():
    prompts = [
        Prompt(i, "", [image], length=length) for i, (image, length) in enumerate([("x", 90), ("y", 10), ("x", 95), ("z", 50), ("y", 12)])
    ]
    batches = forward_batches(prompts, 2)
    assert [[p.index for p in batch] for batch in batches] == [[1, 4], [3, 0], [2]]
    assert first_line(" 2\nRelevance: 3") == " 2" and first_line("2") == "2"


# -- the image path: decoded where the model is --------------------------------------------------------


@pytest.fixture(scope="module")
def jpeg_images(folder):
    """Photographs as JPEGs (one with an EXIF orientation, one grey), a PNG and a broken JPEG."""
    from image_files import encoded, photo, with_orientation

    root = folder / "jpegs"
    root.mkdir()
    files = {
        "a.jpg": encoded(photo(120, 90, seed=1), quality=90),
        "b.jpg": with_orientation(photo(80, 140, seed=2), 6),
        "c.jpg": encoded(photo(200, 60, seed=3).convert("L"), quality=90),
        "d.png": encoded(photo(70, 70, seed=4), "PNG"),
        "e.jpg": encoded(photo(90, 90, seed=5), quality=90)[:200],
    }
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


def jpeg_pairs(root):
    names = ("a.jpg", "b.jpg", "c.jpg", "d.png", "e.jpg", "f.jpg")  # f.jpg is missing
    return [Pair(t, Document(d, image=d, image_root=str(root))) for t in TOPICS for d in names]


def test_the_device_image_path_gives_the_pil_paths_scores_with_failures_in_their_place(llava, jpeg_images, image_template):
    """image_decode device (torchvision's decoder and the processor on tensors, here on the CPU)
    against cpu (PIL images into the processor): on the CPU both decoders give the same pixels, so
    the same scores; the PNG (decoded by PIL on both paths), the broken and the missing file in
    their place."""
    options = {"model": llava, "batch_size": 4, **OPTIONS, "device": "cpu"}
    device = create_judge("transformers", {**options, "image_decode": "device"}, image_template)
    assert device.image_decode == "device"
    device.preflight()  # a synthetic JPEG through the device path
    pil = create_judge("transformers", {**options, "image_decode": "cpu"}, image_template)
    for a, b in zip(device.judge(jpeg_pairs(jpeg_images)), pil.judge(jpeg_pairs(jpeg_images))):
        assert (a.docid, a.status) == (b.docid, b.status)
        if b.status == "ok":
            assert a.score == pytest.approx(b.score, abs=1e-6)
        else:
            assert a.error == b.error
    statuses = {j.docid: j.status for j in pil.judge(jpeg_pairs(jpeg_images))}
    assert statuses == {"a.jpg": "ok", "b.jpg": "ok", "c.jpg": "ok", "d.png": "ok", "e.jpg": "input_error", "f.jpg": "input_error"}


def test_parsed_mode_on_the_device_image_path_generates_what_the_pil_path_generates(llava, jpeg_images, image_template):
    options = {"model": llava, "score": "parsed", "max_new_tokens": 4, "batch_size": 6, **OPTIONS, "device": "cpu"}
    device = create_judge("transformers", {**options, "image_decode": "device"}, image_template).judge(jpeg_pairs(jpeg_images))
    pil = create_judge("transformers", {**options, "image_decode": "cpu"}, image_template).judge(jpeg_pairs(jpeg_images))
    assert [(j.raw_output, j.status) for j in device] == [(j.raw_output, j.status) for j in pil]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run on the GPU machine); the CPU tests cover the rest")
def test_on_cuda_jpegs_decoded_by_nvjpeg_score_like_the_pil_path(llava, jpeg_images, image_template):
    """The same weights on the same GPU in float32; only the image path differs (nvJPEG and the
    processor on the GPU, against PIL images)."""
    options = {"model": llava, "batch_size": 4, "dtype": "float32", "device": "cuda"}
    device = create_judge("transformers", {**options, "image_decode": "auto"}, image_template)
    assert device.image_decode == "device"  # what auto picks on a GPU
    device.preflight()
    pil = create_judge("transformers", {**options, "image_decode": "cpu"}, image_template)
    for a, b in zip(device.judge(jpeg_pairs(jpeg_images)), pil.judge(jpeg_pairs(jpeg_images))):
        assert (a.docid, a.status) == (b.docid, b.status)
        if b.status == "ok":
            assert a.score == pytest.approx(b.score, abs=1e-3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run on the GPU machine); float32 is tested on CPU")
def test_bfloat16_on_cuda_scores_close_to_float32(llava, images, image_template):
    pairs = image_pairs(images)
    fast = create_judge("transformers", {"model": llava, "device": "cuda", "dtype": "auto"}, image_template)
    assert str(fast.dtype) in ("torch.bfloat16", "torch.float16")
    fast.preflight()
    exact = create_judge("transformers", {"model": llava, "device": "cpu", "dtype": "float32"}, image_template)
    for a, b in zip(fast.judge(pairs), exact.judge(pairs)):
        assert a.status == "ok" and a.score == pytest.approx(b.score, abs=0.05)
