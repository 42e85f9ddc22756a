"""The typographic probe end to end with the CLIPScore judge on the CPU (a tiny random CLIP: the real
loading and encoding paths, no weights to download): every image pooled for several topics gets
one copy per topic with that topic's query drawn into it, the judge scores the copy (as open_clip's
own encoders score that file), and the shares use the cut point of the job's own graded qrels."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("open_clip", reason="open-clip-torch is not installed (pip install 'qrelkit[clip]')")

import yaml  # noqa: E402
from conftest import tiny_open_clip  # noqa: E402
from PIL import Image  # noqa: E402
from test_clipscore import reference_clipscore  # noqa: E402, F401 (its encoders, loaded alike)

import qrelkit  # noqa: E402
from qrelkit.storage import Store  # noqa: E402

TOPICS = {"t1": "a goldfish in a pond", "t2": "the eiffel tower at night", "t3": "a red bridge"}
IMAGES = ("a", "b", "c", "d")


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clip")
    checkpoint = tiny_open_clip(folder, "TinyClipTest", embed_dim=32)
    return {"model": "TinyClipTest", "checkpoint": str(checkpoint), "model_config_file": str(folder / "TinyClipTest.json"), "device": "cpu"}


def reference_cosine(tiny_clip, text: str, image_path) -> float:
    """cos(E_img, E_txt) from open_clip's own encoders, loaded apart from the judge (the random tiny
    CLIP's cosines are negative, so its CLIPScores are all 0: the cosine is what tells copies apart)."""
    import open_clip
    import torch

    model, _, preprocess = open_clip.create_model_and_transforms("TinyClipTest", pretrained=tiny_clip["checkpoint"])
    model.eval()
    with torch.no_grad():
        image = model.encode_image(preprocess(Image.open(image_path).convert("RGB")).unsqueeze(0))
        words = model.encode_text(open_clip.get_tokenizer("TinyClipTest")([text]))
    return float((image / image.norm(dim=-1, keepdim=True) @ (words / words.norm(dim=-1, keepdim=True)).T).item())


def image_job(folder, tiny_clip) -> str:
    rng = np.random.default_rng(0)
    (folder / "images").mkdir()
    for name in IMAGES:
        Image.fromarray(rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)).save(folder / "images" / f"{name}.png")
    (folder / "topics.jsonl").write_text("".join(json.dumps({"qid": q, "text": t}) + "\n" for q, t in TOPICS.items()))
    (folder / "images.jsonl").write_text("".join(json.dumps({"docid": d, "image": f"{d}.png"}) + "\n" for d in IMAGES))
    # every image is judged for every topic: a's copy for t1 is not its copy for t2
    (folder / "qrels.txt").write_text("".join(f"{q} 0 {d} 0\n" for q in TOPICS for d in IMAGES))
    job = {
        "database": "images.duckdb",
        "collection": {"topics": "topics.jsonl", "documents": "images.jsonl", "image_root": "images", "qrels": {"ref": "qrels.txt"}},
        "pool": {"qrels": "ref"},
        "judge": {"name": "clipscore", "options": {**tiny_clip, "text": "query"}},
        "grading": {"method": "quantile", "per_topic": False, "ties": "at-or-above", "name": "clip-graded"},
        "batch_size": 5,
    }
    (folder / "job.yaml").write_text(yaml.safe_dump(job))
    return str(folder / "job.yaml")


def test_the_typographic_probe_runs_end_to_end_with_clipscore_on_the_cpu(tmp_path, tiny_clip):
    job = image_job(tmp_path, tiny_clip)
    qrelkit.judge(job)  # the job judged and graded first: its cut points say where a score counts as relevant
    result = qrelkit.probe(job, ["typographic", "blank-image"], sample=12, resamples=200, permutations=200)
    assert result.relevance.rule == "cut points" and result.relevance.qrels == "clip-graded"
    with Store(tmp_path / "images.duckdb", read_only=True) as store:
        query = "SELECT qid, docid, score FROM judgments WHERE judge_run_id = ?"
        graded = [s for _, _, s in store.con.execute(query, [result.judge_run_id]).fetchall()]  # the job's own run
        control = {(q, d): s for q, d, s in store.con.execute(query, [result.control_run_id]).fetchall()}  # the sample as it is
        assert sorted(control.values()) == pytest.approx(sorted(graded), abs=1e-6)  # the same judge, the same 12 pairs
        cut = float(np.quantile(graded, 0.75))
        assert result.relevance.cuts == {"*": pytest.approx(cut, abs=1e-12)}
        typographic = result.probes[0]
        rows = store.con.execute(
            "SELECT j.qid, j.docid, j.raw_output, j.status, p.image_root || '/' || p.image_path, p.image_sha256, p.content_hash, "
            "j.content_hash, j.score "
            "FROM judgments j JOIN perturbations p USING (judge_run_id, qid, docid) WHERE j.judge_run_id = ?",
            [typographic.judge_run_id],
        ).fetchall()
    assert len(rows) == 12 and len({(q, d) for q, d, *_ in rows}) == 12
    assert len({row[4] for row in rows}) == 12  # each (topic, image) its own copy
    after = []
    for qid, _, raw, status, path, sha, copy_hash, judged_hash, score in rows:
        assert status == "ok" and copy_hash == judged_hash
        assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == sha
        cosine = float(raw.removeprefix("cos="))
        assert cosine == pytest.approx(reference_cosine(tiny_clip, TOPICS[qid], path), abs=1e-5)  # this topic's copy was scored
        assert score == pytest.approx(2.5 * max(cosine, 0.0), abs=1e-6)
        after.append(score)
    shift = typographic.shift
    assert shift.pairs == 12 and shift.queries == 3
    assert shift.mean_shift == pytest.approx(np.mean(after) - np.mean([control[(q, d)] for q, d, *_ in rows]), abs=1e-12)
    assert shift.pushed_to_relevant == pytest.approx(np.mean(np.asarray(after) >= cut), abs=1e-12)
    assert result.probes[1].shift.pairs == 12
    assert result.to_dict()["probes"][0]["mean_shift_ci95"] is not None
