"""CLIPScore with a tiny open_clip model made here with random weights, saved as a checkpoint
and loaded through the judge's real loading path (no pretrained CLIP weights exist offline)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

torch = pytest.importorskip("torch", reason="the clip extra is not installed (pip install 'qrelkit[clip]')")
open_clip = pytest.importorskip("open_clip", reason="the clip extra is not installed (pip install 'qrelkit[clip]')")
from conftest import tiny_open_clip  # noqa: E402
from PIL import Image  # noqa: E402

import qrelkit.embed.clip as clip_module  # noqa: E402
import qrelkit.io.images as image_io  # noqa: E402
from qrelkit.io import Document, Topic  # noqa: E402
from qrelkit.jobs import load_job, run_job  # noqa: E402
from qrelkit.judges import Pair, create_judge  # noqa: E402
from qrelkit.prompts import load_template  # noqa: E402
from qrelkit.storage import Store  # noqa: E402


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clip")
    checkpoint = tiny_open_clip(folder, "TinyClipTest", embed_dim=32)
    return {"model": "TinyClipTest", "checkpoint": str(checkpoint), "model_config_file": str(folder / "TinyClipTest.json"), "device": "cpu"}


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    root = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    for name in ("a", "b", "c"):
        Image.fromarray(rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)).save(root / f"{name}.png")
    # A JPEG whose EXIF says "rotate 90°": the judge must see it upright, as PIL's exif_transpose does.
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.fromarray(rng.integers(0, 255, (30, 50, 3), dtype=np.uint8)).save(root / "rotated.jpg", exif=exif)
    (root / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n not an image")
    return root


TOPICS = [
    Topic("t1", "goldfish", {"page_title": "Goldfish", "section_title": "Growth", "section_context": "They grow in ponds."}),
    Topic("t2", "tower", {"page_title": "Eiffel Tower", "section_title": "History", "section_context": "Built in 1889."}),
    Topic("t3", "bridge", {"page_title": "Golden Gate", "section_title": "Design", "section_context": "Art deco towers."}),
]


def reference_clipscore(tiny_clip, text: str, image_path) -> float:
    """2.5·max(cos, 0) from open_clip's own encoders, loaded independently of the judge."""
    model, _, preprocess = open_clip.create_model_and_transforms("TinyClipTest", pretrained=tiny_clip["checkpoint"])
    model.eval()
    tokenizer = open_clip.get_tokenizer("TinyClipTest")
    with torch.no_grad():
        image = preprocess(Image.open(image_path).convert("RGB")).unsqueeze(0)
        image_features = model.encode_image(image)
        text_features = model.encode_text(tokenizer([text]))
    image_features = image_features / image_features.norm(dim=-1, keepdim=True)
    text_features = text_features / text_features.norm(dim=-1, keepdim=True)
    return 2.5 * max(float((image_features @ text_features.T).item()), 0.0)


def test_scores_equal_clipscore_from_open_clips_own_encoders(tiny_clip, images):
    template = load_template("atomic-image-suggestion")
    judge = create_judge("clipscore", tiny_clip, template)
    pairs = [Pair(t, Document(d, image=f"{d}.png", image_root=str(images))) for t in TOPICS for d in ("a", "b", "c")]
    for pair, judgment in zip(pairs, judge.judge(pairs)):
        expected = reference_clipscore(tiny_clip, template.render_context(pair.topic), images / f"{pair.document.docid}.png")
        assert judgment.status == "ok"
        assert judgment.score == pytest.approx(expected, abs=1e-5)
        cosine = float(judgment.raw_output.removeprefix("cos="))
        assert judgment.score == pytest.approx(2.5 * max(cosine, 0.0), abs=1e-5)


def test_each_image_and_text_is_encoded_once(tiny_clip, images, monkeypatch):
    encoded = {"images": 0, "texts": 0}
    original_images, original_texts = clip_module.OpenClip.encode_images, clip_module.OpenClip.encode_texts

    def count_images(self, images):
        encoded["images"] += len(images)
        return original_images(self, images)

    def count_texts(self, texts):
        encoded["texts"] += len(texts)
        return original_texts(self, texts)

    monkeypatch.setattr(clip_module.OpenClip, "encode_images", count_images)
    monkeypatch.setattr(clip_module.OpenClip, "encode_texts", count_texts)
    judge = create_judge("clipscore", tiny_clip, load_template("atomic-image-suggestion"))
    # every image pooled for all three topics, judged over several batches
    pairs = [Pair(t, Document(d, image=f"{d}.png", image_root=str(images))) for t in TOPICS for d in ("a", "b", "c")]
    for start in range(0, len(pairs), 2):
        judge.judge(pairs[start : start + 2])
    assert encoded == {"images": 3, "texts": 3}


def test_bad_images_are_input_errors_and_the_rest_is_judged(tiny_clip, images, monkeypatch):
    monkeypatch.setattr(image_io, "MAX_IMAGE_PIXELS", 1600)  # a 48x40 image (1,920 px) now looks like a bomb
    judge = create_judge("clipscore", tiny_clip, None)
    docs = {
        "corrupt": Document("corrupt", image="corrupt.png", image_root=str(images)),
        "missing": Document("missing", image="nope.png", image_root=str(images)),
        "bomb": Document("bomb", image="a.png", image_root=str(images)),
        "fine": Document("fine", image="rotated.jpg", image_root=str(images)),
    }
    results = {j.docid: j for j in judge.judge([Pair(TOPICS[0], d) for d in docs.values()])}
    assert results["fine"].status == "ok"
    for docid, message in (("corrupt", "not a readable image"), ("missing", "not found"), ("bomb", "over the limit")):
        assert results[docid].status == "input_error" and results[docid].score is None
        assert message in results[docid].error


def test_exif_orientation_is_applied(images):
    upright = image_io.load_image(images / "rotated.jpg")
    assert upright.size == (30, 50)  # stored 50x30, EXIF orientation 6 turns it


def test_long_topics_are_truncated_keeping_the_end_token_and_counted(tiny_clip, images):
    judge = create_judge("clipscore", {**tiny_clip, "text": "query"}, None)
    long_topic = Topic("long", " ".join(["goldfish"] * 120))
    with pytest.warns(UserWarning, match="1 topic text\\(s\\) exceed CLIP's 77-token context"):
        judgment = judge.judge([Pair(long_topic, Document("a", image="a.png", image_root=str(images)))])[0]
    assert judge.truncated_topics == {"long"}
    tokens = open_clip.get_tokenizer("TinyClipTest")([long_topic.text])[0]
    assert tokens[-1].item() == open_clip.get_tokenizer("TinyClipTest").eot_token_id
    assert judgment.score == pytest.approx(reference_clipscore(tiny_clip, long_topic.text, images / "a.png"), abs=1e-5)


def test_a_clipscore_job_caches_embeddings_in_the_store(tiny_clip, images, tmp_path, monkeypatch):
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps({"qid": t.qid, "text": t.text, **t.fields}) + "\n" for t in TOPICS))
    (tmp_path / "images.jsonl").write_text("".join(json.dumps({"docid": d, "image": f"{d}.png"}) + "\n" for d in ("a", "b", "c")))
    (tmp_path / "pairs.tsv").write_text("".join(f"{t.qid}\t{d}\n" for t in TOPICS for d in ("a", "b", "c")))
    job = {
        "database": "atomic.duckdb",
        "collection": {"topics": "topics.jsonl", "documents": "images.jsonl", "image_root": str(images)},
        "pool": {"pairs": "pairs.tsv"},
        "judge": {"name": "clipscore", "options": tiny_clip},
        "template": "atomic-image-suggestion",
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    assert run_job(load_job(tmp_path / "job.yaml"), progress=False).statuses == {"ok": 9}

    encoded = []
    original = clip_module.OpenClip.encode_images
    monkeypatch.setattr(clip_module.OpenClip, "encode_images", lambda self, images: encoded.append(len(images)) or original(self, images))
    job["judge"]["options"] = {**tiny_clip, "caption_prefix": "A photo depicts"}  # a new judge run, same images
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    report = run_job(load_job(tmp_path / "job.yaml"), progress=False)
    assert report.statuses == {"ok": 9} and encoded == []  # every image came from the store's cache
    with Store(tmp_path / "atomic.duckdb", read_only=True) as store:
        kinds = dict(store.con.execute("SELECT item_kind, count(*) FROM embeddings GROUP BY 1").fetchall())
    assert kinds == {"clip-image": 3, "clip-text": 6}


# -- dtype: pixels follow the visual tower ------------------------------------------------------


def test_pixels_follow_the_visual_towers_dtype_not_the_first_parameters(tiny_clip, images):
    """open_clip's low-precision conversion leaves the class and positional embeddings in fp32:
    the rule that read the first parameter sent fp32 pixels into an fp16 conv and failed every
    pair (the shipped `half: true` config on CUDA). bf16 shows the same on CPU."""
    from open_clip.model import convert_weights_to_lp

    clip = clip_module.OpenClip(
        clip_module.ClipSource("TinyClipTest", checkpoint=tiny_clip["checkpoint"], model_config=tiny_clip["model_config_file"]),
        device="cpu",
    )
    reference = clip.encode_images([str(images / "a.png"), str(images / "b.png")]).vectors
    convert_weights_to_lp(clip.model, dtype=torch.bfloat16)
    assert next(clip.model.parameters()).dtype == torch.float32  # the trap
    assert clip_module.visual_input_dtype(clip.model) == torch.bfloat16
    assert clip.model_input([clip.pixels(str(images / "a.png"))]).dtype == torch.bfloat16
    encoded = clip.encode_images([str(images / "a.png"), str(images / "b.png")])
    assert encoded.errors == {}
    # bf16 keeps ~3 significant digits: the same directions, not the same bits
    assert np.all(np.sum(encoded.vectors * reference, axis=1) > 0.99)
    clip.check_forward()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run on the GPU machine); the CPU dtype test covers the rule")
def test_half_precision_on_cuda_scores_every_pair_like_fp32(tiny_clip, images):
    pairs = [Pair(t, Document(d, image=f"{d}.png", image_root=str(images))) for t in TOPICS for d in ("a", "b", "c")]
    half = create_judge("clipscore", {**tiny_clip, "device": "cuda", "half": True}, load_template("atomic-image-suggestion"))
    full = create_judge("clipscore", {**tiny_clip, "device": "cpu"}, load_template("atomic-image-suggestion"))
    half.preflight()
    assert clip_module.visual_input_dtype(half.clip.model) == torch.float16
    for fast, exact in zip(half.judge(pairs), full.judge(pairs)):
        assert fast.status == "ok", fast.error
        assert fast.score == pytest.approx(exact.score, abs=0.02)


def test_a_broken_forward_pass_fails_preflight_naming_the_model(tiny_clip, monkeypatch):
    from qrelkit.judges import FatalJudgeError

    judge = create_judge("clipscore", tiny_clip, None)
    judge.preflight()  # a working model passes

    def mismatched(pixels):  # what the fp16 bug did: the wrong input dtype for the conv
        return judge.clip.model.visual.conv1(pixels.double())

    monkeypatch.setattr(judge.clip.model, "encode_image", mismatched)
    with pytest.raises(FatalJudgeError, match=r"CLIP model TinyClipTest/tiny.pt \(fp32 on cpu\) fails a forward pass"):
        judge.preflight()


# -- each image read once and decoded once per job -------------------------------------------------


def test_each_image_file_is_read_once_and_each_distinct_image_decoded_once_per_job(tiny_clip, images, tmp_path, monkeypatch):
    """Three topics x four image documents (two of them the same bytes under two names), judged
    two pairs per batch: every file is opened once, and each distinct content decoded once."""
    import os
    import shutil

    from PIL import ImageFile

    folder = tmp_path / "images"
    folder.mkdir()
    for name in ("a", "b", "c"):
        shutil.copy(images / f"{name}.png", folder / f"{name}.png")
    shutil.copy(images / "a.png", folder / "a-copy.png")
    docids = ("a", "b", "c", "a-copy")
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps({"qid": t.qid, "text": t.text, **t.fields}) + "\n" for t in TOPICS))
    (tmp_path / "images.jsonl").write_text("".join(json.dumps({"docid": d, "image": f"{d}.png"}) + "\n" for d in docids))
    (tmp_path / "pairs.tsv").write_text("".join(f"{t.qid}\t{d}\n" for t in TOPICS for d in docids))
    job = {
        "database": "atomic.duckdb",
        "collection": {"topics": "topics.jsonl", "documents": "images.jsonl", "image_root": str(folder)},
        "pool": {"pairs": "pairs.tsv"},
        "judge": {"name": "clipscore", "options": tiny_clip},
        "template": "atomic-image-suggestion",
        "batch_size": 2,
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    with Store(tmp_path / "atomic.duckdb") as store:  # the load hashes the files once; the job below skips it
        store.load_topics(tmp_path / "topics.jsonl")
        store.load_documents(tmp_path / "images.jsonl", image_root=str(folder))

    opened: list[str] = []
    decoded: list[tuple[int, int]] = []
    real_open, real_load = os.open, ImageFile.ImageFile.load

    def counting_open(path, *args, **kwargs):
        if str(path).startswith(str(folder.resolve()) + os.sep):
            opened.append(os.path.basename(path))
        return real_open(path, *args, **kwargs)

    def counting_load(self):
        if self.tile:  # pixels still to decode (a second load() of the same image decodes nothing)
            decoded.append(self.size)
        return real_load(self)

    monkeypatch.setattr(os, "open", counting_open)
    monkeypatch.setattr(ImageFile.ImageFile, "load", counting_load)
    report = run_job(load_job(tmp_path / "job.yaml"), progress=False)
    assert report.statuses == {"ok": 12}
    assert sorted(opened) == sorted(f"{d}.png" for d in docids)
    assert len(decoded) == 3  # a.png and a-copy.png have the same bytes: one decode, one cached vector
    with Store(tmp_path / "atomic.duckdb", read_only=True) as store:
        scores = dict(store.con.execute("SELECT docid || '/' || qid, score FROM judgments WHERE docid IN ('a', 'a-copy')").fetchall())
    for topic in TOPICS:
        assert scores[f"a/{topic.qid}"] == scores[f"a-copy/{topic.qid}"]


def test_the_pipelines_pixels_equal_open_clips_own_preprocessing(tiny_clip, images):
    """The CPU path splits open_clip's transform (its PIL steps redone with PIL in the decoding
    processes, ToTensor and Normalize batched in torch): the model sees the same values."""
    clip = clip_module.OpenClip(
        clip_module.ClipSource("TinyClipTest", checkpoint=tiny_clip["checkpoint"], model_config=tiny_clip["model_config_file"]),
        device="cpu",
    )
    assert clip.transform is not None  # open_clip's eval transform has the expected shape
    paths = [images / "a.png", images / "rotated.jpg"]
    batch = clip.model_input([clip.pixels(str(p)) for p in paths])
    reference = torch.stack([clip.preprocess(image_io.load_image(p)) for p in paths])
    assert batch.dtype == reference.dtype and torch.equal(batch, reference)
