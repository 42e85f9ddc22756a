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

    def count_images(self, paths):
        encoded["images"] += len(paths)
        return original_images(self, paths)

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
    monkeypatch.setattr(clip_module, "MAX_IMAGE_PIXELS", 1600)  # a 48x40 image (1,920 px) now looks like a bomb
    judge = create_judge("clipscore", tiny_clip, None)
    docs = {
        "corrupt": Document("corrupt", image="corrupt.png", image_root=str(images)),
        "missing": Document("missing", image="nope.png", image_root=str(images)),
        "bomb": Document("bomb", image="a.png", image_root=str(images)),
        "fine": Document("fine", image="rotated.jpg", image_root=str(images)),
    }
    results = {j.docid: j for j in judge.judge([Pair(TOPICS[0], d) for d in docs.values()])}
    assert results["fine"].status == "ok"
    for docid, message in (("corrupt", "cannot be used"), ("missing", "not found"), ("bomb", "over the limit")):
        assert results[docid].status == "input_error" and results[docid].score is None
        assert message in results[docid].error


def test_exif_orientation_is_applied(images):
    upright = clip_module.load_image(images / "rotated.jpg")
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
    monkeypatch.setattr(clip_module.OpenClip, "encode_images", lambda self, paths: encoded.append(len(paths)) or original(self, paths))
    job["judge"]["options"] = {**tiny_clip, "caption_prefix": "A photo depicts"}  # a new judge run, same images
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    report = run_job(load_job(tmp_path / "job.yaml"), progress=False)
    assert report.statuses == {"ok": 9} and encoded == []  # every image came from the store's cache
    with Store(tmp_path / "atomic.duckdb", read_only=True) as store:
        kinds = dict(store.con.execute("SELECT item_kind, count(*) FROM embeddings GROUP BY 1").fetchall())
    assert kinds == {"clip-image": 3, "clip-text": 6}
